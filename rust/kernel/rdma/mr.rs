// SPDX-License-Identifier: GPL-2.0

//! Memory for RDMA: DMA-mapped kernel buffers and fast registration memory regions.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/linux/scatterlist.h`](srctree/include/linux/scatterlist.h).
//!
//! A [`DmaRegion`] is kernel memory turned into a scatterlist and mapped for the device with
//! `ib_dma_map_sg`: a buffer by its address (linear-map memory such as kmalloc'd or
//! page-allocated buffers, or vmalloc'd memory, mapped page by page,
//! [`DmaRegion::new`]), an array of pages ([`DmaRegion::from_pages`]) or a scatterlist the
//! caller built ([`DmaRegion::from_sg`]). The local HCA reaches it with the PD's local DMA
//! lkey, one SGE per DMA segment ([`DmaRegion::sges`]).
//!
//! Those constructors are `unsafe`: the caller keeps the memory allocated. A region can also
//! own its memory, a vector of bytes ([`DmaRegion::from_kvec`], [`DmaRegion::from_kvvec`]) or
//! of pages ([`DmaRegion::from_owned_pages`]), which it frees only after unmapping it; the CPU
//! then reaches the memory through the [`CpuAccess`] these constructors return, with bounds
//! checks, and nothing about the memory needs `unsafe` from the caller.
//! Or it can map pages a value of the caller's keeps ([`DmaRegion::from_sg_owner`], an
//! [`SgOwner`] such as a block request's token), which it drops only after unmapping them:
//! zero copy without `unsafe` in the caller either.
//!
//! A [`FrMr`] is a fast registration memory region (`IB_MR_TYPE_MEM_REG`, "FRWR"): a page list
//! mapped with `ib_map_mr_sg` over part of a `DmaRegion`, made valid by posting an
//! `IB_WR_REG_MR` work request ([`super::wr::WrPool::post_reg_mr`]) and revoked by
//! `IB_WR_LOCAL_INV`. Each registration gets a fresh key so a stale rkey is refused. A
//! [`MrPool`] keeps such MRs on a QP's lists (`ib_mr_pool_*`), for one I/O to take and map in
//! any context ([`PoolMr`]).
//!
//! # DMA and the CPU
//!
//! The mapping is bidirectional and made once. Before the CPU reads data the device wrote
//! (RECV, RDMA READ target, peer RDMA WRITE), call [`DmaRegion::sync_for_cpu`]; before the
//! device reads data the CPU wrote, call [`DmaRegion::sync_for_device`]. On cache-coherent
//! machines and for software devices (rxe) both are cheap. For memory a region owns:
//! [`DmaRegion::sync_for_cpu`] before [`CpuAccess::read`], [`DmaRegion::sync_for_device`]
//! after [`CpuAccess::write`], on the region as long as it exists (once it is dropped the
//! memory is no longer mapped and needs no sync).

use super::bound::{Bound, BoundDevice, Rank, Release, Slot};
use crate::{
    bindings,
    error::to_result,
    prelude::*,
    scatterlist::{SGEntry, SGTable},
    sync::{rcu, Arc},
};
use core::ptr::NonNull;

mod frmr;
mod lender;
mod lent;
mod owned;
mod pool;
mod segs;
mod sge;
pub use crate::dma::DataDirection;
pub use frmr::{FrMr, MrRef};
pub use lender::Lender;
pub use owned::CpuAccess;
pub use pool::{MrPool, PoolMr, MR_POOL_MAX};
use segs::{Seg, Segs};
pub use sge::Sge;

const PAGE_SIZE: usize = bindings::PAGE_SIZE;

