// SPDX-License-Identifier: GPL-2.0

//! Counters of one DTO ring, shown in the EP's debugfs `counters` file.

use super::{DtoOp, DtoStatus};
use core::fmt;

/// Counters of one ring of DTO contexts. They live under the ring's lock, which the data path
/// holds anyway, so they are plain integers; debugfs copies them out under it (a snapshot).
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

    pub(super) fn completed(&mut self, op: DtoOp, status: DtoStatus, len: u64) {
        self.completed[op.idx()] += 1;
        match status {
            DtoStatus::Success => self.bytes[op.idx()] += len,
            DtoStatus::Flushed => self.flushed += 1,
            _ => self.errors += 1,
        }
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
