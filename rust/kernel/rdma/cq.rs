// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`) polled by ib_core, and their completions.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! implementation in [`drivers/infiniband/core/cq.c`](srctree/drivers/infiniband/core/cq.c).
//!
//! ib_core arms the CQ, polls it in the chosen [`PollContext`] and calls the `done` function
//! of the [`Cqe`] each work request carried (`wc->wr_cqe`). The entries live in the contexts
//! of a [`super::wr::WrPool`], which hands each completion to its owner.

use super::bound::{Bound, BoundDevice, Rank, Release, Slot};
use crate::{bindings, error::from_err_ptr, prelude::*, str::CString, sync::Arc, types::Opaque};
use core::ptr::NonNull;

mod events;
pub use events::CqEventHandler;

/// Where ib_core runs completion callbacks (`enum ib_poll_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollContext {
    /// In softirq context (irq_poll): lowest latency, callbacks must not sleep.
    Softirq,
    /// In process context on the `ib_comp_wq` workqueue: callbacks may take mutexes but should
    /// not block for long.
    Workqueue,
    /// In process context on the unbound `ib_comp_unbound_wq` workqueue.
    UnboundWorkqueue,
}

impl PollContext {
    fn to_c(self) -> bindings::ib_poll_context {
        match self {
            PollContext::Softirq => bindings::ib_poll_context_IB_POLL_SOFTIRQ,
            PollContext::Workqueue => bindings::ib_poll_context_IB_POLL_WORKQUEUE,
            PollContext::UnboundWorkqueue => bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE,
        }
    }
}

/// A completion queue allocated with `ib_alloc_cq`.
///
/// The CQ is freed when the `Cq` is dropped, or, if the device goes first, when the device's
/// client registration revokes it ([`super::bound`]).
///
/// # Invariants
///
/// `ptr` was returned by `__ib_alloc_cq` and is the CQ `slot` holds, live while the slot has
/// not been revoked; `work` is the address of its completion work.
pub struct Cq {
    ptr: NonNull<bindings::ib_cq>,
    ctx: PollContext,
    work: *const bindings::work_struct,
    slot: Arc<Slot<CqRes>>,
}

/// The CQ as its device's binding tracks it.
///
/// # Invariants
///
/// `ptr` is a live CQ whose restrack entry names `name`, which is freed only after the CQ.
struct CqRes {
    ptr: NonNull<bindings::ib_cq>,
    /// The owner's name ib_core keeps a pointer to; dropped after the CQ is freed.
    _name: CString,
    /// The CQ's asynchronous events ([`Cq::with_events`]); flushed after the CQ is freed.
    events: Option<Arc<events::CqEvents>>,
}

// SAFETY: CQ verbs may be called from any thread.
unsafe impl Send for CqRes {}

impl Release for CqRes {
    const RANK: Rank = Rank::Cq;

    fn release(self) {
        // SAFETY: `ptr` is a live CQ (type invariant) that no QP uses any more (QPs are
        // released before CQs, by their owners or by revocation). ib_free_cq waits for
        // running callbacks.
        unsafe { bindings::ib_free_cq(self.ptr.as_ptr()) };
        // The CQ is gone: no event is recorded any more; a queued run of the handler ends here.
        if let Some(e) = self.events.as_ref() {
            e.flush();
        }
        // `name` goes after this, once ib_core has forgotten it.
    }
}

/// A CQ's release, moved out of its completion work to the deferral workqueue.
struct DeferredCq(Arc<Slot<CqRes>>);

impl Drop for DeferredCq {
    fn drop(&mut self) {
        Slot::release_now(&self.0);
    }
}

