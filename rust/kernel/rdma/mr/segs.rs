// SPDX-License-Identifier: GPL-2.0

//! The DMA segments of a [`DmaRegion`](super::DmaRegion): where each mapped scatterlist
//! entry sits in the region, and its DMA address.

use crate::prelude::*;

/// One DMA segment of a [`DmaRegion`](super::DmaRegion).
#[derive(Clone, Copy)]
pub(super) struct Seg {
    /// Byte offset of the segment inside the region.
    pub(super) off: u64,
    /// DMA address of the segment's first byte.
    pub(super) dma: u64,
    /// Length in bytes.
    pub(super) len: u32,
}

/// The DMA segments of a [`DmaRegion`](super::DmaRegion): one in place (a physically
/// contiguous buffer, the page of a 4 KiB block request), more in a vector, so that mapping
/// one entry allocates nothing for them.
pub(super) enum Segs {
    One([Seg; 1]),
    Many(KVec<Seg>),
}

impl core::ops::Deref for Segs {
    type Target = [Seg];

    fn deref(&self) -> &[Seg] {
        match self {
            Segs::One(s) => s,
            Segs::Many(v) => v,
        }
    }
}
