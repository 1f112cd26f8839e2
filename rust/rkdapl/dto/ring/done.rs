// SPDX-License-Identifier: GPL-2.0

//! The completion side of a DTO ring (the consumer of the ring's `# Locking`): finishing DTOs
//! in posting order and reporting their events, without the posters' lock.

use super::{Consumer, DtoSink, RingShared, Slot};
use crate::dto::{DtoOp, DtoStatus, OneOrMore, RecvFlag, RecvFlags};
use crate::rdma::{
    cq::{Wc, WcOpcode},
    wr::WrCompletion,
};
use crate::{
    evd::{DtoEvent, Event},
    trace,
};
use core::sync::atomic::Ordering;

/// What the event of a finished DTO reports, taken out of its context; the event itself is
/// made only when it is posted, after the context is given back, right in the EVD's queue
/// entry ([`crate::evd::Evd::post_with`]), so that it is not moved on the way (`make profile`: about 60
/// instructions per DTO).
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

impl RingShared {
    /// Finishes, in order, every outstanding DTO up to sequence number `last` (or up to the
    /// highest whose completion arrived, if higher), stopping before an iWARP RDMA READ still
    /// waiting for its own completion ([`RingCore::late`]): a completion of `last` arrived, so
    /// the ones before it are done too (RC completes a queue in order;
    /// those without a completion of their own succeeded unsignalled, or were orphaned by a
    /// failed post call). Each reports its event unless silent. Takes no lock.
    ///
    /// # Safety
    ///
    /// The caller is the ring's consumer (the module's `# Locking`), and `last` the sequence
    /// number of a posted DTO.
    // Only the KUnit suites call it (the completion side finishes through `finish`).
    #[cfg_attr(not(CONFIG_KUNIT = "y"), expect(dead_code))]
    pub(super) unsafe fn finish_through(&self, last: u64) {
        // SAFETY: As the caller guarantees.
        unsafe { self.finish(last, false) }
    }

    /// Records that the completion of the last work request of the DTO in context `idx`
    /// arrived; its sequence number, through which DTOs may finish
    /// ([`RingShared::finish_through`]).
    ///
    /// # Safety
    ///
    /// The caller is the ring's consumer, and the DTO in context `idx` was posted and has
    /// not finished.
    pub(super) unsafe fn arrived(&self, idx: u32) -> Option<u64> {
        let p = self.ctx.cell(idx)?;
        // SAFETY: As the caller guarantees; raw accesses (see `Slot::fail`).
        let seq = unsafe {
            (*p).arrived = true;
            (*p).seq
        };
        // SAFETY: The consumer's.
        let c = unsafe { self.ctx.cons() };
        c.done_seq = c.done_seq.max(seq);
        Some(seq)
    }

    /// Whether finishing the DTOs through sequence number `last` (all of them: `reap`) goes
    /// on, after the one just taken out, to report another event: a later DTO through `last`
    /// reports one, and nothing before it waits ([`RingCore::late`]). The upcall's "more
    /// events follow" hint, which must never be set without an event following (a consumer
    /// that coalesces its work until an event without it would wait forever). Walks the
    /// silent DTOs up to that one; asked only for a DTO that reports, so each DTO is looked
    /// at at most twice per finish.
    ///
    /// # Safety
    ///
    /// The caller is the ring's consumer, finishing through `last` (a posted DTO).
    unsafe fn reports_next(&self, c: &Consumer, last: u64, reap: bool) -> bool {
        let suppressed = self.sink.takes_suppressed();
        let (mut seq, mut idx) = (c.tail, c.tail_idx);
        while seq <= last {
            let Some(p) = self.ctx.cell(idx) else {
                return false;
            };
            // SAFETY: Posted and not finished: the consumer's; raw reads (see `Slot::fail`).
            let (op, arrived, silent, suppress, status) = unsafe {
                (
                    (*p).op,
                    (*p).arrived,
                    (*p).silent,
                    (*p).suppress,
                    (*p).status,
                )
            };
            if !reap && c.late(op) && !arrived && !silent {
                return false;
            }
            if !(silent || (!suppressed && suppress && status == DtoStatus::Success)) {
                return true;
            }
            seq += 1;
            idx = self.ctx.next(idx);
        }
        false
    }

