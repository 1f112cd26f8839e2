// SPDX-License-Identifier: GPL-2.0

//! Pooled RMRs: remote grants bound per I/O from the EP's pool of FRWR MRs.
//!
//! An EP created with `max_pooled_rmrs` gets, with its QP, a pool of that many FRWR MRs on
//! the QP (`kernel::rdma`'s [`MrPool`], `ib_mr_pool_*`). A bind ([`Ep::bind_pooled_rmr`],
//! `rkdapl_ep_pooled_rmr_bind`) takes one MR out of it, maps `[offset, offset + length)` of an
//! LMR and posts the REG_MR, as [`crate::rmr::Rmr::bind`] does with an RMR's own MR, but with
//! no RMR object and nothing allocated or slept on: any context. The grant is named by its
//! rkey; an unbind ([`Ep::unbind_pooled_rmr`]) posts the LOCAL_INV, and the MR goes back to
//! the pool when that completes (the DTO's context holds it until then).
//!
//! The pool belongs to the QP: when the connection ends (disconnect, free, device removal)
//! the CM id drains the QP, destroys the pool and then the QP, and the grants still bound end
//! (their LMRs are no longer busy).

use super::Ep;
use crate::rdma::mr::{MrPool, PoolMr};
use crate::{
    cm::EpCmId,
    dto::{Completion, PooledWr, Segment},
    lmr::{Lmr, MemPriv, MemPrivs},
};
use kernel::{
    prelude::*,
    sync::{rcu, Arc},
};

/// A bound pooled grant: the MR (out of the pool; `None` only while its unbind is posted) and
/// the LMR it maps, busy ([`Lmr::get`]) until the grant ends.
struct PooledGrant {
    mr: Option<PoolMr>,
    lmr: Arc<Lmr>,
}

impl Drop for PooledGrant {
    fn drop(&mut self) {
        // The MR first (back to the pool, or nowhere once the pool was destroyed with the QP):
        // no valid rkey covers the LMR's memory once it is no longer busy. Any context.
        drop(self.mr.take());
        self.lmr.put();
    }
}

/// The EP's pooled RMRs, under the EP's `pooled` lock (interrupts off).
///
/// # Invariants
///
/// `bound` has room for as many grants as `pool` has MRs (so that a bind never allocates).
#[derive(Default)]
pub(crate) struct Pooled {
    pool: Option<Arc<MrPool>>,
    bound: KVec<PooledGrant>,
}

/// The number of pages each pooled MR holds: as many as the device registers at once.
fn pages(ep: &Ep) -> u32 {
    ep.ia.attrs().max_fast_reg_page_list_len.max(1)
}

impl Ep {
    /// Creates the pool of the EP's pooled RMRs on its new QP (`id`'s), if its attributes ask
    /// for one. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// As [`crate::rdma::cm::CmId::create_mr_pool`].
    pub(super) fn create_rmr_pool(&self, id: &EpCmId) -> Result {
        let n = self.attr.max_pooled_rmrs;
        if n == 0 {
            return Ok(());
        }
        let pool = id.create_mr_pool(n, pages(self))?;
        // INVARIANT: room for a grant of every MR of the pool.
        let bound = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        let old = core::mem::replace(
            &mut *self.pooled.lock(),
            Pooled {
                pool: Some(pool),
                bound,
            },
        );
        // Outside the lock: grants of an earlier connection (none: its end ended them).
        drop(old);
        Ok(())
    }

    /// Ends the grants still bound and forgets the pool, once the QP (and with it the pool)
    /// is gone. Any context.
    pub(super) fn end_pooled_rmrs(&self) {
        let old = core::mem::take(&mut *self.pooled.lock());
        // Outside the lock: the LMRs' last references may go with it.
        drop(old);
    }