// SAFETY: CQ verbs may be called from any thread; ib_core serializes polling itself.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` only reads immutable fields or calls thread-safe verbs.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `nr_cqe` entries on completion vector `comp_vector` of `dev`.
    /// `caller` names the owner in `rdma res show cq`; the CQ keeps a copy of it, since
    /// ib_core keeps the pointer.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a size the device refuses, `-ENOMEM`, or the driver's error.
    pub fn new(
        dev: &Bound<'_>,
        nr_cqe: u32,
        comp_vector: u32,
        ctx: PollContext,
        caller: &CStr,
    ) -> Result<Cq> {
        Self::alloc(dev, nr_cqe, comp_vector, ctx, caller, None)
    }

    /// A CQ as [`Cq::new`] makes it, whose asynchronous events (`IB_EVENT_CQ_ERR`) go to
    /// `handler`, in process context (see [`CqEventHandler`]).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Cq::new`].
    pub fn with_events(
        dev: &Bound<'_>,
        nr_cqe: u32,
        comp_vector: u32,
        ctx: PollContext,
        caller: &CStr,
        handler: Arc<dyn CqEventHandler>,
    ) -> Result<Cq> {
        Self::alloc(dev, nr_cqe, comp_vector, ctx, caller, Some(handler))
    }

    fn alloc(
        dev: &Bound<'_>,
        nr_cqe: u32,
        comp_vector: u32,
        ctx: PollContext,
        caller: &CStr,
        handler: Option<Arc<dyn CqEventHandler>>,
    ) -> Result<Cq> {
        let events = handler.map(events::CqEvents::new).transpose()?;
        let private = events
            .as_ref()
            .map_or(core::ptr::null_mut(), events::CqEvents::context);
        let nr = i32::try_from(nr_cqe).map_err(|_| EINVAL)?;
        let vec = i32::try_from(comp_vector).map_err(|_| EINVAL)?;
        let name = CString::try_from(caller)?;
        // SAFETY: `dev` is registered; the private pointer (the CQ's `cq_context`, which
        // ib_core's polling does not use) is NULL or the events' `Arc`, kept in the `Cq`; `name`
        // is a NUL-terminated string whose bytes do not move (its own allocation) and live until
        // after the CQ is freed (type invariant).
        let ptr = from_err_ptr(unsafe {
            bindings::__ib_alloc_cq(
                dev.as_raw(),
                private,
                nr,
                vec,
                ctx.to_c(),
                name.as_char_ptr(),
            )
        })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?.as_ptr();
        if events.is_some() {
            // SAFETY: `ptr` is the CQ just allocated, not yet used by any QP, so the driver
            // cannot report an event while the field is set; it reads it with `cq_context`,
            // the events' address, until the CQ is freed.
            unsafe { (*ptr).event_handler = Some(events::CqEvents::callback) };
        }
        // SAFETY: `ptr` is live; only the address of its work (the member of the poll-context
        // union that workqueue polling uses) is taken.
        let work =
            unsafe { (&raw const (*ptr).__bindgen_anon_1.work).cast::<bindings::work_struct>() };
        let nn = NonNull::new(ptr).ok_or(ENOMEM)?;
        // INVARIANT: The CQ's restrack entry names `name`, which the tracked `CqRes` owns.
        let slot = BoundDevice::track(
            dev.binding(),
            CqRes {
                ptr: nn,
                _name: name,
                events,
            },
        )?;
        Ok(Cq {
            ptr: nn,
            ctx,
            work,
            slot,
        })
    }

    /// The raw pointer, for calls into C. Valid while the CQ's device is bound (see
    /// [`Cq::binding`]).
    pub fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// The binding of the CQ's device.
    pub fn binding(&self) -> &Arc<BoundDevice> {
        self.slot.bound()
    }

    /// Whether the caller runs in the CQ's completion work ([`PollContext::Workqueue`] and
    /// [`PollContext::UnboundWorkqueue`]): inside a `done` callback of one of its completions.
    /// There, freeing the CQ or draining a QP that uses it would wait for the caller itself.
    /// Any context.
    pub fn in_completion_work(&self) -> bool {
        if !matches!(
            self.ctx,
            PollContext::Workqueue | PollContext::UnboundWorkqueue
        ) {
            return false;
        }
        super::defer::in_work(self.work)
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        if self.in_completion_work() {
            // `ib_free_cq` would cancel the work this runs in and wait for it: the CQ is
            // released on the layer's deferral workqueue instead (`defer.rs`). A removal of the
            // device meanwhile revokes it there or finds it released.
            super::defer::release_later(DeferredCq(self.slot.clone()), None);
            return;
        }
        // Frees the CQ unless its device's removal did.
        Slot::release_now(&self.slot);
    }
}

