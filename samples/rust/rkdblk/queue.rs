// SPDX-License-Identifier: GPL-2.0

//! One hardware queue of a disk: its connection to the server ([`Queue::connect`]), the
//! commands it sends ([`Queue::submit`]), the completions and connection events of its EVD
//! ([`Queue::on_event`]), and its failure ([`Queue::fail`]).

use crate::block::mq::owned::{DiskWork, OwnedRequest, ReqOp, RequestPages};
use crate::{proto, Device};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
};
use rkdapl::api::{
    Dto, Ep, EpAttr, Evd, Event, EventType, Ia, Lmr, MemPriv, MemPrivs, Op, Pz, Rmr, SockAddr,
    UpcallPolicy,
};

const CONNECT_TIMEOUT_MS: u32 = 15_000;
/// Bytes per request at most, whatever the server allows.
pub(crate) const MAX_IO: u32 = 128 * 1024;
/// In-capsule bytes per request at most, whatever the server allows (rkdblk_srv's own limit).
const MAX_INLINE: u32 = 16 * 1024;
/// Cookies of the send queue's DTOs: a bind's completion matters only when it fails; a
/// SEND's (`COOKIE_SEND | tag`) also lets its request end.
const COOKIE_BIND: u64 = 1 << 32;
const COOKIE_SEND: u64 = 2 << 32;
const COOKIE_KIND: u64 = !0xffff_ffff;

mod complete;

/// A request of a disk of this module.
pub(crate) type Rq = OwnedRequest<Device>;

/// The rkdapl objects of one tag: made at connect, reused by each request of the tag.
///
/// A failed queue drops them ([`Queue::fail`]): `rmr` then ends a grant a failed request left
/// bound, which lets that request's pages go.
struct TagRes {
    /// Granted anew for each request over its pages, invalidated by the server's completion.
    rmr: Rmr,
    /// The command's bytes for the SEND.
    cmd: Lmr,
}

/// Where a tag's request is.
///
/// A request whose SEND sends its pages or follows a grant's bind ends once both its response
/// and its SEND's completion arrived, in either order (as nvme-rdma's requests do): its
/// pages and its RMR are in use until then. One whose SEND carries the command alone (an
/// in-capsule READ, a FLUSH) ends with its response: that SEND is posted with completion
/// suppress, and its context in the send queue comes back with a later completion (rkdapl
/// signals one when a quarter of the queue is left; a post that finds none free gets
/// `-ENOSPC` and the request comes back later).
enum State {
    Idle,
    InFlight {
        rq: Rq,
        cid: u32,
        /// The request's grant (0: none, a FLUSH or an in-capsule READ or WRITE).
        rkey: u32,
        /// A READ whose data comes back in-capsule, in the response's RECV buffer.
        inline_read: bool,
        /// The LMR over the request's pages that `rkey` grants; dropped when the response
        /// arrives (the server's invalidation ended the grant), which unmaps them once no DTO
        /// uses them any more. (An in-capsule WRITE's SEND holds its pages itself, mapped
        /// for it alone: `Ep::post_send_lent`.)
        pages: Option<Lmr>,
        /// Its SEND's completion arrived.
        sent: bool,
    },
    /// The response arrived (and a READ's data is in the request's pages); the request ends
    /// with `result` when its SEND's completion arrives.
    Answered {
        rq: Rq,
        result: Result,
    },
}

/// A request a completion answered, taken out of its slot ([`Queue::answer`]).
struct Answer {
    rq: Rq,
    result: Result,
}

/// What [`Queue::answer`] did with the request a completion answered.
enum Answered {
    /// Taken out of its slot: the caller ends it.
    Now(Answer),
    /// Left in its slot, [`State::Answered`], until its SEND's completion arrives.
    AfterSend,
}

struct Slot {
    generation: u16,
    state: State,
    /// `None` while `submit` prepares a request, and once the queue failed.
    res: Option<KBox<TagRes>>,
}

