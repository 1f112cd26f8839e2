// SPDX-License-Identifier: GPL-2.0

//! iWARP's rules on an EP's send queue, decided once when the EP is made
//! ([`DtoRing::for_iwarp`]), as `drivers/infiniband/core/rw.c` follows them for the kernel's
//! own ULPs (`rdma_rw_io_needs_mr()`):
//!
//! - No RDMA WRITE with immediate (RDMAP has no immediate data): refused with `-EOPNOTSUPP`
//!   before anything is taken (`post.rs`).
//! - An RDMA READ's sink is written by the responder with tagged writes, so it must be
//!   registered for remote write, and a READ names one sink SGE (`max_sge_rd`, 1 with siw):
//!   a READ into one segment is posted as `IB_WR_REG_MR` of one of the EP's sink MRs over the
//!   segment (local and remote write), then `IB_WR_RDMA_READ_WITH_INV`, which ends the
//!   registration when it completes ([`WrPool::post_read_to_mr`]). The rxe path never comes
//!   here: the check is one flag of the ring.
//!
//! - An RDMA READ completes when its response has arrived (`siw_rdmap_complete()`,
//!   `drivers/infiniband/sw/siw/siw_qp_rx.c`), but siw completes an RDMA WRITE, a SEND or a
//!   REG_MR/LOCAL_INV posted behind it as soon as it is sent or processed
//!   (`siw_qp_sq_process()`, `siw_qp_tx.c`): the send queue's completions are not in the
//!   order of posting. The ring's rule that a completion finishes every DTO before it
//!   (`RingShared::finish_through`) would then finish the READ before its data landed and
//!   give its sink MR back still registered; the next READ's REG_MR of it fails ("siw:
//!   fastreg: STag ... already valid", `siw_fastreg_mr()`) and siw drops the connection. So
//!   on iWARP a READ is always signalled and finishes only with its own completion
//!   (`RingCore::late`); the DTOs behind it whose completions arrived first finish after
//!   it, in order. (Fencing the work requests behind a READ would keep siw's completions in
//!   order too, but siw does not serve the peer's READ requests while a fenced work request
//!   waits: two sides reading each other would stall.)
//!
//! The sink MRs ([`READ_MRS`] per EP, of [`READ_MR_PAGES`] pages) are allocated when the EP's
//! QP is created and freed when it is destroyed, in process context; the post path takes one
//! from the ring's pool and the READ's completion gives it back (after a failed READ the MR
//! may still be registered: it is not reused but freed outside the ring's lock).
//!
//! [`WrPool::post_read_to_mr`]: crate::rdma::wr::WrPool::post_read_to_mr

use super::{
    post::arm,
    ring::{RingCore, RingShared},
    Dto, DtoOp, DtoRing, Op,
};
use crate::rdma::{
    mr::FrMr,
    pd::Pd,
    qp::{Qp, SendFlag, SendFlags, SendOp, SendWr},
    wr::Sge,
};
use kernel::{
    prelude::*,
    sync::{rcu, Arc},
};

/// RDMA READs into a registered sink one iWARP EP may have outstanding (at most its
/// `max_request_dtos`); one more is refused with `-ENOSPC`.
pub(crate) const READ_MRS: u32 = 32;

/// Pages of one sink MR: a READ of 1 MiB at any offset into page-sized DMA segments (more
/// where the memory is physically contiguous and the device takes larger pages).
pub(crate) const READ_MR_PAGES: u32 = 257;

impl DtoRing {
    /// The send-queue ring of an EP whose device runs no atomics (siw): fetch-and-add and
    /// compare-and-swap are refused with `-EOPNOTSUPP`. Before the ring is used.
    pub(crate) fn without_atomics(mut self) -> DtoRing {
        self.no_atomics = true;
        self
    }

    /// The send-queue ring of an iWARP EP (see the module documentation); `read_mrs`: how many
    /// sink MRs to keep (0: READs name their sinks by the PZ's local key, the SGE path).
    /// Process context, before the ring is used.
    pub(crate) fn for_iwarp(mut self, read_mrs: u32) -> DtoRing {
        self.no_write_imm = true;
        self.read_mrs = read_mrs;
        // SAFETY: The ring is not used yet: no QP, so no completion.
        unsafe { self.set_late_reads(true) };
        self
    }

