// SPDX-License-Identifier: GPL-2.0

//! Multipath: a disk over up to [`MAX_PATHS`] paths, as nvme's native multipath has a
//! namespace over several controllers. A path is one set of queues (one connection per
//! hardware queue) from its own `host_traddr` to its own `traddr`/`trsvcid`, with its own state
//! and its own reconnect loop (`recover.rs`). A `connect` with `nqn=` joins the disk that has
//! that `nqn=` already as its next path ([`Device::add_path`]); without one, or with an `nqn=`
//! no disk has, it makes a new disk.
//!
//! `queue_rq` sends each request on the next live path in turn (nvme's `round-robin` I/O
//! policy, [`Device::pick`]). When a path fails its requests are requeued (`Queue::fail`) and
//! run on a live one at once, while the path reconnects by itself; only when no path is live
//! does the disk stop dispatch and wait (`ctrl_loss_tmo`), as a disk of one path does.

use crate::{
    disk::{teardown, Ip, Link, Opts},
    queue::Queue,
    recover::{CONNECTING, DELETING, FAILED, LIVE},
    Device,
};
use core::fmt::Write;
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use kernel::{prelude::*, sync::Arc};

/// Paths of a disk at most.
pub(crate) const MAX_PATHS: usize = 2;

/// [`PathState::state`] of a path a disk does not have.
pub(crate) const ABSENT: u8 = 4;

/// One path's state and counters, read without a lock.
pub(crate) struct PathState {
    /// [`LIVE`], [`CONNECTING`], [`FAILED`] or [`ABSENT`].
    pub(crate) state: AtomicU8,
    /// Requests `queue_rq` sent on the path (each dispatch: a requeued request counts again).
    pub(crate) requests: AtomicU64,
}

impl PathState {
    pub(crate) const fn new() -> PathState {
        PathState {
            state: AtomicU8::new(ABSENT),
            requests: AtomicU64::new(0),
        }
    }
}

impl Device {
    /// Path `p`'s state. Any context.
    pub(crate) fn path_state(&self, p: usize) -> u8 {
        self.paths[p].state.load(Ordering::Acquire)
    }

    /// Sets path `p`'s state. Any context.
    pub(crate) fn set_path_state(&self, p: usize, s: u8) {
        self.paths[p].state.store(s, Ordering::Release);
    }

    /// Path `p`'s options, `None` if the disk has no such path. Any context.
    pub(crate) fn path_opts(&self, p: usize) -> Option<Opts> {
        self.path_opts.lock()[p]
    }

    /// Whether path `p` exists, is live and none of its queues failed. Any context.
    pub(crate) fn path_live(&self, p: usize) -> bool {
        if self.path_state(p) != LIVE {
            return false;
        }
        let qs = self.queues.lock();
        !qs[p].is_empty() && qs[p].iter().all(|q| !q.dead.load(Ordering::Relaxed))
    }

    /// Whether a path other than `but` (`MAX_PATHS`: any) is live. Any context.
    pub(crate) fn live_path_but(&self, but: usize) -> bool {
        (0..MAX_PATHS).any(|p| p != but && self.path_live(p))
    }

    /// The queue of hardware context `hctx` of path `p`. Any context.
    pub(crate) fn path_queue(&self, p: usize, hctx: usize) -> Option<Arc<Queue>> {
        self.queues.lock()[p].get(hctx).cloned()
    }

    /// The queues of hardware context `hctx` of every path. Any context.
    pub(crate) fn queues_of(&self, hctx: u32) -> [Option<Arc<Queue>>; MAX_PATHS] {
        let qs = self.queues.lock();
        core::array::from_fn(|p| qs[p].get(hctx as usize).cloned())
    }

    /// Puts `qs` in the place of path `p`'s queues, which it returns. Any context.
    pub(crate) fn replace(&self, p: usize, qs: KVec<Arc<Queue>>) -> KVec<Arc<Queue>> {
        core::mem::replace(&mut self.queues.lock()[p], qs)
    }

    /// The queue `queue_rq` sends a request of `hctx` on, and its path: the next live path's
    /// in turn (round-robin); with no path live, the first path's, whose `submit` requeues the
    /// request (the disk reconnects) or ends it with `EIO` (it gave up). Any context.
    pub(crate) fn pick(&self, hctx: u32) -> Option<(usize, Arc<Queue>)> {
        let qs = self.queues.lock();
        let i = hctx as usize;
        let start = if qs[1..].iter().all(|q| q.is_empty()) {
            0
        } else {
            self.next.fetch_add(1, Ordering::Relaxed) as usize
        };
        for k in 0..MAX_PATHS {
            let p = (start + k) % MAX_PATHS;
            if let Some(q) = qs[p].get(i) {
                if self.path_state(p) == LIVE && !q.dead.load(Ordering::Relaxed) {
                    return Some((p, q.clone()));
                }
            }
        }
        // No live path: a connecting path's queue, which requeues the request until the path
        // is back (a failed path's would end it with `EIO` while another path still tries).
        let queue_of = |p: usize| qs[p].get(i).map(|q| (p, q.clone()));
        (0..MAX_PATHS)
            .filter(|&p| self.path_state(p) != FAILED)
            .find_map(queue_of)
            .or_else(|| (0..MAX_PATHS).find_map(queue_of))
    }

