// SPDX-License-Identifier: GPL-2.0

//! RMR: remote memory region (DAT 2.0 section 6.8), a remote grant.
//!
//! A grant is an FRWR registration of `[offset, offset + length)` of an LMR with a fresh key
//! and the granted rights, posted on an EP (`IB_WR_REG_MR`). The peer may then RDMA READ or
//! WRITE exactly that range with the rkey; unbinding posts `IB_WR_LOCAL_INV`, after which the
//! rkey is refused. Rebinding advances the key, so an old rkey never becomes valid again.
//!
//! The peer may end the grant itself with a SEND with invalidate naming the rkey (IB spec
//! 10.6.5): the device invalidates the MR before completing the RECV, and the RECV's
//! completion ends the binding here (`Pz::take_grant`, [`Rmr::remote_invalidated`]).

use crate::rdma::mr::FrMr;
use crate::{
    dto::Completion,
    ep::Ep,
    lmr::{Lmr, MemPriv, MemPrivs},
    pz::{Grant, Pz},
    registry::{Child, Rank, RegSlot},
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{rcu, Arc, SpinLockIrq},
};

/// A grant: keeps the granted LMR registered and busy (`rkdapl_lmr_free` refuses it).
struct Binding {
    lmr: Arc<Lmr>,
}

impl Binding {
    fn new(lmr: &Arc<Lmr>) -> Binding {
        lmr.get();
        Binding { lmr: lmr.clone() }
    }
}

impl Drop for Binding {
    fn drop(&mut self) {
        // Any context (`Lmr::put`); never under the RMR's lock.
        self.lmr.put();
    }
}

struct RmrState {
    /// The FRWR MR; `None` once the device was removed. Declared before `bound`: dropped
    /// first (see [`Rmr`]).
    mr: Option<FrMr>,
    bound: Option<Binding>,
    /// Set by [`Rmr::free`] (`rkdapl_rmr_free`): a bind racing the free is refused, so no
    /// grant is listed for an RMR nobody can unbind.
    released: bool,
}

/// A remote memory region. Registered with its IA from [`Rmr::new`] to [`Rmr::free`].
///
/// Made once (its MR allocated, which sleeps), then bound and unbound per I/O in any context:
/// its state is under a spinlock (interrupts off), the bind's liveness check is an RCU read
/// ([`crate::ia::Ia::live_rcu`]) and the MR's page list is filled without sleeping.
///
/// Dropping it (fields in declaration order; `RmrState`'s too) deregisters the MR, then ends a
/// binding left (the LMR is no longer busy), then lets go of the PZ (the MR holds the PD too).
/// The MR goes first on purpose: once the binding lets go, the LMR's region may be unmapped
/// and its pages given back (an LMR over a block request's pages), so no valid rkey may cover
/// them by then.
#[pin_data]
pub(crate) struct Rmr {
    #[pin]
    st: SpinLockIrq<RmrState>,
    pub(crate) pz: Arc<Pz>,
    /// Its place in its IA's registry.
    reg: RegSlot,
}

impl Rmr {
    /// An unbound RMR in `pz`, able to grant up to the device's FRWR page list length,
    /// registered with its IA. The caller holds the IA live. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` if the device was removed, `-ENOMEM` or the driver's error.
    pub(crate) fn new(pz: Arc<Pz>) -> Result<Arc<Rmr>> {
        let pages = pz.ia.attrs().max_fast_reg_page_list_len.max(1);
        let mr = Some(FrMr::new(&pz.pd()?, pages)?);
        let rmr = Arc::pin_init(
            pin_init!(Rmr {
                pz,
                st <- new_spinlock_irq!(RmrState { mr, bound: None, released: false }, "rkdapl_rmr"),
                reg: RegSlot::new(),
            }),
            GFP_KERNEL,
        )?;
        rmr.pz.ia.children.add(rmr.clone(), None)?;
        Ok(rmr)
    }