    /// [`RingShared::finish_through`]; `reap`: the teardown's, which finishes a DTO even if it
    /// waits for its own completion.
    ///
    /// # Safety
    ///
    /// As [`RingShared::finish_through`]; for `reap`, `last` is below the head the caller read
    /// under the posters' lock.
    pub(super) unsafe fn finish(&self, last: u64, reap: bool) {
        let x = &*self.ctx;
        let takes_suppressed = self.sink.takes_suppressed();
        loop {
            // SAFETY: The caller is the consumer; `c` is not used across the event's delivery
            // below (which may post, but never finishes DTOs of this ring).
            let c = unsafe { x.cons() };
            // Through later DTOs whose completions arrived while an earlier one (an iWARP RDMA
            // READ) still waited for its own.
            let last = last.max(c.done_seq);
            if c.tail > last {
                return;
            }
            let idx = c.tail_idx;
            let Some(p) = x.cell(idx) else {
                return;
            };
            // SAFETY: DTO `c.tail` was posted (it is not after `last`) and has not finished: its
            // context is the consumer's until the tail passes it. Raw accesses only: a poster
            // may read `suppress` and `silent` meanwhile (`DtoRing::in_flight`).
            let (report, op, status, cookie, len, nwr) = unsafe {
                // An iWARP RDMA READ whose own completion has not arrived is not done, even if
                // a later work request's has (`RingCore::late`); it and what follows it wait.
                if !reap && c.late((*p).op) && !(*p).arrived && !(*p).silent {
                    return;
                }
                let nwr = core::mem::replace(&mut (*p).nwr, 0);
                // A DTO a post call stopped inside of (`RingCore::orphan`) failed.
                let status = if (*p).silent {
                    DtoStatus::Generic
                } else {
                    (*p).status
                };
                // What the context holds goes here, in place (no move of the regions out of
                // it), before the context may be reused and before the event: the pooled MR
                // first (`ib_mr_pool_put`: the QP's `mr_lock`, any context), then the LMRs'
                // uses, the grant's reference and the lent pages' mapping (unmapped, and
                // their owner let go, before the event says so). No lock is held: the last
                // use of an LMR or RMR the consumer freed meanwhile unmaps or deregisters,
                // which may sleep.
                (*p).pool_mr = None;
                (*p).lmrs = OneOrMore::Empty;
                (*p).rmr = None;
                (*p).lent = None;
                // iWARP: the READ's sink MR goes back to the pool (under the posters' lock:
                // only iWARP READs have one) before its context may be reused, as ever; one
                // not reusable is freed here, after the lock (deregistering may sleep).
                // (Looked at first, so that nothing is moved when there is none.)
                if (*p).read_mr.is_some() {
                    if let Some(m) = (*p).read_mr.take() {
                        let ok = status == DtoStatus::Success;
                        let unused = crate::dto::iwarp::give_back(&mut self.q.lock().core, m, ok);
                        drop(unused);
                    }
                }
                let len = if status == DtoStatus::Success {
                    (*p).len
                } else {
                    0
                };
                let (op, cookie) = ((*p).op, (*p).cookie);
                let suppressed = (*p).suppress && status == DtoStatus::Success;
                // A handler takes back the cookie of a suppressed DTO too; an EVD reports
                // nothing for it.
                let silent = (*p).silent || (suppressed && !takes_suppressed);
                let report = (!silent).then(|| Report {
                    suppressed,
                    op,
                    status,
                    cookie,
                    len,
                    imm: (*p).imm,
                    flags: (*p).recv_flags,
                    inv_rkey: (*p).inv_rkey,
                });
                (report, op, status, cookie, len, nwr)
            };
            c.tail += 1;
            c.tail_idx = x.next(idx);
            // Whether the next DTO may finish too. A completion arriving meanwhile finishes
            // what it made finishable itself (`done`, the teardown's reaping).
            let more = c.tail <= last;
            // Only a DTO that reports gives the hint: a silent one does not look ahead, so a
            // run of silent DTOs is walked once, by the report before it, not once by each.
            // SAFETY: The consumer, finishing through `last`.
            let hint = more && report.is_some() && unsafe { self.reports_next(c, last, reap) };
            let wr_done = x.wr_done.load(Ordering::Relaxed) + u64::from(nwr);
            x.wr_done.store(wr_done, Ordering::Release);
            // ORDERING: Release, paired with the posters' acquire load (`RingCore::tail`): every
            // access above to the DTO's context happens before a poster reuses it.
            x.tail.store(c.tail, Ordering::Release);
            x.done.completed(op, status, len);
            trace::completion(
                self.ep_id,
                || self.qpn(),
                op as u32,
                cookie,
                status as i32,
                len,
            );
            if let Some(r) = report {
                self.deliver(r, hint);
            }
            if !more {
                return;
            }
        }
    }

