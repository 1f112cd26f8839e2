// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_ring_signal`: which send-queue DTOs posted with completion suppress go
//! unsignalled (`RingCore::unsignalled`): one work request each, runs of less than half the
//! ring, and only while more than a quarter of the ring's contexts and queue slots is left.

use kernel::prelude::kunit_tests;

#[kunit_tests(rkdapl_ring_signal)]
mod tests {
    use super::super::{ring, with};
    use crate::dto::DtoOp;
    use kernel::prelude::*;

    /// Which of `k` suppressed DTOs of `nwr` work requests in a row go unsignalled on a ring
    /// of `n` contexts, as a bit mask (bit `i`: the `i`-th).
    fn pattern(n: u32, nwr: u32, k: u32) -> Result<u64> {
        let (r, _e) = ring(n, 64)?;
        let mut bits = 0u64;
        with(&r, 64, |c| {
            for i in 0..k {
                if c.unsignalled(true, nwr) {
                    bits |= 1 << i;
                }
            }
        })?;
        Ok(bits)
    }

    #[test]
    fn unsignalled_runs_stop_at_half_the_ring() -> Result {
        // Eight contexts: three unsignalled, then one signalled, again and again.
        assert_eq!(pattern(8, 1, 8)?, 0b0111_0111);
        assert_eq!(pattern(4, 1, 6)?, 0b01_0101);
        assert_eq!(pattern(9, 1, 10)?, 0b11_0111_0111);
        // 100 contexts: 49 in a row.
        assert_eq!(pattern(100, 1, 50)?, (1 << 49) - 1);
        // Rings of fewer than four contexts, and DTOs of several work requests: all signalled.
        for n in 1..=3 {
            assert_eq!(pattern(n, 1, 8)?, 0);
        }
        assert_eq!(pattern(8, 2, 8)?, 0);
        // A signalled DTO (not suppressed, or of several work requests) starts a new run.
        let (r, _e) = ring(8, 64)?;
        let got = with(&r, 64, |c| {
            [
                c.unsignalled(true, 1),
                c.unsignalled(true, 1),
                c.unsignalled(false, 1),
                c.unsignalled(true, 1),
                c.unsignalled(true, 1),
                c.unsignalled(true, 2),
                c.unsignalled(true, 1),
                c.unsignalled(true, 1),
                c.unsignalled(true, 1),
                c.unsignalled(true, 1),
            ]
        })?;
        assert_eq!(
            got,
            [true, true, false, true, true, false, true, true, true, false]
        );
        Ok(())
    }

    /// Which of 14 DTOs of one work request, taken one after the other and none finished, go
    /// unsignalled on a ring of `n` contexts and `depth` queue slots, every fourth one not
    /// suppressed (so that no run reaches half the ring), as a bit mask (bit `i`: the `i`-th).
    fn filling(n: u32, depth: u32) -> Result<u64> {
        let (r, _e) = ring(n, depth)?;
        let mut bits = 0u64;
        for i in 0..14u32 {
            let u = with(&r, depth, |c| -> Result<bool> {
                let idx = c.take(1)?;
                let s = c.slot(idx).ok_or(EINVAL)?;
                s.op = DtoOp::Send;
                Ok(c.unsignalled((i + 1) % 4 != 0, 1))
            })??;
            if u {
                bits |= 1 << i;
            }
        }
        with(&r, depth, |c| {
            while c.outstanding() > 0 {
                c.untake_last();
            }
        })?;
        Ok(bits)
    }

    #[test]
    fn suppressed_dtos_are_signalled_with_a_quarter_left() -> Result {
        // Suppressed ones go unsignalled while, with them taken, more than a quarter of the
        // ring is left: the 1st to 11th of 16 contexts, or of 16 queue slots (every fourth one
        // is not suppressed). From the 12th on they are signalled, so that the ring's last
        // quarter always comes back with a completion.
        let want = 0b0111_0111_0111;
        assert_eq!(filling(16, 64)?, want);
        assert_eq!(filling(64, 16)?, want);
        Ok(())
    }
}
