// SPDX-License-Identifier: GPL-2.0

//! A chain of send-queue DTOs posted as one `ib_post_send` call (`rkdapl_ep_post_chain`,
//! `api::Ep::post`): each DTO takes and arms its context first, then the work requests of all
//! of them go in one list; a chain of one DTO takes the single-DTO paths of the parent module.

use super::sync_inline_back;
use crate::dto::{Dto, DtoRing, InlineVec, Op, CHAIN_IN_PLACE};
use kernel::{prelude::*, sync::rcu};

impl DtoRing {
    /// Posts a chain of send-queue DTOs, in order, as one `ib_post_send` call. Any context.
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs, from the start of `dtos`, were posted before it
    /// (those report their completions; the rest never do): `-ENOTCONN` (none posted) unless
    /// the EP is CONNECTED, `-EINVAL` for an operation that is not a send-queue DTO, a missing
    /// or superfluous remote range or the solicited flag on an RDMA WRITE or READ,
    /// `-EOPNOTSUPP` for an RDMA WRITE or SEND with immediate on an iWARP EP, `-ERANGE`
    /// for a segment outside its LMR, `-EACCES` for an RDMA READ into an LMR without local
    /// write, `-EMSGSIZE` for a DTO needing more work requests than allowed (or a SEND needing
    /// more SGEs than one work request holds), `-ENOSPC` if too many DTOs are outstanding,
    /// `-ENOMEM`, or the driver's error.
    ///
    /// With `flags.suppress` a successful DTO reports no event; a DTO of one work request is
    /// then posted unsignalled (see the module documentation). SENDs and RDMA WRITEs of at
    /// most the QP's inline capacity over virtually contiguous LMRs are posted inline.
    pub(crate) fn post_chain(&self, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
        // iWARP: READs post work requests of their own (`super::iwarp`).
        if self.read_mrs > 0
            && dtos.len() > 1
            && dtos.iter().any(|d| matches!(d.op, Op::RdmaRead(_)))
        {
            return self.post_each(dtos);
        }
        let mut guard = self.shared().q.lock();
        let st = &mut *guard;
        if !st.connected {
            return Err((ENOTCONN, 0));
        }
        // The SGEs borrow the LMRs' regions, and the post the QP, until the driver has the
        // work requests.
        let g = rcu::read_lock();
        let Some(qp) = st.target.qp(&g) else {
            return Err((ENOTCONN, 0));
        };
        let max_inline = st.max_inline;
        let c = &mut st.core;
        // A DTO split into several work requests goes on with its context taken (`first`).
        let mut first = None;
        if let [d] = dtos {
            if self.read_mrs > 0 && matches!(d.op, Op::RdmaRead(_)) {
                if let Some(r) = self.post_read_iwarp(c, qp, d, &g) {
                    return r;
                }
            }
            if let Some(r) = self.post_simple(c, qp, max_inline, d, &g) {
                return r;
            }
            let p = match self.prepare(c, d, max_inline, &g) {
                Ok(p) => p,
                Err(e) => {
                    let _ = self.account(c, d.op.dto_op(), d.cookie, Err(e));
                    return Err((e, 0));
                }
            };
            if let Some(r) = self.post_single(c, qp, d, &p) {
                return r;
            }
            first = Some(p);
        }
        // First every DTO takes and arms its context, so that the SGE lists are in their
        // final place before work requests point at them. Room for all of them first, so that
        // no context is taken before an allocation that could fail.
        let mut prep = InlineVec::<_, CHAIN_IN_PLACE>::new();
        // Allocates for a chain longer than `CHAIN_IN_PLACE` only.
        prep.reserve(dtos.len(), GFP_ATOMIC).map_err(|e| (e, 0))?;
        let mut first_err = None;
        for d in dtos {
            let r = first
                .take()
                .map_or_else(|| self.prepare(c, d, max_inline, &g), Ok)
                .and_then(|p| prep.push(p, GFP_ATOMIC).inspect_err(|_| c.untake_last()));
            if let Err(e) = r {
                let _ = self.account(c, d.op.dto_op(), d.cookie, Err(e));
                first_err = Some(e);
                break;
            }
        }
        let prep = prep.as_slice();
        let nwr: usize = prep.iter().map(|p| p.nwr as usize).sum();
        let mut wrs = InlineVec::<_, CHAIN_IN_PLACE>::new();
        let built = wrs.reserve(nwr, GFP_ATOMIC).and_then(|()| {
            prep.iter()
                .zip(dtos)
                .try_for_each(|(p, d)| self.push_wrs(d, p, &mut wrs))
        });
        let r = match built {
            // Each context holds its LMRs (busy, so `rkdapl_lmr_free` refuses) until it
            // finishes.
            Ok(()) => self.pool.post_send(qp, wrs.as_mut_slice()),
            Err(e) => Err((e, 0)),
        };
        for (p, d) in prep.iter().zip(dtos) {
            if p.synced {
                sync_inline_back(d.segs);
            }
        }
        let posted_wrs = match r {
            Ok(()) => nwr,
            Err((_, n)) => n,
        };
        // Give back the contexts of the DTOs not posted at all (the last taken first); the
        // one the post stopped inside of, if any, keeps its context: its posted work requests
        // are unsignalled ones that report nothing if they succeed, so it is finished
        // silently by a later completion or the teardown (`RingShared::finish_through`).
        let mut end: usize = nwr;
        for p in prep.iter().rev() {
            let start = end - p.nwr as usize;
            if end <= posted_wrs {
                break;
            }
            if start >= posted_wrs {
                c.untake_last();
            } else if let Some(op) = c.orphan(p.idx, (end - posted_wrs) as u32) {
                // It completes (silently), so it counts as posted as well as refused.
                c.stats.posted(op);
            }
            end = start;
        }
        let mut start = 0usize;
        let mut posted = 0usize;
        for (p, d) in prep.iter().zip(dtos) {
            let end = start + p.nwr as usize;
            if end <= posted_wrs {
                let _ = self.account(c, d.op.dto_op(), d.cookie, Ok((p.total, p.nwr)));
                posted += 1;
            } else if let Err((e, _)) = r {
                if start <= posted_wrs {
                    // The DTO the chain stopped at is the one refused.
                    let _ = self.account(c, d.op.dto_op(), d.cookie, Err(e));
                    first_err = Some(e);
                }
                break;
            }
            start = end;
        }
        match first_err {
            None => Ok(()),
            Some(e) => Err((e, posted)),
        }
    }
}