    /// Grants `privileges` (remote read, write, atomics) on `[offset, offset + length)` of
    /// `lmr` with an MR taken from the EP's pool, bound with a REG_MR posted on the EP;
    /// returns `(rkey, address)`. The grant is valid once the RMR bind completion (as `done`
    /// says) arrives; it ends with [`Ep::unbind_pooled_rmr`] of its rkey or with the
    /// connection. Any context: nothing sleeps or allocates (a range of more than a few DMA
    /// segments allocates its scatterlist with `GFP_ATOMIC`).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for no privilege or local write, or a zero length, `-ERANGE` for a range
    /// outside the LMR, `-EACCES` if the LMR lacks the privilege, `-EXDEV` for an LMR of
    /// another PZ, `-E2BIG` if the range needs more pages than one MR holds, `-EAGAIN` if
    /// every pooled MR is bound (or being unbound), `-ENOTCONN` if the EP has no pool (no QP
    /// yet or any more, or created with no pooled RMRs), `-ENODEV` after device removal,
    /// `-ENOSPC` if the send queue is full, `-ENOMEM`.
    pub(crate) fn bind_pooled_rmr(
        &self,
        lmr: &Arc<Lmr>,
        offset: u64,
        length: u64,
        privileges: MemPrivs,
        done: Completion,
    ) -> Result<(u32, u64)> {
        if privileges == MemPrivs::empty()
            || privileges.contains(MemPriv::LocalWrite)
            || length == 0
        {
            return Err(EINVAL);
        }
        if !lmr.privileges.contains_all(privileges) {
            return Err(EACCES);
        }
        if !Arc::ptr_eq(&lmr.pz, &self.pz) {
            return Err(EXDEV);
        }
        let access = privileges.remote_access();
        // Live: no device removal (which revokes the LMR's region and the pool) until this
        // section ends; nothing below sleeps.
        let rcu = rcu::read_lock();
        if !self.pz.ia.live_rcu(&rcu) {
            return Err(ENODEV);
        }
        let region = lmr.region.try_access_with_guard(&rcu).ok_or(ENODEV)?;
        let mut st = self.pooled.lock();
        let pool = st.pool.as_ref().ok_or(ENOTCONN)?;
        if st.bound.len() >= st.bound.capacity() {
            // Not reached: no more grants are bound than the pool has MRs.
            return Err(EAGAIN);
        }
        let mut mr = pool.get()?;
        mr.map_gfp(region, offset, length, GFP_ATOMIC)
            .map_err(|e| if e == EINVAL { ERANGE } else { e })?;
        let (rkey, addr) = (mr.rkey(), mr.iova());
        let seg = Segment {
            lmr,
            offset: 0,
            length: 0,
        };
        // The DTO's context holds the LMR busy until the REG_MR completes, the grant until it
        // ends; listed before the bind is posted (an unbind can only follow it). The EP's
        // `pooled` lock, then the ring's: both interrupts off, never taken the other way.
        self.sq
            .post_pooled_rmr(PooledWr::Reg(&mr, access), seg, done)?;
        lmr.get();
        let grant = PooledGrant {
            mr: Some(mr),
            lmr: lmr.clone(),
        };
        // Within the room checked above: does not allocate, does not fail.
        st.bound.push_within_capacity(grant).map_err(|_| EAGAIN)?;
        Ok((rkey, addr))
    }

    /// Ends the pooled grant of `rkey` with a LOCAL_INV posted on the EP; an RMR bind
    /// completion (op UNBIND, `cookie`) follows, and the MR goes back to the pool then. Any
    /// context; a linear search among the EP's bound grants.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if no pooled grant of the EP has `rkey`, `-ENOTCONN` if the EP has no QP any
    /// more, `-ENOSPC` if its send queue is full (the grant stays bound).
    pub(crate) fn unbind_pooled_rmr(&self, rkey: u32, cookie: u64) -> Result {
        let mut st = self.pooled.lock();
        let i = st
            .bound
            .iter()
            .position(|g| g.mr.as_ref().is_some_and(|m| m.rkey() == rkey))
            .ok_or(EINVAL)?;
        let g = st.bound.get_mut(i).ok_or(EINVAL)?;
        let seg = Segment {
            lmr: &g.lmr,
            offset: 0,
            length: 0,
        };
        // On success the DTO's context takes the MR (back to the pool when it completes) and
        // holds the LMR busy; the grant lets go of its share.
        self.sq
            .post_pooled_rmr(PooledWr::Inv(&mut g.mr), seg, Completion::reported(cookie))?;
        let last = st.bound.len() - 1;
        st.bound.swap(i, last);
        let ended = st.bound.pop();
        drop(st);
        drop(ended);
        Ok(())
    }
}
