// SPDX-License-Identifier: GPL-2.0

//! Local memory regions over memory they own, or whose owner they keep.

use super::{Pz, Segment};
use crate::{
    lmr::{self, MemPrivs},
    rdma::mr::{Lender, SgOwner},
};
use kernel::{page::Page, prelude::*};

/// A local memory region (`rkdapl_lmr_alloc`, DAT's `dat_lmr_create`) over memory it owns:
/// allocated by rkdapl ([`Lmr::alloc`]), or the consumer's kmalloc'd buffer
/// ([`Lmr::from_kvec`]) or pages ([`Lmr::from_pages`]) handed over. The CPU reaches the memory
/// through [`Lmr::write`] and [`Lmr::read`].
///
/// Freed when dropped (`rkdapl_lmr_free`); a DTO or grant still using it keeps it, and its
/// memory, until it finishes, and the last of them frees it, so dropping it early is safe
/// and leaves nothing behind.
///
/// The C API's LMRs over memory the consumer keeps (`rkdapl_lmr_create` of any buffer,
/// `rkdapl_lmr_create_sg`) have a Rust form only with an owner value that keeps the pages
/// ([`Lmr::from_sg_owner`]): an LMR here owns what it maps, or what keeps it, which is what
/// makes it safe; pages cover DAT's physical memory.
pub struct Lmr(pub(super) lmr::Cpu);

impl Lmr {
    /// `len` zeroed bytes (kvmalloc: physically contiguous when it can be) registered in `pz`
    /// with `privileges`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a length of 0 or above [`super::MAX_ALLOC`],
    /// `ENODEV` after device removal, `ENOMEM`, `EIO` if the DMA mapping fails.
    #[inline(never)]
    pub fn alloc(pz: &Pz, len: usize, privileges: impl Into<MemPrivs>) -> Result<Lmr> {
        let pz = &pz.0;
        pz.ia
            .with_binding(|dev| lmr::Lmr::alloc(pz.clone(), dev, len as u64, privileges.into()))
            .map(Lmr)
    }

    /// The LMR over the kmalloc'd buffer `buf` (all of its `len()` bytes), which it owns from
    /// now on (`rkdapl_lmr_create` of a buffer the LMR frees).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty buffer, `ENODEV` after device removal,
    /// `ENOMEM`, `EIO` if the DMA mapping fails.
    #[inline(never)]
    pub fn from_kvec(pz: &Pz, buf: KVec<u8>, privileges: impl Into<MemPrivs>) -> Result<Lmr> {
        let pz = &pz.0;
        pz.ia
            .with_binding(|dev| lmr::Lmr::from_kvec(pz.clone(), dev, buf, privileges.into()))
            .map(Lmr)
    }

    /// The LMR over `len` bytes of `pages`, from `offset` bytes into the first (below
    /// `PAGE_SIZE`), which it owns from now on (`rkdapl_lmr_create_pages`). The pages need not
    /// be contiguous or in low memory; DTOs name the region by offset as usual.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for no pages, an offset of a page or more, a zero length or one beyond the
    /// pages; `ENODEV` after device removal, `ENOMEM`, `EIO` if the DMA
    /// mapping fails.
    #[inline(never)]
    pub fn from_pages(
        pz: &Pz,
        pages: KVec<Page>,
        offset: usize,
        len: usize,
        privileges: impl Into<MemPrivs>,
    ) -> Result<Lmr> {
        let pz = &pz.0;
        pz.ia
            .with_binding(|dev| {
                lmr::Lmr::from_pages(pz.clone(), dev, pages, offset, len, privileges.into())
            })
            .map(Lmr)
    }

    /// The LMR over the pages `owner` keeps, without a copy (`rkdapl_lmr_create_sg`, for memory
    /// the consumer does not own outright: a block request's data pages, say). `owner`'s
    /// scatterlist is mapped in place, not copied ([`SgOwner`]). The LMR keeps
    /// `owner` and drops it only after the pages are unmapped, which is after this LMR was
    /// dropped and every DTO and grant that used it ended: dropping `owner` is how the pages go
    /// back (a block request ends from there), so they cannot go back while the device or a
    /// peer may still reach them. The CPU reaches them through `owner`: [`Lmr::write`] and
    /// [`Lmr::read`] refuse such an LMR.
    ///
    /// Process context; may sleep ([`Lmr::from_sg_owner_gfp`] with `GFP_ATOMIC` does not). On
    /// an error `owner` is dropped before this returns.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty list, an entry without a page or length;
    /// `ENODEV` after device removal, `ENOMEM`, `EIO` if the DMA mapping fails.
    #[inline(never)]
    pub fn from_sg_owner<O: SgOwner>(
        pz: &Pz,
        owner: O,
        privileges: impl Into<MemPrivs>,
    ) -> Result<Lmr> {
        Self::from_sg_owner_gfp(pz, owner, privileges, GFP_KERNEL)
    }

