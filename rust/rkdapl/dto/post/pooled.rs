// SPDX-License-Identifier: GPL-2.0

//! The work requests of the EP's pooled RMRs (`crate::ep`'s `pooled.rs`): the REG_MR of a
//! grant, and the LOCAL_INV that ends it, whose DTO context holds the MR until it finishes.

use super::arm;
use crate::dto::{Completion, DtoOp, DtoRing, Segment};
use crate::rdma::{mr::PoolMr, Access};
use kernel::{prelude::*, sync::rcu};

/// The work request of a pooled RMR ([`DtoRing::post_pooled_rmr`]).
pub(crate) enum PooledWr<'a> {
    /// Its REG_MR with the access rights of the grant; the grant keeps the MR.
    Reg(&'a PoolMr, Access),
    /// Its LOCAL_INV; once posted, the DTO's context has the MR (taken from here) until it
    /// finishes.
    Inv(&'a mut Option<PoolMr>),
}

impl DtoRing {
    /// Posts the REG_MR of a pooled RMR mapped over `lmr`, or its LOCAL_INV (`wr`), the LMR
    /// busy until it finishes; reported as `done` says. A REG_MR whose success reports nothing
    /// (`done.suppress`) is posted unsignalled, as the ring allows
    /// (`RingCore::unsignalled`); the rest signalled. Any context.
    ///
    /// # Errors
    ///
    /// `-ENOTCONN` without a QP or after disconnect, `-EINVAL` for an `Inv` without an MR or
    /// an MR of another QP's pool, `-ENOSPC` if the send queue is full, or the driver's error.
    pub(crate) fn post_pooled_rmr(
        &self,
        wr: PooledWr<'_>,
        lmr: Segment<'_>,
        done: Completion,
    ) -> Result {
        let cookie = done.cookie;
        let (op, len) = match &wr {
            PooledWr::Reg(mr, _) => (DtoOp::RmrBind, mr.length()),
            PooledWr::Inv(_) => (DtoOp::RmrUnbind, 0),
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
            let s = c.slot(idx).ok_or(EINVAL);
            let armed = s.and_then(|s| {
                arm(
                    s,
                    op,
                    cookie,
                    len,
                    core::slice::from_ref(&lmr),
                    done.suppress,
                )
            });
            let r = armed.and_then(|()| match wr {
                PooledWr::Reg(mr, a) => {
                    // A bind that reports nothing on success goes unsignalled (its context
                    // holds nothing to let go of: the grant keeps the MR): a later signalled
                    // DTO's completion finishes it.
                    let unsignalled = c.unsignalled(done.suppress && !c.late(op), 1);
                    self.pool.post_reg_pool_mr(qp, idx, mr, a, !unsignalled)
                }
                PooledWr::Inv(mr) => {
                    let rkey = mr.as_ref().ok_or(EINVAL)?.rkey();
                    // In the context before the post, so that its completion finds it.
                    if let Some(s) = c.slot(idx) {
                        s.pool_mr = mr.take();
                    }
                    let r = self.pool.post_local_inv(qp, idx, rkey);
                    if r.is_err() {
                        if let Some(s) = c.slot(idx) {
                            *mr = s.pool_mr.take();
                        }
                    }
                    r
                }
            });
            if r.is_err() {
                c.untake_last();
            }
            r.map(|()| (len, 1))
        })();
        self.account(c, op, cookie, r)
    }
}
