// SPDX-License-Identifier: GPL-2.0

//! Fast registration memory regions (FRWR): an MR whose page list is mapped over part of a
//! [`DmaRegion`] and made valid by an `IB_WR_REG_MR` work request.

use super::{DmaRegion, Sge, PAGE_SIZE};
use crate::{
    bindings,
    error::from_err_ptr,
    prelude::*,
    rdma::{
        bound::{BoundDevice, Rank, Release, Slot},
        pd::Pd,
        Access, AccessFlag,
    },
    sync::{rcu, Arc},
};
use core::ptr::NonNull;

/// The `ib_mr` of an [`FrMr`], shared with the context of a REG_MR work request in flight
/// ([`super::wr::WrPool::post_reg_mr`]), so that it is deregistered only after both let go (or
/// when the device's removal revokes it).
///
/// # Invariants
///
/// `ptr` was returned by `ib_alloc_mr` in `pd` and is the MR `slot` holds, live while the slot
/// has not been revoked.
pub struct MrRef {
    ptr: NonNull<bindings::ib_mr>,
    slot: Arc<Slot<MrRes>>,
    _pd: Arc<Pd>,
}

/// The MR as its device's binding tracks it.
///
/// # Invariants
///
/// `ptr` is a live MR.
struct MrRes {
    ptr: NonNull<bindings::ib_mr>,
}

// SAFETY: MR verbs may be called from any thread.
unsafe impl Send for MrRes {}

impl Release for MrRes {
    const RANK: Rank = Rank::Mr;

    fn release(self) {
        // SAFETY: `ptr` is a live MR (type invariant); no work request uses it any more: a
        // REG_MR in flight holds a reference until its completion, and revocation releases
        // the QPs first.
        unsafe { bindings::ib_dereg_mr(self.ptr.as_ptr()) };
    }
}

// SAFETY: The MR's fields are only changed through `&mut FrMr` (its only mapper); verbs are
// thread-safe.
unsafe impl Send for MrRef {}
// SAFETY: `&MrRef` only reads.
unsafe impl Sync for MrRef {}

impl Drop for MrRef {
    fn drop(&mut self) {
        // Deregisters the MR unless its device's removal did; the PD goes after this.
        Slot::release_now(&self.slot);
    }
}

/// Scatterlist entries [`FrMr::map_gfp`] keeps on the stack (at most 32 bytes each on
/// x86_64); a span of more is allocated.
const SGL_ON_STACK: usize = 4;

/// A fast registration memory region (FRWR, `IB_MR_TYPE_MEM_REG`).
///
/// # Invariants
///
/// `mr` is an MR of type `IB_MR_TYPE_MEM_REG` able to hold `max_pages` pages; only this
/// `FrMr` changes it (through `&mut self`). `keys` are its lkey, rkey, I/O virtual address
/// and length as the last [`FrMr::map`] left them (read then, so that they stay readable
/// after the device's removal revoked the MR).
pub struct FrMr {
    mr: Arc<MrRef>,
    max_pages: u32,
    keys: MrKeys,
    /// The page sizes the device can register (`page_size_cap`).
    page_size_cap: u64,
}

/// What the last mapping of an FRWR MR made of it (read then, so that it stays readable after
/// the MR was deregistered).
#[derive(Clone, Copy, Default)]
pub(super) struct MrKeys {
    pub(super) lkey: u32,
    pub(super) rkey: u32,
    pub(super) iova: u64,
    pub(super) length: u64,
}

impl MrKeys {
    /// The keys of the MR `mr`.
    ///
    /// # Safety
    ///
    /// `mr` is a live MR.
    pub(super) unsafe fn of(mr: *mut bindings::ib_mr) -> MrKeys {
        // SAFETY: The caller guarantees `mr`.
        unsafe {
            MrKeys {
                lkey: (*mr).lkey,
                rkey: (*mr).rkey,
                iova: (*mr).iova,
                length: (*mr).length,
            }
        }
    }
}

