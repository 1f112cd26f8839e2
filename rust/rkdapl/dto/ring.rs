// SPDX-License-Identifier: GPL-2.0

//! The DTO contexts of one queue of an EP, handed out and taken back in posting order, and
//! their completions.
//!
//! # Locking
//!
//! One IRQ-safe spinlock per ring ([`RingShared::q`]) guards the ring's state: the QP it posts
//! to, its sequence numbers, each context's DTO and the counters. The post calls hold it from
//! the first check to the return of `ib_post_send()`, so posting order is sequence order; the
//! completion handler holds it to record a completion and to take a finished DTO out. Events
//! are delivered and references dropped after it is released (an upcall may post again).

use super::{DtoOp, DtoStats, DtoStatus, OneOrMore, RecvFlag, RecvFlags};
use crate::rdma::{
    cm::{CmHandler, CmId},
    cq::{Wc, WcOpcode},
    mr::{FrMr, PoolMr},
    qp::Qp,
    wr::{WrCompletion, WrPool},
};
use crate::{
    evd::{DtoEvent, Evd, Event},
    lmr::Lmr,
    pz::Pz,
    trace,
};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{
        lock::{spinlock::SpinLockIrqBackend, Guard},
        rcu, Arc, SpinLockIrq,
    },
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
    /// The LMRs its segments use, busy ([`Lmr::get`]) until it finishes.
    pub(super) lmrs: OneOrMore<Arc<Lmr>>,
    /// RMR bind/unbind: the RMR, kept alive (it owns the MR the work request registers).
    pub(super) rmr: Option<Arc<dyn KeepAlive>>,
    /// iWARP RDMA READ: the sink MR it registered (`super::iwarp`), back to the pool when it
    /// finishes.
    pub(super) read_mr: Option<FrMr>,
    /// Pooled RMR unbind: the MR (`super::post::PooledWr::Inv`), back to its pool when it
    /// finishes.
    pub(super) pool_mr: Option<PoolMr>,
    /// The completion of its last work request arrived ([`RingCore::arrived`]).
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
            read_mr: None,
            pool_mr: None,
            arrived: false,
        }
    }

    /// Records a failed work request of the DTO: the first error is the one reported. The log
    /// line shows the cookie if `show_cookie` (not a typed EP's: it is a kernel pointer).
    fn fail(&mut self, wc: &Wc, ep_id: u32, show_cookie: bool) {
        let status = DtoStatus::from_wc(wc);
        if self.status == DtoStatus::Success {
            self.status = status;
        }
        if status != DtoStatus::Flushed {
            trace::log_dto_error(
                ep_id,
                self.op as u32,
                if show_cookie { self.cookie } else { 0 },
                status as i32,
                wc.status_raw(),
            );
        }
    }
}

/// The state of a ring, under its lock.
///
/// # Invariants
///
/// `tail <= head`, `head - tail <= slots.len()`; the outstanding DTOs have the sequence
/// numbers `tail..head` and sit in the slots from `tail_idx` on, in order, wrapping around.
/// `wr_free` plus the `nwr` of the outstanding DTOs is the queue's depth.
pub(super) struct RingState {
    /// The CM id whose QP the ring posts to; `None` before the QP exists and from the
    /// disconnect on (posts get `-ENOTCONN`).
    pub(super) owner: Option<Arc<dyn QpOwner>>,
    /// Send queue: SENDs and RDMA operations may be posted (CONNECTED); RMR binds and RECVs
    /// only need `owner`.
    pub(super) connected: bool,
    /// Bytes of inline data the QP takes per work request (0: none).
    pub(super) max_inline: u32,
    /// Receive queue: RECVs posted before the QP exists (`super::early`).
    pub(super) early: super::early::Early,
    pub(super) core: RingCore,
}

/// The ring's contexts and counters (the part of [`RingState`] the post calls change while
/// they borrow the QP from `owner`).
pub(super) struct RingCore {
    pub(super) slots: KVec<Slot>,
    pub(super) head: u64,
    pub(super) tail: u64,
    pub(super) head_idx: u32,
    pub(super) tail_idx: u32,
    pub(super) wr_free: u32,
    /// Send-queue DTOs posted unsignalled in a row (see the module documentation).
    pub(super) unsignalled_run: u32,
    pub(super) stats: DtoStats,
    /// iWARP: the sink MRs of RDMA READs not in use (`super::iwarp`); empty otherwise.
    pub(super) read_mrs: KVec<FrMr>,
    /// iWARP: an RDMA READ may complete after work requests posted behind it, so a later
    /// completion does not finish it (see [`RingCore::late`], `super::iwarp`).
    pub(super) late_reads: bool,
    /// The highest sequence number whose last work request's completion arrived.
    pub(super) done_seq: u64,
}

