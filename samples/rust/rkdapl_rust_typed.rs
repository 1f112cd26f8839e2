// SPDX-License-Identifier: GPL-2.0

//! rkdapl_rust_typed: a Rust consumer of rkdapl's typed EPs ([`rkdapl::api::TypedEp`]), whose
//! DTOs carry a boxed context of the consumer's own from their post to their completion.
//!
//!   insmod rkdapl_rust_typed.ko addr=10.77.0.1 [port=7486] [count=64] [hold=0]
//!
//! In module init, over the device that has `addr`, it connects two typed EPs to each other
//! through a PSP (a loopback pair). The server posts `count` RECVs before the connection exists;
//! the client SENDs `count` messages of 1 to 64 bytes into them, singly and in chains of four,
//! some with completion suppression. Each DTO carries a `KBox` naming its message; the
//! server's handler compares every byte each RECV received with what that message holds, in
//! the completion context. Posts that fail give their contexts back (a chain whose second DTO
//! is refused, a single SEND, a RECV). Then a timed run of SENDs measures the time per DTO.
//!
//! With `hold=0` the server posts `count` more RECVs and the client disconnects: they complete
//! FLUSHED to the handler, and every context made has been dropped once the EPs are gone.
//! insmod returns 0 when all of that worked, a negative errno otherwise.
//!
//! With `hold=1` the module keeps the connection with `count` RECVs posted after insmod
//! returns; a device removal (`rdma link delete`) flushes them to the handler, which says so in
//! the kernel log once it dropped the last context. rmmod then frees what is left.

use crate::module_parameters::{addr, count as count_param, hold, port};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;
use kernel::sync::{Arc, Completion as Done};
use kernel::time::{delay::fsleep, Delta, Instant, Monotonic};
use rkdapl::api::{
    Completion, Cr, Dto, DtoFlags, DtoOp, DtoStatus, Ep, EpAttr, EpHandler, Evd, Event, EventType,
    Ia, Lmr, MemPriv, MemPrivs, Op, Psp, Pz, SockAddr, TypedDto, TypedEp, UpcallPolicy,
};

module! {
    type: RustTyped,
    name: "rkdapl_rust_typed",
    authors: ["rkdapl developers"],
    description: "A Rust consumer of rkdapl's typed EPs",
    license: "GPL",
    imports_ns: ["RKDAPL"],
    params: {
        addr: u32 {
            default: 0x0a4d0001,
            description: "IPv4 address of this machine on the RDMA device, host order (default 10.77.0.1)",
        },
        port: u16 {
            default: 7486,
            description: "PSP port (default 7486)",
        },
        count: u32 {
            default: 64,
            description: "messages, and RECVs flushed at the end (1..=128, default 64)",
        },
        hold: u32 {
            default: 0,
            description: "1: keep the connection with RECVs posted until rmmod (default 0)",
        },
    },
}

const OWNER: &CStr = c"rkdapl_rust_typed";
const TIMEOUT_MS: u32 = 30_000;
/// Bytes of each message's slot in the LMRs; a message is 1 to `SLOT` bytes.
const SLOT: usize = 64;
const MAX_COUNT: u32 = 128;
/// SENDs of the timed run.
const TIMED: u32 = 4096;

/// Contexts made, and dropped (by the handler, a failed post or the EP).
static CREATED: AtomicU32 = AtomicU32::new(0);
static DROPPED: AtomicU32 = AtomicU32::new(0);

/// What one DTO carries: the message it moves.
struct Io {
    /// The message's number: its slot, and the seed of its bytes.
    msg: u32,
}

impl Io {
    fn new(msg: u32) -> Result<KBox<Io>> {
        let b = KBox::new(Io { msg }, GFP_KERNEL)?;
        CREATED.fetch_add(1, Ordering::Relaxed);
        Ok(b)
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
    }
}

/// The length of message `msg`.
fn msg_len(msg: u32) -> usize {
    1 + (msg as usize * 7) % SLOT
}

/// Byte `i` of message `msg`.
fn msg_byte(msg: u32, i: usize) -> u8 {
    (msg as usize * 131 + i * 31) as u8
}