    /// [`Lmr::from_sg_owner`], allocating with `flags`: with `GFP_ATOMIC` any context (no lock
    /// it takes sleeps, and the pages are mapped with `dma_map_sg()`), so a block driver can
    /// register a request's pages in `queue_rq` without `BLK_MQ_F_BLOCKING`. Dropping the LMR
    /// may happen in any context too.
    ///
    /// # Errors
    ///
    /// As [`Lmr::from_sg_owner`].
    #[inline(never)]
    pub fn from_sg_owner_gfp<O: SgOwner>(
        pz: &Pz,
        owner: O,
        privileges: impl Into<MemPrivs>,
        flags: kernel::alloc::Flags,
    ) -> Result<Lmr> {
        let owner = Lender::new(owner, flags)?;
        let pz = &pz.0;
        pz.ia
            .with_binding(|dev| {
                lmr::Lmr::from_sg_owner(pz.clone(), dev, owner, privileges.into(), flags)
            })
            .map(Lmr)
    }

    /// Length in bytes. Any context.
    #[inline(never)]
    pub fn len(&self) -> usize {
        self.0.lmr().len as usize
    }

    /// Whether the LMR is empty (never: it has at least one byte). Any context.
    #[inline(never)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `len` bytes at `off`, as a segment of a DTO (checked when posted). Any context.
    #[inline]
    pub fn segment(&self, off: u64, len: u64) -> Segment<'_> {
        Segment {
            lmr: self.0.lmr(),
            offset: off,
            length: len,
        }
    }

    /// Copies `data` to offset `off` and makes it visible to the device
    /// (`rkdapl_lmr_sync_rdma_read`), for a SEND, an RDMA WRITE source or a peer's READ. Do not
    /// change memory a posted DTO is sending (`&mut`: no other CPU access meanwhile).
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// `ERANGE` if the range leaves the LMR, `ENODEV` after device removal, `EINVAL` for an
    /// LMR over an owner's pages ([`Lmr::from_sg_owner`]).
    #[inline(never)]
    pub fn write(&mut self, off: usize, data: &[u8]) -> Result {
        self.0.write(off as u64, data)
    }

    /// Makes what the device wrote at `off` visible (`rkdapl_lmr_sync_rdma_write`) and copies
    /// it into `out`, after a RECV or RDMA READ completion or a peer's WRITE.
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// `ERANGE` if the range leaves the LMR, `ENODEV` after device removal, `EINVAL` for an
    /// LMR over an owner's pages ([`Lmr::from_sg_owner`]).
    #[inline(never)]
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        self.0.read(off as u64, out)
    }

    /// Makes what the CPU wrote to `[off, off + len)` visible to the device
    /// (`rkdapl_lmr_sync_rdma_read`); [`Lmr::write`] does it for what it copies.
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// `ERANGE` if the range leaves the LMR, `ENODEV` after device removal.
    #[inline(never)]
    pub fn sync_rdma_read(&self, off: u64, len: u64) -> Result {
        self.0.lmr().sync_rdma_read(off, len)
    }

    /// Makes what the device wrote to `[off, off + len)` visible to the CPU
    /// (`rkdapl_lmr_sync_rdma_write`); [`Lmr::read`] does it for what it copies.
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// `ERANGE` if the range leaves the LMR, `ENODEV` after device removal.
    #[inline(never)]
    pub fn sync_rdma_write(&self, off: u64, len: u64) -> Result {
        self.0.lmr().sync_rdma_write(off, len)
    }
}

impl Drop for Lmr {
    /// `rkdapl_lmr_free`; a busy LMR is freed when its last DTO or grant finishes. Process
    /// context.
    #[inline(never)]
    fn drop(&mut self) {
        self.0.lmr().free_when_unused();
    }
}
