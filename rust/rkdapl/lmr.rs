// SPDX-License-Identifier: GPL-2.0

//! LMR: local memory region (DAT 2.0 section 6.7), kernel memory mapped for the device and
//! reachable by local DTOs with the PZ's local DMA lkey: the consumer's buffer (kmalloc'd or
//! vmalloc'd), an array of its pages, a scatterlist it built, or memory the LMR owns and frees
//! with itself (a buffer rkdapl allocates, or a Rust consumer's buffer or pages handed over).
//!
//! The memory an LMR owns is owned by its region (the layer's [`DmaRegion::from_kvvec`],
//! [`DmaRegion::from_kvec`], [`DmaRegion::from_owned_pages`]), which frees it after unmapping
//! it, and reached by the CPU through the LMR's one [`Cpu`], which holds the region's
//! [`CpuAccess`] (keeping the memory past a device removal) and applies the DMA sync rules.
//! An LMR of the Rust API may also map pages a value of its consumer keeps (an
//! [`SgOwner`](crate::rdma::mr::SgOwner), [`Lmr::from_sg_owner`], kept by a [`Lender`]): the
//! region drops that value once it unmapped them.

use crate::rdma::{
    bound::Bound,
    mr::{CpuAccess, DataDirection, DmaRegion, Lender},
    Access, AccessFlag,
};
use crate::{
    pz::Pz,
    registry::{Child, Rank, RegSlot},
};
use core::{
    ptr::NonNull,
    sync::atomic::{fence, AtomicU32, Ordering},
};
use kernel::{
    bits::bit_u32,
    page::Page,
    prelude::*,
    revocable::Revocable,
    sync::{Arc, ArcBorrow},
};

kernel::impl_flags!(
    /// The privileges of an LMR, and those an RMR grants over it (DAT's memory privilege flags):
    /// a set of [`MemPriv`]s. Local read is always allowed.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MemPrivs(u32);

    /// One privilege of an LMR or RMR grant.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum MemPriv {
        /// Local write: RECVs and RDMA READs may place data in the LMR.
        LocalWrite = bit_u32(0),
        /// Remote read may be granted through an RMR over the LMR.
        RemoteRead = bit_u32(1),
        /// Remote write may be granted through an RMR over the LMR.
        RemoteWrite = bit_u32(2),
        /// Remote atomics (fetch and add, compare and swap on 8-byte aligned words) may be
        /// granted through an RMR over the LMR.
        RemoteAtomic = bit_u32(3),
    }
);

impl MemPrivs {
    /// The privileges that let the device write the memory.
    pub(crate) fn device_writes(self) -> bool {
        self.contains_any(MemPriv::LocalWrite | MemPriv::RemoteWrite | MemPriv::RemoteAtomic)
    }

    /// The access rights of a remote grant (an RMR, bound or pooled) with these privileges:
    /// their remote part. Any context.
    pub(crate) fn remote_access(self) -> Access {
        let mut access = Access::empty();
        for (p, a) in [
            (MemPriv::RemoteRead, AccessFlag::RemoteRead),
            (MemPriv::RemoteWrite, AccessFlag::RemoteWrite),
            (MemPriv::RemoteAtomic, AccessFlag::RemoteAtomic),
        ] {
            if self.contains(p) {
                access |= a;
            }
        }
        access
    }
}

/// Largest LMR [`Lmr::alloc`] makes, in bytes.
pub const MAX_ALLOC: u64 = 1 << 30;

/// The bit of [`Lmr`]'s count of users that says it was freed ([`Lmr::free`],
/// [`Lmr::free_when_unused`]); the rest counts the users.
const FREED: u32 = 1 << 31;

