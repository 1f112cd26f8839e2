// SPDX-License-Identifier: GPL-2.0

//! Reconnecting by itself, as nvme-rdma does (its error recovery and reconnect works,
//! `reconnect_delay` and `ctrl_loss_tmo` of `drivers/nvme/host/fabrics.c`).
//!
//! When a queue fails ([`Queue::fail`]) it requeues its requests (each once its grant is
//! freed and its pages unmapped) and schedules the disk's work ([`Device::work`]). The work
//! stops dispatch (the disk's queue quiesced: new I/O waits in blk-mq), fails every other
//! queue the same way (their requests requeued too), and tries to connect anew every
//! `reconnect_delay` seconds: the disk is `connecting`. Once it connects, the new queues take
//! the old ones' place and dispatch resumes: the requeued requests run on the new
//! connection; the disk is `live`. Once `ctrl_loss_tmo` seconds passed since the failure (-1:
//! never) it gives up: the requeued and waiting requests fail with `EIO`, and every later one,
//! until a `reconnect` through the control device; the disk is `failed`. Deleting the disk
//! (`disconnect`, sysfs' `delete`, `rmmod`) stops the work first, then fails what waits.

use crate::{
    block::mq::owned::{DiskParams, RequestQueue},
    disk::{teardown, Link},
    queue::Queue,
    Device,
};
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};
use rkdapl::api::{Ia, Pz};

/// [`Device::state`]: connected (a queue may have failed a moment ago: the work runs next).
pub(crate) const LIVE: u8 = 0;
/// Connecting anew, dispatch stopped.
pub(crate) const CONNECTING: u8 = 1;
/// `ctrl_loss_tmo` expired (or was 0): every request fails until a `reconnect`.
pub(crate) const FAILED: u8 = 2;
/// Being deleted: the work does nothing any more.
pub(crate) const DELETING: u8 = 3;

/// The disk's connection as the work and a `reconnect` replace it, under [`Device::link`].
pub(crate) struct Recovery {
    /// The disk's size, depth (as granted) and request size, which a new connection must
    /// offer again.
    pub(crate) params: DiskParams,
    /// The current queues' IA and PZ (each queue keeps them too).
    pub(crate) ia: Option<Ia>,
    pub(crate) pz: Option<Arc<Pz>>,
    /// The work quiesced the disk's queue: undone when it connects, gives up, or the disk is
    /// deleted.
    pub(crate) quiesced: bool,
    /// When the disk began connecting, and when (ms after it) the next attempt is due.
    since: Option<Instant<Monotonic>>,
    due_ms: i64,
    /// Attempts so far.
    attempts: u32,
}

impl Recovery {
    pub(crate) fn new(params: DiskParams, ia: Ia, pz: Arc<Pz>) -> Recovery {
        Recovery {
            params,
            ia: Some(ia),
            pz: Some(pz),
            quiesced: false,
            since: None,
            due_ms: 0,
            attempts: 0,
        }
    }

    /// Whether `now` (a new connection's) still fits the disk: the same capacity, at least its
    /// depth and request size. Logs a line if not.
    pub(crate) fn fits(&self, index: u32, now: &DiskParams) -> bool {
        let was = &self.params;
        if now.capacity == was.capacity && now.depth >= was.depth && now.max_io >= was.max_io {
            return true;
        }
        pr_err!(
            "rkdblk{}: the server now offers {} sectors, depth {}, {} bytes per request: the disk has {}, {}, {}\n",
            index,
            now.capacity,
            now.depth,
            now.max_io,
            was.capacity,
            was.depth,
            was.max_io
        );
        false
    }

    /// Takes `l`'s IA and PZ in place of the old ones, which go once the old queues' objects
    /// are gone.
    pub(crate) fn take_link(&mut self, ia: Ia, pz: Arc<Pz>) {
        self.ia = Some(ia);
        self.pz = Some(pz);
    }
}

/// `reconnect_delay` in ms.
fn delay_ms(dev: &Device) -> u32 {
    dev.opts.reconnect_delay.saturating_mul(1000)
}

