// SPDX-License-Identifier: GPL-2.0

//! The protection zone.

use super::Ia;
use crate::pz;
use kernel::{prelude::*, sync::Arc};

/// A protection zone, an IB PD (`rkdapl_pz_create`, DAT's `dat_pz_create`): EPs, LMRs and RMRs
/// of one PZ may be used together. Freed when dropped (`rkdapl_pz_free`); its PD stays until
/// the last EP, LMR and RMR made in it goes.
pub struct Pz(pub(super) Arc<pz::Pz>);

impl Pz {
    /// A new PZ on `ia`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` after device removal, `ENOMEM`, or the driver's error.
    #[inline(never)]
    pub fn new(ia: &Ia) -> Result<Pz> {
        let ia = &ia.0;
        ia.with_device(|dev| pz::Pz::new(ia.clone(), dev)).map(Pz)
    }
}

impl Drop for Pz {
    /// `rkdapl_pz_free`. Process context.
    #[inline(never)]
    fn drop(&mut self) {
        self.0.free();
    }
}
