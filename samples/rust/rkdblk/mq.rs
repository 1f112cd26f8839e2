// SPDX-License-Identifier: GPL-2.0

//! A small blk-mq binding for rkdblk: what `kernel::block::mq` of this kernel (7.3) lacks for a
//! real driver, and the only `unsafe` code of the client.
//!
//! `kernel::block::mq` (what rnull uses) gives a request no driver data, no sector, length,
//! operation or data pages, ends requests only with success and has no timeout callback; the
//! kernel crate is not ours to change, so this module binds the C API directly, in the same
//! shape: a [`Disk`] owns the tag set and the gendisk; blk-mq hands each request to
//! [`Driver::queue_rq`] as an [`Rq`], a token that ends the request exactly once
//! ([`Rq::end`], or `BLK_STS_IOERR` when dropped). The request's data is reached through a
//! scatterlist kept in blk-mq's per-request data (`cmd_size`): [`Rq::copy_out_with`] hands its
//! pieces, mapped, to a closure that copies them (an in-capsule write), and [`Rq::pages`] lends
//! them to an RDMA region without a copy ([`RqPages`], an [`SgOwner`]).
//!
//! A lent request ends when both its [`Rq`] was ended and its [`RqPages`] dropped, whichever
//! comes last (a count in the per-request data, as nvme-rdma's `req->ref`): the driver ends
//! the request when its answer is in, and blk-mq gets it back only once the pages are no
//! longer mapped for the device.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use kernel::{bindings, error::to_result, prelude::*, sync::Arc};
use rkdapl::api::SgOwner;

/// Scatterlist entries per request: the queue's `max_segments`.
pub(crate) const MAX_SEGS: usize = 64;

/// What a request asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ReqOp {
    /// Read `bytes()` from `sector()`.
    Read,
    /// Write `bytes()` at `sector()`.
    Write,
    /// Make earlier completed writes durable.
    Flush,
    /// Anything else (discard, zone operations, ...): not supported.
    Other,
}

/// The driver side of a [`Disk`].
pub(crate) trait Driver: Send + Sync + Sized + 'static {
    /// A request for hardware queue `hctx`, started (its timer runs). The driver owns it and
    /// ends it with [`Rq::end`], from any context. Called in process context (the tag set is
    /// `BLK_MQ_F_BLOCKING`): may sleep.
    fn queue_rq(&self, hctx: u32, rq: Rq);

    /// The request with `tag` on hardware queue `hctx` timed out. Returns `true` if the driver
    /// ended it (through its [`Rq`]) or will end it without blk-mq's timer (`BLK_EH_DONE`),
    /// `false` to have the timer restarted (`BLK_EH_RESET_TIMER`). Process context (blk-mq's
    /// timeout work, which holds a reference on the request); must not wait for it.
    fn timeout(&self, hctx: u32, tag: u32) -> bool;
}

/// blk-mq's per-request data of a [`Disk`] (`cmd_size`): the request's scatterlist, and who
/// holds the request.
///
/// `sg`, `nents` and `lent` are written only by the [`Rq`] (`&mut`), before any [`RqPages`]
/// exists, but for the DMA addresses and lengths of `sg`'s entries, which the one region the
/// list is lent to writes (`SgOwner`);
/// `refs` and `errno` are shared by the `Rq` and its `RqPages` and reached only as `&` fields
/// (never through a `&mut Pdu`).
#[repr(C)]
struct Pdu {
    sg: [bindings::scatterlist; MAX_SEGS],
    nents: u32,
    /// The list was lent ([`Rq::pages`]): at most once, as the region maps it in place.
    lent: bool,
    /// The [`Rq`] (until ended) and the [`RqPages`] of the request: the last to go ends it.
    refs: AtomicU32,
    /// The errno [`Rq::end`] ended it with (0: success), read by the last of `refs`.
    errno: AtomicI32,
}

/// The per-request data of `rq`.
fn pdu_of(rq: NonNull<bindings::request>) -> *mut Pdu {
    // SAFETY: every request of a `Disk`'s tag set has `cmd_size` = `size_of::<Pdu>()` bytes
    // after it (`blk_mq_rq_to_pdu`), suitably aligned; this only computes the address.
    unsafe { bindings::blk_mq_rq_to_pdu(rq.as_ptr()).cast::<Pdu>() }
}

