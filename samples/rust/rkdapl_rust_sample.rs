// SPDX-License-Identifier: GPL-2.0

//! rkdapl_rust_sample: a Rust consumer of rkdapl's Rust API ([`rkdapl::api`]), not its C ABI.
//!
//!   insmod rkdapl_rust_sample.ko addr=10.77.0.1 [dev=rxe0] [port=7480] [size=65536]
//!
//! In module init, over the device that has `addr`, it listens on a PSP and connects to itself
//! (a loopback pair through rdma_rxe), grants the server's LMR to the client through an RMR,
//! and moves `size` bytes by RDMA WRITE, reads them back by RDMA READ, then SENDs a message;
//! then it posts a chain of two RDMA WRITEs, the second with immediate data, whose completions
//! go to an upcall, and RDMA READs into an LMR over pages it allocated. Then a second
//! connection is accepted inside the PSP EVD's upcall (after a refused accept on a wrong EP) and
//! a SEND crosses it, and a third is rejected there. It also opens the device again by the name
//! of its network device. Every byte is compared. insmod returns 0 when all of that worked, a
//! negative errno otherwise. Everything is freed by `Drop`.

use crate::module_parameters::{addr, port, size as size_param};
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use kernel::page::{Page, PAGE_SIZE};
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::{new_spinlock_irq, Arc, SpinLockIrq};
use rkdapl::api::{
    Cr, Dto, DtoOp, DtoStatus, Ep, Evd, Event, EventType, Ia, Lmr, Op, Psp, Pz, RemoteRegion, Rmr,
    SgOwner, SockAddr, UpcallPolicy,
};
use rkdapl::api::{EpAttr, MemPriv, MemPrivs};

module! {
    type: RustSample,
    name: "rkdapl_rust_sample",
    authors: ["rkdapl developers"],
    description: "A Rust consumer of rkdapl's Rust API",
    license: "GPL",
    imports_ns: ["RKDAPL"],
    params: {
        addr: u32 {
            default: 0x0a4d0001,
            description: "IPv4 address of this machine on the RDMA device, host order (default 10.77.0.1)",
        },
        port: u16 {
            default: 7485,
            description: "PSP port (default 7485)",
        },
        size: u32 {
            default: 65536,
            description: "bytes to move (default 65536)",
        },
    },
}

const OWNER: &CStr = c"rkdapl_rust_sample";
const TIMEOUT_MS: u32 = 30_000;

/// Pages of the page LMR, and where in the first its region starts.
const PAGES: usize = 4;
const PAGE_OFFSET: usize = 100;

/// Waits for the next event of `kind` on `evd` (others are an error).
fn expect(evd: &Evd, kind: EventType, what: &str) -> Result<Event> {
    let ev = evd.wait(TIMEOUT_MS).inspect_err(|e| {
        pr_err!("{}: no event: {:?}\n", what, e);
    })?;
    if ev.kind() != kind || ev.status() != 0 {
        pr_err!(
            "{}: event {:?} status {}, expected event {:?}\n",
            what,
            ev.kind(),
            ev.status(),
            kind
        );
        return Err(EPROTO);
    }
    Ok(ev)
}

/// Waits for the DTO completion `cookie` of `ep` with operation `op` and `len` bytes.
fn dto(evd: &Evd, ep: &Ep, cookie: u64, dto_op: DtoOp, len: u64, what: &str) -> Result<Event> {
    let ev = expect(evd, EventType::DtoCompletion, what)?;
    if ev.ep_id() != Some(ep.id()) {
        pr_err!(
            "{}: event of EP {:?}, not of EP {}\n",
            what,
            ev.ep_id(),
            ep.id()
        );
        return Err(EPROTO);
    }
    if ev.cookie() != cookie || ev.op() != Some(dto_op) || ev.transferred_length() != len {
        pr_err!(
            "{}: cookie {} op {:?} length {}, expected {} {:?} {}\n",
            what,
            ev.cookie(),
            ev.op(),
            ev.transferred_length(),
            cookie,
            dto_op,
            len
        );
        return Err(EPROTO);
    }
    Ok(ev)
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 8)) as u8
}

