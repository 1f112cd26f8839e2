// SPDX-License-Identifier: GPL-2.0

//! RECVs posted before the EP's QP exists. DAT lets a consumer post RECVs on an EP that is
//! UNCONNECTED or still connecting (DAT 2.0 `dat_ep_post_recv`), and on iWARP it must: RDMAP
//! has no RNR retry, so a SEND that arrives before its RECV terminates the connection, and the
//! peer may send as soon as it sees the connection established, before this side's event is
//! even delivered. rdma_cm creates the QP only once the route is resolved (connect) or the CR
//! is accepted, so until then the ring keeps such RECVs: each takes its context and is armed
//! at once (its LMRs held busy, its errors returned by the post call), and its segments wait
//! here. [`DtoRing::post_early`] gives them to the new QP, in posting order, before rdma_cm
//! connects or accepts; a connection that ends before its QP exists, or an EP freed without
//! one, completes them FLUSHED ([`DtoRing::flush_early`]).
//!
//! While RECVs wait, a later RECV waits behind them even if the QP exists meanwhile: the ring
//! hands out and takes back its contexts in posting order, and so must the QP.

use super::{
    post::{arm, sges, sges_of},
    ring::RingState,
    DtoOp, DtoRing, DtoStatus, OneOrMore, Segment,
};
use crate::{
    lmr::LmrUse,
    rdma::{qp::Qp, wr::Sge},
};
use kernel::{prelude::*, sync::rcu};

/// The RECVs of a ring that wait for its QP (in [`RingState`], under the ring's lock).
///
/// # Invariants
///
/// The `unposted` newest contexts of the ring (sequence numbers `head - unposted..head`) are
/// RECVs not given to a QP; `ranges` holds their segments, `(offset, length)` in the LMRs of
/// their slots, in order.
pub(crate) struct Early {
    /// RECVs may wait for the QP: the EP is UNCONNECTED or connecting.
    pub(super) allowed: bool,
    pub(super) unposted: u32,
    ranges: KVec<(u64, u64)>,
}

impl Early {
    /// None waiting; allowed (an EP starts UNCONNECTED).
    pub(super) fn new() -> Early {
        Early {
            allowed: true,
            unposted: 0,
            ranges: KVec::new(),
        }
    }
}