/// Lets go of one hold on `rq` (its [`Rq`]'s or an [`RqPages`]'); the last ends the request
/// with the errno its `Rq` stored. Any context.
///
/// # Safety
///
/// The caller holds one of the request's `refs` and gives it up here.
unsafe fn put(rq: NonNull<bindings::request>) {
    let p = pdu_of(rq);
    // SAFETY: the request is live while a hold remains (the caller's); `refs` and `errno` are
    // only reached as shared atomics (`Pdu`).
    let (refs, errno) = unsafe { (&(*p).refs, &(*p).errno) };
    // AcqRel: the last one sees the errno the `Rq` stored before its own decrement.
    if refs.fetch_sub(1, Ordering::AcqRel) == 1 {
        let e = errno.load(Ordering::Relaxed);
        // SAFETY: the last hold on the live request is gone: the driver gives it back once.
        unsafe { bindings::blk_mq_end_request(rq.as_ptr(), bindings::errno_to_blk_status(e)) };
    }
}

/// A started request the driver owns: ended exactly once, by [`Rq::end`] or when dropped
/// (blk-mq gets it back then, or when its last [`RqPages`] goes, if later).
///
/// # Invariants
///
/// `0` is a request blk-mq handed to `queue_rq` of a [`Disk`] and that was not ended: the
/// driver owns it, blk-mq does not touch it until `blk_mq_end_request`; this token holds one
/// of its `refs`.
pub(crate) struct Rq(NonNull<bindings::request>);

/// The data pages of a request, lent to an RDMA region ([`Rq::pages`]; an [`SgOwner`]): the
/// request does not end, and its pages stay, until this is dropped.
///
/// # Invariants
///
/// `0` is a live request of a [`Disk`] whose scatterlist was mapped, and this holds one of its
/// `refs`.
pub(crate) struct RqPages(NonNull<bindings::request>);

// SAFETY: the value stands for a hold on the request, given up from any CPU and context
// (`put` uses only the per-request atomics and `blk_mq_end_request`).
unsafe impl Send for RqPages {}
// SAFETY: `&RqPages` only computes the address of the request's scatterlist and reads its
// `nents`, which nothing writes meanwhile (`Pdu`).
unsafe impl Sync for RqPages {}

// SAFETY: the scatterlist is the request's, in its per-request data (it does not move while
// the request lives), filled by `sg_init_table` and `__blk_rq_map_sg` before this value was
// made (so its DMA fields and flags are clear; `Rq::pages` lends only a list of at least one
// entry, which `Rq::map` never fills again). It is lent once (`Pdu::lent`), and from then on
// the `Rq` does not touch it (`copy_out_with` refuses a lent request): only the region does,
// until this value is dropped. It names the request's data pages, which stay allocated until
// the request ends, which needs this value's hold.
unsafe impl SgOwner for RqPages {
    fn sg(&self) -> (*mut bindings::scatterlist, usize) {
        let p = pdu_of(self.0);
        // SAFETY: the request is live (type invariant); the fields are only read.
        unsafe {
            (
                core::ptr::addr_of_mut!((*p).sg).cast::<bindings::scatterlist>(),
                (*p).nents as usize,
            )
        }
    }
}

impl Drop for RqPages {
    fn drop(&mut self) {
        // SAFETY: this value's hold (type invariant), given up once.
        unsafe { put(self.0) };
    }
}

// SAFETY: the token stands for ownership of the request, which blk-mq lets its driver end from
// any CPU and context.
unsafe impl Send for Rq {}

const REQ_OP_MASK: u32 = (1 << bindings::REQ_OP_BITS) - 1;
const REQ_FUA: u32 = 1 << bindings::req_flag_bits___REQ_FUA;

impl Rq {
    /// The request's scatterlist and its count of mapped entries.
    fn sg(&mut self) -> (*mut bindings::scatterlist, &mut u32) {
        let p = pdu_of(self.0);
        // SAFETY: the live request's `sg` and `nents`, written only by its `Rq` (`&mut self`;
        // `Pdu`), never through `refs`' and `errno`'s shared references.
        unsafe {
            (
                core::ptr::addr_of_mut!((*p).sg).cast::<bindings::scatterlist>(),
                &mut *core::ptr::addr_of_mut!((*p).nents),
            )
        }
    }

    /// Whether the request's scatterlist was lent ([`Rq::pages`]).
    fn lent(&mut self) -> &mut bool {
        let p = pdu_of(self.0);
        // SAFETY: the live request's `lent`, written only by its `Rq` (`&mut self`; `Pdu`).
        unsafe { &mut *core::ptr::addr_of_mut!((*p).lent) }
    }

