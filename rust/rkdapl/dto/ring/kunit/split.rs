// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_ring_split`: the two sides of a ring apart (its `# Locking`). Posters
//! take contexts under the ring's lock while a consumer on another CPU finishes DTOs without
//! it, a context coming back to the posters only through the tail the consumer publishes; a
//! post call that stopped inside a DTO orphans it, and it finishes silently.

use kernel::prelude::kunit_tests;

#[kunit_tests(rkdapl_ring_split)]
mod tests {
    use super::super::super::{DtoHandler, DtoRing, DtoSink};
    use super::super::{fin, reap, state, with};
    use crate::{
        dto::{DtoOp, DtoStats, DtoStatus},
        evd::DtoEvent,
    };
    use core::{
        fmt,
        sync::atomic::{AtomicBool, AtomicU64, Ordering},
    };
    use kernel::{
        prelude::*,
        str::CString,
        sync::Arc,
        time::{delay::fsleep, Delta},
        workqueue,
    };

    /// A handler that counts the DTOs reported out of order, or twice, or failed: each
    /// cookie must be the one after the last.
    #[derive(Default)]
    struct InOrder {
        last: AtomicU64,
        bad: AtomicU64,
    }

    impl DtoHandler for InOrder {
        fn done(&self, ev: &DtoEvent, _suppressed: bool, _more: bool) {
            let last = self.last.load(Ordering::Relaxed);
            if ev.cookie != last + 1 || ev.status != DtoStatus::Success {
                self.bad.fetch_add(1, Ordering::Relaxed);
            }
            self.last.store(ev.cookie, Ordering::Relaxed);
        }
    }

    /// Takes a context for a DTO of `nwr` work requests with `cookie`, as a post call does,
    /// without checking the ring's invariants (a consumer may run meanwhile). Its context and
    /// sequence number.
    fn take(r: &DtoRing, cookie: u64, nwr: u32) -> Result<(u32, u64)> {
        let mut q = r.shared().q.lock();
        let c = &mut q.core;
        let idx = c.take(nwr)?;
        let s = c.slot(idx).ok_or(EINVAL)?;
        (s.op, s.cookie, s.len) = (DtoOp::RdmaWrite, cookie, 8);
        let seq = s.seq;
        c.stats.posted(DtoOp::RdmaWrite);
        Ok((idx, seq))
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

    /// DTOs posted in the concurrent case, on a ring of 8 contexts and 16 work requests.
    const N: u64 = 3000;

    #[test]
    fn a_consumer_without_the_lock_finishes_what_posters_take() -> Result {
        let h = Arc::new(InOrder::default(), GFP_KERNEL)?;
        let r = DtoRing::new(8, 16, 4, 0, DtoSink::Handler(h.clone()), None, None)?;
        // The highest sequence number posted (release: what the driver's ordering gives a
        // real consumer), and the consumer's end.
        let posted = Arc::new(AtomicU64::new(0), GFP_KERNEL)?;
        let over = Arc::new(AtomicBool::new(false), GFP_KERNEL)?;
        let stop = Arc::new(AtomicBool::new(false), GFP_KERNEL)?;
        let (pool, p, o, st) = (r.pool.clone(), posted.clone(), over.clone(), stop.clone());
        workqueue::system().try_spawn(GFP_KERNEL, move || {
            let mut done = 0;
            while done < N && !st.load(Ordering::Relaxed) {
                let h = p.load(Ordering::Acquire);
                if h > done {
                    // SAFETY: The ring's only consumer; DTOs through `h` are posted.
                    unsafe { pool.owner().finish_through(h) };
                    done = h;
                } else {
                    fsleep(Delta::from_micros(5));
                }
            }
            o.store(true, Ordering::Release);
        })?;
        // Work requests of one to three per DTO, so that the queue runs out as well.
        let mut full = 0u64;
        let mut lost = false;
        'post: for cookie in 1..=N {
            let mut tries = 0;
            loop {
                match take(&r, cookie, 1 + (cookie % 3) as u32) {
                    Ok((_, seq)) => {
                        posted.store(seq, Ordering::Release);
                        break;
                    }
                    Err(_) if tries < 200_000 => {
                        full += 1;
                        tries += 1;
                        fsleep(Delta::from_micros(5));
                    }
                    Err(_) => {
                        lost = true;
                        break 'post;
                    }
                }
            }
        }
        let mut waited = 0;
        while !over.load(Ordering::Acquire) && waited < 20_000 {
            fsleep(Delta::from_millis(1));
            waited += 1;
        }
        stop.store(true, Ordering::Relaxed);
        // Posts never stalled for good, and the consumer finished them all.
        assert!(!lost);
        assert!(over.load(Ordering::Acquire));
        // Every DTO reported once, in order; the ring empty and whole.
        assert_eq!(h.last.load(Ordering::Relaxed), N);
        assert_eq!(h.bad.load(Ordering::Relaxed), 0);
        let end = (N % 8) as u32;
        assert_eq!(state(&r), (N + 1, N + 1, end, end, 16));
        assert_eq!(r.stats().in_flight(), 0);
        // The posters found the ring full at times: contexts did come back through the tail.
        assert!(full > 0);
        Ok(())
    }

    #[test]
    fn an_orphaned_dto_finishes_silently_with_its_queue_slots_back() -> Result {
        let h = Arc::new(InOrder::default(), GFP_KERNEL)?;
        let r = DtoRing::new(8, 8, 4, 0, DtoSink::Handler(h.clone()), None, None)?;
        take(&r, 1, 1)?;
        // A DTO of three work requests of which the post call posted only the first.
        let (orphan, _) = take(&r, 99, 3)?;
        assert_eq!(state(&r).4, 4);
        assert_eq!(r.in_flight(), 2);
        let op = with(&r, 8, |c| c.orphan(orphan, 2))?;
        assert_eq!(op, Some(DtoOp::RdmaWrite));
        // Its two unposted queue slots are back; it no longer counts as reporting.
        assert_eq!(state(&r).4, 6);
        assert_eq!(r.in_flight(), 1);
        // The completion of a later DTO finishes it: no event, counted as failed, its posted
        // work request's slot back.
        let (_, seq) = take(&r, 2, 1)?;
        fin(&r, seq);
        assert_eq!(h.last.load(Ordering::Relaxed), 2);
        assert_eq!(h.bad.load(Ordering::Relaxed), 0);
        assert_eq!(state(&r), (4, 4, 3, 3, 8));
        assert_eq!(r.in_flight(), 0);
        assert_eq!(
            totals(&r)?.to_bytes(),
            b"in_flight 0 errors 1 flushed 0 refused 0\n"
        );
        // The same at the teardown's reaping, with nothing after it.
        let (orphan, _) = take(&r, 98, 2)?;
        with(&r, 8, |c| c.orphan(orphan, 1))?;
        reap(&r);
        assert_eq!(h.last.load(Ordering::Relaxed), 2);
        assert_eq!(state(&r), (5, 5, 4, 4, 8));
        assert_eq!(
            totals(&r)?.to_bytes(),
            b"in_flight 0 errors 2 flushed 0 refused 0\n"
        );
        Ok(())
    }
}
