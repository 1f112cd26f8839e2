// SPDX-License-Identifier: GPL-2.0

//! Posting work requests safely: SGEs tied to the memory they name, and per-work-request
//! contexts owned by the layer.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`ib_post_send`,
//! `ib_post_recv`, `struct ib_cqe`).
//!
//! ib_core delivers each completion to the `struct ib_cqe` its work request carried
//! (`wr_cqe`), which must therefore stay valid until that completion, flushed ones included.
//! A [`WrPool`] owns those entries for one queue of a QP, the way blk-mq owns its per-request
//! data: `n` contexts numbered `0..n`, each with the entry of its last (signalled) work request
//! and one for the unsignalled work requests before it. The consumer keeps its own
//! per-request state by context number and implements [`WrCompletion`], which the pool calls
//! with the number for every completion.
//!
//! A pool is attached to the QP it posts to when the QP is created
//! ([`super::cm::CmId::create_qp`]), and posting to another QP is refused. The CM id owning
//! the QP holds the pool, drains the QP (every posted work request completes) before it
//! destroys it, and only then lets the pool go. So no completion can reach a freed context,
//! and posting is safe.
//!
//! # Memory under an SGE
//!
//! An [`Sge`] is made by a [`super::mr::DmaRegion`] and borrows it, so it cannot outlive the
//! mapping during the post call. An inline SGE ([`super::mr::DmaRegion::inline_sge`]) names
//! the region's kernel virtual address, which the driver reads during the post call, while
//! the borrow guarantees the memory. What the device does with a DMA address after the post
//! call returns is outside the CPU's memory model, as for
//! [`crate::dma::Coherent::dma_address`]: the consumer keeps the region mapped until the work
//! request completes (rkdapl counts an LMR busy until then).

pub use super::mr::Sge;
use super::{
    cq::{Cqe, Wc},
    mr::{FrMr, MrRef, PoolMr},
    qp::{Qp, SendFlag, SendFlags, SendWr},
    Access,
};
use crate::{bindings, error::to_result, prelude::*, sync::Arc};
use core::{
    marker::PhantomPinned,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicPtr, Ordering},
};

/// What a [`WrPool`]'s owner does when a work request completes.
pub trait WrCompletion: Send + Sync + 'static {
    /// A work request posted with context `ctx` completed (success, error or flush). `last`:
    /// it was posted as the context's last work request ([`SendWr::new`]); the ones before
    /// the last are posted unsignalled and complete only in error. Runs in the CQ's
    /// [`super::cq::PollContext`], once per completion.
    fn done(&self, ctx: u32, last: bool, wc: &Wc);
}

/// The completion entries of one context of a [`WrPool`].
///
/// # Invariants
///
/// `last` is the first field; its `done` is [`WrPool::done_last`] and `early`'s is
/// [`WrPool::done_early`] for the same `T`; `pool` points to the pool whose `ctxs` hold this
/// context, at index `idx`.
#[repr(C)]
struct WrCtx<T: WrCompletion> {
    last: Cqe,
    early: Cqe,
    pool: NonNull<WrPool<T>>,
    idx: u32,
    /// The MR of a REG_MR work request in flight (`Arc::into_raw`), dropped at its completion.
    mr: AtomicPtr<MrRef>,
}