    /// Grants `privileges` (remote read, write, atomics) on `[offset, offset + length)` of
    /// `lmr` through `ep`; returns `(rkey, address)` the peer uses. The grant is valid once the
    /// RMR bind completion arrives on the EP's DTO EVD (reported as `done` says). Any context:
    /// sleeps nowhere (the MR's page list is filled with `GFP_ATOMIC` when the range spans more
    /// than a few DMA segments).
    ///
    /// # Errors
    ///
    /// `-EBUSY` if already bound, `-EINVAL` for no privilege or local write, a zero length or a
    /// freed RMR, `-ERANGE` for a range outside the LMR, `-EACCES` if the LMR lacks the
    /// privilege, `-EXDEV` for objects of different PZs, `-E2BIG` if the range needs more
    /// pages than one registration holds, `-ENODEV` after device removal, `-ENOMEM`,
    /// `-ENOTCONN` if the EP has no QP, `-ENOSPC` if its send queue is full.
    pub(crate) fn bind(
        self: &Arc<Self>,
        ep: &Ep,
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
        if !Arc::ptr_eq(&lmr.pz, &self.pz) || !Arc::ptr_eq(&ep.pz, &self.pz) {
            return Err(EXDEV);
        }
        let access = privileges.remote_access();
        // Live: no device removal (which revokes the LMR's region and the MR) until this
        // section ends (`Ia::revoke` waits for it); nothing below sleeps.
        let rcu = rcu::read_lock();
        if !self.pz.ia.live_rcu(&rcu) {
            return Err(ENODEV);
        }
        let region = lmr.region.try_access_with_guard(&rcu).ok_or(ENODEV)?;
        let mut st = self.st.lock();
        if st.released {
            return Err(EINVAL);
        }
        if st.bound.is_some() {
            return Err(EBUSY);
        }
        let st = &mut *st;
        let mr = st.mr.as_mut().ok_or(ENODEV)?;
        mr.map_gfp(region, offset, length, GFP_ATOMIC)
            .map_err(|e| if e == EINVAL { ERANGE } else { e })?;
        let (rkey, addr) = (mr.rkey(), mr.iova());
        // Listed before the bind is posted: a SEND with invalidate can only follow it.
        self.pz.add_grant(rkey, self.clone())?;
        if let Err(e) = ep.post_rmr(mr, self.clone(), Some(lmr.clone()), Some(access), done) {
            drop(self.pz.remove_grant(&**self));
            return Err(e);
        }
        st.bound = Some(Binding::new(lmr));
        Ok((rkey, addr))
    }

    /// Revokes the grant with LOCAL_INV posted on `ep`; an RMR bind completion (op UNBIND)
    /// follows. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if not bound, `-ENOTCONN` if the EP has no QP, `-ENOSPC` if its send queue is
    /// full.
    pub(crate) fn unbind(self: &Arc<Self>, ep: &Ep, cookie: u64) -> Result {
        let mut st = self.st.lock();
        let Some(b) = st.bound.as_ref() else {
            return Err(EINVAL);
        };
        let lmr = b.lmr.clone();
        let mr = st.mr.as_ref().ok_or(ENODEV)?;
        ep.post_rmr(
            mr,
            self.clone(),
            Some(lmr),
            None,
            Completion::reported(cookie),
        )?;
        let ended = st.bound.take();
        let listed = self.pz.remove_grant(&**self);
        drop(st);
        drop(ended);
        drop(listed);
        Ok(())
    }

    /// `rkdapl_rmr_free`: the consumer lets go of the RMR; a peer's SEND with invalidate no
    /// longer finds it, binding it is refused, and it leaves its IA's registry. A bound grant
    /// ends when the last reference goes (a bind or unbind in flight holds one). Never refused.
    /// Any context, unless the IA was closed and this is its last object (see
    /// [`crate::registry::Children::remove`]); the caller's reference may be the last one only
    /// in process context (the MR is deregistered with it).
    pub(crate) fn free(&self) {
        self.st.lock().released = true;
        drop(self.pz.remove_grant(self));
        self.pz.ia.children.remove(self);
    }

    /// Device removal: drops the grant and deregisters the MR. Process context; sleeps.
    pub(crate) fn revoke(&self) {
        drop(self.pz.remove_grant(self));
        let (mr, bound) = {
            let mut st = self.st.lock();
            (st.mr.take(), st.bound.take())
        };
        // The MR first, as in `Drop` (see [`Rmr`]).
        drop(mr);
        drop(bound);
    }
}

impl Grant for Rmr {
    /// The peer invalidated `rkey` with a SEND with invalidate: if it is this RMR's current
    /// grant, the RMR is unbound (the granted LMR is no longer busy) and may be bound again.
    /// Any context (the receive CQ's completion work).
    fn remote_invalidated(&self, rkey: u32) {
        let mut st = self.st.lock();
        let ended = if st.bound.is_some() && st.mr.as_ref().map(|m| m.rkey()) == Some(rkey) {
            st.bound.take()
        } else {
            None
        };
        drop(st);
        // Outside the lock: the LMR's last reference may go with it, and with the LMR the
        // owner of its pages (a block request, which then ends).
        drop(ended);
    }
}

impl Child for Rmr {
    fn rank(&self) -> Rank {
        Rank::Rmr
    }

    fn revoke(&self) {
        Rmr::revoke(self)
    }

    fn release(&self) {
        self.free()
    }

    fn parent(&self) -> Option<Arc<dyn Child>> {
        Some(self.pz.clone())
    }

    fn slot(&self) -> Option<&RegSlot> {
        Some(&self.reg)
    }
}