impl RingCore {
    pub(super) fn next(&self, i: u32) -> u32 {
        if i as usize + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// Takes the next context (in posting order) and `nwr` queue slots for a DTO.
    ///
    /// # Errors
    ///
    /// `-ENOSPC` if every context or too few queue slots are in use.
    pub(super) fn take(&mut self, nwr: u32) -> Result<u32> {
        if self.head - self.tail >= self.slots.len() as u64 || self.wr_free < nwr {
            return Err(ENOSPC);
        }
        let idx = self.head_idx;
        let seq = self.head;
        let s = self.slots.get_mut(idx as usize).ok_or(ENOSPC)?;
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
        self.head_idx = self.next(idx);
        self.wr_free -= nwr;
        Ok(idx)
    }

    /// Gives back the context taken last, whose work requests were never posted.
    pub(super) fn untake_last(&mut self) {
        if self.head == self.tail {
            return;
        }
        let idx = if self.head_idx == 0 {
            self.slots.len() as u32 - 1
        } else {
            self.head_idx - 1
        };
        self.head -= 1;
        self.head_idx = idx;
        if let Some(s) = self.slots.get_mut(idx as usize) {
            self.wr_free += s.nwr;
            s.nwr = 0;
            for l in s.lmrs.as_slice() {
                // Under the ring's lock; the post call's caller holds the LMRs.
                l.put_held();
            }
            // Not the last references: the post call's caller holds its segments' LMRs.
            s.lmrs = OneOrMore::Empty;
            s.rmr = None;
            if let Some(m) = s.read_mr.take() {
                // Not registered (nothing was posted); the pool has room for it.
                let _ = self.read_mrs.push_within_capacity(m);
            }
        }
    }

    pub(super) fn slot(&mut self, idx: u32) -> Option<&mut Slot> {
        self.slots.get_mut(idx as usize)
    }

    /// Whether a DTO of `op` on this ring finishes only with its own completion, not with a
    /// later one: an RDMA READ on iWARP, which completes when its response has arrived,
    /// while siw completes the RDMA WRITEs, SENDs and REG_MRs posted behind it as soon as it
    /// sent or processed them (`super::iwarp`). Such a DTO is always posted signalled.
    #[inline]
    pub(super) fn late(&self, op: DtoOp) -> bool {
        self.late_reads && op == DtoOp::RdmaRead
    }

    /// Whether finishing the DTOs through sequence number `last` (all of them: `reap`) goes
    /// on, after the one just taken out, to report another event: a later DTO through `last`
    /// reports one, and nothing before it waits ([`RingCore::late`]). The upcall's "more
    /// events follow" hint, which must never be set without an event following (a consumer
    /// that coalesces its work until an event without it would wait forever). Walks the
    /// silent DTOs up to that one, so each DTO is looked at at most twice per finish.
    /// `suppressed`: a successful DTO posted with completion suppress reports too (a handler
    /// sink takes back its context).
    pub(super) fn reports_next(&self, last: u64, reap: bool, suppressed: bool) -> bool {
        let (mut seq, mut idx) = (self.tail, self.tail_idx);
        while seq != self.head && seq <= last {
            let Some(s) = self.slots.get(idx as usize) else {
                return false;
            };
            if !reap && self.late(s.op) && !s.arrived && !s.silent {
                return false;
            }
            if !(s.silent || (!suppressed && s.suppress && s.status == DtoStatus::Success)) {
                return true;
            }
            seq += 1;
            idx = self.next(idx);
        }
        false
    }

    /// Records that the completion of the last work request of the DTO in slot `idx`
    /// arrived; its sequence number, through which DTOs may finish
    /// ([`RingShared::finish_through`]).
    pub(super) fn arrived(&mut self, idx: u32) -> Option<u64> {
        let s = self.slots.get_mut(idx as usize)?;
        s.arrived = true;
        let seq = s.seq;
        self.done_seq = self.done_seq.max(seq);
        Some(seq)
    }

    /// Whether the send-queue DTO just taken, of `nwr` work requests, is posted unsignalled,
    /// and counts the run of them. Unsignalled only if its success reports nothing
    /// (`suppress`), only for one work request (a DTO split into several has one signalled
    /// work request already, its last), and only until half the contexts in a row went
    /// unsignalled: the next is signalled (still silent on success), and its completion
    /// finishes them all.
    #[inline]
    pub(super) fn unsignalled(&mut self, suppress: bool, nwr: u32) -> bool {
        let unsignalled =
            suppress && nwr == 1 && (self.unsignalled_run as usize + 1) < self.slots.len() / 2;
        self.unsignalled_run = if unsignalled {
            self.unsignalled_run + 1
        } else {
            0
        };
        unsignalled
    }
}

/// A consumer's handler of finished DTOs, called instead of posting their events to an EVD
/// (the Rust API's typed EPs, `crate::api::TypedEp`).
pub(crate) trait DtoHandler: Send + Sync {
    /// The DTO `ev` finished. `suppressed`: it succeeded and was posted with
    /// `RKDAPL_COMPLETION_SUPPRESS`, so it reports no event (the handler only takes back
    /// what its cookie stands for). `more`: this call goes on to finish the next DTO of the
    /// same queue (a consumer may coalesce its work until a call without it).
    ///
    /// Called once for every DTO of the ring that finishes, but never for one a failed post
    /// call left behind (its caller got the error). Called from the context that finishes the
    /// DTO, with no rkdapl lock held: the CQ's completion work (process context, the CQs poll
    /// on a workqueue), or the EP's teardown, reset or device removal (process context) for
    /// flushed and reaped DTOs. One call at a time per ring, in posting order.
    fn done(&self, ev: &DtoEvent, suppressed: bool, more: bool);
}

/// Where a ring reports its finished DTOs.
#[derive(Clone)]
pub(crate) enum DtoSink {
    /// As events on the EP's DTO EVD (queued, or handed to its upcall).
    Evd(Arc<Evd>),
    /// To a consumer's handler directly: no event queue, no EVD lock.
    Handler(Arc<dyn DtoHandler>),
}

impl DtoSink {
    /// Whether a successful DTO posted with completion suppress is reported to this sink: a
    /// handler takes back its context; an EVD reports nothing for it.
    fn takes_suppressed(&self) -> bool {
        matches!(self, DtoSink::Handler(_))
    }
}

/// What the completion path of a ring needs: the owner of its pool of contexts.
#[pin_data]
pub(crate) struct RingShared {
    #[pin]
    pub(super) q: SpinLockIrq<RingState>,
    sink: DtoSink,
    /// The EP's PZ, for the receive queue: a SEND with invalidate ends the grant it names.
    pz: Option<Arc<Pz>>,
    ep_handle: AtomicUsize,
    /// The EP's number (debugfs directory, trace events, log lines).
    pub(super) ep_id: u32,
}

/// What the event of a finished DTO reports, taken out under the ring's lock; the event itself
/// is made only when it is posted, outside the lock, so that it is not moved on the way (`make profile`: about 60 instructions per DTO).
struct Report {
    /// It succeeded with `RKDAPL_COMPLETION_SUPPRESS` (reported to a handler only).
    suppressed: bool,
    op: DtoOp,
    status: DtoStatus,
    cookie: u64,
    len: u64,
    imm: u32,
    flags: RecvFlags,
    inv_rkey: u32,
}

impl Report {
    /// The event, naming the EP by `ep`.
    #[inline]
    fn event(&self, ep: usize) -> Event {
        Event::Dto(self.dto_event(ep))
    }