    /// A path's state's name: `live`, `connecting` (also a live path one of whose queues
    /// failed a moment ago: the work runs next), `failed`. Any context.
    pub(crate) fn path_state_name(&self, p: usize) -> &'static str {
        match self.path_state(p) {
            LIVE if self.path_live(p) => "live",
            LIVE | CONNECTING => "connecting",
            FAILED => "failed",
            _ => "none",
        }
    }

    /// Connects `o`'s path and adds it to the disk as its next path (a `connect` with the
    /// disk's `nqn=`). Its queues take I/O at once. Process context; sleeps (for the server,
    /// up to 15 s per queue).
    ///
    /// # Errors
    ///
    /// `-ENOSPC` if the disk has [`MAX_PATHS`] paths; `-EALREADY` if one has the same `traddr`,
    /// `trsvcid` and `host_traddr`; `-EINVAL` if `nr_io_queues` is not the disk's; `-EPROTO` if
    /// the server's accepts do not fit the disk (another capacity or read-only flag, a smaller
    /// depth or request size: not the same export); `-ENODEV` if the disk is being deleted;
    /// the errors of the connection (see `ctl.rs`).
    pub(crate) fn add_path(&self, o: &Opts) -> Result<usize> {
        // Serialises with the work, a `reconnect` and the disk's deletion.
        let mut g = self.link.lock();
        let r = (*g).as_mut().ok_or(ENODEV)?;
        let paths = *self.path_opts.lock();
        let same = |x: &Opts| x.server == o.server && x.port == o.port && x.local == o.local;
        if paths.iter().flatten().any(same) {
            pr_warn!(
                "rkdblk{}: nqn={}: a path from {} to {} port {} exists already\n",
                self.index,
                o.nqn,
                Ip(o.local.unwrap_or(o.server)),
                Ip(o.server),
                o.port
            );
            return Err(EALREADY);
        }
        let Some(p) = paths.iter().position(|x| x.is_none()) else {
            pr_warn!(
                "rkdblk{}: nqn={}: the disk has {} paths already (the most)\n",
                self.index,
                o.nqn,
                MAX_PATHS
            );
            return Err(ENOSPC);
        };
        if o.queues != self.opts.queues {
            pr_warn!(
                "rkdblk{}: nqn={}: nr_io_queues={}, the disk has {}\n",
                self.index,
                o.nqn,
                o.queues,
                self.opts.queues
            );
            return Err(EINVAL);
        }
        let l = Link::connect(self.index, o)?;
        if !r.fits(self.index, &l.params) || l.params.read_only != r.params.read_only {
            pr_err!(
                "rkdblk{}: nqn={}: {} port {} is not the same export: path refused\n",
                self.index,
                o.nqn,
                Ip(o.server),
                o.port
            );
            teardown(&l.queues);
            return Err(EPROTO);
        }
        if self.state() == DELETING {
            teardown(&l.queues);
            return Err(ENODEV);
        }
        self.arm(&l.queues);
        self.path_opts.lock()[p] = Some(*o);
        // An empty place: no `queue_rq` uses what it replaces.
        drop(self.replace(p, l.queues));
        r.paths[p].take_link(l.ia, l.pz);
        self.set_path_state(p, LIVE);
        pr_info!(
            "rkdblk{}: path {} added: {} queue(s) to server {} port {} (nqn={})\n",
            self.index,
            p,
            o.queues,
            Ip(o.server),
            o.port,
            o.nqn
        );
        drop(g);
        // The work resumes dispatch if no path was live (it unquiesces the disk), now.
        self.schedule_now();
        Ok(p)
    }

    /// `/sys/block/rkdblkN/paths`: a line per path, `P STATE REQUESTS ADDRESS`, as
    /// `0 live 1234 traddr=10.77.0.1,trsvcid=4421,host_traddr=10.77.0.1`. Process context.
    pub(crate) fn show_paths(&self, f: &mut impl Write) -> core::fmt::Result {
        for p in 0..MAX_PATHS {
            let Some(o) = self.path_opts(p) else {
                continue;
            };
            write!(
                f,
                "{} {} {} traddr={},trsvcid={}",
                p,
                self.path_state_name(p),
                self.paths[p].requests.load(Ordering::Relaxed),
                o.server,
                o.port
            )?;
            if let Some(local) = o.local {
                write!(f, ",host_traddr={}", local)?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