/// A chain of two RDMA WRITEs of `data` reversed, the second with immediate data into a RECV
/// of the server, with the client's completions taken by an upcall instead of its EVD's
/// queue; then a SEND with immediate data of the first 16 bytes. Returns what it wrote.
#[allow(clippy::too_many_arguments)]
fn chain_imm_upcall(
    client: &Ep,
    server: &Ep,
    c_evd: &Evd,
    s_evd: &Evd,
    c_lmr: &mut Lmr,
    s_lmr: &Lmr,
    grant: &RemoteRegion,
    data: &[u8],
) -> Result<KVec<u8>> {
    let half = (data.len() / 2) as u64;
    server.post_recv(&[s_lmr.segment(0, 0)], 6)?;
    let seen = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
    let counted = seen.clone();
    let client_id = client.id();
    c_evd.set_upcall(UpcallPolicy::Many, move |ev: &mut Event| {
        // Called in the send CQ's completion work, once per DTO: count the good ones.
        if ev.kind() == EventType::DtoCompletion
            && ev.dto_status() == Some(DtoStatus::Success)
            && ev.ep_id() == Some(client_id)
        {
            counted.fetch_add(1, Ordering::AcqRel);
        }
    })?;
    // Both halves again, written in reverse (the server's memory still holds `data`).
    let mut rev = KVec::with_capacity(data.len(), GFP_KERNEL)?;
    for b in data.iter().rev() {
        rev.push(*b, GFP_KERNEL)?;
    }
    c_lmr.write(0, &rev)?;
    let c_lmr: &Lmr = c_lmr;
    let (first_seg, second_seg) = ([c_lmr.segment(0, half)], [c_lmr.segment(half, half)]);
    let chain = [
        Dto::new(Op::RdmaWrite(*grant), &first_seg, 7),
        Dto::new(Op::RdmaWriteImm(grant.at(half), 0xfeed), &second_seg, 8),
    ];
    client.post(&chain).map_err(|(e, n)| {
        pr_err!("chain: {:?} after {} posted\n", e, n);
        e
    })?;
    let ev = dto(
        s_evd,
        server,
        6,
        DtoOp::Recv,
        half,
        "RECV of the WRITE with immediate",
    )?;
    if ev.immediate() != Some(0xfeed) || !ev.by_rdma_write_imm() {
        pr_err!("the RECV's immediate data is {:?}\n", ev.immediate());
        return Err(EPROTO);
    }
    for _ in 0..TIMEOUT_MS {
        if seen.load(Ordering::Acquire) == 2 {
            break;
        }
        kernel::time::delay::fsleep(kernel::time::Delta::from_millis(1));
    }
    c_evd.clear_upcall()?;
    if seen.load(Ordering::Acquire) != 2 {
        pr_err!(
            "the upcall saw {} successful WRITEs, not 2\n",
            seen.load(Ordering::Acquire)
        );
        return Err(EPROTO);
    }
    let mut got = KVec::from_elem(0u8, data.len(), GFP_KERNEL)?;
    s_lmr.read(0, &mut got)?;
    if got[..] != rev[..] {
        pr_err!("the server's memory differs from what the chain wrote\n");
        return Err(EIO);
    }
    // A SEND with immediate data (solicited): the bytes land in the server's RECV, whose
    // event has the immediate data and is not by an RDMA WRITE. Into the bytes the chain
    // wrote, which the SEND writes again.
    server.post_recv(&[s_lmr.segment(0, 16)], 9)?;
    let seg = [c_lmr.segment(0, 16)];
    let mut send = Dto::new(Op::SendImm(0xbeef), &seg, 10);
    send.flags.solicited = true;
    client.post(&[send]).map_err(|(e, _)| e)?;
    dto(c_evd, client, 10, DtoOp::SendImm, 16, "SEND with immediate")?;
    let ev = dto(
        s_evd,
        server,
        9,
        DtoOp::Recv,
        16,
        "RECV of the SEND with immediate",
    )?;
    if ev.immediate() != Some(0xbeef) || ev.by_rdma_write_imm() {
        pr_err!(
            "the SEND's RECV: immediate data {:?}, by an RDMA WRITE: {}\n",
            ev.immediate(),
            ev.by_rdma_write_imm()
        );
        return Err(EPROTO);
    }
    s_lmr.read(0, &mut got[..16])?;
    if got[..] != rev[..] {
        pr_err!("the server's RECV differs from what the SEND sent\n");
        return Err(EIO);
    }
    Ok(rev)
}