/// A local memory region.
///
/// The region (the DMA mapping) is revocable: device removal unmaps it after every EP of the
/// device has been drained, and later uses get `-ENODEV`. Registered with its IA from its
/// creation to [`Lmr::free`].
///
/// Dropping it (fields in declaration order) unmaps the region (which then frees the memory it
/// owns, unless a [`Cpu`] or `_kept` still holds it), frees kept memory, then lets go of the PZ.
/// No lock is taken: the last reference may go where a DTO's does.
///
/// # Invariants
///
/// The LMR is in its IA's registry, which holds a reference to it, from its creation until
/// `users` first is exactly [`FREED`] (freed, and no user left); the one call that makes it
/// so takes it out ([`Lmr::free`], [`Lmr::free_when_unused`], [`Lmr::put`]). An [`LmrUse`]
/// is made only while `users` is not exactly [`FREED`] (so the registry holds the LMR until
/// this use too is given back): it may reach the LMR without a reference of its own.
///
/// `cpu_addr` is the region's kernel virtual address ([`DmaRegion::addr`]) if it has one:
/// memory that stays allocated while the region exists (its constructor's contract or its
/// own), and, if `_kept` is `Some`, for as long as the LMR exists.
#[pin_data]
pub(crate) struct Lmr {
    /// An RMR bind maps it into its MR inside an RCU read section that saw the IA live
    /// ([`crate::ia::Ia::live_rcu`]): device removal does not revoke it meanwhile.
    #[pin]
    pub(crate) region: Revocable<Arc<DmaRegion>>,
    /// For memory the LMR owns that the C ABI hands out by address ([`Lmr::alloc_for_c`]):
    /// the CPU access of the region's memory, never used (the consumer writes through the
    /// address), kept so that the memory stays until the LMR goes, also when device removal
    /// drops the region first.
    _kept: Option<CpuAccess>,
    /// The region's length in bytes.
    pub(crate) len: u64,
    /// The kernel virtual address of the region's first byte when the region is virtually
    /// contiguous (a kmalloc'd or vmalloc'd buffer, or rkdapl's own): inline work requests
    /// need one, since the CPU copies inline data at post time (they name it through
    /// [`DmaRegion::inline_sge`]), and the C ABI hands out rkdapl's own by it. `None` for page
    /// arrays and scatterlists.
    pub(crate) cpu_addr: Option<usize>,
    pub(crate) privileges: MemPrivs,
    /// The DTOs and RMR bindings using the region (taken with [`Lmr::get`] or [`LmrUse::new`],
    /// given back with [`Lmr::put`]), and [`FREED`]: the LMR was freed; it leaves its IA's
    /// registry when the last user goes.
    users: AtomicU32,
    pub(crate) pz: Arc<Pz>,
    /// Its place in its IA's registry.
    reg: RegSlot,
}

impl Lmr {
    /// Wraps a mapped region, with `privileges`, over memory the consumer keeps
    /// (the C ABI's `rkdapl_lmr_create*`). Registers the LMR with its IA, which refuses it once
    /// the device was removed; the caller holds the device bound ([`crate::ia::Ia::live`] or
    /// [`crate::ia::Ia::with_binding`]). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a region mapped for another device, `-ENOMEM`,
    /// or the registry's error (`-ENODEV` after device removal).
    pub(crate) fn new(pz: Arc<Pz>, region: DmaRegion, privileges: MemPrivs) -> Result<Arc<Lmr>> {
        Self::make(pz, region, privileges, None, GFP_KERNEL)
    }

    /// [`Lmr::new`], keeping `kept` (the CPU access of the memory the region owns) with the
    /// LMR, allocating with `flags` (any context with `GFP_ATOMIC`).
    fn make(
        pz: Arc<Pz>,
        region: DmaRegion,
        privileges: MemPrivs,
        kept: Option<CpuAccess>,
        flags: kernel::alloc::Flags,
    ) -> Result<Arc<Lmr>> {
        if !pz.ia.same_binding(region.binding()) {
            return Err(EINVAL);
        }
        let len = region.len() as u64;
        // INVARIANT: The region's own address; with `kept`, the CPU access of the memory the
        // region owns (the callers': `Lmr::alloc_for_c`), which keeps it.
        let cpu_addr = (region.addr() != 0).then(|| region.addr());
        let region = Arc::new(region, flags)?;
        let lmr = Arc::pin_init(
            pin_init!(Lmr {
                pz,
                region <- Revocable::new(region),
                _kept: kept,
                len,
                cpu_addr,
                privileges,
                users: AtomicU32::new(0),
                reg: RegSlot::new(),
            }),
            flags,
        )?;
        lmr.pz.ia.children.add_gfp(lmr.clone(), None, flags)?;
        Ok(lmr)
    }

