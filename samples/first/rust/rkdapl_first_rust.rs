// SPDX-License-Identifier: GPL-2.0

//! rkdapl_first_rust: a first consumer of rkdapl's Rust API ([`rkdapl::api`]), to copy from.
//!
//!   insmod rkdapl_first_rust.ko addr=0x0a4d0001 [port=7461] [size=65536]
//!
//! `rkdapl_first.c` in Rust: over the RDMA device that has the local IPv4 address `addr` (host
//! order: 10.77.0.1 is 0x0a4d0001), a PSP and an EP connecting to it, one LMR each; the server
//! grants its LMR through an RMR, the client RDMA-WRITEs a pattern into it and RDMA-READs it
//! back, and both copies are compared. init fails with an errno if anything did; every object
//! frees itself when dropped. docs/getting-started.md builds and runs it.

use kernel::prelude::*;
use rkdapl::api::{Dto, Ep, Evd, Event, EventType, Ia, Lmr, MemPriv, Op, Psp, Pz, Rmr, SockAddr};

module! {
    type: FirstRust,
    name: "rkdapl_first_rust",
    authors: ["rkdapl developers"],
    description: "A first rkdapl consumer in Rust: connect, RDMA WRITE, RDMA READ, compare",
    license: "GPL",
    imports_ns: ["RKDAPL"],
    params: {
        addr: u32 { default: 0x0a4d0001, description: "local IPv4 address, host order", },
        port: u16 { default: 7461, description: "PSP port", },
        size: u32 { default: 65536, description: "bytes to write and read back", },
    },
}

const TIMEOUT_MS: u32 = 10_000;

/// Waits for the next event on `evd`, which must be of `kind` with status 0.
fn expect(evd: &Evd, kind: EventType, what: &str) -> Result<Event> {
    let ev = evd
        .wait(TIMEOUT_MS)
        .inspect_err(|e| pr_err!("{what}: no event: {e:?}\n"))?;
    if ev.kind() != kind || ev.status() != 0 {
        let (k, st, dto) = (ev.kind(), ev.status(), ev.dto_status());
        pr_err!("{what}: {k:?}, status {st} {dto:?}, expected {kind:?}\n");
        return Err(EIO);
    }
    Ok(ev)
}

fn run() -> Result {
    let size = module_parameters::size.value() as usize;
    let here = SockAddr::ipv4(
        module_parameters::addr.value(),
        module_parameters::port.value(),
    );
    // Resources: IA, PZ, an EVD per side, an LMR per side (over memory the LMR owns).
    let ia = Ia::open_addr(&here, c"rkdapl_first_rust")?;
    let pz = Pz::new(&ia)?;
    let (c_evd, s_evd) = (Evd::new(&ia, 16)?, Evd::new(&ia, 16)?);
    let mut c_lmr = Lmr::alloc(&pz, size, MemPriv::LocalWrite)?;
    let remote = MemPriv::RemoteRead | MemPriv::RemoteWrite;
    let s_lmr = Lmr::alloc(&pz, size, remote | MemPriv::LocalWrite)?;

    // Connect: the client's EP to the server's PSP; the server accepts on an EP of its own.
    let _psp = Psp::new(&ia, module_parameters::port.value(), 1, &s_evd)?;
    let (client, server) = (Ep::new(&pz, &c_evd, &c_evd)?, Ep::new(&pz, &s_evd, &s_evd)?);
    client.connect(&here, TIMEOUT_MS, b"")?;
    let mut req = expect(&s_evd, EventType::ConnectionRequest, "connection request")?;
    let cr = req.take_cr().ok_or(EPROTO)?;
    cr.accept(&server, b"").map_err(|(e, _cr)| e)?;
    expect(&c_evd, EventType::Established, "client connect")?;
    expect(&s_evd, EventType::Established, "server accept")?;

    // The server grants its LMR: the RemoteRegion (address, rkey) is what a peer would be sent.
    let rmr = Rmr::new(&pz)?;
    let grant = rmr.bind(&s_lmr, 0, size as u64, remote, &server, 1)?;
    expect(&s_evd, EventType::RmrBindCompletion, "RMR bind")?;

    // RDMA WRITE a pattern into the grant; the server's memory must hold it.
    let mut data = KVec::with_capacity(size, GFP_KERNEL)?;
    for i in 0..size {
        data.push((i * 7 + (i >> 8)) as u8, GFP_KERNEL)?;
    }
    c_lmr.write(0, &data)?; // copies, then syncs for the device
    let seg = [c_lmr.segment(0, size as u64)];
    client
        .post(&[Dto::new(Op::RdmaWrite(grant), &seg, 2)])
        .map_err(|(e, _posted)| e)?;
    expect(&c_evd, EventType::DtoCompletion, "RDMA WRITE")?;
    let mut got = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    s_lmr.read(0, &mut got)?; // syncs for the CPU, then copies
    if got[..] != data[..] {
        pr_err!("the server's memory differs from what was written\n");
        return Err(EIO);
    }

    // RDMA READ it back into the cleared client LMR.
    c_lmr.write(0, &KVec::from_elem(0u8, size, GFP_KERNEL)?)?;
    let seg = [c_lmr.segment(0, size as u64)];
    client
        .post(&[Dto::new(Op::RdmaRead(grant), &seg, 3)])
        .map_err(|(e, _posted)| e)?;
    expect(&c_evd, EventType::DtoCompletion, "RDMA READ")?;
    c_lmr.read(0, &mut got)?;
    if got[..] != data[..] {
        pr_err!("the bytes read back differ from what was written\n");
        return Err(EIO);
    }
    let attr = ia.query()?;
    let dev = core::str::from_utf8(attr.name()).unwrap_or("?");
    pr_info!("{size} bytes RDMA WRITTEN and READ back over {dev}, compared: ok\n");
    Ok(()) // everything is freed here, when dropped
}

struct FirstRust;

impl kernel::Module for FirstRust {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        run().inspect_err(|e| pr_err!("failed: {e:?}\n"))?;
        Ok(FirstRust)
    }
}