/// One hardware queue: one connection.
#[pin_data]
pub(crate) struct Queue {
    /// The disk's number (`rkdblkN`), for log lines.
    pub(crate) disk: u32,
    pub(crate) index: u32,
    /// The PZ of the per-request LMRs (every queue's).
    pz: Arc<Pz>,
    ep: Ep,
    evd: Evd,
    /// `depth` RECV buffers of `recv_len` bytes: completions, and in-capsule READs' data.
    resp: Lmr,
    recv_len: u32,
    max_io: u32,
    /// Writes of at most this many bytes go in-capsule (0: none), if their pages and the
    /// command fit one SEND.
    inline_max: u32,
    /// SGEs one SEND holds: the IA's `max_iov` (1 with siw).
    send_sges: u32,
    /// READs of at most this many bytes come back in-capsule (0: none).
    inline_read_max: u32,
    /// The server may send several completions in one SEND ([`proto::ACCEPT_COALESCE`]).
    coalesce: bool,
    /// Requests sent and waiting for their completions ([`State::InFlight`]); changed under
    /// `slots`' lock, read without it for the commands' [`proto::FLAG_COALESCE`] hint.
    awaiting: AtomicU32,
    /// Set once the queue failed: every request from then on fails (or is requeued).
    pub(crate) dead: AtomicBool,
    /// A failure requeues the requests ([`Queue::abort`]) instead of failing them with `EIO`:
    /// the disk reconnects by itself (`recover.rs`).
    pub(crate) requeue: AtomicBool,
    /// The disk's work, scheduled when the queue fails (`recover.rs`); `None` until the disk
    /// is added.
    #[pin]
    recovery: SpinLock<Option<Arc<DiskWork>>>,
    pub(crate) completed: AtomicU64,
    /// Requests whose own pages were granted (zero copy).
    pub(crate) granted: AtomicU64,
    /// Requests requeued because the send queue had no free context (`-ENOSPC`).
    pub(crate) send_queue_full: AtomicU64,
    #[pin]
    slots: SpinLock<KVec<Slot>>,
}

impl Queue {
    /// Connects queue `index` of disk number `disk` to the server at `to` asking for `want`
    /// credits, for the export whose name's [`proto::nqn_hash`] is `nqn` (0: any; a server
    /// that names another export refuses it with `-ENXIO`); returns the queue (its RECVs
    /// posted, its upcall set) and the server's accept.
    pub(crate) fn connect(
        ia: &Ia,
        pz: &Arc<Pz>,
        (from, to): (Option<&SockAddr>, &SockAddr),
        (disk, index): (u32, u32),
        want: u32,
        nqn: u32,
    ) -> Result<(Arc<Queue>, proto::Accept)> {
        let evd = Evd::new(ia, 4 * want + 16)?;
        let attr = EpAttr {
            // A request takes an RMR bind and a SEND, and most end only once the SEND
            // completed (`State`): 2 per tag; 3 as nvme-rdma sizes its send queue. The third
            // is room for the suppressed SENDs a later completion finishes, not a bound:
            // `submit` requeues a request whose SEND finds no slot.
            max_request_dtos: (3 * want).min(4096),
            max_recv_dtos: want,
            // An in-capsule write's SEND: the command, then the request's pages, at most one
            // piece per page the data touches (no gaps inside a page: `Disk`).
            max_request_iov: 2 + MAX_INLINE.div_ceil(4096),
            max_recv_iov: 1,
            ..EpAttr::default()
        };
        let ep = Ep::with_attr(pz, &evd, &evd, &attr)?;
        let flags = proto::CONNECT_INLINE_READ | proto::CONNECT_COALESCE;
        let pdata = proto::connect(index as u16, want as u16, flags, nqn);
        match from {
            // `host_traddr`: the connection leaves from that address.
            Some(from) => ep.connect_from(from, to, CONNECT_TIMEOUT_MS, &pdata)?,
            None => ep.connect(to, CONNECT_TIMEOUT_MS, &pdata)?,
        }
        let ev = evd.wait(CONNECT_TIMEOUT_MS)?;
        if let Some(why) = ev
            .reject_reason()
            .and_then(|_| proto::reject(ev.private_data()))
        {
            pr_err!(
                "rkdblk{} queue {}: the server refused the connection: {}\n",
                disk,
                index,
                why.text()
            );
            return Err(why.errno());
        }
        if ev.kind() != EventType::Established {
            pr_err!(
                "rkdblk{} queue {}: connect: event {:?} status {}\n",
                disk,
                index,
                ev.kind(),
                ev.status()
            );
            return Err(ECONNREFUSED);
        }
        let acc = proto::accept(ev.private_data()).ok_or_else(|| {
            pr_err!(
                "rkdblk{} queue {}: the server's accept is not rkdblk's\n",
                disk,
                index
            );
            EPROTO
        })?;
        let qdepth = u32::from(acc.depth).min(want);
        let send_sges = ia.query()?.max_iov;
        let max_io = acc.max_io.min(MAX_IO);
        let inline_max = acc.inline_max.min(max_io).min(MAX_INLINE);
        let inline_read_max = if acc.inline_read { inline_max } else { 0 };
        // Every RECV takes the completions one SEND carries, or an in-capsule READ's data.
        let recv_len = inline_read_max.max((proto::RESP_LEN * proto::COALESCE_MAX) as u32);
        let resp = Lmr::alloc(pz, (qdepth * recv_len) as usize, MemPriv::LocalWrite)?;
        let mut slots = KVec::with_capacity(qdepth as usize, GFP_KERNEL)?;
        for _ in 0..qdepth {
            let res = TagRes {
                rmr: Rmr::new(pz)?,
                cmd: Lmr::alloc(pz, proto::CMD_LEN, MemPriv::LocalWrite)?,
            };
            slots.push(
                Slot {
                    generation: 0,
                    state: State::Idle,
                    res: Some(KBox::new(res, GFP_KERNEL)?),
                },
                GFP_KERNEL,
            )?;
        }
        for i in 0..qdepth {
            let seg = resp.segment(u64::from(i * recv_len), recv_len.into());
            ep.post_recv(&[seg], u64::from(i))?;
        }
        let q = Arc::pin_init(
            pin_init!(Queue {
                disk,
                index,
                pz: pz.clone(),
                ep,
                evd,
                resp,
                recv_len,
                max_io,
                inline_max,
                send_sges,
                inline_read_max,
                coalesce: acc.coalesce,
                awaiting: AtomicU32::new(0),
                dead: AtomicBool::new(false),
                requeue: AtomicBool::new(false),
                recovery <- new_spinlock!(None, "rkdblk_recovery"),
                completed: AtomicU64::new(0),
                granted: AtomicU64::new(0),
                send_queue_full: AtomicU64::new(0),
                slots <- new_spinlock!(slots, "rkdblk_slots"),
            }),
            GFP_KERNEL,
        )?;
        let me = q.clone();
        q.evd
            .set_upcall(UpcallPolicy::SingleInstance, move |ev: &mut Event| {
                me.on_event(ev)
            })?;
        Ok((
            q,
            proto::Accept {
                depth: qdepth as u16,
                max_io,
                capacity: acc.capacity,
                inline_max,
                read_only: acc.read_only,
                inline_read: inline_read_max != 0,
                nqn_checked: acc.nqn_checked,
                coalesce: acc.coalesce,
            },
        ))
    }

