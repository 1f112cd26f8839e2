// SPDX-License-Identifier: GPL-2.0

//! Rust side of rkdapl's trace events (`rkdapl_trace.h`) and of its rate-limited log line.
//!
//! The events are defined in C; `rkdapl_trace.c` instantiates them with
//! `CREATE_RUST_TRACE_POINTS`, which also emits a `rust_do_trace_<event>()` function per
//! event. Like `kernel::tracepoint::declare_trace!` (which only reaches tracepoints declared in
//! the kernel crate's bindings), each wrapper here tests the tracepoint's static key first, so
//! a disabled event costs one load and branch, no call.

use crate::{
    bindings,
    dto_op::{DtoOp, DtoStatus},
    rdma::cq::Wc,
};
use kernel::{
    ffi::{c_char, c_int, c_void},
    prelude::*,
};

// `struct tracepoint` ends in an empty array bindgen cannot express; only the static key at its
// start is read here.
#[allow(improper_ctypes)]
extern "C" {
    static __tracepoint_rkdapl_post: bindings::tracepoint;
    static __tracepoint_rkdapl_completion: bindings::tracepoint;
    static __tracepoint_rkdapl_cm_event: bindings::tracepoint;
    fn rust_do_trace_rkdapl_post(
        ep: u32,
        qpn: u32,
        op: u32,
        cookie: u64,
        len: u64,
        nwr: u32,
        ret: c_int,
    );
    fn rust_do_trace_rkdapl_completion(
        ep: u32,
        qpn: u32,
        op: u32,
        cookie: u64,
        status: c_int,
        len: u64,
    );
    fn rust_do_trace_rkdapl_cm_event(ep: u32, qpn: u32, event: *const c_char, status: c_int);
    fn rkdapl_log_dto_error(wc: *const c_void, ep: u32, op: u32, cookie: u64, status: c_int);
}

macro_rules! enabled {
    ($tp:ident) => {
        // SAFETY: The tracepoint is a static defined in rkdapl_trace.c (this module); reading
        // its static key is always allowed.
        unsafe { kernel::jump_label::static_branch_unlikely!($tp, bindings::tracepoint, key) }
    };
}

/// Trace event `rkdapl:rkdapl_post`: a DTO was posted (`ret` 0) or refused (`ret` < 0) on
/// EP `ep`, whose QP's number `qpn` gives (called only while the event is enabled). Any
/// context.
#[inline]
pub(crate) fn post(
    ep: u32,
    qpn: impl FnOnce() -> u32,
    op: u32,
    cookie: u64,
    len: u64,
    nwr: u32,
    ret: i32,
) {
    if enabled!(__tracepoint_rkdapl_post) {
        // SAFETY: Plain values; the C function only records them.
        unsafe { rust_do_trace_rkdapl_post(ep, qpn(), op, cookie, len, nwr, ret) }
    }
}

/// Trace event `rkdapl:rkdapl_completion`: a DTO of EP `ep` completed with `status` (`enum
/// rkdapl_dto_status`); `qpn` as for [`post`]. Any context.
#[inline]
pub(crate) fn completion(
    ep: u32,
    qpn: impl FnOnce() -> u32,
    op: u32,
    cookie: u64,
    status: i32,
    len: u64,
) {
    if enabled!(__tracepoint_rkdapl_completion) {
        // SAFETY: Plain values; the C function only records them.
        unsafe { rust_do_trace_rkdapl_completion(ep, qpn(), op, cookie, status, len) }
    }
}

/// Trace event `rkdapl:rkdapl_cm_event`: the rdma_cm event named `event` reached EP `ep` (0: a
/// PSP or CR), whose QP has the number `qpn` (0: none). Process context.
#[inline]
pub(crate) fn cm_event(ep: u32, qpn: u32, event: &CStr, status: i32) {
    if enabled!(__tracepoint_rkdapl_cm_event) {
        // SAFETY: `event` is NUL-terminated and outlives the call, which copies it.
        unsafe { rust_do_trace_rkdapl_cm_event(ep, qpn, event.as_char_ptr(), status) }
    }
}

/// Logs a DTO that completed in error (`pr_warn_ratelimited`): "rkdapl: <device> ep<N> qpn <QP
/// number>: <op> cookie 0x.. failed: <status> (<ib_core's name of the completion's status>)",
/// with the names of `rkdapl_op_msg` and `rkdapl_status_msg`. Any context.
pub(crate) fn log_dto_error(wc: &Wc, ep: u32, op: DtoOp, cookie: u64, status: DtoStatus) {
    // SAFETY: `wc` is a completion ib_core delivered, whose QP (and the QP's device) is live
    // while its completions are delivered; the C function only reads them, and formats the
    // plain values.
    unsafe {
        rkdapl_log_dto_error(
            core::ptr::from_ref(wc).cast(),
            ep,
            op as u32,
            cookie,
            status as c_int,
        )
    }
}
