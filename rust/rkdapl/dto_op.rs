// SPDX-License-Identifier: GPL-2.0

//! What a DTO does and how it completed: the words the post calls, DTO completions, their
//! events and the Rust API share (a leaf of the provider, so that `evd` may use it without
//! depending on `dto`).

use crate::rdma::cq::{Wc, WcStatus};

/// DTO operations, as DTO and RMR bind completions report them (DAT's `DAT_DTO_OP`). The
/// discriminants are the C API's values (`enum rkdapl_dto_op`), which `crate::abi` checks.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtoOp {
    /// SEND.
    Send = 1,
    /// RECV.
    Recv = 2,
    /// RDMA WRITE.
    RdmaWrite = 3,
    /// RDMA READ.
    RdmaRead = 4,
    /// RMR bind.
    RmrBind = 5,
    /// RMR unbind.
    RmrUnbind = 6,
    /// RDMA WRITE with immediate data.
    RdmaWriteImm = 7,
    /// SEND with invalidate.
    SendInvalidate = 8,
    /// Atomic fetch and add.
    FetchAdd = 9,
    /// Atomic compare and swap.
    CmpSwap = 10,
    /// SEND with immediate data.
    SendImm = 11,
}

/// How a DTO or RMR operation completed (DAT's `DAT_DTO_COMPLETION_STATUS`). The discriminants
/// are the C API's values (`enum rkdapl_dto_status`), which `crate::abi` checks.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtoStatus {
    /// It did what it was asked.
    Success = 0,
    /// Not executed: the connection ended, or the EP was freed, first.
    Flushed = 1,
    /// A received message did not fit the RECV.
    LocalLength = 2,
    /// The local QP could not process the request.
    LocalEp = 3,
    /// Local memory failed its key or privileges.
    LocalProtection = 4,
    /// A malformed answer from the peer.
    BadResponse = 5,
    /// The peer refused the rkey, range or rights of its grant.
    RemoteAccess = 6,
    /// The peer failed the request (for example no RECV buffer fit).
    RemoteResponder = 7,
    /// The transport gave up (retries exhausted: the peer is gone).
    Transport = 8,
    /// The peer had no RECV posted and the RNR retries ran out.
    ReceiverNotReady = 9,
    /// An RMR bind or unbind failed.
    RmrOperationFailed = 10,
    /// Anything else.
    Generic = 11,
}

/// The peer's memory a grant names (`struct rkdapl_rmr_triplet`, DAT's `DAT_RMR_TRIPLET`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRegion {
    /// The address the peer's [`crate::api::Rmr::bind`] returned.
    pub address: u64,
    /// The rkey the peer's [`crate::api::Rmr::bind`] returned.
    pub rkey: u32,
    /// Bytes granted.
    pub length: u64,
}

impl RemoteRegion {
    /// The part of the region from `off` bytes on (for an RDMA WRITE or READ of a later part).
    /// Any context.
    #[inline]
    pub fn at(&self, off: u64) -> RemoteRegion {
        RemoteRegion {
            address: self.address.wrapping_add(off),
            rkey: self.rkey,
            length: self.length.saturating_sub(off),
        }
    }
}

/// What a send-queue DTO does, with its operands (the C API's `enum rkdapl_dto_op` of a post
/// call with its arguments). The remote range's `length` is not checked against the local
/// segments (the C ABI checks a non-zero one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// SEND into the peer's next RECV.
    Send,
    /// SEND into the peer's next RECV, whose completion also gets the immediate data (host
    /// order; IB SEND with immediate). One work request, as for [`Op::Send`]. Only where the
    /// IA's capabilities have [`crate::ia::Cap::RdmaWriteImm`] (immediate data): refused with
    /// `EOPNOTSUPP` on iWARP (siw).
    SendImm(u32),
    /// SEND that also ends the peer's grant with this rkey (IB SEND with invalidate): the
    /// peer's RECV reports it, and its RMR is unbound.
    SendInvalidate {
        /// The peer's rkey to invalidate.
        rkey: u32,
    },
    /// RDMA WRITE to the start of the remote region.
    RdmaWrite(RemoteRegion),
    /// RDMA WRITE to the start of the remote region that also consumes a RECV of the peer,
    /// which gets the immediate data (host order). Only where the IA's capabilities have
    /// [`crate::ia::Cap::RdmaWriteImm`]: refused with `EOPNOTSUPP` on iWARP (siw).
    RdmaWriteImm(RemoteRegion, u32),
    /// RDMA READ from the start of the remote region.
    RdmaRead(RemoteRegion),
    /// Atomic fetch and add (`rkdapl_post_fetch_add`): adds the value to the 8-byte word at the
    /// region's address (8-byte aligned, granted with [`crate::lmr::MemPriv::RemoteAtomic`]);
    /// the word's old value lands in the DTO's one 8-byte segment (an LMR with
    /// [`crate::lmr::MemPriv::LocalWrite`]). Only with [`crate::ia::Cap::Atomics`]
    /// (`EOPNOTSUPP` otherwise).
    FetchAdd(RemoteRegion, u64),
    /// Atomic compare and swap (`rkdapl_post_cmp_swap`): the word becomes `swap` (the second
    /// value) if it held `compare` (the first); its old value lands in the one 8-byte segment.
    CmpSwap(RemoteRegion, u64, u64),
}

