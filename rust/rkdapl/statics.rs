// SPDX-License-Identifier: GPL-2.0

//! The module's static state that needs `unsafe` to set up: the registry of RDMA devices and
//! IAs ([`crate::adapters`] keeps it), behind a global mutex.
//!
//! A C entry point such as `rkdapl_ia_open` has nothing to start from but its arguments, so
//! the devices the ib_client was given and the open IAs live in a static. Linux 7.3 has no
//! safe static lock: [`kernel::sync::global_lock!`] takes the promise that the lock is
//! initialised, once, before it is used (upstream binder's global mutexes are made the same
//! way). That promise is kept here, with the module's other meeting point with C
//! ([`crate::abi::handle`]'s table is a static initialised in module init too): [`init`] is called
//! first thing in module init, before the ib_client is registered and before module init
//! returns, so before any ib_client callback, C entry point or Rust API call can run.

use crate::ia::Ia;
use crate::rdma::bound::BoundDevice;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{debugfs::Dir, prelude::*, sync::Arc};

/// Module-wide state, from module init to module exit.
pub(crate) struct Registry {
    /// Devices an IA can be opened on (ib_client add/remove).
    pub(crate) devices: KVec<Arc<BoundDevice>>,
    /// Every IA from its open until it is closed and has no child left.
    pub(crate) ias: KVec<Arc<Ia>>,
    /// `/sys/kernel/debug/rkdapl`, from module init to module exit.
    pub(crate) debugfs: Option<Dir>,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init`, which module init calls before anything can use it (see
    // the module documentation); `init` runs `GlobalLock::init` at most once.
    unsafe(uninit) static REGISTRY: Mutex<Registry> =
        Registry { devices: KVec::new(), ias: KVec::new(), debugfs: None };
}

/// Set by the first [`init`].
static INITIALISED: AtomicBool = AtomicBool::new(false);

/// Initialises the statics. Module init calls it first thing (see the module documentation);
/// later calls do nothing. Process context.
pub(crate) fn init() {
    if INITIALISED.swap(true, Ordering::AcqRel) {
        return;
    }
    // SAFETY: The first call (the flag above), made by module init before anything uses
    // `REGISTRY` (module documentation).
    unsafe { REGISTRY.init() };
}

/// Locks the registry. Process context; sleeps.
pub(crate) fn registry() -> impl core::ops::DerefMut<Target = Registry> {
    REGISTRY.lock()
}
