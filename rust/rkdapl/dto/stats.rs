// SPDX-License-Identifier: GPL-2.0

//! Counters of one DTO ring, shown in the EP's debugfs `counters` file.

use super::{DtoOp, DtoStatus};
use core::{
    fmt,
    sync::atomic::{AtomicU64, Ordering},
};

/// Counters of one ring of DTO contexts. Those of the post calls live under the ring's lock,
/// which the post calls hold anyway, so they are plain integers; those of finished DTOs are
/// the completion side's ([`DoneStats`]). debugfs copies both out ([`DoneStats::add_to`]).
#[derive(Default, Clone, Copy)]
pub(crate) struct DtoStats {
    /// DTOs accepted by the post calls, per `DtoOp`.
    posted: [u64; DtoOp::ALL.len()],
    /// DTOs completed, successful or not, per `DtoOp`.
    completed: [u64; DtoOp::ALL.len()],
    /// Bytes of successful DTOs, per `DtoOp` (RECV: bytes received).
    bytes: [u64; DtoOp::ALL.len()],
    /// DTOs completed in error other than FLUSHED.
    errors: u64,
    /// DTOs completed FLUSHED (posted when the connection ended).
    flushed: u64,
    /// Post calls refused (full queue, bad segment, driver error).
    pub(super) refused: u64,
}

impl DtoStats {
    pub(super) fn posted(&mut self, op: DtoOp) {
        self.posted[op.idx()] += 1;
    }

    /// DTOs posted and not yet completed.
    pub(crate) fn in_flight(&self) -> u64 {
        let mut n = 0u64;
        for i in 0..self.posted.len() {
            n = n
                .wrapping_add(self.posted[i])
                .wrapping_sub(self.completed[i]);
        }
        n
    }

    /// One line per operation used so far: the debugfs `counters` file.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for op in DtoOp::ALL {
            let posted = self.posted[op.idx()];
            if posted == 0 {
                continue;
            }
            writeln!(
                f,
                "{:<10} posted {} completed {} bytes {}",
                op.name(),
                posted,
                self.completed[op.idx()],
                self.bytes[op.idx()]
            )?;
        }
        Ok(())
    }

    /// The totals line of the debugfs `counters` file.
    pub(crate) fn show_totals(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "in_flight {} errors {} flushed {} refused {}",
            self.in_flight(),
            self.errors,
            self.flushed,
            self.refused
        )
    }
}

/// The counters of finished DTOs of a ring ([`DtoStats`]' `completed`, `bytes`, `errors` and
/// `flushed`), kept by its completion side, which takes no lock.
///
/// # Invariants
///
/// Only the ring's consumer (one at a time, see `super::ring`'s `# Locking`) changes them, so
/// an increment is a load and a store (no read-modify-write instruction); readers take
/// snapshots with relaxed loads.
pub(crate) struct DoneStats {
    completed: [AtomicU64; DtoOp::ALL.len()],
    bytes: [AtomicU64; DtoOp::ALL.len()],
    errors: AtomicU64,
    flushed: AtomicU64,
}

/// Adds `n` to `c`, which only the caller changes (see [`DoneStats`]).
#[inline(always)]
fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

impl DoneStats {
    pub(super) const fn new() -> DoneStats {
        DoneStats {
            completed: [const { AtomicU64::new(0) }; DtoOp::ALL.len()],
            bytes: [const { AtomicU64::new(0) }; DtoOp::ALL.len()],
            errors: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
        }
    }

    /// Counts a finished DTO. Only the ring's consumer calls it (type invariant).
    #[inline]
    pub(super) fn completed(&self, op: DtoOp, status: DtoStatus, len: u64) {
        let i = op.idx();
        if let Some(c) = self.completed.get(i) {
            bump(c, 1);
        }
        match status {
            DtoStatus::Success => {
                if let Some(b) = self.bytes.get(i) {
                    bump(b, len);
                }
            }
            DtoStatus::Flushed => bump(&self.flushed, 1),
            _ => bump(&self.errors, 1),
        }
    }

    /// Adds a snapshot of these counters to `s`, the post calls' counters. Any context.
    pub(super) fn add_to(&self, s: &mut DtoStats) {
        for i in 0..s.completed.len() {
            if let (Some(c), Some(b)) = (self.completed.get(i), self.bytes.get(i)) {
                s.completed[i] = s.completed[i].wrapping_add(c.load(Ordering::Relaxed));
                s.bytes[i] = s.bytes[i].wrapping_add(b.load(Ordering::Relaxed));
            }
        }
        s.errors = s.errors.wrapping_add(self.errors.load(Ordering::Relaxed));
        s.flushed = s.flushed.wrapping_add(self.flushed.load(Ordering::Relaxed));
    }
}
