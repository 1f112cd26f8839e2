// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`struct ib_srq`, IB spec 10.2.9), their RECVs and their events.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`ib_create_srq`,
//! `ib_post_srq_recv`, `ib_modify_srq`, `ib_destroy_srq`).
//!
//! An [`Srq`] is a receive queue that many RC QPs consume: a QP created on it
//! ([`CmId::create_qp_on_srq`]) has no receive queue of its own and takes each incoming SEND's
//! RECV from the SRQ. The QPs take RECVs in whatever order their messages arrive, so the SRQ
//! cannot hand its per-work-request contexts out in posting order as a [`super::wr::WrPool`]
//! does: it keeps a free list of context numbers, a context returns to it when its completion
//! has been delivered, and the context number comes back with the completion through its own
//! `ib_cqe` (the entry is the first field of the context).
//!
//! Every RECV posted to an SRQ is reported to its owner exactly once: with its completion
//! ([`SrqOwner::done`], on the CQ of the QP that consumed it), or, for a RECV no QP consumed,
//! when the SRQ is destroyed ([`SrqOwner::unconsumed`]): an SRQ has no CQ of its own, so
//! ib_core flushes nothing at that point.
//!
//! The SRQ's asynchronous events (`IB_EVENT_SRQ_LIMIT_REACHED`, `IB_EVENT_SRQ_ERR`) reach the
//! driver's `event_handler` in any context (an interrupt handler on hardware); the layer
//! records them and hands them to [`SrqOwner::event`] from the system workqueue, in process
//! context.
//!
//! Lifetimes: a QP on the SRQ holds it (its CM id keeps a reference until the QP is
//! destroyed), and its drain ([`super::qp::Qp::drain`], `ib_drain_qp`) waits for the
//! last-WQE-reached event and the completions of the RECVs it consumed. The `ib_srq` is
//! destroyed when the last reference goes, after every QP on it; its PD outlives it.

use super::{
    bound::{BoundDevice, Rank, Release, Slot},
    cm::{CmHandler, CmId, QpParts},
    cq::{Cq, Cqe, Wc},
    device::Device,
    pd::Pd,
    qp::QpCap,
    wr::{AttachedPool, Sge, WrCompletion, WrPool},
};
use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::{rcu, Arc, ArcBorrow, SpinLockIrq},
    workqueue::{self, Work, WorkItem},
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU32, Ordering},
};

/// An asynchronous event of an SRQ (`enum ib_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqEvent {
    /// Fewer RECVs than the limit ([`Srq::set_limit`]) are left; the limit is disarmed until
    /// set again (`IB_EVENT_SRQ_LIMIT_REACHED`).
    LimitReached,
    /// The SRQ failed; its QPs cannot receive any more (`IB_EVENT_SRQ_ERR`).
    Error,
}

const PENDING_LIMIT: u32 = 1 << 0;
const PENDING_ERROR: u32 = 1 << 1;

/// What an [`Srq`]'s owner does with its RECVs' completions and its events.
pub trait SrqOwner: Send + Sync + 'static {
    /// What the owner keeps of a completed RECV once its context is free again.
    type Claimed;

    /// The RECV posted with context `ctx` completed (success, error or flush): take what the
    /// owner keeps for it (cookie, buffers). The context is free for another RECV as soon as
    /// this returns, before [`SrqOwner::done`] reports the completion: a consumer that reposts
    /// as soon as it sees the completion finds room. Runs in the consuming QP's CQ's
    /// [`PollContext`](super::cq::PollContext).
    fn claim(&self, ctx: u32) -> Self::Claimed;

    /// The completion of a RECV whose context [`SrqOwner::claim`] gave back, on the CQ of the QP
    /// that consumed it (`wc.qp_num()`). Runs in that CQ's [`PollContext`](super::cq::PollContext).
    fn done(&self, claimed: Self::Claimed, wc: &Wc);

    /// The RECV posted with context `ctx` was still in the SRQ when it was destroyed. Process
    /// context.
    fn unconsumed(&self, ctx: u32);

    /// An asynchronous event of the SRQ. Process context (the system workqueue).
    fn event(&self, ev: SrqEvent);
}

/// The size of an SRQ (`struct ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// RECVs the SRQ holds.
    pub max_wr: u32,
    /// SGEs per RECV.
    pub max_sge: u32,
    /// The low watermark: [`SrqEvent::LimitReached`] once fewer RECVs are left (0: disarmed).
    pub limit: u32,
}