/// Completion status of a work request (`enum ib_wc_status`, IB spec 11.4.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum WcStatus {
    /// The work request completed successfully.
    Success = bindings::ib_wc_status_IB_WC_SUCCESS,
    /// Local length error: a RECV buffer too small, or an SGE too long.
    LocLenErr = bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
    /// Local QP operation error.
    LocQpOpErr = bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
    /// Local EE context operation error.
    LocEecOpErr = bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
    /// Local protection error: an SGE the lkey does not cover.
    LocProtErr = bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
    /// Flushed: the QP went to the error state before it ran.
    WrFlushErr = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
    /// Memory window bind error.
    MwBindErr = bindings::ib_wc_status_IB_WC_MW_BIND_ERR,
    /// Bad response from the responder.
    BadRespErr = bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
    /// Local access error.
    LocAccessErr = bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
    /// Remote invalid request.
    RemInvReqErr = bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
    /// Remote access error: the rkey or range was refused.
    RemAccessErr = bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
    /// Remote operation error.
    RemOpErr = bindings::ib_wc_status_IB_WC_REM_OP_ERR,
    /// Transport retry counter exceeded.
    RetryExcErr = bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
    /// Receiver-not-ready retry counter exceeded.
    RnrRetryExcErr = bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
    /// Local RDD violation.
    LocRddViolErr = bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
    /// Remote invalid RD request.
    RemInvRdReqErr = bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
    /// Remote aborted.
    RemAbortErr = bindings::ib_wc_status_IB_WC_REM_ABORT_ERR,
    /// Invalid EE context number.
    InvEecnErr = bindings::ib_wc_status_IB_WC_INV_EECN_ERR,
    /// Invalid EE context state.
    InvEecStateErr = bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
    /// Fatal error.
    FatalErr = bindings::ib_wc_status_IB_WC_FATAL_ERR,
    /// Response timeout.
    RespTimeoutErr = bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
    /// Other error.
    GeneralErr = bindings::ib_wc_status_IB_WC_GENERAL_ERR,
}

impl WcStatus {
    fn from_c(v: bindings::ib_wc_status) -> WcStatus {
        match v {
            bindings::ib_wc_status_IB_WC_SUCCESS => WcStatus::Success,
            bindings::ib_wc_status_IB_WC_LOC_LEN_ERR => WcStatus::LocLenErr,
            bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR => WcStatus::LocQpOpErr,
            bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR => WcStatus::LocEecOpErr,
            bindings::ib_wc_status_IB_WC_LOC_PROT_ERR => WcStatus::LocProtErr,
            bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR => WcStatus::WrFlushErr,
            bindings::ib_wc_status_IB_WC_MW_BIND_ERR => WcStatus::MwBindErr,
            bindings::ib_wc_status_IB_WC_BAD_RESP_ERR => WcStatus::BadRespErr,
            bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR => WcStatus::LocAccessErr,
            bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR => WcStatus::RemInvReqErr,
            bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR => WcStatus::RemAccessErr,
            bindings::ib_wc_status_IB_WC_REM_OP_ERR => WcStatus::RemOpErr,
            bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR => WcStatus::RetryExcErr,
            bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR => WcStatus::RnrRetryExcErr,
            bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR => WcStatus::LocRddViolErr,
            bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR => WcStatus::RemInvRdReqErr,
            bindings::ib_wc_status_IB_WC_REM_ABORT_ERR => WcStatus::RemAbortErr,
            bindings::ib_wc_status_IB_WC_INV_EECN_ERR => WcStatus::InvEecnErr,
            bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR => WcStatus::InvEecStateErr,
            bindings::ib_wc_status_IB_WC_FATAL_ERR => WcStatus::FatalErr,
            bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR => WcStatus::RespTimeoutErr,
            _ => WcStatus::GeneralErr,
        }
    }
}

/// The operation a successful work completion reports (`enum ib_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    /// A SEND completed.
    Send,
    /// An RDMA WRITE completed.
    RdmaWrite,
    /// An RDMA READ completed.
    RdmaRead,
    /// A LOCAL_INV completed.
    LocalInv,
    /// A REG_MR completed.
    RegMr,
    /// A RECV consumed by a SEND.
    Recv,
    /// A RECV consumed by an RDMA WRITE with immediate.
    RecvRdmaWithImm,
    /// Any other operation (atomics, memory windows, ...).
    Other,
}

