// SPDX-License-Identifier: GPL-2.0

//! The DTO contexts of one queue of an EP, handed out and taken back in posting order, and
//! their completions.
//!
//! # Locking
//!
//! A ring has one producer side and one consumer side, as the send contexts of the kernel's
//! NFS/RDMA client (`rpcrdma_sendctx_get_locked()`, `rpcrdma_sendctx_put_locked()`,
//! `net/sunrpc/xprtrdma/verbs.c`): the posters move its head, the completion side its tail.
//!
//! - **Posters** serialise among themselves with one IRQ-safe spinlock per ring
//!   ([`RingShared::q`]), held from the first check to the return of `ib_post_send()`, so
//!   posting order is sequence order. It guards what only they change ([`RingState`]): the
//!   head, the QP they post to (cached, see [`Target`]), the RECVs that wait for a QP, the
//!   counters of post calls, and the context a post call takes, from [`RingCore::take`] until
//!   its work requests are handed to the driver.
//! - **The consumer** (the completion side) takes no lock: one call at a time finishes DTOs,
//!   and its state ([`Consumer`]: the tail, the highest arrived DTO) and the contexts of
//!   posted DTOs are its own. One at a time because the CQ's completion work runs one
//!   completion after the other (ib_core polls a CQ from one work item), and the other
//!   finishers run only when no completion of the ring can come: the teardown's reaping once
//!   the QP is drained, and the flush of RECVs that never reached a QP ([`DtoRing::reap_all`]).
//! - **Shared**: the tail and the work requests of finished DTOs ([`Contexts`]), stored by the
//!   consumer with release after its last access to the contexts it finished, and loaded by
//!   the posters with acquire before they reuse one ([`RingCore::take`]).
//!
//! A context belongs to the poster that takes it until its work requests are posted, then to
//! the consumer until the tail passes it. What a poster wrote to it reaches the consumer
//! through the driver: the consumer reads a context only after a completion of it, or of a
//! DTO posted after it (RC completes in order), and `ib_post_send()`, the device and
//! `ib_poll_cq()` order the post before the completion as for any ULP's `ib_cqe` context; or,
//! when reaping, after taking the posters' lock to read the head. Two exceptions, each on
//! fields the other side does not touch meanwhile: a post call that stopped inside a DTO marks
//! it orphaned after posting part of it ([`RingCore::orphan`]: `nwr`, `silent`), while its
//! posted work requests may complete in error ([`Slot::fail`]: `status`); and
//! [`DtoRing::in_flight`] reads `suppress` and `silent` of outstanding contexts under the
//! posters' lock. Both sides use raw field accesses for those, never a reference to the whole
//! context.
//!
//! So a post call takes one lock (this one) and a completion none. The consumer takes the
//! posters' lock in one case only: to give an iWARP RDMA READ's sink MR back to the pool the
//! posters take it from (`super::iwarp`). The QP a post call uses is cached under the lock
//! and checked for its device's removal with one load inside the call's RCU read-side
//! critical section ([`Target::qp`]).
//!
//! Events are delivered and references dropped outside any lock (an upcall may post again).
//! The consumer drops what a DTO's context holds in place, stores the tail, then delivers the
//! DTO's event.

use super::{stats::DoneStats, DtoOp, DtoStats, DtoStatus, OneOrMore, RecvFlags};
use crate::rdma::{
    bound::BoundDevice,
    cm::{CmHandler, CmId},
    cq::Wc,
    mr::{DmaRegion, FrMr, PoolMr},
    qp::Qp,
    wr::WrPool,
};
use crate::{lmr::LmrUse, pz::Pz, trace};
use core::{
    cell::{Cell, UnsafeCell},
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{rcu, Arc, SpinLockIrq},
};

/// An object a DTO keeps alive until it finishes (an RMR, for its bind or unbind).
pub(crate) trait KeepAlive: Send + Sync {}

impl<T: Send + Sync> KeepAlive for T {}