/// RDMA READs the granted `data` into an LMR over `PAGES` pages the sample allocates, from
/// `PAGE_OFFSET` bytes into the first (the region crosses page boundaries), and compares; then
/// writes a message across the first page boundary of that LMR and RDMA WRITEs it to the grant.
fn page_lmr(
    pz: &Pz,
    client: &Ep,
    c_evd: &Evd,
    s_lmr: &Lmr,
    grant: &RemoteRegion,
    data: &[u8],
) -> Result {
    let len = (PAGES * PAGE_SIZE - PAGE_OFFSET).min(data.len());
    let mut pages = KVec::with_capacity(PAGES, GFP_KERNEL)?;
    for _ in 0..PAGES {
        pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
    }
    let mut p_lmr = Lmr::from_pages(pz, pages, PAGE_OFFSET, len, MemPriv::LocalWrite)?;
    let seg = [p_lmr.segment(0, len as u64)];
    client
        .post(&[Dto::new(Op::RdmaRead(*grant), &seg, 9)])
        .map_err(|(e, _)| e)?;
    dto(
        c_evd,
        client,
        9,
        DtoOp::RdmaRead,
        len as u64,
        "RDMA READ into the page LMR",
    )?;
    let mut got = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    p_lmr.read(0, &mut got)?;
    if got.as_slice() != data.get(..len).ok_or(EINVAL)? {
        pr_err!("the bytes read into the page LMR differ\n");
        return Err(EIO);
    }
    // 20 bytes, the first 8 in the first page.
    const MSG: &[u8; 20] = b"across a page, Rust!";
    let at = PAGE_SIZE - PAGE_OFFSET - 8;
    p_lmr.write(at, MSG)?;
    let seg = [p_lmr.segment(at as u64, MSG.len() as u64)];
    client
        .post(&[Dto::new(Op::RdmaWrite(*grant), &seg, 10)])
        .map_err(|(e, _)| e)?;
    dto(
        c_evd,
        client,
        10,
        DtoOp::RdmaWrite,
        MSG.len() as u64,
        "RDMA WRITE from the page LMR",
    )?;
    let mut msg = [0u8; 20];
    s_lmr.read(0, &mut msg)?;
    if &msg != MSG {
        pr_err!("the message written from the page LMR differs\n");
        return Err(EIO);
    }
    Ok(())
}

/// Opens the device again by the network device of its port 1 and checks it is the same RDMA
/// device; names of no network device, or of one without an RDMA device (`lo`), get `ENODEV`,
/// as `rkdapl_ia_open_netdev` gives for a netdev without RDMA device. Returns the name.
fn open_by_netdev(ia: &Ia) -> Result<CString> {
    let netdev = ia.port_netdev(1)?;
    let again = Ia::open_netdev(&netdev, OWNER)?;
    let (want, got) = (ia.query()?, again.query()?);
    if got.name() != want.name() {
        pr_err!(
            "open_netdev({}) opened another device\n",
            netdev.to_str().unwrap_or("?")
        );
        return Err(EPROTO);
    }
    for bad in [c"rkdapl-none0", c"lo"] {
        match Ia::open_netdev(bad, OWNER) {
            Err(e) if e == ENODEV => {}
            other => {
                let name = bad.to_str().unwrap_or("?");
                pr_err!("open_netdev({}): {:?}, not ENODEV\n", name, other.err());
                return Err(EPROTO);
            }
        }
    }
    Ok(netdev)
}

/// Stored by the upcall of [`accept_in_upcall`]: it has not run yet.
const NO_REQUEST: i32 = 1;
/// Stored by the upcall of [`accept_in_upcall`]: an accept meant to fail did not.
const WRONG_OUTCOME: i32 = 2;

