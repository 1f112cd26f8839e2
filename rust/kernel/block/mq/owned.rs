// SPDX-License-Identifier: GPL-2.0

//! blk-mq disks whose driver owns each request until it ends it.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)
//!
//! What a driver that moves a request's data itself needs beyond [`Operations`]: typed
//! per-request data in blk-mq's PDU, the request's operation, sector and length, its data pages
//! (copied from piece by piece, or lent to a DMA mapping without a copy), ending it with a
//! status from any context, and a timeout callback.
//!
//! A [`Disk`] owns its tag set and gendisk; blk-mq hands each request to
//! [`Driver::queue_rq`] as an [`OwnedRequest`], a token that ends the request exactly once
//! ([`OwnedRequest::end`], or `BLK_STS_IOERR` when dropped). The request's data is reached
//! through a scatterlist kept in its PDU: [`OwnedRequest::copy_out_with`] and
//! [`OwnedRequest::copy_in_with`] hand its pieces, mapped, to a closure that copies from or
//! into them, and [`OwnedRequest::pages`] lends them ([`RequestPages`]; with
//! `CONFIG_INFINIBAND=y` an `rdma::mr::SgOwner`, mapped in place by an RDMA region).
//!
//! A lent request ends when both its [`OwnedRequest`] was ended and its [`RequestPages`]
//! dropped, whichever comes last (a count in the PDU, as nvme-rdma's `req->ref`): the driver
//! ends the request when the device answered, and blk-mq gets it back only once its pages are
//! no longer mapped for the device.
//!
//! [`Operations`]: super::Operations
//!
//! # Examples
//!
//! ```
//! use kernel::block::mq::owned::{Disk, DiskParams, Driver, OwnedRequest, TimeoutReturn};
//! use kernel::{prelude::*, sync::Arc};
//!
//! /// Ends every request at once: reads return what the pages held, writes go nowhere.
//! struct Null;
//!
//! impl Driver for Null {
//!     type Module = crate::LocalModule;
//!     type RequestData = ();
//!
//!     fn queue_rq(&self, _hctx: u32, rq: OwnedRequest<Self>) {
//!         rq.end(Ok(()));
//!     }
//!
//!     fn timeout(&self, _hctx: u32, _tag: u32, _data: &()) -> TimeoutReturn {
//!         TimeoutReturn::ResetTimer
//!     }
//! }
//!
//! fn add() -> Result<Disk<Null>> {
//!     let params = DiskParams {
//!         queues: 1,
//!         depth: 64,
//!         capacity: 8192,
//!         max_io: 128 * 1024,
//!         timeout_ms: 30_000,
//!         blocking: false,
//!         write_cache: false,
//!         read_only: false,
//!     };
//!     Disk::new(c"rnull_owned0", &params, Arc::new(Null, GFP_KERNEL)?)
//! }
//! ```

use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    module::{this_module, ModuleMetadata},
    prelude::*,
    sync::Arc,
};
use core::{marker::PhantomData, ptr::NonNull};

mod attr;
mod request;
mod work;

pub use attr::{AttrFile, Attribute, MAX_ATTRIBUTES};
pub use request::{OwnedRequest, ReqOp, RequestPages};
use request::{Pdu, MAX_SEGS};
pub use work::{DiskWork, RequestQueue};

#[cfg(CONFIG_INFINIBAND = "y")]
mod rdma;

/// What the driver tells blk-mq about a request that timed out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimeoutReturn {
    /// The driver ended the request, or will end it without blk-mq's timer (`BLK_EH_DONE`).
    Done,
    /// Restart the request's timer (`BLK_EH_RESET_TIMER`).
    ResetTimer,
}

