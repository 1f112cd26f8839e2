// SPDX-License-Identifier: GPL-2.0

//! Rust RDMA loopback sample: a user of the `kernel::rdma` abstractions alone.
//!
//!   insmod rust_rdma_loopback.ko addr=<IPv4 address, host order> [port=7520] [size=65536]
//!                                [leak=1]
//!
//! The module registers an ib_client, then, on the RDMA device that has `addr` (rdma_cm binds
//! its listener there), connects to itself through the RDMA connection manager: a listener
//! adopts and accepts the connection request, the active side resolves the address and the
//! route and connects; each side's QP has its own CQs and work request pools. The passive side
//! registers a buffer for remote access with a fast registration MR (REG_MR); the active side
//! RDMA WRITEs `size` bytes into it and RDMA READs them back into another buffer, then SENDs a
//! message into a RECV the passive side posted. Then the passive side takes a pool of
//! [`POOL_MRS`] FRWR MRs on its QP: every MR is taken out (one more is refused with `EAGAIN`)
//! and given back, and one MR is mapped over the buffer and its REG_MR posted with interrupts
//! off (under a spinlock: nothing in it may sleep); the active side RDMA WRITEs another
//! pattern through that grant and READs it back. Every byte is compared, the transfers' target
//! included. Loading returns 0 and logs a line ending in "ok" when all of that worked, or
//! logs the step that failed and returns its negative errno.
//!
//! With `leak=1` the module also creates a CQ and an SRQ (with a RECV posted), and keeps every
//! object it made (PD, CQs, the QPs of the connected pair, the FRWR MR, the MR pool with one MR
//! taken out, the DMA regions, the
//! listening and the connected CM ids, the SRQ) in its module state instead of releasing them,
//! also when the client's `remove` callback says that their device is going away; they are
//! dropped when the module is unloaded. A test uses this to remove the device under objects a
//! consumer still holds.

use crate::module_parameters::size as size_param;
use crate::module_parameters::{addr as addr_param, leak as leak_param, port as port_param};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    new_condvar, new_mutex, new_spinlock_irq,
    page::PAGE_SIZE,
    prelude::*,
    sync::{rcu, Arc, ArcBorrow, CondVar, CondVarTimeoutResult, Mutex},
    time::msecs_to_jiffies,
};

// The layer as the kernel crate has it (`kernel::rdma`); this tree's copy is compiled into
// rkdapl.ko, which exports it as `rkdapl::rdma`.
use rkdapl::rdma;

use rdma::{
    bound::{Bound, BoundDevice},
    client::{self, Client},
    cm::{
        CmEvent, CmEventKind, CmHandler, CmId, CmIdRef, ConnParam, ConnRequest, QpInit, SockAddr,
    },
    cq::{Cq, PollContext, Wc},
    device::Device,
    mr::{CpuAccess, DmaRegion, FrMr, MrPool, PoolMr},
    pd::Pd,
    qp::{Qp, QpCap, SendFlag, SendOp, SendWr},
    srq::{Srq, SrqAttr, SrqEvent, SrqOwner},
    wr::{Sge, WrCompletion, WrPool},
    AccessFlag,
};

module! {
    type: RdmaLoopback,
    name: "rust_rdma_loopback",
    authors: ["rkdapl developers"],
    description: "Rust RDMA loopback sample (kernel::rdma)",
    license: "GPL",
    // rkdapl.ko exports the layer in its symbol namespace (the kernel crate would not).
    imports_ns: ["RKDAPL"],
    params: {
        addr: u32 {
            default: 0x0a4d0001,
            description: "IPv4 address (host order) of the RDMA device to use (default 10.77.0.1)",
        },
        port: u16 {
            default: 7520,
            description: "Port the listener binds to (default 7520)",
        },
        size: u32 {
            default: 65536,
            description: "Bytes to RDMA WRITE and READ back (1..=1048576, default 65536)",
        },
        leak: bool {
            default: false,
            description: "Keep every object until the module is unloaded (default 0)",
        },
    },
}

