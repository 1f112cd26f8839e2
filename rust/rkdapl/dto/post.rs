// SPDX-License-Identifier: GPL-2.0

//! The post calls of a DTO ring: SGEs from LMR segments, work requests, `ib_post_send()`.
//!
//! Posting goes through the ring's context pool ([`crate::rdma::wr::WrPool`]), which the RDMA
//! layer keeps until the QP is drained. The SGEs borrow the LMRs' regions under one RCU read
//! section for the whole call (device removal unmaps a region only after an RCU grace period),
//! and each context holds its LMRs busy until it finishes, so the memory stays mapped while
//! the device uses it.

use super::KeepAlive;
use super::{
    ring::{RingCore, Slot},
    Completion, Dto, DtoOp, DtoRing, InlineVec, OneOrMore, Op, Segment, CHAIN_IN_PLACE,
    MAX_WR_PER_DTO,
};
use crate::rdma::{
    mr::FrMr,
    qp::{Qp, SendFlag, SendFlags, SendOp, SendWr},
    wr::Sge,
    Access,
};
use crate::{
    lmr::{Lmr, LmrUse},
    trace,
};
use kernel::{
    prelude::*,
    sync::{rcu, Arc},
};

mod chain;
mod lent;
mod pooled;
pub(crate) use pooled::PooledWr;

/// A DTO whose context is taken and armed, ready for its work requests.
struct Prepared<'a> {
    idx: u32,
    sges: OneOrMore<Sge<'a>>,
    nwr: u32,
    /// Bytes of the local segments.
    total: u64,
    signalled: bool,
    /// Posted with `IB_SEND_INLINE`: `sges` hold kernel virtual addresses.
    inline: bool,
    /// Inline, and its segments were synced for the CPU (`sync_inline_back` undoes it).
    synced: bool,
}

/// Fills slot `s` for a DTO: what its completion reports, and the LMRs it keeps busy: one
/// [`LmrUse`] per segment, one atomic operation on the LMR and no reference of its own.
///
/// # Errors
///
/// `-EINVAL` for an LMR freed meanwhile ([`LmrUse::new`]), `-ENOMEM` from the third segment
/// on.
#[inline]
pub(super) fn arm(
    s: &mut Slot,
    op: DtoOp,
    cookie: u64,
    len: u64,
    segs: &[Segment<'_>],
    suppress: bool,
) -> Result {
    s.op = op;
    s.cookie = cookie;
    s.len = len;
    s.suppress = suppress;
    for seg in segs {
        s.lmrs.push(LmrUse::new(seg.lmr)?, GFP_ATOMIC)?;
    }
    Ok(())
}

/// [`arm`] for a DTO over at most one segment `seg` (`DtoRing::post_simple`): no list, built in
/// place.
///
/// # Errors
///
/// `-EINVAL` for an LMR freed meanwhile ([`LmrUse::new`]).
#[inline(always)]
fn arm_one(
    s: &mut Slot,
    op: DtoOp,
    cookie: u64,
    seg: Option<&Segment<'_>>,
    suppress: bool,
) -> Result {
    s.op = op;
    s.cookie = cookie;
    s.len = seg.map_or(0, |x| x.length);
    s.suppress = suppress;
    if let Some(x) = seg {
        // A context taken holds no LMR (`RingCore::take`), so nothing is dropped here.
        s.lmrs = OneOrMore::One(LmrUse::new(x.lmr)?);
    }
    Ok(())
}

/// The SGEs of `segs`, borrowing the regions for the RCU read section `g`. Allocates only
/// for more than one SGE.
pub(super) fn sges<'a>(
    segs: &'a [Segment<'_>],
    need_write: bool,
    g: &'a rcu::Guard,
) -> Result<(OneOrMore<Sge<'a>>, u64)> {
    let segs = segs.iter().map(|s| (&**s.lmr, s.offset, s.length));
    sges_of(segs, need_write, g)
}

