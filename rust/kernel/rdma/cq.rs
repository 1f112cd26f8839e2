// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`) polled by ib_core, and their completions.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! implementation in [`drivers/infiniband/core/cq.c`](srctree/drivers/infiniband/core/cq.c).
//!
//! ib_core arms the CQ, polls it in the chosen [`PollContext`] and calls the `done` function
//! of the [`Cqe`] each work request carried (`wc->wr_cqe`). Consumers embed a [`Cqe`] at the
//! start of a `#[repr(C)]` per-request context and implement [`CqeDone`] for it.

use super::device::Device;
use crate::{bindings, error::from_err_ptr, prelude::*, types::Opaque};
use core::ptr::NonNull;

/// Where ib_core runs completion callbacks (`enum ib_poll_context`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollContext {
    /// The consumer polls with [`Cq::process_direct`]; no callbacks run by themselves.
    Direct,
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
            PollContext::Direct => bindings::ib_poll_context_IB_POLL_DIRECT,
            PollContext::Softirq => bindings::ib_poll_context_IB_POLL_SOFTIRQ,
            PollContext::Workqueue => bindings::ib_poll_context_IB_POLL_WORKQUEUE,
            PollContext::UnboundWorkqueue => bindings::ib_poll_context_IB_POLL_UNBOUND_WORKQUEUE,
        }
    }
}

/// A completion queue allocated with `ib_alloc_cq`.
///
/// # Invariants
///
/// `ptr` was returned by `__ib_alloc_cq` and is freed only in `drop`.
pub struct Cq {
    ptr: NonNull<bindings::ib_cq>,
}

// SAFETY: CQ verbs may be called from any thread; ib_core serializes polling itself.
unsafe impl Send for Cq {}
// SAFETY: `&Cq` only reads immutable fields or calls thread-safe verbs.
unsafe impl Sync for Cq {}

impl Cq {
    /// Allocates a CQ of `nr_cqe` entries on completion vector `comp_vector` of `dev`.
    /// `caller` names the owner in `rdma res show cq`.
    ///
    /// May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a size the device refuses, `-ENOMEM`, or the driver's error.
    pub fn new(
        dev: &Device,
        nr_cqe: u32,
        comp_vector: u32,
        ctx: PollContext,
        caller: &'static CStr,
    ) -> Result<Cq> {
        let nr = i32::try_from(nr_cqe).map_err(|_| EINVAL)?;
        let vec = i32::try_from(comp_vector).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is registered; a NULL private pointer is allowed; `caller` is static.
        let ptr = from_err_ptr(unsafe {
            bindings::__ib_alloc_cq(
                dev.as_raw(),
                core::ptr::null_mut(),
                nr,
                vec,
                ctx.to_c(),
                caller.as_char_ptr(),
            )
        })?;
        Ok(Cq {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ptr.as_ptr()
    }

    /// Entries the CQ actually has (at least what was asked for).
    pub fn cqe(&self) -> u32 {
        // SAFETY: Set at allocation; `ptr` is valid (type invariant).
        unsafe { (*self.as_raw()).cqe.max(0) as u32 }
    }

    /// Polls up to `budget` completions and runs their callbacks in the caller's context.
    /// Only for [`PollContext::Direct`] CQs. Returns the number processed.
    pub fn process_direct(&self, budget: u32) -> u32 {
        let budget = i32::try_from(budget).unwrap_or(i32::MAX);
        // SAFETY: `ptr` is valid (type invariant); ib_core checks the poll context.
        unsafe { bindings::ib_process_cq_direct(self.as_raw(), budget).max(0) as u32 }
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: `ptr` is a live CQ owned by `self`. ib_free_cq waits for running callbacks.
        unsafe { bindings::ib_free_cq(self.as_raw()) };
    }
}

/// Completion status of a work request (`enum ib_wc_status`, IB spec 11.4.2.1).
pub type WcStatus = bindings::ib_wc_status;

/// A work completion (`struct ib_wc`), as handed to a [`CqeDone`] callback.
#[repr(transparent)]
pub struct Wc(bindings::ib_wc);

impl Wc {
    /// `IB_WC_SUCCESS` (0) or the error status.
    pub fn status(&self) -> WcStatus {
        self.0.status
    }

    /// Whether the work request completed successfully.
    pub fn is_ok(&self) -> bool {
        self.0.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// Human-readable status, from `ib_wc_status_msg`.
    pub fn status_msg(&self) -> &'static CStr {
        // SAFETY: `ib_wc_status_msg` returns a pointer to a static string for any value.
        unsafe { CStr::from_char_ptr(bindings::ib_wc_status_msg(self.0.status)) }
    }

    /// The completed operation (`enum ib_wc_opcode`); only meaningful on success.
    pub fn opcode(&self) -> bindings::ib_wc_opcode {
        self.0.opcode
    }

    /// Bytes received, for RECV completions.
    pub fn byte_len(&self) -> u32 {
        self.0.byte_len
    }

    /// Vendor error code, for diagnostics.
    pub fn vendor_err(&self) -> u32 {
        self.0.vendor_err
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
///
/// # Invariants
///
/// `done` is the trampoline for the [`CqeDone`] type this `Cqe` is embedded in.
#[repr(transparent)]
pub struct Cqe(Opaque<bindings::ib_cqe>);

// SAFETY: The C struct is only a function pointer.
unsafe impl Send for Cqe {}
// SAFETY: The C struct is only read by ib_core.
unsafe impl Sync for Cqe {}

impl Cqe {
    /// A `Cqe` that calls `T::done` when the work request carrying it completes.
    /// Place it as the first field of a `#[repr(C)]` `T`.
    pub fn new<T: CqeDone>() -> Cqe {
        Cqe(Opaque::new(bindings::ib_cqe {
            done: Some(Self::trampoline::<T>),
        }))
    }

    /// The raw pointer a work request stores in `wr_cqe`.
    pub fn as_raw(&self) -> *mut bindings::ib_cqe {
        self.0.get()
    }

    unsafe extern "C" fn trampoline<T: CqeDone>(
        _cq: *mut bindings::ib_cq,
        wc: *mut bindings::ib_wc,
    ) {
        // SAFETY: ib_core passes a valid completion; `Wc` is transparent over `ib_wc`.
        let wc = unsafe { &*wc.cast::<Wc>() };
        // SAFETY: `wr_cqe` is the `Cqe` the request was posted with; by the contract of
        // `CqeDone` it is the first field of a `T` that outlives this completion.
        let this = unsafe { &*wc.0.__bindgen_anon_1.wr_cqe.cast::<T>() };
        T::done(this, wc);
    }
}

/// A per-request context whose [`Cqe`] receives the completion.
///
/// # Safety
///
/// Implementors are `#[repr(C)]` with a [`Cqe`] created by [`Cqe::new::<Self>`] as their first
/// field, and every object whose `Cqe` is posted outlives the delivery of that completion
/// (including flushed completions after an error or a drain).
pub unsafe trait CqeDone: Sized {
    /// Called once per completed work request, in the CQ's [`PollContext`].
    fn done(this: &Self, wc: &Wc);
}
