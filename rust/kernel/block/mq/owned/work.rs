// SPDX-License-Identifier: GPL-2.0

//! Stopping and restarting a disk's dispatch, and the disk's own delayed work: what a driver
//! that recovers from a lost connection by itself needs (nvme's error recovery and
//! reconnect works).
//!
//! C headers: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h),
//! [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use super::Driver;
use crate::{bindings, prelude::*, sync::Arc, types::Opaque};
use core::{marker::PhantomData, ptr::NonNull};

/// The request queue of a live disk, borrowed from the [`super::Disk`]
/// ([`super::Disk::request_queue`]) or handed to [`Driver::work`].
///
/// # Invariants
///
/// `0` is the request queue of an added disk that is not deleted for `'a`.
pub struct RequestQueue<'a>(NonNull<bindings::request_queue>, PhantomData<&'a ()>);

impl RequestQueue<'_> {
    /// # Safety
    ///
    /// `q` is the request queue of an added disk that is not deleted for `'a`.
    pub(super) unsafe fn new<'a>(q: *mut bindings::request_queue) -> RequestQueue<'a> {
        // SAFETY: an added disk has a queue (safety requirements).
        let q = unsafe { NonNull::new_unchecked(q) };
        // INVARIANT: by the safety requirements.
        RequestQueue(q, PhantomData)
    }

    /// Stops dispatch (`blk_mq_quiesce_queue()`): once it returns no [`Driver::queue_rq`] call
    /// is in progress and none starts until as many [`RequestQueue::unquiesce`] calls;
    /// requests submitted meanwhile wait in blk-mq. It nests. Process context; sleeps (for
    /// the `queue_rq` calls in progress).
    pub fn quiesce(&self) {
        // SAFETY: the queue is live (type invariant); quiescing nests.
        unsafe { bindings::blk_mq_quiesce_queue(self.0.as_ptr()) };
    }

    /// Undoes one [`RequestQueue::quiesce`] (`blk_mq_unquiesce_queue()`, which warns once
    /// if the queue was not quiesced); the last one dispatches what waits. Process context.
    pub fn unquiesce(&self) {
        // SAFETY: the queue is live (type invariant).
        unsafe { bindings::blk_mq_unquiesce_queue(self.0.as_ptr()) };
    }

    /// Moves the requeued requests ([`super::OwnedRequest::requeue_later`]) to dispatch
    /// (`blk_mq_kick_requeue_list()`), which runs them once the queue is not quiesced. Any
    /// context.
    pub fn kick_requeue_list(&self) {
        // SAFETY: the queue is live (type invariant).
        unsafe { bindings::blk_mq_kick_requeue_list(self.0.as_ptr()) };
    }
}

/// The delayed work of a [`super::Disk`] (a `struct delayed_work` on `system_long_wq`),
/// which runs [`Driver::work`]. The driver keeps a handle ([`super::Disk::work`]) and
/// schedules it from any context ([`DiskWork::schedule`]); the disk's deletion disables it
/// and waits for a run in progress ([`super::Disk::stop_work`]), so it never runs on a
/// deleted disk.
///
/// # Invariants
///
/// `dwork` was initialised to run `run::<D>` for a `Disk<D>` whose request queue is `queue`;
/// it is disabled (`disable_delayed_work_sync()`) before that disk is deleted.
#[pin_data]
#[repr(C)]
pub struct DiskWork {
    #[pin]
    dwork: Opaque<bindings::delayed_work>,
    queue: NonNull<bindings::request_queue>,
}

// SAFETY: a `delayed_work` is queued and cancelled from any thread; `queue` is only read, by
// the work.
unsafe impl Send for DiskWork {}
// SAFETY: as above: `&DiskWork` only queues the work.
unsafe impl Sync for DiskWork {}