impl Device {
    /// The disk's state ([`LIVE`], [`CONNECTING`], [`FAILED`], [`DELETING`]). Any context.
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// The state's name for sysfs and the listing: `connecting` also for a live disk one of
    /// whose queues failed a moment ago (the work runs next). Any context.
    pub(crate) fn state_name(&self) -> &'static str {
        match self.state() {
            LIVE if self.live() => "live",
            LIVE | CONNECTING => "connecting",
            FAILED => "failed",
            _ => "deleting",
        }
    }

    /// The disk's work ([`crate::Driver::work`]): starts a recovery when a queue failed,
    /// tries to connect when one is due, gives up once `ctrl_loss_tmo` passed. Process
    /// context (`system_long_wq`); sleeps (for the server, up to 15 s per queue).
    pub(crate) fn recover(&self, rq: &RequestQueue<'_>) {
        let mut g = self.link.lock();
        // `None` only before the disk is added and armed.
        let Some(r) = &mut *g else {
            return;
        };
        match self.state() {
            LIVE if !self.live() => {
                self.state.store(CONNECTING, Ordering::Release);
                rq.quiesce();
                r.quiesced = true;
                r.since = Some(Instant::now());
                r.due_ms = i64::from(delay_ms(self));
                r.attempts = 0;
                // Every queue: their requests in flight requeued, as nvme-rdma's reset cancels
                // every I/O queue's.
                let mut i = 0;
                while let Some(q) = self.queue(i) {
                    q.fail("reconnecting the disk");
                    i += 1;
                }
                if self.opts.ctrl_loss_tmo == 0 {
                    return self.give_up(r, rq);
                }
                pr_warn!(
                    "rkdblk{}: connection lost: reconnecting every {} s, giving up after {} s (ctrl_loss_tmo; -1: never)\n",
                    self.index,
                    self.opts.reconnect_delay,
                    self.opts.ctrl_loss_tmo
                );
            }
            CONNECTING => {}
            _ => return,
        }
        let Some(since) = r.since else {
            return;
        };
        let elapsed = since.elapsed().as_millis();
        let tmo = i64::from(self.opts.ctrl_loss_tmo) * 1000;
        if elapsed < r.due_ms {
            // Early (a queue's failure scheduled it): when due, or at the timeout.
            let wait = if tmo >= 0 {
                r.due_ms.min(tmo)
            } else {
                r.due_ms
            } - elapsed;
            self.schedule(wait.max(1) as u32);
            return;
        }
        if tmo >= 0 && elapsed >= tmo {
            return self.give_up(r, rq);
        }
        r.attempts += 1;
        match self.connect_again(r) {
            Ok(()) => {
                self.state.store(LIVE, Ordering::Release);
                r.since = None;
                r.quiesced = false;
                rq.unquiesce();
                rq.kick_requeue_list();
                pr_info!(
                    "rkdblk{}: reconnected {} queue(s) to server {} port {} after {} attempt(s), {} ms\n",
                    self.index,
                    self.opts.queues,
                    crate::disk::Ip(self.opts.server),
                    self.opts.port,
                    r.attempts,
                    since.elapsed().as_millis()
                );
            }
            Err(e) => {
                let elapsed = since.elapsed().as_millis();
                r.due_ms = elapsed + i64::from(delay_ms(self));
                pr_info!(
                    "rkdblk{}: reconnect attempt {} failed ({}); next in {} s\n",
                    self.index,
                    r.attempts,
                    e.to_errno(),
                    self.opts.reconnect_delay
                );
                let wait = if tmo >= 0 {
                    (tmo - elapsed).clamp(1, i64::from(delay_ms(self)))
                } else {
                    i64::from(delay_ms(self))
                };
                self.schedule(wait as u32);
            }
        }
    }

    /// Schedules the disk's work in `ms`. Any context.
    fn schedule(&self, ms: u32) {
        if let Some(w) = self.work.lock().as_ref() {
            w.schedule(ms);
        }
    }

    /// Connects the queues anew, the disk quiesced, and puts them in the old ones' place.
    /// Process context; sleeps.
    fn connect_again(&self, r: &mut Recovery) -> Result {
        let l = Link::connect(self.index, &self.opts)?;
        if !r.fits(self.index, &l.params) {
            teardown(&l.queues);
            return Err(EPROTO);
        }
        if l.params.read_only != r.params.read_only {
            pr_warn!(
                "rkdblk{}: the server's export is {} now; the disk stays as it was until a `reconnect`\n",
                self.index,
                if l.params.read_only {
                    "read-only"
                } else {
                    "writable"
                }
            );
        }
        self.arm(&l.queues);
        // Quiesced: no `queue_rq` uses the old queues.
        let old = self.replace(l.queues);
        for q in old.iter() {
            q.fail("reconnected");
        }
        teardown(&old);
        drop(old);
        r.take_link(l.ia, l.pz);
        Ok(())
    }

    /// Arms `qs` ([`Queue::arm`]) with the disk's work. Any context.
    pub(crate) fn arm(&self, qs: &[Arc<Queue>]) {
        if let Some(w) = self.work.lock().as_ref() {
            for q in qs {
                q.arm(w);
            }
        }
    }

    /// Arms the current queues (in place: `queue_rq` may be using them). Any context.
    pub(crate) fn arm_all(&self) {
        let Some(w) = self.work.lock().clone() else {
            return;
        };
        for q in self.queues.lock().iter() {
            q.arm(&w);
        }
    }

    /// `ctrl_loss_tmo` passed: the disk fails, the requests that wait end with `EIO`.
    fn give_up(&self, r: &mut Recovery, rq: &RequestQueue<'_>) {
        self.state.store(FAILED, Ordering::Release);
        self.fail_waiting(r, rq);
        pr_err!(
            "rkdblk{}: not reconnected within ctrl_loss_tmo ({} s): failing its I/O until `reconnect rkdblk{}`\n",
            self.index,
            self.opts.ctrl_loss_tmo,
            self.index
        );
    }

    /// The requeued and waiting requests, and every later one, fail with `EIO` (the queues
    /// stay failed and no longer requeue); dispatch resumes. Process context.
    pub(crate) fn fail_waiting(&self, r: &mut Recovery, rq: &RequestQueue<'_>) {
        for q in self.queues.lock().iter() {
            q.requeue.store(false, Ordering::Release);
        }
        r.since = None;
        if core::mem::replace(&mut r.quiesced, false) {
            rq.unquiesce();
        }
        rq.kick_requeue_list();
    }
}
