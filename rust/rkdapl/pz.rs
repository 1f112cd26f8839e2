// SPDX-License-Identifier: GPL-2.0

//! PZ: protection zone (DAT 2.0 section 6.6), an IB protection domain.

use crate::ia::Ia;
use kernel::{
    new_mutex, new_spinlock_irq,
    prelude::*,
    rdma::{device::Device, pd::Pd},
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
/// # Invariants
///
/// `pd` is `Some` until the device is removed ([`Pz::revoke`]).
#[pin_data]
pub(crate) struct Pz {
    pub(crate) ia: Arc<Ia>,
    #[pin]
    pd: Mutex<Option<Arc<Pd>>>,
    /// The PD's local DMA lkey, used by every local SGE.
    pub(crate) lkey: u32,
    /// The RMRs of the PZ that are bound, with their rkeys: a peer's SEND with invalidate
    /// names an rkey, and its RECV completion ends that grant (`take_grant`). An RMR is
    /// listed from its bind until its unbind, its remote invalidation, `rkdapl_rmr_free` or
    /// device removal.
    #[pin]
    grants: SpinLockIrq<KVec<(u32, Arc<dyn Grant>)>>,
}

impl Pz {
    /// Allocates a PZ on `dev`, the device of `ia`, which the caller holds live
    /// ([`Ia::live`]). May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` or the driver's error.
    pub(crate) fn new(ia: Arc<Ia>, dev: &Device) -> Result<Arc<Pz>> {
        let pd = Arc::new(Pd::new(dev, ia.owner)?, GFP_KERNEL)?;
        let lkey = pd.local_dma_lkey();
        Arc::pin_init(
            pin_init!(Pz {
                ia,
                pd <- new_mutex!(Some(pd), "rkdapl_pz_pd"),
                lkey,
                grants <- new_spinlock_irq!(KVec::new(), "rkdapl_pz_grants"),
            }),
            GFP_KERNEL,
        )
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

    /// The consumer lets go of the PZ (`rkdapl_pz_free`, a Rust API PZ dropped). Its PD
    /// stays until the last EP, LMR and RMR made in it is freed. Process context.
    pub(crate) fn free(&self) {}

    /// Device removal: releases the PZ's reference to the PD (the PD goes when its QPs and MRs
    /// are gone, which removal ensures first). Process context; sleeps.
    pub(crate) fn revoke(&self) {
        let pd = self.pd.lock().take();
        drop(pd);
        let grants = core::mem::take(&mut *self.grants.lock());
        drop(grants);
    }
}