/// A value that keeps a scatterlist and the pages it names for as long as it exists, and lends
/// the list to [`DmaRegion::from_sg_owner`] to be mapped in place. Dropping it is how its
/// pages go back to their user (a block driver's request token ends the request from its
/// drop).
///
/// # Safety
///
/// [`SgOwner::sg`] returns a valid scatterlist (chained or not) of at least the count it
/// returns, whose entries each name a page and a non-zero length and have their DMA address,
/// length and flags clear (as `sg_init_table` leaves them). From the call to
/// [`DmaRegion::from_sg_owner`] until the value is dropped:
/// - the list stays at its address, and its entries' pages do not change;
/// - the list is the region's alone: the DMA API writes its entries' DMA addresses, lengths
///   and flags, and while it maps (with an IOMMU) their offsets and lengths too, so nothing
///   else reads, writes or maps the list meanwhile;
/// - the pages it names stay allocated, and are not reused for anything else.
pub unsafe trait SgOwner: Send + Sync + 'static {
    /// The scatterlist (not DMA-mapped: `sg_set_page` entries) and its number of entries.
    fn sg(&self) -> (*mut bindings::scatterlist, usize);
}

/// A kernel buffer mapped for DMA by one RDMA device.
///
/// # Invariants
///
/// `table` holds a scatterlist over the pages of the buffer `[addr, addr + len)`, mapped with
/// `ib_dma_map_sg` on `dev` in direction `dir` (`table.nents` mapped entries, 0 while not
/// mapped); `segs` describes those entries in order. The mapping is undone, and the table
/// freed, only in `drop`. If `_owned` is `Some`, it is the memory the table names (the region's
/// share of it). If `lender` is `Some`, the table's list is the lender's own, lent to be
/// mapped in place ([`SgOwner`]): the region maps and unmaps it but does not free it, and the
/// lender keeps it and the pages it names.
///
/// Once mapped, the table is the region's tracked mapping (`mapping`), which the device's
/// removal may revoke ([`super::bound`]): it is unmapped and freed then, and the region's
/// later syncs do nothing.
///
/// Dropping a region unmaps it and frees its table unless the table is lent (`Drop::drop`),
/// and only then drops its
/// fields (in declaration order): the binding, the segments, the share of the memory
/// it owns, which is freed then unless its [`CpuAccess`] still exists, and, last, the owner of
/// the pages it borrowed, which gives them back to their user. The unmapping and the binding's
/// bookkeeping do not sleep, so dropping a region over memory it does not own (a caller's
/// buffer, pages or lent scatterlist) may be done in any context, also while the device's
/// removal is releasing the mapping (the drop then spins until that release, which does not
/// sleep, has ended; on PREEMPT_RT it waits in process context); freeing memory the region
/// owns may sleep (`kvfree` of vmalloc'd memory).
pub struct DmaRegion {
    /// The device, valid while `bound` is bound.
    dev: NonNull<bindings::ib_device>,
    mapping: Option<Arc<Slot<DmaRes>>>,
    bound: Arc<BoundDevice>,
    /// The table until it is mapped, then empty (moved into `mapping`).
    // Not a `scatterlist::SGTable<Owned<_>>`: that maps a `Device<Bound>` (a driver-bound
    // `struct device`) with `dma_map_sgtable`, while an RDMA device maps through `ib_dma_map_sg`
    // and the software ones (rxe, siw: `ib_uses_virt_dma`) have no DMA device at all; its
    // mapping is a `Devres` revoked when that device's driver unbinds, not when the client's
    // binding of the `ib_device` is revoked (`rdma link delete` unbinds no driver), in
    // ib_core's order; and it maps only vmalloc'd memory it owns (`VVec`, `VBox`), not a
    // caller's buffer, page array or lent scatterlist. The mapped entries are read through the
    // crate's borrowed `SGTable` (`DmaRegion::map`).
    table: bindings::sg_table,
    /// Whether syncs do anything on the device ([`DmaRegion::needs_sync`]).
    needs_sync: bool,
    segs: Segs,
    addr: usize,
    len: usize,
    /// The memory the region owns (constructors without `unsafe`, `mr/owned.rs`), freed after
    /// the unmapping; only dropped.
    _owned: Option<Arc<dyn Send + Sync>>,
    /// What keeps the pages of a region made by [`DmaRegion::from_sg_owner`], dropped after
    /// the unmapping.
    lender: Option<Lender>,
    /// The mapping's direction ([`DataDirection::Bidirectional`] but for
    /// [`DmaRegion::from_sg_owner`]).
    dir: DataDirection,
}