impl FrMr {
    /// Allocates an FRWR MR in `pd` able to hold `max_pages` pages (at most the device's
    /// `max_fast_reg_page_list_len`). May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a page count the device refuses, `-ENODEV` once the PD's device was
    /// removed, `-ENOMEM`, or the driver's error.
    pub fn new(pd: &Arc<Pd>, max_pages: u32) -> Result<FrMr> {
        let dev = BoundDevice::access(pd.binding())?;
        // SAFETY: `pd` is a live PD: the token holds its device bound.
        let ptr = from_err_ptr(unsafe {
            bindings::ib_alloc_mr(
                pd.as_raw(),
                bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
                max_pages,
            )
        })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // SAFETY: `ptr` is the live MR just allocated.
        let keys = unsafe { MrKeys::of(ptr.as_ptr()) };
        let slot = BoundDevice::track(dev.binding(), MrRes { ptr })?;
        let mr = MrRef {
            ptr,
            slot,
            _pd: pd.clone(),
        };
        Ok(FrMr {
            mr: Arc::new(mr, GFP_KERNEL)?,
            max_pages,
            keys,
            page_size_cap: dev.attrs().page_size_cap,
        })
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_mr {
        self.mr.ptr.as_ptr()
    }

    /// The shared `ib_mr`, for a REG_MR work request to hold.
    pub(crate) fn shared(&self) -> &Arc<MrRef> {
        &self.mr
    }

    /// The MR's current lkey.
    pub fn lkey(&self) -> u32 {
        self.keys.lkey
    }

    /// The MR's current rkey, the key a peer names in RDMA READ/WRITE.
    pub fn rkey(&self) -> u32 {
        self.keys.rkey
    }

    /// The I/O virtual address of the mapped range's first byte (what a peer names).
    pub fn iova(&self) -> u64 {
        self.keys.iova
    }

    /// Length of the mapped range in bytes.
    pub fn length(&self) -> u64 {
        self.keys.length
    }

    /// Maps `[off, off + len)` of `region` into the MR's page list and gives the MR a fresh
    /// key (the low 8 bits of lkey/rkey advance), so rkeys of earlier registrations of this MR
    /// stop working once this one is posted. The registration takes effect when an
    /// `IB_WR_REG_MR` for it completes.
    ///
    /// Process context (allocates the scatterlist of a span of more than a few entries with
    /// `GFP_KERNEL`); the MR must not be registered (valid) at the time.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an empty or out-of-range span or a region of another device, `-E2BIG` if
    /// the span needs more pages than the MR holds, `-ENODEV` once the MR's device was
    /// removed, or the driver's error.
    pub fn map(&mut self, region: &DmaRegion, off: u64, len: u64) -> Result {
        self.map_gfp(region, off, len, GFP_KERNEL)
    }

    /// [`FrMr::map`], allocating the span's scatterlist with `gfp` if it has more than a few
    /// entries: any context with `GFP_ATOMIC` (the driver's `map_mr_sg` allocates nothing).
    ///
    /// # Errors
    ///
    /// As [`FrMr::map`], and `-ENOMEM`.
    pub fn map_gfp(
        &mut self,
        region: &DmaRegion,
        off: u64,
        len: u64,
        gfp: crate::alloc::Flags,
    ) -> Result {
        if !core::ptr::eq(
            Arc::as_ptr(region.binding()),
            Arc::as_ptr(self.mr.slot.bound()),
        ) {
            return Err(EINVAL);
        }
        let slot = &self.mr.slot;
        // SAFETY: `mr` is an FRWR MR of the region's device (checked above) holding
        // `max_pages` pages, changed only through `&mut self` (type invariant), and live while
        // its device is bound, which `live` checks.
        unsafe {
            region.map_mr(
                self.mr.ptr.as_ptr(),
                MapLimits {
                    max_pages: self.max_pages,
                    page_size_cap: self.page_size_cap,
                    gfp,
                },
                off,
                len,
                |rcu| slot.bound().live(rcu),
                &mut self.keys,
            )
        }
    }

    /// The SGE of the whole mapped range under the MR's lkey (its I/O virtual address and
    /// length): the sink of an RDMA READ into the MR ([`super::wr::WrPool::post_read_to_mr`]).
    /// Valid for the device once a REG_MR of the current mapping has been executed.
    pub fn sge(&self) -> Sge<'_> {
        Sge::new(self.iova(), self.length() as u32, self.lkey())
    }

    /// The access rights the MR would be registered with for `access` (REMOTE_WRITE and
    /// REMOTE_ATOMIC need LOCAL_WRITE too, IB spec 10.6.3.2).
    pub fn reg_access(access: Access) -> Access {
        if access.contains_any(AccessFlag::RemoteWrite | AccessFlag::RemoteAtomic) {
            access | AccessFlag::LocalWrite
        } else {
            access
        }
    }
}

/// How [`DmaRegion::map_mr`] maps: into a page list of at most `max_pages` pages of the sizes
/// in `page_size_cap`, allocating a long span's scatterlist with `gfp`.
#[derive(Clone, Copy)]
pub(super) struct MapLimits {
    pub(super) max_pages: u32,
    pub(super) page_size_cap: u64,
    pub(super) gfp: crate::alloc::Flags,
}

