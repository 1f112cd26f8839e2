// SPDX-License-Identifier: GPL-2.0

//! An RDMA READ into a fast-registered sink, as iWARP wants it.
//!
//! C source: [`drivers/infiniband/core/rw.c`](srctree/drivers/infiniband/core/rw.c)
//! (`rdma_rw_io_needs_mr()`, `rdma_rw_init_mr_wrs()`).
//!
//! On iWARP the responder of an RDMA READ sends the data back as tagged writes into the
//! sink, which the READ request names by its STag: the sink must be registered for remote
//! write, and a READ names one sink SGE only (`max_sge_rd`). `rw.c` therefore registers the
//! sink through FRWR (`IB_WR_REG_MR`, local and remote write) in front of the READ, and lets
//! the READ invalidate it when it completes (`IB_WR_RDMA_READ_WITH_INV`), so that the
//! registration lives exactly as long as the READ.
//!
//! This is not a wrapper of `rdma_rw_ctx_init()` because that does not fit a sink that is
//! already mapped and a post that may run in any context: it DMA-maps the scatterlist it is
//! given on every call (and `rdma_rw_ctx_destroy()` unmaps it), where a [`DmaRegion`] is
//! mapped once for its lifetime and read by several READs at a time; on iWARP it allocates
//! its registration contexts with `GFP_KERNEL` (`rdma_rw_init_mr_wrs()`), so it may sleep;
//! and it takes MRs from the QP's pool (`cap.max_rdma_ctxs`), which `ib_destroy_qp()` frees
//! and expects back, of at most 256 pages.
//!
//! [`DmaRegion`]: super::super::mr::DmaRegion

use super::super::{
    mr::FrMr,
    qp::{Qp, SendFlags},
    AccessFlag,
};
use super::{Sge, WrCompletion, WrPool};
use crate::{bindings, prelude::*, sync::Arc};
use core::sync::atomic::Ordering;

impl<T: WrCompletion> WrPool<T> {
    /// Posts, as one chain on the send queue of `qp`, the `IB_WR_REG_MR` of `mr` (as last
    /// mapped by [`FrMr::map`] or [`FrMr::map_gfp`]) with local and remote write access,
    /// unsignalled, then an `IB_WR_RDMA_READ_WITH_INV` of `mr`'s length from `remote_addr`
    /// under `rkey` into the whole of `mr` ([`FrMr::sge`]), which invalidates `mr` when it
    /// completes; both of context `ctx`, the READ as its last work request, posted with
    /// `flags` (for example [`SendFlag::Signaled`], [`SendFlag::Fence`]). The context keeps
    /// the `ib_mr` until its last work request completes. Any context; allocates nothing.
    ///
    /// [`SendFlag::Signaled`]: super::super::qp::SendFlag::Signaled
    /// [`SendFlag::Fence`]: super::super::qp::SendFlag::Fence
    ///
    /// Where the transport wants it ([`super::super::device::Transport::Iwarp`]); the device
    /// must support `IB_WR_RDMA_READ_WITH_INV` (iWARP devices do).
    ///
    /// # Errors
    ///
    /// The error and how many of the two work requests were posted: `-EINVAL` (none) if the
    /// pool is not attached to `qp`, `ctx` is out of range or still holds the MR of an earlier
    /// registration (its last work request has not completed), `-ENOMEM` if the send queue is
    /// full, or the driver's error. With one posted (the REG_MR) the context keeps the MR
    /// until the pool is detached from its QP, and `mr` is registered (valid): it must be
    /// invalidated before it is mapped again.
    pub fn post_read_to_mr(
        &self,
        qp: &Qp,
        ctx: u32,
        mr: &FrMr,
        remote_addr: u64,
        rkey: u32,
        flags: SendFlags,
    ) -> core::result::Result<(), (Error, usize)> {
        self.check(qp).map_err(|e| (e, 0))?;
        let c = self.ctx(ctx).map_err(|e| (e, 0))?;
        let raw = Arc::into_raw(mr.shared().clone()).cast_mut();
        if c.mr
            .compare_exchange(
                core::ptr::null_mut(),
                raw,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `raw` came from `Arc::into_raw` just above and was not stored.
            drop(unsafe { Arc::from_raw(raw) });
            return Err((EINVAL, 0));
        }
        let sge = mr.sge();
        let mut read = bindings::ib_rdma_wr::default();
        read.wr.__bindgen_anon_1.wr_cqe = c.last.as_raw();
        read.wr.opcode = bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV;
        read.wr.send_flags = flags.bits() as i32;
        read.wr.sg_list = Sge::slice_as_raw(core::slice::from_ref(&sge));
        read.wr.num_sge = 1;
        read.wr.ex.invalidate_rkey = mr.lkey();
        read.remote_addr = remote_addr;
        read.rkey = rkey;
        let mut reg = bindings::ib_reg_wr::default();
        reg.wr.__bindgen_anon_1.wr_cqe = c.early.as_raw();
        reg.wr.opcode = bindings::ib_wr_opcode_IB_WR_REG_MR;
        reg.wr.next = &mut read.wr;
        reg.mr = mr.as_raw();
        reg.key = mr.rkey();
        reg.access = FrMr::reg_access(AccessFlag::LocalWrite | AccessFlag::RemoteWrite).bits();
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: The chain is well formed (REG_MR, then the READ, whose SGE array `sge` lives
        // across the call); both carry entries of this pool's context `ctx`, attached to `qp`,
        // which is drained before the pool is detached (type invariant); the context holds
        // the `ib_mr` until its last work request completes (or the pool goes).
        let r = unsafe { bindings::ib_post_send(qp.as_raw(), &reg.wr, &mut bad) };
        if r == 0 {
            return Ok(());
        }
        if core::ptr::eq(bad, &read.wr) {
            // The REG_MR went to the device: it may use the MR until the QP is drained.
            return Err((Error::from_errno(r), 1));
        }
        c.release_mr();
        Err((Error::from_errno(r), 0))
    }
}
