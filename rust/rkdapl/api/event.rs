// SPDX-License-Identifier: GPL-2.0

//! Events as typed values, and upcalls as closures.

use super::{Cr, Evd, Handle};
use crate::{
    abi::handle::Handles,
    dto::{EVENT_INVALIDATED, EVENT_WITH_IMM},
    evd::{Event as RawEvent, UpcallFn, UpcallPolicy as RawPolicy},
};
use core::ptr::NonNull;
use kernel::{ffi::c_void, prelude::*, sync::Arc};

/// Event types (`enum rkdapl_event_type`, DAT's `DAT_EVENT_NUMBER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A DTO completed: [`Event::op`], [`Event::dto_status`], [`Event::cookie`].
    DtoCompletion,
    /// An RMR bind or unbind completed.
    RmrBindCompletion,
    /// A peer asks to connect: [`Event::take_cr`].
    ConnectionRequest,
    /// The connection is up.
    Established,
    /// The peer rejected the connection ([`Event::private_data`]: its reason).
    PeerRejected,
    /// The connection was refused by something other than the peer.
    NonPeerRejected,
    /// The peer's address or route could not be resolved ([`Event::status`]: the errno).
    Unreachable,
    /// Connecting timed out.
    TimedOut,
    /// The connection ended.
    Disconnected,
    /// The connection broke (device removal: status `-ENODEV`).
    Broken,
    /// Events were lost on a full EVD ([`Event::transferred_length`]: how many).
    AsyncEvdOverflow,
    /// The IA's device went away.
    AsyncIaCatastrophic,
}

impl EventKind {
    fn from_raw(k: u32) -> Option<EventKind> {
        use EventKind::*;
        Some(match k {
            1 => DtoCompletion,
            2 => RmrBindCompletion,
            3 => ConnectionRequest,
            4 => Established,
            5 => PeerRejected,
            6 => NonPeerRejected,
            7 => Unreachable,
            8 => TimedOut,
            9 => Disconnected,
            10 => Broken,
            11 => AsyncEvdOverflow,
            12 => AsyncIaCatastrophic,
            _ => return None,
        })
    }
}

/// DTO operations (`enum rkdapl_dto_op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtoOp {
    /// SEND.
    Send,
    /// RECV.
    Recv,
    /// RDMA WRITE.
    RdmaWrite,
    /// RDMA READ.
    RdmaRead,
    /// RMR bind.
    RmrBind,
    /// RMR unbind.
    RmrUnbind,
    /// RDMA WRITE with immediate data.
    RdmaWriteImm,
    /// SEND with invalidate.
    SendInvalidate,
}

impl DtoOp {
    fn from_raw(op: u32) -> Option<DtoOp> {
        use DtoOp::*;
        Some(match op {
            1 => Send,
            2 => Recv,
            3 => RdmaWrite,
            4 => RdmaRead,
            5 => RmrBind,
            6 => RmrUnbind,
            7 => RdmaWriteImm,
            8 => SendInvalidate,
            _ => return None,
        })
    }
}

/// How a DTO completed (`enum rkdapl_dto_status`, DAT's `DAT_DTO_COMPLETION_STATUS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtoStatus {
    /// It did what it was asked.
    Success,
    /// The connection ended before it ran.
    Flushed,
    /// A RECV too small for the message.
    LocalLength,
    /// A local QP error.
    LocalEp,
    /// A local protection error (the LMR, its lkey or its rights).
    LocalProtection,
    /// An unexpected answer from the peer.
    BadResponse,
    /// The peer refused the access (rkey, range or rights of its grant).
    RemoteAccess,
    /// The peer failed to carry it out.
    RemoteResponder,
    /// The transport gave up (retries exhausted: a dead peer).
    Transport,
    /// The peer had no RECV posted (RNR retries exhausted).
    ReceiverNotReady,
    /// An RMR operation failed.
    RmrOperationFailed,
    /// Anything else.
    Generic,
}

impl DtoStatus {
    fn from_raw(s: i32) -> DtoStatus {
        use DtoStatus::*;
        match s {
            0 => Success,
            1 => Flushed,
            2 => LocalLength,
            3 => LocalEp,
            4 => LocalProtection,
            5 => BadResponse,
            6 => RemoteAccess,
            7 => RemoteResponder,
            8 => Transport,
            9 => ReceiverNotReady,
            10 => RmrOperationFailed,
            _ => Generic,
        }
    }
}

/// One event taken from an [`Evd`] or handed to its upcall (`struct rkdapl_event`).
pub struct Event(pub(super) RawEvent);

impl Event {
    /// The event type (`None` only for a type this API does not know yet).
    pub fn kind(&self) -> Option<EventKind> {
        EventKind::from_raw(self.0.kind)
    }

