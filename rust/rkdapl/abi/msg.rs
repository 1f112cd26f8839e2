// SPDX-License-Identifier: GPL-2.0

//! The names of the C API's values, for messages: `rkdapl_status_msg`, `rkdapl_event_msg`
//! and `rkdapl_op_msg` (as ib_core's `ib_wc_status_msg` and `rdma_event_msg`). Each name is
//! the enumerator of `include/rkdapl.h` without its prefix (`RKDAPL_DTO_`,
//! `RKDAPL_CONNECTION_EVENT_`, `RKDAPL_ASYNC_`; the first three event types without `RKDAPL_`
//! and `_EVENT`), so that a message can be searched for in the header; a value the header does not define gets a string that says so. rkdapl's own log
//! line for a failed DTO (`rkdapl_trace.c`) uses them too.

use kernel::{
    ffi::{c_char, c_int},
    prelude::*,
};

/// The name of a DTO completion status (`enum rkdapl_dto_status`).
fn status_name(status: c_int) -> &'static CStr {
    match status {
        0 => c"SUCCESS",
        1 => c"FLUSHED",
        2 => c"LOCAL_LENGTH_ERROR",
        3 => c"LOCAL_EP_ERROR",
        4 => c"LOCAL_PROTECTION_ERROR",
        5 => c"BAD_RESPONSE",
        6 => c"REMOTE_ACCESS_ERROR",
        7 => c"REMOTE_RESPONDER_ERROR",
        8 => c"TRANSPORT_ERROR",
        9 => c"RECEIVER_NOT_READY",
        10 => c"RMR_OPERATION_FAILED",
        11 => c"GENERIC_ERROR",
        _ => c"UNKNOWN_DTO_STATUS",
    }
}

/// The name of an event type (`enum rkdapl_event_type`).
fn event_name(event: u32) -> &'static CStr {
    match event {
        1 => c"DTO_COMPLETION",
        2 => c"RMR_BIND_COMPLETION",
        3 => c"CONNECTION_REQUEST",
        4 => c"ESTABLISHED",
        5 => c"PEER_REJECTED",
        6 => c"NON_PEER_REJECTED",
        7 => c"UNREACHABLE",
        8 => c"TIMED_OUT",
        9 => c"DISCONNECTED",
        10 => c"BROKEN",
        11 => c"EVD_OVERFLOW",
        12 => c"IA_CATASTROPHIC",
        13 => c"SRQ_LIMIT_REACHED",
        14 => c"SRQ_ERROR",
        20 => c"PORT_ACTIVE",
        21 => c"PORT_ERROR",
        22 => c"GID_CHANGE",
        23 => c"LID_CHANGE",
        24 => c"CLIENT_REREGISTER",
        25 => c"PKEY_CHANGE",
        26 => c"SM_CHANGE",
        27 => c"EP_BROKEN",
        28 => c"CQ_ERROR",
        _ => c"UNKNOWN_EVENT",
    }
}

/// The name of a DTO operation (`enum rkdapl_dto_op`).
fn op_name(op: u32) -> &'static CStr {
    match op {
        1 => c"SEND",
        2 => c"RECV",
        3 => c"RDMA_WRITE",
        4 => c"RDMA_READ",
        5 => c"RMR_BIND",
        6 => c"RMR_UNBIND",
        7 => c"RDMA_WRITE_IMM",
        8 => c"SEND_INVALIDATE",
        9 => c"FETCH_ADD",
        10 => c"CMP_SWAP",
        11 => c"SEND_IMM",
        _ => c"UNKNOWN_DTO_OP",
    }
}

/// See `rkdapl_status_msg` in `include/rkdapl.h`. Any context.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_status_msg(status: c_int) -> *const c_char {
    status_name(status).as_char_ptr()
}

/// See `rkdapl_event_msg` in `include/rkdapl.h`. Any context.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_event_msg(event: u32) -> *const c_char {
    event_name(event).as_char_ptr()
}

/// See `rkdapl_op_msg` in `include/rkdapl.h`. Any context.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_op_msg(op: u32) -> *const c_char {
    op_name(op).as_char_ptr()
}

#[kunit_tests(rkdapl_msg)]
mod tests {
    use super::*;
    use crate::{
        dto_op::{DtoOp, DtoStatus},
        evd::EventType,
    };