impl Op {
    /// The operation its completion reports. Any context.
    #[inline]
    pub fn dto_op(&self) -> DtoOp {
        match self {
            Op::Send => DtoOp::Send,
            Op::SendImm(_) => DtoOp::SendImm,
            Op::SendInvalidate { .. } => DtoOp::SendInvalidate,
            Op::RdmaWrite(_) => DtoOp::RdmaWrite,
            Op::RdmaWriteImm(..) => DtoOp::RdmaWriteImm,
            Op::RdmaRead(_) => DtoOp::RdmaRead,
            Op::FetchAdd(..) => DtoOp::FetchAdd,
            Op::CmpSwap(..) => DtoOp::CmpSwap,
        }
    }

    /// The remote region of an RDMA operation or atomic; `None` for SENDs. Any context.
    #[inline]
    pub fn remote(&self) -> Option<&RemoteRegion> {
        match self {
            Op::Send | Op::SendImm(_) | Op::SendInvalidate { .. } => None,
            Op::RdmaWrite(r)
            | Op::RdmaWriteImm(r, _)
            | Op::RdmaRead(r)
            | Op::FetchAdd(r, _)
            | Op::CmpSwap(r, ..) => Some(r),
        }
    }
}

impl DtoOp {
    pub(crate) const ALL: [DtoOp; 11] = [
        DtoOp::Send,
        DtoOp::Recv,
        DtoOp::RdmaWrite,
        DtoOp::RdmaRead,
        DtoOp::RmrBind,
        DtoOp::RmrUnbind,
        DtoOp::RdmaWriteImm,
        DtoOp::SendInvalidate,
        DtoOp::FetchAdd,
        DtoOp::CmpSwap,
        DtoOp::SendImm,
    ];

    /// The name used in debugfs (and in `rkdapl_trace.h`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            DtoOp::Send => "send",
            DtoOp::Recv => "recv",
            DtoOp::RdmaWrite => "rdma_write",
            DtoOp::RdmaRead => "rdma_read",
            DtoOp::RmrBind => "rmr_bind",
            DtoOp::RmrUnbind => "rmr_unbind",
            DtoOp::RdmaWriteImm => "rdma_write_imm",
            DtoOp::SendInvalidate => "send_inv",
            DtoOp::FetchAdd => "fetch_add",
            DtoOp::CmpSwap => "cmp_swap",
            DtoOp::SendImm => "send_imm",
        }
    }

    pub(crate) fn idx(self) -> usize {
        self as usize - 1
    }
}
impl DtoStatus {
    pub(crate) fn from_wc(wc: &Wc) -> DtoStatus {
        use DtoStatus::*;
        match wc.status() {
            WcStatus::Success => Success,
            WcStatus::WrFlushErr => Flushed,
            WcStatus::LocLenErr => LocalLength,
            WcStatus::LocQpOpErr => LocalEp,
            WcStatus::LocProtErr => LocalProtection,
            WcStatus::BadRespErr => BadResponse,
            WcStatus::RemAccessErr => RemoteAccess,
            WcStatus::RemOpErr | WcStatus::RemInvReqErr => RemoteResponder,
            WcStatus::RetryExcErr => Transport,
            WcStatus::RnrRetryExcErr => ReceiverNotReady,
            WcStatus::MwBindErr => RmrOperationFailed,
            _ => Generic,
        }
    }
}
