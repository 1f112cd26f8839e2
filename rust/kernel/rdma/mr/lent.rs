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

use super::{DataDirection, DmaRegion};
use crate::{bindings, prelude::*, rdma::device::Device};

/// A value that keeps the pages of a scatterlist allocated for as long as it exists, for
/// [`DmaRegion::from_sg_owner`]. Dropping it is how its pages go back to their user (a block
/// driver's request token ends the request from its drop).
///
/// # Safety
///
/// [`SgOwner::sg`] returns a valid scatterlist (chained or not) of at least the count it
/// returns, whose entries each name a page and a non-zero length, readable during the call to
/// [`DmaRegion::from_sg_owner`]; the pages it names stay allocated, and are not reused for
/// anything else, until the value is dropped.
pub unsafe trait SgOwner: Send + Sync + 'static {
    /// The scatterlist (not DMA-mapped: `sg_set_page` entries) and its number of entries.
    fn sg(&self) -> (*mut bindings::scatterlist, usize);
}

impl DmaRegion {
    /// Maps the pages `owner`'s scatterlist names for DMA by `dev` in direction `dir`, and
    /// keeps `owner` until the region is dropped: after the unmapping ([`DmaRegion`]'s drop
    /// order). The region is the entries one after the other, as for [`DmaRegion::from_sg`];
    /// the owner's list is only read here. `dir` is [`DataDirection::ToDevice`] for pages the
    /// device only reads (a block write's: with a bounce buffer, a bidirectional unmapping
    /// would copy the buffer back over pages the CPU may have changed meanwhile). May sleep.
    ///
    /// On an error `owner` is dropped before this returns.
    ///
    /// # Errors
    ///
    /// As [`DmaRegion::from_sg`]: `-EINVAL` for an empty list or an entry without a page or
    /// length, `-ENOMEM`, `-EIO` if the mapping fails.
    pub fn from_sg_owner(
        dev: &Device,
        owner: KBox<dyn SgOwner>,
        dir: DataDirection,
    ) -> Result<DmaRegion> {
        let (sgl, nents) = owner.sg();
        // SAFETY: `SgOwner`'s contract: the list is valid for this call and its pages stay
        // allocated until `owner` is dropped, which the region does only after unmapping them
        // (it keeps `owner` in `lender`, dropped after `Drop::drop` unmapped the table).
        let mut region = unsafe { DmaRegion::from_sg_dir(dev, sgl, nents, dir) }?;
        region.lender = Some(owner);
        Ok(region)
    }
}