/// A connection accepted inside the PSP EVD's upcall, which runs in rdma_cm's handler of the
/// request: the upcall first tries the connecting client's own EP (`EISCONN`) and too much
/// private data (`EINVAL`), each giving the CR back, then accepts on the server EP; a SEND of
/// `MSG` then crosses the connection. Then an upcall that leaves the CR in its event: the
/// request is rejected when the event goes.
fn accept_in_upcall(ia: &Ia, pz: &Pz, psp_evd: &Evd, here: &SockAddr, s_lmr: &Lmr) -> Result {
    const MSG: &[u8] = b"accepted in an upcall";
    let (c_evd, s_evd) = (Evd::new(ia, 16)?, Evd::new(ia, 16)?);
    let client = Arc::new(Ep::new(pz, &c_evd, &c_evd)?, GFP_KERNEL)?;
    let server = Arc::new(Ep::new(pz, &s_evd, &s_evd)?, GFP_KERNEL)?;
    let outcome = Arc::new(AtomicI32::new(NO_REQUEST), GFP_KERNEL)?;
    let (c, s, out) = (client.clone(), server.clone(), outcome.clone());
    psp_evd.set_upcall(UpcallPolicy::SingleInstance, move |ev: &mut Event| {
        let Some(cr) = ev.take_cr() else { return };
        let too_much = [0u8; rkdapl::api::MAX_PRIVATE_DATA + 1];
        // Refused before the CR is consumed: it comes back each time.
        let cr = match cr.accept(&c, b"") {
            Err((e, Some(cr))) if e == EISCONN => cr,
            _ => return out.store(WRONG_OUTCOME, Ordering::Release),
        };
        let cr = match cr.accept(&s, &too_much) {
            Err((e, Some(cr))) if e == EINVAL => cr,
            _ => return out.store(WRONG_OUTCOME, Ordering::Release),
        };
        let r = cr.accept(&s, b"upcall accept").map_err(|(e, _)| e);
        out.store(r.map_or_else(|e| e.to_errno(), |()| 0), Ordering::Release);
    })?;
    client.connect(here, TIMEOUT_MS, b"upcall client")?;
    let est = expect(
        &c_evd,
        EventType::Established,
        "client ESTABLISHED, accepted in an upcall",
    );
    psp_evd.clear_upcall()?;
    let outcome = outcome.load(Ordering::Acquire);
    if outcome != 0 {
        pr_err!("the upcall's accepts: {}\n", outcome);
        return Err(EPROTO);
    }
    if !est?.private_data().starts_with(b"upcall accept") {
        pr_err!("ESTABLISHED without the private data of the upcall's accept\n");
        return Err(EPROTO);
    }
    expect(
        &s_evd,
        EventType::Established,
        "server ESTABLISHED, accepted in an upcall",
    )?;
    server.post_recv(&[s_lmr.segment(0, 64)], 21)?;
    let mut buf = KVec::new();
    buf.extend_from_slice(MSG, GFP_KERNEL)?;
    let m_lmr = Lmr::from_kvec(pz, buf, MemPrivs::empty())?;
    let seg = [m_lmr.segment(0, MSG.len() as u64)];
    client
        .post(&[Dto::new(Op::Send, &seg, 22)])
        .map_err(|(e, _)| e)?;
    dto(
        &c_evd,
        &client,
        22,
        DtoOp::Send,
        MSG.len() as u64,
        "SEND, accepted in an upcall",
    )?;
    dto(
        &s_evd,
        &server,
        21,
        DtoOp::Recv,
        MSG.len() as u64,
        "RECV, accepted in an upcall",
    )?;
    let mut got = [0u8; MSG.len()];
    s_lmr.read(0, &mut got)?;
    if got != MSG {
        pr_err!("the message over the connection accepted in an upcall differs\n");
        return Err(EIO);
    }

    // An upcall that leaves the CR in its event: rejected when the event goes.
    psp_evd.set_upcall(UpcallPolicy::SingleInstance, |_: &mut Event| {})?;
    let other = Ep::new(pz, &c_evd, &c_evd)?;
    other.connect(here, TIMEOUT_MS, b"")?;
    let rejected = c_evd.wait(TIMEOUT_MS);
    psp_evd.clear_upcall()?;
    let rejected = rejected?;
    // IB CM's reason for a consumer's reject (rkdapl_cr_reject) is 28.
    if rejected.kind() != EventType::PeerRejected || rejected.reject_reason() != Some(28) {
        pr_err!(
            "rejected in an upcall: event {:?} status {}, expected PeerRejected, reason 28\n",
            rejected.kind(),
            rejected.status()
        );
        return Err(EPROTO);
    }
    Ok(())
}

