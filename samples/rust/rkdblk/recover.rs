// SPDX-License-Identifier: GPL-2.0

//! Reconnecting by itself, as nvme-rdma does (its error recovery and reconnect works,
//! `reconnect_delay` and `ctrl_loss_tmo` of `drivers/nvme/host/fabrics.c`), one path at a time
//! (`path.rs`).
//!
//! When a queue fails ([`Queue::fail`]) it requeues its requests (each once its grant is
//! freed and its pages unmapped) and schedules the disk's work ([`Device::work`]). The work
//! fails every other queue of that path the same way (their requests requeued too) and tries
//! to connect the path anew every `reconnect_delay` seconds: the path is `connecting`. If
//! another path is live the requeued requests run on it at once; if none is, the work stops
//! dispatch first (the disk's queue quiesced: new I/O waits in blk-mq) and the disk is
//! `connecting`. Once the path connects, its new queues take the old ones' place and take I/O
//! again (dispatch resumes if it was stopped); the path is `live`. If no path is live for
//! `fast_io_fail_tmo` seconds (-1, the default: never), the waiting requests and every later
//! one fail with `EIO` while the paths go on reconnecting, until one is live. Once `ctrl_loss_tmo`
//! seconds passed since its failure (-1: never) the path gives up: it is `failed`. When no path
//! is live or connecting any more the disk gives up: the requeued and waiting requests fail
//! with `EIO`, and every later one, until a `reconnect` through the control device; the disk
//! is `failed`. Deleting the disk (`disconnect`, sysfs' `delete`, `rmmod`) stops the work
//! first, then fails what waits.