/// What owns the QP a ring posts to: the EP's CM id.
pub(crate) trait QpOwner: Send + Sync {
    /// The QP, once created and until its device's removal begins, live while the caller's
    /// RCU read-side critical section `g` lasts ([`CmId::qp_with_guard`]): for a post.
    fn qp<'a>(&'a self, g: &'a rcu::Guard) -> Option<&'a Qp>;
}

impl<T: CmHandler> QpOwner for CmId<T> {
    fn qp<'a>(&'a self, g: &'a rcu::Guard) -> Option<&'a Qp> {
        CmId::qp_with_guard(self, g)
    }
}

/// The DTO a context serves, from its post to its finish.
pub(super) struct Slot {
    /// The DTO's sequence number (its place in posting order).
    pub(super) seq: u64,
    pub(super) op: DtoOp,
    pub(super) cookie: u64,
    /// Bytes of the local segments; for a RECV, once completed, the bytes received.
    pub(super) len: u64,
    /// Queue slots its posted work requests hold, given back when it finishes.
    pub(super) nwr: u32,
    /// The first error of its work requests, or `Success`.
    pub(super) status: DtoStatus,
    /// `RKDAPL_COMPLETION_SUPPRESS`: no event if it succeeds.
    pub(super) suppress: bool,
    /// The post call failed after posting some of its work requests (the caller got the
    /// error): it finishes without an event.
    pub(super) silent: bool,
    /// RECV: immediate data, what its completion reported and the rkey the peer invalidated.
    pub(super) imm: u32,
    pub(super) recv_flags: RecvFlags,
    pub(super) inv_rkey: u32,
    /// The LMRs its segments use, busy until it finishes.
    pub(super) lmrs: OneOrMore<LmrUse>,
    /// RMR bind/unbind: the RMR, kept alive (it owns the MR the work request registers).
    pub(super) rmr: Option<Arc<dyn KeepAlive>>,
    /// A SEND from lent pages (`post/lent.rs`): their mapping, undone (and their owner
    /// dropped) when the DTO finishes, before its event.
    pub(super) lent: Option<DmaRegion>,
    /// iWARP RDMA READ: the sink MR it registered (`super::iwarp`), back to the pool when it
    /// finishes.
    pub(super) read_mr: Option<FrMr>,
    /// Pooled RMR unbind: the MR (`super::post::PooledWr::Inv`), back to its pool when it
    /// finishes.
    pub(super) pool_mr: Option<PoolMr>,
    /// The completion of its last work request arrived ([`RingShared::arrived`]).
    pub(super) arrived: bool,
}

impl Slot {
    fn empty() -> Slot {
        Slot {
            seq: 0,
            op: DtoOp::Send,
            cookie: 0,
            len: 0,
            nwr: 0,
            status: DtoStatus::Success,
            suppress: false,
            silent: false,
            imm: 0,
            recv_flags: RecvFlags::empty(),
            inv_rkey: 0,
            lmrs: OneOrMore::Empty,
            rmr: None,
            lent: None,
            read_mr: None,
            pool_mr: None,
            arrived: false,
        }
    }

    /// Records a failed work request of the DTO in the context at `s`: the first error is the
    /// one reported. The log line shows the cookie if `show_cookie` (not a typed EP's: it is a
    /// kernel pointer).
    ///
    /// # Safety
    ///
    /// The caller is the ring's consumer and `s` the context of a posted DTO that has not
    /// finished. Writes `status` only, by a raw access: the DTO's poster may mark it orphaned
    /// meanwhile ([`RingCore::orphan`], other fields).
    unsafe fn fail(s: *mut Slot, wc: &Wc, ep_id: u32, show_cookie: bool) {
        let status = DtoStatus::from_wc(wc);
        // SAFETY: As the caller guarantees: `op` and `cookie` do not change while the DTO is
        // posted, and nobody else writes `status` meanwhile.
        let (op, cookie) = unsafe {
            if (*s).status == DtoStatus::Success {
                (*s).status = status;
            }
            ((*s).op, (*s).cookie)
        };
        if status != DtoStatus::Flushed {
            trace::log_dto_error(wc, ep_id, op, if show_cookie { cookie } else { 0 }, status);
        }
    }
}