// SAFETY: The region is immutable after creation; the raw pointers it holds refer to memory it
// owns (the table, `_owned`), that its lender keeps for it alone (a lent list and its pages,
// `SgOwner`), or that its creator keeps alive (the buffer). It never reads or
// writes the memory it maps from the CPU.
unsafe impl Send for DmaRegion {}
// SAFETY: See the `Send` impl; `&DmaRegion` only reads.
unsafe impl Sync for DmaRegion {}

impl DmaRegion {
    /// Maps `len` bytes at kernel address `addr` for DMA by `dev`. The start and length need no
    /// alignment.
    ///
    /// May sleep (allocates with `GFP_KERNEL`).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a zero length or an overflowing range, `-EFAULT` for an address that is
    /// neither in the linear map nor in vmalloc space, `-ENOMEM`, `-EIO` if the mapping fails.
    ///
    /// # Safety
    ///
    /// `[addr, addr + len)` is kernel memory that stays allocated, and is not freed or remapped,
    /// until the returned region is dropped.
    pub unsafe fn new(dev: &Bound<'_>, addr: usize, len: usize) -> Result<DmaRegion> {
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        if len == 0 || len > u32::MAX as usize * 16 {
            return Err(EINVAL);
        }
        let first = addr & !(PAGE_SIZE - 1);
        let npages = (end - first).div_ceil(PAGE_SIZE);
        let page_at = |i: usize| {
            let va = (first + i * PAGE_SIZE) as *const c_void;
            // SAFETY: Both functions only inspect the address.
            unsafe {
                if bindings::is_vmalloc_addr(va) {
                    bindings::vmalloc_to_page(va)
                } else if bindings::virt_addr_valid(va) {
                    bindings::virt_to_page(va)
                } else {
                    core::ptr::null_mut()
                }
            }
        };
        // Every page is kernel memory before the page array is allocated: a length beyond the
        // buffer (and beyond the kernel's memory) fails here, not in a huge allocation.
        if (0..npages).any(|i| page_at(i).is_null()) {
            return Err(EFAULT);
        }
        let mut pages = KVVec::with_capacity(npages, GFP_KERNEL)?;
        for i in 0..npages {
            pages.push(page_at(i), GFP_KERNEL)?;
        }
        // SAFETY: The pages are those of the caller's buffer, which it keeps allocated.
        unsafe { Self::from_pages_at(dev, &pages, addr - first, len, addr) }
    }

    /// Maps `len` bytes of the pages `pages`, starting `offset` bytes into the first page
    /// (`offset < PAGE_SIZE`), for DMA by `dev`. The pages need not be contiguous, mapped in
    /// the kernel or in low memory; the region has no kernel address ([`Self::addr`] is 0).
    /// May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for no pages, a zero length, an offset of a page or more or a length beyond
    /// the pages, `-EFAULT` for a NULL page, `-ENOMEM`, `-EIO` if the mapping fails.
    ///
    /// # Safety
    ///
    /// The pages the range covers stay allocated until the returned region is dropped.
    pub unsafe fn from_pages(
        dev: &Bound<'_>,
        pages: &[*mut bindings::page],
        offset: usize,
        len: usize,
    ) -> Result<DmaRegion> {
        let cap = pages.len().checked_mul(PAGE_SIZE).ok_or(EINVAL)?;
        if pages.is_empty() || offset >= PAGE_SIZE || len == 0 || len > cap - offset {
            return Err(EINVAL);
        }
        let used = &pages[..(offset + len).div_ceil(PAGE_SIZE)];
        if used.iter().any(|p| p.is_null()) {
            return Err(EFAULT);
        }
        // SAFETY: The caller keeps the pages allocated.
        unsafe { Self::from_pages_at(dev, used, offset, len, 0) }
    }