    /// The event's DTO part, naming the EP by `ep`.
    #[inline]
    fn dto_event(&self, ep: usize) -> DtoEvent {
        DtoEvent {
            ep,
            cookie: self.cookie,
            status: self.status,
            op: self.op,
            len: self.len,
            immediate: self.flags.contains(RecvFlag::WithImm).then_some(self.imm),
            by_rdma_write_imm: self.flags.contains(RecvFlag::RdmaWriteImm),
            invalidated_rkey: (self.flags.contains(RecvFlag::Invalidated)).then_some(self.inv_rkey),
            more: false,
        }
    }
}

/// A DTO taken out of its ring: what is left to do outside the lock.
struct Finished {
    report: Option<Report>,
    lmrs: OneOrMore<Arc<Lmr>>,
    rmr: Option<Arc<dyn KeepAlive>>,
    /// A sink MR not to reuse (`super::iwarp::give_back`), freed outside the lock.
    stale: Option<FrMr>,
}

impl RingShared {
    /// Finishes, in order, every outstanding DTO up to sequence number `last` (or up to the
    /// highest whose completion arrived, if higher), stopping before an iWARP RDMA READ still
    /// waiting for its own completion ([`RingCore::late`]): a completion of `last` arrived, so
    /// the ones before it are done too (RC completes a queue in order;
    /// those without a completion of their own succeeded unsignalled, or were orphaned by a
    /// failed post call). Each reports its event unless silent. Never with the lock held.
    pub(super) fn finish_through(&self, last: u64) {
        self.finish_locked(self.q.lock(), last);
    }