impl DiskWork {
    /// The work of the disk whose request queue is `q`.
    ///
    /// # Safety
    ///
    /// `q` is the queue of a `Disk<D>` (its `queuedata` the `D`), and the `Disk` disables the
    /// work ([`DiskWork::disable`]) before it deletes the disk.
    pub(super) unsafe fn new<D: Driver>(q: NonNull<bindings::request_queue>) -> Result<Arc<Self>> {
        let key = crate::static_lock_class!();
        let timer_key = crate::static_lock_class!();
        let init = pin_init!(DiskWork {
            dwork <- Opaque::ffi_init(|slot: *mut bindings::delayed_work| {
                // SAFETY: `slot` is the work's memory, being initialised; `run::<D>` is a work
                // function of this layout (`repr(C)`, `dwork` first, `work` first in it).
                unsafe {
                    bindings::init_work_with_key(
                        &raw mut (*slot).work,
                        Some(run::<D>),
                        false,
                        c"owned_disk_work".as_char_ptr(),
                        key.as_ptr(),
                    );
                    bindings::timer_init_key(
                        &raw mut (*slot).timer,
                        Some(bindings::delayed_work_timer_fn),
                        bindings::TIMER_IRQSAFE,
                        c"owned_disk_work_timer".as_char_ptr(),
                        timer_key.as_ptr(),
                    );
                }
            }),
            queue: q,
        });
        // INVARIANT: initialised for `D` and `q`; the caller disables it before the deletion.
        Arc::pin_init(init, GFP_KERNEL)
    }

    /// Runs [`Driver::work`] in `delay_ms` milliseconds, unless it is pending already (then
    /// it runs when it was due) or the disk is being deleted. Returns whether it was queued.
    /// Any context.
    pub fn schedule(&self, delay_ms: u32) -> bool {
        // SAFETY: the work was initialised (type invariant) and lives as long as `self`;
        // `system_long_wq` is a C global, always available; `__msecs_to_jiffies` converts.
        unsafe {
            bindings::queue_delayed_work_on(
                bindings::wq_misc_consts_WORK_CPU_UNBOUND as crate::ffi::c_int,
                bindings::system_long_wq,
                self.dwork.get(),
                bindings::__msecs_to_jiffies(delay_ms),
            )
        }
    }

    /// Runs [`Driver::work`] as soon as possible: queued now, or a pending run that was due
    /// later brought forward (`mod_delayed_work_on()` with no delay), unless the disk is being
    /// deleted. Returns whether a run was pending. Any context.
    pub fn schedule_now(&self) -> bool {
        // SAFETY: as in `schedule`; `mod_delayed_work_on` takes the pending run from its timer
        // (or queues the work) and does nothing once the work is disabled.
        unsafe {
            bindings::mod_delayed_work_on(
                bindings::wq_misc_consts_WORK_CPU_UNBOUND as crate::ffi::c_int,
                bindings::system_long_wq,
                self.dwork.get(),
                0,
            )
        }
    }

    /// Disables the work and waits for a run in progress (`disable_delayed_work_sync()`):
    /// it never runs again, and [`DiskWork::schedule`] does nothing. Process context; sleeps.
    pub(super) fn disable(&self) {
        // SAFETY: the work was initialised (type invariant); disabling nests.
        unsafe { bindings::disable_delayed_work_sync(self.dwork.get()) };
    }
}

/// The work function of a `Disk<D>`'s [`DiskWork`].
///
/// # Safety
///
/// Called by the workqueue for the `work` of the `dwork` of a [`DiskWork`] made for `D`.
unsafe extern "C" fn run<D: Driver>(work: *mut bindings::work_struct) {
    // SAFETY: `work` is the first field of `dwork`, the first field of the `repr(C)`
    // `DiskWork`, which lives (the `Disk` holds it, and disables the work before it goes).
    let w = unsafe { &*work.cast::<DiskWork>() };
    let q = w.queue.as_ptr();
    // SAFETY: the disk is not deleted while its work runs (the type invariant of `DiskWork`),
    // so its queue and `queuedata`, the `D` the `Disk` holds, are live.
    let (driver, queue) = unsafe { (&*(*q).queuedata.cast::<D>(), RequestQueue::new(q)) };
    driver.work(&queue);
}