/// The contexts of the work requests of one queue (send or receive) of a QP, owned by the
/// layer; see the module documentation.
///
/// # Invariants
///
/// `ctxs` is never resized, so its contexts do not move; every context's `pool` points to
/// this pool, which does not move either (pinned, `!Unpin`). `qp` is the QP the pool is
/// attached to (null if none): only that QP's work requests carry its contexts' entries, and
/// that QP is drained before the pool is detached ([`super::cm::CmId`]'s `Drop`).
#[pin_data(PinnedDrop)]
pub struct WrPool<T: WrCompletion> {
    #[pin]
    owner: T,
    ctxs: KVec<WrCtx<T>>,
    qp: AtomicPtr<bindings::ib_qp>,
    /// Set before the first work request is posted to `qp`: only then does the QP need a drain
    /// before the pool may go. Draining a QP that never saw a work request is skipped because
    /// rdma_rxe cannot drain one whose move to RTR failed to allocate (its receive task stays
    /// stopped, `ib_drain_rq` waits for good): docs/upstream/rxe-modify-qp-enomem-recv-task.md.
    used: AtomicBool,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The contexts' raw pointers point into the pool itself; their `Cqe`s are only read by
// ib_core; `owner` is `Send + Sync`.
unsafe impl<T: WrCompletion> Send for WrPool<T> {}
// SAFETY: See the `Send` impl; `&WrPool` only reads or uses atomics.
unsafe impl<T: WrCompletion> Sync for WrPool<T> {}

impl<T: WrCompletion> WrPool<T> {
    /// A pool of `n` contexts (numbered `0..n`) whose completions go to the owner `owner`
    /// initialises. Process context (allocates with `GFP_KERNEL`).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for `n == 0`, `-ENOMEM`, or the error of `owner`.
    pub fn new(owner: impl PinInit<T, Error>, n: u32) -> Result<Arc<WrPool<T>>> {
        if n == 0 {
            return Err(EINVAL);
        }
        Arc::pin_init(
            try_pin_init!(&this in WrPool {
                owner <- owner,
                ctxs: Self::contexts(this, n)?,
                qp: AtomicPtr::new(core::ptr::null_mut()),
                used: AtomicBool::new(false),
                _pin: PhantomPinned,
            }),
            GFP_KERNEL,
        )
    }

    fn contexts(pool: NonNull<WrPool<T>>, n: u32) -> Result<KVec<WrCtx<T>>> {
        let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for idx in 0..n {
            // INVARIANT: `last` first, the trampolines of `T`, `pool` is the pool being
            // initialised (its final address) and `idx` the index.
            v.push(
                WrCtx {
                    last: Cqe::from_fn(Self::done_last),
                    early: Cqe::from_fn(Self::done_early),
                    pool,
                    idx,
                    mr: AtomicPtr::new(core::ptr::null_mut()),
                },
                GFP_KERNEL,
            )?;
        }
        Ok(v)
    }

    /// The pool's owner.
    pub fn owner(&self) -> &T {
        &self.owner
    }

    /// Number of contexts.
    pub fn len(&self) -> u32 {
        self.ctxs.len() as u32
    }

    /// Whether the pool has no contexts (never: [`Self::new`] refuses it).
    pub fn is_empty(&self) -> bool {
        self.ctxs.is_empty()
    }

    /// Attaches the pool to `qp`. Only for [`super::cm::CmId::create_qp`], which drains `qp`
    /// before it detaches the pool.
    pub(crate) fn attach(&self, qp: *mut bindings::ib_qp) -> Result {
        self.qp
            .compare_exchange(
                core::ptr::null_mut(),
                qp,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(|_| ())
            .map_err(|_| EBUSY)
    }

    /// Detaches the pool from its QP, which was drained and destroyed: no work request of the
    /// pool is in flight, so the `ib_mr`s contexts still hold (an iWARP READ sink whose
    /// `IB_WR_REG_MR` was posted and whose READ was not, see [`Self::post_read_to_mr`]) are
    /// released now, while their device is registered. The pool itself may outlive the device
    /// (its owner goes later), and an `ib_mr` deregistered after its device was freed is a use
    /// after free (`rdma_restrack_del`).
    pub(crate) fn detach(&self) {
        self.used.store(false, Ordering::Relaxed);
        self.qp.store(core::ptr::null_mut(), Ordering::Release);
        for c in self.ctxs.iter() {
            c.release_mr();
        }
    }

    /// Whether a work request was posted since the pool was attached.
    pub(crate) fn used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }

    /// Checks that the pool is attached to `qp` and records that it is about to be used. The
    /// CM id owning `qp` cannot be dropped meanwhile (the caller borrows `qp` from it), and its
    /// drop sees the flag through the reference count's ordering.
    fn check(&self, qp: &Qp) -> Result {
        if self.qp.load(Ordering::Relaxed) != qp.as_raw() {
            return Err(EINVAL);
        }
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    fn ctx(&self, idx: u32) -> Result<&WrCtx<T>> {
        self.ctxs.get(idx as usize).ok_or(EINVAL)
    }

    /// Posts `wrs` to the send queue of `qp` as one chain, in order; each carries the entry of
    /// the context it names. Any context; allocates nothing.
    ///
    /// # Errors
    ///
    /// The error and how many work requests, from the start of `wrs`, were posted before it:
    /// `-EINVAL` (none posted) if the pool is not attached to `qp` or a context number is out of
    /// range; `-ENOMEM` if the send queue is full, `-EINVAL` for a request the QP cannot take,
    /// or the driver's error.
    pub fn post_send(
        &self,
        qp: &Qp,
        wrs: &mut [SendWr<'_>],
    ) -> core::result::Result<(), (Error, usize)> {
        self.check(qp).map_err(|e| (e, 0))?;
        for w in wrs.iter_mut() {
            let ctx = self.ctx(w.ctx).map_err(|e| (e, 0))?;
            let cqe = if w.last { &ctx.last } else { &ctx.early };
            w.wr.send_wr().__bindgen_anon_1.wr_cqe = cqe.as_raw();
        }
        // SAFETY: Every request carries an entry of this pool, attached to `qp`, which is
        // drained before the pool is detached (type invariant); the SGEs borrow their memory
        // for the call (see the module documentation).
        unsafe { qp.post_send_raw(wrs) }
    }

    /// Posts one RECV of context `ctx` into `sges` on `qp`. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the pool is not attached to `qp` or `ctx` is out of range, `-ENOMEM` if the
    /// receive queue is full, or the driver's error.
    pub fn post_recv(&self, qp: &Qp, ctx: u32, sges: &[Sge<'_>]) -> Result {
        self.check(qp)?;
        let ctx = self.ctx(ctx)?;
        let mut wr = bindings::ib_recv_wr::default();
        wr.__bindgen_anon_1.wr_cqe = ctx.last.as_raw();
        wr.sg_list = Sge::slice_as_raw(sges);
        wr.num_sge = sges.len() as i32;
        // SAFETY: `wr` is well formed and carries an entry of this pool, attached to `qp` (see
        // `post_send`).
        to_result(unsafe { bindings::ib_post_recv(qp.as_raw(), &wr, core::ptr::null_mut()) })
    }

    /// Posts `IB_WR_REG_MR` of context `ctx` for `mr` (as last mapped by [`FrMr::map`]) with
    /// `access` on the send queue of `qp`, signalled; the context keeps the `ib_mr` until the
    /// completion (dropping `mr` meanwhile does not deregister it). The rkey is valid for the
    /// peer once it completes. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the pool is not attached to `qp`, `ctx` is out of range or still holds the
    /// MR of an earlier REG_MR, `-ENOMEM` if the send queue is full, or the driver's error.
    pub fn post_reg_mr(&self, qp: &Qp, ctx: u32, mr: &FrMr, access: Access) -> Result {
        self.check(qp)?;
        let c = self.ctx(ctx)?;
        let raw = Arc::into_raw(mr.shared().clone()).cast_mut();
        if c.mr
            .compare_exchange(
                core::ptr::null_mut(),
                raw,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `raw` came from `Arc::into_raw` just above and was not stored.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(EINVAL);
        }
        // SAFETY: The context holds the `ib_mr` until the completion.
        let r = unsafe { self.post_reg(qp, c, mr.as_raw(), mr.rkey(), access, true) };
        if r.is_err() {
            c.release_mr();
        }
        r
    }

    /// Posts `IB_WR_REG_MR` of context `ctx` for `mr`, an MR taken out of the QP's
    /// [`MrPool`](super::mr::MrPool) (as last mapped by [`PoolMr::map_gfp`]), with `access` on the
    /// send queue of `qp`; signalled if `signaled`, otherwise a later signalled work request
    /// of the queue covers it (its completion tells the REG_MR was executed, and a failed
    /// REG_MR fails the QP, which flushes that one). The rkey is valid for the peer once it was
    /// executed. Keep `mr` out of the pool until then: given back earlier, it may be mapped
    /// again under the device (the MR itself stays allocated until the QP was drained). Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the pool is not attached to `qp`, `mr` is of another QP's pool or `ctx`
    /// is out of range, `-ENODEV` once `mr`'s pool was destroyed, `-ENOMEM` if the send queue
    /// is full, or the driver's error.
    pub fn post_reg_pool_mr(
        &self,
        qp: &Qp,
        ctx: u32,
        mr: &PoolMr,
        access: Access,
        signaled: bool,
    ) -> Result {
        self.check(qp)?;
        let c = self.ctx(ctx)?;
        if !mr.pool().is_of(qp.as_raw()) {
            return Err(EINVAL);
        }
        // The pool is destroyed only after its QP was drained, which cannot end before this
        // post does: a post that finds it live is flushed by that drain.
        if !mr.pool().is_live() {
            return Err(ENODEV);
        }
        // SAFETY: `mr` is an MR of the QP's pool, live until the QP was drained, which waits
        // for the completion of what is posted here.
        unsafe { self.post_reg(qp, c, mr.as_raw(), mr.rkey(), access, signaled) }
    }

    /// Posts `IB_WR_REG_MR` of `mr` under `key` on `qp` with the entry of context `c`.
    ///
    /// # Safety
    ///
    /// `mr` is an FRWR MR of `qp`'s PD that stays allocated until the work request completed;
    /// the pool is attached to `qp` (checked by the caller) and `c` is one of its contexts.
    unsafe fn post_reg(
        &self,
        qp: &Qp,
        c: &WrCtx<T>,
        mr: *mut bindings::ib_mr,
        key: u32,
        access: Access,
        signaled: bool,
    ) -> Result {
        let mut wr = bindings::ib_reg_wr::default();
        wr.wr.__bindgen_anon_1.wr_cqe = c.last.as_raw();
        wr.wr.opcode = bindings::ib_wr_opcode_IB_WR_REG_MR;
        if signaled {
            wr.wr.send_flags = SendFlags::from(SendFlag::Signaled).bits() as i32;
        }
        wr.mr = mr;
        wr.key = key;
        wr.access = FrMr::reg_access(access).bits();
        // SAFETY: `wr` is well formed and carries an entry of this pool, attached to `qp` (see
        // `post_send`); `mr` stays allocated until the completion (the caller's promise).
        to_result(unsafe { bindings::ib_post_send(qp.as_raw(), &wr.wr, core::ptr::null_mut()) })
    }

    /// Posts `IB_WR_LOCAL_INV` of context `ctx` for `rkey` on the send queue of `qp`,
    /// signalled. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the pool is not attached to `qp` or `ctx` is out of range, `-ENOMEM` if the
    /// send queue is full, or the driver's error.
    pub fn post_local_inv(&self, qp: &Qp, ctx: u32, rkey: u32) -> Result {
        self.check(qp)?;
        let c = self.ctx(ctx)?;
        let mut wr = bindings::ib_send_wr::default();
        wr.__bindgen_anon_1.wr_cqe = c.last.as_raw();
        wr.opcode = bindings::ib_wr_opcode_IB_WR_LOCAL_INV;
        wr.send_flags = SendFlags::from(SendFlag::Signaled).bits() as i32;
        wr.ex.invalidate_rkey = rkey;
        // SAFETY: `wr` is well formed and carries an entry of this pool, attached to `qp`.
        to_result(unsafe { bindings::ib_post_send(qp.as_raw(), &wr, core::ptr::null_mut()) })
    }

    /// # Safety
    ///
    /// `wc` is the completion ib_core passes to the `done` of a `Cqe` posted by this pool.
    unsafe fn deliver(ctx: *const WrCtx<T>, last: bool, wc: *mut bindings::ib_wc) {
        // SAFETY: The entry belongs to a context of a pool attached to the QP, which is
        // drained before the pool goes (type invariant of `WrPool`), so the context and its
        // pool are alive; `Wc` is transparent over `ib_wc`, valid for the callback.
        let (ctx, wc) = unsafe { (&*ctx, Wc::from_raw(wc)) };
        if last {
            ctx.release_mr();
        }
        // SAFETY: By the type invariant of `WrCtx`, `pool` points to the live pool.
        let pool = unsafe { ctx.pool.as_ref() };
        pool.owner.done(ctx.idx, last, wc);
    }

    /// `ib_cqe.done` of a context's `last` entry: the completion of its last work request.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with the completion of a work request posted with this
    /// context's `last` as its `wr_cqe`.
    unsafe extern "C" fn done_last(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
        // SAFETY: ib_core passes the completion of a work request whose `wr_cqe` was the `last`
        // entry of a context, its first field (`repr(C)`), so that is the context's address.
        unsafe {
            let ctx = (*wc).__bindgen_anon_1.wr_cqe.cast::<WrCtx<T>>();
            Self::deliver(ctx, true, wc)
        }
    }

    /// `ib_cqe.done` of a context's `early` entry: the completion of one of its work requests
    /// other than the last.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with the completion of a work request posted with this
    /// context's `early` as its `wr_cqe`.
    unsafe extern "C" fn done_early(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
        // SAFETY: ib_core passes the completion of a work request whose `wr_cqe` was the
        // `early` entry of a context, which sits that field's offset into the context.
        unsafe {
            let cqe = (*wc).__bindgen_anon_1.wr_cqe.cast::<Cqe>();
            let ctx = crate::container_of!(cqe, WrCtx<T>, early);
            Self::deliver(ctx, false, wc)
        }
    }
}

mod read_mr;

impl<T: WrCompletion> WrCtx<T> {
    fn release_mr(&self) {
        // Most completions had no REG_MR in flight: a load, not a locked `xchg`, for those.
        // `mr` is set only by `post_reg_mr` before it posts, and taken here at the completion,
        // so a null read means there is nothing to release.
        if self.mr.load(Ordering::Relaxed).is_null() {
            return;
        }
        let p = self.mr.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: Only `post_reg_mr` stores into `mr`, a pointer from `Arc::into_raw`; the
            // swap took it out, so it is turned back into an `Arc` once.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}

#[pinned_drop]
impl<T: WrCompletion> PinnedDrop for WrPool<T> {
    fn drop(self: Pin<&mut Self>) {
        // No work request is in flight any more (type invariant), and `detach` released what
        // the contexts held; a pool never attached holds nothing. Kept so that nothing leaks.
        for c in self.ctxs.iter() {
            c.release_mr();
        }
    }
}

/// A pool as the CM id owning its QP holds it, whatever its owner type.
pub(crate) trait AttachedPool: Send + Sync {
    fn attach(&self, qp: *mut bindings::ib_qp) -> Result;
    fn detach(&self);
    fn used(&self) -> bool;
}

impl<T: WrCompletion> AttachedPool for WrPool<T> {
    fn attach(&self, qp: *mut bindings::ib_qp) -> Result {
        WrPool::attach(self, qp)
    }

    fn detach(&self) {
        WrPool::detach(self)
    }

    fn used(&self) -> bool {
        WrPool::used(self)
    }
}
