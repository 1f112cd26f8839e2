// SPDX-License-Identifier: GPL-2.0

//! The tasks inside an EVD's upcall, so that the calls an upcall must not make fail with
//! `-EDEADLK` instead of hanging.
//!
//! An upcall runs in the context that delivers its event: a CQ's completion work, an rdma_cm
//! id's event handler (holding the id's handler lock), or device removal. Freeing an EP, a PSP
//! or an SRQ there, resetting an EP, freeing an EVD or changing its upcall, or waiting on an
//! EVD, waits for one of those contexts (a drain for the CQ's work, `rdma_destroy_id` for
//! the handler, the upcall's own return for a change of upcall), or for events that the held-up
//! context would deliver: the caller would wait for itself. rkdapl knows which tasks are inside
//! an upcall and refuses those calls there (see `rkdapl_upcall_fn` in `include/rkdapl.h`).
//!
//! The marks are a fixed table of task pointers, one slot per upcall in progress, taken and
//! given back without a lock. Upcalls run on workqueue workers: a CQ's completion work, an
//! rdma_cm id's handler, or a connection request's upcall, which may sleep. An upcall that
//! finds all 256 slots taken runs unmarked, with a warning in the kernel log (the calls it must
//! not make are then not refused there).
//!
//! A mark takes the lowest free slot, and the lookup scans only the slots below the highest one
//! ever taken ([`HIGH`]): as many as upcalls ever ran at once, not the whole table. The lookup
//! is on the data path (`rkdapl_evd_wait` refuses to wait inside an upcall): a scan of all 256
//! slots was 962 instructions per DTO under `make profile`, 40% of rkdapl's own.

use core::{
    ptr,
    sync::atomic::{AtomicPtr, AtomicUsize, Ordering},
};
use kernel::{bindings, pr_warn_once, prelude::*, task::Task};

/// Upcalls in progress that can be marked at once.
const SLOTS: usize = 256;

/// The task of each upcall in progress, NULL in a free slot.
static TASKS: [AtomicPtr<bindings::task_struct>; SLOTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

/// One more than the highest slot of [`TASKS`] ever taken; never decreases.
///
/// A task that took slot `i` raised it to at least `i + 1` before it returned from
/// [`Mark::enter`], so its own lookups (program order) see its slot inside the bound.
static HIGH: AtomicUsize = AtomicUsize::new(0);

/// The mark of the current task for the duration of one upcall.
///
/// # Invariants
///
/// If `slot` is `Some(i)`, `TASKS[i]` holds the task that created the mark, until the mark is
/// dropped on that task.
pub(crate) struct Mark {
    slot: Option<usize>,
}

impl Mark {
    /// Marks the current task as inside an upcall until the mark is dropped. Any context.
    pub(crate) fn enter() -> Mark {
        let me = Task::current_raw();
        for (i, t) in TASKS.iter().enumerate() {
            if t.compare_exchange(ptr::null_mut(), me, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                if HIGH.load(Ordering::Relaxed) <= i {
                    HIGH.fetch_max(i + 1, Ordering::Relaxed);
                }
                // INVARIANT: The slot was free and now holds this task.
                return Mark { slot: Some(i) };
            }
        }
        pr_warn_once!(
            "more than {} upcalls at once: the calls an upcall must not make are not refused in the others\n",
            SLOTS
        );
        Mark { slot: None }
    }
}

impl Drop for Mark {
    fn drop(&mut self) {
        if let Some(t) = self.slot.and_then(|i| TASKS.get(i)) {
            t.store(ptr::null_mut(), Ordering::Relaxed);
        }
    }
}

/// Whether the current task is inside an upcall. Any context.
///
/// Relaxed loads suffice: a slot holds the current task only if this task stored it, and
/// raised [`HIGH`] above it, before (and a task sees its own stores); a slot freed by a task that exited was freed before the exit, so
/// a new task at the same address cannot see it.
pub(crate) fn in_upcall() -> bool {
    let me = Task::current_raw();
    let high = HIGH.load(Ordering::Relaxed);
    TASKS
        .get(..high)
        .unwrap_or(&TASKS)
        .iter()
        .any(|t| t.load(Ordering::Relaxed) == me)
}

/// `Ok` outside an upcall. Any context.
///
/// # Errors
///
/// `-EDEADLK` inside an upcall: the call would wait for the context the upcall holds up.
pub(crate) fn refuse_in_upcall() -> Result {
    if in_upcall() {
        Err(EDEADLK)
    } else {
        Ok(())
    }
}

#[kunit_tests(rkdapl_in_upcall)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_holds_for_its_task_until_dropped() {
        assert!(!in_upcall());
        assert_eq!(refuse_in_upcall(), Ok(()));
        let outer = Mark::enter();
        assert!(outer.slot.is_some_and(|i| i < HIGH.load(Ordering::Relaxed)));
        assert!(in_upcall());
        assert_eq!(refuse_in_upcall(), Err(EDEADLK));
        // Nested upcalls (an upcall whose call delivers another event) take a slot each.
        let inner = Mark::enter();
        drop(inner);
        assert!(in_upcall());
        drop(outer);
        assert!(!in_upcall());
    }

    #[test]
    fn a_full_table_leaves_the_upcall_unmarked() {
        let mut marks = KVec::new();
        for _ in 0..SLOTS {
            assert!(marks.push(Mark::enter(), GFP_KERNEL).is_ok());
        }
        // Every slot, the last too, is inside the lookup's bound.
        assert_eq!(HIGH.load(Ordering::Relaxed), SLOTS);
        let extra = Mark::enter();
        assert!(extra.slot.is_none());
        drop(extra);
        drop(marks);
        assert!(!in_upcall());
    }
}