/// The driver of a [`Disk`].
pub trait Driver: Send + Sync + Sized + 'static {
    /// The module that owns the disks (an open disk holds it).
    type Module: ModuleMetadata;

    /// The driver's data of each request, in blk-mq's PDU: made with [`Default`] when blk-mq
    /// allocates the request (once, not per I/O), dropped when it frees it, and reached through
    /// [`OwnedRequest::data`] and [`Driver::timeout`]. Its alignment may not exceed that of a
    /// pointer (the PDU follows `struct request`).
    type RequestData: Default + Send + Sync;

    /// A request for hardware queue `hctx`, started (its timer runs). The driver owns it and
    /// ends it with [`OwnedRequest::end`], from any context. Called in process context with
    /// [`DiskParams::blocking`] (may sleep), else with preemption or bottom halves possibly
    /// disabled (must not sleep).
    fn queue_rq(&self, hctx: u32, rq: OwnedRequest<Self>);

    /// The request with `tag` on hardware queue `hctx`, whose data is `data`, timed out.
    /// Process context (blk-mq's timeout work, which holds a reference on the request); must
    /// not wait for the request to end.
    fn timeout(&self, hctx: u32, tag: u32, data: &Self::RequestData) -> TimeoutReturn;

    /// The disk's own files in its sysfs directory (`/sys/block/<disk>/<name>`, beside the
    /// block layer's), at most [`MAX_ATTRIBUTES`]; none by default. Their names must differ
    /// from the block layer's (`size`, `ro`, `stat`, ...): adding the disk fails otherwise.
    const ATTRIBUTES: &'static [Attribute] = &[];

    /// Fills the read file `ATTRIBUTES[index]` (a page at most). Process context (a read of
    /// the file); the disk is not deleted before it returns.
    fn show(&self, _index: usize, _f: &mut crate::str::Formatter<'_>) -> Result {
        Err(EINVAL)
    }

    /// Takes what was written to the file `ATTRIBUTES[index]`: `Ok` consumes all of it, an
    /// error fails the write. Process context (a write of the file); a store that deletes the
    /// disk removes `file` first ([`AttrFile::remove_self`]).
    fn store(&self, _index: usize, _input: &[u8], _file: AttrFile<'_>) -> Result {
        Err(EINVAL)
    }

    /// The disk's delayed work ran ([`DiskWork::schedule`]): `queue` is the disk's request
    /// queue, to stop and restart dispatch around a recovery. Process context
    /// (`system_long_wq`); may sleep. It never runs once the disk's deletion began
    /// ([`Disk::stop_work`]), and runs once at a time.
    fn work(&self, _queue: &RequestQueue<'_>) {}
}

/// The `blk_mq_ops` of a [`Disk`] of `D`.
struct Ops<D: Driver>(PhantomData<D>);

impl<D: Driver> Ops<D> {
    /// # Safety
    ///
    /// Called by blk-mq for a hardware context of a `Disk<D>`'s queue, whose `queuedata` is
    /// the `D` the `Disk` keeps alive, with a request it hands to the driver.
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
        // SAFETY: `rq` is a request of a `Disk<D>` that blk-mq just handed to the driver.
        let rq = unsafe { OwnedRequest::<D>::start(rq) };
        driver.queue_rq(index, rq);
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
        // SAFETY: the request's PDU was initialised by `init_request` and lives until
        // `exit_request`; blk-mq's reference keeps the request during the call.
        let data = unsafe { Pdu::<D::RequestData>::data(rq) };
        match driver.timeout(index, tag, data) {
            TimeoutReturn::Done => bindings::blk_eh_timer_return_BLK_EH_DONE,
            TimeoutReturn::ResetTimer => bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER,
        }
    }

    /// # Safety
    ///
    /// Called by blk-mq for a request of a tag set of `Ops<D>` (its PDU is
    /// `size_of::<Pdu<D::RequestData>>()` bytes, uninitialised), once before any other use.
    unsafe extern "C" fn init_request(
        _set: *mut bindings::blk_mq_tag_set,
        rq: *mut bindings::request,
        _hctx_idx: crate::ffi::c_uint,
        _numa_node: crate::ffi::c_int,
    ) -> crate::ffi::c_int {
        // SAFETY: by the function's safety requirements.
        unsafe { Pdu::<D::RequestData>::init(rq) };
        0
    }

    /// # Safety
    ///
    /// Called by blk-mq for a request `init_request` initialised, once, when nothing uses it.
    unsafe extern "C" fn exit_request(
        _set: *mut bindings::blk_mq_tag_set,
        rq: *mut bindings::request,
        _hctx_idx: crate::ffi::c_uint,
    ) {
        // SAFETY: by the function's safety requirements.
        unsafe { Pdu::<D::RequestData>::exit(rq) };
    }

    const OPS: bindings::blk_mq_ops = bindings::blk_mq_ops {
        queue_rq: Some(Self::queue_rq),
        timeout: Some(Self::timeout),
        init_request: Some(Self::init_request),
        exit_request: Some(Self::exit_request),
        // SAFETY: all-zero is a valid `blk_mq_ops` (no further callbacks).
        ..unsafe { core::mem::zeroed() }
    };

    /// The disks' `block_device_operations`: no callbacks, `D::Module` as the owner (an open
    /// disk holds the module). A constant, not the `Disk`'s: a process may hold the gendisk
    /// after the `Disk` was dropped (an open that raced the deletion), and `bdev_release()`
    /// and `disk_release()` read it then.
    const FOPS: bindings::block_device_operations = bindings::block_device_operations {
        owner: this_module::<D::Module>().as_ptr(),
        // SAFETY: all-zero is a valid `block_device_operations` (no callbacks).
        ..unsafe { core::mem::zeroed() }
    };
}