    /// The raw status: for DTO and RMR events the `enum rkdapl_dto_status` value (see
    /// [`Event::dto_status`]); for connection events 0, a negative errno or the reject reason;
    /// for overflows `-EOVERFLOW` and for an IA catastrophe `-ENODEV`.
    pub fn status(&self) -> i32 {
        self.0.status
    }

    /// How a DTO or RMR operation completed; `None` for other events.
    pub fn dto_status(&self) -> Option<DtoStatus> {
        matches!(
            self.kind(),
            Some(EventKind::DtoCompletion | EventKind::RmrBindCompletion)
        )
        .then(|| DtoStatus::from_raw(self.0.status))
    }

    /// The DTO's cookie.
    pub fn cookie(&self) -> u64 {
        self.0.cookie
    }

    /// Bytes moved by a successful DTO (a RECV: bytes received); for an overflow, events lost.
    pub fn transferred_length(&self) -> u64 {
        self.0.transferred_length
    }

    /// The DTO operation, for DTO and RMR events.
    pub fn op(&self) -> Option<DtoOp> {
        DtoOp::from_raw(self.0.op)
    }

    /// A RECV's immediate data, if the peer sent some (SEND or RDMA WRITE with immediate).
    pub fn immediate(&self) -> Option<u32> {
        (self.0.flags & EVENT_WITH_IMM != 0).then_some(self.0.immediate)
    }

    /// The rkey a peer's SEND with invalidate ended, for the RECV it consumed.
    pub fn invalidated_rkey(&self) -> Option<u32> {
        (self.0.flags & EVENT_INVALIDATED != 0).then_some(self.0.invalidated_rkey)
    }

    /// The peer's private data of a connection request, accept or reject.
    pub fn private_data(&self) -> &[u8] {
        let n = (self.0.private_data_len as usize).min(self.0.private_data.len());
        &self.0.private_data[..n]
    }

    /// The connection request of a `ConnectionRequest` event, once.
    pub fn take_cr(&mut self) -> Option<Cr> {
        let p = core::mem::replace(&mut self.0.cr, 0);
        NonNull::new(p as *mut c_void).map(|p| Cr(Some(Handle(p))))
    }
}

/// How upcalls may overlap (`enum rkdapl_upcall_policy`, DAT's `DAT_UPCALL_POLICY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpcallPolicy {
    /// One call at a time.
    SingleInstance,
    /// Calls for different sources (EPs, PSPs) may run at once.
    Many,
}

/// A closure as an EVD's upcall.
struct Closure<F>(F);

impl<F: Fn(&Event) + Send + Sync> UpcallFn for Closure<F> {
    fn call(&self, ev: &RawEvent) {
        (self.0)(&Event(*ev))
    }
}

impl Evd {
    /// Hands each new event to `f` instead of queueing it (`rkdapl_evd_modify_upcall`), in
    /// process context (the CQs' completion work, rdma_cm's handlers), one call at a time or
    /// several at once as `policy` says. As for C upcalls (`rkdapl_upcall_fn`), `f` must not
    /// sleep: it may post DTOs and hand the rest to a work item. It sees each event by
    /// reference, so a connection request's CR stays with the PSP (it cannot be answered
    /// inside rdma_cm's handler). Replacing or clearing it waits for calls in progress, and
    /// the replaced closure is dropped by that call. Process context; may sleep; not from the
    /// upcall itself.
    ///
    /// # Errors
    ///
    /// `EINVAL` after the EVD was freed, `ENOMEM`.
    pub fn set_upcall<F: Fn(&Event) + Send + Sync + 'static>(
        &self,
        policy: UpcallPolicy,
        f: F,
    ) -> Result {
        let f: Arc<dyn UpcallFn> = Arc::new(Closure(f), GFP_KERNEL)?;
        let policy = match policy {
            UpcallPolicy::SingleInstance => RawPolicy::SingleInstance,
            UpcallPolicy::Many => RawPolicy::Many,
        };
        self.modify_upcall(policy, Some(f))
    }

    /// The part of [`Evd::set_upcall`] that is not generic: compiled into rkdapl (a consumer
    /// compiles the generic part, and reaches only rkdapl's exported `api` symbols).
    #[inline(never)]
    fn modify_upcall(&self, policy: RawPolicy, f: Option<Arc<dyn UpcallFn>>) -> Result {
        let evd: Arc<crate::evd::Evd> = Handles::get(self.0.raw())?;
        evd.modify_upcall(policy, f)
    }

    /// Queues events again; waits for upcalls in progress. Process context; may sleep; not
    /// from the upcall itself.
    ///
    /// # Errors
    ///
    /// `EINVAL` after the EVD was freed.
    #[inline(never)]
    pub fn clear_upcall(&self) -> Result {
        self.modify_upcall(RawPolicy::Disable, None)
    }
}