impl DtoRing {
    /// Takes and arms a context for a RECV into `segs` that waits for the QP, after the checks
    /// a posted RECV gets. Returns its bytes and work requests, for
    /// [`DtoRing::account`]. Any context.
    ///
    /// # Errors
    ///
    /// As [`DtoRing::post_recv`] (`-ENOMEM` also when its segments cannot be recorded).
    pub(super) fn defer_recv(
        &self,
        st: &mut RingState,
        segs: &[Segment<'_>],
        cookie: u64,
        g: &rcu::Guard,
    ) -> Result<(u64, u32)> {
        let (sg, total) = sges(segs, true, g)?;
        if sg.as_slice().len() > self.max_sge as usize {
            return Err(EMSGSIZE);
        }
        drop(sg);
        let (e, c) = (&mut st.early, &mut st.core);
        let at = e.ranges.len();
        let r = (|| {
            for s in segs {
                e.ranges.push((s.offset, s.length), GFP_ATOMIC)?;
            }
            let idx = c.take(1)?;
            let armed = match c.slot(idx) {
                Some(s) => arm(s, DtoOp::Recv, cookie, total, segs, false),
                None => Err(EINVAL),
            };
            if armed.is_err() {
                c.untake_last();
            }
            armed
        })();
        match r {
            Ok(()) => {
                e.unposted += 1;
                Ok((total, 1))
            }
            Err(err) => {
                e.ranges.truncate(at);
                Err(err)
            }
        }
    }

    /// Posts the RECVs that wait (if any) to the QP just created, in posting order: called
    /// once the QP exists and before rdma_cm connects or accepts on it. A RECV the driver
    /// refuses (or whose LMR's device is gone) completes with `RKDAPL_DTO_LOCAL_EP_ERROR`,
    /// in its turn. Any context.
    pub(crate) fn post_early(&self) {
        let mut guard = self.shared().q.lock();
        let st = &mut *guard;
        if st.early.unposted == 0 {
            return;
        }
        let g = rcu::read_lock();
        let Some(qp) = st.target.qp(&g) else {
            return;
        };
        let (e, c) = (&mut st.early, &mut st.core);
        let n = c.len();
        // INVARIANT: `unposted <= n`, the contexts in use. (`checked_rem`, not `%`: objtool of
        // 7.3 does not know `panic_const_rem_by_zero` as noreturn and warns of a fall-through.)
        let Some(mut idx) = (c.head_idx + n - e.unposted.min(n)).checked_rem(n) else {
            return;
        };
        let mut at = 0usize;
        for _ in 0..e.unposted {
            let Some(s) = c.slot(idx) else {
                break;
            };
            // The LMRs, used for the post too: once posted, the context is the consumer's (the
            // ring's `# Locking`), which may finish the RECV (a flush) before the post returns;
            // these uses keep them from being freed meanwhile (`Lmr::free` refuses a busy LMR).
            let mut lmrs = OneOrMore::Empty;
            let held = s
                .lmrs
                .as_slice()
                .iter()
                .try_for_each(|l| lmrs.push(LmrUse::new(l)?, GFP_ATOMIC));
            let lmrs = lmrs.as_slice();
            let ranges = e.ranges.get(at..at + lmrs.len()).unwrap_or(&[]);
            at += lmrs.len();
            let posted = held.and_then(|()| self.post_one_early(qp, idx, lmrs, ranges, &g));
            if posted.is_err() {
                // Not posted: still the posters'.
                if let Some(s) = c.slot(idx) {
                    s.status = DtoStatus::LocalEp;
                }
            }
            idx = c.next(idx);
        }
        e.unposted = 0;
        e.ranges.clear();
    }

    /// Posts the waiting RECV of context `idx`, over `ranges` of `lmrs`.
    fn post_one_early(
        &self,
        qp: &Qp,
        idx: u32,
        lmrs: &[LmrUse],
        ranges: &[(u64, u64)],
        g: &rcu::Guard,
    ) -> Result {
        if ranges.len() != lmrs.len() {
            return Err(EINVAL);
        }
        let segs = lmrs.iter().zip(ranges).map(|(l, &(o, n))| (&**l, o, n));
        let (sg, _) = sges_of(segs, true, g)?;
        let sg: &[Sge<'_>] = sg.as_slice();
        self.pool.post_recv(qp, idx, sg)
    }

    /// Ends the RECVs that wait for a QP that will not come (the connection attempt failed
    /// before its QP existed, or the EP goes without one): each completes FLUSHED, in order.
    /// Any context; events are posted after the ring's lock is released.
    pub(crate) fn flush_early(&self) {
        let alone = {
            let mut guard = self.shared().q.lock();
            let st = &mut *guard;
            let (e, c) = (&mut st.early, &mut st.core);
            if e.unposted == 0 {
                return;
            }
            let n = c.len();
            let mut idx = (c.head_idx + n - e.unposted.min(n))
                .checked_rem(n)
                .unwrap_or(0);
            for _ in 0..e.unposted {
                // Never posted: the posters'.
                if let Some(s) = c.slot(idx) {
                    s.status = DtoStatus::Flushed;
                }
                idx = c.next(idx);
            }
            let alone = c.outstanding() == u64::from(e.unposted);
            e.unposted = 0;
            e.ranges.clear();
            alone
        };
        // Otherwise RECVs posted to a QP are still outstanding before them: the drain of that
        // QP finishes them, then `reap_all` these.
        if alone {
            // SAFETY: Every DTO posted to a QP has finished (`alone`, seen with acquire):
            // no completion of the ring can come. The callers (the end of a connection) are
            // serialised with the teardown's reaping.
            unsafe { self.reap_all() };
        }
    }
}
