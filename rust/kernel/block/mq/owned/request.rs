// SPDX-License-Identifier: GPL-2.0

//! The requests of an owned-request disk: [`OwnedRequest`], [`RequestPages`] and their PDU.

use super::Driver;
use crate::{bindings, ffi::c_ulong, prelude::*};
use core::{
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicI32, AtomicU32, Ordering},
};

/// Scatterlist entries per request: the queue's `max_segments`.
pub(super) const MAX_SEGS: usize = 64;

/// What a request asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ReqOp {
    /// Read [`OwnedRequest::bytes`] from [`OwnedRequest::sector`] (`REQ_OP_READ`).
    Read,
    /// Write [`OwnedRequest::bytes`] at [`OwnedRequest::sector`] (`REQ_OP_WRITE`).
    Write,
    /// Make earlier completed writes durable (`REQ_OP_FLUSH`).
    Flush,
    /// Anything else (discard, zone operations, ...).
    Other,
}

/// blk-mq's per-request data (`cmd_size`) of a disk whose requests carry `T`: the request's
/// scatterlist, who holds the request, and the driver's `T`.
///
/// `sg`, `nents` and `lent` are written only by the [`OwnedRequest`] (`&mut`), before any
/// [`RequestPages`] exists, but for the DMA addresses and lengths of `sg`'s entries, which the
/// one mapping the list is lent to writes; `refs`, `errno` and `data` are shared by the
/// `OwnedRequest`, its `RequestPages` and the timeout callback and reached only as `&` fields.
/// No `&Pdu` or `&mut Pdu` is ever made.
#[repr(C)]
pub(super) struct Pdu<T> {
    sg: [bindings::scatterlist; MAX_SEGS],
    nents: u32,
    /// The list was lent ([`OwnedRequest::pages`]): at most once, as it is mapped in place.
    lent: bool,
    /// The [`OwnedRequest`] (until ended) and the [`RequestPages`] of the request: the last
    /// to go ends it.
    refs: AtomicU32,
    /// The errno [`OwnedRequest::end`] ended it with (0: success), read by the last of `refs`.
    errno: AtomicI32,
    data: T,
}

impl<T: Default> Pdu<T> {
    /// The PDU of `rq`.
    fn of(rq: NonNull<bindings::request>) -> *mut Self {
        // SAFETY: every request of a `Disk`'s tag set has `cmd_size` =
        // `size_of::<Pdu<T>>()` bytes after it (`blk_mq_rq_to_pdu`), aligned as a pointer,
        // which is enough (`Disk::new`'s check); this only computes the address.
        unsafe { bindings::blk_mq_rq_to_pdu(rq.as_ptr()).cast::<Self>() }
    }

    /// Initialises the PDU of `rq`.
    ///
    /// # Safety
    ///
    /// `rq` is a request of a tag set whose `cmd_size` is `size_of::<Pdu<T>>()`, being
    /// initialised by blk-mq (`init_request`): nothing else reaches its PDU.
    pub(super) unsafe fn init(rq: *mut bindings::request) {
        // SAFETY: by the safety requirements, `rq` is valid.
        let p = Self::of(unsafe { NonNull::new_unchecked(rq) });
        // SAFETY: the PDU is ours to write (safety requirements). The scatterlist is
        // initialised by `OwnedRequest::map`, before its first use.
        unsafe {
            (&raw mut (*p).nents).write(0);
            (&raw mut (*p).lent).write(false);
            (&raw mut (*p).refs).write(AtomicU32::new(0));
            (&raw mut (*p).errno).write(AtomicI32::new(0));
            (&raw mut (*p).data).write(T::default());
        }
    }

    /// Drops the driver's data of `rq`.
    ///
    /// # Safety
    ///
    /// `rq`'s PDU was initialised by [`Pdu::init`], and blk-mq is freeing the request
    /// (`exit_request`): nothing uses it any more.
    pub(super) unsafe fn exit(rq: *mut bindings::request) {
        // SAFETY: by the safety requirements, `rq` is valid.
        let p = Self::of(unsafe { NonNull::new_unchecked(rq) });
        // SAFETY: initialised by `init`, dropped once (safety requirements).
        unsafe { core::ptr::drop_in_place(&raw mut (*p).data) };
    }