    /// Allocates the ring's sink MRs in `pd` (the PD of the EP's QP) with at most `max_pages`
    /// pages each, up to the count [`DtoRing::for_iwarp`] set; a no-op for other rings.
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` or the driver's error (the MRs made so far stay, for
    /// [`DtoRing::release_read_mrs`]).
    pub(crate) fn fill_read_mrs(&self, pd: &Arc<Pd>, max_pages: u32) -> Result {
        let want = self.read_mrs as usize;
        if want == 0 {
            return Ok(());
        }
        let mut mrs = KVec::with_capacity(want, GFP_KERNEL)?;
        let have = self.shared().q.lock().core.read_mrs.len();
        for _ in have..want {
            mrs.push(FrMr::new(pd, max_pages)?, GFP_KERNEL)?;
        }
        // Room for every MR up front: giving one back under the lock never allocates.
        let mut pool = KVec::with_capacity(want, GFP_KERNEL)?;
        let old = {
            let mut q = self.shared().q.lock();
            core::mem::swap(&mut pool, &mut q.core.read_mrs);
            let c = &mut q.core.read_mrs;
            for m in Iterator::chain(pool.drain_all(), mrs.drain_all()) {
                // Cannot fail: the capacity is `want`, the MRs at most that many (no QP yet,
                // so no post took one meanwhile).
                let _ = c.push_within_capacity(m);
            }
            pool
        };
        drop(old);
        Ok(())
    }

    /// Frees the ring's sink MRs once its QP is drained and destroyed (no work request uses
    /// them). Process context; may sleep.
    pub(crate) fn release_read_mrs(&self) {
        if self.read_mrs == 0 {
            return;
        }
        let pool = core::mem::take(&mut self.shared().q.lock().core.read_mrs);
        drop(pool);
    }

    /// iWARP: posts a chain holding an RDMA READ one DTO at a time, in order, stopping at the
    /// first that fails (the READs take the sink path, which posts work requests of its own).
    /// Any context.
    ///
    /// # Errors
    ///
    /// As [`DtoRing::post_chain`].
    pub(super) fn post_each(&self, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
        for (i, d) in dtos.iter().enumerate() {
            self.post_chain(core::slice::from_ref(d))
                .map_err(|(e, _)| (e, i))?;
        }
        Ok(())
    }

    /// iWARP: posts the RDMA READ `d` into a registered sink (see the module documentation),
    /// or with no bytes, into one empty SGE; `None` (nothing done) for a READ into several
    /// segments, which takes the SGE path (their SGEs name the PZ's local key, split into
    /// work requests of `max_sge_rd` SGEs: what siw accepts). Called under the ring's lock.
    pub(super) fn post_read_iwarp(
        &self,
        c: &mut RingCore,
        qp: &Qp,
        d: &Dto<'_>,
        g: &rcu::Guard,
    ) -> Option<core::result::Result<(), (Error, usize)>> {
        let seg = if d.segs.iter().all(|s| s.length == 0) {
            None
        } else if let [s] = d.segs {
            Some(s)
        } else {
            return None;
        };
        let fail = |c: &mut RingCore, e: Error| {
            let _ = self.account(c, DtoOp::RdmaRead, d.cookie, Err(e));
            Some(Err((e, 0)))
        };
        let Op::RdmaRead(r) = d.op else {
            return fail(c, EINVAL);
        };
        let (remote_addr, rkey) = (r.address, r.rkey);
        if d.flags.solicited {
            return fail(c, EINVAL);
        }
        let len = seg.map_or(0, |s| s.length);
        if let Some(s) = seg {
            if !s.lmr.privileges.contains(crate::lmr::MemPriv::LocalWrite) {
                return fail(c, EACCES);
            }
            if s.length > u64::from(u32::MAX) {
                return fail(c, EMSGSIZE);
            }
        }
        let nwr = if seg.is_some() { 2 } else { 1 };
        let idx = match c.take(nwr) {
            Ok(i) => i,
            Err(e) => return fail(c, e),
        };
        let armed = match c.slot(idx) {
            Some(s) => arm(s, DtoOp::RdmaRead, d.cookie, len, d.segs, d.flags.suppress),
            None => Err(EINVAL),
        };
        if let Err(e) = armed {
            c.untake_last();
            return fail(c, e);
        }
        // A READ finishes with its own completion (`RingCore::late`), and a sink MR comes back
        // with it: always signalled (silent on success if suppressed).
        let unsignalled = c.unsignalled(false, nwr);
        let mut flags = if unsignalled {
            SendFlags::empty()
        } else {
            SendFlags::from(SendFlag::Signaled)
        };
        if d.flags.fence {
            flags |= SendFlag::Fence;
        }
        let r = match seg {
            None => {
                let empty = Sge::empty();
                let mut wr = SendWr::new(
                    SendOp::Read { remote_addr, rkey },
                    idx,
                    true,
                    core::slice::from_ref(&empty),
                    flags,
                );
                self.pool.post_send(qp, core::slice::from_mut(&mut wr))
            }
            Some(s) => {
                let Some(mut mr) = c.read_mrs.pop() else {
                    c.untake_last();
                    return fail(c, ENOSPC);
                };
                let mapped = s
                    .lmr
                    .region
                    .try_access_with_guard(g)
                    .ok_or(ENODEV)
                    .and_then(|region| mr.map_gfp(region, s.offset, s.length, GFP_ATOMIC))
                    .map_err(|e| if e == E2BIG { EMSGSIZE } else { e });
                let e = match mapped {
                    Ok(()) => match c.slot(idx) {
                        Some(slot) => {
                            let mr = slot.read_mr.insert(mr);
                            let r =
                                self.pool
                                    .post_read_to_mr(qp, idx, mr, remote_addr, rkey, flags);
                            return Some(self.posted(c, d, idx, nwr, len, r));
                        }
                        None => EINVAL,
                    },
                    Err(e) => e,
                };
                // Not registered: back to the pool.
                let _ = c.read_mrs.push_within_capacity(mr);
                c.untake_last();
                return fail(c, e);
            }
        };
        Some(self.posted(c, d, idx, nwr, len, r))
    }

    /// The outcome `r` of posting the READ `d` of `nwr` work requests and `len` bytes in
    /// context `idx`: counted, and the context given back if nothing was posted.
    fn posted(
        &self,
        c: &mut RingCore,
        d: &Dto<'_>,
        idx: u32,
        nwr: u32,
        len: u64,
        r: core::result::Result<(), (Error, usize)>,
    ) -> core::result::Result<(), (Error, usize)> {
        match r {
            Ok(()) => {
                let _ = self.account(c, DtoOp::RdmaRead, d.cookie, Ok((len, nwr)));
                Ok(())
            }
            Err((e, 0)) => {
                c.untake_last();
                let _ = self.account(c, DtoOp::RdmaRead, d.cookie, Err(e));
                Err((e, 0))
            }
            Err((e, _)) => {
                // The REG_MR went out, the READ did not: the DTO finishes silently with a
                // later completion or the teardown, and its MR (registered) is not reused.
                if c.orphan(idx, 1).is_some() {
                    c.stats.posted(DtoOp::RdmaRead);
                }
                let _ = self.account(c, DtoOp::RdmaRead, d.cookie, Err(e));
                Err((e, 0))
            }
        }
    }
}

/// A sink MR of a finished DTO: back to the pool after a successful READ (which invalidated
/// it), or, registered or not, handed back to be freed outside the lock.
pub(super) fn give_back(c: &mut RingCore, mr: FrMr, ok: bool) -> Option<FrMr> {
    if !ok {
        return Some(mr);
    }
    // `DtoRing::fill_read_mrs` made room for every MR: this does not fail.
    c.read_mrs.push_within_capacity(mr).err().map(|e| e.0)
}

/// The ring's state must be `Send` with its MRs in it.
const _: fn() = || {
    fn send<T: Send>() {}
    send::<RingShared>();
};
