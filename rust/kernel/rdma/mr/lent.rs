// SPDX-License-Identifier: GPL-2.0

//! [`DmaRegion`]s over pages that an owner value keeps: zero copy for memory the caller does
//! not own outright, such as a block request's data pages.
//!
//! A block driver holds a request's pages only until it ends the request, which it may do from
//! any context, also while a peer could still reach them through a grant. Handing the region a
//! value that keeps the pages ([`SgOwner`]) and that the region drops only after it unmapped
//! them turns "the pages stay while the device may reach them" into ownership: the request ends
//! when its owner value goes, and that cannot happen before the last user of the region (a
//! work request, an FRWR grant, an LMR) let go of it.

use super::{DataDirection, DmaRegion, Lender};
use crate::{bindings, prelude::*, rdma::bound::Bound};

impl DmaRegion {
    /// Maps the pages `owner`'s scatterlist names for DMA by `dev` in direction `dir`, in
    /// place: the owner's list becomes the region's table, with no copy and no allocation for
    /// it. Keeps `owner` until the region is dropped: after the unmapping ([`DmaRegion`]'s drop
    /// order). The region is the entries one after the other, as for [`DmaRegion::from_sg`].
    /// `dir` is [`DataDirection::ToDevice`] for pages the device only reads (a block write's:
    /// with a bounce buffer, a bidirectional unmapping would copy the buffer back over pages
    /// the CPU may have changed meanwhile). May sleep; [`DmaRegion::from_sg_owner_gfp`] with
    /// `GFP_ATOMIC` does not.
    ///
    /// On an error `owner` is dropped before this returns.
    ///
    /// # Errors
    ///
    /// As [`DmaRegion::from_sg`]: `-EINVAL` for an empty list or an entry without a page or
    /// length, `-ENOMEM`, `-EIO` if the mapping fails; also `-EINVAL` for
    /// [`DataDirection::None`], which is no direction to map in.
    pub fn from_sg_owner(dev: &Bound<'_>, owner: Lender, dir: DataDirection) -> Result<DmaRegion> {
        Self::from_sg_owner_gfp(dev, owner, dir, GFP_KERNEL)
    }

    /// [`DmaRegion::from_sg_owner`], allocating with `flags` (the region's list of DMA
    /// segments when the mapping has more than one, and its entry in the device's binding):
    /// any context with `GFP_ATOMIC`, as `dma_map_sg()` is, for a driver that maps a request's
    /// pages where it may not sleep (blk-mq's `queue_rq` without `BLK_MQ_F_BLOCKING`).
    ///
    /// # Errors
    ///
    /// As [`DmaRegion::from_sg_owner`].
    pub fn from_sg_owner_gfp(
        dev: &Bound<'_>,
        owner: Lender,
        dir: DataDirection,
        flags: crate::alloc::Flags,
    ) -> Result<DmaRegion> {
        let (sgl, nents) = owner.sg();
        // `ib_dma_map_sg` takes the count as an `int`, and `DMA_NONE` is a bug to map with.
        if sgl.is_null() || nents == 0 || nents > i32::MAX as usize || dir == DataDirection::None {
            return Err(EINVAL);
        }
        let (mut sg, mut len) = (sgl, 0usize);
        for _ in 0..nents {
            if sg.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `sg` is one of the first `nents` entries of the owner's list, valid while
            // `owner` lives (`SgOwner`'s contract); only its page, length and link are read.
            unsafe {
                let l = (*sg).length;
                if bindings::sg_page(sg).is_null() || l == 0 {
                    return Err(EINVAL);
                }
                len = len.checked_add(l as usize).ok_or(EINVAL)?;
                sg = bindings::sg_next(sg);
            }
        }
        let table = bindings::sg_table {
            sgl,
            nents: 0,
            orig_nents: nents as u32,
        };
        // INVARIANT: `lender` is the owner whose list `table` is; `nents` is 0 until mapped,
        // so an error below neither unmaps nor frees the list (`Drop`), and drops `owner`.
        let mut region = DmaRegion::unmapped(dev, table, 0, len, Some(owner), dir);
        // SAFETY: `SgOwner`'s contract: the list and its pages stay, and the list is the
        // region's to map, until `owner` is dropped, which the region does only after
        // unmapping it (it keeps `owner` in `lender`, dropped after `Drop::drop`).
        unsafe { region.map(flags) }?;
        Ok(region)
    }
}