    /// The driver's data of `rq`.
    ///
    /// # Safety
    ///
    /// `rq`'s PDU was initialised by [`Pdu::init`], and stays so for `'a` (the request is not
    /// freed meanwhile).
    pub(super) unsafe fn data<'a>(rq: *mut bindings::request) -> &'a T {
        // SAFETY: by the safety requirements, `rq` is valid.
        let p = Self::of(unsafe { NonNull::new_unchecked(rq) });
        // SAFETY: initialised (safety requirements), and only ever reached as `&`.
        unsafe { &(*p).data }
    }

    /// The request's hold count, shared by its [`OwnedRequest`] and [`RequestPages`].
    ///
    /// # Safety
    ///
    /// The caller holds one of the request's `refs` (or is about to take the first one, with
    /// the request handed to the driver).
    unsafe fn refs<'a>(rq: NonNull<bindings::request>) -> &'a AtomicU32 {
        // SAFETY: the request is live (safety requirements); only ever reached as `&`.
        unsafe { &(*Self::of(rq)).refs }
    }

    /// The errno the request ends with.
    ///
    /// # Safety
    ///
    /// As for [`Pdu::refs`].
    unsafe fn errno<'a>(rq: NonNull<bindings::request>) -> &'a AtomicI32 {
        // SAFETY: the request is live (safety requirements); only ever reached as `&`.
        unsafe { &(*Self::of(rq)).errno }
    }
}

/// The `errno` of a request [`OwnedRequest::requeue_later`] gave up: not an errno.
const REQUEUE_LATER: i32 = i32::MIN;

/// The `errno` of a request [`OwnedRequest::requeue_delayed`] gave up: not an errno.
const REQUEUE_DELAYED: i32 = i32::MIN + 1;

/// How long a request [`OwnedRequest::requeue_delayed`] gave up waits on the requeue list, in
/// milliseconds: blk-mq's `BLK_MQ_RESOURCE_DELAY`, after which it runs a hardware queue again
/// when the driver returned `BLK_STS_RESOURCE`.
const REQUEUE_DELAY_MS: c_ulong = 3;

/// Lets go of one hold on `rq` (its [`OwnedRequest`]'s or a [`RequestPages`]'); the last ends
/// the request with the errno its `OwnedRequest` stored. Any context.
///
/// # Safety
///
/// The caller holds one of the request's `refs` and gives it up here.
unsafe fn put<T: Default>(rq: NonNull<bindings::request>) {
    // SAFETY: the caller's hold keeps the request live.
    let (refs, errno) = unsafe { (Pdu::<T>::refs(rq), Pdu::<T>::errno(rq)) };
    // AcqRel: the last one sees the errno the `OwnedRequest` stored before its own decrement.
    if refs.fetch_sub(1, Ordering::AcqRel) == 1 {
        let e = errno.load(Ordering::Relaxed);
        if e == REQUEUE_LATER {
            // SAFETY: the last hold on the live, started request is gone: the driver gives it
            // back once, to the requeue list, which is kicked.
            unsafe { bindings::blk_mq_requeue_request(rq.as_ptr(), true) };
            return;
        }
        if e == REQUEUE_DELAYED {
            // SAFETY: `rq` is live (above).
            let q = unsafe { (*rq.as_ptr()).q };
            // SAFETY: as for `REQUEUE_LATER`, without the kick.
            unsafe { bindings::blk_mq_requeue_request(rq.as_ptr(), false) };
            // SAFETY: `q` is live: the disk's deletion, which frees it, first freezes it,
            // waiting for every request to end, and whoever gives back a request (the driver,
            // from `queue_rq` or a completion before that) keeps its disk. blk-mq itself uses
            // `rq->q` after the requeue (`blk_mq_requeue_request(rq, true)`), and nvme's
            // `nvme_retry_req()` makes these same two calls.
            unsafe { bindings::blk_mq_delay_kick_requeue_list(q, REQUEUE_DELAY_MS) };
            return;
        }
        // SAFETY: the last hold on the live request is gone: the driver gives it back once;
        // `errno_to_blk_status` only converts.
        unsafe { bindings::blk_mq_end_request(rq.as_ptr(), bindings::errno_to_blk_status(e)) };
    }
}

