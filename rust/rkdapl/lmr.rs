// SPDX-License-Identifier: GPL-2.0

//! LMR: local memory region (DAT 2.0 section 6.7), a kernel buffer mapped for the device and
//! reachable by local DTOs with the PZ's local DMA lkey.

use crate::pz::Pz;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, rdma::mr::DmaRegion, sync::Arc};

/// Local write (RECV and RDMA READ may place data here). `RKDAPL_MEM_LOCAL_WRITE`.
pub(crate) const MEM_LOCAL_WRITE: u32 = 1 << 0;
/// Remote read may be granted through an RMR. `RKDAPL_MEM_REMOTE_READ`.
pub(crate) const MEM_REMOTE_READ: u32 = 1 << 1;
/// Remote write may be granted through an RMR. `RKDAPL_MEM_REMOTE_WRITE`.
pub(crate) const MEM_REMOTE_WRITE: u32 = 1 << 2;
/// All privilege bits.
pub(crate) const MEM_ALL: u32 = MEM_LOCAL_WRITE | MEM_REMOTE_READ | MEM_REMOTE_WRITE;

/// A local memory region.
pub(crate) struct Lmr {
    pub(crate) pz: Arc<Pz>,
    pub(crate) region: DmaRegion,
    pub(crate) privileges: u32,
    /// DTOs and RMR bindings currently using the region.
    pub(crate) inflight: AtomicU32,
}

impl Lmr {
    /// Wraps a mapped region. `privileges` is a mask of `MEM_*`.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for unknown privilege bits or a region mapped for another device.
    pub(crate) fn new(pz: Arc<Pz>, region: DmaRegion, privileges: u32) -> Result<Arc<Lmr>> {
        if privileges & !MEM_ALL != 0 || region.device().as_raw() != pz.ia.dev.as_raw() {
            return Err(EINVAL);
        }
        Ok(Arc::new(
            Lmr {
                pz,
                region,
                privileges,
                inflight: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    /// The lkey local DTOs use for this region.
    pub(crate) fn lkey(&self) -> u32 {
        self.pz.pd.local_dma_lkey()
    }

    /// Whether a DTO or binding still uses the region.
    pub(crate) fn busy(&self) -> bool {
        self.inflight.load(Ordering::Acquire) != 0
    }
}