/// A context, owned by one side of the ring at a time (see the module's `# Locking`).
pub(super) struct SlotCell(UnsafeCell<Slot>);

/// The consumer's state: what the completion side of a ring changes.
pub(super) struct Consumer {
    /// The oldest outstanding DTO's sequence number, and its context.
    pub(super) tail: u64,
    pub(super) tail_idx: u32,
    /// The highest sequence number whose last work request's completion arrived.
    pub(super) done_seq: u64,
    /// As [`RingCore::late_reads`] (each side has its copy).
    pub(super) late_reads: bool,
}

impl Consumer {
    /// As [`RingCore::late`].
    #[inline]
    fn late(&self, op: DtoOp) -> bool {
        self.late_reads && op == DtoOp::RdmaRead
    }
}

/// The contexts of a ring and what its two sides share.
///
/// # Invariants
///
/// `tail` is the consumer's [`Consumer::tail`] as last published, and `wr_done` the work
/// requests of the DTOs before it; both only grow. A context is accessed only as the
/// module's `# Locking` says; `cons` only by the ring's consumer.
pub(super) struct Contexts {
    slots: KVec<SlotCell>,
    tail: AtomicU64,
    wr_done: AtomicU64,
    /// The counters of finished DTOs.
    done: DoneStats,
    cons: UnsafeCell<Consumer>,
}

// SAFETY: The contexts and the consumer's state are accessed by one side at a time, as the
// module's `# Locking` says (type invariant); the rest is atomics. What they hold may go to
// another thread (`Slot` is `Send`).
unsafe impl Sync for Contexts {}

