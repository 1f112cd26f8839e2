// SPDX-License-Identifier: GPL-2.0

//! LMR: local memory region (DAT 2.0 section 6.7), kernel memory mapped for the device and
//! reachable by local DTOs with the PZ's local DMA lkey: the consumer's buffer (kmalloc'd or
//! vmalloc'd), an array of its pages, a scatterlist it built, or memory the LMR owns and frees
//! with itself (a buffer rkdapl allocates, or a Rust consumer's buffer or pages handed over).
//!
//! The memory an LMR owns is reached by the CPU through the LMR's one [`Cpu`] access, which
//! copies and applies the DMA sync rules. The `unsafe` of this file is what the layer does not
//! offer yet: mapping memory the region itself owns, and copying into pages (issue 14, item 1).

use crate::{
    pz::Pz,
    registry::{Child, Rank},
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    page::{Page, PAGE_SIZE},
    prelude::*,
    rdma::{device::Device, mr::DmaRegion},
    revocable::Revocable,
    sync::Arc,
};

/// Local write: RECVs and RDMA READs may place data in the LMR (`RKDAPL_MEM_LOCAL_WRITE`).
pub const MEM_LOCAL_WRITE: u32 = 1 << 0;
/// Remote read may be granted through an RMR over the LMR (`RKDAPL_MEM_REMOTE_READ`).
pub const MEM_REMOTE_READ: u32 = 1 << 1;
/// Remote write may be granted through an RMR over the LMR (`RKDAPL_MEM_REMOTE_WRITE`).
pub const MEM_REMOTE_WRITE: u32 = 1 << 2;
/// All privilege bits.
pub(crate) const MEM_ALL: u32 = MEM_LOCAL_WRITE | MEM_REMOTE_READ | MEM_REMOTE_WRITE;

/// Largest LMR [`Lmr::alloc`] makes, in bytes.
pub const MAX_ALLOC: u64 = 1 << 30;

/// Memory an LMR owns, freed with it after the region over it is unmapped.
pub(crate) enum Memory {
    /// kvmalloc'd (`rkdapl_lmr_alloc`) or kmalloc'd (a Rust consumer's buffer) bytes.
    Buf {
        /// The bytes; only dropped.
        _buf: Buffer,
        /// The address of the first, taken from the vector's mutable pointer.
        at: usize,
    },
    /// A Rust consumer's pages, and the region's offset into the first.
    Pages(KVec<Page>, usize),
}

/// A buffer of bytes an LMR owns.
pub(crate) enum Buffer {
    /// kvmalloc'd.
    Vmalloc(KVVec<u8>),
    /// kmalloc'd.
    Kmalloc(KVec<u8>),
}

/// A local memory region.
///
/// The region (the DMA mapping) is revocable: device removal unmaps it after every EP of the
/// device has been drained, and later uses get `-ENODEV`. Registered with its IA from its
/// creation to [`Lmr::free`].
///
/// Dropping it (fields in declaration order) unmaps the region, frees rkdapl's buffer, then
/// lets go of the PZ. No lock is taken: the last reference may go where a DTO's does.
///
/// # Invariants
///
/// If `cpu_addr` is `Some(a)`, the `len` bytes from kernel virtual address `a` are the memory
/// `region` maps, readable for as long as the LMR exists. If `mem` is `Some`, it is the memory
/// `region` maps (a `Buf`'s `len` bytes from `at`, or a `Pages`' `len` bytes from its
/// offset), owned by the LMR.
#[pin_data]
pub(crate) struct Lmr {
    /// In an `Arc` so that an RMR bind can keep it for `FrMr::map`, which allocates and so
    /// cannot run in the RCU read section `try_access` opens (the bind holds the IA live, so
    /// device removal does not revoke it meanwhile).
    #[pin]
    pub(crate) region: Revocable<Arc<DmaRegion>>,
    /// The memory the LMR owns, freed after the region is unmapped (fields drop in
    /// declaration order).
    mem: Option<Memory>,
    /// The region's length in bytes.
    pub(crate) len: u64,
    /// The kernel virtual address of the region's first byte when the region is virtually
    /// contiguous (a kmalloc'd or vmalloc'd buffer, or rkdapl's own): what inline work requests
    /// name, since the CPU copies inline data at post time. `None` for page arrays and
    /// scatterlists.
    pub(crate) cpu_addr: Option<usize>,
    pub(crate) privileges: u32,
    /// DTOs and RMR bindings currently using the region.
    pub(crate) inflight: AtomicU32,
    pub(crate) pz: Arc<Pz>,
}