/// The owner name `rdma res` shows for every object of the module.
const OWNER: &CStr = c"rust_rdma_loopback";
/// How long one step (an address or route resolution, a connection, a completion) may take.
const TIMEOUT_MS: u32 = 30_000;
/// The SEND's length in bytes.
const MSG: usize = 64;
/// SGEs per work request: a buffer of the module is one DMA segment or a few.
const MAX_SGE: u32 = 4;
/// The MRs of the passive side's MR pool.
const POOL_MRS: u32 = 4;

/// Devices the client was told about (`add`) and not yet told are going away (`remove`).
static DEVICES: AtomicU32 = AtomicU32::new(0);

kernel::sync::global_lock! {
    // SAFETY: Initialized in the module's `init`, before the client is registered.
    unsafe(uninit) static BINDINGS: Mutex<KVec<Arc<BoundDevice>>> = KVec::new();
}
/// Whether the module keeps objects for `leak=1`.
static LEAKING: AtomicBool = AtomicBool::new(false);

/// The module's ib_client.
struct LoopbackClient;

impl Client for LoopbackClient {
    type Data = ();

    fn add(dev: &Bound<'_>) -> Result {
        BINDINGS.lock().push(dev.binding().clone(), GFP_KERNEL)?;
        DEVICES.fetch_add(1, Ordering::Relaxed);
        pr_info!("client: {} added\n", dev.name());
        Ok(())
    }

    fn remove(dev: &Device, _data: ()) {
        let mut b = BINDINGS.lock();
        b.retain(|b| !b.is(dev));
        if b.is_empty() {
            // The list is in a static, which is never dropped: its memory goes now.
            *b = KVec::new();
        }
        drop(b);
        DEVICES.fetch_sub(1, Ordering::Relaxed);
        if LEAKING.load(Ordering::Relaxed) {
            pr_info!(
                "client: {} going away; leak=1 keeps its objects until rmmod\n",
                dev.name()
            );
        } else {
            pr_info!("client: {} going away\n", dev.name());
        }
    }
}

/// The completions of one work request pool: how many there were, the last one's length and
/// the first error.
#[derive(Default)]
struct DoneState {
    n: u32,
    byte_len: u32,
    failed: Option<&'static CStr>,
}

/// The owner of a [`WrPool`]: counts its completions and wakes up the waiter.
#[pin_data]
struct Done {
    #[pin]
    st: Mutex<DoneState>,
    #[pin]
    cv: CondVar,
}

impl WrCompletion for Done {
    fn done(&self, _ctx: u32, _last: bool, wc: &Wc) {
        let mut s = self.st.lock();
        s.n += 1;
        s.byte_len = wc.byte_len();
        if !wc.is_ok() && s.failed.is_none() {
            s.failed = Some(wc.status_msg());
        }
        drop(s);
        self.cv.notify_all();
    }
}

fn new_pool(n: u32) -> Result<Arc<WrPool<Done>>> {
    WrPool::new(
        try_pin_init!(Done {
            st <- new_mutex!(DoneState::default()),
            cv <- new_condvar!(),
        }? Error),
        n,
    )
}

/// Waits until `pool` has seen `n` completions in all; returns the length of the last one.
fn wait_done(pool: &WrPool<Done>, n: u32, what: &str) -> Result<u32> {
    let done = pool.owner();
    let mut s = done.st.lock();
    while s.n < n && s.failed.is_none() {
        match done
            .cv
            .wait_interruptible_timeout(&mut s, msecs_to_jiffies(TIMEOUT_MS))
        {
            CondVarTimeoutResult::Timeout => {
                pr_err!("{what}: no completion\n");
                return Err(ETIMEDOUT);
            }
            CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            CondVarTimeoutResult::Woken { .. } => {}
        }
    }
    if let Some(msg) = s.failed {
        pr_err!("{what}: work request failed: {msg}\n");
        return Err(EIO);
    }
    Ok(s.byte_len)
}

/// What a QP is made of, until the CM id that gets it creates it.
struct QpParts {
    pd: Arc<Pd>,
    init: QpInit<Done, Done>,
}