/// A started request the driver owns: ended exactly once, by [`OwnedRequest::end`] or when
/// dropped (blk-mq gets it back then, or when its last [`RequestPages`] goes, if later).
///
/// # Invariants
///
/// `0` is a request blk-mq handed to [`Driver::queue_rq`] of a `Disk<D>` and that was not
/// ended: the driver owns it, blk-mq does not touch it until `blk_mq_end_request`; its PDU is
/// a `Pdu<D::RequestData>`, initialised; this token holds one of its `refs`.
pub struct OwnedRequest<D: Driver>(NonNull<bindings::request>, PhantomData<D>);

/// The data pages of a request, lent ([`OwnedRequest::pages`]): the request does not end, and
/// its pages stay, until this is dropped.
///
/// # Invariants
///
/// `0` is a live request of a `Disk<D>` whose scatterlist was mapped (at least one entry) and
/// lent to this value alone, and this holds one of its `refs`.
pub struct RequestPages<D: Driver>(NonNull<bindings::request>, PhantomData<D>);

// SAFETY: the value stands for a hold on the request, given up from any CPU and context
// (`put` uses only the PDU's atomics and `blk_mq_end_request`).
unsafe impl<D: Driver> Send for RequestPages<D> {}
// SAFETY: `&RequestPages` only computes the address of the request's scatterlist and reads its
// `nents`, which nothing writes meanwhile (`Pdu`).
unsafe impl<D: Driver> Sync for RequestPages<D> {}

impl<D: Driver> RequestPages<D> {
    /// How many scatterlist entries the pages take (physical segments: what a DMA mapping of
    /// them needs at most, one SGE each). Any context.
    pub fn nents(&self) -> usize {
        self.sg().1
    }

    /// The request's scatterlist (`sg_set_page` entries, not DMA-mapped) and its number of
    /// entries, lent to this value alone until it is dropped. Any context.
    #[cfg_attr(not(CONFIG_INFINIBAND = "y"), allow(dead_code))]
    pub(crate) fn sg(&self) -> (*mut bindings::scatterlist, usize) {
        let p = Pdu::<D::RequestData>::of(self.0);
        // SAFETY: the request is live (type invariant); `nents` is only read, and only the
        // address of `sg` is taken.
        unsafe {
            (
                (&raw mut (*p).sg).cast::<bindings::scatterlist>(),
                (*p).nents as usize,
            )
        }
    }
}

impl<D: Driver> Drop for RequestPages<D> {
    fn drop(&mut self) {
        // SAFETY: this value's hold (type invariant), given up once.
        unsafe { put::<D::RequestData>(self.0) };
    }
}

// SAFETY: the token stands for ownership of the request, which blk-mq lets its driver end from
// any CPU and context.
unsafe impl<D: Driver> Send for OwnedRequest<D> {}
// SAFETY: `&OwnedRequest` only reads fields of the request that do not change while the driver
// owns it, and gives `&D::RequestData`, which is `Sync`.
unsafe impl<D: Driver> Sync for OwnedRequest<D> {}

const REQ_OP_MASK: u32 = (1 << bindings::REQ_OP_BITS) - 1;
const REQ_FUA: u32 = 1 << bindings::req_flag_bits___REQ_FUA;

