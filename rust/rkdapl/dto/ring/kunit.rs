// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_ring`: a DTO ring's accounting and its reaping of unsignalled DTOs,
//! without a device. A ring is made as an EP makes it ([`DtoRing::new`]), with an EVD of no
//! IA; a "post" takes and fills a context as the post calls do ([`RingCore::take`], then the
//! fields `arm` sets), and completions are those a CQ would deliver: the one of sequence
//! number `s` finishes every DTO up to `s` ([`RingShared::finish_through`]), the drained QP
//! finishes the rest ([`DtoRing::reap_all`]). What needs a `struct ib_wc` (recording a failed
//! work request, a RECV's length and immediate data) is left to the guest suites; here a
//! context's status and RECV fields are set by hand. Runs when rkdapl.ko is loaded on a kernel
//! with KUnit enabled.

use super::{DtoRing, DtoSink, RingCore};
use crate::evd::{AsyncSlot, Evd};
use kernel::{
    prelude::{kunit_tests, *},
    sync::Arc,
};

mod signal;
mod sink;
mod split;

/// The C handle the ring's events report as their EP.
const EP: usize = 0x5eed;

/// A ring of `n` contexts over a queue of `depth` work requests, and the EVD its completions
/// go to.
fn ring(n: u32, depth: u32) -> Result<(DtoRing, Arc<Evd>)> {
    let evd = Evd::unlisted(64, AsyncSlot::new()?)?;
    let r = DtoRing::new(n, depth, 4, 0, DtoSink::Evd(evd.clone()), None, None)?;
    r.set_ep_handle(EP);
    Ok((r, evd))
}

/// Runs `f` on the ring's state under its lock, then checks the state's invariants:
/// `tail <= head <= tail + n`, the outstanding DTOs in their slots from `tail_idx` on with
/// the sequence numbers `tail..head`, `head_idx` after the last of them, and `wr_free` plus
/// their work requests making the queue's `depth`. (The helpers return errors instead of
/// asserting: only a case's own body has KUnit's `assert!`.)
///
/// # Errors
///
/// `-EUCLEAN` if an invariant does not hold (said in the kernel log).
fn with<T>(r: &DtoRing, depth: u32, f: impl FnOnce(&mut RingCore) -> T) -> Result<T> {
    let mut q = r.shared().q.lock();
    let c = &mut q.core;
    let v = f(c);
    let n = u64::from(c.len());
    // SAFETY: The test is the ring's only consumer, and runs none meanwhile.
    let (tail, tail_idx) = unsafe { c.consumer_view() };
    let (head, head_idx, wr_free) = (c.head, c.head_idx, c.wr_free());
    let mut ok = tail <= head && head - tail <= n && c.outstanding() == head - tail;
    let mut idx = tail_idx;
    let mut nwr = u64::from(wr_free);
    for seq in tail..head.min(tail + n) {
        match c.slot(idx) {
            Some(s) => {
                ok &= s.seq == seq;
                nwr += u64::from(s.nwr);
            }
            None => ok = false,
        }
        idx = c.next(idx);
    }
    if ok && idx == head_idx && nwr == u64::from(depth) {
        return Ok(v);
    }
    pr_err!(
        "rkdapl_ring: ring state broken: head {head} tail {tail} head_idx {head_idx} \
         tail_idx {tail_idx} wr_free {wr_free}, {nwr} work requests of {depth}\n"
    );
    Err(EUCLEAN)
}

/// `(head, tail, head_idx, tail_idx, wr_free)`.
fn state(r: &DtoRing) -> (u64, u64, u32, u32, u32) {
    let q = r.shared().q.lock();
    let c = &q.core;
    // SAFETY: The test is the ring's only consumer, and runs none meanwhile.
    let (tail, tail_idx) = unsafe { c.consumer_view() };
    (c.head, tail, c.head_idx, tail_idx, c.wr_free())
}

/// A completion of DTO `seq` (posted), as the CQ's completion work delivers it: finishes the
/// DTOs through it.
fn fin(r: &DtoRing, seq: u64) {
    // SAFETY: The test is the ring's only consumer (no QP, no CQ).
    unsafe { r.shared().finish_through(seq) }
}

/// The teardown's reaping once the QP is drained.
fn reap(r: &DtoRing) {
    // SAFETY: No QP: no completion can come; the test is the ring's only consumer.
    unsafe { r.reap_all() }
}