/// What a [`Disk`] looks like.
#[derive(Clone, Copy, Debug)]
pub struct DiskParams {
    /// Hardware queues (`nr_hw_queues`).
    pub queues: u32,
    /// Tags per hardware queue.
    pub depth: u32,
    /// Size in 512-byte sectors.
    pub capacity: u64,
    /// Largest request in bytes (a multiple of 512).
    pub max_io: u32,
    /// Request timeout in milliseconds.
    pub timeout_ms: u32,
    /// [`Driver::queue_rq`] may sleep (`BLK_MQ_F_BLOCKING`).
    pub blocking: bool,
    /// The device has a volatile write cache: flushes and FUA writes reach the driver
    /// (`BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA`).
    pub write_cache: bool,
    /// The disk is read-only (`set_disk_ro()`: its `ro` attribute reads 1, the block layer
    /// fails writes to it with `-EPERM` and opens for writing from the kernel, a mount's,
    /// with `-EACCES`); [`Disk::set_read_only`] changes it later.
    pub read_only: bool,
}

/// `BLK_FEAT_WRITE_CACHE` and `BLK_FEAT_FUA` (`include/linux/blkdev.h`; bindgen does not
/// translate their `__force` casts).
const BLK_FEAT_WRITE_CACHE: u32 = 1 << 0;
const BLK_FEAT_FUA: u32 = 1 << 1;

/// A blk-mq disk served by `D`: its tag set and gendisk, added at [`Disk::new`], deleted when
/// dropped.
///
/// The queue's limits: 512-byte logical and physical blocks, at most
/// [`DiskParams::max_io`] bytes and 64 segments per request, and no gap inside a page between
/// segments (`virt_boundary_mask`), so that one page list (an RDMA fast registration) covers
/// any request.
///
/// The driver's attribute group ([`Driver::ATTRIBUTES`]), if it has one, is added with the
/// disk and removed when it is deleted.
///
/// # Invariants
///
/// `gendisk` was allocated on `set` with `driver`'s `D` as `queuedata` and added, with
/// `attrs`' group; `set` was allocated with `blk_mq_alloc_tag_set` and `Ops::<D>::OPS` and does
/// not move (it is boxed).
pub struct Disk<D: Driver> {
    gendisk: NonNull<bindings::gendisk>,
    set: KBox<bindings::blk_mq_tag_set>,
    driver: Arc<D>,
    /// Disabled before the disk is deleted.
    work: Arc<DiskWork>,
    /// Dropped after the disk's deletion (`Drop`), which removes its files.
    _attrs: Option<KBox<attr::Table>>,
}

// SAFETY: the gendisk, tag set and attribute group are owned by the `Disk` (the group's
// pointers point into its own box); the C side locks its own state, and `D` is `Send + Sync`.
unsafe impl<D: Driver> Send for Disk<D> {}
// SAFETY: `&Disk` only reads the disk's openers count, an atomic, and calls what the block
// layer serialises itself (`set_disk_ro()`'s atomic bit, quiescing, which nests).
unsafe impl<D: Driver> Sync for Disk<D> {}

