// SPDX-License-Identifier: GPL-2.0

//! The completion side of `rkdapl_rust_perf`: the handler of its typed EP ([`Counter`]) and
//! what it shares with the client ([`Progress`]): counts the client sleeps on, woken only when
//! it sleeps.

use crate::{Args, MSG_LEN, OP_STOP};
use core::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use kernel::{
    alloc::KVVec,
    new_condvar, new_spinlock_irq,
    prelude::*,
    sync::{Arc, CondVar, CondVarTimeoutResult, SpinLockIrq},
    time::{msecs_to_jiffies, Instant, Monotonic},
};
use rkdapl::api::{Completion, DtoOp, DtoStatus, EpHandler};

/// What is left until `deadline`, in ms (at least 1). Any context.
///
/// # Errors
///
/// `ETIMEDOUT` once `deadline` passed.
pub(crate) fn left_ms(deadline: Instant<Monotonic>) -> Result<u32> {
    let ms = (deadline - Instant::<Monotonic>::now()).as_millis();
    if ms <= 0 {
        return Err(ETIMEDOUT);
    }
    Ok(ms.min(i64::from(u32::MAX - 1)) as u32)
}

/// What the client and the handler of its EP share: the run's progress, counted by the
/// handler in the completion context and read by the client.
#[pin_data]
pub(crate) struct Progress {
    /// The signalling interval ([`Args::signal`]), `iters` and `size` of the run.
    pub(crate) signal: u32,
    pub(crate) iters: u32,
    pub(crate) size: u64,
    /// The base of the completion times in `done_at`.
    pub(crate) base: Instant<Monotonic>,
    /// Set by the client before its first data DTO: send-queue completions from then on are
    /// data DTOs (the control SEND has completed).
    pub(crate) data: AtomicBool,
    /// Set by the client before it disconnects: flushed DTOs are no error from then on.
    pub(crate) closing: AtomicBool,
    pub(crate) ctl_sends_done: AtomicU32,
    pub(crate) ctl_recvs_done: AtomicU32,
    /// Data DTOs done (with `signal=N`, one completion completes every DTO up to its own),
    /// and those of them that succeeded. Written by the handler only.
    pub(crate) done: AtomicU32,
    pub(crate) ok: AtomicU32,
    /// The first error a completion reported (a negative errno; 0: none).
    pub(crate) err: AtomicI32,
    /// Nanoseconds since `base` at which each signalled data DTO's completion came.
    pub(crate) done_at: KVVec<AtomicU64>,
    /// Clients sleeping on `cv` (under `lock`): the handler wakes only when there is one.
    pub(crate) waiters: AtomicU32,
    #[pin]
    pub(crate) lock: SpinLockIrq<()>,
    #[pin]
    pub(crate) cv: CondVar,
}