/// The completion of the last work request of the DTO in context `idx` arrived: its sequence
/// number.
fn arrive(r: &DtoRing, idx: u32) -> Option<u64> {
    // SAFETY: The test is the ring's only consumer; its DTOs are posted and not finished.
    unsafe { r.shared().arrived(idx) }
}

/// iWARP's rule for RDMA READs on or off ([`RingCore::late`]).
fn late(r: &DtoRing, on: bool) {
    // SAFETY: No QP: no completion can come.
    unsafe { r.set_late_reads(on) }
}

#[kunit_tests(rkdapl_ring)]
mod tests {
    use super::super::{DtoRing, KeepAlive, Slot};
    use super::{arrive, fin, late, reap, ring, state, with, EP};
    use crate::{
        dto::{DtoOp, DtoStats, DtoStatus, RecvFlag, RecvFlags},
        evd::{Evd, Event, EventType, UpcallFn, UpcallPolicy},
    };
    use core::{
        fmt,
        sync::atomic::{AtomicU32, AtomicU64, Ordering},
    };
    use kernel::{prelude::*, str::CString, sync::Arc};

    /// Posts a DTO of `nwr` work requests as the post calls do: takes the next context and
    /// arms it with `op`, `cookie` and `cookie * 10` bytes. Its context and sequence number.
    fn post(r: &DtoRing, depth: u32, op: DtoOp, cookie: u64, nwr: u32) -> Result<(u32, u64)> {
        with(r, depth, |c| -> Result<(u32, u64)> {
            let idx = c.take(nwr)?;
            let s = c.slot(idx).ok_or(EINVAL)?;
            s.op = op;
            s.cookie = cookie;
            s.len = cookie * 10;
            let seq = s.seq;
            c.stats.posted(op);
            Ok((idx, seq))
        })?
    }

    /// A SEND of one work request.
    fn send(r: &DtoRing, depth: u32, cookie: u64) -> Result<(u32, u64)> {
        post(r, depth, DtoOp::Send, cookie, 1)
    }

