// SPDX-License-Identifier: GPL-2.0

//! rkdapl_rust_perf: the client of `samples/rkdapl_perf/` (C, over `include/rkdapl.h`) written
//! on rkdapl's Rust API ([`rkdapl::api`]), so that `make bench` measures a Rust consumer's
//! DTOs beside a C consumer's and raw verbs'.
//!
//! ```text
//!   insmod rkdapl_rust_perf.ko
//!   # echo "client addr=10.77.0.1 port=7700 op=write kind=bw size=64 iters=1000 txdepth=16" \
//!         > /sys/kernel/debug/rkdapl_rust_perf/ctl
//!   # cat /sys/kernel/debug/rkdapl_rust_perf/result
//! ```
//!
//! The commands, keys, result line and wire protocol are those of `samples/perf_common.h`; the
//! result line says `tool=rkdapl-rust`. Its peer is a `rkdapl_perf` server (the same wire
//! protocol; this module has no server of its own), so for `op=send` the receiving side is the
//! C consumer's. The client does what `rkdapl_perf`'s does: connect, send the hello, read the
//! advert, then `iters` DTOs with `txdepth` in flight (`kind=bw`) or one at a time
//! (`kind=lat`), posted on a typed EP ([`TypedEp::post`] of one DTO, or
//! [`TypedEp::post_chain`] of `batch=N` DTOs as one chain) inside the same timed bracket
//! (interrupts off, two clock reads around the post call), every `signal`-th DTO signalled.
//! What it does not take: `mode=poll` (the kernel's Rust API has no `cond_resched()` for a
//! spinning task), `cq=`, `inline=` and `buf=sparse` (`-EINVAL`), nor `ceiling` and `server`
//! (`-EINVAL`: `rkdapl_perf` has them).
//!
//! Completions come back as the Rust API's typed EPs give them: straight to the EP's handler
//! ([`Counter`], an [`EpHandler`]) in the completion context, without an EVD. Its DTOs carry
//! no context (`()`, nothing to allocate): it counts them in posting order, records when each
//! signalled one completed (so `lat_med_us` ends at the completion, not at the client's
//! wake-up), and wakes the client only when the client sleeps. Connection events go to an
//! EVD, which the client waits on to connect and disconnect.

use completion::{left_ms, Counter, Progress};
use core::fmt::Write as _;
use core::sync::atomic::Ordering;
use kernel::{
    alloc::KVVec,
    debugfs::{Dir, File},
    fmt,
    interrupt::local_interrupt_disable,
    new_mutex,
    prelude::*,
    str::CString,
    sync::{Arc, Mutex},
    time::{delay::fsleep, Delta, Instant, Monotonic},
    uaccess::UserSliceReader,
};
use rkdapl::api::{
    EpAttr, Evd, Event, EventType, Ia, Lmr, MemPriv, MemPrivs, Op, Pz, RemoteRegion, SockAddr,
    TypedDto, TypedEp,
};

#[path = "rkdapl_rust_perf/completion.rs"]
mod completion;

module! {
    type: RustPerf,
    name: "rkdapl_rust_perf",
    authors: ["rkdapl developers"],
    description: "rkdapl perf: RDMA WRITE/READ/SEND bandwidth and latency over rkdapl's Rust API",
    license: "GPL",
    imports_ns: ["RKDAPL"],
}

const OWNER: &CStr = c"rkdapl_rust_perf";
const TOOL: &str = "rkdapl-rust";
/// "rpf1", the first field of every wire message.
const MAGIC: u32 = 0x7270_6631;
const MAX_SIZE: u32 = 4 << 20;
const MAX_ITERS: u32 = 1_000_000;
const MAX_TXDEPTH: u32 = 256;
const MAX_BATCH: usize = 32;
/// The control message buffers; the message itself (`struct perf_msg`) has `MSG_LEN` bytes.
const MSG_BYTES: u64 = 64;
const MSG_LEN: usize = 48;
const LINE_MAX: usize = 384;