    /// [`RingShared::finish_through`] from the ring's state `q`, locked by the caller (a
    /// completion that just recorded its arrival): no second lock for the first DTO, and none
    /// after the last (each event is reported with the lock released).
    fn finish_locked<'a>(&'a self, mut q: Guard<'a, RingState, SpinLockIrqBackend>, last: u64) {
        // `u64::MAX`: the teardown's reaping, once the QP is drained, finishes everything.
        let reap = last == u64::MAX;
        loop {
            let (f, more, hint) = {
                let c = &mut q.core;
                // Through later DTOs whose completions arrived while an earlier one (an iWARP
                // RDMA READ) still waited for its own.
                let last = last.max(c.done_seq);
                if c.tail == c.head || c.tail > last {
                    return;
                }
                let idx = c.tail_idx;
                // An iWARP RDMA READ whose own completion has not arrived is not done, even if
                // a later work request's has (`RingCore::late`); it and what follows it wait.
                let waits = |s: &Slot| c.late(s.op) && !s.arrived && !s.silent;
                if !reap && c.slots.get(idx as usize).is_some_and(waits) {
                    return;
                }
                c.tail += 1;
                c.tail_idx = c.next(idx);
                let Some(s) = c.slots.get_mut(idx as usize) else {
                    return;
                };
                let nwr = core::mem::replace(&mut s.nwr, 0);
                let lmrs = core::mem::replace(&mut s.lmrs, OneOrMore::Empty);
                let rmr = s.rmr.take();
                let read_mr = s.read_mr.take();
                // Back to the pool (`ib_mr_pool_put`: the QP's `mr_lock`, inside this one).
                drop(s.pool_mr.take());
                let len = if s.status == DtoStatus::Success {
                    s.len
                } else {
                    0
                };
                let (op, status, cookie) = (s.op, s.status, s.cookie);
                let suppressed = s.suppress && status == DtoStatus::Success;
                // A handler takes back the cookie of a suppressed DTO too; an EVD reports
                // nothing for it.
                let silent = s.silent || (suppressed && !self.sink.takes_suppressed());
                let report = (!silent).then(|| Report {
                    suppressed,
                    op,
                    status,
                    cookie,
                    len,
                    imm: s.imm,
                    flags: s.recv_flags,
                    inv_rkey: s.inv_rkey,
                });
                c.wr_free += nwr;
                let stale = read_mr
                    .and_then(|m| super::iwarp::give_back(c, m, status == DtoStatus::Success));
                c.stats.completed(op, status, len);
                trace::completion(self.ep_id, op as u32, cookie, status as i32, len);
                // Whether the next DTO may finish too. A completion arriving meanwhile
                // finishes what it made finishable itself (`done`, the teardown's reaping).
                let more = c.tail != c.head && c.tail <= last;
                let hint = more && c.reports_next(last, reap, self.sink.takes_suppressed());
                let f = Finished {
                    report,
                    lmrs,
                    rmr,
                    stale,
                };
                (f, more, hint)
            };
            drop(q);
            for l in f.lmrs.as_slice() {
                l.put();
            }
            // The references go outside the lock: the last one of an LMR or RMR the consumer
            // freed meanwhile unmaps or deregisters, which may sleep.
            drop(f.lmrs);
            drop(f.rmr);
            drop(f.stale);
            if let Some(r) = f.report {
                let ep = self.ep_handle.load(Ordering::Relaxed);
                match &self.sink {
                    DtoSink::Evd(evd) => evd.post_ref(&r.event(ep), hint),
                    DtoSink::Handler(h) => {
                        // Calls that must not be made from the completion context (freeing
                        // the EP, waiting on an EVD) are refused or deferred meanwhile.
                        let mark = crate::evd::in_upcall::Mark::enter();
                        h.done(&r.dto_event(ep), r.suppressed, hint);
                        drop(mark);
                    }
                }
            }
            if !more {
                return;
            }
            q = self.q.lock();
        }
    }
}