use crate::{
    block::mq::owned::{DiskParams, RequestQueue},
    disk::{teardown, Ip, Link, Opts},
    path::MAX_PATHS,
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

/// [`Device::state`] and a path's: connected (a queue may have failed a moment ago: the work
/// runs next).
pub(crate) const LIVE: u8 = 0;
/// Connecting anew (the disk: no path live, dispatch stopped).
pub(crate) const CONNECTING: u8 = 1;
/// `ctrl_loss_tmo` expired (or was 0): the path tries no more; the disk (every path failed):
/// every request fails until a `reconnect`.
pub(crate) const FAILED: u8 = 2;
/// Being deleted: the work does nothing any more.
pub(crate) const DELETING: u8 = 3;

/// One path's connection as the work and a `reconnect` replace it.
#[derive(Default)]
pub(crate) struct PathRec {
    /// The current queues' IA and PZ (each queue keeps them too).
    ia: Option<Ia>,
    pz: Option<Arc<Pz>>,
    /// When the path began connecting, and when (ms after it) the next attempt is due.
    since: Option<Instant<Monotonic>>,
    due_ms: i64,
    /// Attempts so far.
    attempts: u32,
}

impl PathRec {
    /// The same connection, its attempts forgotten (it is live).
    pub(crate) fn reset(self) -> PathRec {
        PathRec {
            ia: self.ia,
            pz: self.pz,
            ..PathRec::default()
        }
    }

    /// Takes `l`'s IA and PZ in place of the old ones, which go once the old queues' objects
    /// are gone.
    pub(crate) fn take_link(&mut self, ia: Ia, pz: Arc<Pz>) {
        self.ia = Some(ia);
        self.pz = Some(pz);
    }
}

/// The disk's paths' connections as the work and a `reconnect` replace them, under
/// [`Device::link`].
pub(crate) struct Recovery {
    /// The disk's size, depth (as granted) and request size, which a new connection must
    /// offer again.
    pub(crate) params: DiskParams,
    /// The disk's queue is quiesced (no path was live): undone when a path connects, the disk
    /// gives up, `fast_io_fail_tmo` expires, or it is deleted.
    pub(crate) quiesced: bool,
    /// Since when no path is live (while one connects), for `fast_io_fail_tmo`.
    no_path_since: Option<Instant<Monotonic>>,
    /// `fast_io_fail_tmo` expired: the I/O fails while the paths go on reconnecting, until one
    /// is live again.
    failfast: bool,
    pub(crate) paths: [PathRec; MAX_PATHS],
}

impl Recovery {
    /// The recovery of a disk whose first path is `ia`'s and `pz`'s.
    pub(crate) fn new(params: DiskParams, ia: Ia, pz: Arc<Pz>) -> Recovery {
        let mut paths: [PathRec; MAX_PATHS] = Default::default();
        paths[0].take_link(ia, pz);
        Recovery {
            params,
            quiesced: false,
            no_path_since: None,
            failfast: false,
            paths,
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
}

/// `reconnect_delay` in ms.
fn delay_ms(o: &Opts) -> i64 {
    i64::from(o.reconnect_delay) * 1000
}

impl Device {
    /// The disk's state ([`LIVE`], [`CONNECTING`], [`FAILED`], [`DELETING`]). Any context.
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// The state's name for sysfs and the listing: `live` if a path is live, `connecting`
    /// also for a live disk whose one path's queue failed a moment ago (the work runs next).
    /// Any context.
    pub(crate) fn state_name(&self) -> &'static str {
        match self.state() {
            LIVE if self.live_path_but(MAX_PATHS) => "live",
            LIVE | CONNECTING => "connecting",
            FAILED => "failed",
            _ => "deleting",
        }
    }

    /// The disk's work ([`crate::Driver::work`]): starts a path's recovery when one of its
    /// queues failed, tries to connect a path when an attempt is due, gives a path up once
    /// its `ctrl_loss_tmo` passed, and the disk once no path is live or connecting; stops and
    /// resumes dispatch as paths go and come. Process context (`system_long_wq`); sleeps (for
    /// the server, up to 15 s per queue).
    pub(crate) fn recover(&self, rq: &RequestQueue<'_>) {
        let mut g = self.link.lock();
        // `None` only before the disk is added and armed.
        let Some(r) = &mut *g else {
            return;
        };
        // A failed disk too: a path added to it (`Device::add_path`) makes it live again.
        if self.state() == DELETING {
            return;
        }
        // Before the paths' attempts, which may take up to 15 s per queue each: so that
        // `fast_io_fail_tmo` expires on time.
        let mut next: Option<i64> = if self.state() == CONNECTING {
            self.fail_fast(r, rq)
        } else {
            None
        };
        for p in 0..MAX_PATHS {
            if let Some(ms) = self.recover_path(p, r, rq) {
                next = Some(next.map_or(ms, |n| n.min(ms)));
            }
        }
        if let Some(ms) = self.settle(r, rq) {
            next = Some(next.map_or(ms, |n| n.min(ms)));
        }
        if let Some(ms) = next {
            self.schedule(ms.clamp(1, i64::from(u32::MAX)) as u32);
        }
    }

    /// Path `p` lost a queue: it is `connecting` from now, every queue of it failed (their
    /// requests requeued, to run on another live path at once), dispatch stopped first if no
    /// other path is live. Process context.
    pub(crate) fn begin(&self, p: usize, r: &mut Recovery, rq: &RequestQueue<'_>, o: &Opts) {
        self.set_path_state(p, CONNECTING);
        if !self.live_path_but(p) && !r.quiesced {
            rq.quiesce();
            r.quiesced = true;
        }
        let pr = &mut r.paths[p];
        pr.since = Some(Instant::now());
        pr.due_ms = delay_ms(o);
        pr.attempts = 0;
        // Every queue of the path: their requests in flight requeued, as nvme-rdma's reset
        // cancels every I/O queue's.
        let mut i = 0;
        while let Some(q) = self.path_queue(p, i) {
            q.fail("reconnecting the path");
            i += 1;
        }
        pr_warn!(
            "rkdblk{}: connection lost (path {}, server {} port {}): reconnecting every {} s, giving up after {} s (ctrl_loss_tmo; -1: never)\n",
            self.index,
            p,
            Ip(o.server),
            o.port,
            o.reconnect_delay,
            o.ctrl_loss_tmo
        );
    }

    /// Path `p`'s part of the work; returns in how many ms it wants to run again.
    fn recover_path(&self, p: usize, r: &mut Recovery, rq: &RequestQueue<'_>) -> Option<i64> {
        let o = self.path_opts(p)?;
        match self.path_state(p) {
            LIVE if !self.path_live(p) => self.begin(p, r, rq, &o),
            CONNECTING => {}
            _ => return None,
        }
        let since = r.paths[p].since?;
        let elapsed = since.elapsed().as_millis();
        let tmo = i64::from(o.ctrl_loss_tmo) * 1000;
        if tmo >= 0 && elapsed >= tmo {
            self.set_path_state(p, FAILED);
            r.paths[p].since = None;
            pr_err!(
                "rkdblk{}: path {} (server {} port {}) not reconnected within ctrl_loss_tmo ({} s): it tries no more until `reconnect rkdblk{}`\n",
                self.index,
                p,
                Ip(o.server),
                o.port,
                o.ctrl_loss_tmo,
                self.index
            );
            return None;
        }
        let due = r.paths[p].due_ms;
        if elapsed < due {
            // Early (a queue's failure scheduled it): when due, or at the timeout.
            return Some(if tmo >= 0 { due.min(tmo) } else { due } - elapsed);
        }
        r.paths[p].attempts += 1;
        match self.connect_again(p, r, rq, &o) {
            Ok(_) => {
                self.set_path_state(p, LIVE);
                r.paths[p].since = None;
                pr_info!(
                    "rkdblk{}: reconnected {} queue(s) to server {} port {} (path {}) after {} attempt(s), {} ms\n",
                    self.index,
                    o.queues,
                    Ip(o.server),
                    o.port,
                    p,
                    r.paths[p].attempts,
                    since.elapsed().as_millis()
                );
                None
            }
            Err(e) => {
                let elapsed = since.elapsed().as_millis();
                r.paths[p].due_ms = elapsed + delay_ms(&o);
                pr_info!(
                    "rkdblk{}: reconnect attempt {} of path {} failed ({}); next in {} s\n",
                    self.index,
                    r.paths[p].attempts,
                    p,
                    e.to_errno(),
                    o.reconnect_delay
                );
                Some(if tmo >= 0 {
                    (tmo - elapsed).clamp(1, delay_ms(&o))
                } else {
                    delay_ms(&o)
                })
            }
        }
    }

    /// Sets the disk's state from its paths': `live` (dispatch resumed if it was stopped) if
    /// one is live, `connecting` if none is but one connects (its I/O failing once
    /// `fast_io_fail_tmo` passed), else it gives up. Returns in how many ms the work must run
    /// for `fast_io_fail_tmo`. Process context.
    pub(crate) fn settle(&self, r: &mut Recovery, rq: &RequestQueue<'_>) -> Option<i64> {
        if self.state() == DELETING {
            return None;
        }
        if self.live_path_but(MAX_PATHS) {
            self.state.store(LIVE, Ordering::Release);
            r.no_path_since = None;
            if core::mem::replace(&mut r.failfast, false) {
                // The failed queues of the paths still connecting requeue again (a request
                // that meets one while the live path fails must wait, not end with `EIO`).
                self.arm_all();
            }
            if core::mem::replace(&mut r.quiesced, false) {
                rq.unquiesce();
            }
            rq.kick_requeue_list();
        } else if (0..MAX_PATHS).any(|p| matches!(self.path_state(p), LIVE | CONNECTING)) {
            self.state.store(CONNECTING, Ordering::Release);
            return self.fail_fast(r, rq);
        } else if self.state() != FAILED {
            self.give_up(r, rq);
        }
        None
    }

    /// No path is live, one connects: once `fast_io_fail_tmo` seconds passed since the disk
    /// lost its last live path, the requeued and waiting requests, and every later one, fail
    /// with `EIO` while the paths go on reconnecting (nvme's `fast_io_fail_tmo`), until one is
    /// live again. Returns in how many ms that is due, if it is still to come. Process
    /// context.
    fn fail_fast(&self, r: &mut Recovery, rq: &RequestQueue<'_>) -> Option<i64> {
        let tmo = i64::from(self.opts.fast_io_fail_tmo) * 1000;
        if tmo < 0 || r.failfast {
            return None;
        }
        let elapsed = r
            .no_path_since
            .get_or_insert_with(Instant::now)
            .elapsed()
            .as_millis();
        if elapsed < tmo {
            return Some(tmo - elapsed);
        }
        r.failfast = true;
        pr_warn!(
            "rkdblk{}: no path reconnected within fast_io_fail_tmo ({} s): failing its I/O while it reconnects\n",
            self.index,
            self.opts.fast_io_fail_tmo
        );
        self.fail_requests(r, rq);
        None
    }

    /// Schedules the disk's work in `ms`. Any context.
    pub(crate) fn schedule(&self, ms: u32) {
        if let Some(w) = self.work.lock().as_ref() {
            w.schedule(ms);
        }
    }

    /// Runs the disk's work now, even if a run is pending for later (a path's next attempt):
    /// what made it due (a path lost, a path added) must not wait for that. Any context.
    pub(crate) fn schedule_now(&self) {
        if let Some(w) = self.work.lock().as_ref() {
            w.schedule_now();
        }
    }

    /// Connects path `p`'s queues anew and puts them in the old ones' place (the disk
    /// quiesced meanwhile); returns the new connection's parameters. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-EPROTO` if the server's accepts no longer fit the disk; the errors of the connection.
    pub(crate) fn connect_again(
        &self,
        p: usize,
        r: &mut Recovery,
        rq: &RequestQueue<'_>,
        o: &Opts,
    ) -> Result<DiskParams> {
        let l = Link::connect(self.index, o)?;
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
        // Quiesced: `queue_rq` uses a queue without the lock (and must never drop the last
        // reference to one, which sleeps), so the old ones go only once none is in use there.
        // Briefly, if another path carries I/O meanwhile.
        let old = if r.quiesced {
            self.replace(p, l.queues)
        } else {
            rq.quiesce();
            let old = self.replace(p, l.queues);
            rq.unquiesce();
            old
        };
        // Their requests in flight are requeued, and run on the new queues.
        for q in old.iter() {
            q.fail("reconnected");
        }
        teardown(&old);
        drop(old);
        r.paths[p].take_link(l.ia, l.pz);
        Ok(l.params)
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
        for qs in self.queues.lock().iter() {
            for q in qs.iter() {
                q.arm(&w);
            }
        }
    }

    /// Every path failed: the disk fails, the requests that wait end with `EIO`.
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
    /// stay failed and no longer requeue); dispatch resumes; no path tries any more. Process
    /// context.
    pub(crate) fn fail_waiting(&self, r: &mut Recovery, rq: &RequestQueue<'_>) {
        for pr in r.paths.iter_mut() {
            pr.since = None;
        }
        self.fail_requests(r, rq);
    }

    /// The requeued and waiting requests, and every later one, fail with `EIO` until new
    /// queues take the place of the failed ones; dispatch resumes. Process context.
    fn fail_requests(&self, r: &mut Recovery, rq: &RequestQueue<'_>) {
        for qs in self.queues.lock().iter() {
            for q in qs.iter() {
                q.requeue.store(false, Ordering::Release);
            }
        }
        if core::mem::replace(&mut r.quiesced, false) {
            rq.unquiesce();
        }
        rq.kick_requeue_list();
    }
}