// The wire values of `enum perf_op`, `enum perf_kind` and `enum perf_mode`.
const OP_WRITE: u32 = 1;
const OP_READ: u32 = 2;
const OP_SEND: u32 = 3;
const OP_STOP: u32 = 4;
const KIND_BW: u32 = 1;
const KIND_LAT: u32 = 2;
const MODE_EVENT: u32 = 2;
const OP_NAMES: [&str; 4] = ["write", "read", "send", "stop"];
const KIND_NAMES: [&str; 2] = ["bw", "lat"];

/// A client command (`client ...` of `samples/perf_common.h`).
struct Args {
    dev: CString,
    addr: u32,
    port: u16,
    op: u32,
    kind: u32,
    size: u32,
    iters: u32,
    txdepth: u32,
    signal: u32,
    batch: u32,
    timeout_ms: u32,
}

impl Args {
    /// The signalling interval: latency runs signal every DTO.
    fn signal(&self) -> u32 {
        if self.kind == KIND_LAT {
            1
        } else {
            self.signal
        }
    }

    /// Whether DTO `i` is signalled: every `signal`-th one, and the last.
    fn signalled(&self, i: u32) -> bool {
        (i + 1).checked_rem(self.signal()) == Some(0) || i + 1 >= self.iters
    }

    /// Whether the client may post now: a whole batch (or the rest) fits in the window.
    fn may_post(&self, posted: u32, done: u32, depth: u32, batch: u32) -> bool {
        posted < self.iters && posted - done + batch.min(self.iters - posted) <= depth
    }
}

fn number(v: &str, min: u32, max: u32) -> Result<u32> {
    let n = v.parse::<u32>().map_err(|_| EINVAL)?;
    if n < min || n > max {
        return Err(ERANGE);
    }
    Ok(n)
}

fn lookup(names: &[&str], v: &str) -> Result<u32> {
    let i = names.iter().position(|n| *n == v).ok_or(EINVAL)?;
    Ok(i as u32 + 1)
}

/// A dotted IPv4 address, host order.
fn ipv4(v: &str) -> Result<u32> {
    let mut addr = 0u32;
    let mut parts = 0;
    for p in v.split('.') {
        let b = p.parse::<u8>().map_err(|_| EINVAL)?;
        addr = (addr << 8) | u32::from(b);
        parts += 1;
    }
    if parts != 4 {
        return Err(EINVAL);
    }
    Ok(addr)
}

/// Parses one control line.
///
/// # Errors
///
/// `EINVAL` for another command than `client`, an unknown key, a malformed value, a missing
/// `addr`, a key this tool does not take (see the module's documentation), `signal` or `batch`
/// above `txdepth`; `ERANGE` for a value outside its range (those of `samples/perf_common.h`).
fn parse(line: &str) -> Result<Args> {
    let mut it = line.split_ascii_whitespace();
    if it.next() != Some("client") {
        return Err(EINVAL);
    }
    let mut a = Args {
        dev: CString::try_from_fmt(fmt!("rxe0"))?,
        addr: 0,
        port: 7700,
        op: OP_WRITE,
        kind: KIND_BW,
        size: 65536,
        iters: 200,
        txdepth: 16,
        signal: 1,
        batch: 1,
        timeout_ms: 60000,
    };
    let mut have_addr = false;
    for tok in it {
        let (k, v) = tok.split_once('=').ok_or(EINVAL)?;
        if v.is_empty() {
            return Err(EINVAL);
        }
        match k {
            "dev" if v.len() >= 32 => return Err(ERANGE),
            "dev" => a.dev = CString::try_from_fmt(fmt!("{v}"))?,
            "addr" => {
                a.addr = ipv4(v)?;
                have_addr = true;
            }
            "port" => a.port = number(v, 1, 65535)? as u16,
            "op" => a.op = lookup(&OP_NAMES, v)?,
            "kind" => a.kind = lookup(&KIND_NAMES, v)?,
            "mode" if lookup(&["poll", "event"], v)? != MODE_EVENT => return Err(EINVAL),
            "mode" => {}
            "size" => a.size = number(v, 1, MAX_SIZE)?,
            "iters" => a.iters = number(v, 1, MAX_ITERS)?,
            "txdepth" => a.txdepth = number(v, 1, MAX_TXDEPTH)?,
            "signal" => a.signal = number(v, 1, MAX_TXDEPTH)?,
            "batch" => a.batch = number(v, 1, MAX_BATCH as u32)?,
            "timeout_ms" => a.timeout_ms = number(v, 1, 3_600_000)?,
            "cq" if v == "default" => {}
            "buf" if v == "kmalloc" => {}
            "inline" if number(v, 0, 4096)? == 0 => {}
            _ => return Err(EINVAL),
        }
    }
    if !have_addr || a.signal > a.txdepth || a.batch > a.txdepth {
        return Err(EINVAL);
    }
    Ok(a)
}

