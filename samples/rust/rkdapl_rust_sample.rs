// SPDX-License-Identifier: GPL-2.0

//! rkdapl_rust_sample: a Rust consumer of rkdapl's Rust API ([`rkdapl::api`]), not its C ABI.
//!
//!   insmod rkdapl_rust_sample.ko addr=10.77.0.1 [dev=rxe0] [port=7480] [size=65536]
//!
//! In module init, over the device that has `addr`, it listens on a PSP and connects to itself
//! (a loopback pair through rdma_rxe), grants the server's LMR to the client through an RMR,
//! and moves `size` bytes by RDMA WRITE, reads them back by RDMA READ, then SENDs a message;
//! every byte is compared. insmod returns 0 when all of that worked, a negative errno
//! otherwise. Everything is freed by `Drop`.

use crate::module_parameters::{addr, port, size as size_param};
use kernel::prelude::*;
use kernel::rdma::cm::SockAddr;
use rkdapl::api::{event, op, Cr, Ep, Event, Evd, Ia, Lmr, Psp, Pz, Rmr};
use rkdapl::api::{MEM_LOCAL_WRITE, MEM_REMOTE_READ, MEM_REMOTE_WRITE};

module! {
    type: RustSample,
    name: "rkdapl_rust_sample",
    authors: ["rkdapl developers"],
    description: "A Rust consumer of rkdapl's Rust API",
    license: "GPL",
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

/// Waits for the next event of `kind` on `evd` (others are an error).
fn expect(evd: &Evd, kind: u32, what: &str) -> Result<Event> {
    let ev = evd.wait(TIMEOUT_MS).inspect_err(|e| {
        pr_err!("{}: no event: {:?}\n", what, e);
    })?;
    if ev.kind() != kind || ev.status() != 0 {
        pr_err!(
            "{}: event {} status {}, expected event {}\n",
            what,
            ev.kind(),
            ev.status(),
            kind
        );
        return Err(EPROTO);
    }
    Ok(ev)
}

/// Waits for the DTO completion `cookie` with operation `op` and `len` bytes.
fn dto(evd: &Evd, cookie: u64, dto_op: u32, len: u64, what: &str) -> Result {
    let ev = expect(evd, event::DTO_COMPLETION, what)?;
    if ev.cookie() != cookie || ev.op() != dto_op || ev.transferred_length() != len {
        pr_err!(
            "{}: cookie {} op {} length {}, expected {} {} {}\n",
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
    Ok(())
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(31) ^ (i >> 8)) as u8
}

fn run() -> Result {
    let size = size_param.value() as usize;
    let here = SockAddr::ipv4(addr.value(), port.value());
    let ia = Ia::open_addr(&here, OWNER)?;
    let pz = Pz::new(&ia)?;
    let (c_evd, s_evd, psp_evd) = (Evd::new(&ia, 64)?, Evd::new(&ia, 64)?, Evd::new(&ia, 8)?);
    let mut c_lmr = Lmr::alloc(&pz, size + 64, MEM_LOCAL_WRITE)?;
    let s_lmr = Lmr::alloc(&pz, size, MEM_LOCAL_WRITE | MEM_REMOTE_READ | MEM_REMOTE_WRITE)?;
    let psp = Psp::new(&ia, port.value(), 4, &psp_evd)?;

    // Connect the client to the PSP; the server accepts on its own EP.
    let (client, server) = (Ep::new(&pz, &c_evd, &c_evd)?, Ep::new(&pz, &s_evd, &s_evd)?);
    client.connect(&here, TIMEOUT_MS, b"rust client")?;
    let mut req = expect(&psp_evd, event::CONNECTION_REQUEST, "connection request")?;
    // The IB CM pads private data to its fixed size: compare the start.
    if !req.private_data().starts_with(b"rust client") {
        pr_err!("connection request without the client's private data\n");
        return Err(EPROTO);
    }
    let cr: Cr = req.take_cr().ok_or(EPROTO)?;
    cr.accept(&server, b"rust server")?;
    let est = expect(&c_evd, event::ESTABLISHED, "client ESTABLISHED")?;
    if !est.private_data().starts_with(b"rust server") {
        pr_err!("ESTABLISHED without the server's private data\n");
        return Err(EPROTO);
    }
    expect(&s_evd, event::ESTABLISHED, "server ESTABLISHED")?;

    // The server grants its LMR; the client writes, then reads back.
    let rmr = Rmr::new(&pz)?;
    let grant = rmr.bind(&s_lmr, 0, size as u64, MEM_REMOTE_READ | MEM_REMOTE_WRITE, &server, 1)?;
    let bind = expect(&s_evd, event::RMR_BIND_COMPLETION, "RMR bind")?;
    if bind.op() != op::RMR_BIND {
        return Err(EPROTO);
    }
    let mut data = KVec::with_capacity(size, GFP_KERNEL)?;
    for i in 0..size {
        data.push(pattern(i), GFP_KERNEL)?;
    }
    c_lmr.write(0, &data)?;
    client.post_rdma_write(&c_lmr, 0, size as u64, &grant, 2)?;
    dto(&c_evd, 2, op::RDMA_WRITE, size as u64, "RDMA WRITE")?;
    let mut got = KVec::from_elem(0u8, size, GFP_KERNEL)?;
    s_lmr.read(0, &mut got)?;
    if got[..] != data[..] {
        pr_err!("the server's memory differs from what was written\n");
        return Err(EIO);
    }
    c_lmr.write(0, &KVec::from_elem(0u8, size, GFP_KERNEL)?)?;
    client.post_rdma_read(&c_lmr, 0, size as u64, &grant, 3)?;
    dto(&c_evd, 3, op::RDMA_READ, size as u64, "RDMA READ")?;
    c_lmr.read(0, &mut got)?;
    if got[..] != data[..] {
        pr_err!("the bytes read back differ\n");
        return Err(EIO);
    }

    // A message: SEND from the client into a RECV of the server.
    server.post_recv(&s_lmr, 0, 64, 4)?;
    c_lmr.write(size, b"done, from Rust")?;
    client.post_send(&c_lmr, size as u64, 15, 5)?;
    dto(&c_evd, 5, op::SEND, 15, "SEND")?;
    dto(&s_evd, 4, op::RECV, 15, "RECV")?;
    let mut msg = [0u8; 15];
    s_lmr.read(0, &mut msg)?;
    if &msg != b"done, from Rust" {
        pr_err!("the message differs\n");
        return Err(EIO);
    }

    client.disconnect()?;
    expect(&c_evd, event::DISCONNECTED, "client DISCONNECTED")?;
    pr_info!(
        "moved {} bytes by RDMA WRITE and READ and a 15-byte SEND through rkdapl's Rust API, ok\n",
        size
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
