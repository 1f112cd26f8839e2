// SPDX-License-Identifier: GPL-2.0

//! LMR: local memory region (DAT 2.0 section 6.7), kernel memory mapped for the device and
//! reachable by local DTOs with the PZ's local DMA lkey: the consumer's buffer (kmalloc'd or
//! vmalloc'd), an array of its pages, a scatterlist it built, or a buffer rkdapl allocates
//! and frees with the LMR.

use crate::{
    pz::Pz,
    registry::{Child, Rank},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, rdma::mr::DmaRegion, revocable::Revocable, sync::Arc};

/// Local write (RECV and RDMA READ may place data here). `RKDAPL_MEM_LOCAL_WRITE`.
pub(crate) const MEM_LOCAL_WRITE: u32 = 1 << 0;
/// Remote read may be granted through an RMR. `RKDAPL_MEM_REMOTE_READ`.
pub(crate) const MEM_REMOTE_READ: u32 = 1 << 1;
/// Remote write may be granted through an RMR. `RKDAPL_MEM_REMOTE_WRITE`.
pub(crate) const MEM_REMOTE_WRITE: u32 = 1 << 2;
/// All privilege bits.
pub(crate) const MEM_ALL: u32 = MEM_LOCAL_WRITE | MEM_REMOTE_READ | MEM_REMOTE_WRITE;

/// A local memory region.
///
/// The region (the DMA mapping) is revocable: device removal unmaps it after every EP of the
/// device has been drained, and later uses get `-ENODEV`. Registered with its IA from its
/// creation to [`Lmr::free`].
///
/// Dropping it (fields in declaration order) unmaps the region, frees rkdapl's buffer, then
/// lets go of the PZ. No lock is taken: the last reference may go where a DTO's does.
///
/// # Invariants
///
/// If `cpu_addr` is `Some(a)`, the `len` bytes from kernel virtual address `a` are the memory
/// `region` maps, readable for as long as the LMR exists.
#[pin_data]
pub(crate) struct Lmr {
    /// In an `Arc` so that an RMR bind can keep it for `FrMr::map`, which allocates and so
    /// cannot run in the RCU read section `try_access` opens (the bind holds the IA live, so
    /// device removal does not revoke it meanwhile).
    #[pin]
    pub(crate) region: Revocable<Arc<DmaRegion>>,
    /// `rkdapl_lmr_alloc`: the memory rkdapl allocated, freed after the region is unmapped
    /// (fields drop in declaration order).
    buf: Option<KVVec<u8>>,
    /// The region's length in bytes.
    pub(crate) len: u64,
    /// The kernel virtual address of the region's first byte when the region is virtually
    /// contiguous (a kmalloc'd or vmalloc'd buffer, or rkdapl's own): what inline work requests
    /// name, since the CPU copies inline data at post time. `None` for page arrays and
    /// scatterlists.
    pub(crate) cpu_addr: Option<usize>,
    pub(crate) privileges: u32,
    /// DTOs and RMR bindings currently using the region.
    pub(crate) inflight: AtomicU32,
    pub(crate) pz: Arc<Pz>,
}

impl Lmr {
    /// Wraps a mapped region (`privileges`: a mask of `MEM_*`); with `buf`, the memory it
    /// maps, which the LMR owns and frees after unmapping it. Registers the LMR with its IA;
    /// the caller holds the IA live ([`crate::ia::Ia::live`]). May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for unknown privilege bits or a region mapped for another device, `-ENOMEM`,
    /// or the registry's error (`-ENODEV` after device removal).
    pub(crate) fn with_buffer(
        pz: Arc<Pz>,
        region: DmaRegion,
        privileges: u32,
        buf: Option<KVVec<u8>>,
    ) -> Result<Arc<Lmr>> {
        if privileges & !MEM_ALL != 0 || !pz.ia.same_device(region.device()) {
            return Err(EINVAL);
        }
        let len = region.len() as u64;
        // INVARIANT: A region with a kernel address was made from a virtually contiguous buffer
        // (`DmaRegion::new`), whose memory stays allocated while the region exists (its
        // constructor's contract), and the LMR owns the region.
        let cpu_addr = (region.addr() != 0).then(|| region.addr());
        let region = Arc::new(region, GFP_KERNEL)?;
        let lmr = Arc::pin_init(
            pin_init!(Lmr {
                pz,
                region <- Revocable::new(region),
                buf,
                len,
                cpu_addr,
                privileges,
                inflight: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )?;
        lmr.pz.ia.children.add(lmr.clone(), None)?;
        Ok(lmr)
    }

    /// `rkdapl_lmr_free`: the consumer lets go of the LMR; it leaves its IA's registry, and the
    /// region is unmapped when the last reference goes. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EBUSY` while a DTO or an RMR binding uses the region (nothing changes).
    pub(crate) fn free(&self) -> Result {
        if self.busy() {
            return Err(EBUSY);
        }
        self.pz.ia.children.remove(self);
        Ok(())
    }

    /// The lkey local DTOs use for this region.
    pub(crate) fn lkey(&self) -> u32 {
        self.pz.lkey
    }

    /// Device removal: unmaps the region (waits for users in RCU read sections). Process
    /// context; sleeps.
    pub(crate) fn revoke(&self) {
        self.region.revoke();
    }

    /// Whether a DTO or binding still uses the region.
    pub(crate) fn busy(&self) -> bool {
        self.inflight.load(Ordering::Acquire) != 0
    }
}

impl Child for Lmr {
    fn rank(&self) -> Rank {
        Rank::Lmr
    }

    fn revoke(&self) {
        Lmr::revoke(self)
    }

    /// After [`Child::revoke`] (the region is unmapped), busy or not.
    fn release(&self) {
        self.pz.ia.children.remove(self);
    }

    fn parent(&self) -> Option<Arc<dyn Child>> {
        Some(self.pz.clone())
    }
}