    /// `rkdapl_lmr_free`: the consumer lets go of the LMR; it leaves its IA's registry, and the
    /// region is unmapped when the last reference goes. Any context, unless the IA was closed
    /// and this is its last object (see [`crate::registry::Children::remove`]); the caller's
    /// reference may be the last one only in process context (the region is unmapped with
    /// it).
    ///
    /// # Errors
    ///
    /// `-EBUSY` while a DTO or an RMR binding uses the region (nothing changes); not after
    /// device removal, which unmapped the region (no DTO reaches it any more).
    pub(crate) fn free(&self) -> Result {
        // Acquire: the users that went before happen before the registry lets go of the LMR
        // (paired with `put`'s Release). One RMW against the users' own: either a DTO took the
        // LMR first and this sees it (-EBUSY), or this comes first and the DTO sees `FREED`
        // and refuses the LMR (`LmrUse::new`).
        match self
            .users
            .compare_exchange(0, FREED, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => {
                self.pz.ia.children.remove(self);
                Ok(())
            }
            // Freed already (a second free, or device removal): nothing left to do here.
            Err(v) if v & FREED != 0 => Ok(()),
            Err(_) if self.region.try_access().is_some() => Err(EBUSY),
            Err(_) => {
                self.free_when_unused();
                Ok(())
            }
        }
    }

    /// Frees the LMR now, or, while DTOs or a binding use it, with the last of them
    /// ([`Lmr::put`]): the Rust API's drop, which cannot be refused, and device removal's
    /// release. Context as [`Lmr::free`].
    pub(crate) fn free_when_unused(&self) {
        // AcqRel: Acquire as in `free`; Release orders nothing but keeps this RMW and `put`'s
        // in one order. Exactly one of this and the last `put` sees the LMR freed and unused,
        // and only that one removes it.
        if self.users.fetch_or(FREED, Ordering::AcqRel) == 0 {
            self.pz.ia.children.remove(self);
        }
    }

