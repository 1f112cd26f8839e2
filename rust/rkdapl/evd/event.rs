// SPDX-License-Identifier: GPL-2.0

//! The events an EVD carries (DAT 2.0 section 5.3.2), as typed values.

use crate::dto_op::{DtoOp, DtoStatus};

/// Private data bytes a connect, accept, reject or event carries at most
/// (`RKDAPL_MAX_PRIVATE_DATA`).
pub const MAX_PRIVATE_DATA: usize = 56;

/// What an event reports (`enum rkdapl_event_type` in `include/rkdapl.h`, DAT's
/// `DAT_EVENT_NUMBER`). What the event's status means depends on it: see each variant.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// A DTO completed; its status is a DTO completion status (`enum rkdapl_dto_status`).
    DtoCompletion = 1,
    /// An RMR bind or unbind completed (status as for [`EventType::DtoCompletion`]); the grant
    /// is usable, or revoked, from now on.
    RmrBindCompletion = 2,
    /// A peer asks to connect to a PSP: the event carries the connection request and the
    /// peer's private data.
    ConnectionRequest = 3,
    /// The EP is connected; the event carries the peer's private data.
    Established = 4,
    /// The peer rejected the connection; the status is the IB CM reject reason (28: rejected
    /// by the consumer, 8: no listener on the port), the private data the peer's.
    PeerRejected = 5,
    /// The local side could not connect; the status is a negative errno.
    NonPeerRejected = 6,
    /// The peer cannot be reached; the status is a negative errno.
    Unreachable = 7,
    /// The connect timeout passed.
    TimedOut = 8,
    /// The connection ended (either side disconnected); status `-ECONNRESET` on the passive
    /// side when it ended before this side saw it established, 0 otherwise.
    Disconnected = 9,
    /// The connection was lost; status `-ENODEV` when the device went away.
    Broken = 10,
    /// An EVD was full: the event's transferred length is how many events were lost; status
    /// `-EOVERFLOW`.
    AsyncEvdOverflow = 11,
    /// On the IA's async EVD: the device went away (status `-ENODEV`); free everything on
    /// the IA.
    AsyncIaCatastrophic = 12,
    /// On the IA's async EVD: an SRQ's low watermark was reached (fewer RECVs left); `cookie`
    /// is the SRQ. Fires once per `rkdapl_srq_set_lw`.
    AsyncSrqLimitReached = 13,
    /// On the IA's async EVD: an SRQ failed (`IB_EVENT_SRQ_ERR`); `cookie` is the SRQ.
    AsyncSrqError = 14,
    // Asynchronous events of ib_core (`ia/events.rs`, `ep/qp_events.rs`), on
    // the IA's async EVD. Port events name the port in the event's `port`.
    /// A port of the IA's device became ACTIVE (`IB_EVENT_PORT_ACTIVE`): connections can be
    /// made through it again. Status 0.
    AsyncPortActive = 20,
    /// A port of the IA's device left ACTIVE (`IB_EVENT_PORT_ERR`: link down, cable pulled).
    /// Connections through it stop moving data until it is ACTIVE again (or their transport
    /// retries run out). Status 0.
    AsyncPortError = 21,
    /// A port's GID table changed (`IB_EVENT_GID_CHANGE`; RoCE: an IP address was added or
    /// removed). Status 0.
    AsyncGidChange = 22,
    /// A port's LID changed (`IB_EVENT_LID_CHANGE`, InfiniBand). Status 0.
    AsyncLidChange = 23,
    /// The subnet manager asks clients to register again (`IB_EVENT_CLIENT_REREGISTER`,
    /// InfiniBand). Status 0.
    AsyncClientReregister = 24,
    /// A port's P_Key table changed (`IB_EVENT_PKEY_CHANGE`). Status 0.
    AsyncPkeyChange = 25,
    /// A port's subnet manager changed (`IB_EVENT_SM_CHANGE`, InfiniBand). Status 0.
    AsyncSmChange = 26,
    /// DAT's `DAT_ASYNC_ERROR_EP_BROKEN`: the QP of the EP `ep` failed (`IB_EVENT_QP_FATAL`:
    /// status `-EIO`; `IB_EVENT_QP_REQ_ERR`: `-EPROTO`; `IB_EVENT_QP_ACCESS_ERR`: `-EACCES`;
    /// `IB_EVENT_PATH_MIG_ERR`: `-ENETUNREACH`). The EP also reports
    /// [`EventType::Broken`] with the same status on its connection EVD.
    AsyncEpBroken = 27,
    /// A CQ of the EP `ep` failed (`IB_EVENT_CQ_ERR`, status `-EIO`); `evd` is the EP's DTO
    /// EVD (C handle, 0 for an EVD of the Rust API), whose completions may be lost.
    AsyncCqError = 28,
}

