// SPDX-License-Identifier: GPL-2.0

//! Where a DTO ring reports what finished: an EVD, or a consumer's handler.

use crate::evd::{DtoEvent, Evd};
use kernel::sync::Arc;

/// A consumer's handler of finished DTOs, called instead of posting their events to an EVD
/// (the Rust API's typed EPs, `crate::api::TypedEp`).
pub(crate) trait DtoHandler: Send + Sync {
    /// The DTO `ev` finished. `suppressed`: it succeeded and was posted with
    /// `RKDAPL_COMPLETION_SUPPRESS`, so it reports no event (the handler only takes back
    /// what its cookie stands for). `more`: this call goes on to finish the next DTO of the
    /// same queue (a consumer may coalesce its work until a call without it).
    ///
    /// Called once for every DTO of the ring that finishes, but never for one a failed post
    /// call left behind (its caller got the error). Called from the context that finishes the
    /// DTO, with no rkdapl lock held: the CQ's completion work (process context, the CQs poll
    /// on a workqueue), or the EP's teardown, reset or device removal (process context) for
    /// flushed and reaped DTOs. One call at a time per ring, in posting order.
    fn done(&self, ev: &DtoEvent, suppressed: bool, more: bool);
}

/// Where a ring reports its finished DTOs.
#[derive(Clone)]
pub(crate) enum DtoSink {
    /// As events on the EP's DTO EVD (queued, or handed to its upcall).
    Evd(Arc<Evd>),
    /// To a consumer's handler directly: no event queue, no EVD lock.
    Handler(Arc<dyn DtoHandler>),
}

impl DtoSink {
    /// Whether a successful DTO posted with completion suppress is reported to this sink: a
    /// handler takes back its context; an EVD reports nothing for it.
    pub(super) fn takes_suppressed(&self) -> bool {
        matches!(self, DtoSink::Handler(_))
    }
}