    /// The string behind a pointer the functions return.
    fn s(p: *const c_char) -> &'static [u8] {
        // SAFETY: The functions return pointers to static NUL-terminated strings.
        unsafe { CStr::from_char_ptr(p) }.to_bytes()
    }

    #[test]
    fn every_dto_status_has_its_header_name() {
        let want: [(DtoStatus, &[u8]); 12] = [
            (DtoStatus::Success, b"SUCCESS"),
            (DtoStatus::Flushed, b"FLUSHED"),
            (DtoStatus::LocalLength, b"LOCAL_LENGTH_ERROR"),
            (DtoStatus::LocalEp, b"LOCAL_EP_ERROR"),
            (DtoStatus::LocalProtection, b"LOCAL_PROTECTION_ERROR"),
            (DtoStatus::BadResponse, b"BAD_RESPONSE"),
            (DtoStatus::RemoteAccess, b"REMOTE_ACCESS_ERROR"),
            (DtoStatus::RemoteResponder, b"REMOTE_RESPONDER_ERROR"),
            (DtoStatus::Transport, b"TRANSPORT_ERROR"),
            (DtoStatus::ReceiverNotReady, b"RECEIVER_NOT_READY"),
            (DtoStatus::RmrOperationFailed, b"RMR_OPERATION_FAILED"),
            (DtoStatus::Generic, b"GENERIC_ERROR"),
        ];
        for (st, name) in want {
            assert_eq!(s(rkdapl_status_msg(st as c_int)), name);
        }
        for bad in [-1, 12, 100, c_int::MIN, c_int::MAX] {
            assert_eq!(s(rkdapl_status_msg(bad)), b"UNKNOWN_DTO_STATUS");
        }
    }

    #[test]
    fn every_event_type_has_its_header_name() {
        let want: [(EventType, &[u8]); 23] = [
            (EventType::DtoCompletion, b"DTO_COMPLETION"),
            (EventType::RmrBindCompletion, b"RMR_BIND_COMPLETION"),
            (EventType::ConnectionRequest, b"CONNECTION_REQUEST"),
            (EventType::Established, b"ESTABLISHED"),
            (EventType::PeerRejected, b"PEER_REJECTED"),
            (EventType::NonPeerRejected, b"NON_PEER_REJECTED"),
            (EventType::Unreachable, b"UNREACHABLE"),
            (EventType::TimedOut, b"TIMED_OUT"),
            (EventType::Disconnected, b"DISCONNECTED"),
            (EventType::Broken, b"BROKEN"),
            (EventType::AsyncEvdOverflow, b"EVD_OVERFLOW"),
            (EventType::AsyncIaCatastrophic, b"IA_CATASTROPHIC"),
            (EventType::AsyncSrqLimitReached, b"SRQ_LIMIT_REACHED"),
            (EventType::AsyncSrqError, b"SRQ_ERROR"),
            (EventType::AsyncPortActive, b"PORT_ACTIVE"),
            (EventType::AsyncPortError, b"PORT_ERROR"),
            (EventType::AsyncGidChange, b"GID_CHANGE"),
            (EventType::AsyncLidChange, b"LID_CHANGE"),
            (EventType::AsyncClientReregister, b"CLIENT_REREGISTER"),
            (EventType::AsyncPkeyChange, b"PKEY_CHANGE"),
            (EventType::AsyncSmChange, b"SM_CHANGE"),
            (EventType::AsyncEpBroken, b"EP_BROKEN"),
            (EventType::AsyncCqError, b"CQ_ERROR"),
        ];
        for (ev, name) in want {
            assert_eq!(s(rkdapl_event_msg(ev as u32)), name);
        }
        // Every value that is no event type (0, the gap 15..19, past the last) says so.
        for bad in [0, 15, 19, 29, u32::MAX] {
            assert_eq!(s(rkdapl_event_msg(bad)), b"UNKNOWN_EVENT");
        }
    }

    #[test]
    fn every_dto_op_has_its_header_name() {
        let want: [&[u8]; 11] = [
            b"SEND",
            b"RECV",
            b"RDMA_WRITE",
            b"RDMA_READ",
            b"RMR_BIND",
            b"RMR_UNBIND",
            b"RDMA_WRITE_IMM",
            b"SEND_INVALIDATE",
            b"FETCH_ADD",
            b"CMP_SWAP",
            b"SEND_IMM",
        ];
        for (op, name) in DtoOp::ALL.into_iter().zip(want) {
            assert_eq!(s(rkdapl_op_msg(op as u32)), name);
        }
        for bad in [0, 12, u32::MAX] {
            assert_eq!(s(rkdapl_op_msg(bad)), b"UNKNOWN_DTO_OP");
        }
    }
}
