// SPDX-License-Identifier: GPL-2.0

//! [`DmaRegion`]s that own the memory they map, and the CPU's access to that memory.
//!
//! The memory (a vector of bytes or of pages) is shared by the region, which keeps it until
//! after it unmapped it, and by one [`CpuAccess`], which keeps it for as long as the CPU may
//! copy in or out: the memory is freed when both are gone, so dropping the region (for example
//! when a device goes away) leaves the CPU's copies valid.

use super::DmaRegion;
use crate::{
    page::{Page, PAGE_SIZE},
    prelude::*,
    rdma::bound::Bound,
    sync::Arc,
};
use core::ptr::NonNull;

/// A vector of bytes a region owns (only dropped: the bytes are reached through `at`).
enum Bytes {
    /// kmalloc'd.
    Kmalloc { _vec: KVec<u8> },
    /// kvmalloc'd (kmalloc'd or vmalloc'd).
    KVmalloc { _vec: KVVec<u8> },
}

/// Where the bytes of a [`Backing`] are.
enum Memory {
    /// The initialized elements of a vector of bytes, from `at`.
    Bytes {
        /// The first byte, from the vector's `as_mut_ptr` (its heap buffer, which does not
        /// move when the vector does).
        at: NonNull<u8>,
        /// The vector; only dropped.
        _vec: Bytes,
    },
    /// Pages, with the memory starting `offset` bytes into the first.
    Pages { pages: KVec<Page>, offset: usize },
}

/// The memory a region owns.
///
/// # Invariants
///
/// The memory is `len > 0` bytes: for [`Memory::Bytes`], `len` bytes from `at`, inside the
/// vector's initialized elements; for [`Memory::Pages`], `len` bytes from `offset` into the
/// first page (`offset < PAGE_SIZE`), inside the pages. It is owned by this value and read or
/// written by the CPU only through the one [`CpuAccess`] that shares it.
pub(super) struct Backing {
    mem: Memory,
    len: usize,
}

// SAFETY: `at` points into the heap buffer of the vector `Backing` owns, which may be used and
// freed from any thread; the memory is reached only through `CpuAccess` (type invariant), whose
// rules hold on any thread.
unsafe impl Send for Backing {}
// SAFETY: `&Backing` gives no access to the memory by itself (see the `Send` impl).
unsafe impl Sync for Backing {}

/// The CPU's access to the memory a [`DmaRegion`] owns: copies in and out with bounds checks.
///
/// Made together with the region ([`DmaRegion::from_kvec`], [`DmaRegion::from_kvvec`],
/// [`DmaRegion::from_owned_pages`]); it keeps the memory allocated, also after the region is
/// dropped (the memory is then no longer mapped, and the copies still work).
///
/// The DMA rules are the region's (see the module [`super`]): call
/// [`DmaRegion::sync_for_device`] after [`CpuAccess::write`], [`DmaRegion::sync_for_cpu`]
/// before [`CpuAccess::read`], while the region exists. What the device does with the memory
/// meanwhile is outside the CPU's memory model, as for [`crate::dma`]: do not change bytes a
/// posted work request is sending.
///
/// # Invariants
///
/// This is the only `CpuAccess` of `mem`, and the only way the CPU reaches it from Rust: a
/// write needs `&mut self`, so no other CPU access of the memory runs at the same time.
pub struct CpuAccess {
    mem: Arc<Backing>,
}

impl CpuAccess {
    /// Length of the memory in bytes (the region's length).
    pub fn len(&self) -> usize {
        self.mem.len
    }

    /// Whether the memory is empty (never: the constructors refuse a zero length).
    pub fn is_empty(&self) -> bool {
        self.mem.len == 0
    }

    /// `[off, off + len)` if it lies inside the memory.
    fn range(&self, off: usize, len: usize) -> Result<usize> {
        let end = off.checked_add(len).ok_or(ERANGE)?;
        if end > self.mem.len {
            return Err(ERANGE);
        }
        Ok(end)
    }

