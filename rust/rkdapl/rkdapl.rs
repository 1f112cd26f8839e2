// SPDX-License-Identifier: GPL-2.0

//! rkdapl: a kDAPL-style RDMA provider for kernel consumers.
//!
//! The DAT 2.0 / kDAPL object model (IA, PZ, LMR, RMR, EVD, EP, PSP, CR, DTOs with cookies)
//! on Linux's own RDMA stack: ib_core verbs and completion queues, rdma_cm connections, through
//! the [`rdma`] layer. C modules use it through `include/rkdapl.h` ([`abi`]), Rust
//! modules through [`api`].
//!
//! One file per DAT object; [`dto`] holds the data path and [`abi`] the C entry points and
//! the C shapes.

use crate::rdma::{bound::Bound, client, device::Device};
use kernel::prelude::*;

/// The Rust RDMA layer (`kernel::rdma` upstream), compiled into this module.
///
/// Its source is `rust/kernel/rdma.rs` and `rust/kernel/rdma/`, written as part of the kernel
/// crate: `make patches` turns the same files into a patch series that adds `kernel::rdma` to
/// Linux. Distribution kernels build ib_core as a module, which the kernel crate cannot link
/// against, so rkdapl.ko carries the layer, with its own [`bindings`] and C helpers
/// (`rust/rkdapl/rdma.mk`). What the layer reaches through `crate::` in the kernel crate is
/// re-exported at this crate's root (below), so its files need no change.
#[path = "../kernel"]
mod layer {
    pub mod rdma;
}
pub use layer::rdma;

// The kernel crate's modules and macros the layer uses as `crate::...`.
#[allow(unused_imports)]
use kernel::{
    alloc, container_of, dma, error, interrupt, new_mutex, new_spinlock_irq, new_srcu, page,
    pr_warn_once, prelude, processor, scatterlist, static_lock_class, str, sync, task, time, types,
    warn_on, workqueue,
};
// The same for the QP event deferral (`rust/kernel/rdma/cm/qp_events.rs`).
#[allow(unused_imports)]
use kernel::{impl_flags, impl_has_work, new_work};

pub mod bindings;

mod abi;
mod adapters;
pub mod api;
mod cm;
mod debugfs;
mod dto;
mod dto_op;
mod ep;
mod evd;
mod ia;
mod iov;
mod lmr;
mod mtu;
mod psp;
mod pz;
mod registry;
mod removal;
mod rmr;
mod srq;
mod statics;
mod trace;

module! {
    type: Rkdapl,
    name: "rkdapl",
    authors: ["rkdapl developers"],
    description: "kDAPL-style RDMA provider on ib_core and rdma_cm",
    license: "GPL",
    params: {
        mtu_agreement: bool {
            default: true,
            description: "RoCE: settle the smaller path MTU with rkdapl peers, announced in the REP's private data (default on; 0: rdma_cm moves the QPs and keeps the connecting side's MTU)",
        },
    },
}

/// rkdapl's ib_client: tracks the RDMA devices an IA can be opened on.
struct DeviceTracker;

impl client::Client for DeviceTracker {
    type Data = ();

    fn add(dev: &Bound<'_>) -> Result {
        adapters::device_added(dev)
    }

    fn remove(dev: &Device, _data: ()) {
        // Objects freed before (their handles' references still pending) and the CRs that
        // the removal ends hold device resources too: released before ib_core goes on.
        abi::handle::Handles::drain();
        removal::device_removed(dev);
        abi::handle::Handles::drain();
    }
}

#[pin_data(PinnedDrop)]
struct Rkdapl {
    #[pin]
    client: client::Registration<DeviceTracker>,
    _watch: abi::ConsumerWatch,
    /// Last: the handle table goes after the client is unregistered, whose device removal
    /// still ends handles (a PSP's pending CRs; fields drop in this order, after
    /// `PinnedDrop::drop`).
    _handles: abi::handle::TableGuard,
}

impl kernel::InPlaceModule for Rkdapl {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        abi::handle::Handles::init();
        statics::init();
        adapters::init();
        if mtu::enabled() {
            pr_info!("loaded\n");
        } else {
            pr_info!("loaded (mtu_agreement=0: RoCE QPs keep the connecting side's path MTU)\n");
        }
        try_pin_init!(Rkdapl {
            client <- client::Registration::new(c"rkdapl"),
            _watch: abi::ConsumerWatch::new()?,
            _handles: abi::handle::TableGuard,
        })
    }
}

#[pinned_drop]
impl PinnedDrop for Rkdapl {
    fn drop(self: Pin<&mut Self>) {
        // While the ib_client is registered: a release may defer verbs objects to the RDMA
        // layer's queue, which the registration owns.
        abi::handle::Handles::drain();
        let left = abi::handle::Handles::count();
        if left != 0 {
            pr_warn!("unloading with {} objects still open\n", left);
        }
        adapters::exit();
        pr_info!("unloaded\n");
    }
}