impl Contexts {
    /// Number of contexts.
    #[inline]
    fn len(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The context after `i`, wrapping around.
    #[inline]
    fn next(&self, i: u32) -> u32 {
        if i as usize + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// The context `idx`, to access as the module's `# Locking` says.
    #[inline]
    fn cell(&self, idx: u32) -> Option<*mut Slot> {
        self.slots.get(idx as usize).map(|c| c.0.get())
    }

    /// The consumer's state.
    ///
    /// # Safety
    ///
    /// The caller is the ring's consumer, and holds no other reference to the state.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn cons(&self) -> &mut Consumer {
        // SAFETY: Only the consumer accesses it (type invariant), one call at a time.
        unsafe { &mut *self.cons.get() }
    }
}

/// What the post calls post to: the CM id holding the QP, and the QP itself, cached.
///
/// # Invariants
///
/// `qp`, if set, is the QP of `owner`'s CM id, read while the id was live; it is cleared
/// whenever `owner` changes. `binding` is the binding of the QP's device.
pub(super) struct Target {
    /// The CM id whose QP the ring posts to; `None` before the QP exists and from the
    /// disconnect on (posts get `-ENOTCONN`).
    owner: Option<Arc<dyn QpOwner>>,
    qp: Cell<Option<QpPtr>>,
    /// The device's binding (`None` for a ring of no device: then nothing is cached).
    binding: Option<Arc<BoundDevice>>,
}

/// A cached QP pointer ([`Target`]).
#[derive(Clone, Copy)]
struct QpPtr(NonNull<Qp>);

// SAFETY: Work requests may be posted to a QP from any thread; the pointer is dereferenced
// only as `Target::qp` says.
unsafe impl Send for QpPtr {}

impl Target {
    /// The QP to post to, live while the RCU read-side critical section `g` lasts and the
    /// caller holds the ring's lock, or `None` (no QP, or its device's removal began). The
    /// first call after a change of owner asks the CM id ([`QpOwner::qp`], a virtual call
    /// and the id's own liveness check); later ones use the cached QP and only check that the
    /// device is still bound (one load). Any context; does not sleep.
    #[inline]
    pub(super) fn qp<'a>(&'a self, g: &'a rcu::Guard) -> Option<&'a Qp> {
        if let Some(p) = self.qp.get() {
            // Set only with a binding (below).
            let b = self.binding.as_deref()?;
            if !b.live(g) {
                return None;
            }
            // SAFETY: `p` is the QP of `owner`'s CM id (type invariant), which `owner` keeps
            // from being dropped, so its owner's `Drop` cannot destroy the QP; the only other
            // destruction is the revocation of the device's binding, which sets `gone` first
            // and then waits for every RCU read-side critical section (`BoundDevice::revoke`):
            // `g` saw it live. The lock the caller holds keeps `owner` and `qp` as they are.
            return Some(unsafe { p.0.as_ref() });
        }
        let qp = self.owner.as_deref()?.qp(g)?;
        if self.binding.is_some() {
            // INVARIANT: The QP of `owner`'s id, read while it was live.
            self.qp.set(Some(QpPtr(NonNull::from(qp))));
        }
        Some(qp)
    }
}

/// The posters' state of a ring, under its lock.
pub(super) struct RingState {
    /// What the post calls post to.
    pub(super) target: Target,
    /// Send queue: SENDs and RDMA operations may be posted (CONNECTED); RMR binds and RECVs
    /// only need an owner.
    pub(super) connected: bool,
    /// Bytes of inline data the QP takes per work request (0: none).
    pub(super) max_inline: u32,
    /// Receive queue: RECVs posted before the QP exists (`super::early`).
    pub(super) early: super::early::Early,
    pub(super) core: RingCore,
}

/// The posters' side of the ring's contexts and counters (the part of [`RingState`] the post
/// calls change while they borrow the QP from its target).
///
/// # Invariants
///
/// With `tail` the consumer's published tail: `tail <= head`, `head - tail <= ctx.len()`; the
/// outstanding DTOs have the sequence numbers `tail..head` and sit in the contexts before
/// `head_idx`, in order, wrapping around. `wr_taken - ctx.wr_done` is the `nwr` of the
/// outstanding DTOs, at most `depth`.
pub(super) struct RingCore {
    ctx: Arc<Contexts>,
    pub(super) head: u64,
    pub(super) head_idx: u32,
    /// Work requests the DTOs took, ever (net of those given back unposted).
    wr_taken: u64,
    /// The queue's depth in work requests.
    depth: u32,
    /// Send-queue DTOs posted unsignalled in a row (see the module documentation).
    pub(super) unsignalled_run: u32,
    /// The post calls' counters (those of finished DTOs are [`Contexts::done`]).
    pub(super) stats: DtoStats,
    /// iWARP: the sink MRs of RDMA READs not in use (`super::iwarp`); empty otherwise.
    pub(super) read_mrs: KVec<FrMr>,
    /// iWARP: an RDMA READ may complete after work requests posted behind it, so a later
    /// completion does not finish it (see [`RingCore::late`], `super::iwarp`).
    pub(super) late_reads: bool,
}

impl RingCore {
    /// Number of contexts.
    pub(super) fn len(&self) -> u32 {
        self.ctx.len()
    }

    pub(super) fn next(&self, i: u32) -> u32 {
        self.ctx.next(i)
    }

    /// The consumer's tail as last published: DTOs before it finished, and their contexts may
    /// be reused.
    #[inline]
    fn tail(&self) -> u64 {
        // ORDERING: Acquire, paired with the consumer's release store (`RingShared::finish`):
        // its accesses to the contexts of the DTOs before `tail` happen before the caller's.
        self.ctx.tail.load(Ordering::Acquire)
    }

    /// DTOs taken and not finished (as far as the posters know).
    pub(super) fn outstanding(&self) -> u64 {
        self.head - self.tail()
    }