    /// An RMR binding, or an SRQ's RECV, starts using the region; [`Lmr::put`] ends it. The
    /// caller holds a reference to the LMR until then (so this is taken even on a freed LMR).
    /// Any context.
    pub(crate) fn get(&self) {
        // Relaxed: the count only decides when the registry lets go of the LMR, and the
        // caller's reference keeps it meanwhile; `put` orders the uses.
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    /// A user ([`Lmr::get`], [`LmrUse`]) stops using the region; the last one of a freed LMR
    /// ([`Lmr::free_when_unused`]) takes it out of its IA's registry, whose reference may be the
    /// last one (then the region is unmapped here). Any context where an LMR's last reference
    /// may go (a completion on the CQ's workqueue, an RMR's unbind, a failed post call whose
    /// caller holds the LMR), unless the IA was closed and this LMR is its last object (see
    /// [`crate::registry::Children::remove`]).
    pub(crate) fn put(&self) {
        // SAFETY: `self` lives; the caller's use ends here. The caller holds a reference to
        // the LMR (`Lmr::get`), so this is not its last one.
        unsafe { Self::put_ptr(self) }
    }

    /// [`Lmr::put`] through a pointer: the LMR may be gone when this returns.
    ///
    /// # Safety
    ///
    /// `lmr` points to a live `Lmr` whose count of users counts the caller's use, which ends
    /// here.
    unsafe fn put_ptr(lmr: *const Lmr) {
        // SAFETY: `lmr` lives (the caller's guarantee); the reference is not used after this
        // statement.
        let users = unsafe { &(*lmr).users };
        // Release: this user's accesses to the LMR happen before whoever lets it go (`free`,
        // `free_when_unused` or another `put`, with Acquire).
        if users.fetch_sub(1, Ordering::Release) != FREED | 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: Every `Lmr` is made in an `Arc` (`Lmr::make`); no `UniqueArc` of one
        // exists. The count does not hit zero before the clone is taken: the use ending here
        // is an `LmrUse`, and the registry still holds the LMR (`Lmr`'s invariant: it lets go
        // only once the LMR is freed and unused, and this call is the one that saw both), or
        // it is a `Lmr::get`, whose caller holds a reference.
        let b = unsafe { ArcBorrow::from_raw(lmr) };
        // Held across the removal: the registry's reference may be the last one, and the IA
        // whose registry this is may go with it.
        let lmr: Arc<Lmr> = b.into();
        lmr.pz.ia.children.remove(&*lmr);
    }

    /// Checks the length of an [`Lmr::alloc`] before anything is made.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for 0 or more than [`MAX_ALLOC`] bytes.
    pub(crate) fn check_alloc(length: u64) -> Result {
        if length == 0 || length > MAX_ALLOC {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// `length` zeroed bytes (kvmalloc) registered in `pz`, whose device `dev` the caller holds
    /// live (`rkdapl_lmr_alloc` of the Rust API), reached through the returned [`Cpu`].
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a length of 0 or above 1 GiB, `-ENOMEM`, `-EIO` if
    /// the DMA mapping fails.
    pub(crate) fn alloc(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        length: u64,
        privileges: MemPrivs,
    ) -> Result<Cpu> {
        Self::check_alloc(length)?;
        let buf = KVVec::from_elem(0u8, length as usize, GFP_KERNEL)?;
        let (region, mem) = DmaRegion::from_kvvec(dev, buf)?;
        Cpu::new(pz, region, mem, privileges)
    }

    /// [`Lmr::alloc`] for the C ABI (`rkdapl_lmr_alloc`), whose consumer reaches the memory
    /// through its address ([`Lmr::cpu_addr`]): the LMR keeps the memory until it goes.
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Lmr::alloc`].
    pub(crate) fn alloc_for_c(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        length: u64,
        privileges: MemPrivs,
    ) -> Result<Arc<Lmr>> {
        Self::check_alloc(length)?;
        let buf = KVVec::from_elem(0u8, length as usize, GFP_KERNEL)?;
        let (region, mem) = DmaRegion::from_kvvec(dev, buf)?;
        Self::make(pz, region, privileges, Some(mem), GFP_KERNEL)
    }

    /// The LMR over a Rust consumer's kmalloc'd `buf`, which it owns from now on. Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an empty buffer, `-ENOMEM`, `-EIO` if the DMA
    /// mapping fails.
    pub(crate) fn from_kvec(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        buf: KVec<u8>,
        privileges: MemPrivs,
    ) -> Result<Cpu> {
        let (region, mem) = DmaRegion::from_kvec(dev, buf)?;
        Cpu::new(pz, region, mem, privileges)
    }

    /// The LMR over `len` bytes of a Rust consumer's `pages` from `offset` into the first
    /// (`offset < PAGE_SIZE`), which it owns from now on. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for no pages, an offset of a page or more, a zero length or one beyond the
    /// pages; `-ENOMEM`, `-EIO` if the DMA mapping fails.
    pub(crate) fn from_pages(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        pages: KVec<Page>,
        offset: usize,
        len: usize,
        privileges: MemPrivs,
    ) -> Result<Cpu> {
        let (region, mem) = DmaRegion::from_owned_pages(dev, pages, offset, len)?;
        Cpu::new(pz, region, mem, privileges)
    }

    /// The LMR over the pages `owner` keeps (a Rust consumer's block request, say: zero copy),
    /// which the region drops only after unmapping them ([`DmaRegion::from_sg_owner`]), so
    /// once this LMR and every DTO and grant that used it have let go. The CPU reaches the
    /// pages through their owner, not the LMR. Without a write privilege
    /// ([`MemPriv::LocalWrite`], [`MemPriv::RemoteWrite`], [`MemPriv::RemoteAtomic`]) no DTO or
    /// grant can make the device write the pages, so they are mapped for the device to read
    /// only (`DMA_TO_DEVICE`); otherwise both ways. Allocates with `flags`: any context with
    /// `GFP_ATOMIC`, process context (may sleep) with `GFP_KERNEL`.
    ///
    /// On an error `owner` is dropped before this returns.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an empty list, an entry without a page or length; `-ENOMEM`, `-EIO` if
    /// the DMA mapping fails, or the registry's error (`-ENODEV` after
    /// device removal).
    pub(crate) fn from_sg_owner(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        owner: Lender,
        privileges: MemPrivs,
        flags: kernel::alloc::Flags,
    ) -> Result<Cpu> {
        let dir = if !privileges.device_writes() {
            DataDirection::ToDevice
        } else {
            DataDirection::Bidirectional
        };
        let region = DmaRegion::from_sg_owner_gfp(dev, owner, dir, flags)?;
        let lmr = Self::make(pz, region, privileges, None, flags)?;
        Ok(Cpu { lmr, mem: None })
    }

    /// The lkey local DTOs use for this region.
    pub(crate) fn lkey(&self) -> u32 {
        self.pz.lkey
    }

    /// Makes what the CPU wrote to `[offset, offset + length)` visible to the device
    /// (`rkdapl_lmr_sync_rdma_read`, DAT's `dat_lmr_sync_rdma_read`). Any context.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the LMR, `-ENODEV` after device removal.
    pub(crate) fn sync_rdma_read(&self, offset: u64, length: u64) -> Result {
        self.sync(offset, length, true)
    }

    /// Makes what the device wrote to `[offset, offset + length)` visible to the CPU
    /// (`rkdapl_lmr_sync_rdma_write`, DAT's `dat_lmr_sync_rdma_write`). Any context.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the LMR, `-ENODEV` after device removal.
    pub(crate) fn sync_rdma_write(&self, offset: u64, length: u64) -> Result {
        self.sync(offset, length, false)
    }

    fn sync(&self, offset: u64, length: u64, for_device: bool) -> Result {
        self.range(offset, length)?;
        let region = self.region.try_access().ok_or(ENODEV)?;
        if for_device {
            region.sync_for_device(offset, length);
        } else {
            region.sync_for_cpu(offset, length);
        }
        Ok(())
    }

    /// `[offset, offset + length)` as `usize`s, if inside the LMR.
    fn range(&self, offset: u64, length: u64) -> Result<(usize, usize)> {
        let end = offset.checked_add(length).ok_or(ERANGE)?;
        if end > self.len {
            return Err(ERANGE);
        }
        // Cannot fail: the region's length is a `usize`.
        Ok((offset as usize, length as usize))
    }

    /// Device removal: unmaps the region (waits for users in RCU read sections). Process
    /// context; sleeps.
    pub(crate) fn revoke(&self) {
        self.region.revoke();
    }
}

/// A DTO's use of an LMR: keeps it busy (`rkdapl_lmr_free` refuses it) and reachable until
/// dropped, without a reference of its own, so that posting a segment costs one atomic
/// operation on the LMR and its completion one more. What a DTO's context holds for each of
/// its segments.
///
/// # Invariants
///
/// `lmr` points to an [`Lmr`] whose count of users counts this one: its registry keeps it
/// alive meanwhile (see [`Lmr`]).
pub(crate) struct LmrUse {
    lmr: NonNull<Lmr>,
}

// SAFETY: An `LmrUse` gives only a shared reference to an `Lmr`, which is `Sync`, and gives the
// use back with `Lmr::put`, which any thread may call.
unsafe impl Send for LmrUse {}

// SAFETY: A shared `LmrUse` gives only a shared reference to an `Lmr`, which is `Sync`.
unsafe impl Sync for LmrUse {}

impl LmrUse {
    /// Starts a DTO's use of `lmr`, which the caller holds. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the LMR was freed and is unused (a free racing the post call, as with a
    /// freed handle).
    #[inline]
    pub(crate) fn new(lmr: &Lmr) -> Result<LmrUse> {
        // Relaxed, as `Lmr::get`. Against `Lmr::free`'s compare-and-exchange, one of the two
        // RMWs comes first in the count's order and the other sees it: either the free is
        // refused, or this sees the LMR freed and unused. A freed LMR that still has users
        // (the Rust API dropped it under a grant, whose unbind is posted now) stays in its
        // registry until the last of them, this one included, is given back.
        if lmr.users.fetch_add(1, Ordering::Relaxed) == FREED {
            // The caller's reference keeps the LMR through this.
            lmr.put();
            return Err(EINVAL);
        }
        // INVARIANT: The count counts this use, and the LMR was not freed, so its registry
        // holds it until the use is given back.
        Ok(LmrUse {
            lmr: NonNull::from(lmr),
        })
    }
}

impl core::ops::Deref for LmrUse {
    type Target = Lmr;

    #[inline]
    fn deref(&self) -> &Lmr {
        // SAFETY: The LMR lives while its count counts this use (the type's invariant), which
        // is until `self` is dropped.
        unsafe { self.lmr.as_ref() }
    }
}

impl Drop for LmrUse {
    /// Gives the use back: the context is [`Lmr::put`]'s.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: The LMR lives and its count counts this use (the type's invariant), which
        // ends here.
        unsafe { Lmr::put_ptr(self.lmr.as_ptr()) };
    }
}

impl Child for Lmr {
    fn rank(&self) -> Rank {
        Rank::Lmr
    }

    fn revoke(&self) {
        Lmr::revoke(self)
    }

    /// After [`Child::revoke`] (the region is unmapped): now, or with its last user (there is
    /// none left: the EPs, SRQs and RMRs of the device were revoked first).
    fn release(&self) {
        self.free_when_unused();
    }

    fn parent(&self) -> Option<Arc<dyn Child>> {
        Some(self.pz.clone())
    }

    fn slot(&self) -> Option<&RegSlot> {
        Some(&self.reg)
    }
}

/// The CPU's access to the memory an LMR owns: copies in and out with the DMA sync rules.
///
/// `mem` is the CPU access of the memory the LMR's region owns (the layer makes it the only
/// one: CPU writes need `&mut`); `None` for an LMR over pages an owner keeps
/// ([`Lmr::from_sg_owner`]), which the CPU reaches through their owner.
pub(crate) struct Cpu {
    lmr: Arc<Lmr>,
    mem: Option<CpuAccess>,
}

impl Cpu {
    /// Makes the LMR over `region`, which owns the memory `mem` reaches.
    fn new(pz: Arc<Pz>, region: DmaRegion, mem: CpuAccess, privileges: MemPrivs) -> Result<Cpu> {
        let lmr = Lmr::make(pz, region, privileges, None, GFP_KERNEL)?;
        Ok(Cpu {
            lmr,
            mem: Some(mem),
        })
    }

    /// The LMR.
    pub(crate) fn lmr(&self) -> &Arc<Lmr> {
        &self.lmr
    }

    /// Copies `data` to offset `offset` and makes it visible to the device
    /// (`rkdapl_lmr_sync_rdma_read`), for a SEND, an RDMA WRITE source or a peer's READ. Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the LMR, `-ENODEV` after device removal (the bytes are
    /// copied all the same), `-EINVAL` for an LMR over an owner's pages.
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> Result {
        let (off, len) = self.lmr.range(offset, data.len() as u64)?;
        self.mem.as_mut().ok_or(EINVAL)?.write(off, data)?;
        self.lmr.sync_rdma_read(offset, len as u64)
    }

    /// Makes what the device wrote at `offset` visible (`rkdapl_lmr_sync_rdma_write`) and
    /// copies it into `out`, after a RECV or RDMA READ completion or a peer's WRITE. Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the LMR, `-ENODEV` after device removal, `-EINVAL` for an
    /// LMR over an owner's pages.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) -> Result {
        let (off, len) = self.lmr.range(offset, out.len() as u64)?;
        let mem = self.mem.as_ref().ok_or(EINVAL)?;
        self.lmr.sync_rdma_write(offset, len as u64)?;
        mem.read(off, out)
    }
}
