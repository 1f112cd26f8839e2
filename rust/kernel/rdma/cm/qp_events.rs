// SPDX-License-Identifier: GPL-2.0

//! The asynchronous events of a CM id's QP (`ib_qp_init_attr.event_handler`), handed to its
//! [`CmHandler::qp_event`] in process context.
//!
//! A driver calls a QP's event handler in whatever context it notices the event: rdma_rxe from
//! its tasks or inline from packet reception (softirq), hardware drivers from their event-queue
//! interrupt. The layer's handler only records the event's kind in an atomic mask and queues a
//! work item on the system workqueue, which hands each recorded kind to the handler in process
//! context. A kind reported again before the work ran is delivered once; kinds recorded
//! together are delivered in `enum ib_event_type` order. The [`super::CmId`] flushes the work
//! after it destroyed the QP, so no call runs after the id is dropped.

use super::CmHandler;
use crate::{
    bindings,
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::{self, Work, WorkItem},
};
use core::sync::atomic::{AtomicU32, Ordering};

use super::super::event::EventKind;

/// The QP events of one CM id, between the driver's callback and the handler.
#[pin_data]
pub(super) struct QpEvents<T: CmHandler> {
    handler: Arc<T>,
    /// Bit `k` set: an event of C value `k` waits for the work.
    pending: AtomicU32,
    #[pin]
    work: Work<QpEvents<T>>,
}

crate::impl_has_work! {
    impl{T: CmHandler} HasWork<QpEvents<T>> for QpEvents<T> { self.work }
}

/// The name and lock class of every QP's event work. Not generic and never inlined,
/// so that `QpEvents::new` instantiated in another crate (a consumer of the
/// layer, compiled with `-Zshare-generics=n`) registers the same name with the same
/// key: lockdep warns when one key has two names.
#[inline(never)]
fn qp_events_class() -> (&'static CStr, Pin<&'static crate::sync::LockClassKey>) {
    (c"rdma_qp_events", crate::static_lock_class!())
}

impl<T: CmHandler> WorkItem for QpEvents<T> {
    type Pointer = Arc<QpEvents<T>>;

    fn run(this: Arc<QpEvents<T>>) {
        let bits = this.pending.swap(0, Ordering::AcqRel);
        for k in 0..u32::BITS {
            if bits & (1 << k) != 0 {
                T::qp_event(this.handler.as_arc_borrow(), EventKind::from_raw(k));
            }
        }
    }
}

impl<T: CmHandler> QpEvents<T> {
    /// The events of a QP about to be created for an id whose handler is `handler`. Process
    /// context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(super) fn new(handler: Arc<T>) -> Result<Arc<QpEvents<T>>> {
        Arc::pin_init(
            pin_init!(QpEvents {
                handler,
                pending: AtomicU32::new(0),
                work <- {
                    let (name, key) = qp_events_class();
                    crate::workqueue::Work::new(name, key)
                },
            }),
            GFP_KERNEL,
        )
    }

    /// `ib_qp_init_attr.event_handler` of the QP, with `qp_context` the address of a
    /// `QpEvents<T>`. Any context.
    ///
    /// # Safety
    ///
    /// Called by ib_core or the driver only, with `ev` a live event and `ctx` the address of a
    /// `QpEvents<T>` kept alive (an `Arc` held by the CM id) until the QP is destroyed.
    pub(super) unsafe extern "C" fn callback(ev: *mut bindings::ib_event, ctx: *mut c_void) {
        // SAFETY: `ctx` is a `QpEvents<T>` of an `Arc` the CM id holds until the QP is
        // destroyed, after which the driver calls this no more.
        let this = unsafe { ArcBorrow::<QpEvents<T>>::from_raw(ctx.cast_const().cast()) };
        // SAFETY: The driver passes a live event for the duration of the call.
        let kind = unsafe { (*ev).event };
        if kind >= u32::BITS {
            return;
        }
        this.pending.fetch_or(1 << kind, Ordering::AcqRel);
        // Already queued: the queued run sees the bit. Either way the `Arc` given back or kept
        // by the queue is not the last reference (the CM id holds one).
        let _ = workqueue::system().enqueue(Arc::<QpEvents<T>>::from(this));
    }

    /// The value for `ib_qp_init_attr.qp_context`.
    pub(super) fn context(this: &Arc<QpEvents<T>>) -> *mut c_void {
        Arc::as_ptr(this).cast_mut().cast()
    }

    /// Waits until a queued run of the work has returned. Process context; sleeps. Called once
    /// the QP is destroyed: nothing queues the work any more. From inside the work itself (a
    /// handler that let go of the last reference to its [`super::CmId`]) it returns at once:
    /// waiting would deadlock, and the run holds its own reference to `self`.
    pub(super) fn flush(&self) {
        // SAFETY: `work` was initialised in `new` and lives as long as `self`.
        let w = unsafe { Work::raw_get(&raw const self.work) };
        // SAFETY: `current_work` only reads the running task's worker; `w` is only compared.
        if unsafe { bindings::current_work() } == w {
            return;
        }
        // SAFETY: `w` is a live work item; flushing an idle one returns at once.
        unsafe { bindings::flush_work(w) };
    }
}