/// An LMR dropped while a grant covers it stays until the grant ends, then frees itself: the
/// PZ's PD goes with the module's other objects (`selftests/rust.sh` looks in `rdma res`).
fn dropped_while_granted(pz: &Pz, server: &Ep, s_evd: &Evd) -> Result {
    let lmr = Lmr::alloc(pz, 4096, MemPriv::LocalWrite | MemPriv::RemoteWrite)?;
    let rmr = Rmr::new(pz)?;
    rmr.bind(&lmr, 0, 4096, MemPriv::RemoteWrite, server, 12)?;
    expect(
        s_evd,
        EventType::RmrBindCompletion,
        "RMR bind, LMR dropped next",
    )?;
    drop(lmr);
    rmr.unbind(server, 13)?;
    let unbind = expect(
        s_evd,
        EventType::RmrBindCompletion,
        "RMR unbind, LMR dropped",
    )?;
    if unbind.op() != Some(DtoOp::RmrUnbind) || unbind.cookie() != 13 {
        return Err(EPROTO);
    }
    Ok(())
}

/// A grant per I/O sleeps nowhere: binding it over an LMR of 8 separately allocated pages
/// (more DMA segments than the MR's page list is built from on the stack), dropping the LMR
/// while granted and unbinding it all run under a spinlock with interrupts off. A sleep there
/// splats ("sleeping function called from invalid context") on a kernel with
/// `CONFIG_DEBUG_ATOMIC_SLEEP`, which fails the suite.
fn grant_in_atomic_context(pz: &Pz, server: &Ep, s_evd: &Evd) -> Result {
    let lock: Pin<KBox<SpinLockIrq<()>>> = KBox::pin_init(
        new_spinlock_irq!((), "rkdapl_rust_sample_atomic"),
        GFP_KERNEL,
    )?;
    const N: usize = 8;
    let mut pages = KVec::with_capacity(N, GFP_KERNEL)?;
    for _ in 0..N {
        pages.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
    }
    let lmr = Lmr::from_pages(
        pz,
        pages,
        0,
        N * PAGE_SIZE,
        MemPriv::LocalWrite | MemPriv::RemoteWrite,
    )?;
    let rmr = Rmr::new(pz)?;
    let g = lock.lock();
    let bound = rmr.bind(
        &lmr,
        0,
        (N * PAGE_SIZE) as u64,
        MemPriv::RemoteWrite,
        server,
        31,
    );
    drop(g);
    bound?;
    expect(
        s_evd,
        EventType::RmrBindCompletion,
        "RMR bind under a spinlock",
    )?;
    let g = lock.lock();
    // Granted: the LMR goes with the grant.
    drop(lmr);
    let unbound = rmr.unbind(server, 32);
    drop(g);
    unbound?;
    let ev = expect(
        s_evd,
        EventType::RmrBindCompletion,
        "RMR unbind under a spinlock",
    )?;
    if ev.op() != Some(DtoOp::RmrUnbind) || ev.cookie() != 32 {
        return Err(EPROTO);
    }
    Ok(())
}

/// One page, lent to an LMR through its own one-entry scatterlist, as a block driver lends a
/// request's pages ([`SgOwner`]).
struct LentPage {
    sg: KBox<kernel::bindings::scatterlist>,
    _page: KVec<u8>,
}

impl LentPage {
    fn new() -> Result<LentPage> {
        let page = KVec::from_elem(0x5au8, PAGE_SIZE, GFP_KERNEL)?;
        let mut sg = KBox::new(kernel::bindings::scatterlist::default(), GFP_KERNEL)?;
        // SAFETY: `sg` is a valid entry to initialise; the buffer is `PAGE_SIZE` bytes of
        // kmalloc memory (in the linear map), which `_page` keeps.
        unsafe { kernel::bindings::sg_init_one(&mut *sg, page.as_ptr().cast(), PAGE_SIZE as u32) };
        Ok(LentPage { sg, _page: page })
    }
}

