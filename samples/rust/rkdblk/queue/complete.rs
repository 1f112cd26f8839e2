// SPDX-License-Identifier: GPL-2.0

//! The completion side of a [`Queue`]: its EVD's upcall ([`Queue::on_event`]), the
//! completions a RECV brings, one or several ([`proto::ACCEPT_COALESCE`]), or an in-capsule
//! READ's data, and the SEND completions that end the requests answered before them.

use super::{Answer, Answered, Queue, State, COOKIE_KIND, COOKIE_SEND};
use crate::proto;
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use rkdapl::api::{DtoOp, DtoStatus, Event, EventType};

impl Queue {
    /// The EVD's upcall: completions and connection events. Process context (the CQ's work,
    /// rdma_cm's handler). It does not sleep, as rkdapl's upcalls must not: a failure only
    /// marks the queue failed ([`Queue::mark_failed`]), and the disk's work, which that
    /// schedules, fails it ([`Queue::fail`]: the disconnect and the RMRs' frees sleep).
    /// Dropping a request's LMR when its response arrives unmaps its pages and takes only
    /// spinlocks.
    pub(crate) fn on_event(&self, ev: &Event) {
        match ev.kind() {
            EventType::DtoCompletion | EventType::RmrBindCompletion => {
                if ev.dto_status() != Some(DtoStatus::Success) {
                    self.mark_failed("a DTO failed or was flushed");
                } else if ev.op() == Some(DtoOp::Recv) {
                    self.on_resp(ev);
                } else if ev.cookie() & COOKIE_KIND == COOKIE_SEND {
                    self.on_sent((ev.cookie() & !COOKIE_KIND) as usize);
                }
            }
            EventType::Disconnected | EventType::Broken => self.mark_failed("connection lost"),
            _ => {}
        }
    }

    /// RECV `ev.cookie()` completed: one or more completions (several only if the server
    /// coalesces them, [`proto::ACCEPT_COALESCE`]), or an in-capsule READ's data (a SEND with
    /// immediate data, the READ's cid, which means success). The completions are copied out
    /// of the RECV's buffer, or the data into the request's pages; then the RECV is posted
    /// again, before any request ends (the server sends a completion only into a posted
    /// RECV), and each request answered ends, or that is left to [`Queue::on_sent`] if its
    /// SEND's completion has not arrived yet ([`State::Answered`]).
    fn on_resp(&self, ev: &Event) {
        let i = ev.cookie();
        let off = i * u64::from(self.recv_len);
        let len = ev.transferred_length();
        if let Some(cid) = ev.immediate() {
            // Its SEND went quiet (`Queue::submit`): the request leaves its slot now.
            let Some(Answered::Now(mut a)) = self.answer(cid, 0, Some(len), None, false) else {
                return self
                    .mark_failed("a completion of no command in flight, or without its data");
            };
            // The one copy of an in-capsule READ, before its buffer takes the next RECV.
            let at = off as usize;
            a.result =
                a.rq.copy_in_with(|done, piece| self.resp.read(at + done, piece));
            let reposted = self.repost(i, off);
            self.end(a);
            if !reposted {
                self.mark_failed("RECV not posted again");
            }
            return;
        }
        let mut buf = [0u8; proto::RESP_LEN * proto::COALESCE_MAX];
        let Some(b) = usize::try_from(len).ok().and_then(|n| buf.get_mut(..n)) else {
            return self.mark_failed("malformed completion");
        };
        if self.resp.read(off as usize, b).is_err() {
            return self.mark_failed("malformed completion");
        }
        // Several only in a plain SEND (not one that invalidated a grant).
        let coalesced = self.coalesce && ev.invalidated_rkey().is_none();
        let Some(resps) = proto::resps(b, coalesced) else {
            return self.mark_failed("malformed completion");
        };
        let reposted = self.repost(i, off);
        for (cid, status) in resps {
            match self.answer(cid, status, None, ev.invalidated_rkey(), reposted) {
                Some(Answered::Now(a)) => self.end(a),
                Some(Answered::AfterSend) => {}
                // The requests answered before it have ended, or wait in their slots.
                None => {
                    return self
                        .mark_failed("a completion of no command in flight, or without its data")
                }
            }
        }
        if !reposted {
            self.mark_failed("RECV not posted again");
        }
    }

