// SPDX-License-Identifier: GPL-2.0

//! Events as typed values. Their accessors run in any context.

use super::{Cr, EventType};
use crate::{
    dto::{DtoOp, DtoStatus, EVENT_INVALIDATED, EVENT_RDMA_WRITE_IMM, EVENT_WITH_IMM},
    evd::Event as RawEvent,
};
use kernel::prelude::*;

/// One event taken from an [`super::Evd`] or handed to its upcall (`struct rkdapl_event`).
///
/// What its status means depends on its type, so it is read through typed accessors:
/// [`Event::dto_status`] for DTO and RMR bind completions, [`Event::reject_reason`] for a
/// peer's reject, [`Event::error`] for failed connections and asynchronous errors.
pub struct Event {
    pub(super) raw: RawEvent,
    /// A connection request's CR, until taken.
    pub(super) cr: Option<Cr>,
}

impl Event {
    /// The event's type.
    #[inline(never)]
    pub fn kind(&self) -> EventType {
        self.raw.kind
    }

    /// The raw status, as C sees it (`struct rkdapl_event.status`): its meaning depends on the
    /// type (see the typed accessors).
    #[inline(never)]
    pub fn status(&self) -> i32 {
        self.raw.status
    }

    /// How a DTO or RMR operation completed; `None` for other events.
    #[inline(never)]
    pub fn dto_status(&self) -> Option<DtoStatus> {
        matches!(
            self.raw.kind,
            EventType::DtoCompletion | EventType::RmrBindCompletion
        )
        .then(|| DtoStatus::from_raw(self.raw.status))
    }

    /// The IB CM reject reason of a [`EventType::PeerRejected`] event (28: rejected by the
    /// consumer, 8: no listener on the port); `None` for other events.
    #[inline(never)]
    pub fn reject_reason(&self) -> Option<i32> {
        (self.raw.kind == EventType::PeerRejected).then_some(self.raw.status)
    }

    /// The error of a connection event that reports one (non-peer reject, unreachable, timed
    /// out, broken) or of an asynchronous error (`EOVERFLOW`; `ENODEV` or `EIO` for
    /// IA_CATASTROPHIC; `EIO`, `EPROTO`, `EACCES` or `ENETUNREACH` for a broken EP's QP,
    /// `EIO` for a CQ error); `None` for others.
    #[inline(never)]
    pub fn error(&self) -> Option<Error> {
        let errno = matches!(
            self.raw.kind,
            EventType::NonPeerRejected
                | EventType::Unreachable
                | EventType::TimedOut
                | EventType::Broken
                | EventType::AsyncEvdOverflow
                | EventType::AsyncIaCatastrophic
                | EventType::AsyncEpBroken
                | EventType::AsyncCqError
        );
        (errno && self.raw.status < 0).then(|| Error::from_errno(self.raw.status))
    }

    /// The number ([`super::Ep::id`]) of the EP a DTO, RMR or connection event is about.
    #[inline(never)]
    pub fn ep_id(&self) -> Option<u32> {
        // An EP of this API has no C handle: its events carry its number.
        u32::try_from(self.raw.ep).ok().filter(|id| *id != 0)
    }

    /// The port (1-based) of an asynchronous port event ([`EventType::AsyncPortActive`],
    /// [`EventType::AsyncPortError`], GID, LID, P_Key, SM and client-reregister changes);
    /// `None` for other events.
    #[inline(never)]
    pub fn port(&self) -> Option<u32> {
        (self.raw.port != 0).then_some(self.raw.port)
    }

    /// The DTO's, bind's or unbind's cookie.
    #[inline(never)]
    pub fn cookie(&self) -> u64 {
        self.raw.cookie
    }

    /// Bytes moved by a successful DTO (a RECV: bytes received; an RDMA WRITE with immediate
    /// that consumed it: bytes written); for an overflow, events lost.
    #[inline(never)]
    pub fn transferred_length(&self) -> u64 {
        self.raw.transferred_length
    }

    /// The operation of a DTO or RMR bind completion.
    #[inline(never)]
    pub fn op(&self) -> Option<DtoOp> {
        DtoOp::from_raw(self.raw.op)
    }

    /// A RECV's immediate data, if the peer sent some (RDMA WRITE with immediate).
    #[inline(never)]
    pub fn immediate(&self) -> Option<u32> {
        (self.raw.flags & EVENT_WITH_IMM != 0).then_some(self.raw.immediate)
    }

    /// Whether an RDMA WRITE with immediate consumed the RECV: its data went to the grant the
    /// peer named, not to the RECV's buffer.
    #[inline(never)]
    pub fn by_rdma_write_imm(&self) -> bool {
        self.raw.flags & EVENT_RDMA_WRITE_IMM != 0
    }

    /// The rkey a peer's SEND with invalidate ended, for the RECV it consumed (that RMR is
    /// unbound by now).
    #[inline(never)]
    pub fn invalidated_rkey(&self) -> Option<u32> {
        (self.raw.flags & EVENT_INVALIDATED != 0).then_some(self.raw.invalidated_rkey)
    }

    /// The peer's private data of a connection request, accept or reject.
    #[inline(never)]
    pub fn private_data(&self) -> &[u8] {
        let n = (self.raw.private_data_len as usize).min(self.raw.private_data.len());
        &self.raw.private_data[..n]
    }

    /// The connection request of a [`EventType::ConnectionRequest`] event, once (`None` for
    /// other events and after the first call), from [`super::Evd::wait`],
    /// [`super::Evd::dequeue`] or an upcall. Dropped with the event otherwise, and so rejected.
    #[inline(never)]
    pub fn take_cr(&mut self) -> Option<Cr> {
        self.cr.take()
    }
}