/// A fixed-point number for printing: `v / 10^digits`.
struct Fix(u64, u32);

impl core::fmt::Display for Fix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let scale = 10u64.checked_pow(self.1).unwrap_or(1);
        let (int, frac) = (self.0.checked_div(scale), self.0.checked_rem(scale));
        let w = self.1 as usize;
        write!(f, "{}.{:0w$}", int.unwrap_or(0), frac.unwrap_or(0))
    }
}

/// One result line, kept for the `result` file.
struct Line {
    buf: [u8; LINE_MAX],
    len: usize,
}

impl core::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        self.buf
            .get_mut(self.len..end)
            .ok_or(core::fmt::Error)?
            .copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Line {
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

/// What the ctl and result files share: the last result line.
#[pin_data]
struct Shared {
    #[pin]
    result: Mutex<Line>,
}

/// `a * b / c` without overflowing where `a * b` does not fit; 0 for `c == 0`. (Divisions
/// here are checked ones: no panic path for a zero divisor.)
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    let (q, r) = (a.checked_div(c).unwrap_or(0), a.checked_rem(c).unwrap_or(0));
    match a.checked_mul(b) {
        Some(p) => p.checked_div(c).unwrap_or(0),
        None => q * b + (r * b).checked_div(c).unwrap_or(0),
    }
}

/// Nanoseconds since `t0`.
fn since(t0: Instant<Monotonic>) -> u64 {
    (Instant::<Monotonic>::now() - t0).as_nanos() as u64
}

/// The median time of an empty timed bracket (the post bracket of [`timed`] with nothing
/// inside): `post_ns` minus this is the post call's own cost. Under QEMU's `-icount shift=0`
/// one guest instruction is one virtual ns, so the difference counts instructions.
fn empty_ns() -> u64 {
    let mut t = [0u64; 63];
    for v in t.iter_mut() {
        let irq = local_interrupt_disable();
        let t0 = Instant::<Monotonic>::now();
        *v = since(t0);
        drop(irq);
    }
    t.sort_unstable();
    t[t.len() / 2]
}

/// Runs `post` with interrupts off between two clock reads: its start and its nanoseconds.
#[inline(always)]
fn timed<R>(post: impl FnOnce() -> R) -> (Instant<Monotonic>, u64, R) {
    let irq = local_interrupt_disable();
    let start = Instant::<Monotonic>::now();
    let r = post();
    let ns = since(start);
    drop(irq);
    (start, ns, r)
}

/// A timed post call: its start, its nanoseconds, and its result (the error with how many DTOs
/// it posted).
type Posted = (
    Instant<Monotonic>,
    u64,
    core::result::Result<(), (Error, usize)>,
);

