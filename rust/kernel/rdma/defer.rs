// SPDX-License-Identifier: GPL-2.0

//! Releases that would wait for the context they run in, moved to a workqueue.
//!
//! Some of the layer's objects wait, when they are released, for a context that may be the
//! very one dropping them:
//!
//! - `rdma_destroy_id()` takes the id's handler lock, which rdma_cm holds while it runs the
//!   id's event handler ([`super::cm::CmHandler::event`]);
//! - `ib_drain_qp()` waits for completions that the QP's CQs deliver from their completion
//!   work, and `ib_free_cq()` cancels that work and waits for it
//!   ([`super::cq::PollContext::Workqueue`]).
//!
//! A [`super::cm::CmId`] or a [`super::cq::Cq`] dropped there (its last reference let go
//! inside its own handler or completion work, which safe code can do) is not released in place
//! but moved, whole, to this module's workqueue, where its `Drop` runs as anywhere else. The
//! moved object keeps a reference on its device, so that `ib_unregister_device()` waits for the
//! release (ib_core lets a device go only when its references are gone).
//!
//! The workqueue belongs to the client registration ([`super::client::Registration`]): it is
//! created with it and destroyed, once every release on it has run, when it is dropped (a
//! module's exit, after ib_core called its `remove` for every device, which released what the
//! module held there). Without a registration the release runs on `system_unbound_wq`, with a
//! warning: nothing would then wait for it before the module goes.
//!
//! C ULPs meet the same rules (`Documentation/infiniband/core_locking.rst`); a C handler that
//! wants its id gone returns non-zero instead. The layer cannot do that: the id's context, its
//! handler and its restrack name must outlive the id, which rdma_cm destroys only after the
//! handler returned.

use crate::{
    bindings,
    prelude::*,
    sync::aref::ARef,
    time::{delay::fsleep, Delta},
    workqueue::{self, Queue},
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};

use super::device::Device;

/// The deferral workqueue: the one of the first live [`super::client::Registration`], else
/// NULL.
static QUEUE: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());

/// The deferral workqueue of a client registration.
///
/// # Invariants
///
/// `wq` is a workqueue this object allocated and destroys in `drop`. If `QUEUE` holds `wq`,
/// it is cleared in `drop` before `wq` is destroyed.
pub(super) struct DeferQueue {
    wq: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for DeferQueue {}
// SAFETY: `&DeferQueue` gives no access to the workqueue.
unsafe impl Sync for DeferQueue {}

impl DeferQueue {
    /// Allocates a workqueue and makes it the deferral queue unless another registration's
    /// already is. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(super) fn new() -> Result<DeferQueue> {
        // Unbound: a release does not need the CPU it was deferred on.
        let flags = bindings::wq_flags_WQ_UNBOUND;
        // SAFETY: Process context; the name is a NUL-terminated static string.
        let wq = unsafe { bindings::alloc_workqueue(c"rdma_defer".as_char_ptr(), flags, 0) };
        let wq = NonNull::new(wq).ok_or(ENOMEM)?;
        // INVARIANT: `wq` is ours; `drop` clears `QUEUE` if it holds it.
        let _ = QUEUE.compare_exchange(
            ptr::null_mut(),
            wq.as_ptr(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        Ok(DeferQueue { wq })
    }
}

impl Drop for DeferQueue {
    /// Runs every release queued on the workqueue, then destroys it. Process context; sleeps.
    fn drop(&mut self) {
        let _ = QUEUE.compare_exchange(
            self.wq.as_ptr(),
            ptr::null_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        // SAFETY: `wq` is ours (type invariant) and destroyed once, here. Nothing new is queued
        // on it: `QUEUE` no longer names it, and a release already on it that queues another
        // release chains it on the same queue, which `destroy_workqueue` drains.
        unsafe { bindings::destroy_workqueue(self.wq.as_ptr()) };
    }
}

/// Whether the caller runs in the work item `work` (a CQ's completion work, say). Any context.
pub(crate) fn in_work(work: *const bindings::work_struct) -> bool {
    // SAFETY: `current_work` only reads the current task's worker, if any.
    let cur = unsafe { bindings::current_work() };
    !cur.is_null() && ptr::eq(cur.cast_const(), work)
}

/// The name and lock class of every release's work item. Not generic and never inlined,
/// so that [`release_later`] instantiated in another crate (a consumer of the
/// layer, compiled with `-Zshare-generics=n`) registers the same name with the same
/// key: lockdep warns when one key has two names.
#[inline(never)]
fn release_class() -> (&'static CStr, Pin<&'static crate::sync::LockClassKey>) {
    (c"rdma_defer", crate::static_lock_class!())
}

/// A value released on the deferral queue, and its device's reference.
#[pin_data]
struct Release<D: Send + 'static> {
    #[pin]
    work: workqueue::Work<Release<D>>,
    /// Dropped first (declaration order), then the device reference.
    value: D,
    dev: Option<ARef<Device>>,
}

crate::impl_has_work! {
    impl{D: Send + 'static} HasWork<Self> for Release<D> { self.work }
}

impl<D: Send + 'static> workqueue::WorkItem for Release<D> {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        drop(this);
    }
}

/// Drops `value` on the layer's deferral workqueue instead of here, then `dev`, a reference on
/// the device `value` was created on (ib_core's unregistration of that device waits for it).
///
/// The layer's own types do this by themselves when they are dropped where releasing would
/// wait for the caller (a CM event handler, a CQ's completion work); the crate's code that
/// holds layer objects may use it for the same reason. `D`'s drop runs from the queue, so its
/// code must stay loaded until the registration goes: code of the crate that owns the
/// registration, not of another module (a `CmId<T>` whose `T` is another module's is released
/// here too, and that module must not unload before the registration is dropped).
///
/// Process context: allocates with `GFP_KERNEL`, and sleeps and retries until it can (a
/// release cannot be refused). The value is dropped before the owning client registration's
/// drop returns.
pub(crate) fn release_later<D: Send + 'static>(value: D, dev: Option<ARef<Device>>) {
    let slot = loop {
        match KBox::<Release<D>>::new_uninit(GFP_KERNEL) {
            Ok(s) => break s,
            Err(_) => fsleep(Delta::from_millis(1)),
        }
    };
    let init = pin_init!(Release {
        work <- {
            let (name, key) = release_class();
            workqueue::Work::new(name, key)
        },
        value,
        dev,
    });
    let Ok(release) = slot.write_pin_init(init);
    let wq = QUEUE.load(Ordering::Acquire);
    if wq.is_null() {
        crate::pr_warn_once!("rdma: a release deferred without a client registration\n");
        let _ = workqueue::system_unbound().enqueue(release);
        return;
    }
    // SAFETY: `wq` is live until its `DeferQueue` is dropped, which happens after ib_core
    // removed the registration from every device, so after every object the module held on a
    // device was released (see the module documentation): no release can be deferred then but
    // from a release running on `wq` itself, which `destroy_workqueue` allows.
    let q = unsafe { Queue::from_raw(wq) };
    let _ = q.enqueue(release);
}