    /// Lends the request's data pages ([`RqPages`]): the request ends only once the returned
    /// value is dropped too, whenever [`Rq::end`] is called. `None` for a request without data
    /// (nothing to lend; its scatterlist stays unmapped), and after the first call: the region
    /// maps the list in place, so it is lent once. Any context.
    pub(crate) fn pages(&mut self) -> Option<RqPages> {
        if self.map() == 0 {
            return None;
        }
        if core::mem::replace(self.lent(), true) {
            return None;
        }
        let p = pdu_of(self.0);
        // SAFETY: the live request's hold count, reached as a shared atomic (`Pdu`).
        unsafe { &(*p).refs }.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: mapped above (at least one entry, so `map` never maps it again); the hold
        // was just taken.
        Some(RqPages(self.0))
    }

    /// The request's tag (below the tag set's depth). Any context.
    pub(crate) fn tag(&self) -> u32 {
        // SAFETY: (for this and the accessors below) by the type invariant the request is live
        // and owned by the driver; its tag, operation, sector and length were set before
        // `queue_rq` and do not change while the driver owns it.
        unsafe { (*self.0.as_ptr()).tag as u32 }
    }

    /// The operation. Any context.
    pub(crate) fn op(&self) -> ReqOp {
        // SAFETY: see `tag`.
        let flags = unsafe { (*self.0.as_ptr()).cmd_flags };
        match flags & REQ_OP_MASK {
            bindings::req_op_REQ_OP_READ => ReqOp::Read,
            bindings::req_op_REQ_OP_WRITE => ReqOp::Write,
            bindings::req_op_REQ_OP_FLUSH => ReqOp::Flush,
            _ => ReqOp::Other,
        }
    }

    /// Whether a write must be durable before it completes (`REQ_FUA`). Any context.
    pub(crate) fn fua(&self) -> bool {
        // SAFETY: see `tag`.
        unsafe { (*self.0.as_ptr()).cmd_flags & REQ_FUA != 0 }
    }

    /// The first 512-byte sector. Any context.
    pub(crate) fn sector(&self) -> u64 {
        // SAFETY: see `tag`.
        unsafe { (*self.0.as_ptr()).__sector }
    }

    /// Bytes to transfer. Any context.
    pub(crate) fn bytes(&self) -> u32 {
        // SAFETY: see `tag`.
        unsafe { (*self.0.as_ptr()).__data_len }
    }

    /// Maps the request's data pages into its scatterlist (`blk_rq_map_sg`); returns the
    /// entries. Done once, by [`Rq::copy_out_with`] or [`Rq::pages`].
    fn map(&mut self) -> u32 {
        let rq = self.0.as_ptr();
        let (sg, nents) = self.sg();
        if *nents == 0 {
            let mut last: *mut bindings::scatterlist = core::ptr::null_mut();
            // SAFETY: see `tag`; set by blk-mq before `queue_rq`.
            let segs = unsafe { (*rq).nr_phys_segments };
            // Only the entries the request maps into are initialised (as nvme-rdma's
            // `sg_alloc_table_chained`): clearing all `MAX_SEGS` cost 2 KiB of stores per I/O.
            let segs = u32::from(segs).clamp(1, MAX_SEGS as u32);
            // SAFETY: `sg` has `MAX_SEGS` entries, the queue's `max_segments`, of which blk-mq
            // maps at most the request's `nr_phys_segments` (`blk_rq_map_sg`'s own check);
            // `rq` is a live request owned by us. No `RqPages` exists yet (`pages` maps first).
            let n = unsafe {
                bindings::sg_init_table(sg, segs);
                bindings::__blk_rq_map_sg(rq, sg, &mut last)
            };
            *nents = n.max(0) as u32;
        }
        *nents
    }

    /// Calls `f(done, piece)` for each piece of the request's data (a write's), in order:
    /// `piece` is the data from byte `done` on, mapped (`kmap_local`, a page at most). The
    /// caller copies it where it goes (one copy, no buffer of its own). Any context; `f` must
    /// not sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` once the pages were lent ([`Rq::pages`]); `f`'s first error (the pieces after
    /// it are not visited).
    pub(crate) fn copy_out_with(&mut self, mut f: impl FnMut(usize, &[u8]) -> Result) -> Result {
        self.for_each_piece(bindings::SG_MITER_FROM_SG, |done, at, len| {
            // SAFETY: `at` maps `len` bytes of the request's pages (`for_each_piece`), which
            // nothing writes while the driver holds a write request.
            f(done, unsafe { core::slice::from_raw_parts(at, len) })
        })
    }