/// Posts `dto(0..N)` on `ep` as one chain, timed ([`timed`]): the DTOs are made before the
/// bracket, which holds the post call only. Any context (does not sleep).
fn post_chain<'s, const N: usize>(
    ep: &TypedEp<Counter>,
    dto: impl Fn(usize) -> TypedDto<'s, ()>,
) -> Posted {
    let chain: [TypedDto<'s, ()>; N] = core::array::from_fn(dto);
    timed(|| ep.post_chain(chain).map_err(|e| (e.error, e.posted)))
}

/// [`post_chain`] of a length known at run time (`batch=`, `2..=MAX_BATCH`: the literals
/// listed); one DTO goes to [`TypedEp::post`], timed as well.
macro_rules! post_n {
    ($n:expr, $ep:expr, $dto:expr; $($k:literal)*) => {
        match $n {
            1 => {
                let d = $dto(0);
                timed(|| $ep.post(d).map_err(|(e, ())| (e, 0)))
            }
            $($k => post_chain::<$k>($ep, $dto),)*
            _ => return Err(EINVAL),
        }
    };
}

/// One client run: its objects, its counts and its per-DTO times.
struct Client<'a> {
    a: &'a Args,
    pz: Pz,
    /// The EP's connection events.
    evd: Evd,
    tx: Lmr,
    rx: Lmr,
    buf: Lmr,
    prog: Arc<Progress>,
    ep: Option<TypedEp<Counter>>,
    deadline: Instant<Monotonic>,
    established: bool,
    disconnected: bool,
    conn_failed: Option<EventType>,
    ctl_sends: u32,
    ctl_recvs: u32,
    posted: u32,
    /// Start of the run.
    t0: Instant<Monotonic>,
    /// Nanoseconds since `prog.base` at which each DTO's post started, and what its post call
    /// took.
    post_at: KVVec<u64>,
    post_cost: KVVec<u64>,
}

impl Drop for Client<'_> {
    /// The EP goes after this: its DTOs still posted (a RECV after `op=stop`, those of a
    /// failed run) complete flushed, which is no error now.
    fn drop(&mut self) {
        self.prog.closing.store(true, Ordering::Relaxed);
    }
}

impl<'a> Client<'a> {
    /// The IA, PZ, EVD and buffers of a run. Process context; may sleep.
    fn open(a: &'a Args) -> Result<Self> {
        let ia = Ia::open(&a.dev, OWNER)?;
        let pz = Pz::new(&ia)?;
        let evd = Evd::new(&ia, 16)?;
        let tx = Lmr::alloc(&pz, MSG_BYTES as usize, MemPrivs::empty())?;
        let rx = Lmr::alloc(&pz, MSG_BYTES as usize, MemPriv::LocalWrite)?;
        let privs = MemPriv::LocalWrite | MemPriv::RemoteRead | MemPriv::RemoteWrite;
        let len = if a.op == OP_STOP { 64 } else { a.size as usize };
        let buf = Lmr::alloc(&pz, len, privs)?;
        let n = if a.op == OP_STOP { 0 } else { a.iters as usize };
        Ok(Client {
            a,
            pz,
            evd,
            tx,
            rx,
            buf,
            prog: Progress::new(a)?,
            ep: None,
            deadline: Instant::<Monotonic>::now() + Delta::from_millis(a.timeout_ms.into()),
            established: false,
            disconnected: false,
            conn_failed: None,
            ctl_sends: 0,
            ctl_recvs: 0,
            posted: 0,
            t0: Instant::<Monotonic>::now(),
            post_at: KVVec::from_elem(0, n, GFP_KERNEL)?,
            post_cost: KVVec::from_elem(0, n, GFP_KERNEL)?,
        })
    }

    fn ep(&self) -> Result<&TypedEp<Counter>> {
        self.ep.as_ref().ok_or(ENOTCONN)
    }

    /// Handles one connection event.
    fn event(&mut self, ev: &Event) {
        let ours = self.ep.as_ref().map(TypedEp::id) == ev.ep_id();
        match ev.kind() {
            EventType::AsyncEvdOverflow => {
                pr_err!("EVD overflow, {} events lost\n", ev.transferred_length());
                self.prog.fail(EOVERFLOW);
            }
            EventType::AsyncIaCatastrophic => self.prog.fail(EIO),
            EventType::Established if ours => self.established = true,
            EventType::Disconnected if ours => self.disconnected = true,
            EventType::Broken if ours => {
                self.disconnected = true;
                self.prog.fail(ECONNRESET);
            }
            k @ (EventType::PeerRejected
            | EventType::NonPeerRejected
            | EventType::Unreachable
            | EventType::TimedOut)
                if ours =>
            {
                self.conn_failed = Some(k)
            }
            // late events of an EP of an earlier attempt
            _ => {}
        }
    }

