// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`struct ib_qp`, IB spec 10.2.4) and the work requests posted to them.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A QP is created and destroyed through its CM id ([`super::cm::CmIdRef::create_qp`]), which
//! keeps it attached to the connection. Posting is `unsafe`: ib_core copies the work request
//! when it is posted, but the device reads the memory under its SGEs and calls the [`Cqe`]'s
//! `done` function later, and Rust cannot see how long those must live.

use super::{
    cq::{Cq, Cqe},
    mr::FrMr,
    Access,
};
use crate::{bindings, error::to_result, prelude::*, types::Opaque};

/// Capacities asked for when a QP is created (`struct ib_qp_cap`), all in entries.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpCap {
    /// Outstanding SEND-queue work requests.
    pub max_send_wr: u32,
    /// Outstanding RECV-queue work requests.
    pub max_recv_wr: u32,
    /// SGEs per SEND-queue work request.
    pub max_send_sge: u32,
    /// SGEs per RECV work request.
    pub max_recv_sge: u32,
    /// Bytes of inline data per SEND-queue work request (posted with [`SendFlags::INLINE`]:
    /// the CPU copies them at post time, the SGE addresses are kernel virtual addresses).
    pub max_inline_data: u32,
    /// RDMA READ/WRITE contexts for `rdma_rw` (0 if unused).
    pub max_rdma_ctxs: u32,
}

/// What a QP is created with (`struct ib_qp_init_attr` for an RC QP).
pub struct QpInit<'a> {
    /// The CQ that receives SEND-queue completions.
    pub send_cq: &'a Cq,
    /// The CQ that receives RECV-queue completions.
    pub recv_cq: &'a Cq,
    /// Queue sizes.
    pub cap: QpCap,
}

impl QpCap {
    pub(crate) fn from_c(c: &bindings::ib_qp_cap) -> QpCap {
        QpCap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
            max_rdma_ctxs: c.max_rdma_ctxs,
        }
    }
}

impl QpInit<'_> {
    pub(crate) fn to_c(&self) -> bindings::ib_qp_init_attr {
        let mut a = bindings::ib_qp_init_attr::default();
        a.send_cq = self.send_cq.as_raw();
        a.recv_cq = self.recv_cq.as_raw();
        a.cap.max_send_wr = self.cap.max_send_wr;
        a.cap.max_recv_wr = self.cap.max_recv_wr;
        a.cap.max_send_sge = self.cap.max_send_sge;
        a.cap.max_recv_sge = self.cap.max_recv_sge;
        a.cap.max_inline_data = self.cap.max_inline_data;
        a.cap.max_rdma_ctxs = self.cap.max_rdma_ctxs;
        a.sq_sig_type = bindings::ib_sig_type_IB_SIGNAL_REQ_WR;
        a.qp_type = bindings::ib_qp_type_IB_QPT_RC;
        a
    }
}

/// Flags of a SEND-queue work request (`enum ib_send_flags`).
///
/// # Examples
///
/// ```
/// use kernel::rdma::qp::SendFlags;
///
/// let f = SendFlags::SIGNALED | SendFlags::FENCE;
/// assert!(f.contains(SendFlags::SIGNALED));
/// assert!(!f.contains(SendFlags::INLINE));
/// assert!(SendFlags::empty().contains(SendFlags::empty()));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendFlags(u32);

impl SendFlags {
    /// Generate a completion on success (errors always complete).
    pub const SIGNALED: SendFlags = SendFlags(bindings::ib_send_flags_IB_SEND_SIGNALED as u32);
    /// Wait for earlier RDMA READs to complete before starting (IB spec 10.8.3.3).
    pub const FENCE: SendFlags = SendFlags(bindings::ib_send_flags_IB_SEND_FENCE as u32);
    /// Ask the peer for a solicited event on the matching RECV.
    pub const SOLICITED: SendFlags = SendFlags(bindings::ib_send_flags_IB_SEND_SOLICITED as u32);
    /// Copy the payload into the work request (small SENDs; no lkey needed).
    pub const INLINE: SendFlags = SendFlags(bindings::ib_send_flags_IB_SEND_INLINE as u32);

    /// No flags.
    pub const fn empty() -> Self {
        SendFlags(0)
    }