    /// Queue slots free for work requests.
    pub(super) fn wr_free(&self) -> u32 {
        // ORDERING: Acquire, as `tail` (the consumer stores it before the tail).
        let done = self.ctx.wr_done.load(Ordering::Acquire);
        let used = self.wr_taken.wrapping_sub(done);
        u64::from(self.depth).saturating_sub(used) as u32
    }

    /// Takes the next context (in posting order) and `nwr` queue slots for a DTO.
    ///
    /// # Errors
    ///
    /// `-ENOSPC` if every context or too few queue slots are in use.
    pub(super) fn take(&mut self, nwr: u32) -> Result<u32> {
        if self.outstanding() >= u64::from(self.ctx.len()) || self.wr_free() < nwr {
            return Err(ENOSPC);
        }
        let idx = self.head_idx;
        let seq = self.head;
        let p = self.ctx.cell(idx).ok_or(ENOSPC)?;
        // SAFETY: The context's previous DTO finished (`tail` passed it, with acquire), so it
        // is the posters', and the caller holds their lock.
        let s = unsafe { &mut *p };
        s.seq = seq;
        s.nwr = nwr;
        s.status = DtoStatus::Success;
        s.suppress = false;
        s.silent = false;
        s.imm = 0;
        s.recv_flags = RecvFlags::empty();
        s.inv_rkey = 0;
        s.arrived = false;
        self.head += 1;
        self.head_idx = self.ctx.next(idx);
        self.wr_taken += u64::from(nwr);
        Ok(idx)
    }

    /// Gives back the context taken last, whose work requests were never posted.
    pub(super) fn untake_last(&mut self) {
        if self.outstanding() == 0 {
            return;
        }
        let idx = if self.head_idx == 0 {
            self.ctx.len() - 1
        } else {
            self.head_idx - 1
        };
        self.head -= 1;
        self.head_idx = idx;
        if let Some(p) = self.ctx.cell(idx) {
            // SAFETY: Taken and never posted: the posters', under their lock.
            let s = unsafe { &mut *p };
            self.wr_taken -= u64::from(s.nwr);
            s.nwr = 0;
            // Under the ring's lock, but nothing leaves with these uses (`Lmr::put`): the
            // post call's caller holds its segments' LMRs, and none was freed meanwhile (a free
            // is refused while they are busy; device removal frees them only after this EP's
            // teardown, which takes this lock).
            s.lmrs = OneOrMore::Empty;
            s.rmr = None;
            if let Some(m) = s.read_mr.take() {
                // Not registered (nothing was posted); the pool has room for it.
                let _ = self.read_mrs.push_within_capacity(m);
            }
        }
    }

    /// The context `idx` of a DTO the caller took in this post call and has not posted yet
    /// (or a RECV that waits for the QP, `super::early`): the posters' own. A context whose
    /// work requests were posted is the consumer's (the module's `# Locking`); a post call
    /// that stopped inside one marks it with [`RingCore::orphan`].
    pub(super) fn slot(&mut self, idx: u32) -> Option<&mut Slot> {
        let p = self.ctx.cell(idx)?;
        // SAFETY: As the posters' rule above says, the context is theirs, and the caller holds
        // their lock (it has `&mut` of their state).
        Some(unsafe { &mut *p })
    }

    /// Marks the DTO in context `idx` of which only the first work requests were posted
    /// (`unposted` were not): its posted ones are unsignalled, it finishes silently with a
    /// later completion or the teardown, and its unposted queue slots come back now. Returns
    /// its operation.
    pub(super) fn orphan(&mut self, idx: u32, unposted: u32) -> Option<DtoOp> {
        let p = self.ctx.cell(idx)?;
        // SAFETY: Part of the DTO was posted, so the consumer may record the failure of one of
        // its work requests meanwhile (`Slot::fail`, `status` only). It finishes the DTO only
        // after a completion of a DTO posted later (under this lock, after this) or the
        // teardown's reaping, which takes this lock first. Raw field accesses only.
        let op = unsafe {
            (*p).nwr -= unposted;
            (*p).silent = true;
            (*p).op
        };
        self.wr_taken -= u64::from(unposted);
        Some(op)
    }