impl Lmr {
    /// Wraps a mapped region (`privileges`: a mask of `MEM_*`); with `mem`, the memory it
    /// maps, which the LMR owns and frees after unmapping it. Registers the LMR with its IA;
    /// the caller holds the IA live ([`crate::ia::Ia::live`]). May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for unknown privilege bits or a region mapped for another device, `-ENOMEM`,
    /// or the registry's error (`-ENODEV` after device removal).
    pub(crate) fn with_buffer(
        pz: Arc<Pz>,
        region: DmaRegion,
        privileges: u32,
        mem: Option<Memory>,
    ) -> Result<Arc<Lmr>> {
        if privileges & !MEM_ALL != 0 || !pz.ia.same_device(region.device()) {
            return Err(EINVAL);
        }
        let len = region.len() as u64;
        // INVARIANT: A region with a kernel address was made from a virtually contiguous buffer
        // (`DmaRegion::new`), whose memory stays allocated while the region exists (its
        // constructor's contract), and the LMR owns the region. `mem` is the memory the
        // region maps (the callers' contract: `Lmr::owning`).
        let cpu_addr = (region.addr() != 0).then(|| region.addr());
        let region = Arc::new(region, GFP_KERNEL)?;
        let lmr = Arc::pin_init(
            pin_init!(Lmr {
                pz,
                region <- Revocable::new(region),
                mem,
                len,
                cpu_addr,
                privileges,
                inflight: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )?;
        lmr.pz.ia.children.add(lmr.clone(), None)?;
        Ok(lmr)
    }

    /// `rkdapl_lmr_free`: the consumer lets go of the LMR; it leaves its IA's registry, and the
    /// region is unmapped when the last reference goes. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EBUSY` while a DTO or an RMR binding uses the region (nothing changes).
    pub(crate) fn free(&self) -> Result {
        if self.busy() {
            return Err(EBUSY);
        }
        self.pz.ia.children.remove(self);
        Ok(())
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
    /// live (`rkdapl_lmr_alloc`). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a length of 0 or above 1 GiB or unknown privileges, `-ENOMEM`, `-EIO` if
    /// the DMA mapping fails.
    pub(crate) fn alloc(pz: Arc<Pz>, dev: &Device, length: u64, privileges: u32) -> Result<Cpu> {
        Self::check_alloc(length)?;
        let buf = KVVec::from_elem(0u8, length as usize, GFP_KERNEL)?;
        Self::owning(pz, dev, Buffer::Vmalloc(buf), privileges)
    }

    /// The LMR over a Rust consumer's kmalloc'd `buf`, which it owns from now on. Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an empty buffer or unknown privileges, `-ENOMEM`, `-EIO` if the DMA
    /// mapping fails.
    pub(crate) fn from_kvec(
        pz: Arc<Pz>,
        dev: &Device,
        buf: KVec<u8>,
        privileges: u32,
    ) -> Result<Cpu> {
        Self::owning(pz, dev, Buffer::Kmalloc(buf), privileges)
    }

    /// Maps `buf` and makes the LMR that owns both.
    fn owning(pz: Arc<Pz>, dev: &Device, mut buf: Buffer, privileges: u32) -> Result<Cpu> {
        let (at, len) = match &mut buf {
            Buffer::Vmalloc(v) => (v.as_mut_ptr() as usize, v.len()),
            Buffer::Kmalloc(v) => (v.as_mut_ptr() as usize, v.len()),
        };
        // SAFETY: The LMR made below owns `buf` and drops it only after the region (field
        // order of `Lmr`); a vector's heap memory does not move when the vector does.
        let region = unsafe { DmaRegion::new(dev, at, len) }?;
        let lmr = Self::with_buffer(pz, region, privileges, Some(Memory::Buf { _buf: buf, at }))?;
        // INVARIANT: The first and only `Cpu` of this LMR, which owns its memory.
        Ok(Cpu(lmr))
    }

    /// The LMR over `len` bytes of a Rust consumer's `pages` from `offset` into the first
    /// (`offset < PAGE_SIZE`), which it owns from now on. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for no pages, an offset of a page or more, a zero length or one beyond the
    /// pages, unknown privileges; `-ENOMEM`, `-EIO` if the DMA mapping fails.
    pub(crate) fn from_pages(
        pz: Arc<Pz>,
        dev: &Device,
        pages: KVec<Page>,
        offset: usize,
        len: usize,
        privileges: u32,
    ) -> Result<Cpu> {
        let mut raw = KVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for p in pages.iter() {
            raw.push(p.as_ptr(), GFP_KERNEL)?;
        }
        // SAFETY: The LMR made below owns `pages` and drops them only after the region (field
        // order of `Lmr`).
        let region = unsafe { DmaRegion::from_pages(dev, &raw, offset, len) }?;
        let mem = Memory::Pages(pages, offset);
        let lmr = Self::with_buffer(pz, region, privileges, Some(mem))?;
        // INVARIANT: The first and only `Cpu` of this LMR, which owns its memory.
        Ok(Cpu(lmr))
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

    /// Whether a DTO or binding still uses the region.
    pub(crate) fn busy(&self) -> bool {
        self.inflight.load(Ordering::Acquire) != 0
    }
}

impl Child for Lmr {
    fn rank(&self) -> Rank {
        Rank::Lmr
    }

    fn revoke(&self) {
        Lmr::revoke(self)
    }

    /// After [`Child::revoke`] (the region is unmapped), busy or not.
    fn release(&self) {
        self.pz.ia.children.remove(self);
    }

    fn parent(&self) -> Option<Arc<dyn Child>> {
        Some(self.pz.clone())
    }
}

/// The CPU's access to the memory an LMR owns: copies in and out with the DMA sync rules.
///
/// # Invariants
///
/// The LMR's `mem` is `Some`, and this is the only `Cpu` of the LMR: CPU writes to its memory
/// happen only through `&mut Cpu`, so no CPU access runs at the same time as one.
pub(crate) struct Cpu(Arc<Lmr>);

impl Cpu {
    /// The LMR.
    pub(crate) fn lmr(&self) -> &Arc<Lmr> {
        &self.0
    }

    /// Gives up the CPU access, keeping the LMR (the C ABI hands out the address instead).
    pub(crate) fn into_lmr(self) -> Arc<Lmr> {
        self.0
    }

    /// Copies `data` to offset `offset` and makes it visible to the device
    /// (`rkdapl_lmr_sync_rdma_read`), for a SEND, an RDMA WRITE source or a peer's READ. Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the LMR, `-ENODEV` after device removal (the bytes are
    /// copied all the same).
    pub(crate) fn write(&mut self, offset: u64, data: &[u8]) -> Result {
        let (off, len) = self.0.range(offset, data.len() as u64)?;
        match &self.0.mem {
            Some(Memory::Buf { at, .. }) => {
                // SAFETY: `[at + off, at + off + len)` is inside the buffer the LMR owns
                // (checked range, type invariants of `Lmr`); no other CPU access runs now
                // (`&mut self`, type invariant); the device's accesses are DMA, synced below.
                unsafe {
                    core::ptr::copy_nonoverlapping(data.as_ptr(), (*at + off) as *mut u8, len)
                }
            }
            Some(Memory::Pages(pages, first)) => {
                for_pages(pages, first + off, len, |page, at, done, n| {
                    // SAFETY: `data[done..done + n]` is readable; `[at, at + n)` lies inside
                    // `page` (`for_pages`); no other CPU access runs now (as above).
                    unsafe { page.write_raw(data[done..].as_ptr(), at, n) }
                })?
            }
            None => return Err(EINVAL),
        }
        self.0.sync_rdma_read(offset, len as u64)
    }

    /// Makes what the device wrote at `offset` visible (`rkdapl_lmr_sync_rdma_write`) and
    /// copies it into `out`, after a RECV or RDMA READ completion or a peer's WRITE. Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-ERANGE` if the range leaves the LMR, `-ENODEV` after device removal.
    pub(crate) fn read(&self, offset: u64, out: &mut [u8]) -> Result {
        let (off, len) = self.0.range(offset, out.len() as u64)?;
        self.0.sync_rdma_write(offset, len as u64)?;
        match &self.0.mem {
            Some(Memory::Buf { at, .. }) => {
                // SAFETY: As in `write`: inside the owned buffer; CPU writes need `&mut self`.
                unsafe {
                    core::ptr::copy_nonoverlapping((*at + off) as *const u8, out.as_mut_ptr(), len)
                }
            }
            Some(Memory::Pages(pages, first)) => {
                for_pages(pages, first + off, len, |page, at, done, n| {
                    // SAFETY: `out[done..done + n]` is writable; `[at, at + n)` lies inside
                    // `page`; CPU writes need `&mut self`.
                    unsafe { page.read_raw(out[done..].as_mut_ptr(), at, n) }
                })?
            }
            None => return Err(EINVAL),
        }
        Ok(())
    }
}

/// Calls `f(page, offset in page, bytes done, bytes)` for each piece of the `len` bytes at
/// byte `start` of the pages `pages`.
///
/// # Errors
///
/// `-ERANGE` if the bytes leave the pages, or `f`'s error.
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