impl RingShared {
    /// The value events of this ring name their EP by. Any context.
    pub(crate) fn ep_handle(&self) -> usize {
        self.ep_handle.load(Ordering::Relaxed)
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

impl WrCompletion for RingShared {
    /// A work request of the DTO in slot `idx` completed: its last (`last`), which finishes it
    /// and every DTO before it, or an earlier one, which completes only in error and records
    /// it. Process context (the CQs poll on a workqueue).
    fn done(&self, idx: u32, last: bool, wc: &Wc) {
        if !last {
            if !wc.is_ok() {
                let mut q = self.q.lock();
                if let Some(s) = q.core.slot(idx) {
                    s.fail(wc, self.ep_id, matches!(self.sink, DtoSink::Evd(_)));
                }
            }
            // Otherwise cannot happen: these work requests are unsignalled.
            return;
        }
        // The flags of a failed completion are undefined (IB spec 11.4.2.1).
        let inv_rkey = if wc.is_ok() {
            wc.invalidated_rkey()
        } else {
            None
        };
        if let (Some(rkey), Some(pz)) = (inv_rkey, self.pz.as_ref()) {
            // The device invalidated the rkey before completing the RECV; end the grant first,
            // so that a consumer seeing the event finds the RMR unbound. Outside the ring's
            // lock: the RMR's spinlock is taken before it (bind and unbind), never after.
            if let Some(rmr) = pz.take_grant(rkey) {
                rmr.remote_invalidated(rkey);
            }
        }
        let mut q = self.q.lock();
        let c = &mut q.core;
        let Some(s) = c.slot(idx) else {
            return;
        };
        if !wc.is_ok() {
            s.fail(wc, self.ep_id, matches!(self.sink, DtoSink::Evd(_)));
        } else if s.op == DtoOp::Recv {
            // For an RDMA WRITE with immediate, the length the peer wrote to its grant.
            s.len = u64::from(wc.byte_len());
            s.imm = wc.imm_data().unwrap_or(0);
            if wc.imm_data().is_some() {
                s.recv_flags |= RecvFlag::WithImm;
            }
            if wc.opcode() == WcOpcode::RecvRdmaWithImm {
                s.recv_flags |= RecvFlag::RdmaWriteImm;
            }
            if let Some(rkey) = inv_rkey {
                s.recv_flags |= RecvFlag::Invalidated;
                s.inv_rkey = rkey;
            }
        }
        if let Some(seq) = c.arrived(idx) {
            self.finish_locked(q, seq);
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
    /// of SENDs with invalidate end the grant of that PZ they name. Process context.
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
    ) -> Result<DtoRing> {
        let n = n.clamp(1, u32::from(u16::MAX));
        let mut slots = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(Slot::empty(), GFP_KERNEL)?;
        }
        let pool = WrPool::new(
            try_pin_init!(RingShared {
                q <- new_spinlock_irq!(
                    RingState {
                        owner: None,
                        connected: false,
                        max_inline: 0,
                        early: super::early::Early::new(),
                        core: RingCore {
                            slots,
                            head: 1,
                            tail: 1,
                            head_idx: 0,
                            tail_idx: 0,
                            wr_free: depth,
                            unsignalled_run: 0,
                            stats: DtoStats::default(),
                            read_mrs: KVec::new(),
                            late_reads: false,
                            done_seq: 0,
                        },
                    },
                    "rkdapl_dto_ring"
                ),
                sink,
                pz,
                ep_handle: AtomicUsize::new(0),
                ep_id,
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
        core::mem::replace(&mut q.owner, owner)
    }

    /// Finishes the DTOs still outstanding once the QP is drained: unsignalled ones that
    /// succeeded (a failed or flushed work request would have completed) and those a post call
    /// stopped inside of. Process context.
    pub(crate) fn reap_all(&self) {
        self.shared().finish_through(u64::MAX);
    }

    /// DTOs posted and not yet finished that will report an event: every outstanding one but
    /// those posted with `RKDAPL_COMPLETION_SUPPRESS` (which report only if they fail, and
    /// which [`DtoRing::reap_all`] finishes once the QP is drained) and those a failed post call
    /// left behind. What `rkdapl_ep_reset` waits for. Any context.
    pub(crate) fn in_flight(&self) -> u32 {
        let q = self.shared().q.lock();
        let c = &q.core;
        let (mut n, mut idx, mut seq) = (0, c.tail_idx, c.tail);
        while seq < c.head {
            if c.slots
                .get(idx as usize)
                .is_some_and(|s| !s.suppress && !s.silent)
            {
                n += 1;
            }
            seq += 1;
            idx = c.next(idx);
        }
        n
    }

    /// Records the C handle reported in this ring's events.
    pub(crate) fn set_ep_handle(&self, h: usize) {
        self.shared().ep_handle.store(h, Ordering::Relaxed);
    }

    /// A copy of the ring's counters. Any context.
    pub(crate) fn stats(&self) -> DtoStats {
        self.shared().q.lock().core.stats
    }

    /// The ring's state and completion handling.
    pub(super) fn shared(&self) -> &RingShared {
        self.pool.owner()
    }
}

#[cfg(CONFIG_KUNIT = "y")]
mod kunit;
