// SPDX-License-Identifier: GPL-2.0

//! PZ: protection zone (DAT 2.0 section 6.6), an IB protection domain.

use crate::rdma::{bound::Bound, pd::Pd};
use crate::{
    ia::Ia,
    registry::{Child, Rank},
};
use kernel::{
    new_mutex, new_spinlock_irq,
    prelude::*,
    sync::{Arc, Mutex, SpinLockIrq},
};

/// An RMR bound in a PZ, as the PZ sees it: the receive queue's completions end the grant a
/// peer's SEND with invalidate names ([`Pz::take_grant`]).
pub(crate) trait Grant: Send + Sync {
    /// The device invalidated `rkey` (a SEND with invalidate arrived): the grant is over.
    /// Process context (the receive CQ's completion work); may sleep.
    fn remote_invalidated(&self, rkey: u32);
}

/// A protection zone: EPs, LMRs and RMRs of one PZ may be used together.
///
/// Registered with its IA from [`Pz::new`] to [`Pz::free`]. Its EPs, LMRs and RMRs keep it
/// (and so the PD) alive after it was freed.
///
/// Dropping it (fields in declaration order) releases the grant list (empty by then: a listed
/// RMR keeps its PZ alive), then the PD, then the IA; ib_core's order (MRs and QPs before
/// their PD) holds by reference counting, every MR and QP of the PD keeping the PZ or the PD
/// alive. No lock is taken: the last reference may go in any context an LMR's may.
///
/// # Invariants
///
/// `pd` is `Some` until the device is removed ([`Pz::revoke`]).
#[pin_data]
pub(crate) struct Pz {
    /// The RMRs of the PZ that are bound, with their rkeys: a peer's SEND with invalidate
    /// names an rkey, and its RECV completion ends that grant (`take_grant`). An RMR is
    /// listed from its bind until its unbind, its remote invalidation, `rkdapl_rmr_free` or
    /// device removal.
    #[pin]
    grants: SpinLockIrq<KVec<(u32, Arc<dyn Grant>)>>,
    #[pin]
    pd: Mutex<Option<Arc<Pd>>>,
    /// The PD's local DMA lkey, used by every local SGE.
    pub(crate) lkey: u32,
    pub(crate) ia: Arc<Ia>,
}

impl Pz {
    /// Allocates a PZ on `dev`, the device of `ia`, which the caller holds live
    /// ([`Ia::live`]), and registers it with `ia`. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`, the driver's error, or the registry's (`-ENODEV` after device removal).
    pub(crate) fn new(ia: Arc<Ia>, dev: &Bound<'_>) -> Result<Arc<Pz>> {
        let pd = Arc::new(Pd::new(dev, &ia.owner)?, GFP_KERNEL)?;
        let lkey = pd.local_dma_lkey();
        let pz = Arc::pin_init(
            pin_init!(Pz {
                ia,
                pd <- new_mutex!(Some(pd), "rkdapl_pz_pd"),
                lkey,
                grants <- new_spinlock_irq!(KVec::new(), "rkdapl_pz_grants"),
            }),
            GFP_KERNEL,
        )?;
        pz.ia.children.add(pz.clone(), None)?;
        Ok(pz)
    }

    /// `rkdapl_pz_free`: the consumer lets go of the PZ; it leaves its IA's registry, and the
    /// PD goes with the last of its EPs, LMRs and RMRs. Never refused. Process context; may
    /// sleep.
    pub(crate) fn free(&self) {
        self.ia.children.remove(self);
    }

    /// The PD, to create a QP or MR in it. Process context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` if the device was removed.
    pub(crate) fn pd(&self) -> Result<Arc<Pd>> {
        self.pd.lock().clone().ok_or(ENODEV)
    }

    /// Lists `rmr` as bound with `rkey`. Any context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn add_grant(&self, rkey: u32, rmr: Arc<dyn Grant>) -> Result {
        self.grants.lock().push((rkey, rmr), GFP_ATOMIC)?;
        Ok(())
    }

    /// Takes `rmr` off the list of bound RMRs. Any context; the reference is dropped by the
    /// caller's caller (it may be the last one only when called from the RMR's owner, who
    /// holds another).
    pub(crate) fn remove_grant(&self, rmr: &dyn Grant) -> Option<Arc<dyn Grant>> {
        let mut g = self.grants.lock();
        let i = g.iter().position(|(_, r)| core::ptr::addr_eq(&**r, rmr))?;
        g.remove(i).ok().map(|(_, r)| r)
    }

    /// Takes the RMR bound with `rkey` off the list, if one is. Any context.
    pub(crate) fn take_grant(&self, rkey: u32) -> Option<Arc<dyn Grant>> {
        let mut g = self.grants.lock();
        let i = g.iter().position(|(k, _)| *k == rkey)?;
        g.remove(i).ok().map(|(_, r)| r)
    }

    /// Device removal: releases the PZ's reference to the PD (the PD goes when its QPs and MRs
    /// are gone, which removal ensures first). Process context; sleeps.
    pub(crate) fn revoke(&self) {
        let pd = self.pd.lock().take();
        drop(pd);
        let grants = core::mem::take(&mut *self.grants.lock());
        drop(grants);
    }
}

impl Child for Pz {
    fn rank(&self) -> Rank {
        Rank::Pz
    }

    fn revoke(&self) {
        Pz::revoke(self)
    }

    fn release(&self) {
        self.free()
    }
}