    /// Posts RECV `i` (at `off` in the buffers) again. If that fails, the queue is failing (a
    /// disconnect refuses posts): it is marked dead, so that no request starts on it, and the
    /// caller ends the requests answered with their answers before it fails the queue, which
    /// sweeps the rest. Returns whether it was posted.
    fn repost(&self, i: u64, off: u64) -> bool {
        let seg = self.resp.segment(off, self.recv_len.into());
        let ok = self.ep.post_recv(&[seg], i).is_ok();
        if !ok {
            self.set_dead("RECV not posted again");
        }
        ok
    }

    /// Ends the request `a` answered, with its answer.
    fn end(&self, a: Answer) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        a.rq.end(a.result);
    }

    /// Takes the request that the completion of `cid` with `status` (0 or a negative errno)
    /// answers out of its slot, and drops its LMR; `data` is the length of an in-capsule
    /// READ's data (a SEND with immediate data), `invalidated` the rkey the completion's SEND
    /// invalidated. `None` if no such command is in flight, or the completion does not end
    /// it whole (a grant not invalidated, an in-capsule READ without all its data).
    ///
    /// With `wait` (its RECV was posted again), a request whose SEND's completion has not
    /// arrived stays in its slot, [`State::Answered`], for [`Queue::on_sent`] to end; in the
    /// same critical section, so that the SEND's completion finds it either in flight or
    /// answered, whichever CQ reports first. Without `wait`, or on a queue that failed (a
    /// failed queue posts nothing more, so its SEND need not be waited for), the caller ends
    /// it ([`Answered::Now`]).
    fn answer(
        &self,
        cid: u32,
        status: i32,
        data: Option<u64>,
        invalidated: Option<u32>,
        wait: bool,
    ) -> Option<Answered> {
        let tag = (cid & 0xffff) as usize;
        let result = if status == 0 {
            Ok(())
        } else {
            Err(Error::from_errno(status))
        };
        let (pages, answered) = {
            let mut slots = self.slots.lock();
            let slot = slots.get_mut(tag)?;
            let State::InFlight {
                rq,
                cid: c,
                rkey,
                inline_read,
                ..
            } = &slot.state
            else {
                return None;
            };
            let whole = *c == cid
                && match data {
                    // Its data, all of it.
                    Some(len) => *inline_read && len == u64::from(rq.bytes()),
                    None if *rkey != 0 => invalidated == Some(*rkey),
                    // An in-capsule READ's plain completion can only be an error.
                    None => !*inline_read || status != 0,
                };
            if !whole {
                return None;
            }
            self.awaiting.fetch_sub(1, Ordering::Relaxed);
            let State::InFlight {
                rq, pages, sent, ..
            } = core::mem::replace(&mut slot.state, State::Idle)
            else {
                return None;
            };
            // Under the lock: `fail` sets `dead` before it takes the lock to sweep the
            // slots, so a request left `Answered` here is one its sweep finds.
            if wait && !sent && !self.dead.load(Ordering::Acquire) {
                slot.state = State::Answered { rq, result };
                (pages, Answered::AfterSend)
            } else {
                (pages, Answered::Now(Answer { rq, result }))
            }
        };
        // The server's invalidation ended the grant (or an in-capsule WRITE's data reached
        // it): the LMR goes now, outside the lock, unmapping the pages (a READ's data is in
        // them), and with it their hold on the request (`RqPages`: a request ended meanwhile
        // by `on_sent` completes once its pages are let go).
        drop(pages);
        Some(answered)
    }

    /// The SEND of the request of `tag` completed: the request ends if its response arrived.
    fn on_sent(&self, tag: usize) {
        let answered = {
            let mut slots = self.slots.lock();
            let Some(slot) = slots.get_mut(tag) else {
                return;
            };
            match &mut slot.state {
                State::InFlight { sent, .. } => {
                    *sent = true;
                    return;
                }
                State::Answered { .. } => core::mem::replace(&mut slot.state, State::Idle),
                // Failed meanwhile (`fail` ended it).
                State::Idle => return,
            }
        };
        if let State::Answered { rq, result } = answered {
            self.completed.fetch_add(1, Ordering::Relaxed);
            rq.end(result);
        }
    }
}