impl<D: Driver> Disk<D> {
    /// Makes the tag set and the disk `name` (e.g. `c"rkdblk0"`, truncated to 31 bytes)
    /// served by `driver`, and adds it. Process context; sleeps (the partition scan reads
    /// through the driver).
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `params` has no queue or tag, `-ENOMEM`, or the errors of
    /// `blk_mq_alloc_tag_set()`, `blk_mq_alloc_disk()` and `device_add_disk()`; nothing is
    /// left allocated then.
    pub fn new(name: &CStr, params: &DiskParams, driver: Arc<D>) -> Result<Disk<D>> {
        const {
            assert!(
                core::mem::align_of::<Pdu<D::RequestData>>()
                    <= core::mem::align_of::<bindings::request>()
            )
        };
        if params.queues == 0 || params.depth == 0 {
            return Err(EINVAL);
        }
        let mut attrs = attr::Table::new::<D>()?;
        let groups = attrs.as_mut().map_or(core::ptr::null_mut(), |t| t.groups());
        let data = core::ptr::from_ref::<D>(&*driver)
            .cast_mut()
            .cast::<crate::ffi::c_void>();
        // SAFETY: all-zero is a valid initial `blk_mq_tag_set`.
        let zeroed = unsafe { core::mem::zeroed::<bindings::blk_mq_tag_set>() };
        let mut set = KBox::new(zeroed, GFP_KERNEL)?;
        set.ops = &Ops::<D>::OPS;
        set.nr_hw_queues = params.queues;
        set.queue_depth = params.depth;
        set.cmd_size = core::mem::size_of::<Pdu<D::RequestData>>() as u32;
        set.numa_node = bindings::NUMA_NO_NODE;
        set.flags = if params.blocking {
            bindings::BLK_MQ_F_BLOCKING
        } else {
            0
        };
        // SAFETY: a plain conversion.
        set.timeout = unsafe { bindings::__msecs_to_jiffies(params.timeout_ms) } as u32;
        set.driver_data = data;
        set.nr_maps = 1;
        // SAFETY: `set` is initialised and boxed: it does not move until it is freed.
        to_result(unsafe { bindings::blk_mq_alloc_tag_set(&mut *set) })?;
        // SAFETY: all-zero is valid `queue_limits` (defaults).
        let mut lim: bindings::queue_limits = unsafe { core::mem::zeroed() };
        lim.logical_block_size = 512;
        lim.physical_block_size = 512;
        lim.max_hw_sectors = params.max_io >> 9;
        lim.max_segments = MAX_SEGS as u16;
        lim.virt_boundary_mask = (bindings::PAGE_SIZE - 1) as _;
        if params.write_cache {
            lim.features = BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;
        }
        // SAFETY: `set` was allocated above; `data` outlives the disk (the `Disk` holds it).
        let gendisk = unsafe {
            bindings::__blk_mq_alloc_disk(
                &mut *set,
                &mut lim,
                data,
                crate::static_lock_class!().as_ptr(),
            )
        };
        let gendisk = match from_err_ptr(gendisk) {
            Ok(g) => g,
            Err(e) => {
                // SAFETY: allocated above, no disk uses it.
                unsafe { bindings::blk_mq_free_tag_set(&mut *set) };
                return Err(e);
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
            bindings::set_capacity(gendisk, params.capacity);
            bindings::set_disk_ro(gendisk, params.read_only);
        }
        // SAFETY: `gendisk`'s queue, whose `queuedata` is `driver`'s `D`; the `Disk` disables
        // the work before it deletes the disk (`drop`), and on the error paths below it was
        // never queued (only the `Disk` hands it out).
        let work = unsafe {
            NonNull::new((*gendisk).queue)
                .ok_or(EINVAL)
                .and_then(|q| DiskWork::new::<D>(q))
        };
        let work = match work {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: the disk was allocated and not added; then the tag set is unused.
                unsafe {
                    bindings::put_disk(gendisk);
                    bindings::blk_mq_free_tag_set(&mut *set);
                }
                return Err(e);
            }
        };
        // SAFETY: `gendisk` is allocated and named, not added; `groups` is null or the
        // null-terminated list of `attrs`, which the `Disk` keeps until after the deletion.
        let added =
            to_result(unsafe { bindings::device_add_disk(core::ptr::null_mut(), gendisk, groups) });
        if let Err(e) = added {
            // SAFETY: the disk was allocated and not added; then the tag set is unused.
            unsafe {
                bindings::put_disk(gendisk);
                bindings::blk_mq_free_tag_set(&mut *set);
            }
            return Err(e);
        }
        // INVARIANT: allocated on `set` with `data` and added above.
        Ok(Disk {
            // SAFETY: `from_err_ptr` returned a valid, non-null pointer.
            gendisk: unsafe { NonNull::new_unchecked(gendisk) },
            set,
            driver,
            work,
            _attrs: attrs,
        })
    }