    /// Whether a DTO of `op` on this ring finishes only with its own completion, not with a
    /// later one: an RDMA READ on iWARP, which completes when its response has arrived,
    /// while siw completes the RDMA WRITEs, SENDs and REG_MRs posted behind it as soon as it
    /// sent or processed them (`super::iwarp`). Such a DTO is always posted signalled.
    #[inline]
    pub(super) fn late(&self, op: DtoOp) -> bool {
        self.late_reads && op == DtoOp::RdmaRead
    }

    /// Whether the send-queue DTO just taken, of `nwr` work requests, is posted unsignalled,
    /// and counts the run of them. Unsignalled only if its success reports nothing
    /// (`suppress`), only for one work request (a DTO split into several has one signalled
    /// work request already, its last), only until half the contexts in a row went
    /// unsignalled, and only while more than a quarter of the contexts and of the queue's
    /// slots are left with it taken. Otherwise it is signalled (still silent on success), and
    /// its completion finishes every DTO before it.
    #[inline]
    pub(super) fn unsignalled(&mut self, suppress: bool, nwr: u32) -> bool {
        let n = self.ctx.slots.len();
        let unsignalled = suppress
            && nwr == 1
            && (self.unsignalled_run as usize + 1) < n / 2
            && self.outstanding() < (n - n / 4) as u64
            && self.wr_free() > self.depth / 4;
        self.unsignalled_run = if unsignalled {
            self.unsignalled_run + 1
        } else {
            0
        };
        unsignalled
    }
}

mod sink;
pub(crate) use sink::{DtoHandler, DtoSink};

/// What the completion path of a ring needs: the owner of its pool of contexts.
#[pin_data]
pub(crate) struct RingShared {
    /// The posters' lock.
    #[pin]
    pub(super) q: SpinLockIrq<RingState>,
    /// The contexts, which the consumer reaches without the lock.
    ctx: Arc<Contexts>,
    sink: DtoSink,
    /// The EP's PZ, for the receive queue: a SEND with invalidate ends the grant it names.
    pz: Option<Arc<Pz>>,
    ep_handle: AtomicUsize,
    /// The EP's number (debugfs directory, trace events, log lines).
    pub(super) ep_id: u32,
    /// The number of the EP's latest QP (0 before its first), for the trace events.
    qpn: AtomicU32,
}

impl RingShared {
    /// The value events of this ring name their EP by. Any context.
    pub(crate) fn ep_handle(&self) -> usize {
        self.ep_handle.load(Ordering::Relaxed)
    }

    /// The number of the QP the ring posts to, or posted to last (0: none yet), as `rdma res
    /// show qp` shows it (`lqpn`). Any context.
    pub(crate) fn qpn(&self) -> u32 {
        self.qpn.load(Ordering::Relaxed)
    }