/// The device's SRQ limits: SRQs, RECVs per SRQ, SGEs per RECV (`struct ib_device_attr`).
pub fn device_limits(dev: &Device) -> (u32, u32, u32) {
    // SAFETY: `attrs` is filled in before the device is registered and not changed after; the
    // `&Device` keeps the device alive.
    let a = unsafe { &(*dev.as_raw()).attrs };
    (a.max_srq, a.max_srq_wr, a.max_srq_sge)
}

/// The context of one RECV of an SRQ.
///
/// # Invariants
///
/// `cqe` is the first field, and its `done` is [`SrqShared::done`] for the same `T`; `shared`
/// points to the `SrqShared` whose `ctxs` hold this context at index `idx`. `busy` is set from
/// the post of a RECV with this context until it was reported (completion or unconsumed).
#[repr(C)]
struct SrqCtx<T: SrqOwner> {
    cqe: Cqe,
    shared: NonNull<SrqShared<T>>,
    idx: u32,
    busy: AtomicBool,
}

/// The part of an SRQ the driver's callbacks reach: the owner, the contexts and the event
/// work. Lives in its own `Arc`, which the `ib_srq`'s `srq_context` points to.
///
/// # Invariants
///
/// `ctxs` is never resized; the free list holds each index of a context that is not busy,
/// once, and has room for all of them.
#[pin_data]
pub struct SrqShared<T: SrqOwner> {
    #[pin]
    owner: T,
    ctxs: KVec<SrqCtx<T>>,
    #[pin]
    free: SpinLockIrq<KVec<u32>>,
    /// `PENDING_*` events recorded by the driver's handler, not delivered yet.
    pending: AtomicU32,
    /// Set once the `ib_srq` is destroyed: events still pending are not delivered.
    gone: AtomicBool,
    #[pin]
    work: Work<SrqShared<T>>,
}

// SAFETY: The contexts' raw pointers point into the `SrqShared` itself; their `Cqe`s are only
// read by ib_core; `owner` is `Send + Sync`.
unsafe impl<T: SrqOwner> Send for SrqShared<T> {}
// SAFETY: See the `Send` impl; `&SrqShared` only reads, uses atomics or locks.
unsafe impl<T: SrqOwner> Sync for SrqShared<T> {}

crate::workqueue::impl_has_work! {
    impl{T: SrqOwner} HasWork<SrqShared<T>> for SrqShared<T> { self.work }
}

impl<T: SrqOwner> WorkItem for SrqShared<T> {
    type Pointer = Arc<SrqShared<T>>;

    fn run(this: Arc<SrqShared<T>>) {
        let p = this.pending.swap(0, Ordering::AcqRel);
        if this.gone.load(Ordering::Acquire) {
            return;
        }
        if p & PENDING_LIMIT != 0 {
            this.owner.event(SrqEvent::LimitReached);
        }
        if p & PENDING_ERROR != 0 {
            this.owner.event(SrqEvent::Error);
        }
    }
}

impl<T: SrqOwner> SrqShared<T> {
    fn contexts(shared: NonNull<SrqShared<T>>, n: u32) -> Result<KVec<SrqCtx<T>>> {
        let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for idx in 0..n {
            // INVARIANT: `cqe` first with this type's trampoline; `shared` is the final address
            // of the struct being initialised; `idx` the index; not busy.
            v.push(
                SrqCtx {
                    cqe: Cqe::from_fn(Self::done),
                    shared,
                    idx,
                    busy: AtomicBool::new(false),
                },
                GFP_KERNEL,
            )?;
        }
        Ok(v)
    }