    /// Walks the request's mapped scatterlist with `sg_miter` (`SG_MITER_LOCAL | flags`):
    /// `f(done, at, len)` for each piece, mapped at `at` until `f` returns.
    fn for_each_piece(
        &mut self,
        flags: u32,
        mut f: impl FnMut(usize, *mut u8, usize) -> Result,
    ) -> Result {
        if *self.lent() {
            // Lent to a region, which maps it in place (with an IOMMU, mapping rewrites the
            // entries' offsets and lengths for a while): not ours to read any more.
            return Err(EINVAL);
        }
        let n = self.map();
        let (sg, _) = self.sg();
        let mut miter = bindings::sg_mapping_iter::default();
        // SAFETY: `sg` holds the `n` mapped entries of the request's pages, which stay
        // allocated while we own the request; `miter` is ours until `sg_miter_stop`.
        unsafe { bindings::sg_miter_start(&mut miter, sg, n, bindings::SG_MITER_LOCAL | flags) };
        let mut done = 0;
        let mut result = Ok(());
        // SAFETY: `miter` was started above and is not stopped yet; each piece it maps
        // (`length` bytes at `addr`, kmap_local) stays mapped until the next call or the stop.
        while unsafe { bindings::sg_miter_next(&mut miter) } {
            if let Err(e) = f(done, miter.addr.cast::<u8>(), miter.length) {
                result = Err(e);
                break;
            }
            done += miter.length;
        }
        // SAFETY: `miter` was started above; this unmaps its last piece.
        unsafe { bindings::sg_miter_stop(&mut miter) };
        result
    }

    /// Ends the request: successfully, or with the block status of the errno; blk-mq gets it
    /// back now, or when its [`RqPages`] goes if that is later. Any context.
    pub(crate) fn end(self, result: Result) {
        let rq = self.0;
        core::mem::forget(self);
        // SAFETY: the token's hold (type invariant), given up once: the token is forgotten.
        unsafe { end_with(rq, result.err().map_or(0, |e| e.to_errno())) };
    }
}

/// Stores `errno` for the request and gives up its [`Rq`]'s hold.
///
/// # Safety
///
/// The caller holds the request's `Rq` hold and gives it up here.
unsafe fn end_with(rq: NonNull<bindings::request>, errno: i32) {
    let p = pdu_of(rq);
    // SAFETY: the live request's errno, reached as a shared atomic (`Pdu`); `put` publishes it.
    unsafe { &(*p).errno }.store(errno, Ordering::Relaxed);
    // SAFETY: the caller's hold.
    unsafe { put(rq) };
}

impl Drop for Rq {
    /// A request the driver dropped unended fails with `BLK_STS_IOERR`.
    fn drop(&mut self) {
        // SAFETY: the token's hold (type invariant); `drop` runs once and `end` forgets the
        // token, so the hold is given up exactly once.
        unsafe { end_with(self.0, EIO.to_errno()) };
    }
}

/// The `blk_mq_ops` of a [`Disk`] of `D`.
struct Ops<D: Driver>(core::marker::PhantomData<D>);

impl<D: Driver> Ops<D> {
    /// # Safety
    ///
    /// Called by blk-mq for a hardware context of a `Disk<D>`'s queue, whose `queuedata` is
    /// the `D` the `Disk` keeps alive, with a started request it hands to the driver.
    unsafe extern "C" fn queue_rq(
        hctx: *mut bindings::blk_mq_hw_ctx,
        bd: *const bindings::blk_mq_queue_data,
    ) -> bindings::blk_status_t {
        // SAFETY: by the function's safety requirements `hctx` and `bd` are valid, and
        // `queuedata` points to the `D` the `Disk` holds for as long as the queue lives.
        let (driver, index, rq) = unsafe {
            (
                &*(*(*hctx).queue).queuedata.cast::<D>(),
                (*hctx).queue_num,
                (*bd).rq,
            )
        };
        let Some(rq) = NonNull::new(rq) else {
            return bindings::BLK_STS_OK as bindings::blk_status_t;
        };
        // SAFETY: `rq` is the request blk-mq hands us; starting it is the driver's first duty.
        unsafe { bindings::blk_mq_start_request(rq.as_ptr()) };
        let p = pdu_of(rq);
        // SAFETY: blk-mq just handed us the request: nothing else reaches its data.
        unsafe {
            (*p).nents = 0;
            (*p).lent = false;
            (*p).refs = AtomicU32::new(1);
            (*p).errno = AtomicI32::new(0);
        }
        // INVARIANT: blk-mq handed the started request to the driver; the one hold is its.
        driver.queue_rq(index, Rq(rq));
        bindings::BLK_STS_OK as bindings::blk_status_t
    }