    /// Handles connection events until `cond` holds, a completion failed or the connection
    /// went away. Process context.
    fn wait_conn(&mut self, cond: impl Fn(&Self) -> bool, what: &str) -> Result {
        let r = loop {
            if let Some(e) = self.prog.error() {
                break Err(e);
            }
            if cond(self) {
                break Ok(());
            }
            if self.disconnected {
                break Err(ECONNRESET);
            }
            match left_ms(self.deadline).and_then(|ms| self.evd.wait(ms)) {
                Ok(ev) => self.event(&ev),
                Err(e) => break Err(e),
            }
        };
        if let Err(e) = r {
            pr_err!("waiting for {}: {:?}\n", what, e);
        }
        r
    }

    /// Connects, retrying while the server is busy with another session (up to 20 times).
    fn connect(&mut self) -> Result {
        let attr = EpAttr {
            max_request_dtos: self.a.txdepth + 4,
            max_recv_dtos: 2,
            max_request_iov: 1,
            max_recv_iov: 1,
            max_rdma_read_in: 16,
            max_rdma_read_out: 16,
            retry_count: 6,
            rnr_retry_count: 7,
            max_pooled_rmrs: 0,
        };
        let to = SockAddr::ipv4(self.a.addr, self.a.port);
        for attempt in 1.. {
            self.ep = None;
            (self.established, self.disconnected, self.conn_failed) = (false, false, None);
            let handler = Counter(self.prog.clone());
            self.ep = Some(TypedEp::new(&self.pz, &self.evd, &attr, handler)?);
            self.ep()?.connect(&to, 5000, b"")?;
            self.wait_conn(
                |c| c.established || c.conn_failed.is_some(),
                "the connection",
            )?;
            if self.established {
                return Ok(());
            }
            if attempt >= 20 || since(self.t0) > u64::from(self.a.timeout_ms) * 1_000_000 {
                pr_err!("no connection after {} attempts\n", attempt);
                return Err(ETIMEDOUT);
            }
            fsleep(Delta::from_millis(500));
        }
        Err(ETIMEDOUT)
    }