impl DmaRegion {
    /// Maps `[off, off + len)` of the region into the page list of `mr` and gives the MR a
    /// fresh key (the low 8 bits of lkey/rkey advance), writing the MR's keys to `keys` once
    /// the driver has mapped: [`FrMr::map_gfp`], for the layer's MRs (`ib_mr_pool_get` ones
    /// too). Any context with `GFP_ATOMIC` in `lim` (the span's scatterlist is allocated with
    /// it if it has more than a few entries).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an empty or out-of-range span, `-E2BIG` if the span needs more pages than
    /// `lim` allows, `-ENODEV` if `live` says the MR is gone, `-ENOMEM`, or the driver's error.
    ///
    /// # Safety
    ///
    /// `mr` is an MR of type `IB_MR_TYPE_MEM_REG` of the region's device able to hold
    /// `lim.max_pages` pages, which nothing else changes or registers meanwhile; it is live
    /// during the RCU read-side critical section passed to `live` if `live` returns true.
    pub(super) unsafe fn map_mr(
        &self,
        mr: *mut bindings::ib_mr,
        lim: MapLimits,
        off: u64,
        len: u64,
        live: impl FnOnce(&rcu::Guard) -> bool,
        keys: &mut MrKeys,
    ) -> Result {
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if len == 0 || end > self.len as u64 {
            return Err(EINVAL);
        }
        let page_size = self
            .page_size_for(off, len, lim.page_size_cap, u64::from(lim.max_pages))
            .ok_or(E2BIG)?;
        let first = self.seg_index(off);
        let last = self.seg_index(end - 1);
        let nents = last - first + 1;
        // A scatterlist of exactly the span: `ib_map_mr_sg` maps whole entries, and an entry of
        // the region may reach far beyond the span (physically contiguous pages are merged).
        // On the stack for a span of a few entries (a contiguous buffer's is one), which the
        // data path binds per I/O; allocated for a longer one.
        let mut stack: [bindings::scatterlist; SGL_ON_STACK] =
            core::array::from_fn(|_| bindings::scatterlist::default());
        let mut heap;
        let sgl: &mut [bindings::scatterlist] = if nents <= SGL_ON_STACK {
            &mut stack[..nents]
        } else {
            heap = KVec::with_capacity(nents, lim.gfp)?;
            for _ in 0..nents {
                heap.push(bindings::scatterlist::default(), lim.gfp)?;
            }
            &mut heap[..]
        };
        // SAFETY: `sgl` holds `nents` entries; `sg_init_table` zeroes them and marks the end.
        unsafe { bindings::sg_init_table(sgl.as_mut_ptr(), nents as u32) };
        let segs = self.segs.get(first..=last).ok_or(EINVAL)?;
        for (sg, s) in sgl.iter_mut().zip(segs) {
            let start = s.off.max(off);
            let stop = (s.off + u64::from(s.len)).min(end);
            // SAFETY: `sg` is an initialized entry of `sgl`.
            unsafe { bindings::sg_set_dma(sg, s.dma + (start - s.off), (stop - start) as u32) };
        }
        let rcu = rcu::read_lock();
        if !live(&rcu) {
            return Err(ENODEV);
        }
        // SAFETY: `mr` is a live MR during the RCU section `rcu` (checked above, the caller's
        // promise); `sgl` describes DMA addresses mapped on the MR's device (invariant of
        // `DmaRegion`, and the caller's promise) and is only read during the call.
        let (n, new_keys) = unsafe {
            let key = bindings::ib_inc_rkey((*mr).rkey) as u8;
            bindings::ib_update_fast_reg_key(mr, key);
            let n = bindings::ib_map_mr_sg(
                mr,
                sgl.as_mut_ptr(),
                nents as i32,
                core::ptr::null_mut(),
                page_size as u32,
            );
            (n, MrKeys::of(mr))
        };
        drop(rcu);
        *keys = new_keys;
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        if n != nents as i32 {
            return Err(E2BIG);
        }
        Ok(())
    }

    /// The page size for a page list of at most `max_pages` entries describing
    /// `[off, off + len)`: the smallest power of two (at least `PAGE_SIZE`, allowed by the
    /// device's `cap`) to which every inner segment boundary is aligned and that needs no more
    /// than `max_pages` pages. `None` if there is none.
    fn page_size_for(&self, off: u64, len: u64, cap: u64, max_pages: u64) -> Option<u64> {
        let (first, last) = (self.seg_index(off), self.seg_index(off + len - 1));
        let segs = &self.segs[first..=last];
        let mut align = 0u64;
        for s in segs {
            if s.off > off {
                align |= s.dma;
            }
            if s.off + u64::from(s.len) < off + len {
                align |= s.dma + u64::from(s.len);
            }
        }
        let limit = if align == 0 {
            1u64 << 30
        } else {
            1u64 << align.trailing_zeros().min(30)
        };
        // Sizes are powers of two: shifts, not divisions (no division-by-zero panic path,
        // which objtool does not know as noreturn).
        let mut shift = PAGE_SIZE.trailing_zeros();
        while 1u64 << shift <= limit {
            let size = 1u64 << shift;
            if cap & size != 0 || size == PAGE_SIZE as u64 {
                let pages: u64 = segs
                    .iter()
                    .map(|s| {
                        let start = s.dma + off.saturating_sub(s.off);
                        let end = s.dma + u64::from(s.len).min(off + len - s.off);
                        (end >> shift) + u64::from(end & (size - 1) != 0) - (start >> shift)
                    })
                    .sum();
                if pages <= max_pages {
                    return Some(size);
                }
            }
            shift += 1;
        }
        None
    }
}