    /// # Safety
    ///
    /// Called by blk-mq's timeout work for a request of a `Disk<D>` the driver owns.
    unsafe extern "C" fn timeout(rq: *mut bindings::request) -> bindings::blk_eh_timer_return {
        // SAFETY: `rq`, its hardware context and queue are valid during the call; `queuedata`
        // is the `D` the `Disk` holds.
        let (driver, index, tag) = unsafe {
            (
                &*(*(*rq).q).queuedata.cast::<D>(),
                (*(*rq).mq_hctx).queue_num,
                (*rq).tag as u32,
            )
        };
        if driver.timeout(index, tag) {
            bindings::blk_eh_timer_return_BLK_EH_DONE
        } else {
            bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER
        }
    }

    const OPS: bindings::blk_mq_ops = bindings::blk_mq_ops {
        queue_rq: Some(Self::queue_rq),
        timeout: Some(Self::timeout),
        // SAFETY: all-zero is a valid `blk_mq_ops` (no further callbacks).
        ..unsafe { core::mem::zeroed() }
    };

    /// The disks' `block_device_operations`: no callbacks, this module as the owner (an open
    /// disk holds the module). A constant, not the `Disk`'s: a process may hold the gendisk
    /// after the `Disk` was dropped (an open that raced the deletion), and `bdev_release()`
    /// and `disk_release()` read it then.
    const FOPS: bindings::block_device_operations = bindings::block_device_operations {
        owner: kernel::module::this_module::<crate::LocalModule>().as_ptr(),
        // SAFETY: all-zero is a valid `block_device_operations` (no callbacks).
        ..unsafe { core::mem::zeroed() }
    };
}

/// What the disk looks like.
#[derive(Clone, Copy)]
pub(crate) struct DiskParams {
    /// Hardware queues (`nr_hw_queues`).
    pub(crate) queues: u32,
    /// Tags per hardware queue.
    pub(crate) depth: u32,
    /// Size in 512-byte sectors.
    pub(crate) capacity: u64,
    /// Largest request in bytes.
    pub(crate) max_io: u32,
    /// Request timeout.
    pub(crate) timeout_ms: u32,
}

/// A blk-mq disk served by `D`: its tag set and gendisk, added at [`Disk::new`], deleted when
/// dropped.
///
/// # Invariants
///
/// `gendisk` was allocated on `set` with `driver`'s `D` as `queuedata` and added; `set` was
/// allocated with `blk_mq_alloc_tag_set` and does not move (it is boxed).
pub(crate) struct Disk<D: Driver> {
    gendisk: NonNull<bindings::gendisk>,
    set: KBox<bindings::blk_mq_tag_set>,
    driver: Arc<D>,
}

// SAFETY: the gendisk and tag set pointers are owned by the `Disk`; the C side locks its own
// state, and `D` is `Send + Sync`.
unsafe impl<D: Driver> Send for Disk<D> {}
// SAFETY: `&Disk` offers nothing that touches the C objects.
unsafe impl<D: Driver> Sync for Disk<D> {}