impl Progress {
    pub(crate) fn new(a: &Args) -> Result<Arc<Progress>> {
        let n = if a.op == OP_STOP { 0 } else { a.iters as usize };
        let mut done_at = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            done_at.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Progress {
                signal: a.signal(),
                iters: a.iters,
                size: a.size.into(),
                base: Instant::<Monotonic>::now(),
                data: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                ctl_sends_done: AtomicU32::new(0),
                ctl_recvs_done: AtomicU32::new(0),
                done: AtomicU32::new(0),
                ok: AtomicU32::new(0),
                err: AtomicI32::new(0),
                done_at,
                waiters: AtomicU32::new(0),
                lock <- new_spinlock_irq!((), "rkdapl_rust_perf"),
                cv <- new_condvar!("rkdapl_rust_perf"),
            }),
            GFP_KERNEL,
        )
    }

    pub(crate) fn done(&self) -> u32 {
        self.done.load(Ordering::Acquire)
    }

    pub(crate) fn error(&self) -> Option<Error> {
        match self.err.load(Ordering::Acquire) {
            0 => None,
            e => Some(Error::from_errno(e)),
        }
    }

    pub(crate) fn fail(&self, e: Error) {
        let _ = self
            .err
            .compare_exchange(0, e.to_errno(), Ordering::AcqRel, Ordering::Acquire);
    }

    /// Wakes the client if it sleeps in [`Progress::wait`]. Any context.
    pub(crate) fn wake(&self) {
        // Pairs with the fence of `Progress::wait`: either the client, once counted in
        // `waiters`, sees what this completion changed, or this sees it waiting and wakes it
        // (under `lock`, so not between its check and its sleep).
        fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::Relaxed) != 0 {
            let _guard = self.lock.lock();
            self.cv.notify_all();
        }
    }

    /// Sleeps until the handler's counts make `cond` hold, a completion failed or `deadline`
    /// passed. Process context.
    ///
    /// # Errors
    ///
    /// The completion's error (`ECONNRESET`, `EIO`, `EPROTO`, `EOVERFLOW`), `ETIMEDOUT`,
    /// `EINTR` if a signal arrived.
    pub(crate) fn wait(
        &self,
        deadline: Instant<Monotonic>,
        cond: impl Fn(&Progress) -> bool,
        what: &str,
    ) -> Result {
        let r = loop {
            if let Some(e) = self.error() {
                break Err(e);
            }
            if cond(self) {
                break Ok(());
            }
            let ms = match left_ms(deadline) {
                Ok(ms) => ms,
                Err(e) => break Err(e),
            };
            let mut guard = self.lock.lock();
            self.waiters.fetch_add(1, Ordering::Relaxed);
            // Pairs with the fence of `Progress::wake`.
            fence(Ordering::SeqCst);
            let woken = if self.error().is_some() || cond(self) {
                None
            } else {
                // `CondVar` puts the task on its wait queue before it releases `lock`.
                Some(
                    self.cv
                        .wait_interruptible_timeout(&mut guard, msecs_to_jiffies(ms)),
                )
            };
            self.waiters.fetch_sub(1, Ordering::Relaxed);
            drop(guard);
            if let Some(CondVarTimeoutResult::Signal { .. }) = woken {
                break Err(EINTR);
            }
        };
        if let Err(e) = r {
            pr_err!("waiting for {}: {:?}\n", what, e);
        }
        r
    }
}

/// The handler of the client's EP: what `rkdapl_perf`'s `perf_dto_event()` does with a
/// completion. Its DTOs carry no context (`()`): the send queue completes in posting order, so
/// each signalled completion completes the next `signal` data DTOs (or the rest).
pub(crate) struct Counter(pub(crate) Arc<Progress>);

impl EpHandler for Counter {
    type Context = ();

    /// The CQs' completion work, or a flush (process context); does not sleep.
    fn completion(&self, c: Completion<()>, more: bool) {
        let p = &*self.0;
        let good = c.status == DtoStatus::Success;
        let flushed = c.status == DtoStatus::Flushed;
        if !good && !(flushed && p.closing.load(Ordering::Relaxed)) {
            pr_err!("{:?} DTO completed with status {:?}\n", c.op, c.status);
            p.fail(if flushed { ECONNRESET } else { EIO });
        }
        if c.op == DtoOp::Recv {
            if good && c.len != MSG_LEN as u64 {
                p.fail(EPROTO);
            }
            p.ctl_recvs_done.fetch_add(1, Ordering::Release);
        } else if !p.data.load(Ordering::Relaxed) {
            p.ctl_sends_done.fetch_add(1, Ordering::Release);
        } else {
            // The handler is the only writer of `done` and `ok`.
            let done = p.done.load(Ordering::Relaxed);
            let now = (Instant::<Monotonic>::now() - p.base).as_nanos() as u64;
            let to = done.saturating_add(p.signal).min(p.iters);
            if good {
                if c.len != p.size {
                    pr_err!("data DTO {} moved {} bytes\n", to - 1, c.len);
                    p.fail(EIO);
                }
                let ok = p.ok.load(Ordering::Relaxed);
                p.ok.store(ok + to - done, Ordering::Relaxed);
            }
            if let Some(at) = p.done_at.get(to.wrapping_sub(1) as usize) {
                at.store(now, Ordering::Relaxed);
            }
            p.done.store(to, Ordering::Release);
        }
        if !more {
            p.wake();
        }
    }
}