/// One side's handler: counts what completes, and the server's checks what each RECV got.
struct Side {
    /// The server's RECV buffer (a slot per message), read in the completion context.
    rx: Option<Lmr>,
    ok: AtomicU32,
    bad: AtomicU32,
    flushed: AtomicU32,
    /// Completions delivered with "more follow".
    more: AtomicU32,
    /// With `hold`: flushed completions after which the handler reports (0: none).
    report_at: AtomicU32,
    /// Completed when `seen` (completions not flushed, good or bad) reaches `timed_at` (0:
    /// not timing).
    timed: Arc<Done>,
    timed_at: AtomicU32,
    seen: AtomicU32,
}

impl Side {
    fn new(rx: Option<Lmr>) -> Result<Side> {
        Ok(Side {
            rx,
            ok: AtomicU32::new(0),
            bad: AtomicU32::new(0),
            flushed: AtomicU32::new(0),
            more: AtomicU32::new(0),
            report_at: AtomicU32::new(0),
            timed: Arc::pin_init(Done::new(), GFP_KERNEL)?,
            timed_at: AtomicU32::new(0),
            seen: AtomicU32::new(0),
        })
    }

    /// Whether a successful completion moved what its context says.
    fn good(&self, c: &Completion<KBox<Io>>) -> bool {
        let (msg, len) = (c.context.msg, msg_len(c.context.msg));
        if c.len != len as u64 {
            return false;
        }
        match (&self.rx, c.op) {
            (None, DtoOp::Send) => true,
            (Some(rx), DtoOp::Recv) => {
                let mut got = [0u8; SLOT];
                let Some(got) = got.get_mut(..len) else {
                    return false;
                };
                let at = (msg % MAX_COUNT) as usize * SLOT;
                rx.read(at, got).is_ok()
                    && got.iter().enumerate().all(|(i, b)| *b == msg_byte(msg, i))
            }
            _ => false,
        }
    }
}

impl EpHandler for Side {
    type Context = KBox<Io>;