/// [`sges`] of segments given as an LMR, an offset and a length each.
pub(super) fn sges_of<'a>(
    segs: impl Iterator<Item = (&'a Lmr, u64, u64)>,
    need_write: bool,
    g: &'a rcu::Guard,
) -> Result<(OneOrMore<Sge<'a>>, u64)> {
    let mut sges = OneOrMore::Empty;
    let mut total = 0u64;
    for (lmr, offset, length) in segs {
        if need_write && !lmr.privileges.contains(crate::lmr::MemPriv::LocalWrite) {
            return Err(EACCES);
        }
        // The region stays mapped while the DTO runs: device removal unmaps it only after
        // draining every EP of the device.
        lmr.region
            .try_access_with_guard(g)
            .ok_or(ENODEV)?
            .for_each_sge(offset, length, lmr.lkey(), |sge| sges.push(sge, GFP_ATOMIC))?;
        total = total.checked_add(length).ok_or(EINVAL)?;
    }
    if total > u64::from(u32::MAX) {
        return Err(EMSGSIZE);
    }
    Ok((sges, total))
}

/// The SGEs of an inline DTO over `segs`, or `None` if it cannot go inline: inline data
/// (`IB_SEND_INLINE`) is copied by the CPU when the work request is posted, so an SGE names
/// the segment's kernel virtual address, which only virtually contiguous LMRs have
/// (`Lmr::cpu_addr`), and all of it must fit in the QP's `max_inline` bytes. With the SGEs:
/// their total and whether the segments were synced for the CPU. Checks the segments as
/// [`sges`] does.
fn inline_sges<'a>(
    segs: &'a [Segment<'_>],
    max_inline: u32,
    max_sge: usize,
    g: &'a rcu::Guard,
) -> Result<Option<(OneOrMore<Sge<'a>>, u64, bool)>> {
    let total = segs
        .iter()
        .map(|s| s.length)
        .fold(0u64, u64::saturating_add);
    if total == 0 || total > u64::from(max_inline) || segs.len() > max_sge {
        return Ok(None);
    }
    // Everything that can send the DTO the other way, or refuse it, before any sync.
    for s in segs {
        if s.lmr.cpu_addr.is_none() {
            return Ok(None);
        }
        if s.offset
            .checked_add(s.length)
            .is_none_or(|end| end > s.lmr.len)
        {
            return Err(ERANGE);
        }
    }
    let mut sges = OneOrMore::Empty;
    let mut synced = false;
    for (i, s) in segs.iter().enumerate() {
        // After a device removal the LMR's memory is no longer the device's to use. The CPU
        // reads the bytes now: make what the device wrote there (a RECV or READ being
        // forwarded) visible first, where the device needs it; `sync_inline_back` returns the
        // range afterwards (here, if the DTO fails on the way).
        let step = s
            .lmr
            .region
            .try_access_with_guard(g)
            .ok_or(ENODEV)
            .and_then(|region| {
                if region.needs_sync() {
                    region.sync_for_cpu(s.offset, s.length);
                    synced = true;
                }
                sges.push(
                    region.inline_sge(s.offset, s.length, s.lmr.lkey())?,
                    GFP_ATOMIC,
                )
            });
        if let Err(e) = step {
            if synced {
                sync_inline_back(segs.get(..=i).unwrap_or(segs));
            }
            return Err(e);
        }
    }
    Ok(Some((sges, total, synced)))
}