    /// Posts the control RECV and sends `msg` (its magic set here).
    fn ctl_exchange(&mut self, msg: &mut [u8; MSG_LEN]) -> Result {
        msg[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        let ep = self.ep.as_ref().ok_or(ENOTCONN)?;
        ep.post_recv(&[self.rx.segment(0, MSG_BYTES)], ())
            .map_err(|(e, ())| e)?;
        self.ctl_recvs += 1;
        self.tx.write(0, msg)?;
        let seg = [self.tx.segment(0, MSG_LEN as u64)];
        ep.post(TypedDto::new(Op::Send, &seg, ()))
            .map_err(|(e, ())| e)?;
        self.ctl_sends += 1;
        Ok(())
    }

    /// Posts DTOs `posted..posted + n` in one call ([`TypedEp::post`] of one DTO, or
    /// [`TypedEp::post_chain`] for `n > 1`), timed with interrupts off. Any context (does not
    /// sleep).
    fn post(&mut self, rem: &RemoteRegion, n: u32) -> Result {
        let op = match self.a.op {
            OP_WRITE => Op::RdmaWrite(*rem),
            OP_READ => Op::RdmaRead(*rem),
            OP_SEND => Op::Send,
            _ => return Err(EINVAL),
        };
        let seg = [self.buf.segment(0, u64::from(self.a.size))];
        let (a, i0) = (self.a, self.posted);
        let dto = |k: usize| {
            let mut d = TypedDto::new(op, &seg, ());
            d.flags.suppress = !a.signalled(i0 + k as u32);
            d
        };
        let ep = self.ep.as_ref().ok_or(ENOTCONN)?;
        let (start, ns, r) = post_n!(n, ep, dto; 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19
                                     20 21 22 23 24 25 26 27 28 29 30 31 32);
        let cost = ns.checked_div(u64::from(n)).unwrap_or(0);
        let at = (start - self.prog.base).as_nanos() as u64;
        let (from, to) = (i0 as usize, (i0 + n) as usize);
        self.post_at[from..to].fill(at);
        self.post_cost[from..to].fill(cost);
        match r {
            Ok(()) => {
                self.posted += n;
                Ok(())
            }
            Err((e, k)) => {
                self.posted += k as u32;
                pr_err!("posting DTO {}: {:?}\n", i0 as usize + k, e);
                Err(e)
            }
        }
    }

    /// The run, its result line into `line`. Process context; may sleep.
    fn run(&mut self, line: &mut Line) -> Result {
        self.connect()?;
        let mut hello = [0u8; MSG_LEN];
        let a = self.a;
        for (i, v) in [a.op, a.kind, a.size, a.iters, a.txdepth, MODE_EVENT]
            .iter()
            .enumerate()
        {
            hello[4 + 4 * i..8 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        self.ctl_exchange(&mut hello)?;
        let (sends, recvs) = (self.ctl_sends, self.ctl_recvs);
        let sent = |p: &Progress| p.ctl_sends_done.load(Ordering::Acquire) == sends;
        if a.op == OP_STOP {
            let r = self.prog.wait(self.deadline, sent, "the stop SEND");
            return if r == Err(ECONNRESET) { Ok(()) } else { r };
        }
        self.prog.wait(
            self.deadline,
            |p| sent(p) && p.ctl_recvs_done.load(Ordering::Acquire) == recvs,
            "the advert",
        )?;
        let mut m = [0u8; MSG_LEN];
        self.rx.read(0, &mut m)?;
        let le32 = |o: usize| u32::from_le_bytes([m[o], m[o + 1], m[o + 2], m[o + 3]]);
        let le64 = |o: usize| u64::from(le32(o)) | (u64::from(le32(o + 4)) << 32);
        if le32(0) != MAGIC {
            pr_err!("the advert: bad magic {:#x}\n", le32(0));
            return Err(EPROTO);
        }
        if le64(40) < u64::from(a.size) {
            pr_err!(
                "the server's buffer has {} bytes, size={}\n",
                le64(40),
                a.size
            );
            return Err(EMSGSIZE);
        }
        let rem = RemoteRegion {
            address: le64(32),
            rkey: le32(28),
            length: a.size.into(),
        };

        let (lat, iters) = (a.kind == KIND_LAT, a.iters);
        let depth = if lat { 1 } else { a.txdepth };
        let batch = if lat { 1 } else { a.batch };
        // The control SEND completed: send-queue completions from now on are data DTOs'.
        self.prog.data.store(true, Ordering::Relaxed);
        self.t0 = Instant::<Monotonic>::now();
        while self.prog.done() < iters {
            let mut done = self.prog.done();
            while a.may_post(self.posted, done, depth, batch) {
                let room = depth - (self.posted - done);
                self.post(&rem, room.min(iters - self.posted).min(batch))?;
                done = self.prog.done();
            }
            // for room to post while there is more to post, then for the last completion
            let posted = self.posted;
            self.prog.wait(
                self.deadline,
                |p| {
                    if posted < iters {
                        a.may_post(posted, p.done(), depth, batch)
                    } else {
                        p.done() == iters
                    }
                },
                "completions",
            )?;
        }
        let total = since(self.t0).max(1);
        self.report(line, total)?;
        self.prog.closing.store(true, Ordering::Relaxed);
        self.ep()?.disconnect()?;
        let r = self.wait_conn(|c| c.disconnected, "DISCONNECTED");
        if r == Err(ECONNRESET) {
            Ok(())
        } else {
            r
        }
    }

    /// The result line of `perf_report()` in `samples/perf_ctl.h`, with this tool's bracket.
    fn report(&mut self, line: &mut Line, total: u64) -> Result {
        let a = self.a;
        let n = u64::from(a.iters);
        let bytes = u64::from(a.size) * n;
        let mbps = mul_div(bytes, 10_000_000, total); // MB/s x 10^4
        let mmsg = mul_div(n, 1_000_000_000, total); // Mmsg/s x 10^6

        // a latency sample per signalled DTO: its completion's time less its post's
        let mut samples = KVVec::with_capacity(a.iters as usize, GFP_KERNEL)?;
        for (i, (at, done)) in self
            .post_at
            .iter()
            .zip(self.prog.done_at.iter())
            .enumerate()
        {
            if a.signalled(i as u32) {
                let _ =
                    samples.push_within_capacity(done.load(Ordering::Relaxed).saturating_sub(*at));
            }
        }
        if samples.is_empty() {
            samples.push(0, GFP_KERNEL)?;
        }
        let s = &mut samples[..];
        s.sort_unstable();
        let ns = s.len() as u64;
        let med = s[(s.len() - 1) / 2] / 10; // us x 100
        let p99 = s[((ns * 99 + 99) / 100 - 1).min(ns - 1) as usize] / 10;
        self.post_cost.sort_unstable();
        let post = self.post_cost[(a.iters as usize - 1) / 2] * 10; // ns x 10
        let lat = a.kind == KIND_LAT;
        line.len = 0;
        write!(
            line,
            "result tool={TOOL} op={} kind={} size={} iters={} txdepth={} signal={} batch={} \
             inline=0 buf=kmalloc mode=event cq=default MBps={} Mmsgps={} lat_med_us={} \
             lat_p99_us={} post_ns={} empty_ns={} dto_ns={}",
            OP_NAMES[(a.op - 1) as usize],
            KIND_NAMES[(a.kind - 1) as usize],
            a.size,
            a.iters,
            if lat { 1 } else { a.txdepth },
            a.signal(),
            if lat { 1 } else { a.batch },
            Fix(mbps, 4),
            Fix(mmsg, 6),
            Fix(med, 2),
            Fix(p99, 2),
            Fix(post, 1),
            empty_ns(),
            total.checked_div(n).unwrap_or(0)
        )
        .map_err(|_| E2BIG)?;
        pr_info!("{}\n", line.as_str());
        Ok(())
    }
}

/// The ctl file's write: one command, run in the writing task.
///
/// Process context; sleeps until the run is done.
///
/// # Errors
///
/// `E2BIG` for a line of `LINE_MAX` bytes or more, `EFAULT`, [`parse`]'s errors, or the run's
/// (`ECONNRESET`, `ETIMEDOUT`, `EPROTO`, `EIO`, `EMSGSIZE`, rkdapl's errors).
fn ctl_write(shared: &Arc<Shared>, reader: &mut UserSliceReader) -> Result {
    let len = reader.len();
    if len == 0 {
        return Err(EINVAL);
    }
    if len >= LINE_MAX {
        return Err(E2BIG);
    }
    let mut buf = [0u8; LINE_MAX];
    reader.read_slice(&mut buf[..len])?;
    let text = core::str::from_utf8(&buf[..len]).map_err(|_| EINVAL)?;
    let a = parse(text).inspect_err(|e| {
        pr_err!(
            "bad command ({:?}); see the header of samples/perf_common.h\n",
            e
        );
    })?;
    let mut line = Line {
        buf: [0; LINE_MAX],
        len: 0,
    };
    let r = Client::open(&a).and_then(|mut c| c.run(&mut line));
    if let Err(e) = r {
        pr_err!("client: failed: {:?}\n", e);
        return Err(e);
    }
    if line.len > 0 {
        let mut res = shared.result.lock();
        res.buf = line.buf;
        res.len = line.len;
    }
    Ok(())
}

fn show_result(shared: &Arc<Shared>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let res = shared.result.lock();
    if res.len > 0 {
        writeln!(f, "{}", res.as_str())?;
    }
    Ok(())
}

struct RustPerf {
    // Dropped in this order: the files (waiting for writers in progress), then the directory.
    _ctl: Pin<KBox<File<Arc<Shared>>>>,
    _result: Pin<KBox<File<Arc<Shared>>>>,
    _dir: Dir,
}

impl kernel::Module for RustPerf {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let shared = Arc::pin_init(
            pin_init!(Shared {
                result <- new_mutex!(Line { buf: [0; LINE_MAX], len: 0 }, "rkdapl_rust_perf"),
            }),
            GFP_KERNEL,
        )?;
        let dir = Dir::new(c"rkdapl_rust_perf");
        let ctl = KBox::pin_init(
            dir.write_callback_file(c"ctl", shared.clone(), &ctl_write),
            GFP_KERNEL,
        )?;
        let result = KBox::pin_init(
            dir.read_callback_file(c"result", shared, &show_result),
            GFP_KERNEL,
        )?;
        Ok(RustPerf {
            _ctl: ctl,
            _result: result,
            _dir: dir,
        })
    }
}