    fn completion(&self, c: Completion<KBox<Io>>, more: bool) {
        if more {
            self.more.fetch_add(1, Ordering::Relaxed);
        }
        if c.status != DtoStatus::Flushed
            && self.seen.fetch_add(1, Ordering::AcqRel) + 1 == self.timed_at.load(Ordering::Acquire)
        {
            self.timed.complete_all();
        }
        match c.status {
            DtoStatus::Success if self.good(&c) => {
                self.ok.fetch_add(1, Ordering::AcqRel);
            }
            DtoStatus::Flushed => {
                let n = self.flushed.fetch_add(1, Ordering::AcqRel) + 1;
                drop(c.context);
                if n == self.report_at.load(Ordering::Acquire) {
                    pr_info!(
                        "hold: {} RECVs flushed to the handler; contexts made {}, dropped {}\n",
                        n,
                        CREATED.load(Ordering::Relaxed),
                        DROPPED.load(Ordering::Relaxed)
                    );
                }
                return;
            }
            s => {
                pr_err!(
                    "message {}: {:?} {:?}, {} bytes\n",
                    c.context.msg,
                    s,
                    c.op,
                    c.len
                );
                self.bad.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

/// Waits for the next event of `kind` on `evd` (others are an error).
fn expect(evd: &Evd, kind: EventType, what: &str) -> Result<Event> {
    let ev = evd.wait(TIMEOUT_MS)?;
    if ev.kind() != kind || ev.status() != 0 {
        pr_err!("{}: event {:?} status {}\n", what, ev.kind(), ev.status());
        return Err(EPROTO);
    }
    Ok(ev)
}

/// Waits until `f` holds, up to the timeout.
fn until(what: &str, f: impl Fn() -> bool) -> Result {
    for _ in 0..TIMEOUT_MS {
        if f() {
            return Ok(());
        }
        fsleep(Delta::from_millis(1));
    }
    pr_err!("{}: timed out\n", what);
    Err(ETIMEDOUT)
}

/// Posts RECVs for messages `first..first + n` on `server`, each into its slot.
fn post_recvs(server: &TypedEp<Side>, first: u32, n: u32) -> Result {
    let rx = server.handler().rx.as_ref().ok_or(EINVAL)?;
    for msg in first..first + n {
        let at = (msg % MAX_COUNT) as u64 * SLOT as u64;
        server
            .post_recv(&[rx.segment(at, SLOT as u64)], Io::new(msg)?)
            .map_err(|(e, _)| e)?;
    }
    Ok(())
}

/// The client SENDs messages `0..count` from `tx`: in chains of four where four are left, the
/// second of each chain suppressed, single SENDs for the rest.
fn send_all(client: &TypedEp<Side>, tx: &Lmr, count: u32) -> Result<u32> {
    let seg = |msg: u32| tx.segment(msg as u64 * SLOT as u64, msg_len(msg) as u64);
    let mut msg = 0;
    let mut suppressed = 0;
    while msg < count {
        if count - msg >= 4 {
            let s = [seg(msg), seg(msg + 1), seg(msg + 2), seg(msg + 3)];
            let mut chain = [
                TypedDto::new(Op::Send, &s[0..1], Io::new(msg)?),
                TypedDto::new(Op::Send, &s[1..2], Io::new(msg + 1)?),
                TypedDto::new(Op::Send, &s[2..3], Io::new(msg + 2)?),
                TypedDto::new(Op::Send, &s[3..4], Io::new(msg + 3)?),
            ];
            chain[1].flags = DtoFlags {
                suppress: true,
                ..DtoFlags::default()
            };
            suppressed += 1;
            client.post_chain(chain).map_err(|e| e.error)?;
            msg += 4;
        } else {
            let s = [seg(msg)];
            client
                .post(TypedDto::new(Op::Send, &s, Io::new(msg)?))
                .map_err(|(e, _)| e)?;
            msg += 1;
        }
    }
    Ok(suppressed)
}

/// Failed posts give their contexts back: a chain whose second DTO is outside its LMR
/// (`ERANGE`: the first is posted), a single SEND outside it, a RECV into an LMR without
/// local write (`EACCES`). The chain's first DTO is message `msg`, for a RECV posted for it.
fn refused(client: &TypedEp<Side>, server: &TypedEp<Side>, tx: &Lmr, msg: u32) -> Result {
    let good = [tx.segment(msg as u64 * SLOT as u64, msg_len(msg) as u64)];
    let outside = [tx.segment(tx.len() as u64, 8)];
    let chain = [
        TypedDto::new(Op::Send, &good, Io::new(msg)?),
        TypedDto::new(Op::Send, &outside, Io::new(1001)?),
    ];
    match client.post_chain(chain) {
        Err(e) if e.error == ERANGE && e.posted == 1 => match e.unposted {
            [None, Some(io)] if io.msg == 1001 => {}
            _ => {
                pr_err!("refused chain: the second DTO's context did not come back\n");
                return Err(EPROTO);
            }
        },
        _ => {
            pr_err!("refused chain: not ERANGE after one posted\n");
            return Err(EPROTO);
        }
    }
    match client.post(TypedDto::new(Op::Send, &outside, Io::new(1002)?)) {
        Err((e, io)) if e == ERANGE && io.msg == 1002 => {}
        _ => {
            pr_err!("refused SEND: no ERANGE with its context\n");
            return Err(EPROTO);
        }
    }
    // `tx` has no local write: a RECV into it is refused.
    match server.post_recv(&[tx.segment(0, 8)], Io::new(1003)?) {
        Err((e, io)) if e == EACCES && io.msg == 1003 => Ok(()),
        _ => {
            pr_err!("refused RECV: no EACCES with its context\n");
            Err(EPROTO)
        }
    }
}

/// Message 9 (64 bytes), the one the timed runs send.
const TIMED_MSG: u32 = 9;

/// Attributes of the EPs: room for the timed runs' DTOs.
fn attr() -> EpAttr {
    EpAttr {
        max_request_dtos: TIMED,
        max_recv_dtos: TIMED,
        ..EpAttr::default()
    }
}

/// Connects a pair through the PSP whose events go to `psp_evd`: `connect` starts the
/// client's connect, `accept` answers the request on the server; both ESTABLISHED then.
fn pair_up(
    psp_evd: &Evd,
    c_evd: &Evd,
    s_evd: &Evd,
    connect: impl FnOnce() -> Result,
    accept: impl FnOnce(Cr) -> Result,
) -> Result {
    connect()?;
    let mut req = expect(psp_evd, EventType::ConnectionRequest, "connection request")?;
    accept(req.take_cr().ok_or(EPROTO)?)?;
    expect(c_evd, EventType::Established, "client ESTABLISHED")?;
    expect(s_evd, EventType::Established, "server ESTABLISHED")?;
    Ok(())
}

/// The timed run on the typed pair: `n` RECVs posted, then `n` SENDs of message
/// [`TIMED_MSG`] as fast as they go; nanoseconds per DTO from the first SEND's post until the
/// server's handler saw the last RECV complete.
fn timed_typed(client: &TypedEp<Side>, server: &TypedEp<Side>, tx: &Lmr, n: u32) -> Result<u64> {
    let sh = server.handler();
    let rx = sh.rx.as_ref().ok_or(EINVAL)?;
    let at = u64::from(TIMED_MSG) * SLOT as u64;
    for _ in 0..n {
        server
            .post_recv(&[rx.segment(at, SLOT as u64)], Io::new(TIMED_MSG)?)
            .map_err(|(e, _)| e)?;
    }
    sh.timed_at
        .store(sh.seen.load(Ordering::Acquire) + n, Ordering::Release);
    let seg = [tx.segment(at, msg_len(TIMED_MSG) as u64)];
    let start = Instant::<Monotonic>::now();
    for _ in 0..n {
        client
            .post(TypedDto::new(Op::Send, &seg, Io::new(TIMED_MSG)?))
            .map_err(|(e, _)| e)?;
    }
    sh.timed.wait_for_completion();
    Ok(start.elapsed().as_nanos() as u64 / u64::from(n))
}

/// The same run on a pair of untyped EPs whose DTO completions go to EVD upcalls (the path the
/// typed EPs skip), connected through the PSP whose events go to `psp_evd`.
fn timed_untyped(
    ia: &Ia,
    pz: &Pz,
    psp_evd: &Evd,
    here: &SockAddr,
    tx: &Lmr,
    n: u32,
) -> Result<u64> {
    let (c_evd, s_evd) = (Evd::new(ia, 8)?, Evd::new(ia, 8)?);
    let (c_dto, s_dto) = (Evd::new(ia, 8)?, Evd::new(ia, 8)?);
    let rx = Lmr::alloc(pz, SLOT, MemPriv::LocalWrite)?;
    let client = Ep::with_attr(pz, &c_dto, &c_evd, &attr())?;
    let server = Ep::with_attr(pz, &s_dto, &s_evd, &attr())?;
    pair_up(
        psp_evd,
        &c_evd,
        &s_evd,
        || client.connect(here, TIMEOUT_MS, b""),
        |cr| cr.accept(&server, b"").map_err(|(e, _)| e),
    )?;
    let done = Arc::pin_init(Done::new(), GFP_KERNEL)?;
    let got = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
    let (d, g) = (done.clone(), got.clone());
    s_dto.set_upcall(UpcallPolicy::Many, move |ev: &mut Event| {
        // Every DTO completion counts, so that a failed one cannot leave the wait hanging.
        if ev.kind() == EventType::DtoCompletion && g.fetch_add(1, Ordering::AcqRel) + 1 == n {
            d.complete_all();
        }
    })?;
    c_dto.set_upcall(UpcallPolicy::Many, |_: &mut Event| {})?;
    for i in 0..n {
        server.post_recv(&[rx.segment(0, SLOT as u64)], u64::from(i))?;
    }
    let at = u64::from(TIMED_MSG) * SLOT as u64;
    let seg = [tx.segment(at, msg_len(TIMED_MSG) as u64)];
    let start = Instant::<Monotonic>::now();
    for i in 0..n {
        client
            .post(&[Dto::new(Op::Send, &seg, u64::from(i))])
            .map_err(|(e, _)| e)?;
    }
    done.wait_for_completion();
    let ns = start.elapsed().as_nanos() as u64 / u64::from(n);
    drop((client, server));
    Ok(ns)
}

/// What `hold=1` keeps until rmmod (dropped in this order).
#[allow(dead_code)]
struct Kept {
    client: TypedEp<Side>,
    server: TypedEp<Side>,
    psp: Psp,
    tx: Lmr,
    evds: (Evd, Evd, Evd),
    pz: Pz,
    ia: Ia,
}

fn run() -> Result<Option<Kept>> {
    let count = count_param.value();
    if count == 0 || count > MAX_COUNT {
        pr_err!("count={} is not in 1..={}\n", count, MAX_COUNT);
        return Err(EINVAL);
    }
    let here = SockAddr::ipv4(addr.value(), port.value());
    let ia = Ia::open_addr(&here, OWNER)?;
    let pz = Pz::new(&ia)?;
    let (c_evd, s_evd, psp_evd) = (Evd::new(&ia, 8)?, Evd::new(&ia, 8)?, Evd::new(&ia, 8)?);
    let psp = Psp::new(&ia, port.value(), 4, &psp_evd)?;
    // The client's messages, each in its slot; no local write (a RECV into it is refused).
    let mut tx = Lmr::alloc(&pz, MAX_COUNT as usize * SLOT, MemPrivs::empty())?;
    for msg in 0..MAX_COUNT {
        let mut m = [0u8; SLOT];
        for (i, b) in m.iter_mut().enumerate() {
            *b = msg_byte(msg, i);
        }
        tx.write(msg as usize * SLOT, &m)?;
    }
    let rx = Lmr::alloc(&pz, MAX_COUNT as usize * SLOT, MemPriv::LocalWrite)?;
    let client = TypedEp::new(&pz, &c_evd, &attr(), Side::new(None)?)?;
    let server = TypedEp::new(&pz, &s_evd, &attr(), Side::new(Some(rx))?)?;

    // RECVs before the connection exists: they wait in the EP for its QP.
    post_recvs(&server, 0, count)?;
    pair_up(
        &psp_evd,
        &c_evd,
        &s_evd,
        || client.connect(&here, TIMEOUT_MS, b"typed client"),
        |cr| {
            cr.accept_typed(&server, b"typed server")
                .map_err(|(e, _)| e)
        },
    )?;
    let suppressed = send_all(&client, &tx, count)?;
    let (ch, sh) = (client.handler(), server.handler());
    until("the messages", || {
        sh.ok.load(Ordering::Acquire) == count
            && ch.ok.load(Ordering::Acquire) == count - suppressed
    })?;
    // One more message (`count`) goes with the refused chain's first DTO.
    post_recvs(&server, count, 1)?;
    refused(&client, &server, &tx, count)?;
    until("the refused chain's posted SEND", || {
        sh.ok.load(Ordering::Acquire) == count + 1
    })?;
    let received = sh.ok.load(Ordering::Acquire);
    let typed_ns = timed_typed(&client, &server, &tx, TIMED)?;
    let untyped_ns = timed_untyped(&ia, &pz, &psp_evd, &here, &tx, TIMED)?;
    if ch.bad.load(Ordering::Acquire) + sh.bad.load(Ordering::Acquire) != 0 {
        pr_err!("completions that did not move what their contexts say\n");
        return Err(EIO);
    }
    pr_info!(
        "timed {} SENDs of 64 bytes into RECVs: typed EPs {} ns per DTO, untyped EPs with EVD upcalls {} ns per DTO\n",
        TIMED,
        typed_ns,
        untyped_ns
    );

    // RECVs left posted: flushed to the handler by the disconnect, or (hold) the removal.
    let first = MAX_COUNT;
    if hold.value() != 0 {
        sh.report_at.store(count, Ordering::Release);
    }
    post_recvs(&server, first, count)?;
    if hold.value() != 0 {
        pr_info!(
            "hold: {} RECVs posted, kept until rmmod; contexts made {}, dropped {}\n",
            count,
            CREATED.load(Ordering::Relaxed),
            DROPPED.load(Ordering::Relaxed)
        );
        return Ok(Some(Kept {
            client,
            server,
            psp,
            tx,
            evds: (c_evd, s_evd, psp_evd),
            pz,
            ia,
        }));
    }
    client.disconnect()?;
    expect(&c_evd, EventType::Disconnected, "client DISCONNECTED")?;
    expect(&s_evd, EventType::Disconnected, "server DISCONNECTED")?;
    until("the flushed RECVs", || {
        sh.flushed.load(Ordering::Acquire) == count
    })?;
    let more = ch.more.load(Ordering::Relaxed) + sh.more.load(Ordering::Relaxed);
    drop((client, server));
    until("every context dropped", || {
        DROPPED.load(Ordering::Acquire) == CREATED.load(Ordering::Acquire)
    })?;
    pr_info!(
        "typed EPs: {} messages (RECVs posted before the connection, SENDs single and chained, {} suppressed) with boxed contexts, every byte compared in the handler ({} RECVs in all, {} completions with more to follow); refused posts gave their contexts back (a chain after one posted, a SEND, a RECV); {} RECVs flushed by the disconnect; contexts made {}, dropped {}, ok\n",
        count,
        suppressed,
        received,
        more,
        count,
        CREATED.load(Ordering::Relaxed),
        DROPPED.load(Ordering::Relaxed)
    );
    drop(psp);
    Ok(None)
}

struct RustTyped {
    _kept: Option<Kept>,
}

impl kernel::Module for RustTyped {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(RustTyped { _kept: run()? })
    }
}