    /// Whether all of `other` is set.
    pub const fn contains(self, other: SendFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for SendFlags {
    type Output = SendFlags;
    fn bitor(self, rhs: SendFlags) -> SendFlags {
        SendFlags(self.0 | rhs.0)
    }
}

/// The operation of a SEND-queue work request (`enum ib_wr_opcode`).
#[derive(Clone, Copy, Debug)]
pub enum SendOp {
    /// SEND: consumes a RECV at the peer.
    Send,
    /// SEND with immediate data delivered in the peer's RECV completion.
    SendImm {
        /// The immediate value (host order).
        imm: u32,
    },
    /// SEND that also invalidates `rkey` at the peer (IB spec 10.6.5).
    SendInv {
        /// The peer's rkey to invalidate.
        rkey: u32,
    },
    /// RDMA WRITE to `[remote_addr, remote_addr + len)` under `rkey`.
    Write {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
    /// RDMA WRITE with immediate: also consumes a RECV at the peer.
    WriteImm {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
        /// The immediate value (host order).
        imm: u32,
    },
    /// RDMA READ from `[remote_addr, remote_addr + len)` under `rkey`.
    Read {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
}

/// A SEND-queue work request for SEND, RDMA WRITE or RDMA READ (`struct ib_rdma_wr`).
///
/// It refers to its SGE array by pointer: the array must outlive the `post_send` call.
#[repr(transparent)]
pub struct SendWr(bindings::ib_rdma_wr);

impl SendWr {
    /// Builds a work request completing to `cqe`.
    pub fn new(op: SendOp, cqe: &Cqe, sges: &[bindings::ib_sge], flags: SendFlags) -> SendWr {
        let mut w = bindings::ib_rdma_wr::default();
        w.wr.__bindgen_anon_1.wr_cqe = cqe.as_raw();
        w.wr.sg_list = sges.as_ptr().cast_mut();
        w.wr.num_sge = sges.len() as i32;
        w.wr.send_flags = flags.0 as i32;
        w.wr.opcode = match op {
            SendOp::Send => bindings::ib_wr_opcode_IB_WR_SEND,
            SendOp::SendImm { imm } => {
                w.wr.ex.imm_data = imm.to_be();
                bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM
            }
            SendOp::SendInv { rkey } => {
                w.wr.ex.invalidate_rkey = rkey;
                bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV
            }
            SendOp::Write { remote_addr, rkey } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
            }
            SendOp::WriteImm {
                remote_addr,
                rkey,
                imm,
            } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.wr.ex.imm_data = imm.to_be();
                bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
            }
            SendOp::Read { remote_addr, rkey } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                bindings::ib_wr_opcode_IB_WR_RDMA_READ
            }
        };
        SendWr(w)
    }
}

/// A queue pair, borrowed from the CM id that owns it.
///
/// # Invariants
///
/// The `ib_qp` is live for as long as the `&Qp` exists.
#[repr(transparent)]
pub struct Qp(Opaque<bindings::ib_qp>);

// SAFETY: Posting and draining are thread-safe verbs.
unsafe impl Send for Qp {}
// SAFETY: See the `Send` impl.
unsafe impl Sync for Qp {}

impl Qp {
    /// Borrows a `Qp` from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live QP that is not destroyed during `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ib_qp) -> &'a Qp {
        // SAFETY: `Qp` is transparent over `ib_qp`; the caller guarantees liveness.
        unsafe { &*ptr.cast::<Qp>() }
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_qp {
        self.0.get()
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: Set at creation; the QP is live (type invariant).
        unsafe { (*self.as_raw()).qp_num }
    }

    /// Posts `wrs` to the SEND queue as one chain, in order. May be called from any context.
    ///
    /// # Errors
    ///
    /// The error and how many requests, from the start of `wrs`, were posted before it:
    /// `-ENOMEM` if the SEND queue is full, `-EINVAL` for a request the QP cannot take (too
    /// many SGEs, wrong state), or the driver's error.
    ///
    /// # Safety
    ///
    /// Every SGE of a request without [`SendFlags::INLINE`] names memory mapped for this QP's
    /// device under a valid key and that stays mapped until the request's completion; every
    /// SGE of an inline request names kernel virtual memory readable for its length during
    /// this call (the driver copies it here). Every request's `Cqe` stays valid until its
    /// completion (success, error or
    /// flush) has been delivered.
    pub unsafe fn post_send(&self, wrs: &mut [SendWr]) -> core::result::Result<(), (Error, usize)> {
        let n = wrs.len();
        if n == 0 {
            return Ok(());
        }
        for i in 0..n - 1 {
            let next: *mut bindings::ib_send_wr = &mut wrs[i + 1].0.wr;
            wrs[i].0.wr.next = next;
        }
        wrs[n - 1].0.wr.next = core::ptr::null_mut();
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: The chain is well formed; the caller upholds the lifetime rules above.
        let r = unsafe { bindings::ib_post_send(self.as_raw(), &wrs[0].0.wr, &mut bad) };
        if r == 0 {
            return Ok(());
        }
        let posted = wrs
            .iter()
            .position(|w| core::ptr::eq(&w.0.wr, bad))
            .unwrap_or(0);
        Err((Error::from_errno(r), posted))
    }

