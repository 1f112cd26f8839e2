// SPDX-License-Identifier: GPL-2.0

//! What a DTO does and how it completed: the words DTO completions, their events and the Rust
//! API share (a leaf of the provider, so that `evd` may use it without depending on `dto`).

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

impl DtoOp {
    pub(crate) const ALL: [DtoOp; 10] = [
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