    /// Fails the queue: the connection is cut, every request in flight is requeued if the disk
    /// reconnects by itself ([`Queue::abort`]) or ends with `EIO`, and so is every later one;
    /// a request already answered ends with its answer. A request whose pages a grant still
    /// covers goes once that grant is gone: the tags' RMRs are freed here (their MRs
    /// deregistered, so no rkey reaches the pages any more), as is the RMR of a request
    /// `submit` was preparing. Process context (the disk's work, blk-mq's timeout work, a
    /// reconnect, the disk's removal), not the upcall; may sleep (the disconnect, the RMRs'
    /// deregistration).
    pub(crate) fn fail(&self, why: &str) {
        self.set_dead(why);
        // A connected QP goes to the error state first (`rdma_disconnect`): it executes no more
        // of the peer's RDMA. (A QP that failed or lost its connection is there already.) What
        // keeps a request's pages from the peer for good is below: freeing an RMR deregisters
        // its MR before it lets go of the LMR (`rkdapl`'s `Rmr` drop order), and only then are
        // the pages unmapped and the request ended.
        let _ = self.ep.disconnect();
        // One at a time, each ended outside the lock (ending may submit new I/O, and the
        // objects' drops sleep).
        loop {
            let taken = self.slots.lock().iter_mut().find_map(|slot| {
                let res = slot.res.take();
                match core::mem::replace(&mut slot.state, State::Idle) {
                    State::InFlight { rq, pages, .. } => {
                        self.awaiting.fetch_sub(1, Ordering::Relaxed);
                        Some((Some((rq, None)), pages, res))
                    }
                    State::Answered { rq, result } => Some((Some((rq, Some(result))), None, res)),
                    State::Idle => res.map(|r| (None, None, Some(r))),
                }
            });
            let Some((rq, pages, res)) = taken else {
                break;
            };
            match rq {
                // Answered: it ends with its answer (its pages were let go with its response).
                Some((rq, Some(result))) => {
                    self.completed.fetch_add(1, Ordering::Relaxed);
                    rq.end(result);
                }
                // Back to blk-mq (or ended) once the drops below let its pages go.
                Some((rq, None)) => self.abort(rq),
                None => {}
            }
            // The LMR first (it goes with the grant's end), then the RMR, whose free ends it.
            drop(pages);
            drop(res);
        }
        self.recover();
    }

