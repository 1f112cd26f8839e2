// SPDX-License-Identifier: GPL-2.0

//! SENDs from pages the consumer lends (`rkdapl_post_send_sg`, the Rust API's
//! `Ep::post_send_lent`): the pages are mapped for the EP's device to read
//! (`ib_dma_map_sg`, `DMA_TO_DEVICE`) and sent with the PZ's local DMA lkey, as nvme-rdma sends
//! in-capsule data, with no LMR: no region object, no entry in the IA's registry. The mapping
//! is the DTO's own: its context holds it until the SEND finishes, when it is undone and the
//! pages' owner let go, before the event is reported.
//!
//! The lkey is the one every local SGE of the PZ carries; it grants no remote access, and the
//! pages are only ever read by the device, for this SEND.

use super::arm;
use crate::dto::{DtoFlags, DtoOp, DtoRing, InlineVec, Segment};
use crate::rdma::{
    mr::DmaRegion,
    qp::{SendFlag, SendFlags, SendOp, SendWr},
    wr::Sge,
};
use kernel::{prelude::*, sync::rcu};

/// SGEs of a lent SEND built in place: a command and a few pages.
const SGES_IN_PLACE: usize = 8;

impl DtoRing {
    /// Posts the SEND of `Ep::post_send_lent` over `head` and the mapped pages `lent`, sent
    /// with `lkey` (the PZ's local DMA lkey), whose region the DTO's context keeps until it
    /// finishes. On an error `lent` is dropped (after the posters' lock is released: a
    /// removal may be unmapping it).
    pub(crate) fn post_send_lent(
        &self,
        head: &[Segment<'_>],
        lent: DmaRegion,
        lkey: u32,
        cookie: u64,
        flags: DtoFlags,
    ) -> Result {
        let lent_len = lent.len() as u64;
        // Declared before the lock's guard, so dropped after it: a region given back.
        let mut back = Some(lent);
        let mut guard = self.shared().q.lock();
        let st = &mut *guard;
        if !st.connected {
            return Err(ENOTCONN);
        }
        let g = rcu::read_lock();
        let Some(qp) = st.target.qp(&g) else {
            return Err(ENOTCONN);
        };
        let c = &mut st.core;
        let total = head
            .iter()
            .try_fold(lent_len, |t, s| t.checked_add(s.length))
            .filter(|&t| t <= u64::from(u32::MAX));
        let max_sge = (self.max_sge as usize).max(1);
        let r = (|| {
            let total = total.ok_or(EMSGSIZE)?;
            let idx = c.take(1)?;
            let armed = match c.slot(idx) {
                Some(s) => arm(s, DtoOp::Send, cookie, total, head, false).map(|()| {
                    s.lent = back.take();
                    core::ptr::from_ref(&s.lent)
                }),
                None => Err(EINVAL),
            };
            let lent = match armed {
                // SAFETY: The context is the posters' (the caller holds their lock) until the
                // work request is posted, and its region stays there, where it was put, until
                // the DTO finishes, after the work request completed; `untake_last` below
                // happens only once the SGEs that borrow it are no longer used.
                Ok(p) => unsafe { &*p },
                Err(e) => {
                    c.untake_last();
                    return Err(e);
                }
            };
            let built = (|| {
                let region = lent.as_ref().ok_or(EINVAL)?;
                let mut sges = InlineVec::<Sge<'_>, SGES_IN_PLACE>::new();
                for s in head {
                    s.lmr
                        .region
                        .try_access_with_guard(&g)
                        .ok_or(ENODEV)?
                        .for_each_sge(s.offset, s.length, s.lmr.lkey(), |x| {
                            sges.push(x, GFP_ATOMIC)
                        })?;
                }
                region.for_each_sge(0, lent_len, lkey, |x| sges.push(x, GFP_ATOMIC))?;
                if sges.as_slice().len() > max_sge {
                    return Err(EMSGSIZE);
                }
                Ok(sges)
            })();
            let sges = match built {
                Ok(x) => x,
                Err(e) => {
                    back = c.slot(idx).and_then(|s| s.lent.take());
                    c.untake_last();
                    return Err(e);
                }
            };
            let mut f = SendFlags::from(SendFlag::Signaled);
            if flags.fence {
                f |= SendFlag::Fence;
            }
            if flags.solicited {
                f |= SendFlag::Solicited;
            }
            let mut wr = SendWr::new(SendOp::Send, idx, true, sges.as_slice(), f);
            let _ = c.unsignalled(false, 1);
            match self.pool.post_send(qp, core::slice::from_mut(&mut wr)) {
                Ok(()) => Ok(total),
                Err((e, _)) => {
                    drop(sges);
                    back = c.slot(idx).and_then(|s| s.lent.take());
                    c.untake_last();
                    Err(e)
                }
            }
        })();
        let r = r.map(|total| (total, 1));
        self.account(c, DtoOp::Send, cookie, r)
    }
}