/// A peer's private data, carried inline by the events that have it (at most
/// [`MAX_PRIVATE_DATA`] bytes; longer data is cut).
#[derive(Clone, Copy)]
pub struct PrivateData {
    len: u8,
    bytes: [u8; MAX_PRIVATE_DATA],
}

impl PrivateData {
    /// The first [`MAX_PRIVATE_DATA`] bytes of `data`. Any context.
    pub(crate) fn new(data: &[u8]) -> PrivateData {
        let n = data.len().min(MAX_PRIVATE_DATA);
        let mut bytes = [0; MAX_PRIVATE_DATA];
        bytes[..n].copy_from_slice(&data[..n]);
        PrivateData {
            len: n as u8,
            bytes,
        }
    }

    /// The bytes. Any context.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len).min(MAX_PRIVATE_DATA)]
    }
}

/// A DTO, RMR bind or RMR unbind completion (DAT's `DAT_DTO_COMPLETION_EVENT_DATA`).
#[derive(Clone, Copy, Debug)]
pub struct DtoEvent {
    /// The EP.
    pub ep: usize,
    /// The consumer's cookie of the DTO, bind or unbind.
    pub cookie: u64,
    /// How it completed.
    pub status: DtoStatus,
    /// What completed.
    pub op: DtoOp,
    /// Bytes moved by a successful DTO (a RECV: bytes received; an RDMA WRITE with
    /// immediate that consumed it: bytes written); 0 otherwise.
    pub len: u64,
    /// A RECV's immediate data, if the peer sent some.
    pub immediate: Option<u32>,
    /// An RDMA WRITE with immediate consumed the RECV: its data went to the grant the
    /// peer named, not to the RECV's buffer.
    pub by_rdma_write_imm: bool,
    /// The rkey a peer's SEND with invalidate ended, for the RECV it consumed (that RMR is
    /// unbound by now).
    pub invalidated_rkey: Option<u32>,
    /// kDAPL's "more events follow" upcall hint: handed to an upcall, another DTO completion
    /// of the same EP queue follows right after this one (its CQ completion finished several
    /// DTOs), so the consumer may coalesce its work until an event without it. Never set when
    /// none follows; left clear on queued events and where the provider cannot tell.
    pub more: bool,
}

/// An asynchronous event on the IA's async EVD (DAT's `DAT_ASYNCH_ERROR_EVENT_DATA`), other
/// than an EVD overflow.
#[derive(Clone, Copy, Debug)]
pub struct AsyncEvent {
    /// Which asynchronous event: [`EventType::AsyncIaCatastrophic`] or later.
    pub kind: EventType,
    /// The errno the kind reports, 0 otherwise.
    pub status: i32,
    /// The EP of [`EventType::AsyncEpBroken`] and [`EventType::AsyncCqError`], 0 otherwise.
    pub ep: usize,
    /// The DTO EVD of [`EventType::AsyncCqError`] (its C handle, 0 for an EVD of the Rust
    /// API), 0 otherwise.
    pub evd: usize,
    /// The SRQ (its C handle) of the SRQ events, 0 otherwise.
    pub cookie: u64,
    /// The port (1-based) of a port event, 0 otherwise.
    pub port: u32,
}