    /// The driver. Any context.
    pub fn driver(&self) -> &Arc<D> {
        &self.driver
    }

    /// Runs `f` with the disk's queue quiesced (`blk_mq_quiesce_queue()`, then
    /// `blk_mq_unquiesce_queue()`): no [`Driver::queue_rq`] call is in progress while `f` runs,
    /// and none starts; requests queued meanwhile are dispatched after it. For a driver that
    /// replaces what `queue_rq` uses (its connections, say), as nvme-rdma does on a reconnect.
    /// Process context; sleeps (for the `queue_rq` calls in progress).
    pub fn quiesced<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: by the type invariants the disk was added, so its queue is live until it is
        // deleted, in `drop`.
        let q = unsafe { (*self.gendisk.as_ptr()).queue };
        // SAFETY: `q` is live (above); quiescing nests, and is undone below.
        unsafe { bindings::blk_mq_quiesce_queue(q) };
        let r = f();
        // SAFETY: `q` is live, and was quiesced above.
        unsafe { bindings::blk_mq_unquiesce_queue(q) };
        r
    }

    /// The disk's request queue, to stop and restart dispatch ([`RequestQueue::quiesce`]).
    pub fn request_queue(&self) -> RequestQueue<'_> {
        // SAFETY: by the type invariants the disk was added, and it is deleted only in `drop`,
        // which the borrow excludes.
        unsafe { RequestQueue::new((*self.gendisk.as_ptr()).queue) }
    }

    /// The disk's delayed work, which runs [`Driver::work`]: a handle the driver may keep and
    /// schedule from any context. Any context.
    pub fn work(&self) -> &Arc<DiskWork> {
        &self.work
    }

    /// Disables the disk's work for good and waits for a run in progress: from then on
    /// [`DiskWork::schedule`] does nothing. The disk's deletion does it too; a driver calls
    /// it first when it must undo what the work left (a quiesced queue) before the deletion.
    /// Process context; sleeps (for the run in progress).
    pub fn stop_work(&self) {
        self.work.disable();
    }

    /// Makes the disk read-only or writable (`set_disk_ro()`, which sends a change uevent):
    /// while it is read-only the block layer fails writes to it with `-EPERM` (also through
    /// a file opened before) and opens for writing from the kernel (a mount's) with `-EACCES`.
    /// Writes already submitted, and a filesystem's writeback, still reach the driver.
    /// Process context; may sleep.
    pub fn set_read_only(&self, read_only: bool) {
        // SAFETY: by the type invariants the disk was added and is live until `drop`.
        unsafe { bindings::set_disk_ro(self.gendisk.as_ptr(), read_only) };
    }

    /// Whether the disk is open (`disk_openers()`: mounted, or held by a process). A snapshot:
    /// it may be opened right after. Any context.
    pub fn is_open(&self) -> bool {
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
        // First: the work reaches the disk's queue and driver.
        self.work.disable();
        // SAFETY: by the type invariants the disk was added on `set` and is deleted and put
        // once, here; the tag set is freed after its only disk.
        unsafe {
            bindings::del_gendisk(self.gendisk.as_ptr());
            bindings::put_disk(self.gendisk.as_ptr());
            bindings::blk_mq_free_tag_set(&mut *self.set);
        }
    }
}
