// SPDX-License-Identifier: GPL-2.0

//! The direction of a [`super::DmaRegion`]'s DMA mapping.

use crate::bindings;

/// Which way the device moves a [`super::DmaRegion`]'s data (`enum dma_data_direction`): the
/// mapping's direction, which the DMA API's bounce buffers (swiotlb) and IOMMUs honour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataDirection {
    /// The device reads and writes it (`DMA_BIDIRECTIONAL`).
    Bidirectional,
    /// The device only reads it (`DMA_TO_DEVICE`): a bounce buffer is never copied back over
    /// the memory, and an IOMMU refuses the device's writes.
    ToDevice,
    /// The device only writes it (`DMA_FROM_DEVICE`).
    FromDevice,
}

impl DataDirection {
    pub(super) fn as_raw(self) -> bindings::dma_data_direction {
        match self {
            Self::Bidirectional => bindings::dma_data_direction::DMA_BIDIRECTIONAL,
            Self::ToDevice => bindings::dma_data_direction::DMA_TO_DEVICE,
            Self::FromDevice => bindings::dma_data_direction::DMA_FROM_DEVICE,
        }
    }
}