/// The state of one side of the connection, or of the listener.
#[derive(Default)]
struct PeerState {
    established: bool,
    disconnected: bool,
    err: Option<Error>,
    /// Active side: its own id, which creates its QP on ROUTE_RESOLVED and then connects.
    own: Option<Arc<CmId<Peer>>>,
    /// Active side, listener: what the QP (the adopted id's, for the listener) is made of.
    qp: Option<QpParts>,
    /// Listener: the handler of the id it adopts, and that id once accepted.
    accept_as: Option<Arc<Peer>>,
    child: Option<CmId<Peer>>,
}

/// The CM event handler of every id of the module.
#[pin_data]
struct Peer {
    #[pin]
    st: Mutex<PeerState>,
    #[pin]
    cv: CondVar,
}

impl Peer {
    fn new() -> Result<Arc<Peer>> {
        Arc::pin_init(
            try_pin_init!(Peer {
                st <- new_mutex!(PeerState::default()),
                cv <- new_condvar!(),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Waits until `done` holds for the state, or an error event arrives.
    fn wait(&self, what: &str, done: impl Fn(&PeerState) -> bool) -> Result {
        let mut s = self.st.lock();
        while !done(&s) {
            if let Some(e) = s.err {
                pr_err!("{what}: {e:?}\n");
                return Err(e);
            }
            match self
                .cv
                .wait_interruptible_timeout(&mut s, msecs_to_jiffies(TIMEOUT_MS))
            {
                CondVarTimeoutResult::Timeout => {
                    pr_err!("{what}: timed out\n");
                    return Err(ETIMEDOUT);
                }
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
                CondVarTimeoutResult::Woken { .. } => {}
            }
        }
        Ok(())
    }
}

/// The parameters both sides connect with: one RDMA READ in flight each way.
fn conn_param() -> ConnParam<'static> {
    ConnParam {
        private_data: &[],
        responder_resources: 1,
        initiator_depth: 1,
        retry_count: 7,
        rnr_retry_count: 7,
    }
}

impl CmHandler for Peer {
    fn event(this: ArcBorrow<'_, Self>, id: &CmIdRef, ev: &CmEvent<'_>) {
        let mut s = this.st.lock();
        let r = match ev.kind() {
            CmEventKind::AddrResolved => id.resolve_route(TIMEOUT_MS),
            CmEventKind::RouteResolved => match (s.own.take(), s.qp.take()) {
                (Some(own), Some(p)) => own
                    .create_qp(&p.pd, p.init)
                    .and_then(|_| id.connect_locked(&conn_param())),
                _ => Err(EINVAL),
            },
            CmEventKind::Established => {
                s.established = true;
                Ok(())
            }
            CmEventKind::Disconnected => {
                s.disconnected = true;
                // The side that did not disconnect first answers the peer's DREQ.
                let _ = id.disconnect();
                Ok(())
            }
            CmEventKind::TimewaitExit => Ok(()),
            // The device went (`leak=1`): the layer revokes the id after this.
            CmEventKind::DeviceRemoval => Ok(()),
            kind => {
                pr_err!("unexpected CM event {kind:?}, status {}\n", ev.status());
                Err(if ev.status() < 0 {
                    Error::from_errno(ev.status())
                } else {
                    ECONNABORTED
                })
            }
        };
        if let Err(e) = r {
            s.err.get_or_insert(e);
        }
        drop(s);
        this.cv.notify_all();
    }

    fn connect_request(
        listener: ArcBorrow<'_, Self>,
        req: ConnRequest<'_, Self>,
        _ev: &CmEvent<'_>,
    ) {
        let mut s = listener.st.lock();
        // Without an adopter (a second request) the request is refused.
        let (Some(peer), Some(p)) = (s.accept_as.take(), s.qp.take()) else {
            return;
        };
        let child = req.adopt(peer);
        match child
            .create_qp(&p.pd, p.init)
            .and_then(|_| child.accept(&conn_param()))
        {
            Ok(()) => s.child = Some(child),
            // The adopted id is dropped here, inside the callback: rdma_cm destroys it.
            Err(e) => {
                s.err.get_or_insert(e);
            }
        }
        drop(s);
        listener.cv.notify_all();
    }
}

/// The owner of the SRQ `leak=1` creates: nothing to do with its RECVs.
struct Sink;

impl SrqOwner for Sink {
    type Claimed = ();

    fn claim(&self, _ctx: u32) {}
    fn done(&self, _claimed: (), _wc: &Wc) {}
    fn unconsumed(&self, _ctx: u32) {}
    fn event(&self, _ev: SrqEvent) {}
}

/// The two work request pools of a QP: SEND queue, RECV queue.
type Pools = (Arc<WrPool<Done>>, Arc<WrPool<Done>>);

fn new_cq(dev: &Bound<'_>) -> Result<Arc<Cq>> {
    Ok(Arc::new(
        Cq::new(dev, 16, 0, PollContext::Workqueue, OWNER)?,
        GFP_KERNEL,
    )?)
}

/// One side's QP: its CQs, pools and capacities, and the pools, for posting.
fn qp_parts(dev: &Bound<'_>, pd: &Arc<Pd>) -> Result<(QpParts, Pools)> {
    let pools = (new_pool(8)?, new_pool(8)?);
    let parts = QpParts {
        pd: pd.clone(),
        init: QpInit {
            send_cq: new_cq(dev)?,
            recv_cq: new_cq(dev)?,
            send_pool: pools.0.clone(),
            recv_pool: pools.1.clone(),
            cap: QpCap {
                max_send_wr: 8,
                max_recv_wr: 8,
                max_send_sge: MAX_SGE,
                max_recv_sge: MAX_SGE,
                ..Default::default()
            },
        },
    };
    Ok((parts, pools))
}

/// Posts one signalled work request of context 0.
/// Runs `f` on `id`'s QP for a post: inside an RCU read-side critical section, which the
/// device's removal waits for; `-ENODEV` once that began.
fn with_qp<R>(id: &CmId<Peer>, f: impl FnOnce(&Qp) -> Result<R>) -> Result<R> {
    let g = rcu::read_lock();
    f(id.qp_with_guard(&g).ok_or(ENODEV)?)
}

fn post(pool: &WrPool<Done>, id: &CmId<Peer>, op: SendOp, sg: &[Sge<'_>]) -> Result {
    with_qp(id, |qp| {
        pool.post_send(
            qp,
            &mut [SendWr::new(op, 0, true, sg, SendFlag::Signaled.into())],
        )
        .map_err(|(e, _)| e)
    })
}

/// A region owning `len` bytes, the `i`-th of them `fill(i)`.
fn region(
    dev: &Bound<'_>,
    len: usize,
    fill: impl Fn(usize) -> u8,
) -> Result<(DmaRegion, CpuAccess)> {
    let mut buf = KVec::with_capacity(len, GFP_KERNEL)?;
    for i in 0..len {
        buf.push(fill(i), GFP_KERNEL)?;
    }
    let (r, cpu) = DmaRegion::from_kvec(dev, buf)?;
    r.sync_for_device(0, len as u64);
    Ok((r, cpu))
}

/// The SGEs of `[0, len)` of `r` under `lkey`.
fn sges(r: &DmaRegion, len: usize, lkey: u32) -> Result<KVec<Sge<'_>>> {
    let mut v = KVec::new();
    r.sges(0, len as u64, lkey, &mut v, GFP_KERNEL)?;
    if v.len() > MAX_SGE as usize {
        return Err(E2BIG);
    }
    Ok(v)
}

/// Whether the bytes of `r` (through `cpu`) are `fill(i)`; logs the first difference.
fn same(
    what: &str,
    r: &DmaRegion,
    cpu: &CpuAccess,
    len: usize,
    fill: impl Fn(usize) -> u8,
) -> Result {
    r.sync_for_cpu(0, len as u64);
    let mut got = KVec::from_elem(0u8, len, GFP_KERNEL)?;
    cpu.read(0, &mut got)?;
    if let Some(i) = (0..len).find(|&i| got[i] != fill(i)) {
        pr_err!("{what}: byte {i} is {:#x}, not {:#x}\n", got[i], fill(i));
        return Err(EBADMSG);
    }
    Ok(())
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) % 251) as u8
}

/// What the active side writes through the grant of a pooled MR.
fn pattern2(i: usize) -> u8 {
    pattern(i) ^ 0x5a
}

/// Takes a pool of [`POOL_MRS`] MRs on `server`'s QP: takes every MR out, checks that one more
/// is refused with `EAGAIN`, gives them back, then takes one and grants the first `size`
/// bytes of `target` with it, mapped and posted (REG_MR, context 1 of `pool`) under a spinlock
/// with interrupts off, as a completion handler or a block driver's `queue_rq` would.
/// Returns the pool and the MR, which the caller holds until the grant's use is over.
fn pool_grant(
    server: &CmId<Peer>,
    pool: &WrPool<Done>,
    target: &DmaRegion,
    size: usize,
) -> Result<(Arc<MrPool>, PoolMr)> {
    let mrs = server.create_mr_pool(POOL_MRS, (size.div_ceil(PAGE_SIZE) + 1) as u32)?;
    let mut taken = KVec::with_capacity(POOL_MRS as usize, GFP_KERNEL)?;
    for _ in 0..POOL_MRS {
        taken.push(mrs.get()?, GFP_KERNEL)?;
    }
    match mrs.get() {
        Err(e) if e == EAGAIN => {}
        Err(e) => {
            pr_err!("MR pool: taking from an empty pool: {e:?}, not EAGAIN\n");
            return Err(EBADMSG);
        }
        Ok(_) => {
            pr_err!(
                "MR pool: took {} MRs from a pool of {POOL_MRS}\n",
                POOL_MRS + 1
            );
            return Err(EBADMSG);
        }
    }
    drop(taken);
    let irq_off = KBox::pin_init(
        new_spinlock_irq!((), "rust_rdma_loopback_grant"),
        GFP_KERNEL,
    )?;
    let mut mr = mrs.get()?;
    {
        let _g = irq_off.lock();
        mr.map_gfp(target, 0, size as u64, GFP_ATOMIC)?;
        let access = AccessFlag::RemoteWrite | AccessFlag::RemoteRead;
        with_qp(server, |qp| pool.post_reg_pool_mr(qp, 1, &mr, access, true))?;
    }
    Ok((mrs, mr))
}

/// What `leak=1` keeps until the module is unloaded, dropped in this order.
struct Leaked {
    _client: Arc<CmId<Peer>>,
    _server: CmId<Peer>,
    _listener: CmId<Peer>,
    _mr: FrMr,
    _mr_pool: Arc<MrPool>,
    /// Held after the CM ids went (and destroyed the pool): a pooled MR outliving its pool.
    _pooled: PoolMr,
    _regions: KVec<(DmaRegion, CpuAccess)>,
    _cq: Cq,
    _srq: Arc<Srq<Sink>>,
    _pd: Arc<Pd>,
}

/// Connects to itself on the device that has `addr`, moves the data and compares it; with
/// `leak`, returns what it made instead of releasing it.
fn run(addr: u32, port: u16, size: usize, leak: bool) -> Result<Option<Leaked>> {
    let here = SockAddr::ipv4(addr, port);
    let lpeer = Peer::new()?;
    let listener = CmId::new(lpeer.clone(), OWNER)?;
    listener
        .id()?
        .bind_addr(&here)
        .inspect_err(|e| pr_err!("bind to address {addr:#x} port {port}: {e:?}\n"))?;
    // The client's binding of the device the listener is bound to: objects are made from it.
    let binding = {
        let id = listener.id()?;
        let d = id.device().ok_or(ENODEV)?;
        BINDINGS
            .lock()
            .iter()
            .find(|b| b.is(d))
            .cloned()
            .ok_or(ENODEV)?
    };
    let dev = BoundDevice::access(&binding)?;
    let pd = Arc::new(Pd::new(&dev, OWNER)?, GFP_KERNEL)?;

    // The passive side: its QP is made when the request arrives.
    let speer = Peer::new()?;
    let (parts, spools) = qp_parts(&dev, &pd)?;
    {
        let mut s = lpeer.st.lock();
        s.accept_as = Some(speer.clone());
        s.qp = Some(parts);
    }
    listener.id()?.listen(1)?;

    // The active side: address and route resolution, QP, connect (in its handler).
    let cpeer = Peer::new()?;
    let client = Arc::new(CmId::new(cpeer.clone(), OWNER)?, GFP_KERNEL)?;
    let (parts, cpools) = qp_parts(&dev, &pd)?;
    {
        let mut s = cpeer.st.lock();
        s.own = Some(client.clone());
        s.qp = Some(parts);
    }
    let r = client
        .id()
        .and_then(|id| id.resolve_addr(None, &here, TIMEOUT_MS))
        .and_then(|()| cpeer.wait("client: connect", |s| s.established));
    // The handler's reference to its own id goes (it is left there if the route was not
    // resolved).
    let own = cpeer.st.lock().own.take();
    drop(own);
    r?;
    speer.wait("server: accept", |s| s.established)?;
    let server = lpeer.st.lock().child.take().ok_or(ENOTCONN)?;
    let lkey = pd.local_dma_lkey();

    // The passive side grants a buffer for RDMA WRITE and READ, and posts a RECV.
    let (target, target_cpu) = region(&dev, size, |_| 0)?;
    let mut mr = FrMr::new(&pd, (size.div_ceil(PAGE_SIZE) + 1) as u32)?;
    mr.map(&target, 0, size as u64)?;
    with_qp(&server, |qp| {
        spools
            .0
            .post_reg_mr(qp, 0, &mr, AccessFlag::RemoteWrite | AccessFlag::RemoteRead)
    })?;
    wait_done(&spools.0, 1, "REG_MR")?;
    let (inbox, inbox_cpu) = region(&dev, MSG, |_| 0)?;
    let inbox_sges = sges(&inbox, MSG, lkey)?;
    with_qp(&server, |qp| spools.1.post_recv(qp, 0, &inbox_sges))?;
    drop(inbox_sges);

    // The active side WRITEs, READs back, SENDs.
    let (src, src_cpu) = region(&dev, size, pattern)?;
    let (back, back_cpu) = region(&dev, size, |_| 0)?;
    let (iova, rkey) = (mr.iova(), mr.rkey());
    let write = SendOp::Write {
        remote_addr: iova,
        rkey,
    };
    post(&cpools.0, &client, write, &sges(&src, size, lkey)?)?;
    wait_done(&cpools.0, 1, "RDMA WRITE")?;
    let read = SendOp::Read {
        remote_addr: iova,
        rkey,
    };
    post(&cpools.0, &client, read, &sges(&back, size, lkey)?)?;
    wait_done(&cpools.0, 2, "RDMA READ")?;
    same("RDMA WRITE target", &target, &target_cpu, size, pattern)?;
    same("RDMA READ back", &back, &back_cpu, size, pattern)?;
    post(&cpools.0, &client, SendOp::Send, &sges(&src, MSG, lkey)?)?;
    wait_done(&cpools.0, 3, "SEND")?;
    let got = wait_done(&spools.1, 1, "RECV")?;
    if got as usize != MSG {
        pr_err!("RECV: {got} bytes, not {MSG}\n");
        return Err(EBADMSG);
    }
    same("RECV", &inbox, &inbox_cpu, MSG, pattern)?;

    // A grant from the passive side's MR pool: the active side WRITEs through it, READs back.
    let (mr_pool, pooled) = pool_grant(&server, &spools.0, &target, size)?;
    wait_done(&spools.0, 2, "REG_MR of a pooled MR")?;
    let (src2, src2_cpu) = region(&dev, size, pattern2)?;
    let (iova, rkey) = (pooled.iova(), pooled.rkey());
    let write = SendOp::Write {
        remote_addr: iova,
        rkey,
    };
    post(&cpools.0, &client, write, &sges(&src2, size, lkey)?)?;
    wait_done(&cpools.0, 4, "RDMA WRITE through a pooled MR")?;
    let read = SendOp::Read {
        remote_addr: iova,
        rkey,
    };
    post(&cpools.0, &client, read, &sges(&back, size, lkey)?)?;
    wait_done(&cpools.0, 5, "RDMA READ through a pooled MR")?;
    same(
        "RDMA WRITE target (pooled MR)",
        &target,
        &target_cpu,
        size,
        pattern2,
    )?;
    same(
        "RDMA READ back (pooled MR)",
        &back,
        &back_cpu,
        size,
        pattern2,
    )?;
    drop((src2, src2_cpu));
    // `src` and `src_cpu` are kept with the others for `leak`.
    drop(src_cpu);
    // A query that may sleep holds the QP through a counted access, not an RCU section.
    let mtu = client.qp().ok_or(ENODEV)?.path_mtu()?;
    pr_info!(
        "{}: {size} bytes RDMA WRITE and READ back, a {MSG}-byte SEND, a pool of {POOL_MRS} \
         MRs emptied (EAGAIN) and refilled, {size} bytes through a pooled MR bound with \
         interrupts off, every byte compared, path MTU {mtu}, ok\n",
        dev.name()
    );

    if !leak {
        client.id()?.disconnect()?;
        cpeer.wait("client: disconnect", |s| s.disconnected)?;
        speer.wait("server: disconnect", |s| s.disconnected)?;
        // Dropped in this order: the connection (each id drains its QP, destroys the MR pool
        // on it, the pooled MR still taken out included, then the QP, then lets its CQs and
        // pools go), the listener, the MR, the pooled MR (given back to no pool), the regions,
        // the PD.
        drop((client, server, listener, mr, mr_pool, pooled));
        return Ok(None);
    }
    let cq = Cq::new(&dev, 4, 0, PollContext::Softirq, OWNER)?;
    let attr = SrqAttr {
        max_wr: 4,
        max_sge: 1,
        limit: 0,
    };
    let srq = Srq::new(&pd, Ok::<_, Error>(Sink), attr)?;
    srq.post_recv(&sges(&inbox, MSG, lkey)?[..1], |_| (), |_| ())?;
    let mut regions = KVec::new();
    for r in [(target, target_cpu), (inbox, inbox_cpu), (back, back_cpu)] {
        regions.push(r, GFP_KERNEL)?;
    }
    drop(src);
    Ok(Some(Leaked {
        _client: client,
        _server: server,
        _listener: listener,
        _mr: mr,
        _mr_pool: mr_pool,
        _pooled: pooled,
        _regions: regions,
        _cq: cq,
        _srq: srq,
        _pd: pd,
    }))
}

struct RdmaLoopback {
    /// Dropped first: before the client registration, which waits for deferred releases.
    _leaked: Option<Leaked>,
    _client: Pin<KBox<client::Registration<LoopbackClient>>>,
}

impl kernel::Module for RdmaLoopback {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: Called once, here, before the client (whose callbacks use it) is registered.
        unsafe { BINDINGS.init() };
        let client = KBox::pin_init(client::Registration::new(OWNER), GFP_KERNEL)?;
        let size = size_param.value() as usize;
        if size == 0 || size > 1 << 20 {
            pr_err!("size={size}: not in 1..=1048576\n");
            return Err(EINVAL);
        }
        let leak = leak_param.value();
        LEAKING.store(leak, Ordering::Relaxed);
        let leaked = run(addr_param.value(), port_param.value(), size, leak)
            .inspect_err(|e| pr_err!("failed: {e:?}\n"))?;
        if leak {
            pr_info!(
                "leak=1: keeping a PD, CQs, a connected pair of CM ids and their QPs, a \
                 listener, an FRWR MR, a pool of {POOL_MRS} MRs with one taken out, DMA regions \
                 and an SRQ until rmmod ({} device(s) known)\n",
                DEVICES.load(Ordering::Relaxed)
            );
        }
        Ok(RdmaLoopback {
            _leaked: leaked,
            _client: client,
        })
    }
}
