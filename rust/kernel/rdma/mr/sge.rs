// SPDX-License-Identifier: GPL-2.0

//! Scatter/gather elements over a [`DmaRegion`], for the work requests of [`crate::rdma::wr`].

use super::DmaRegion;
use crate::{bindings, prelude::*};
use core::marker::PhantomData;

/// A scatter/gather element (`struct ib_sge`): `length` bytes at `addr` under `lkey`, borrowing
/// the memory it names for `'a`.
///
/// Only [`super::mr::DmaRegion`] makes them: a DMA address range of the region, or for an
/// inline work request its kernel virtual address range.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Sge<'a>(bindings::ib_sge, PhantomData<&'a [u8]>);

impl<'a> Sge<'a> {
    /// Only for [`super::mr::DmaRegion`], whose borrow `'a` keeps the memory mapped (DMA
    /// address) or allocated (kernel virtual address of an inline SGE).
    pub(crate) fn new(addr: u64, length: u32, lkey: u32) -> Sge<'a> {
        Sge(bindings::ib_sge { addr, length, lkey }, PhantomData)
    }

    /// An SGE of no bytes, naming no memory: the one SGE of a zero-length RDMA READ, where a
    /// device (siw) wants exactly one.
    pub fn empty() -> Sge<'static> {
        Sge(bindings::ib_sge::default(), PhantomData)
    }

    /// The address of the first byte (a DMA address, or a kernel virtual address for inline
    /// data).
    pub fn addr(&self) -> u64 {
        self.0.addr
    }

    /// Length in bytes.
    pub fn length(&self) -> u32 {
        self.0.length
    }

    /// The local key the device checks the access against.
    pub fn lkey(&self) -> u32 {
        self.0.lkey
    }

    pub(crate) fn slice_as_raw(s: &[Sge<'a>]) -> *mut bindings::ib_sge {
        // `Sge` is transparent over `ib_sge`; ib_core only reads the array.
        s.as_ptr().cast::<bindings::ib_sge>().cast_mut()
    }
}

impl DmaRegion {
    /// Calls `f` with each SGE (with `lkey`) that covers `[off, off + len)` of the region, in
    /// order, and returns how many there were. `len` may be zero (no SGE). Stops at the first
    /// error of `f`. Any context (`f` permitting); allocates nothing.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the region, or the error of `f`.
    pub fn for_each_sge<'a>(
        &'a self,
        off: u64,
        len: u64,
        lkey: u32,
        mut f: impl FnMut(Sge<'a>) -> Result,
    ) -> Result<usize> {
        let end = off.checked_add(len).ok_or(ERANGE)?;
        if end > self.len as u64 {
            return Err(ERANGE);
        }
        let mut n = 0;
        if len == 0 {
            return Ok(0);
        }
        let mut i = self.seg_index(off);
        let mut pos = off;
        while pos < end {
            let s = self.segs.get(i).ok_or(ERANGE)?;
            let inner = pos - s.off;
            let take = (u64::from(s.len) - inner).min(end - pos);
            // The SGE borrows `self`: the mapping outlives it.
            f(Sge::new(s.dma + inner, take as u32, lkey))?;
            n += 1;
            pos += take;
            i += 1;
        }
        Ok(n)
    }

    /// Appends to `out` the SGEs of `[off, off + len)` (see [`Self::for_each_sge`]). `out`
    /// grows with `flags` (`GFP_ATOMIC` where the caller cannot sleep).
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the region, `-ENOMEM` if `out` cannot grow.
    pub fn sges<'a>(
        &'a self,
        off: u64,
        len: u64,
        lkey: u32,
        out: &mut KVec<Sge<'a>>,
        flags: crate::alloc::Flags,
    ) -> Result<usize> {
        self.for_each_sge(off, len, lkey, |sge| Ok(out.push(sge, flags)?))
    }

    /// The SGE of an inline work request ([`super::qp::SendFlags::INLINE`]) over
    /// `[off, off + len)`: the kernel virtual address, which the driver reads during the post
    /// call, with `lkey` (ignored for inline data). Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a region without a kernel virtual address (made from pages or a
    /// scatterlist), `-ERANGE` if the range leaves the region or `len` exceeds `u32::MAX`.
    pub fn inline_sge(&self, off: u64, len: u64, lkey: u32) -> Result<Sge<'_>> {
        if self.addr == 0 {
            return Err(EINVAL);
        }
        let end = off.checked_add(len).ok_or(ERANGE)?;
        if end > self.len as u64 {
            return Err(ERANGE);
        }
        let len = u32::try_from(len).map_err(|_| ERANGE)?;
        // The memory stays allocated while the region exists (`DmaRegion::new`'s contract),
        // and the SGE borrows the region.
        Ok(Sge::new((self.addr as u64).wrapping_add(off), len, lkey))
    }
}
