// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_ring_sink`: a ring whose completions go to a handler (a typed EP's)
//! instead of an EVD, built and driven as in `rkdapl_ring` (its parent module).

use kernel::prelude::kunit_tests;

#[kunit_tests(rkdapl_ring_sink)]
mod tests {
    use super::super::super::{DtoHandler, DtoRing, DtoSink};
    use super::super::{fin, reap, state, with};
    use crate::{dto::DtoOp, evd::DtoEvent};
    use core::{
        ffi::c_void,
        sync::atomic::{AtomicU32, Ordering},
    };
    use kernel::{prelude::*, sync::Arc, types::ForeignOwnable};

    /// Contexts of [`a_handler_takes_back_every_context_once`] dropped so far.
    static CTX_DROPS: AtomicU32 = AtomicU32::new(0);

    /// A typed EP's context: a box whose drop counts.
    struct Ctx(u32);

    impl Drop for Ctx {
        fn drop(&mut self) {
            CTX_DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A handler as a typed EP's: takes each cookie back as the boxed [`Ctx`] it is, and
    /// records (one bit per context) which came, which suppressed, which with "more follow".
    #[derive(Default)]
    struct Boxes {
        seen: AtomicU32,
        suppressed: AtomicU32,
        more: AtomicU32,
    }

    impl DtoHandler for Boxes {
        fn done(&self, ev: &DtoEvent, suppressed: bool, more: bool) {
            // SAFETY: Every cookie of the test's ring came from `KBox::<Ctx>::into_foreign`
            // (`boxed`), and the ring reports each DTO once.
            let c = unsafe { KBox::<Ctx>::from_foreign(ev.cookie as usize as *mut c_void) };
            let bit = 1u32 << c.0;
            self.seen.fetch_or(bit, Ordering::Relaxed);
            if suppressed {
                self.suppressed.fetch_or(bit, Ordering::Relaxed);
            }
            if more {
                self.more.fetch_or(bit, Ordering::Relaxed);
            }
        }
    }

    /// A boxed [`Ctx`] as a cookie.
    fn boxed(v: u32) -> Result<u64> {
        Ok(KBox::new(Ctx(v), GFP_KERNEL)?.into_foreign() as usize as u64)
    }

    /// A SEND carrying `cookie`, armed as the post calls arm it (`suppress`), or left behind
    /// by a failed post call (`silent`). Its sequence number.
    fn send_ctx(r: &DtoRing, cookie: u64, suppress: bool, silent: bool) -> Result<u64> {
        with(r, 64, |c| -> Result<u64> {
            let idx = c.take(1)?;
            let s = c.slot(idx).ok_or(EINVAL)?;
            (s.op, s.cookie, s.len, s.suppress, s.silent) =
                (DtoOp::Send, cookie, 8, suppress, silent);
            Ok(s.seq)
        })?
    }

    /// A ring whose completions go to a handler (a typed EP's) reports every DTO that
    /// finishes, suppressed successes too (flagged, for the handler to drop the context), but
    /// not one a failed post call left behind (its caller took the context back); "more
    /// follow" is set while the same call goes on to the next DTO.
    #[test]
    fn a_handler_takes_back_every_context_once() -> Result {
        let h = Arc::new(Boxes::default(), GFP_KERNEL)?;
        let r = DtoRing::new(8, 64, 4, 0, DtoSink::Handler(h.clone()), None, None)?;
        let drops = CTX_DROPS.load(Ordering::Relaxed);
        let silent = boxed(3)?;
        send_ctx(&r, boxed(1)?, false, false)?;
        let two = send_ctx(&r, boxed(2)?, true, false)?;
        send_ctx(&r, silent, false, true)?;
        send_ctx(&r, boxed(4)?, false, false)?;
        send_ctx(&r, boxed(5)?, false, false)?;
        // The completion of the signalled DTO after the suppressed one finishes both.
        fin(&r, two);
        assert_eq!(h.seen.load(Ordering::Relaxed), 0b110);
        assert_eq!(h.suppressed.load(Ordering::Relaxed), 0b100);
        assert_eq!(h.more.load(Ordering::Relaxed), 0b10);
        // The drain's reaping: the silent one reports nothing.
        reap(&r);
        assert_eq!(h.seen.load(Ordering::Relaxed), 0b110110);
        assert_eq!(h.more.load(Ordering::Relaxed), 0b10010);
        // The four it reported were dropped by the handler.
        assert_eq!(CTX_DROPS.load(Ordering::Relaxed) - drops, 4);
        // SAFETY: The silent DTO's cookie came from `boxed` and the ring did not report it:
        // as the failed post call's caller, the test takes it back.
        drop(unsafe { KBox::<Ctx>::from_foreign(silent as usize as *mut c_void) });
        assert_eq!(CTX_DROPS.load(Ordering::Relaxed) - drops, 5);
        assert_eq!(state(&r), (6, 6, 5, 5, 64));
        Ok(())
    }
}