    /// Ends `rq` with `EIO`, or requeues it (once its pages are let go) if the disk reconnects
    /// by itself ([`Queue::requeue`]). Any context.
    fn abort(&self, rq: Rq) {
        if self.requeue.load(Ordering::Acquire) {
            rq.requeue_later();
            // The disk's work stops dispatch (unless another path is live) and reconnects.
            self.recover();
        } else {
            rq.end(Err(EIO));
        }
    }

    /// Gives back `rq`, which came to this queue after it failed: requeued after a short delay
    /// if the disk reconnects by itself, or ended with `EIO`. `queue_rq` picks a failed queue
    /// only while no path is live, and the disk's work may be busy connecting another path
    /// for seconds: requeued at once, the request would come straight back here in a loop
    /// (nvme-rdma returns `BLK_STS_RESOURCE` for a reconnecting controller, which blk-mq runs
    /// again after the same delay). The work's kick when a path is live runs it at once.
    /// Any context.
    fn park(&self, rq: Rq) {
        if self.requeue.load(Ordering::Acquire) {
            rq.requeue_delayed();
            self.recover();
        } else {
            rq.end(Err(EIO));
        }
    }

    /// Lets a failure of this queue requeue its requests and schedule the disk's `work`,
    /// which reconnects it (`recover.rs`). Any context.
    pub(crate) fn arm(&self, work: &Arc<DiskWork>) {
        *self.recovery.lock() = Some(work.clone());
        self.requeue.store(true, Ordering::Release);
        // Failed before it was armed (its `fail` found no work to schedule): the work runs
        // now. (A `fail` after the store above finds the work itself.)
        if self.dead.load(Ordering::Acquire) {
            work.schedule_now();
        }
    }

    /// Schedules the disk's recovery work, if the queue is armed ([`Queue::arm`]). Any context.
    fn recover(&self) {
        if let Some(w) = self.recovery.lock().as_ref() {
            w.schedule_now();
        }
    }

    /// Stops the queue's upcall (which holds the queue) and disconnects it; every later request
    /// fails (none is requeued any more). Process context.
    pub(crate) fn stop(&self) {
        self.dead.store(true, Ordering::Release);
        self.requeue.store(false, Ordering::Release);
        *self.recovery.lock() = None;
        let _ = self.evd.clear_upcall();
        let _ = self.ep.disconnect();
    }

    /// Sets the queue dead; the first time, logs `why`. Any context.
    fn set_dead(&self, why: &str) {
        if !self.dead.swap(true, Ordering::AcqRel) {
            pr_err!(
                "rkdblk{} queue {}: {}: failing its requests\n",
                self.disk,
                self.index,
                why
            );
        }
    }

    /// Marks the queue failed, for `queue_rq` and the upcall, which may not sleep: no request
    /// starts on it any more. The connection, the requests in flight and the tags' objects go
    /// with the next [`Queue::fail`]: the disk's work, which this schedules once the queue is
    /// armed ([`Queue::arm`]: it finds the path no longer live), blk-mq's timeout of a
    /// request of the queue ([`Device::timeout`]), a reconnect or the disk's removal. Any
    /// context.
    pub(crate) fn mark_failed(&self, why: &str) {
        self.set_dead(why);
        self.recover();
    }

    /// Whether a request of `tag` is in flight on this queue (sent, or answered and waiting for
    /// its SEND's completion). Any context.
    pub(crate) fn holds(&self, tag: u32) -> bool {
        self.slots
            .lock()
            .get(tag as usize)
            .is_some_and(|s| matches!(s.state, State::InFlight { .. } | State::Answered { .. }))
    }