/// Hands the segments of an inline DTO back to the device once the driver has copied them
/// (`inline_sges` synced them for the CPU), as the DMA API wants before the device may use
/// them again. A no-op on DMA-coherent machines. Any context.
fn sync_inline_back(segs: &[Segment<'_>]) {
    for s in segs {
        if let Some(r) = s.lmr.region.try_access() {
            if r.needs_sync() {
                r.sync_for_device(s.offset, s.length);
            }
        }
    }
}

impl DtoRing {
    /// Counts and traces the outcome of a post call: `(bytes, work requests)` or its error.
    pub(super) fn account(
        &self,
        c: &mut RingCore,
        op: DtoOp,
        cookie: u64,
        r: Result<(u64, u32)>,
    ) -> Result {
        let (len, nwr, ret) = match r {
            Ok((len, nwr)) => {
                c.stats.posted(op);
                (len, nwr, 0)
            }
            Err(e) => {
                c.stats.refused += 1;
                (0, 0, e.to_errno())
            }
        };
        let s = self.shared();
        trace::post(s.ep_id, || s.qpn(), op as u32, cookie, len, nwr, ret);
        r.map(|_| ())
    }

    /// Takes a context for `d` and arms it: the first step of posting it. SENDs and RDMA
    /// WRITEs of at most `max_inline` bytes go inline where their LMRs allow it.
    fn prepare<'a>(
        &self,
        c: &mut RingCore,
        d: &Dto<'a>,
        max_inline: u32,
        g: &'a rcu::Guard,
    ) -> Result<Prepared<'a>> {
        let max_sge = (self.max_sge as usize).max(1);
        let op = d.op.dto_op();
        let one_wr = matches!(op, DtoOp::Send | DtoOp::SendImm | DtoOp::SendInvalidate);
        let atomic = matches!(op, DtoOp::FetchAdd | DtoOp::CmpSwap);
        if matches!(op, DtoOp::RdmaWriteImm | DtoOp::SendImm) && self.no_write_imm {
            return Err(EOPNOTSUPP);
        }
        if atomic {
            check_atomic(d, self.no_atomics)?;
        }
        // IB spec 9.2.3: the solicited-event bit exists on SENDs and RDMA WRITEs with immediate.
        if d.flags.solicited && !(one_wr || op == DtoOp::RdmaWriteImm) {
            return Err(EINVAL);
        }
        // The device writes the sink of an RDMA READ and of an atomic (the word's old value).
        let sink = op == DtoOp::RdmaRead || atomic;
        let inline = if sink {
            None
        } else {
            inline_sges(d.segs, max_inline, max_sge, g)?
        };
        let is_inline = inline.is_some();
        let (sges, total, synced) = match inline {
            Some(x) => x,
            None => {
                let (sges, total) = sges(d.segs, sink, g)?;
                (sges, total, false)
            }
        };
        let nwr = sges.as_slice().len().div_ceil(max_sge).max(1);
        let r = (|| {
            if nwr > MAX_WR_PER_DTO as usize || (one_wr && nwr > 1) {
                return Err(EMSGSIZE);
            }
            let nwr = nwr as u32;
            let idx = c.take(nwr)?;
            let armed = match c.slot(idx) {
                Some(s) => arm(s, op, d.cookie, total, d.segs, d.flags.suppress),
                None => Err(EINVAL),
            };
            if let Err(e) = armed {
                c.untake_last();
                return Err(e);
            }
            Ok((idx, nwr))
        })();
        let (idx, nwr) = match r {
            Ok(x) => x,
            Err(e) => {
                if synced {
                    sync_inline_back(d.segs);
                }
                return Err(e);
            }
        };
        let unsignalled = c.unsignalled(d.flags.suppress && !c.late(op), nwr);
        Ok(Prepared {
            idx,
            sges,
            nwr,
            total,
            signalled: !unsignalled,
            inline: is_inline,
            synced,
        })
    }

    /// Work request `i` of the `p.nwr` of the prepared DTO `p` (described by `d`), over
    /// `chunk` of its SGEs at `at` bytes into the remote range. Only the last is signalled
    /// (if the DTO is) and carries the immediate data and the solicited bit, only the first
    /// the fence; all but the last complete only in error. Inlined: built in place, the work
    /// request is not copied (`make profile`: 71 instructions per DTO as a call).
    #[inline(always)]
    fn wr<'a>(
        d: &Dto<'_>,
        p: &Prepared<'a>,
        i: usize,
        chunk: &'a [Sge<'a>],
        at: u64,
    ) -> SendWr<'a> {
        let last = i + 1 == p.nwr as usize;
        let mut flags = if p.signalled && last {
            SendFlags::from(SendFlag::Signaled)
        } else {
            SendFlags::empty()
        };
        if i == 0 && d.flags.fence {
            flags |= SendFlag::Fence;
        }
        if p.inline {
            flags |= SendFlag::Inline;
        }
        if last && d.flags.solicited {
            flags |= SendFlag::Solicited;
        }
        let addr = |r: &super::RemoteRegion| r.address.wrapping_add(at);
        let op = match d.op {
            Op::RdmaWriteImm(ref r, imm) if last => SendOp::WriteImm {
                remote_addr: addr(r),
                rkey: r.rkey,
                imm,
            },
            Op::RdmaWrite(ref r) | Op::RdmaWriteImm(ref r, _) => SendOp::Write {
                remote_addr: addr(r),
                rkey: r.rkey,
            },
            Op::RdmaRead(ref r) => SendOp::Read {
                remote_addr: addr(r),
                rkey: r.rkey,
            },
            Op::FetchAdd(ref r, add) => SendOp::FetchAdd {
                remote_addr: addr(r),
                rkey: r.rkey,
                add,
            },
            Op::CmpSwap(ref r, compare, swap) => SendOp::CmpSwap {
                remote_addr: addr(r),
                rkey: r.rkey,
                compare,
                swap,
            },
            Op::SendInvalidate { rkey } => SendOp::SendInv { rkey },
            Op::Send => SendOp::Send,
            Op::SendImm(imm) => SendOp::SendImm { imm },
        };
        SendWr::new(op, p.idx, last, chunk, flags)
    }

    /// Appends the work requests of the prepared DTO `p` (described by `d`) to `wrs`. Large
    /// RDMA DTOs are split into work requests of `max_sge` SGEs, each at its offset of the
    /// remote range.
    fn push_wrs<'a>(
        &self,
        d: &Dto<'_>,
        p: &'a Prepared<'a>,
        wrs: &mut InlineVec<SendWr<'a>, CHAIN_IN_PLACE>,
    ) -> Result {
        let max_sge = (self.max_sge as usize).max(1);
        let sges = p.sges.as_slice();
        let mut at = 0u64;
        for i in 0..p.nwr as usize {
            let chunk = sges
                .get(i * max_sge..sges.len().min((i + 1) * max_sge))
                .unwrap_or(&[]);
            wrs.push(Self::wr(d, p, i, chunk, at), GFP_ATOMIC)?;
            at += chunk.iter().map(|s| u64::from(s.length())).sum::<u64>();
        }
        Ok(())
    }

    /// Posts one DTO of one work request: the common case, without the lists a chain
    /// needs (each of which moves its items: under `make bench` that showed as a third of
    /// the post call). `None` if `d` is not such a DTO (its context is then taken and armed
    /// in `p`, for the chain path).
    fn post_single(
        &self,
        c: &mut RingCore,
        qp: &Qp,
        d: &Dto<'_>,
        p: &Prepared<'_>,
    ) -> Option<core::result::Result<(), (Error, usize)>> {
        if p.nwr != 1 {
            return None;
        }
        let mut wr = Self::wr(d, p, 0, p.sges.as_slice(), 0);
        let r = self
            .pool
            .post_send(qp, core::slice::from_mut(&mut wr))
            .map_err(|(e, _)| e);
        if p.synced {
            sync_inline_back(d.segs);
        }
        Some(match r {
            Ok(()) => {
                let _ = self.account(c, d.op.dto_op(), d.cookie, Ok((p.total, 1)));
                Ok(())
            }
            Err(e) => {
                c.untake_last();
                let _ = self.account(c, d.op.dto_op(), d.cookie, Err(e));
                Err((e, 0))
            }
        })
    }

    /// Posts `d` if it is the common case: one DTO over at most one segment whose SGEs fit one
    /// work request. Checks, takes and arms its context, builds the work request and posts it
    /// without the lists and moves a chain needs (`make bench`: those were most of the post
    /// call's own instructions). `None` (nothing done) if `d` is not such a DTO.
    fn post_simple(
        &self,
        c: &mut RingCore,
        qp: &Qp,
        max_inline: u32,
        d: &Dto<'_>,
        g: &rcu::Guard,
    ) -> Option<core::result::Result<(), (Error, usize)>> {
        let op = d.op.dto_op();
        let seg = match d.segs {
            // Atomics take the general path (`prepare`).
            _ if matches!(op, DtoOp::FetchAdd | DtoOp::CmpSwap) => return None,
            [] => None,
            // Longer than an SGE holds: `prepare` refuses it.
            [s] if s.length <= u64::from(u32::MAX) => Some(s),
            _ => return None,
        };
        let one_wr = matches!(op, DtoOp::Send | DtoOp::SendImm | DtoOp::SendInvalidate);
        let fail = |c: &mut RingCore, e: Error| {
            let _ = self.account(c, op, d.cookie, Err(e));
            Some(Err((e, 0)))
        };
        if matches!(op, DtoOp::RdmaWriteImm | DtoOp::SendImm) && self.no_write_imm {
            return fail(c, EOPNOTSUPP);
        }
        // IB spec 9.2.3: the solicited-event bit exists on SENDs and RDMA WRITEs with immediate.
        if d.flags.solicited && !(one_wr || op == DtoOp::RdmaWriteImm) {
            return fail(c, EINVAL);
        }
        let mut sge = None;
        let mut inline = false;
        let mut synced = false;
        if let Some(s) = seg {
            // Checked by the post call (`Segment::check`): same PZ, inside the LMR.
            let region = match s.lmr.region.try_access_with_guard(g) {
                Some(r) => r,
                None => return fail(c, ENODEV),
            };
            if op == DtoOp::RdmaRead {
                if !s.lmr.privileges.contains(crate::lmr::MemPriv::LocalWrite) {
                    return fail(c, EACCES);
                }
            } else if s.length != 0 && s.length <= u64::from(max_inline) && s.lmr.cpu_addr.is_some()
            {
                // See `inline_sges`.
                match region.inline_sge(s.offset, s.length, s.lmr.lkey()) {
                    Ok(x) => {
                        if region.needs_sync() {
                            region.sync_for_cpu(s.offset, s.length);
                            synced = true;
                        }
                        sge = Some(x);
                        inline = true;
                    }
                    Err(e) => return fail(c, e),
                }
            }
            if !inline {
                let mut n = 0;
                let r = region.for_each_sge(s.offset, s.length, s.lmr.lkey(), |x| {
                    n += 1;
                    if n == 1 {
                        sge = Some(x);
                    }
                    Ok(())
                });
                match r {
                    Ok(_) if n > 1 => return None,
                    Ok(_) => {}
                    Err(e) => return fail(c, e),
                }
            }
        }
        let idx = match c.take(1) {
            Ok(i) => i,
            Err(e) => {
                if synced {
                    sync_inline_back(d.segs);
                }
                return fail(c, e);
            }
        };
        let armed = match c.slot(idx) {
            Some(s) => arm_one(s, op, d.cookie, seg, d.flags.suppress),
            None => Err(EINVAL),
        };
        if let Err(e) = armed {
            c.untake_last();
            if synced {
                sync_inline_back(d.segs);
            }
            return fail(c, e);
        }
        let unsignalled = c.unsignalled(d.flags.suppress && !c.late(op), 1);
        let sges = sge.as_slice();
        let p = Prepared {
            idx,
            sges: OneOrMore::Empty,
            nwr: 1,
            total: seg.map_or(0, |s| s.length),
            signalled: !unsignalled,
            inline,
            synced,
        };
        let mut wr = Self::wr(d, &p, 0, sges, 0);
        let r = self.pool.post_send(qp, core::slice::from_mut(&mut wr));
        if synced {
            sync_inline_back(d.segs);
        }
        Some(match r {
            Ok(()) => {
                let _ = self.account(c, op, d.cookie, Ok((p.total, 1)));
                Ok(())
            }
            Err((e, _)) => {
                c.untake_last();
                let _ = self.account(c, op, d.cookie, Err(e));
                Err((e, 0))
            }
        })
    }

    /// Posts a RECV into `segs`: to the QP, or, while the EP is UNCONNECTED or connecting
    /// and its QP does not exist yet, into the ring until it does (`super::early`). Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-ENOTCONN` from the disconnect on, `-EACCES` for an LMR without local write,
    /// `-EMSGSIZE` for more SGEs than a work request holds, `-ENOSPC` if too many RECVs are
    /// outstanding, `-ENOMEM`, or the driver's error.
    pub(crate) fn post_recv(&self, segs: &[Segment<'_>], cookie: u64) -> Result {
        let mut guard = self.shared().q.lock();
        let st = &mut *guard;
        let g = rcu::read_lock();
        let qp = match st.target.qp(&g) {
            Some(qp) if st.early.unposted == 0 => qp,
            _ => {
                // No QP to post to (yet): the RECV waits for it, if allowed.
                if !st.early.allowed {
                    return Err(ENOTCONN);
                }
                let r = self.defer_recv(st, segs, cookie, &g);
                return self.account(&mut st.core, DtoOp::Recv, cookie, r);
            }
        };
        let c = &mut st.core;
        let r = (|| {
            let (sges, total) = sges(segs, true, &g)?;
            let sges = sges.as_slice();
            if sges.len() > self.max_sge as usize {
                return Err(EMSGSIZE);
            }
            let idx = c.take(1)?;
            let armed = match c.slot(idx) {
                Some(s) => arm(s, DtoOp::Recv, cookie, total, segs, false),
                None => Err(EINVAL),
            };
            // The context holds the LMRs busy until it finishes.
            let r = armed.and_then(|()| self.pool.post_recv(qp, idx, sges));
            if r.is_err() {
                c.untake_last();
            }
            r.map(|()| (total, 1))
        })();
        self.account(c, DtoOp::Recv, cookie, r)
    }

    /// Posts the REG_MR that makes the current mapping of `mr` (owned by `rmr`, kept alive
    /// until the work request completes) of `lmr` valid for `access`, or the
    /// LOCAL_INV of its rkey if `access` is `None`; allowed as soon as the EP has a QP. Its
    /// completion is reported as `done` says. Any context.
    ///
    /// # Errors
    ///
    /// `-ENOTCONN` without a QP or after disconnect, `-ENOSPC` if the send queue is full, or
    /// the driver's error.
    pub(crate) fn post_rmr(
        &self,
        mr: &FrMr,
        rmr: Arc<dyn KeepAlive>,
        lmr: Option<Segment<'_>>,
        access: Option<Access>,
        done: Completion,
    ) -> Result {
        let cookie = done.cookie;
        let (op, len) = if access.is_some() {
            (DtoOp::RmrBind, mr.length())
        } else {
            (DtoOp::RmrUnbind, 0)
        };
        let mut guard = self.shared().q.lock();
        let st = &mut *guard;
        let g = rcu::read_lock();
        let Some(qp) = st.target.qp(&g) else {
            return Err(ENOTCONN);
        };
        let c = &mut st.core;
        let r = (|| {
            let idx = c.take(1)?;
            let segs = lmr.as_slice();
            let armed = match c.slot(idx) {
                Some(s) => arm(s, op, cookie, len, segs, done.suppress).map(|()| s.rmr = Some(rmr)),
                None => Err(EINVAL),
            };
            // The context holds `rmr` and the LMR whose memory `mr` maps until it finishes
            // (and the layer's context the `ib_mr` of a REG_MR).
            let r = armed.and_then(|()| match access {
                Some(a) => self.pool.post_reg_mr(qp, idx, mr, a),
                None => self.pool.post_local_inv(qp, idx, mr.rkey()),
            });
            if r.is_err() {
                c.untake_last();
            }
            r.map(|()| (len, 1))
        })();
        self.account(c, op, cookie, r)
    }
}

/// An atomic's own rules (IB spec 9.4.5): one local segment of exactly 8 bytes, the word's old
/// value, and an 8-byte aligned remote address; a device without atomics refuses it.
///
/// # Errors
///
/// `-EOPNOTSUPP` if the device runs no atomics, `-EINVAL` otherwise.
fn check_atomic(d: &Dto<'_>, no_atomics: bool) -> Result {
    if no_atomics {
        return Err(EOPNOTSUPP);
    }
    let aligned = d.op.remote().is_some_and(|r| r.address % 8 == 0);
    match d.segs {
        [s] if s.length == 8 && aligned => Ok(()),
        _ => Err(EINVAL),
    }
}