    /// Copies `data` into the memory at byte `off`. Then call [`DmaRegion::sync_for_device`]
    /// on the region (if it still exists) before the device reads it. Any context (maps pages
    /// with `kmap_local_page`); allocates nothing.
    ///
    /// # Errors
    ///
    /// `ERANGE` if `[off, off + data.len())` leaves the memory (nothing is copied).
    pub fn write(&mut self, off: usize, data: &[u8]) -> Result {
        self.range(off, data.len())?;
        match &self.mem.mem {
            Memory::Bytes { at, .. } => {
                // SAFETY: `[off, off + data.len())` lies inside the `len` bytes from `at`
                // (checked above, type invariant of `Backing`), which the vector owns and
                // `self.mem` keeps; no other CPU access runs now (`&mut self`, type invariant);
                // `data` is another allocation, so the two do not overlap.
                unsafe {
                    core::ptr::copy_nonoverlapping(data.as_ptr(), at.as_ptr().add(off), data.len())
                }
            }
            Memory::Pages { pages, offset } => {
                for_pages(pages, offset + off, data.len(), |page, at, done, n| {
                    // SAFETY: `data[done..done + n]` is readable (`for_pages` stays within
                    // the `data.len()` bytes); no other CPU access of the page runs now (as
                    // above). The device's accesses are DMA, outside the CPU's memory model.
                    unsafe { page.write_raw(data[done..].as_ptr(), at, n) }
                })?
            }
        }
        Ok(())
    }

    /// Copies the memory at byte `off` into `out`. Call [`DmaRegion::sync_for_cpu`] on the
    /// region (if it still exists) first, after the device wrote it. Any context (maps pages
    /// with `kmap_local_page`); allocates nothing.
    ///
    /// # Errors
    ///
    /// `ERANGE` if `[off, off + out.len())` leaves the memory (nothing is copied).
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        self.range(off, out.len())?;
        match &self.mem.mem {
            Memory::Bytes { at, .. } => {
                // SAFETY: As in `write`: inside the owned bytes; CPU writes need `&mut self`, so
                // none runs now; `out` is another allocation (a `&mut` borrow).
                unsafe {
                    core::ptr::copy_nonoverlapping(
                        at.as_ptr().add(off).cast_const(),
                        out.as_mut_ptr(),
                        out.len(),
                    )
                }
            }
            Memory::Pages { pages, offset } => {
                for_pages(pages, offset + off, out.len(), |page, at, done, n| {
                    // SAFETY: `out[done..done + n]` is writable (`for_pages` stays within the
                    // `out.len()` bytes); CPU writes of the page need `&mut self`, so none
                    // runs now.
                    unsafe { page.read_raw(out[done..].as_mut_ptr(), at, n) }
                })?
            }
        }
        Ok(())
    }
}

/// Calls `f(page, offset in page, bytes done, bytes)` for each piece of the `len` bytes at byte
/// `start` of the pages `pages`, in order.
///
/// # Errors
///
/// `ERANGE` if the bytes leave the pages, or `f`'s error.
fn for_pages(
    pages: &[Page],
    start: usize,
    len: usize,
    mut f: impl FnMut(&Page, usize, usize, usize) -> Result,
) -> Result {
    let mut done = 0;
    while done < len {
        let at = start + done;
        let page = pages.get(at / PAGE_SIZE).ok_or(ERANGE)?;
        let n = (PAGE_SIZE - at % PAGE_SIZE).min(len - done);
        f(page, at % PAGE_SIZE, done, n)?;
        done += n;
    }
    Ok(())
}

impl DmaRegion {
    /// Maps all `buf.len()` bytes of the kmalloc'd `buf` for DMA by `dev`; the region owns
    /// `buf` from now on and frees it after unmapping it (see [`DmaRegion`]'s drop order),
    /// unless the returned [`CpuAccess`], the CPU's way to the bytes, still exists then.
    ///
    /// Process context; may sleep (allocates with `GFP_KERNEL`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty buffer, `ENOMEM`, `EIO` if the mapping fails; `buf` is freed.
    pub fn from_kvec(dev: &Bound<'_>, mut buf: KVec<u8>) -> Result<(DmaRegion, CpuAccess)> {
        let (at, len) = (buf.as_mut_ptr(), buf.len());
        Self::owning_bytes(dev, Bytes::Kmalloc { _vec: buf }, at, len)
    }