    fn free_list(n: u32) -> Result<KVec<u32>> {
        let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for i in (0..n).rev() {
            v.push(i, GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// The owner.
    pub fn owner(&self) -> &T {
        &self.owner
    }

    fn put_free(&self, idx: u32) {
        // Cannot fail: the list has room for every index (type invariant).
        let _ = self.free.lock().push_within_capacity(idx);
    }

    /// `ib_cqe.done` of a context: the completion of the RECV posted with it.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with the completion of a RECV whose `wr_cqe` was a context's
    /// `cqe`.
    unsafe extern "C" fn done(_cq: *mut bindings::ib_cq, wc: *mut bindings::ib_wc) {
        // SAFETY: ib_core passes the completion of a RECV whose `wr_cqe` is the first field of
        // a context (`repr(C)`); the context lives in the `SrqShared` that a QP on the SRQ
        // keeps alive until it is drained (see the module documentation); `Wc` is transparent
        // over `ib_wc`, valid for the callback.
        let (ctx, wc) = unsafe {
            let c = (*wc).__bindgen_anon_1.wr_cqe.cast::<SrqCtx<T>>();
            (&*c, Wc::from_raw(wc))
        };
        // SAFETY: By the type invariant of `SrqCtx`, `shared` points to the live struct.
        let shared = unsafe { ctx.shared.as_ref() };
        if ctx.busy.swap(false, Ordering::AcqRel) {
            // The context goes back before the completion is reported (`SrqOwner::claim`).
            let claimed = shared.owner.claim(ctx.idx);
            shared.put_free(ctx.idx);
            shared.owner.done(claimed, wc);
        }
    }

    /// The driver's `event_handler` of the SRQ. Any context.
    ///
    /// # Safety
    ///
    /// Called by ib_core or the driver only, with `ctx` the `srq_context` given at creation,
    /// while the `ib_srq` exists.
    unsafe extern "C" fn event_cb(ev: *mut bindings::ib_event, ctx: *mut c_void) {
        // SAFETY: `ev` is valid for the call.
        let kind = unsafe { (*ev).event };
        let bit = match kind {
            bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED => PENDING_LIMIT,
            bindings::ib_event_type_IB_EVENT_SRQ_ERR => PENDING_ERROR,
            _ => return,
        };
        // SAFETY: `ctx` is `Arc::as_ptr` of the `SrqShared` that the `Srq` owning the `ib_srq`
        // holds a reference to until after `ib_destroy_srq` returned, so the count is not zero.
        let this: Arc<SrqShared<T>> =
            unsafe { ArcBorrow::from_raw(ctx.cast_const().cast::<SrqShared<T>>()) }.into();
        this.pending.fetch_or(bit, Ordering::AcqRel);
        // Already queued: that run delivers this bit too. The reference is not the last one.
        let _ = workqueue::system().enqueue(this);
    }
}

/// The name and lock class of every SRQ's free list lock. Not generic and never inlined,
/// so that `Srq::new` instantiated in another crate (a consumer of the
/// layer, compiled with `-Zshare-generics=n`) registers the same name with the same
/// key: lockdep warns when one key has two names.
#[inline(never)]
fn srq_free_class() -> (&'static CStr, Pin<&'static crate::sync::LockClassKey>) {
    (c"rdma_srq_free", crate::static_lock_class!())
}

/// The name and lock class of every SRQ's event work. Not generic and never inlined,
/// so that `Srq::new` instantiated in another crate (a consumer of the
/// layer, compiled with `-Zshare-generics=n`) registers the same name with the same
/// key: lockdep warns when one key has two names.
#[inline(never)]
fn srq_event_class() -> (&'static CStr, Pin<&'static crate::sync::LockClassKey>) {
    (c"rdma_srq_event", crate::static_lock_class!())
}

/// A shared receive queue whose RECVs' completions and events go to its owner `T`.
///
/// The SRQ is destroyed when the `Srq` is dropped, or, if the device goes first, when the
/// device's client registration revokes it ([`super::bound`]); its RECVs no QP consumed are
/// reported to the owner ([`SrqOwner::unconsumed`]) then.
///
/// # Invariants
///
/// `srq` is an `ib_srq` created in `pd` with `shared` as its `srq_context`, the one `slot`
/// holds: live while the slot has not been revoked.
pub struct Srq<T: SrqOwner> {
    srq: NonNull<bindings::ib_srq>,
    slot: Arc<Slot<SrqRes<T>>>,
    shared: Arc<SrqShared<T>>,
    pd: Arc<Pd>,
    attr: SrqAttr,
    /// Set before the first RECV is posted: only then must a QP on the SRQ be drained before
    /// it is destroyed (see [`AttachedPool::used`]).
    used: AtomicBool,
}

// SAFETY: SRQ verbs may be called from any thread; ib_core and the driver lock internally.
unsafe impl<T: SrqOwner> Send for Srq<T> {}
// SAFETY: See the `Send` impl.
unsafe impl<T: SrqOwner> Sync for Srq<T> {}

impl<T: SrqOwner> Srq<T> {
    /// Creates an SRQ in `pd` holding `attr.max_wr` RECVs of `attr.max_sge` SGEs, with the
    /// limit `attr.limit`, whose completions and events go to the owner `owner` initialises.
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a zero size or one beyond the device's limits, `-EOPNOTSUPP` if the
    /// device has no SRQs, `-ENODEV` once the PD's device was removed, `-ENOMEM`, or the
    /// driver's error.
    pub fn new(pd: &Arc<Pd>, owner: impl PinInit<T, Error>, attr: SrqAttr) -> Result<Arc<Self>> {
        let dev = BoundDevice::access(pd.binding())?;
        let (max_srq, max_wr, max_sge) = device_limits(&dev);
        if max_srq == 0 {
            return Err(EOPNOTSUPP);
        }
        if attr.max_wr == 0
            || attr.max_sge == 0
            || attr.max_wr > max_wr
            || attr.max_sge > max_sge
            || attr.limit >= attr.max_wr
        {
            return Err(EINVAL);
        }
        let n = attr.max_wr;
        let shared = Arc::pin_init(
            try_pin_init!(&this in SrqShared {
                owner <- owner,
                ctxs: SrqShared::contexts(this, n)?,
                free <- {
                    let (name, key) = srq_free_class();
                    SpinLockIrq::new(SrqShared::<T>::free_list(n)?, name, key)
                },
                pending: AtomicU32::new(0),
                gone: AtomicBool::new(false),
                work <- {
                    let (name, key) = srq_event_class();
                    Work::new(name, key)
                },
            }),
            GFP_KERNEL,
        )?;
        let mut init = bindings::ib_srq_init_attr {
            event_handler: Some(SrqShared::<T>::event_cb),
            srq_context: Arc::as_ptr(&shared).cast_mut().cast(),
            srq_type: bindings::ib_srq_type_IB_SRQT_BASIC,
            ..Default::default()
        };
        init.attr.max_wr = attr.max_wr;
        init.attr.max_sge = attr.max_sge;
        init.attr.srq_limit = attr.limit;
        // SAFETY: `pd` is live; `init` is valid for the call; the context stays valid while the
        // SRQ exists (the `Srq` holds `shared` and destroys the SRQ before letting it go).
        let raw = from_err_ptr(unsafe { bindings::ib_create_srq(pd.as_raw(), &mut init) })?;
        let srq = NonNull::new(raw).ok_or(ENOMEM)?;
        // The device may grant more than asked; only `n` contexts exist, so no more than `n`
        // RECVs are ever posted.
        let attr = SrqAttr {
            max_wr: n,
            max_sge: attr.max_sge,
            limit: attr.limit,
        };
        // On an error the SRQ, used by nothing, is destroyed.
        let slot = BoundDevice::track(
            dev.binding(),
            SrqRes {
                srq,
                shared: shared.clone(),
            },
        )?;
        // INVARIANT: `srq` was just created in `pd` with `shared` as its context.
        let r = Arc::new(
            Srq {
                srq,
                slot: slot.clone(),
                shared,
                pd: pd.clone(),
                attr,
                used: AtomicBool::new(false),
            },
            GFP_KERNEL,
        );
        r.map_err(|e| {
            // No RECV was posted and no QP uses it.
            Slot::release_now(&slot);
            e.into()
        })
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_srq {
        self.srq.as_ptr()
    }

    /// The owner.
    pub fn owner(&self) -> &T {
        &self.shared.owner
    }

    /// The PD the SRQ was created in.
    pub fn pd(&self) -> &Arc<Pd> {
        &self.pd
    }

    /// The SRQ's size as created (RECVs, SGEs per RECV, limit asked for at creation).
    pub fn attr(&self) -> SrqAttr {
        self.attr
    }

    /// RECVs posted and not reported yet. Any context.
    pub fn outstanding(&self) -> u32 {
        self.attr.max_wr - self.shared.free.lock().len() as u32
    }

    /// Posts one RECV into `sges`. `prepare` is called with the context number the RECV takes
    /// before the RECV is posted (its completion may arrive before this returns); if the post
    /// then fails, `undo` is called with the same number before the context is free again. Any
    /// context; allocates nothing.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` if every context holds a RECV (the SRQ is full), `-EINVAL` for more SGEs than
    /// the SRQ takes, `-ENODEV` once the device was removed, or the driver's error.
    pub fn post_recv(
        &self,
        sges: &[Sge<'_>],
        prepare: impl FnOnce(u32),
        undo: impl FnOnce(u32),
    ) -> Result<u32> {
        if sges.len() > self.attr.max_sge as usize {
            return Err(EINVAL);
        }
        let rcu = rcu::read_lock();
        if !self.slot.bound().live(&rcu) {
            return Err(ENODEV);
        }
        let idx = self.shared.free.lock().pop().ok_or(ENOMEM)?;
        let ctx = self.shared.ctxs.get(idx as usize).ok_or(EINVAL)?;
        prepare(idx);
        ctx.busy.store(true, Ordering::Release);
        if !self.used.load(Ordering::Relaxed) {
            self.used.store(true, Ordering::Relaxed);
        }
        let mut wr = bindings::ib_recv_wr::default();
        wr.__bindgen_anon_1.wr_cqe = ctx.cqe.as_raw();
        wr.sg_list = Sge::slice_as_raw(sges);
        wr.num_sge = sges.len() as i32;
        // SAFETY: The SRQ is live: its device is bound during the RCU section `rcu` (type
        // invariant); `wr` is well formed and carries the entry of a context that lives until
        // the RECV is reported; the SGEs borrow their memory for the call (see `super::wr`).
        let r = to_result(unsafe {
            bindings::ib_post_srq_recv(self.as_raw(), &wr, core::ptr::null_mut())
        });
        if let Err(e) = r {
            ctx.busy.store(false, Ordering::Release);
            undo(idx);
            self.shared.put_free(idx);
            return Err(e);
        }
        Ok(idx)
    }

    /// Arms the limit: [`SrqEvent::LimitReached`] is reported once fewer than `limit` RECVs are
    /// left in the SRQ, then the limit is disarmed until set again (`ib_modify_srq` with
    /// `IB_SRQ_LIMIT`). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a limit not below the SRQ's size, `-ENODEV` once the device was removed,
    /// or the driver's error.
    pub fn set_limit(&self, limit: u32) -> Result {
        if limit >= self.attr.max_wr {
            return Err(EINVAL);
        }
        let _dev = BoundDevice::access(self.slot.bound())?;
        let mut a = bindings::ib_srq_attr {
            srq_limit: limit,
            ..Default::default()
        };
        // SAFETY: The SRQ is live while `_dev` holds its device bound (type invariant); `a` is
        // valid for the call.
        to_result(unsafe {
            bindings::ib_modify_srq(
                self.as_raw(),
                &mut a,
                bindings::ib_srq_attr_mask_IB_SRQ_LIMIT,
            )
        })
    }

    /// The SRQ's attributes as the driver reports them (`ib_query_srq`): its size and the
    /// armed limit (0 once it fired). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed, or the driver's error.
    pub fn query(&self) -> Result<SrqAttr> {
        let _dev = BoundDevice::access(self.slot.bound())?;
        let mut a = bindings::ib_srq_attr::default();
        // SAFETY: The SRQ is live while `_dev` holds its device bound (type invariant); `a` is
        // valid for the call.
        to_result(unsafe { bindings::ib_query_srq(self.as_raw(), &mut a) })?;
        Ok(SrqAttr {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            limit: a.srq_limit,
        })
    }
}

impl<T: SrqOwner> Drop for Srq<T> {
    fn drop(&mut self) {
        // Destroys the SRQ unless its device's removal did.
        Slot::release_now(&self.slot);
    }
}

/// The SRQ as its device's binding tracks it.
///
/// # Invariants
///
/// `srq` is a live `ib_srq` whose `srq_context` is `shared`.
struct SrqRes<T: SrqOwner> {
    srq: NonNull<bindings::ib_srq>,
    shared: Arc<SrqShared<T>>,
}

// SAFETY: SRQ verbs may be called from any thread; the owner is `Send + Sync`.
unsafe impl<T: SrqOwner> Send for SrqRes<T> {}

impl<T: SrqOwner> Release for SrqRes<T> {
    const RANK: Rank = Rank::Srq;

    fn release(self) {
        // No QP uses the SRQ any more: each holds a reference until it is destroyed, and
        // revocation releases QPs first.
        // SAFETY: The SRQ is live (type invariant) and released once, here.
        unsafe { bindings::ib_destroy_srq(self.srq.as_ptr()) };
        // No event handler runs after `ib_destroy_srq`; one queued still may.
        self.shared.gone.store(true, Ordering::Release);
        let w = Arc::as_ptr(&self.shared);
        // SAFETY: `w` points to the live `SrqShared` (this holds a reference); its `work` field
        // is a `Work` initialised at creation.
        let cancelled = unsafe {
            let work = Work::raw_get(core::ptr::addr_of!((*w).work));
            bindings::cancel_work_sync(work)
        };
        if cancelled {
            // SAFETY: A queued work item owns the reference `enqueue` leaked with
            // `Arc::into_raw`; cancelled, it never runs, so the reference is taken back here.
            drop(unsafe { Arc::from_raw(w) });
        }
        // The RECVs no QP consumed: nothing reports them otherwise (no completion can arrive
        // now: every QP on the SRQ was drained and destroyed).
        for c in self.shared.ctxs.iter() {
            if c.busy.swap(false, Ordering::AcqRel) {
                self.shared.owner.unconsumed(c.idx);
                self.shared.put_free(c.idx);
            }
        }
    }
}

/// A QP's attachment to its SRQ, as the CM id owning the QP holds it (in place of the pool of
/// a receive queue).
impl<T: SrqOwner> AttachedPool for Srq<T> {
    fn attach(&self, _qp: *mut bindings::ib_qp) -> Result {
        Ok(())
    }

    fn detach(&self) {}

    /// Whether a RECV was ever posted to the SRQ: then the QP may have consumed some, and is
    /// drained before it goes (the drain waits for the last-WQE-reached event and the
    /// completions of the RECVs it consumed). Not drained: QPs of an SRQ nothing was posted to
    /// yet, like those of an unused pool (rdma_rxe cannot drain a QP whose move to RTR failed:
    /// docs/upstream/rxe-modify-qp-enomem-recv-task.md). A
    /// consumer that posts an SRQ's very first RECV while it drops the CM id of a connected QP
    /// on it should disconnect that QP first (rkdapl always does), so that it cannot consume
    /// the RECV undrained.
    fn used(&self) -> bool {
        self.used.load(Ordering::Relaxed)
    }
}

/// What a QP on an SRQ is created with: as [`super::cm::QpInit`], with the SRQ instead of a
/// receive queue's pool. The CM id owning the QP keeps the SRQ until the QP is destroyed.
pub struct SrqQpInit<S: WrCompletion, T: SrqOwner> {
    /// The CQ of SEND-queue completions.
    pub send_cq: Arc<Cq>,
    /// The CQ on which the RECVs this QP consumes complete.
    pub recv_cq: Arc<Cq>,
    /// The contexts of SEND-queue work requests; attached to no other QP.
    pub send_pool: Arc<WrPool<S>>,
    /// The SRQ, in the PD the QP is created in.
    pub srq: Arc<Srq<T>>,
    /// SEND-queue sizes (the receive-queue ones are ignored).
    pub cap: QpCap,
}

impl<H: CmHandler> CmId<H> {
    /// Creates the id's RC QP in `pd` on the SRQ of `init`, which the QP takes its RECVs from,
    /// and returns the capacities the device granted; otherwise as [`CmId::create_qp`]. May
    /// sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an SRQ of another PD, otherwise as [`CmId::create_qp`].
    pub fn create_qp_on_srq<S: WrCompletion, T: SrqOwner>(
        &self,
        pd: &Arc<Pd>,
        init: SrqQpInit<S, T>,
    ) -> Result<QpCap> {
        if init.srq.pd().as_raw() != pd.as_raw() {
            return Err(EINVAL);
        }
        let mut attr = bindings::ib_qp_init_attr {
            send_cq: init.send_cq.as_raw(),
            recv_cq: init.recv_cq.as_raw(),
            srq: init.srq.as_raw(),
            ..Default::default()
        };
        attr.cap.max_send_wr = init.cap.max_send_wr;
        attr.cap.max_send_sge = init.cap.max_send_sge;
        attr.cap.max_inline_data = init.cap.max_inline_data;
        attr.cap.max_rdma_ctxs = init.cap.max_rdma_ctxs;
        attr.sq_sig_type = bindings::ib_sig_type_IB_SIGNAL_REQ_WR;
        attr.qp_type = bindings::ib_qp_type_IB_QPT_RC;
        let parts = QpParts {
            pools: [init.send_pool, init.srq],
            cqs: [init.send_cq, init.recv_cq],
            _pd: pd.clone(),
        };
        // The id keeps the SRQ (`parts`) from here until the QP is destroyed.
        self.create_qp_with(pd, attr, parts)
    }
}