// SAFETY: The entry and the page it names live in the value and never move (both are heap
// allocations it owns), nothing else reads or maps the entry, and the page is freed only
// with the value, which the LMR drops after unmapping it.
unsafe impl SgOwner for LentPage {
    fn sg(&self) -> (*mut kernel::bindings::scatterlist, usize) {
        (core::ptr::from_ref(&*self.sg).cast_mut(), 1)
    }
}

/// An LMR over lent pages made for one I/O sleeps nowhere with `GFP_ATOMIC`: it is made and
/// dropped under a spinlock with interrupts off (a sleep splats with
/// `CONFIG_DEBUG_ATOMIC_SLEEP`, which fails the suite).
fn lent_lmr_in_atomic_context(pz: &Pz) -> Result {
    let lock: Pin<KBox<SpinLockIrq<()>>> =
        KBox::pin_init(new_spinlock_irq!((), "rkdapl_rust_sample_lent"), GFP_KERNEL)?;
    let owner = LentPage::new()?;
    let g = lock.lock();
    let lmr = Lmr::from_sg_owner_gfp(pz, owner, MemPriv::LocalWrite, GFP_ATOMIC);
    let len = lmr.as_ref().map(|l| l.len()).map_err(|e| *e);
    drop(lmr);
    drop(g);
    if len? != PAGE_SIZE {
        return Err(EPROTO);
    }
    Ok(())
}

/// A grant made with [`Rmr::bind_suppressed`] works like any other (the client writes a page
/// through it) and reports nothing when it succeeds: the server's first event after it is the
/// completion of a SEND posted after it, and the one after the client's WRITE its unbind's.
/// With `pooled`, the grant is one of the server's pooled RMRs
/// ([`Ep::bind_pooled_rmr_suppressed`]), whose REG_MR is posted unsignalled: the SEND's
/// completion covers it.
fn suppressed_bind(
    pz: &Pz,
    client: &Ep,
    server: &Ep,
    c_evd: &Evd,
    s_evd: &Evd,
    pooled: bool,
) -> Result {
    let sink = Lmr::alloc(pz, 4096, MemPriv::LocalWrite | MemPriv::RemoteWrite)?;
    let mut src = Lmr::alloc(pz, 4096, MemPriv::LocalWrite)?;
    let rmr = Rmr::new(pz)?;
    let grant = if pooled {
        server.bind_pooled_rmr_suppressed(&sink, 0, 4096, MemPriv::RemoteWrite, 14)?
    } else {
        rmr.bind_suppressed(&sink, 0, 4096, MemPriv::RemoteWrite, server, 14)?
    };
    // The grant is valid for the peer once the REG_MR has executed: a SEND the server posts
    // after it, on the same send queue, arriving at the client says so (as rkdblk's command
    // SEND carries its grant's rkey). Without an event of the bind's own, nothing else does.
    client.post_recv(&[src.segment(0, 64)], 17)?;
    let note = [sink.segment(0, 8)];
    server
        .post(&[Dto::new(Op::Send, &note, 18)])
        .map_err(|(e, _)| e)?;
    dto(
        s_evd,
        server,
        18,
        DtoOp::Send,
        8,
        "SEND after a suppressed bind (the bind reports no event before it)",
    )?;
    dto(
        c_evd,
        client,
        17,
        DtoOp::Recv,
        8,
        "RECV of the SEND after the suppressed bind",
    )?;
    let mut data = KVec::with_capacity(4096, GFP_KERNEL)?;
    for i in 0..4096 {
        data.push(pattern(i + 7), GFP_KERNEL)?;
    }
    src.write(0, &data)?;
    let seg = [src.segment(0, 4096)];
    client
        .post(&[Dto::new(Op::RdmaWrite(grant), &seg, 16)])
        .map_err(|(e, _)| e)?;
    dto(
        c_evd,
        client,
        16,
        DtoOp::RdmaWrite,
        4096,
        "RDMA WRITE, suppressed grant",
    )?;
    let mut got = KVec::from_elem(0u8, 4096, GFP_KERNEL)?;
    sink.read(0, &mut got)?;
    if got[..] != data[..] {
        pr_err!("the page written through a suppressed grant differs\n");
        return Err(EIO);
    }
    if pooled {
        server.unbind_pooled_rmr(grant.rkey, 15)?;
    } else {
        rmr.unbind(server, 15)?;
    }
    let ev = expect(
        s_evd,
        EventType::RmrBindCompletion,
        "RMR unbind, suppressed bind",
    )?;
    if ev.op() != Some(DtoOp::RmrUnbind) || ev.cookie() != 15 {
        pr_err!(
            "a suppressed bind reported an event: op {:?} cookie {}\n",
            ev.op(),
            ev.cookie()
        );
        return Err(EPROTO);
    }
    Ok(())
}

