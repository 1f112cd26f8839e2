// SPDX-License-Identifier: GPL-2.0

//! The asynchronous events of a CQ (`ib_cq.event_handler`: `IB_EVENT_CQ_ERR`, an overrun or a
//! failed CQ), handed to a [`CqEventHandler`] in process context.
//!
//! As for a QP's events (`super::super::cm`), the driver calls the handler in its own context
//! (rdma_rxe from the task that found the CQ full, hardware drivers from interrupts); the layer
//! records the kind in an atomic mask and queues a work item on the system workqueue, which
//! calls the handler. The [`super::Cq`] flushes the work after it freed the CQ.

use super::super::event::EventKind;
use crate::{
    bindings,
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::{self, Work, WorkItem},
};
use core::sync::atomic::{AtomicU32, Ordering};

/// Receives the asynchronous events of a CQ made with [`super::Cq::with_events`].
pub trait CqEventHandler: Send + Sync + 'static {
    /// An event of the CQ (in practice [`EventKind::CqErr`]). Process context (the system
    /// workqueue); may sleep; never after the [`super::Cq`] was dropped. An event reported again
    /// before the call is delivered once.
    fn cq_event(&self, ev: EventKind);
}

/// The events of one CQ, between the driver's callback and the handler.
#[pin_data]
pub(super) struct CqEvents {
    handler: Arc<dyn CqEventHandler>,
    /// Bit `k` set: an event of C value `k` waits for the work.
    pending: AtomicU32,
    #[pin]
    work: Work<CqEvents>,
}

crate::impl_has_work! {
    impl HasWork<CqEvents> for CqEvents { self.work }
}

impl WorkItem for CqEvents {
    type Pointer = Arc<CqEvents>;

    fn run(this: Arc<CqEvents>) {
        let bits = this.pending.swap(0, Ordering::AcqRel);
        for k in 0..u32::BITS {
            if bits & (1 << k) != 0 {
                this.handler.cq_event(EventKind::from_raw(k));
            }
        }
    }
}

impl CqEvents {
    /// The events of a CQ about to be allocated. Process context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(super) fn new(handler: Arc<dyn CqEventHandler>) -> Result<Arc<CqEvents>> {
        Arc::pin_init(
            pin_init!(CqEvents {
                handler,
                pending: AtomicU32::new(0),
                work <- crate::new_work!("rdma_cq_events"),
            }),
            GFP_KERNEL,
        )
    }

    /// `ib_cq.event_handler`, with `cq_context` the address of a `CqEvents`. Any context.
    ///
    /// # Safety
    ///
    /// Called by the driver only, with `ev` a live event and `ctx` the address of a `CqEvents`
    /// kept alive (an `Arc` held by the [`super::Cq`]) until the CQ is freed.
    pub(super) unsafe extern "C" fn callback(ev: *mut bindings::ib_event, ctx: *mut c_void) {
        // SAFETY: `ctx` is a `CqEvents` of an `Arc` the `Cq` holds until the CQ is freed, after
        // which the driver calls this no more.
        let this = unsafe { ArcBorrow::<CqEvents>::from_raw(ctx.cast_const().cast()) };
        // SAFETY: The driver passes a live event for the duration of the call.
        let kind = unsafe { (*ev).event };
        if kind >= u32::BITS {
            return;
        }
        this.pending.fetch_or(1 << kind, Ordering::AcqRel);
        // Already queued: the queued run sees the bit. The `Arc` is not the last reference
        // either way (the `Cq` holds one).
        let _ = workqueue::system().enqueue(Arc::<CqEvents>::from(this));
    }

    /// The value for the CQ's `cq_context`.
    pub(super) fn context(this: &Arc<CqEvents>) -> *mut c_void {
        Arc::as_ptr(this).cast_mut().cast()
    }

    /// Waits until a queued run of the work has returned, unless called from that run.
    /// Process context; sleeps. Called once the CQ is freed.
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