impl<D: Driver> OwnedRequest<D> {
    /// Starts `rq` (`blk_mq_start_request`) and makes it the driver's.
    ///
    /// # Safety
    ///
    /// `rq` is a request of a `Disk<D>` blk-mq just handed to `queue_rq`.
    pub(super) unsafe fn start(rq: NonNull<bindings::request>) -> Self {
        // SAFETY: `rq` is the request blk-mq hands us; starting it is the driver's first duty.
        unsafe { bindings::blk_mq_start_request(rq.as_ptr()) };
        let p = Pdu::<D::RequestData>::of(rq);
        // SAFETY: blk-mq just handed us the request, whose PDU `init_request` initialised:
        // nothing else reaches its bookkeeping (the timeout callback reads only `data`).
        unsafe {
            (*p).nents = 0;
            (*p).lent = false;
            (*p).errno.store(0, Ordering::Relaxed);
            (*p).refs.store(1, Ordering::Relaxed);
        }
        // INVARIANT: blk-mq handed the started request to the driver; the one hold is its.
        OwnedRequest(rq, PhantomData)
    }

    /// The request's scatterlist and its count of mapped entries.
    fn sg(&mut self) -> (*mut bindings::scatterlist, &mut u32) {
        let p = Pdu::<D::RequestData>::of(self.0);
        // SAFETY: the live request's `sg` and `nents`, written only by its `OwnedRequest`
        // (`&mut self`; `Pdu`).
        unsafe {
            (
                (&raw mut (*p).sg).cast::<bindings::scatterlist>(),
                &mut *&raw mut (*p).nents,
            )
        }
    }

    /// Whether the request's scatterlist was lent ([`OwnedRequest::pages`]).
    fn lent(&mut self) -> &mut bool {
        let p = Pdu::<D::RequestData>::of(self.0);
        // SAFETY: the live request's `lent`, written only by its `OwnedRequest` (`&mut self`).
        unsafe { &mut *&raw mut (*p).lent }
    }

    /// The driver's data of the request ([`Driver::RequestData`]). Any context.
    pub fn data(&self) -> &D::RequestData {
        // SAFETY: the PDU was initialised and the request lives while the token does (type
        // invariant).
        unsafe { Pdu::<D::RequestData>::data(self.0.as_ptr()) }
    }

    /// Lends the request's data pages ([`RequestPages`]): the request ends only once the
    /// returned value is dropped too, whenever [`OwnedRequest::end`] is called. `None` for a
    /// request without data (nothing to lend), and after the first call: the list is mapped in
    /// place, so it is lent once. Any context.
    pub fn pages(&mut self) -> Option<RequestPages<D>> {
        if self.map() == 0 || core::mem::replace(self.lent(), true) {
            return None;
        }
        // SAFETY: the token's hold keeps the request live.
        unsafe { Pdu::<D::RequestData>::refs(self.0) }.fetch_add(1, Ordering::Relaxed);
        // INVARIANT: mapped above (at least one entry, so `map` never maps it again) and lent
        // now; the hold was just taken.
        Some(RequestPages(self.0, PhantomData))
    }

    /// The request's tag (below the tag set's depth). Any context.
    pub fn tag(&self) -> u32 {
        // SAFETY: (for this and the accessors below) by the type invariant the request is live
        // and owned by the driver; its tag, operation, sector and length were set before
        // `queue_rq` and do not change while the driver owns it.
        unsafe { (*self.0.as_ptr()).tag as u32 }
    }