/// One event of an EVD (DAT 2.0 section 5.3.2): what the provider queues and hands to
/// upcalls, and what the Rust API returns. The C API hands it to C consumers as a
/// C event struct (`abi::evd`).
///
/// `C` is how a connection request is held: the provider's events carry the token its PSP's
/// [`crate::psp::CrPublisher`] gave it (a C handle, or a Rust API's table token); the Rust API's
/// events own the request itself.
///
/// An event naming an EP (`ep`) names it by its C handle, or for an EP of the Rust API by
/// its number ([`crate::ep::Ep::set_handle`]); 0 for none.
#[derive(Clone, Copy)]
pub enum Event<C = usize> {
    /// A DTO ([`EventType::DtoCompletion`]) or an RMR bind or unbind (op
    /// [`DtoOp::RmrBind`] or [`DtoOp::RmrUnbind`]: [`EventType::RmrBindCompletion`])
    /// completed.
    Dto(DtoEvent),
    /// A connection event of an EP: `kind` is one of [`EventType::Established`] to
    /// [`EventType::Broken`]; what `status` means depends on it (see [`EventType`]). Its
    /// fields are the variant's own, not a struct's, so that the event stays 80 bytes (the
    /// tag shares the padding beside `kind` and `status`).
    Conn {
        /// Which connection event.
        kind: EventType,
        /// The EP.
        ep: usize,
        /// The reject reason or errno the kind reports, 0 otherwise.
        status: i32,
        /// The peer's private data (established, peer rejected).
        private_data: PrivateData,
    },
    /// A peer asks to connect to a PSP ([`EventType::ConnectionRequest`]).
    Cr {
        /// The connection request.
        cr: C,
        /// The peer's private data.
        private_data: PrivateData,
    },
    /// An EVD was full ([`EventType::AsyncEvdOverflow`], status `-EOVERFLOW`).
    Overflow {
        /// The EVD that overflowed: its C handle (0 for an EVD of the Rust API).
        evd: usize,
        /// How many events were lost (1 in the report on the IA's async EVD).
        lost: u64,
    },
    /// Any other asynchronous event, on the IA's async EVD: [`EventType::AsyncIaCatastrophic`]
    /// or later (see [`EventType`]).
    Async(AsyncEvent),
}

// An EVD's ring holds these by value: 80 bytes (the C struct is 128).
const _: () = assert!(core::mem::size_of::<Event>() <= 80);

impl<C> Event<C> {
    /// A connection event of the EP `ep`. Any context.
    pub(crate) fn conn(kind: EventType, ep: usize, status: i32, pdata: &[u8]) -> Self {
        Event::Conn {
            kind,
            ep,
            status,
            private_data: PrivateData::new(pdata),
        }
    }

    /// An asynchronous event with status `status` and no other field set. Any context.
    pub(crate) fn asynchronous(kind: EventType, status: i32) -> Self {
        Event::Async(AsyncEvent {
            kind,
            status,
            ep: 0,
            evd: 0,
            cookie: 0,
            port: 0,
        })
    }

    /// What the event reports. Any context.
    #[inline(never)]
    pub fn kind(&self) -> EventType {
        match self {
            Event::Dto(DtoEvent {
                op: DtoOp::RmrBind | DtoOp::RmrUnbind,
                ..
            }) => EventType::RmrBindCompletion,
            Event::Dto(_) => EventType::DtoCompletion,
            Event::Conn { kind, .. } | Event::Async(AsyncEvent { kind, .. }) => *kind,
            Event::Cr { .. } => EventType::ConnectionRequest,
            Event::Overflow { .. } => EventType::AsyncEvdOverflow,
        }
    }

    /// The event with its connection request, if it has one, mapped by `f`. Any context.
    pub(crate) fn map_cr<D>(self, f: impl FnOnce(C) -> D) -> Event<D> {
        match self {
            Event::Dto(d) => Event::Dto(d),
            Event::Conn {
                kind,
                ep,
                status,
                private_data,
            } => Event::Conn {
                kind,
                ep,
                status,
                private_data,
            },
            Event::Cr { cr, private_data } => Event::Cr {
                cr: f(cr),
                private_data,
            },
            Event::Overflow { evd, lost } => Event::Overflow { evd, lost },
            Event::Async(a) => Event::Async(a),
        }
    }
}
