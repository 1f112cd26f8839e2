// SPDX-License-Identifier: GPL-2.0

//! The asynchronous events of an EP's QP (`IB_EVENT_QP_FATAL`, `IB_EVENT_QP_REQ_ERR`,
//! `IB_EVENT_QP_ACCESS_ERR`, `IB_EVENT_PATH_MIG_ERR`, ...), which the RDMA layer delivers in
//! process context ([`crate::rdma::cm::CmHandler::qp_event`]), as DAT async events.
//!
//! A QP error breaks the EP: `RKDAPL_ASYNC_EP_BROKEN` (DAT's `DAT_ASYNC_ERROR_EP_BROKEN`)
//! naming the EP goes to the IA's async EVD, and the EP, unless already DISCONNECTED, reports
//! `RKDAPL_CONNECTION_EVENT_BROKEN` with the same status on its connection EVD and becomes
//! DISCONNECTED (its QP is in the error state: what is posted completes flushed). The CM id is
//! left alone here (the layer forbids dropping it in this callback); `rkdapl_ep_free` or
//! `rkdapl_ep_reset` disconnects and releases it.
//!
//! The EP's two CQs report `IB_EVENT_CQ_ERR` the same way ([`EpCqEvents`]):
//! `RKDAPL_ASYNC_CQ_ERROR` naming the EP and its DTO EVD.
//!
//! `IB_EVENT_COMM_EST` (the QP saw its first packet before the IB CM's RTU) is not acted on
//! here: the CM's RTU establishes the connection.

use super::Ep;
use crate::dto::{DtoRing, RingShared};
use crate::evd::{AsyncEvent, AsyncSlot, Event, EventType};
use crate::ia::Ia;
use crate::rdma::{cq::CqEventHandler, event::EventKind, wr::WrPool};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

/// The status `RKDAPL_ASYNC_EP_BROKEN` reports for a QP event that breaks the EP, or `None` for
/// events that do not. Pure: KUnit-tested (`rkdapl_ep_qp_events`).
pub(crate) fn broken_status(kind: EventKind) -> Option<i32> {
    Some(match kind {
        EventKind::QpFatal => EIO.to_errno(),
        EventKind::QpReqErr => EPROTO.to_errno(),
        EventKind::QpAccessErr => EACCES.to_errno(),
        EventKind::PathMigErr => ENETUNREACH.to_errno(),
        _ => return None,
    })
}

impl Ep {
    /// An asynchronous event of the EP's QP. Process context (the system workqueue).
    pub(super) fn on_qp_event(&self, kind: EventKind) {
        crate::trace::cm_event(self.id, self.sq.qpn(), c"QP_EVENT", kind_code(kind));
        let Some(status) = broken_status(kind) else {
            return;
        };
        let mut ev = Event::asynchronous(EventType::AsyncEpBroken, status);
        if let Event::Async(AsyncEvent { ep, .. }) = &mut ev {
            *ep = self.handle.load(Ordering::Relaxed);
        }
        self.ia.async_slot.post(ev);
        self.fail(EventType::Broken, status, &[]);
    }
}

/// The C value of `kind` (for the trace event's status field).
fn kind_code(kind: EventKind) -> i32 {
    use EventKind::*;
    match kind {
        QpFatal => 1,
        QpReqErr => 2,
        QpAccessErr => 3,
        CommEst => 4,
        SqDrained => 5,
        PathMig => 6,
        PathMigErr => 7,
        QpLastWqeReached => 16,
        _ => -1,
    }
}

#[kunit_tests(rkdapl_ep_qp_events)]
mod tests {
    use super::*;

    #[test]
    fn qp_errors_break_the_ep_with_a_status_each() {
        assert_eq!(broken_status(EventKind::QpFatal), Some(EIO.to_errno()));
        assert_eq!(broken_status(EventKind::QpReqErr), Some(EPROTO.to_errno()));
        assert_eq!(
            broken_status(EventKind::QpAccessErr),
            Some(EACCES.to_errno())
        );
        assert_eq!(
            broken_status(EventKind::PathMigErr),
            Some(ENETUNREACH.to_errno())
        );
        assert_eq!(broken_status(EventKind::CommEst), None);
        assert_eq!(broken_status(EventKind::SqDrained), None);
        assert_eq!(broken_status(EventKind::QpLastWqeReached), None);
        assert_eq!(broken_status(EventKind::PortErr), None);
    }
}

/// The handler of the events of one of an EP's CQs: `IB_EVENT_CQ_ERR` is reported as
/// `RKDAPL_ASYNC_CQ_ERROR` (status `-EIO`) on the IA's async EVD, naming the EP and the DTO EVD
/// of the CQ's ring. It holds the ring's pool and the IA's async slot, not the EP (the EP holds
/// the CQ).
pub(super) struct EpCqEvents {
    ring: Arc<WrPool<RingShared>>,
    slot: Arc<AsyncSlot>,
}

impl EpCqEvents {
    /// The handler of the CQ of `ring`, an EP's ring on `ia`. Process context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(super) fn handler(ring: &DtoRing, ia: &Ia) -> Result<Arc<dyn CqEventHandler>> {
        let h: Arc<dyn CqEventHandler> = Arc::new(
            EpCqEvents {
                ring: ring.pool.clone(),
                slot: ia.async_slot.clone(),
            },
            GFP_KERNEL,
        )?;
        Ok(h)
    }
}

impl CqEventHandler for EpCqEvents {
    fn cq_event(&self, kind: EventKind) {
        if kind != EventKind::CqErr {
            return;
        }
        let r = self.ring.owner();
        self.slot.post(Event::Async(AsyncEvent {
            kind: EventType::AsyncCqError,
            status: EIO.to_errno(),
            ep: r.ep_handle(),
            evd: r.evd_handle(),
            cookie: 0,
            port: 0,
        }));
    }
}