impl<D: Driver> Disk<D> {
    /// Makes the tag set and the disk `name` (e.g. `rkdblk0`) served by `driver`, owned by
    /// this module (an open disk holds the module), and adds it. Process context; sleeps (the
    /// partition scan reads through the driver).
    pub(crate) fn new(name: &CStr, p: &DiskParams, driver: Arc<D>) -> Result<Disk<D>> {
        let data = core::ptr::from_ref::<D>(&*driver)
            .cast_mut()
            .cast::<core::ffi::c_void>();
        // SAFETY: all-zero is a valid initial `blk_mq_tag_set`.
        let zeroed = unsafe { core::mem::zeroed::<bindings::blk_mq_tag_set>() };
        let mut set = KBox::new(zeroed, GFP_KERNEL)?;
        set.ops = &Ops::<D>::OPS;
        set.nr_hw_queues = p.queues;
        set.queue_depth = p.depth;
        set.cmd_size = core::mem::size_of::<Pdu>() as u32;
        set.numa_node = bindings::NUMA_NO_NODE;
        set.flags = bindings::BLK_MQ_F_BLOCKING;
        // SAFETY: a plain conversion.
        set.timeout = unsafe { bindings::__msecs_to_jiffies(p.timeout_ms) } as u32;
        set.driver_data = data;
        set.nr_maps = 1;
        // SAFETY: `set` is initialised and boxed: it does not move until it is freed.
        to_result(unsafe { bindings::blk_mq_alloc_tag_set(&mut *set) })?;
        // SAFETY: all-zero is valid `queue_limits` (defaults).
        let mut lim: bindings::queue_limits = unsafe { core::mem::zeroed() };
        lim.logical_block_size = 512;
        lim.physical_block_size = 512;
        lim.max_hw_sectors = p.max_io >> 9;
        lim.max_segments = MAX_SEGS as u16;
        // No gaps inside a page between segments, as nvme-rdma asks: one FRWR page list then
        // covers any request ([`Rq::pages`]).
        lim.virt_boundary_mask = (bindings::PAGE_SIZE - 1) as _;
        // BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA: flushes and FUA writes reach the driver.
        lim.features = 1 | 2;
        // SAFETY: `set` was allocated above; `data` outlives the disk (the `Disk` holds it).
        let gendisk = unsafe {
            bindings::__blk_mq_alloc_disk(
                &mut *set,
                &mut lim,
                data,
                kernel::static_lock_class!().as_ptr(),
            )
        };
        let gendisk = match kernel::error::from_err_ptr(gendisk) {
            Ok(g) => g,
            Err(e) => {
                // SAFETY: allocated above, no disk uses it.
                unsafe { bindings::blk_mq_free_tag_set(&mut *set) };
                return Err(e);
            }
        };
        let cleanup = move |set: &mut bindings::blk_mq_tag_set| {
            // SAFETY: the disk was allocated and not added; then the tag set is unused.
            unsafe {
                bindings::put_disk(gendisk);
                bindings::blk_mq_free_tag_set(set);
            }
        };
        // SAFETY: the disk is not added yet: we are its only user. `FOPS` is a constant.
        unsafe {
            (*gendisk).fops = &Ops::<D>::FOPS;
            let n = name.to_bytes();
            let dst = &mut (*gendisk).disk_name;
            let len = n.len().min(dst.len() - 1);
            for (d, s) in dst.iter_mut().zip(n[..len].iter()) {
                *d = *s as _;
            }
            dst[len] = 0;
            bindings::set_capacity(gendisk, p.capacity);
        }
        // SAFETY: `gendisk` is allocated and named, not added.
        if let Err(e) = to_result(unsafe {
            bindings::device_add_disk(core::ptr::null_mut(), gendisk, core::ptr::null_mut())
        }) {
            cleanup(&mut set);
            return Err(e);
        }
        // INVARIANT: allocated on `set` with `data` and added above.
        Ok(Disk {
            // SAFETY: `from_err_ptr` returned a valid, non-null pointer.
            gendisk: unsafe { NonNull::new_unchecked(gendisk) },
            set,
            driver,
        })
    }

    /// The driver. Any context.
    pub(crate) fn driver(&self) -> &Arc<D> {
        &self.driver
    }

    /// Whether the disk is open (`disk_openers()`: mounted, or held by a process). A snapshot:
    /// it may be opened right after. Any context.
    pub(crate) fn is_open(&self) -> bool {
        // SAFETY: by the type invariants the disk was added, so `part0` is its whole-disk
        // block device, alive as long as the disk; `bd_openers` is the `atomic_t` the block
        // layer counts its openers in, read as `disk_openers()` reads it.
        let n = unsafe {
            let part0 = (*self.gendisk.as_ptr()).part0;
            bindings::atomic_read(&raw const (*part0).bd_openers)
        };
        n > 0
    }
}

impl<D: Driver> Drop for Disk<D> {
    /// Deletes the disk (blk-mq waits for the requests in flight: the driver must end them),
    /// then frees it and its tag set. Process context; sleeps.
    fn drop(&mut self) {
        // SAFETY: by the type invariants the disk was added on `set` and is deleted and put
        // once, here; the tag set is freed after its only disk.
        unsafe {
            bindings::del_gendisk(self.gendisk.as_ptr());
            bindings::put_disk(self.gendisk.as_ptr());
            bindings::blk_mq_free_tag_set(&mut *self.set);
        }
    }
}