    /// Sends `rq` to the server. Any context: nothing here sleeps (the LMR over the request's
    /// pages is made with `GFP_ATOMIC`, the grant's bind and the SEND only post), and a
    /// failure here only marks the queue failed ([`Queue::mark_failed`]).
    pub(crate) fn submit(&self, mut rq: Rq) {
        let op = match rq.op() {
            ReqOp::Read => proto::OP_READ,
            ReqOp::Write => proto::OP_WRITE,
            ReqOp::Flush => proto::OP_FLUSH,
            ReqOp::Other => return rq.end(Err(EOPNOTSUPP)),
        };
        let len = if op == proto::OP_FLUSH { 0 } else { rq.bytes() };
        let tag = rq.tag() as usize;
        if len > self.max_io {
            return rq.end(Err(EIO));
        }
        if self.dead.load(Ordering::Acquire) {
            return self.park(rq);
        }
        let (res, generation) = match self.slots.lock().get_mut(tag) {
            Some(slot) => {
                slot.generation = slot.generation.wrapping_add(1);
                (slot.res.take(), slot.generation)
            }
            None => (None, 0),
        };
        let Some(mut res) = res else {
            return self.park(rq);
        };
        let cid = proto::cid(tag as u32, generation);
        // In-capsule, no grant: a WRITE's data goes in its SEND, a READ's comes back in the
        // response.
        let mut inline = false;
        let inline_read = op == proto::OP_READ && len <= self.inline_read_max;
        let mut grant = None;
        let mut pages = None;
        let mut lent = None;
        let r = &mut *res;
        let prepared: Result = (|| {
            let data = if op != proto::OP_FLUSH && !inline_read {
                Some(rq.pages().ok_or(EIO)?)
            } else {
                None
            };
            // In-capsule if the command and the request's pages fit one SEND's SGEs (siw's
            // SEND holds one: never there).
            let fits = |p: &RequestPages<Device>| p.nents() < self.send_sges as usize;
            if op == proto::OP_WRITE && len <= self.inline_max && data.as_ref().is_some_and(fits) {
                // The SEND sends from the request's own pages, lent to it alone: mapped for
                // the device to read with the PZ's local DMA lkey, no LMR, no grant
                // (`Ep::post_send_lent`); the SEND lets them go when it finishes.
                inline = true;
                lent = data;
            } else if let Some(lent) = data {
                // The server writes a READ's data into the pages, and reads a WRITE's.
                let (privileges, rights) = if op == proto::OP_READ {
                    (
                        MemPriv::LocalWrite | MemPriv::RemoteWrite,
                        MemPrivs::from(MemPriv::RemoteWrite),
                    )
                } else {
                    (
                        MemPrivs::from(MemPriv::RemoteRead),
                        MemPrivs::from(MemPriv::RemoteRead),
                    )
                };
                let lmr = pages.insert(Lmr::from_sg_owner_gfp(
                    &self.pz, lent, privileges, GFP_ATOMIC,
                )?);
                // No event when it succeeds: the command's SEND follows on the same EP, and
                // its completion is the one this queue waits for (a failed bind still
                // reports, and fails the queue).
                grant = Some(r.rmr.bind_suppressed(
                    lmr,
                    0,
                    len.into(),
                    rights,
                    &self.ep,
                    COOKIE_BIND,
                )?);
            }
            let mut flags = if rq.fua() { proto::FLAG_FUA } else { 0 };
            if inline || inline_read {
                flags |= proto::FLAG_INLINE;
            }
            // Others are waiting for their completions: this one's may go out with theirs.
            if self.coalesce && self.awaiting.load(Ordering::Relaxed) != 0 {
                flags |= proto::FLAG_COALESCE;
            }
            let cmd = proto::Cmd {
                op,
                flags,
                cid,
                sector: rq.sector(),
                length: len,
                rkey: grant.map_or(0, |g| g.rkey),
                address: grant.map_or(0, |g| g.address),
            };
            r.cmd.write(0, &cmd.encode())
        })();
        let mut slots = self.slots.lock();
        let dead = self.dead.load(Ordering::Acquire);
        // Back in its slot even if the queue failed meanwhile: `fail` frees the tags' objects
        // (an RMR's free sleeps), and with a grant's the pages.
        let Some(slot) = slots.get_mut(tag) else {
            return rq.end(Err(EIO));
        };
        slot.res = Some(res);
        if dead {
            drop(slots);
            drop(pages);
            drop(lent);
            // If `fail` ran before this tag's objects were back, the next one frees them.
            return self.park(rq);
        }
        if let Err(e) = prepared {
            drop(slots);
            // The LMR goes now unless a grant keeps it; with it, the pages' hold on `rq`.
            drop(pages);
            drop(lent);
            if grant.is_some() {
                // Bound but never sent: the RMR cannot be bound again; the queue is done (and
                // frees the RMR, which lets the pages go).
                self.mark_failed("a request's grant left bound");
                return self.abort(rq);
            } else if e == ENOMEM {
                // `GFP_ATOMIC` found no memory: the request comes back later, as nvme-rdma's
                // `BLK_STS_RESOURCE` does.
                return match rq.requeue() {
                    Ok(()) => (),
                    Err(rq) => rq.end(Err(ENOMEM)),
                };
            } else if e == ENOSPC {
                // The bind found every context of the send queue in use (see the SEND's
                // `ENOSPC` below).
                self.send_queue_full.fetch_add(1, Ordering::Relaxed);
                return rq.requeue_delayed();
            }
            if e != ENODEV {
                // Refused for what it is (a request the queue can never send): it ends with
                // the error, as it would on every path.
                return rq.end(Err(e));
            }
            // The queue's objects refused (`ENODEV` while its device is being removed, before
            // the connection's loss is reported): a path error, as nvme-rdma's
            // `nvme_host_path_error()`. The queue is done, and the request runs on another
            // path or after the reconnect (or ends with `EIO` once the disk gave up).
            pr_warn!(
                "rkdblk{} queue {}: a request not prepared ({})\n",
                self.disk,
                self.index,
                e.to_errno()
            );
            self.mark_failed("a request not prepared");
            return self.abort(rq);
        }
        // A SEND of the command alone (an in-capsule READ, a FLUSH: no pages lent to it, no
        // grant bound before it) is posted with completion suppress: the response means it
        // arrived, and its buffer is the tag's, reused only after the response. rkdapl posts
        // it unsignalled (`DtoFlags::suppress`), so no work completion is polled for it, and
        // the request ends with its response alone. The others are waited for (`State`).
        let quiet = lent.is_none() && grant.is_none();
        self.awaiting.fetch_add(1, Ordering::Relaxed);
        slot.state = State::InFlight {
            rq,
            cid,
            rkey: grant.map_or(0, |g| g.rkey),
            inline_read,
            pages,
            sent: quiet,
        };
        if grant.is_some() {
            self.granted.fetch_add(1, Ordering::Relaxed);
        }
        // Posted under the lock: the completion cannot be matched before the slot is filled.
        let cookie = COOKIE_SEND | tag as u64;
        let lent_send = lent.is_some();
        let posted = match slot.res.as_deref() {
            Some(r) => {
                let cmd = [r.cmd.segment(0, proto::CMD_LEN as u64)];
                match lent {
                    // The command, then the data from the request's pages.
                    Some(p) => self.ep.post_send_lent(&cmd, p, cookie),
                    None => {
                        let mut d = Dto::new(Op::Send, &cmd, cookie);
                        d.flags.suppress = quiet;
                        self.ep.post(&[d]).map_err(|(e, _)| e)
                    }
                }
            }
            None => Err(EIO),
        };
        match posted {
            Ok(()) => drop(slots),
            // Every context of the send queue was in use: suppressed SENDs hold theirs until a
            // later completion (rkdapl signals one when a quarter of the queue is left). Nothing
            // was posted; the request comes back 3 ms later, as for `BLK_STS_RESOURCE`.
            Err(e) if e == ENOSPC && grant.is_none() => {
                let st = core::mem::replace(&mut slot.state, State::Idle);
                self.awaiting.fetch_sub(1, Ordering::Relaxed);
                drop(slots);
                self.send_queue_full.fetch_add(1, Ordering::Relaxed);
                if let State::InFlight { rq, .. } = st {
                    rq.requeue_delayed();
                }
            }
            // The lent SEND found no memory for its mapping (or the DMA mapping failed):
            // nothing was posted and its pages are the request's again, which comes back
            // later, as nvme-rdma's `BLK_STS_RESOURCE` (the queue is fine).
            Err(e) if lent_send && (e == ENOMEM || e == EIO) => {
                let st = core::mem::replace(&mut slot.state, State::Idle);
                self.awaiting.fetch_sub(1, Ordering::Relaxed);
                drop(slots);
                if let State::InFlight { rq, .. } = st {
                    if let Err(rq) = rq.requeue() {
                        rq.end(Err(ENOMEM));
                    }
                }
            }
            Err(_) => {
                drop(slots);
                self.mark_failed("a command not posted");
            }
        }
    }
}