    /// Posts one RECV whose buffer is `sges`. May be called from any context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` if the RECV queue is full, `-EINVAL`, or the driver's error.
    ///
    /// # Safety
    ///
    /// As for [`Qp::post_send`]: the SGEs' memory is mapped with local write access and stays
    /// so, and `cqe` stays valid, until the completion has been delivered.
    pub unsafe fn post_recv(&self, cqe: &Cqe, sges: &[bindings::ib_sge]) -> Result {
        let mut wr = bindings::ib_recv_wr::default();
        wr.__bindgen_anon_1.wr_cqe = cqe.as_raw();
        wr.sg_list = sges.as_ptr().cast_mut();
        wr.num_sge = sges.len() as i32;
        // SAFETY: `wr` is well formed; the caller upholds the lifetime rules.
        to_result(unsafe { bindings::ib_post_recv(self.as_raw(), &wr, core::ptr::null_mut()) })
    }

    /// Posts `IB_WR_REG_MR` for `mr` (as last mapped by [`FrMr::map`]) with `access`, making
    /// its rkey valid for a peer once it completes. May be called from any context.
    ///
    /// # Errors
    ///
    /// As for [`Qp::post_send`].
    ///
    /// # Safety
    ///
    /// `mr` and `cqe` stay valid until the completion has been delivered, and the memory mapped
    /// into `mr` stays mapped until the registration is invalidated.
    pub unsafe fn post_reg_mr(
        &self,
        cqe: &Cqe,
        mr: &FrMr,
        access: Access,
        flags: SendFlags,
    ) -> Result {
        let mut wr = bindings::ib_reg_wr::default();
        wr.wr.__bindgen_anon_1.wr_cqe = cqe.as_raw();
        wr.wr.opcode = bindings::ib_wr_opcode_IB_WR_REG_MR;
        wr.wr.send_flags = flags.0 as i32;
        wr.mr = mr.as_raw();
        wr.key = mr.rkey();
        wr.access = FrMr::reg_access(access).bits();
        // SAFETY: `wr` is well formed; the caller upholds the lifetime rules.
        to_result(unsafe { bindings::ib_post_send(self.as_raw(), &wr.wr, core::ptr::null_mut()) })
    }

    /// Posts `IB_WR_LOCAL_INV` for `rkey`, revoking that registration. May be called from any
    /// context.
    ///
    /// # Errors
    ///
    /// As for [`Qp::post_send`].
    ///
    /// # Safety
    ///
    /// `cqe` stays valid until the completion has been delivered.
    pub unsafe fn post_local_inv(&self, cqe: &Cqe, rkey: u32, flags: SendFlags) -> Result {
        let mut wr = bindings::ib_send_wr::default();
        wr.__bindgen_anon_1.wr_cqe = cqe.as_raw();
        wr.opcode = bindings::ib_wr_opcode_IB_WR_LOCAL_INV;
        wr.send_flags = flags.0 as i32;
        wr.ex.invalidate_rkey = rkey;
        // SAFETY: `wr` is well formed; the caller upholds the lifetime rules.
        to_result(unsafe { bindings::ib_post_send(self.as_raw(), &wr, core::ptr::null_mut()) })
    }

    /// Moves the QP to the error state and waits until every posted work request has
    /// completed (flushed ones included), with `ib_drain_qp`. Process context; sleeps.
    /// The QP's CQs must not use [`super::cq::PollContext::Direct`].
    pub fn drain(&self) {
        // SAFETY: The QP is live (type invariant).
        unsafe { bindings::ib_drain_qp(self.as_raw()) };
    }
}