    /// Maps all `buf.len()` bytes of the kvmalloc'd `buf` (kmalloc'd or vmalloc'd) for DMA by
    /// `dev`, which the region owns from now on; as [`DmaRegion::from_kvec`].
    ///
    /// Process context; may sleep (allocates with `GFP_KERNEL`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for an empty buffer, `ENOMEM`, `EIO` if the mapping fails; `buf` is freed.
    pub fn from_kvvec(dev: &Bound<'_>, mut buf: KVVec<u8>) -> Result<(DmaRegion, CpuAccess)> {
        let (at, len) = (buf.as_mut_ptr(), buf.len());
        Self::owning_bytes(dev, Bytes::KVmalloc { _vec: buf }, at, len)
    }

    /// Maps the `len` bytes at `at`, the initialized elements of `vec`, and gives the region
    /// and the CPU access shares of `vec`.
    fn owning_bytes(
        dev: &Bound<'_>,
        vec: Bytes,
        at: *mut u8,
        len: usize,
    ) -> Result<(DmaRegion, CpuAccess)> {
        if len == 0 {
            return Err(EINVAL);
        }
        let at = NonNull::new(at).ok_or(EINVAL)?;
        // INVARIANT: `at` and `len` are the vector's first byte and length; the vector is
        // moved in, its heap buffer stays where it is.
        let mem = Arc::new(
            Backing {
                mem: Memory::Bytes { at, _vec: vec },
                len,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: `mem` owns the `len` bytes at `at` and the region made here keeps a share of
        // it (`_owned`), dropped only after the unmapping (`DmaRegion`'s drop order); until then
        // the local `mem` keeps it.
        let mut region = unsafe { Self::new(dev, at.as_ptr() as usize, len) }?;
        region._owned = Some(mem.clone());
        // INVARIANT: The only `CpuAccess` of `mem`; the region never touches the memory from
        // the CPU.
        Ok((region, CpuAccess { mem }))
    }

    /// Maps `len` bytes of `pages`, from `offset` bytes into the first (`offset < PAGE_SIZE`),
    /// for DMA by `dev`; the region owns the pages from now on and frees them after unmapping
    /// them, unless the returned [`CpuAccess`] still exists then. The pages need not be
    /// contiguous or in low memory; the region has no kernel address ([`DmaRegion::addr`] is
    /// 0).
    ///
    /// Process context; may sleep (allocates with `GFP_KERNEL`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for no pages, an offset of a page or more, a zero length or one beyond the
    /// pages, `ENOMEM`, `EIO` if the mapping fails; the pages are freed.
    pub fn from_owned_pages(
        dev: &Bound<'_>,
        pages: KVec<Page>,
        offset: usize,
        len: usize,
    ) -> Result<(DmaRegion, CpuAccess)> {
        let cap = pages.len().checked_mul(PAGE_SIZE).ok_or(EINVAL)?;
        if pages.is_empty() || offset >= PAGE_SIZE || len == 0 || len > cap - offset {
            return Err(EINVAL);
        }
        let mut raw = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for p in pages.iter() {
            raw.push(p.as_ptr(), GFP_KERNEL)?;
        }
        // INVARIANT: `len` bytes from `offset < PAGE_SIZE` into the first page lie inside the
        // pages (checked above).
        let mem = Arc::new(
            Backing {
                mem: Memory::Pages { pages, offset },
                len,
            },
            GFP_KERNEL,
        )?;
        // SAFETY: `raw` names the pages `mem` owns; the region made here keeps a share of
        // `mem` (`_owned`), dropped only after the unmapping; until then the local `mem` keeps
        // it.
        let mut region = unsafe { Self::from_pages(dev, &raw, offset, len) }?;
        region._owned = Some(mem.clone());
        // INVARIANT: As in `owning_bytes`.
        Ok((region, CpuAccess { mem }))
    }
}