/// A work completion (`struct ib_wc`), as handed to [`super::wr::WrCompletion::done`].
#[repr(transparent)]
pub struct Wc(bindings::ib_wc);

impl Wc {
    /// Borrows the completion ib_core passed to a `done` callback.
    ///
    /// # Safety
    ///
    /// `wc` points to a valid `ib_wc` for `'a`.
    pub(crate) unsafe fn from_raw<'a>(wc: *const bindings::ib_wc) -> &'a Wc {
        // SAFETY: `Wc` is transparent over `ib_wc`; validity is the caller's guarantee.
        unsafe { &*wc.cast::<Wc>() }
    }

    /// The completion's status.
    pub fn status(&self) -> WcStatus {
        WcStatus::from_c(self.0.status)
    }

    /// Whether the work request completed successfully.
    pub fn is_ok(&self) -> bool {
        self.0.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// The raw `enum ib_wc_status` value, for log lines.
    pub fn status_raw(&self) -> u32 {
        self.0.status
    }

    /// Human-readable status, from `ib_wc_status_msg`.
    pub fn status_msg(&self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg` returns a pointer to a static string for any value.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self.0.status)) }
    }

    /// The completed operation; only meaningful on success.
    pub fn opcode(&self) -> WcOpcode {
        match self.0.opcode {
            bindings::ib_wc_opcode_IB_WC_SEND => WcOpcode::Send,
            bindings::ib_wc_opcode_IB_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
            bindings::ib_wc_opcode_IB_WC_RDMA_READ => WcOpcode::RdmaRead,
            bindings::ib_wc_opcode_IB_WC_LOCAL_INV => WcOpcode::LocalInv,
            bindings::ib_wc_opcode_IB_WC_REG_MR => WcOpcode::RegMr,
            bindings::ib_wc_opcode_IB_WC_RECV => WcOpcode::Recv,
            bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
            _ => WcOpcode::Other,
        }
    }

    /// The number of the QP the work request was posted to (for a RECV of an SRQ: the QP that
    /// consumed it).
    pub fn qp_num(&self) -> u32 {
        // SAFETY: ib_core sets `qp` in every completion it delivers; the QP is live while its
        // completions are delivered (it is drained before it is destroyed).
        unsafe { (*self.0.qp).qp_num }
    }

    /// Bytes received, for RECV completions.
    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }

    /// The immediate data of a RECV completed by a SEND or RDMA WRITE with immediate, if any.
    pub fn imm_data(&self) -> Option<u32> {
        if self.0.wc_flags & bindings::ib_wc_flags_IB_WC_WITH_IMM as i32 != 0 {
            // SAFETY: `IB_WC_WITH_IMM` says the union holds `imm_data`.
            Some(u32::from_be(unsafe { self.0.ex.imm_data }))
        } else {
            None
        }
    }

    /// The rkey the peer invalidated with SEND_WITH_INVALIDATE, if any.
    pub fn invalidated_rkey(&self) -> Option<u32> {
        if self.0.wc_flags & bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as i32 != 0 {
            // SAFETY: `IB_WC_WITH_INVALIDATE` says the union holds `invalidate_rkey`.
            Some(unsafe { self.0.ex.invalidate_rkey })
        } else {
            None
        }
    }
}

/// A completion entry (`struct ib_cqe`): what a work request points at instead of a `wr_id`.
/// The layer's [`super::wr::WrPool`] owns them.
#[repr(transparent)]
pub struct Cqe(Opaque<bindings::ib_cqe>);

// SAFETY: The C struct is only a function pointer.
unsafe impl Send for Cqe {}
// SAFETY: The C struct is only read by ib_core.
unsafe impl Sync for Cqe {}

impl Cqe {
    /// A `Cqe` whose `done` is `f` (for [`super::wr::WrPool`], which embeds it in its
    /// contexts).
    pub(crate) fn from_fn(
        f: unsafe extern "C" fn(*mut bindings::ib_cq, *mut bindings::ib_wc),
    ) -> Cqe {
        Cqe(Opaque::new(bindings::ib_cqe { done: Some(f) }))
    }

    /// The raw pointer a work request stores in `wr_cqe`.
    pub fn as_raw(&self) -> *mut bindings::ib_cqe {
        self.0.get()
    }
}