    /// Reports the event of a finished DTO (with the hint `hint`), once its context is given
    /// back. No lock held.
    fn deliver(&self, r: Report, hint: bool) {
        let ep = self.ep_handle.load(Ordering::Relaxed);
        match &self.sink {
            // Made in its entry of the EVD's queue (or for an upcall), not here.
            DtoSink::Evd(evd) => evd.post_with(hint, || r.event(ep)),
            DtoSink::Handler(h) => {
                // Calls that must not be made from the completion context (freeing the EP,
                // waiting on an EVD) are refused or deferred meanwhile.
                let mark = crate::evd::in_upcall::Mark::enter();
                h.done(&r.dto_event(ep), r.suppressed, hint);
                drop(mark);
            }
        }
    }
}

impl WrCompletion for RingShared {
    /// A work request of the DTO in slot `idx` completed: its last (`last`), which finishes it
    /// and every DTO before it, or an earlier one, which completes only in error and records
    /// it. Process context (the CQs poll on a workqueue); takes no lock (the module's
    /// `# Locking`).
    fn done(&self, idx: u32, last: bool, wc: &Wc) {
        let Some(p) = self.ctx.cell(idx) else {
            return;
        };
        let show_cookie = matches!(self.sink, DtoSink::Evd(_));
        if !last {
            if !wc.is_ok() {
                // SAFETY: The ring's consumer: the CQ's completion work runs one completion at a
                // time. The work request was posted and its DTO's last one has not completed
                // (it completes after this one), so the DTO has not finished.
                unsafe { Slot::fail(p, wc, self.ep_id, show_cookie) };
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
        // SAFETY: The ring's consumer (above); the DTO's last work request completed, so it
        // was posted and has not finished (it finishes with this completion or after it).
        // Raw field accesses (see `Slot::fail`).
        unsafe {
            if !wc.is_ok() {
                Slot::fail(p, wc, self.ep_id, show_cookie);
            } else if (*p).op == DtoOp::Recv {
                // For an RDMA WRITE with immediate, the length the peer wrote to its grant.
                (*p).len = u64::from(wc.byte_len());
                (*p).imm = wc.imm_data().unwrap_or(0);
                let mut flags = RecvFlags::empty();
                if wc.imm_data().is_some() {
                    flags |= RecvFlag::WithImm;
                }
                if wc.opcode() == WcOpcode::RecvRdmaWithImm {
                    flags |= RecvFlag::RdmaWriteImm;
                }
                if let Some(rkey) = inv_rkey {
                    flags |= RecvFlag::Invalidated;
                    (*p).inv_rkey = rkey;
                }
                (*p).recv_flags = flags;
            }
            if let Some(seq) = self.arrived(idx) {
                self.finish(seq, false);
            }
        }
    }
}