    /// Maps a copy of the caller's scatterlist `sgl` of `nents` entries (each a page, an offset
    /// and a length, as `sg_set_page` sets them; not DMA-mapped) for DMA by `dev`. The region
    /// is the entries one after the other; the caller's list is not modified and may be freed
    /// once this returns. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for NULL, no entries, a list shorter than `nents`, an entry without a page or
    /// of zero length, `-ENOMEM`, `-EIO` if the mapping fails.
    ///
    /// # Safety
    ///
    /// `sgl` is a valid scatterlist of at least `nents` entries (chained or not) for the call,
    /// and the pages it names stay allocated until the returned region is dropped.
    pub unsafe fn from_sg(
        dev: &Bound<'_>,
        sgl: *mut bindings::scatterlist,
        nents: usize,
    ) -> Result<DmaRegion> {
        if sgl.is_null() || nents == 0 || nents > i32::MAX as usize {
            return Err(EINVAL);
        }
        let mut table = bindings::sg_table::default();
        // SAFETY: `table` is a zeroed table; on failure `sg_alloc_table` frees what it took.
        to_result(unsafe {
            bindings::sg_alloc_table(&mut table, nents as u32, bindings::GFP_KERNEL)
        })?;
        // Not mapped yet (`sg_alloc_table` set it to the entries): an error return before the
        // mapping must not unmap.
        table.nents = 0;
        // From here the region owns the table: an error return frees it (`Drop`).
        let mut region = DmaRegion::unmapped(dev, table, 0, 0, None, DataDirection::Bidirectional);
        let (mut src, mut dst, mut len) = (sgl, region.table.sgl, 0usize);
        for _ in 0..nents {
            if src.is_null() || dst.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `src` is an entry of the caller's list (caller's guarantee), `dst` one of
            // the `nents` entries of the new table.
            unsafe {
                let page = bindings::sg_page(src);
                let (l, o) = ((*src).length, (*src).offset);
                if page.is_null() || l == 0 {
                    return Err(EINVAL);
                }
                bindings::sg_set_page(dst, page, l, o);
                len = len.checked_add(l as usize).ok_or(EINVAL)?;
                src = bindings::sg_next(src);
                dst = bindings::sg_next(dst);
            }
        }
        region.len = len;
        // SAFETY: The table names the caller's pages, which it keeps allocated.
        unsafe { region.map(GFP_KERNEL) }?;
        Ok(region)
    }

    /// Maps `len` bytes of `pages` from `offset` into the first; `addr` is the kernel address
    /// of the first byte, or 0.
    ///
    /// # Safety
    ///
    /// The pages stay allocated until the region is dropped.
    unsafe fn from_pages_at(
        dev: &Bound<'_>,
        pages: &[*mut bindings::page],
        offset: usize,
        len: usize,
        addr: usize,
    ) -> Result<DmaRegion> {
        let mut table = bindings::sg_table::default();
        // SAFETY: `pages` holds valid pages; `table` is a zeroed table to fill; the function
        // only reads the page array. The largest segment is 2 GiB, a multiple of the page size.
        to_result(unsafe {
            bindings::sg_alloc_table_from_pages_segment(
                &mut table,
                pages.as_ptr().cast_mut(),
                pages.len() as u32,
                offset as u32,
                len,
                1 << 31,
                bindings::GFP_KERNEL,
            )
        })?;
        let mut region =
            DmaRegion::unmapped(dev, table, addr, len, None, DataDirection::Bidirectional);
        // SAFETY: The caller keeps the pages allocated.
        unsafe { region.map(GFP_KERNEL) }?;
        Ok(region)
    }

    /// A region of `len` bytes at kernel address `addr` (or 0) over `table`, not mapped yet.
    fn unmapped(
        dev: &Bound<'_>,
        table: bindings::sg_table,
        addr: usize,
        len: usize,
        lender: Option<Lender>,
        dir: DataDirection,
    ) -> DmaRegion {
        let raw = dev.as_raw();
        // SAFETY: The device is registered (the token holds it bound); `dma_device` is set when
        // it is registered and does not change.
        let needs_sync = unsafe {
            !bindings::ib_uses_virt_dma(raw) && bindings::dma_dev_need_sync((*raw).dma_device)
        };
        DmaRegion {
            // `as_raw` is never NULL: it is the address of a `Device`.
            dev: NonNull::new(raw).unwrap_or(NonNull::dangling()),
            mapping: None,
            bound: dev.binding().clone(),
            table,
            needs_sync,
            segs: Segs::Many(KVec::new()),
            addr,
            len,
            _owned: None,
            lender,
            dir,
        }
    }

    /// Maps the region's table on its device and records the DMA segments, allocating with
    /// `flags`.
    ///
    /// # Safety
    ///
    /// The table's pages stay allocated until the region is dropped.
    unsafe fn map(&mut self, flags: crate::alloc::Flags) -> Result {
        // SAFETY: The table was just filled; its pages are valid for DMA (caller's guarantee).
        let nents = unsafe {
            bindings::ib_dma_map_sg(
                self.dev.as_ptr(),
                self.table.sgl,
                self.table.orig_nents as i32,
                self.dir.into(),
            )
        };
        if nents <= 0 {
            self.table.nents = 0;
            return Err(EIO);
        }
        self.table.nents = nents as u32;
        // SAFETY: The table is the region's own, valid and not modified while `sgt` is used
        // (the borrow of `self.table` ends before the region changes anything).
        let sgt = unsafe { SGTable::from_raw((&raw mut self.table).cast()) };
        // A DMA length is an `unsigned int` in C (`sg_dma_len`): the cast loses nothing.
        let seg = |e: &SGEntry| (e.dma_address(), e.dma_len() as u32);
        if nents == 1 {
            let (dma, len) = sgt.iter().next().map(seg).ok_or(EIO)?;
            self.segs = Segs::One([Seg { off: 0, dma, len }]);
            return self.track(flags);
        }
        // One allocation of the right size (pushes into an empty vector would `krealloc`).
        let mut segs = KVec::with_capacity(nents as usize, flags)?;
        let mut off = 0u64;
        for (dma, len) in sgt.iter().map(seg) {
            segs.push(Seg { off, dma, len }, flags)?;
            off += u64::from(len);
        }
        self.segs = Segs::Many(segs);
        self.track(flags)
    }

    /// Hands the mapped table to the device's binding, which unmaps it if the device goes
    /// first. On an error it is unmapped (and freed unless lent) before this returns.
    fn track(&mut self, flags: crate::alloc::Flags) -> Result {
        let res = DmaRes {
            dev: self.dev,
            table: core::mem::take(&mut self.table),
            dir: self.dir,
            lent: self.lender.is_some(),
        };
        self.mapping = Some(BoundDevice::track_gfp(&self.bound, res, flags)?);
        Ok(())
    }

    /// Length of the region in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty (never: creation refuses a zero length).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The kernel virtual address the region starts at (0 for one made from pages or a
    /// scatterlist).
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// The binding of the device the region is mapped for.
    pub fn binding(&self) -> &Arc<BoundDevice> {
        &self.bound
    }

    fn seg_index(&self, off: u64) -> usize {
        match self.segs.binary_search_by(|s| s.off.cmp(&off)) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }

    /// Whether [`Self::sync_for_cpu`] and [`Self::sync_for_device`] do anything for this
    /// region's device: false for software devices (rxe, siw: `ib_uses_virt_dma`) and for
    /// DMA-coherent devices without bounce buffering (`dma_dev_need_sync`). Lets a hot path
    /// skip the calls. May be called from any context.
    pub fn needs_sync(&self) -> bool {
        self.needs_sync
    }

    /// Makes device writes to `[off, off + len)` visible to the CPU. May be called from any
    /// context.
    pub fn sync_for_cpu(&self, off: u64, len: u64) {
        self.sync(off, len, false)
    }

    /// Makes CPU writes to `[off, off + len)` visible to the device. May be called from any
    /// context.
    pub fn sync_for_device(&self, off: u64, len: u64) {
        self.sync(off, len, true)
    }

    fn sync(&self, off: u64, len: u64, for_device: bool) {
        // Nothing to do for most devices: no walk of the segments then (`make profile`: about
        // 100 instructions per call on a region of many segments, for calls that do nothing).
        if !self.needs_sync() {
            return;
        }
        let Some(end) = off.checked_add(len) else {
            return;
        };
        let end = end.min(self.len as u64);
        let mut pos = off;
        if pos >= end {
            return;
        }
        let mut i = self.seg_index(off);
        let dir = self.dir.into();
        // The device may be gone (its removal unmapped the region): nothing to sync then.
        let rcu = rcu::read_lock();
        if !self.bound.live(&rcu) || self.mapping.is_none() {
            return;
        }
        while pos < end {
            let s = &self.segs[i];
            let inner = pos - s.off;
            let take = (u64::from(s.len) - inner).min(end - pos);
            // SAFETY: The segment is mapped on `dev` (type invariant), which is bound during
            // the RCU section `rcu` (checked above).
            unsafe {
                if for_device {
                    bindings::ib_dma_sync_single_for_device(
                        self.dev.as_ptr(),
                        s.dma + inner,
                        take as usize,
                        dir,
                    )
                } else {
                    bindings::ib_dma_sync_single_for_cpu(
                        self.dev.as_ptr(),
                        s.dma + inner,
                        take as usize,
                        dir,
                    )
                }
            }
            pos += take;
            i += 1;
        }
    }
}

