// SPDX-License-Identifier: GPL-2.0

//! PZ: protection zone (DAT 2.0 section 6.6), an IB protection domain.

use crate::ia::Ia;
use kernel::{
    new_mutex,
    prelude::*,
    rdma::{device::Device, pd::Pd},
    sync::{Arc, Mutex},
};

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
            pin_init!(Pz { ia, pd <- new_mutex!(Some(pd), "rkdapl_pz_pd"), lkey }),
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

    /// Device removal: releases the PZ's reference to the PD (the PD goes when its QPs and MRs
    /// are gone, which removal ensures first). Process context; sleeps.
    pub(crate) fn revoke(&self) {
        let pd = self.pd.lock().take();
        drop(pd);
    }
}