fn run() -> Result {
    let size = size_param.value() as usize;
    let here = SockAddr::ipv4(addr.value(), port.value());
    let ia = Ia::open_addr(&here, OWNER)?;
    if ia.query()?.max_private_data as usize != rkdapl::api::MAX_PRIVATE_DATA {
        return Err(EPROTO);
    }
    let pz = Pz::new(&ia)?;
    let (c_evd, s_evd, psp_evd) = (Evd::new(&ia, 64)?, Evd::new(&ia, 64)?, Evd::new(&ia, 8)?);
    let mut c_lmr = Lmr::alloc(&pz, size, MemPriv::LocalWrite)?;
    let s_lmr = Lmr::alloc(
        &pz,
        size,
        MemPriv::LocalWrite | MemPriv::RemoteRead | MemPriv::RemoteWrite,
    )?;
    let psp = Psp::new(&ia, port.value(), 4, &psp_evd)?;

    // Connect the client to the PSP; the server accepts on its own EP.
    // The server's EP has 2 pooled RMRs (`suppressed_bind`).
    let pooled = EpAttr {
        max_pooled_rmrs: 2,
        ..EpAttr::default()
    };
    let (client, server) = (
        Ep::new(&pz, &c_evd, &c_evd)?,
        Ep::with_attr(&pz, &s_evd, &s_evd, &pooled)?,
    );
    client.connect(&here, TIMEOUT_MS, b"rust client")?;
    let mut req = expect(&psp_evd, EventType::ConnectionRequest, "connection request")?;
    // The IB CM pads private data to its fixed size: compare the start.
    if !req.private_data().starts_with(b"rust client") {
        pr_err!("connection request without the client's private data\n");
        return Err(EPROTO);
    }
    let cr: Cr = req.take_cr().ok_or(EPROTO)?;
    let who = cr.query()?;
    if who.local_port != port.value() {
        pr_err!("connection request on port {}\n", who.local_port);
        return Err(EPROTO);
    }
    cr.accept(&server, b"rust server").map_err(|(e, _)| e)?;
    let est = expect(&c_evd, EventType::Established, "client ESTABLISHED")?;
    if !est.private_data().starts_with(b"rust server") {
        pr_err!("ESTABLISHED without the server's private data\n");
        return Err(EPROTO);
    }
    expect(&s_evd, EventType::Established, "server ESTABLISHED")?;
    // The client's peer is the PSP it connected to.
    if client.query().remote_addr.map(|a| a.port()) != Some(port.value()) {
        pr_err!("the client's peer address has another port\n");
        return Err(EPROTO);
    }

    // The server grants its LMR; the client writes, then reads back.
    let rmr = Rmr::new(&pz)?;
    let grant = rmr.bind(
        &s_lmr,
        0,
        size as u64,
        MemPriv::RemoteRead | MemPriv::RemoteWrite,
        &server,
        1,
    )?;
    let bind = expect(&s_evd, EventType::RmrBindCompletion, "RMR bind")?;
    if bind.op() != Some(DtoOp::RmrBind) {
        return Err(EPROTO);
    }
    let mut data = KVec::with_capacity(size, GFP_KERNEL)?;
    for i in 0..size {
        data.push(pattern(i), GFP_KERNEL)?;
    }
    c_lmr.write(0, &data)?;
    let all = [c_lmr.segment(0, size as u64)];
    client
        .post(&[Dto::new(Op::RdmaWrite(grant), &all, 2)])
        .map_err(|(e, _)| e)?;
    dto(
        &c_evd,
        &client,
        2,
        DtoOp::RdmaWrite,
        size as u64,
        "RDMA WRITE",
    )?;
    let mut got = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    s_lmr.read(0, &mut got)?;
    if got[..] != data[..] {
        pr_err!("the server's memory differs from what was written\n");
        return Err(EIO);
    }
    c_lmr.write(0, &KVec::from_elem(0u8, size, GFP_KERNEL)?)?;
    let all = [c_lmr.segment(0, size as u64)];
    client
        .post(&[Dto::new(Op::RdmaRead(grant), &all, 3)])
        .map_err(|(e, _)| e)?;
    dto(
        &c_evd,
        &client,
        3,
        DtoOp::RdmaRead,
        size as u64,
        "RDMA READ",
    )?;
    c_lmr.read(0, &mut got)?;
    if got[..] != data[..] {
        pr_err!("the bytes read back differ\n");
        return Err(EIO);
    }

    // A message: SEND from the client, out of a kmalloc'd buffer handed to an LMR, into a RECV
    // of the server.
    server.post_recv(&[s_lmr.segment(0, 64)], 4)?;
    let mut buf = KVec::new();
    buf.extend_from_slice(b"done, from Rust", GFP_KERNEL)?;
    let m_lmr = Lmr::from_kvec(&pz, buf, MemPrivs::empty())?;
    let msg_seg = [m_lmr.segment(0, 15)];
    client
        .post(&[Dto::new(Op::Send, &msg_seg, 5)])
        .map_err(|(e, _)| e)?;
    dto(&c_evd, &client, 5, DtoOp::Send, 15, "SEND")?;
    dto(&s_evd, &server, 4, DtoOp::Recv, 15, "RECV")?;
    let mut msg = [0u8; 15];
    s_lmr.read(0, &mut msg)?;
    if &msg != b"done, from Rust" {
        pr_err!("the message differs\n");
        return Err(EIO);
    }

    let (c, s) = (&client, &server);
    let rev = chain_imm_upcall(c, s, &c_evd, &s_evd, &mut c_lmr, &s_lmr, &grant, &data)?;
    page_lmr(&pz, &client, &c_evd, &s_lmr, &grant, &rev)?;
    accept_in_upcall(&ia, &pz, &psp_evd, &here, &s_lmr)?;
    let netdev = open_by_netdev(&ia)?;

    dropped_while_granted(&pz, &server, &s_evd)?;
    suppressed_bind(&pz, &client, &server, &c_evd, &s_evd, false)?;
    suppressed_bind(&pz, &client, &server, &c_evd, &s_evd, true)?;
    grant_in_atomic_context(&pz, &server, &s_evd)?;
    lent_lmr_in_atomic_context(&pz)?;

    // The server revokes its grant.
    rmr.unbind(&server, 11)?;
    let unbind = expect(&s_evd, EventType::RmrBindCompletion, "RMR unbind")?;
    if unbind.op() != Some(DtoOp::RmrUnbind) || unbind.cookie() != 11 {
        return Err(EPROTO);
    }

    client.disconnect()?;
    expect(&c_evd, EventType::Disconnected, "client DISCONNECTED")?;
    pr_info!(
        "moved {} bytes by RDMA WRITE and READ and a 15-byte SEND, then a chain of two WRITEs (the second with immediate data) completed through an upcall, then an RDMA READ into and a WRITE from an LMR over {} pages; accepted a connection in an upcall (a SEND over it) and rejected one there; opened {} again by its netdev {}; a suppressed bind granted a page and reported nothing; a grant bound and unbound and an LMR over lent pages made and dropped under a spinlock; through rkdapl's Rust API, ok\n",
        size,
        PAGES,
        core::str::from_utf8(ia.query()?.name()).unwrap_or("?"),
        netdev.to_str().unwrap_or("?")
    );
    // Dropped in reverse order: EPs, RMR, PSP, LMRs, EVDs, PZ, IA.
    drop((client, server, rmr, psp));
    Ok(())
}

struct RustSample;

impl kernel::Module for RustSample {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        run()?;
        Ok(RustSample)
    }
}