impl Drop for DmaRegion {
    fn drop(&mut self) {
        match self.mapping.as_ref() {
            // Unmaps the region unless its device's removal did.
            Some(m) => Slot::release_now(m),
            // Not mapped (a constructor failed): the table, if any, is freed here.
            None => {
                let res = DmaRes {
                    dev: self.dev,
                    table: core::mem::take(&mut self.table),
                    dir: self.dir,
                    lent: self.lender.is_some(),
                };
                res.release();
            }
        }
        // The fields go after this: `_owned` frees the memory (if the region held its last
        // share) only now that nothing maps it.
    }
}

/// A region's scatterlist table and its DMA mapping, as the device's binding tracks it.
///
/// # Invariants
///
/// `table` holds `orig_nents` entries, of which `nents` are mapped on `dev` in direction `dir`
/// (0: not mapped); its list is freed on release unless `lent` (the lender frees it).
struct DmaRes {
    dev: NonNull<bindings::ib_device>,
    table: bindings::sg_table,
    dir: DataDirection,
    lent: bool,
}

// SAFETY: DMA unmapping may be done from any thread.
unsafe impl Send for DmaRes {}

impl Release for DmaRes {
    const RANK: Rank = Rank::DmaRegion;
    // `ib_dma_unmap_sg` and `sg_free_table` do not sleep, but for PREEMPT_RT's sleeping
    // spinlocks (an IOMMU's, the page allocator's), which may not be taken with interrupts
    // disabled.
    const ATOMIC: bool = !cfg!(CONFIG_PREEMPT_RT);

    fn release(mut self) {
        if self.table.nents > 0 {
            // SAFETY: The table was mapped on `dev`, which is registered (a release runs before
            // the device's removal returns), with `orig_nents` entries (type invariant).
            unsafe {
                bindings::ib_dma_unmap_sg(
                    self.dev.as_ptr(),
                    self.table.sgl,
                    self.table.orig_nents as i32,
                    self.dir.into(),
                )
            };
        }
        // A lent list is the lender's to free (type invariant), after this.
        if !self.lent && !self.table.sgl.is_null() {
            // SAFETY: The table was allocated by `sg_alloc_table_from_pages_segment` or
            // `sg_alloc_table`.
            unsafe { bindings::sg_free_table(&mut self.table) };
        }
    }
}
