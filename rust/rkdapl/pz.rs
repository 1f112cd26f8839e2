// SPDX-License-Identifier: GPL-2.0

//! PZ: protection zone (DAT 2.0 section 6.6), an IB protection domain.

use crate::ia::Ia;
use kernel::{prelude::*, rdma::pd::Pd, sync::Arc};

/// A protection zone: EPs, LMRs and RMRs of one PZ may be used together.
pub(crate) struct Pz {
    pub(crate) ia: Arc<Ia>,
    pub(crate) pd: Arc<Pd>,
}

impl Pz {
    /// Allocates a PZ on `ia`'s device. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` or the driver's error.
    pub(crate) fn new(ia: Arc<Ia>) -> Result<Arc<Pz>> {
        let pd = Arc::new(Pd::new(&ia.dev, ia.owner)?, GFP_KERNEL)?;
        Ok(Arc::new(Pz { ia, pd }, GFP_KERNEL)?)
    }
}