    /// The operation. Any context.
    pub fn op(&self) -> ReqOp {
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
    pub fn fua(&self) -> bool {
        // SAFETY: see `tag`.
        unsafe { (*self.0.as_ptr()).cmd_flags & REQ_FUA != 0 }
    }

    /// The first 512-byte sector (`blk_rq_pos`). Any context.
    pub fn sector(&self) -> u64 {
        // SAFETY: see `tag`.
        unsafe { (*self.0.as_ptr()).__sector }
    }

    /// Bytes to transfer (`blk_rq_bytes`). Any context.
    pub fn bytes(&self) -> u32 {
        // SAFETY: see `tag`.
        unsafe { (*self.0.as_ptr()).__data_len }
    }

    /// Maps the request's data pages into its scatterlist (`blk_rq_map_sg`); returns the
    /// entries. Done once, by [`OwnedRequest::copy_out_with`] or [`OwnedRequest::pages`].
    fn map(&mut self) -> u32 {
        let rq = self.0.as_ptr();
        let (sg, nents) = self.sg();
        if *nents == 0 {
            let mut last: *mut bindings::scatterlist = core::ptr::null_mut();
            // SAFETY: see `tag`; set by blk-mq before `queue_rq`.
            let segs = unsafe { (*rq).nr_phys_segments };
            // Only the entries the request maps into are initialised (as nvme-rdma's
            // `sg_alloc_table_chained`): clearing all `MAX_SEGS` costs 2 KiB of stores.
            let segs = u32::from(segs).clamp(1, MAX_SEGS as u32);
            // SAFETY: `sg` has `MAX_SEGS` entries, the queue's `max_segments`, of which blk-mq
            // maps at most the request's `nr_phys_segments` (`blk_rq_map_sg`'s own check);
            // `rq` is a live request owned by us. No `RequestPages` exists yet (`pages` maps
            // first).
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
    /// caller copies it where it goes. Any context; `f` must not sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` once the pages were lent ([`OwnedRequest::pages`]); `f`'s first error (the
    /// pieces after it are not visited).
    pub fn copy_out_with(&mut self, mut f: impl FnMut(usize, &[u8]) -> Result) -> Result {
        self.walk(bindings::SG_MITER_FROM_SG, |done, addr, len| {
            // SAFETY: `addr` maps `len` bytes of the request's pages (`walk`), which nothing
            // writes while the driver holds a write request.
            f(done, unsafe { core::slice::from_raw_parts(addr, len) })
        })
    }

    /// Calls `f(done, piece)` for each piece of the request's data pages (a read's), in
    /// order: `piece` is where the data from byte `done` on goes, mapped (`kmap_local`, a page
    /// at most). The caller fills it. Any context; `f` must not sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` once the pages were lent ([`OwnedRequest::pages`]); `f`'s first error (the
    /// pieces after it are not visited, and keep what they held).
    pub fn copy_in_with(&mut self, mut f: impl FnMut(usize, &mut [u8]) -> Result) -> Result {
        self.walk(bindings::SG_MITER_TO_SG, |done, addr, len| {
            // SAFETY: `addr` maps `len` bytes of the request's pages (`walk`), which are the
            // driver's to fill while it holds a read request: the block layer reads them only
            // once the request ended, and no device reaches them (the list is not lent).
            f(done, unsafe { core::slice::from_raw_parts_mut(addr, len) })
        })
    }

    /// Maps the request's data pages piece by piece with `sg_miter` (`direction`:
    /// `SG_MITER_FROM_SG` or `SG_MITER_TO_SG`) and calls `f(done, addr, len)` for each: `len`
    /// bytes at `addr`, mapped until `f` returns, are the data from byte `done` on.
    fn walk(
        &mut self,
        direction: u32,
        mut f: impl FnMut(usize, *mut u8, usize) -> Result,
    ) -> Result {
        if *self.lent() {
            // Lent to a mapping, which maps it in place (with an IOMMU, mapping rewrites the
            // entries' offsets and lengths for a while): not ours to touch any more.
            return Err(EINVAL);
        }
        let n = self.map();
        let (sg, _) = self.sg();
        let mut miter = bindings::sg_mapping_iter::default();
        let flags = bindings::SG_MITER_LOCAL | direction;
        // SAFETY: `sg` holds the `n` mapped entries of the request's pages, which stay
        // allocated while we own the request; `miter` is ours until `sg_miter_stop`.
        unsafe { bindings::sg_miter_start(&mut miter, sg, n, flags) };
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
        // SAFETY: `miter` was started above; this unmaps its last piece (and, for
        // `SG_MITER_TO_SG`, flushes the dcache of the pages written).
        unsafe { bindings::sg_miter_stop(&mut miter) };
        result
    }

    /// Gives the request back to blk-mq to be queued again later (`blk_mq_requeue_request`,
    /// kicking the requeue list): for a resource the driver lacks for a moment, such as memory
    /// it allocates without sleeping. It comes back through [`Driver::queue_rq`], started anew.
    /// Any context.
    ///
    /// # Errors
    ///
    /// Gives the token back if the request's pages are lent ([`RequestPages`] still exists):
    /// the request may not be requeued while a mapping may reach them.
    pub fn requeue(self) -> Result<(), Self> {
        // SAFETY: the token's hold keeps the request live.
        let refs = unsafe { Pdu::<D::RequestData>::refs(self.0) };
        // Only the token takes holds (`&mut self`), and it is here: if it is the one hold left,
        // no other comes. Acquire: the last `RequestPages`' mapping is gone.
        if refs.load(Ordering::Acquire) != 1 {
            return Err(self);
        }
        refs.store(0, Ordering::Relaxed);
        let rq = self.0;
        core::mem::forget(self);
        // SAFETY: the driver owns the started request (type invariant), and gives it back
        // once: the token, its only hold, is forgotten.
        unsafe { bindings::blk_mq_requeue_request(rq.as_ptr(), true) };
        Ok(())
    }

    /// Gives the request back to blk-mq to be queued again (`blk_mq_requeue_request`, kicking
    /// the requeue list) once its [`RequestPages`] went too, if they are lent (at once
    /// otherwise): it comes back through [`Driver::queue_rq`], started anew, when the disk's
    /// queue is not quiesced ([`super::RequestQueue::quiesce`]). For the requests in flight on
    /// a lost connection, which run again once the driver connected anew, as nvme requeues
    /// them on a reset. Any context.
    pub fn requeue_later(self) {
        let rq = self.0;
        core::mem::forget(self);
        // SAFETY: the token's hold (type invariant), given up once: the token is forgotten.
        unsafe { end_with::<D::RequestData>(rq, REQUEUE_LATER) };
    }

    /// As [`OwnedRequest::requeue_later`], but the requeue list is kicked only after 3 ms
    /// (blk-mq's `BLK_MQ_RESOURCE_DELAY`), or earlier by
    /// [`super::RequestQueue::kick_requeue_list`]: for a request the driver cannot send until
    /// it connected again, which would otherwise come straight back to [`Driver::queue_rq`] in
    /// a loop, as nvme-rdma returns `BLK_STS_RESOURCE` for a controller that is reconnecting.
    /// Any context.
    pub fn requeue_delayed(self) {
        let rq = self.0;
        core::mem::forget(self);
        // SAFETY: the token's hold (type invariant), given up once: the token is forgotten.
        unsafe { end_with::<D::RequestData>(rq, REQUEUE_DELAYED) };
    }

    /// Ends the request: successfully, or with the block status of the errno
    /// (`errno_to_blk_status`); blk-mq gets it back now, or when its [`RequestPages`] goes if
    /// that is later. Any context.
    pub fn end(self, result: Result) {
        let rq = self.0;
        core::mem::forget(self);
        // SAFETY: the token's hold (type invariant), given up once: the token is forgotten.
        unsafe { end_with::<D::RequestData>(rq, result.err().map_or(0, |e| e.to_errno())) };
    }
}

/// Stores `errno` for the request and gives up its [`OwnedRequest`]'s hold.
///
/// # Safety
///
/// The caller holds the request's `OwnedRequest` hold and gives it up here.
unsafe fn end_with<T: Default>(rq: NonNull<bindings::request>, errno: i32) {
    // SAFETY: the caller's hold keeps the request live; `put` publishes the errno.
    unsafe { Pdu::<T>::errno(rq) }.store(errno, Ordering::Relaxed);
    // SAFETY: the caller's hold.
    unsafe { put::<T>(rq) };
}

impl<D: Driver> Drop for OwnedRequest<D> {
    /// A request the driver dropped unended fails with `BLK_STS_IOERR`.
    fn drop(&mut self) {
        // SAFETY: the token's hold (type invariant); `drop` runs once and `end` forgets the
        // token, so the hold is given up exactly once.
        unsafe { end_with::<D::RequestData>(self.0, EIO.to_errno()) };
    }
}
