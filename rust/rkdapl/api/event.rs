// SPDX-License-Identifier: GPL-2.0

//! Events: the provider's own [`crate::evd::Event`], whose connection requests the Rust API's
//! events own. Their accessors run in any context.

use super::{AsyncEvent, Cr, DtoEvent, EventType};
use crate::dto::{DtoOp, DtoStatus};
use kernel::prelude::*;

/// One event taken from an [`super::Evd`] or handed to its upcall: match on its variants, or
/// read it through the accessors below. A [`EventOf::Cr`] event owns its connection request
/// until [`Event::take_cr`] takes it (dropped with the event otherwise, and so rejected).
///
/// What a status means depends on the event's type: [`Event::dto_status`] for DTO and RMR bind
/// completions, [`Event::reject_reason`] for a peer's reject, [`Event::error`] for failed
/// connections and asynchronous errors.
pub type Event = EventOf<Option<Cr>>;

/// The one event type of rkdapl, generic over how a connection request is held: [`Event`] is
/// the Rust API's form (the provider's holds a token).
pub use crate::evd::Event as EventOf;

impl Event {
    /// The status as C sees it (`rkdapl_evd_dequeue`): a DTO status, reject reason or errno,
    /// depending on the type (see the typed accessors).
    #[inline(never)]
    pub fn status(&self) -> i32 {
        match self {
            Event::Dto(DtoEvent { status, .. }) => *status as i32,
            Event::Conn { status, .. } | Event::Async(AsyncEvent { status, .. }) => *status,
            Event::Cr { .. } => 0,
            Event::Overflow { .. } => EOVERFLOW.to_errno(),
        }
    }

    /// How a DTO or RMR operation completed; `None` for other events.
    #[inline(never)]
    pub fn dto_status(&self) -> Option<DtoStatus> {
        match self {
            Event::Dto(DtoEvent { status, .. }) => Some(*status),
            _ => None,
        }
    }

    /// The IB CM reject reason of a [`EventType::PeerRejected`] event (28: rejected by the
    /// consumer, 8: no listener on the port); `None` for other events.
    #[inline(never)]
    pub fn reject_reason(&self) -> Option<i32> {
        match self {
            Event::Conn {
                kind: EventType::PeerRejected,
                status,
                ..
            } => Some(*status),
            _ => None,
        }
    }

    /// The error of a connection event that reports one (non-peer reject, unreachable, timed
    /// out, broken) or of an asynchronous error (`EOVERFLOW`; `ENODEV` or `EIO` for
    /// IA_CATASTROPHIC; `EIO`, `EPROTO`, `EACCES` or `ENETUNREACH` for a broken EP's QP,
    /// `EIO` for a CQ error); `None` for others.
    #[inline(never)]
    pub fn error(&self) -> Option<Error> {
        let errno = matches!(
            self.kind(),
            EventType::NonPeerRejected
                | EventType::Unreachable
                | EventType::TimedOut
                | EventType::Broken
                | EventType::AsyncEvdOverflow
                | EventType::AsyncIaCatastrophic
                | EventType::AsyncEpBroken
                | EventType::AsyncCqError
        );
        let status = self.status();
        (errno && status < 0).then(|| Error::from_errno(status))
    }

    /// The number ([`super::Ep::id`]) of the EP a DTO, RMR, connection or EP error event is
    /// about.
    #[inline(never)]
    pub fn ep_id(&self) -> Option<u32> {
        let ep = match self {
            Event::Dto(DtoEvent { ep, .. })
            | Event::Conn { ep, .. }
            | Event::Async(AsyncEvent { ep, .. }) => *ep,
            _ => 0,
        };
        // An EP of this API has no C handle: its events carry its number.
        u32::try_from(ep).ok().filter(|id| *id != 0)
    }

    /// The port (1-based) of an asynchronous port event ([`EventType::AsyncPortActive`],
    /// [`EventType::AsyncPortError`], GID, LID, P_Key, SM and client-reregister changes);
    /// `None` for other events.
    #[inline(never)]
    pub fn port(&self) -> Option<u32> {
        match self {
            Event::Async(AsyncEvent { port, .. }) if *port != 0 => Some(*port),
            _ => None,
        }
    }

    /// The DTO's, bind's or unbind's cookie (an SRQ event's: the SRQ's C handle); 0 for
    /// others.
    #[inline(never)]
    pub fn cookie(&self) -> u64 {
        match self {
            Event::Dto(DtoEvent { cookie, .. }) | Event::Async(AsyncEvent { cookie, .. }) => {
                *cookie
            }
            _ => 0,
        }
    }

    /// Bytes moved by a successful DTO (a RECV: bytes received; an RDMA WRITE with immediate
    /// that consumed it: bytes written); for an overflow, events lost; 0 for others.
    #[inline(never)]
    pub fn transferred_length(&self) -> u64 {
        match self {
            Event::Dto(DtoEvent { len, .. }) => *len,
            Event::Overflow { lost, .. } => *lost,
            _ => 0,
        }
    }

    /// The operation of a DTO or RMR bind completion.
    #[inline(never)]
    pub fn op(&self) -> Option<DtoOp> {
        match self {
            Event::Dto(DtoEvent { op, .. }) => Some(*op),
            _ => None,
        }
    }

    /// A RECV's immediate data, if the peer sent some (RDMA WRITE with immediate).
    #[inline(never)]
    pub fn immediate(&self) -> Option<u32> {
        match self {
            Event::Dto(DtoEvent { immediate, .. }) => *immediate,
            _ => None,
        }
    }

    /// Whether an RDMA WRITE with immediate consumed the RECV: its data went to the grant the
    /// peer named, not to the RECV's buffer.
    #[inline(never)]
    pub fn by_rdma_write_imm(&self) -> bool {
        matches!(
            self,
            Event::Dto(DtoEvent {
                by_rdma_write_imm: true,
                ..
            })
        )
    }

    /// kDAPL's "more events follow" hint of a DTO completion handed to an upcall
    /// ([`super::Evd::set_upcall`]): another DTO completion of the same EP queue follows right
    /// after this one, so the upcall may coalesce its work (one doorbell, one wakeup) until an
    /// event without it. Never set when none follows; `false` for queued events and others.
    #[inline(never)]
    pub fn more(&self) -> bool {
        matches!(self, Event::Dto(DtoEvent { more: true, .. }))
    }

    /// The rkey a peer's SEND with invalidate ended, for the RECV it consumed (that RMR is
    /// unbound by now).
    #[inline(never)]
    pub fn invalidated_rkey(&self) -> Option<u32> {
        match self {
            Event::Dto(DtoEvent {
                invalidated_rkey, ..
            }) => *invalidated_rkey,
            _ => None,
        }
    }

    /// The peer's private data of a connection request, accept or reject; empty for others.
    #[inline(never)]
    pub fn private_data(&self) -> &[u8] {
        match self {
            Event::Conn { private_data, .. } | Event::Cr { private_data, .. } => {
                private_data.as_bytes()
            }
            _ => &[],
        }
    }

    /// The connection request of a [`EventType::ConnectionRequest`] event, once (`None` for
    /// other events and after the first call), from [`super::Evd::wait`],
    /// [`super::Evd::dequeue`] or an upcall. Dropped with the event otherwise, and so rejected.
    #[inline(never)]
    pub fn take_cr(&mut self) -> Option<Cr> {
        match self {
            Event::Cr { cr, .. } => cr.take(),
            _ => None,
        }
    }
}