    /// The cookies of the events queued on `e`, in order, up to 16.
    ///
    /// # Errors
    ///
    /// `-EPROTO` for an event other than a DTO completion of the ring's EP.
    fn cookies(e: &Evd) -> Result<KVec<u64>> {
        let mut v = KVec::new();
        while v.len() < 16 {
            let Ok(ev) = e.dequeue() else { break };
            let ev = CView::of(&ev);
            if ev.kind != EventType::DtoCompletion || ev.ep != EP {
                return Err(EPROTO);
            }
            v.push(ev.cookie, GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// The fields of a DTO event as the C ABI reports them (`abi::evd` tests the conversion
    /// itself).
    struct CView {
        kind: EventType,
        ep: usize,
        cookie: u64,
        status: i32,
        op: u32,
        transferred_length: u64,
        immediate: u32,
        flags: RecvFlags,
        invalidated_rkey: u32,
    }

    impl CView {
        fn of(ev: &Event) -> CView {
            let Event::Dto(d) = ev else {
                panic!("not a DTO event");
            };
            let mut flags = RecvFlags::empty();
            if d.immediate.is_some() {
                flags |= RecvFlag::WithImm;
            }
            if d.by_rdma_write_imm {
                flags |= RecvFlag::RdmaWriteImm;
            }
            if d.invalidated_rkey.is_some() {
                flags |= RecvFlag::Invalidated;
            }
            CView {
                kind: ev.kind(),
                ep: d.ep,
                cookie: d.cookie,
                status: d.status as i32,
                op: d.op as u32,
                transferred_length: d.len,
                immediate: d.immediate.unwrap_or(0),
                flags,
                invalidated_rkey: d.invalidated_rkey.unwrap_or(0),
            }
        }
    }

    /// An object a DTO keeps alive; counts its drop.
    struct Token(Arc<AtomicU32>);

    impl Drop for Token {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn token(dropped: &Arc<AtomicU32>) -> Result<Arc<dyn KeepAlive>> {
        let t: Arc<dyn KeepAlive> = Arc::new(Token(dropped.clone()), GFP_KERNEL)?;
        Ok(t)
    }

    /// The totals line of the ring's counters, as debugfs shows it.
    fn totals(r: &DtoRing) -> Result<CString> {
        struct Totals(DtoStats);
        impl kernel::fmt::Display for Totals {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.show_totals(f)
            }
        }
        CString::try_from_fmt(fmt!("{}", Totals(r.stats())))
    }

    #[test]
    fn contexts_go_out_in_order_and_wrap() -> Result {
        let (r, e) = ring(4, 64)?;
        assert_eq!(state(&r), (1, 1, 0, 0, 64));
        for (i, cookie) in (1..=4).enumerate() {
            assert_eq!(send(&r, 64, cookie)?, (i as u32, cookie));
        }
        // Every context is taken: refused, nothing changed.
        assert_eq!(send(&r, 64, 5).err(), Some(ENOSPC));
        assert_eq!(state(&r), (5, 1, 0, 0, 60));
        // Two finish; the next DTOs take contexts 0 and 1 again, with later numbers.
        fin(&r, 2);
        assert_eq!(state(&r), (5, 3, 0, 2, 62));
        assert_eq!(send(&r, 64, 5)?, (0, 5));
        assert_eq!(send(&r, 64, 6)?, (1, 6));
        assert_eq!(send(&r, 64, 7).err(), Some(ENOSPC));
        // The tail wraps as well; every event comes once, in posting order.
        reap(&r);
        assert_eq!(state(&r), (7, 7, 2, 2, 64));
        assert_eq!(cookies(&e)?[..], [1, 2, 3, 4, 5, 6]);
        Ok(())
    }

    #[test]
    fn queue_slots_bound_what_is_outstanding() -> Result {
        // Eight contexts, ten work requests: the queue runs out first.
        let (r, e) = ring(8, 10)?;
        let (_, a) = post(&r, 10, DtoOp::RdmaWrite, 1, 4)?;
        post(&r, 10, DtoOp::RdmaRead, 2, 4)?;
        assert_eq!(post(&r, 10, DtoOp::RdmaWrite, 3, 3).err(), Some(ENOSPC));
        assert_eq!(state(&r), (3, 1, 2, 0, 2));
        post(&r, 10, DtoOp::RdmaWrite, 4, 2)?;
        assert_eq!(send(&r, 10, 5).err(), Some(ENOSPC));
        assert_eq!(state(&r).4, 0);
        // The first DTO's completion gives its four back.
        fin(&r, a);
        assert_eq!(state(&r).4, 4);
        post(&r, 10, DtoOp::RdmaWrite, 6, 4)?;
        reap(&r);
        assert_eq!(state(&r), (5, 5, 4, 4, 10));
        assert_eq!(cookies(&e)?[..], [1, 2, 4, 6]);
        Ok(())
    }

    #[test]
    fn a_taken_context_starts_clean() -> Result {
        let (r, e) = ring(2, 8)?;
        let (idx, seq) = send(&r, 8, 1)?;
        with(&r, 8, |c| {
            if let Some(s) = c.slot(idx) {
                s.status = DtoStatus::RemoteAccess;
                s.suppress = true;
                s.silent = true;
                s.imm = 7;
                s.recv_flags = RecvFlag::WithImm | RecvFlag::RdmaWriteImm;
                s.inv_rkey = 9;
            }
        })?;
        fin(&r, seq);
        // Silent: no event for it.
        assert_eq!(cookies(&e)?.len(), 0);
        send(&r, 8, 2)?;
        let (idx, _) = send(&r, 8, 3)?;
        assert_eq!(idx, 0);
        let fields = with(&r, 8, |c| {
            c.slot(idx).map(|s| {
                (
                    s.seq,
                    s.nwr,
                    s.status,
                    s.suppress,
                    s.silent,
                    s.imm,
                    s.recv_flags,
                    s.inv_rkey,
                )
            })
        })?;
        assert_eq!(
            fields,
            Some((
                3,
                1,
                DtoStatus::Success,
                false,
                false,
                0,
                RecvFlags::empty(),
                0
            ))
        );
        reap(&r);
        assert_eq!(cookies(&e)?[..], [2, 3]);
        Ok(())
    }

    #[test]
    fn untake_last_gives_back_the_last_context() -> Result {
        let dropped = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
        let (r, e) = ring(3, 8)?;
        // Nothing taken: nothing to give back.
        with(&r, 8, |c| c.untake_last())?;
        assert_eq!(state(&r), (1, 1, 0, 0, 8));
        post(&r, 8, DtoOp::RdmaWrite, 1, 2)?;
        let (idx, _) = post(&r, 8, DtoOp::RmrBind, 2, 3)?;
        // Allocated before the ring's spinlock is taken (`with` holds it).
        let mut t = Some(token(&dropped)?);
        with(&r, 8, |c| {
            if let Some(s) = c.slot(idx) {
                s.rmr = t.take();
            }
        })?;
        assert_eq!(state(&r), (3, 1, 2, 0, 3));
        // Its queue slots come back, and what it kept alive goes.
        with(&r, 8, |c| c.untake_last())?;
        assert_eq!(state(&r), (2, 1, 1, 0, 6));
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        // The next DTO gets the same context and number.
        assert_eq!(send(&r, 8, 3)?, (1, 2));
        // Giving back the context in the last slot moves the head back across the wrap.
        assert_eq!(send(&r, 8, 4)?, (2, 3));
        assert_eq!(state(&r).2, 0);
        with(&r, 8, |c| c.untake_last())?;
        assert_eq!(state(&r), (3, 1, 2, 0, 5));
        assert_eq!(send(&r, 8, 5)?, (2, 3));
        // An untaken DTO never reports.
        reap(&r);
        assert_eq!(cookies(&e)?[..], [1, 3, 5]);
        with(&r, 8, |c| c.untake_last())?;
        assert_eq!(state(&r), (4, 4, 0, 0, 8));
        Ok(())
    }

    #[test]
    fn a_completion_finishes_every_dto_before_it() -> Result {
        let (r, e) = ring(8, 64)?;
        let mut seqs = [0u64; 5];
        for (i, s) in seqs.iter_mut().enumerate() {
            *s = send(&r, 64, i as u64 + 1)?.1;
        }
        assert_eq!(r.stats().in_flight(), 5);
        // The third's completion: the first two completed before it, unsignalled.
        fin(&r, seqs[2]);
        assert_eq!(cookies(&e)?[..], [1, 2, 3]);
        assert_eq!(r.stats().in_flight(), 2);
        // A number already finished finishes nothing more.
        fin(&r, seqs[1]);
        fin(&r, seqs[2]);
        assert_eq!(cookies(&e)?.len(), 0);
        assert_eq!(state(&r), (6, 4, 5, 3, 62));
        fin(&r, seqs[4]);
        assert_eq!(cookies(&e)?[..], [4, 5]);
        // Nothing outstanding: the teardown's reaping finds nothing.
        reap(&r);
        assert_eq!(cookies(&e)?.len(), 0);
        assert_eq!(r.stats().in_flight(), 0);
        Ok(())
    }

    #[test]
    fn events_say_what_finished() -> Result {
        let (r, e) = ring(8, 64)?;
        let set = |idx: u32, f: &dyn Fn(&mut Slot)| {
            with(&r, 64, |c| {
                if let Some(s) = c.slot(idx) {
                    f(s)
                }
            })
        };
        // A suppressed DTO that succeeded: no event.
        let (a, _) = send(&r, 64, 1)?;
        set(a, &|s| s.suppress = true)?;
        // A suppressed DTO that failed reports its error, with no bytes.
        let (b, _) = send(&r, 64, 2)?;
        set(b, &|s| {
            s.suppress = true;
            s.status = DtoStatus::Flushed;
        })?;
        // A DTO a failed post call stopped inside of: silent, whatever its status.
        let (c, _) = send(&r, 64, 3)?;
        set(c, &|s| {
            s.silent = true;
            s.status = DtoStatus::Generic;
        })?;
        // RMR binds report as such.
        post(&r, 64, DtoOp::RmrBind, 4, 1)?;
        // A RECV carries its immediate data, flags and invalidated rkey.
        let (d, _) = post(&r, 64, DtoOp::Recv, 5, 1)?;
        set(d, &|s| {
            s.imm = 0xabcd;
            s.recv_flags = RecvFlag::WithImm | RecvFlag::Invalidated;
            s.inv_rkey = 0x1234;
        })?;
        let (f, _) = post(&r, 64, DtoOp::RdmaWrite, 6, 3)?;
        set(f, &|s| s.status = DtoStatus::RemoteAccess)?;
        reap(&r);
        let mut got = KVec::new();
        while let Ok(ev) = e.dequeue() {
            // As a C consumer sees it.
            let ev = CView::of(&ev);
            assert_eq!(ev.ep, EP);
            let t = (ev.kind, ev.cookie, ev.status, ev.op, ev.transferred_length);
            got.push(
                (t, (ev.immediate, ev.flags, ev.invalidated_rkey)),
                GFP_KERNEL,
            )?;
        }
        let (dto, bind) = (EventType::DtoCompletion, EventType::RmrBindCompletion);
        let (send_op, bind_op, recv_op, write_op) = (1, 5, 2, 3);
        let (none, imm_inv) = (
            RecvFlags::empty(),
            RecvFlag::WithImm | RecvFlag::Invalidated,
        );
        assert_eq!(
            got[..],
            [
                (
                    (dto, 2, DtoStatus::Flushed as i32, send_op, 0),
                    (0, none, 0)
                ),
                ((bind, 4, 0, bind_op, 40), (0, none, 0)),
                ((dto, 5, 0, recv_op, 50), (0xabcd, imm_inv, 0x1234)),
                (
                    (dto, 6, DtoStatus::RemoteAccess as i32, write_op, 0),
                    (0, none, 0)
                ),
            ]
        );
        // Counted whether reported or not: two errors (the silent one's too), one flushed.
        assert_eq!(
            totals(&r)?.to_bytes(),
            b"in_flight 0 errors 2 flushed 1 refused 0\n"
        );
        Ok(())
    }

    #[test]
    fn what_a_dto_keeps_alive_goes_when_it_finishes() -> Result {
        let dropped = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
        let (r, _e) = ring(4, 16)?;
        let mut seqs = [0u64; 3];
        for (i, seq) in seqs.iter_mut().enumerate() {
            let (idx, s) = post(&r, 16, DtoOp::RmrBind, i as u64, 1)?;
            *seq = s;
            let mut t = Some(token(&dropped)?);
            with(&r, 16, |c| {
                if let Some(s) = c.slot(idx) {
                    s.rmr = t.take();
                }
            })?;
        }
        assert_eq!(dropped.load(Ordering::Relaxed), 0);
        fin(&r, seqs[1]);
        assert_eq!(dropped.load(Ordering::Relaxed), 2);
        reap(&r);
        assert_eq!(dropped.load(Ordering::Relaxed), 3);
        Ok(())
    }

    /// Posts a suppressed SEND as the post calls do: takes a context, arms it and decides
    /// whether it goes unsignalled. Its context, sequence number and that decision.
    fn post_suppressed(r: &DtoRing, depth: u32, cookie: u64) -> Result<(u32, u64, bool)> {
        with(r, depth, |c| -> Result<(u32, u64, bool)> {
            let idx = c.take(1)?;
            let s = c.slot(idx).ok_or(EINVAL)?;
            s.op = DtoOp::Send;
            s.cookie = cookie;
            s.len = 1;
            s.suppress = true;
            let seq = s.seq;
            c.stats.posted(DtoOp::Send);
            Ok((idx, seq, c.unsignalled(true, 1)))
        })?
    }

    #[test]
    fn unsignalled_dtos_are_reaped_by_the_next_completion() -> Result {
        // A stream of suppressed SENDs on eight contexts: each signalled one's completion
        // finishes the unsignalled ones before it, silently; the ring never fills.
        let (r, e) = ring(8, 8)?;
        let mut signalled = 0;
        for cookie in 1..=20 {
            let (idx, seq, unsignalled) = post_suppressed(&r, 8, cookie)?;
            assert_eq!(idx, ((cookie - 1) % 8) as u32);
            // At most three unsignalled DTOs and the signalled one are outstanding.
            let (head, tail, ..) = state(&r);
            assert!(head - tail <= 4);
            if !unsignalled {
                signalled += 1;
                fin(&r, seq);
                let (head, tail, ..) = state(&r);
                assert_eq!(head, tail);
            }
        }
        assert_eq!(signalled, 5);
        assert_eq!(cookies(&e)?.len(), 0);
        assert_eq!(r.stats().in_flight(), 0);
        // Unsignalled DTOs with no completion after them: the teardown's reaping (the QP
        // drained) finishes them, silently too.
        for cookie in 21..=23 {
            assert!(post_suppressed(&r, 8, cookie)?.2);
        }
        assert_eq!(r.stats().in_flight(), 3);
        reap(&r);
        assert_eq!(state(&r), (24, 24, 7, 7, 8));
        assert_eq!(cookies(&e)?.len(), 0);
        assert_eq!(r.stats().in_flight(), 0);
        Ok(())
    }

    #[test]
    fn an_iwarp_read_finishes_with_its_own_completion() -> Result {
        // siw completes an RDMA WRITE posted behind a READ when it is sent, before the READ's
        // response has arrived: the WRITE's completion must not finish the READ.
        let (r, e) = ring(8, 64)?;
        late(&r, true);
        let (read, _) = post(&r, 64, DtoOp::RdmaRead, 1, 1)?;
        let (write, _) = post(&r, 64, DtoOp::RdmaWrite, 2, 1)?;
        send(&r, 64, 3)?;
        let seq = arrive(&r, write).ok_or(EINVAL)?;
        fin(&r, seq);
        assert_eq!(cookies(&e)?.len(), 0);
        assert_eq!(r.stats().in_flight(), 3);
        // The READ's own completion finishes it, then the WRITE, whose completion came first.
        let seq = arrive(&r, read).ok_or(EINVAL)?;
        fin(&r, seq);
        assert_eq!(cookies(&e)?[..], [1, 2]);
        assert_eq!(r.stats().in_flight(), 1);
        // Without iWARP's rule (RoCE), a later completion finishes an earlier READ.
        late(&r, false);
        post(&r, 64, DtoOp::RdmaRead, 4, 1)?;
        let (write, _) = post(&r, 64, DtoOp::RdmaWrite, 5, 1)?;
        let seq = arrive(&r, write).ok_or(EINVAL)?;
        fin(&r, seq);
        assert_eq!(cookies(&e)?[..], [3, 4, 5]);
        // The teardown's reaping finishes a READ still waiting, too.
        late(&r, true);
        post(&r, 64, DtoOp::RdmaRead, 6, 1)?;
        reap(&r);
        assert_eq!(cookies(&e)?[..], [6]);
        assert_eq!(r.stats().in_flight(), 0);
        Ok(())
    }

    /// An upcall that records, by cookie (below 64), which events it got and which of them
    /// had the "more events follow" hint.
    #[derive(Default)]
    struct Hints {
        seen: AtomicU64,
        more: AtomicU64,
    }

    impl UpcallFn for Hints {
        fn call(&self, ev: &Event, more: bool) {
            if let Event::Dto(d) = ev {
                let bit = 1u64 << (d.cookie & 63);
                self.seen.fetch_or(bit, Ordering::Relaxed);
                if more {
                    self.more.fetch_or(bit, Ordering::Relaxed);
                }
            }
        }
    }

    impl Hints {
        /// `(seen, more)` since the last take, as bit masks of cookies.
        fn take(&self) -> (u64, u64) {
            (
                self.seen.swap(0, Ordering::Relaxed),
                self.more.swap(0, Ordering::Relaxed),
            )
        }
    }

    /// The bit mask of `cookies`.
    fn bits(cookies: &[u64]) -> u64 {
        cookies.iter().fold(0u64, |m, c| m | 1u64 << c)
    }

    #[test]
    fn an_upcall_hears_more_events_follow_on_all_but_the_last() -> Result {
        let (r, e) = ring(16, 64)?;
        let h = Arc::new(Hints::default(), GFP_KERNEL)?;
        let f: Arc<dyn UpcallFn> = h.clone();
        e.modify_upcall(UpcallPolicy::SingleInstance, Some(f))?;
        let suppress = |idx: u32| {
            with(&r, 64, |c| {
                if let Some(s) = c.slot(idx) {
                    s.suppress = true;
                }
            })
        };
        // One completion finishes six DTOs; 3 and 6 succeeded suppressed (no event). Each
        // event but the last one reported has the hint, also across the silent 3.
        for cookie in 1..=6 {
            let (idx, _) = send(&r, 64, cookie)?;
            if cookie == 3 || cookie == 6 {
                suppress(idx)?;
            }
        }
        fin(&r, 6);
        assert_eq!(h.take(), (bits(&[1, 2, 4, 5]), bits(&[1, 2, 4])));
        // A completion finishes only what it covers: no hint for a DTO after it.
        send(&r, 64, 7)?;
        send(&r, 64, 8)?;
        fin(&r, 7);
        assert_eq!(h.take(), (bits(&[7]), 0));
        fin(&r, 8);
        assert_eq!(h.take(), (bits(&[8]), 0));
        // iWARP: a SEND, then a READ still waiting for its own completion, then a SEND whose
        // completion arrived: the first SEND's event has no hint (the READ stops the finish).
        late(&r, true);
        send(&r, 64, 9)?;
        let (read, _) = post(&r, 64, DtoOp::RdmaRead, 10, 1)?;
        let (last, _) = send(&r, 64, 11)?;
        let seq = arrive(&r, last).ok_or(EINVAL)?;
        fin(&r, seq);
        assert_eq!(h.take(), (bits(&[9]), 0));
        // The READ's completion finishes it and the SEND behind it: the READ's has the hint.
        let seq = arrive(&r, read).ok_or(EINVAL)?;
        fin(&r, seq);
        assert_eq!(h.take(), (bits(&[10, 11]), bits(&[10])));
        // The teardown's reaping of what is left: the same rule.
        for cookie in 12..=14 {
            send(&r, 64, cookie)?;
        }
        reap(&r);
        assert_eq!(h.take(), (bits(&[12, 13, 14]), bits(&[12, 13])));
        // Queued events never have it.
        e.modify_upcall(UpcallPolicy::Disable, None)?;
        send(&r, 64, 15)?;
        send(&r, 64, 16)?;
        fin(&r, 16);
        let mut more = 0;
        while let Ok(ev) = e.dequeue() {
            more += u32::from(matches!(ev, Event::Dto(d) if d.more));
        }
        assert_eq!(more, 0);
        Ok(())
    }

    /// The statuses of the events queued on `e` (DTO completions of RECVs of the ring's EP),
    /// with their cookies, in order, up to 16.
    ///
    /// # Errors
    ///
    /// `-EPROTO` for another event.
    fn recv_events(e: &Evd) -> Result<KVec<(u64, i32)>> {
        let mut v = KVec::new();
        while v.len() < 16 {
            let Ok(ev) = e.dequeue() else { break };
            let ev = CView::of(&ev);
            if ev.kind != EventType::DtoCompletion || ev.ep != EP || ev.op != DtoOp::Recv as u32 {
                return Err(EPROTO);
            }
            v.push((ev.cookie, ev.status), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// RECVs posted before the QP exists (`dto/early.rs`) take their contexts in order and
    /// wait, reporting nothing; from the disconnect on (no longer `early`) a RECV is refused
    /// with `-ENOTCONN`; `flush_early` completes the waiting ones FLUSHED, in order. Behind a
    /// RECV given to a QP, they wait for its drain (`reap_all`) instead.
    #[test]
    fn recvs_before_the_qp_wait_then_flush_in_order() -> Result {
        let (flushed, ok) = (DtoStatus::Flushed as i32, DtoStatus::Success as i32);
        let (r, e) = ring(8, 8)?;
        r.post_recv(&[], 1)?;
        r.post_recv(&[], 2)?;
        assert_eq!(recv_events(&e)?.len(), 0);
        assert_eq!(state(&r), (3, 1, 2, 0, 6));
        drop(r.set_target(None, false, 0, false));
        assert!(matches!(r.post_recv(&[], 3), Err(err) if err == ENOTCONN));
        r.flush_early();
        assert_eq!(&recv_events(&e)?[..], &[(1, flushed), (2, flushed)]);
        assert_eq!(state(&r), (3, 3, 2, 2, 8));
        r.flush_early();
        assert_eq!(recv_events(&e)?.len(), 0);
        // One RECV on a QP, then one waiting for the next QP.
        post(&r, 8, DtoOp::Recv, 10, 1)?;
        drop(r.set_target(None, true, 0, true));
        r.post_recv(&[], 11)?;
        r.flush_early();
        assert_eq!(recv_events(&e)?.len(), 0);
        reap(&r);
        assert_eq!(&recv_events(&e)?[..], &[(10, ok), (11, flushed)]);
        assert_eq!(state(&r), (5, 5, 4, 4, 8));
        assert_eq!(r.stats().in_flight(), 0);
        Ok(())
    }
}