    /// The C handle of the EVD this ring's completions go to (0 for the Rust API's, and for
    /// a handler). Any context.
    pub(crate) fn evd_handle(&self) -> usize {
        match &self.sink {
            DtoSink::Evd(evd) => evd.handle(),
            DtoSink::Handler(_) => 0,
        }
    }
}

/// The contexts of one queue of an EP: a pool of the RDMA layer whose owner is the ring's
/// state, so that the layer keeps them until the QP is drained.
pub(crate) struct DtoRing {
    pub(crate) pool: Arc<WrPool<RingShared>>,
    /// SGEs per work request of the queue.
    pub(super) max_sge: u32,
    /// The QP's transport has no immediate data (iWARP): RDMA WRITEs and SENDs with
    /// immediate get `-EOPNOTSUPP`. Decided once, when the EP is made ([`DtoRing::for_iwarp`]).
    pub(super) no_write_imm: bool,
    /// The device runs no atomic operations: `FetchAdd` and `CmpSwap` are refused
    /// (`EOPNOTSUPP`).
    pub(super) no_atomics: bool,
    /// iWARP: sink MRs the ring keeps for its RDMA READs (`super::iwarp`); 0 otherwise, and
    /// the post path never looks further.
    pub(super) read_mrs: u32,
}

impl DtoRing {
    /// `n` contexts for a queue of `depth` work requests of `max_sge` SGEs each, of EP number
    /// `ep_id`, whose completions go to `sink`. `pz` is given for a receive queue: completions
    /// of SENDs with invalidate end the grant of that PZ they name. `binding`: the binding of
    /// the EP's device, so that the post calls may cache the QP (`None`: they ask the CM id
    /// each time). Process context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn new(
        n: u32,
        depth: u32,
        max_sge: u32,
        ep_id: u32,
        sink: DtoSink,
        pz: Option<Arc<Pz>>,
        binding: Option<Arc<BoundDevice>>,
    ) -> Result<DtoRing> {
        let n = n.clamp(1, u32::from(u16::MAX));
        let mut slots = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(SlotCell(UnsafeCell::new(Slot::empty())), GFP_KERNEL)?;
        }
        let ctx = Arc::new(
            Contexts {
                slots,
                tail: AtomicU64::new(1),
                wr_done: AtomicU64::new(0),
                done: DoneStats::new(),
                cons: UnsafeCell::new(Consumer {
                    tail: 1,
                    tail_idx: 0,
                    done_seq: 0,
                    late_reads: false,
                }),
            },
            GFP_KERNEL,
        )?;
        let pool = WrPool::new(
            try_pin_init!(RingShared {
                q <- new_spinlock_irq!(
                    RingState {
                        target: Target {
                            owner: None,
                            qp: Cell::new(None),
                            binding,
                        },
                        connected: false,
                        max_inline: 0,
                        early: super::early::Early::new(),
                        core: RingCore {
                            ctx: ctx.clone(),
                            head: 1,
                            head_idx: 0,
                            wr_taken: 0,
                            depth,
                            unsignalled_run: 0,
                            stats: DtoStats::default(),
                            read_mrs: KVec::new(),
                            late_reads: false,
                        },
                    },
                    "rkdapl_dto_ring"
                ),
                ctx,
                sink,
                pz,
                ep_handle: AtomicUsize::new(0),
                ep_id,
                qpn: AtomicU32::new(0),
            }),
            n,
        )?;
        Ok(DtoRing {
            pool,
            max_sge: max_sge.max(1),
            no_write_imm: false,
            no_atomics: false,
            read_mrs: 0,
        })
    }

    /// Sets what the ring posts to: `owner` (the CM id holding the QP; `None`: posts get
    /// `-ENOTCONN`), whether SENDs and RDMA operations may be posted (`connected`), the
    /// QP's inline capacity and whether RECVs may wait for a QP that does not exist yet
    /// (`early`: the EP is UNCONNECTED or connecting, see `super::early`). Returns the
    /// previous owner, for the caller to drop outside its own locks. Any context.
    pub(crate) fn set_target(
        &self,
        owner: Option<Arc<dyn QpOwner>>,
        connected: bool,
        max_inline: u32,
        early: bool,
    ) -> Option<Arc<dyn QpOwner>> {
        let mut q = self.shared().q.lock();
        q.connected = connected && owner.is_some();
        q.max_inline = max_inline;
        q.early.allowed = early;
        // INVARIANT: The cached QP goes with its owner (the next post asks the new one).
        q.target.qp.set(None);
        core::mem::replace(&mut q.target.owner, owner)
    }

    /// Finishes the DTOs still outstanding once the QP is drained: unsignalled ones that
    /// succeeded (a failed or flushed work request would have completed) and those a post call
    /// stopped inside of. Process context.
    ///
    /// # Safety
    ///
    /// No completion of the ring runs or can come (the caller is its consumer): its QP was
    /// drained (`ib_drain_qp()` returns after the CQ's completion work handled every completion
    /// of it), or every DTO it posted to a QP has finished; and no other call finishes DTOs
    /// of the ring meanwhile.
    pub(crate) unsafe fn reap_all(&self) {
        // ORDERING: The posters' lock: every poster's writes to the contexts before `head`
        // happen before the reads of the finish.
        let head = self.shared().q.lock().core.head;
        // SAFETY: As the caller guarantees; DTOs before `head` were taken (those not posted
        // finish here too).
        unsafe { self.shared().finish(head - 1, true) };
    }

    /// DTOs posted and not yet finished that will report an event: every outstanding one but
    /// those posted with `RKDAPL_COMPLETION_SUPPRESS` (which report only if they fail, and
    /// which [`DtoRing::reap_all`] finishes once the QP is drained) and those a failed post call
    /// left behind. What `rkdapl_ep_reset` waits for. Any context.
    pub(crate) fn in_flight(&self) -> u32 {
        let q = self.shared().q.lock();
        let c = &q.core;
        let n = c.len();
        let out = c.outstanding().min(u64::from(n)) as u32;
        // (`checked_rem`, not `%`: see `DtoRing::post_early`.)
        let mut idx = (c.head_idx + n - out).checked_rem(n).unwrap_or(0);
        let mut k = 0;
        for _ in 0..out {
            if let Some(p) = c.ctx.cell(idx) {
                // SAFETY: Outstanding: the consumer may be finishing it, but writes neither
                // `suppress` nor `silent` (raw reads, no reference to the context); posters
                // write them under the lock this holds.
                if unsafe { !(*p).suppress && !(*p).silent } {
                    k += 1;
                }
            }
            idx = c.next(idx);
        }
        k
    }

    /// Records the number of the QP the ring posts to from now on ([`RingShared::qpn`]).
    pub(crate) fn set_qpn(&self, qpn: u32) {
        self.shared().qpn.store(qpn, Ordering::Relaxed);
    }

    /// As [`RingShared::qpn`].
    pub(crate) fn qpn(&self) -> u32 {
        self.shared().qpn()
    }

    /// Records the C handle reported in this ring's events.
    pub(crate) fn set_ep_handle(&self, h: usize) {
        self.shared().ep_handle.store(h, Ordering::Relaxed);
    }

    /// A copy of the ring's counters. Any context.
    pub(crate) fn stats(&self) -> DtoStats {
        let mut s = self.shared().q.lock().core.stats;
        self.shared().ctx.done.add_to(&mut s);
        s
    }

    /// Sets whether an RDMA READ finishes only with its own completion (iWARP,
    /// [`RingCore::late`]), on both sides of the ring.
    ///
    /// # Safety
    ///
    /// No completion of the ring runs or can come meanwhile (as [`DtoRing::reap_all`]).
    pub(super) unsafe fn set_late_reads(&self, late: bool) {
        self.shared().q.lock().core.late_reads = late;
        // SAFETY: As the caller guarantees, the caller is the consumer.
        unsafe { self.shared().ctx.cons().late_reads = late };
    }

    /// The ring's state and completion handling.
    pub(super) fn shared(&self) -> &RingShared {
        self.pool.owner()
    }
}

mod done;

#[cfg(CONFIG_KUNIT = "y")]
impl RingCore {
    /// The consumer's `(tail, tail_idx)`, for the tests.
    ///
    /// # Safety
    ///
    /// No consumer of the ring runs meanwhile.
    pub(super) unsafe fn consumer_view(&self) -> (u64, u32) {
        // SAFETY: As the caller guarantees; read only.
        let c = unsafe { &*self.ctx.cons.get() };
        (c.tail, c.tail_idx)
    }
}

#[cfg(CONFIG_KUNIT = "y")]
mod kunit;
