// SPDX-License-Identifier: GPL-2.0

//! DTOs: data transfer operations (DAT 2.0 section 6.5) and their completion contexts.
//!
//! Each EP has two rings of contexts, one for its send queue (send, RDMA write/read, RMR
//! bind) and one for RECVs. A DTO takes a free context, keeps the LMRs it touches busy, and is
//! posted as one or more work requests. Only the last is signalled and points at the context's
//! `ib_cqe` (as `rdma_rw` posts its contexts, `drivers/infiniband/core/rw.c`; but see selective
//! signalling below): send-queue work requests complete in order, so its completion, flushed
//! or not, comes after every earlier one of the DTO. The earlier ones point at a second entry
//! of the context and complete only if they fail; that completion records the error, which
//! the last work request (then flushed) reports. So a DTO yields one completion however many
//! work requests it took. With it the context reports one event with the DTO's cookie and
//! the first error, releases the LMRs and goes back on the free list.
//!
//! Selective signalling (`RKDAPL_COMPLETION_SUPPRESS`, DAT's `DAT_COMPLETION_SUPPRESS_FLAG`): a
//! send-queue DTO of one work request may be posted unsignalled. It then yields a completion
//! only if it fails. Send-queue work requests complete in order, so the first successful
//! completion of a later work request also completes it: the ring keeps its unsignalled DTOs
//! in posting order (`Unsignalled`) and finishes those posted before the completing one
//! (`RingShared::reap_before`), without an event. Teardown finishes the rest once the QP is
//! drained. So that unsignalled DTOs cannot hold every slot, one is signalled anyway (still
//! without a success event) once half of the contexts wait unsignalled.
//!
//! This is the one place of the provider that posts to a QP, which the RDMA layer marks
//! `unsafe`: the SAFETY comments below say why the contexts and the memory outlive the work.

use crate::{
    abi::trace,
    evd::{Evd, Event, EventType},
    lmr::Lmr,
    pz::Pz,
    rmr::Rmr,
};
use core::{
    fmt,
    sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering},
};
use kernel::{
    bindings, new_spinlock_irq,
    prelude::*,
    rdma::{
        cq::{Cqe, CqeDone, Wc},
        mr::FrMr,
        qp::{Qp, SendFlags, SendOp, SendWr},
        Access,
    },
    sync::{Arc, SpinLockIrq},
};

/// DTO operations (`enum rkdapl_dto_op`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DtoOp {
    Send = 1,
    Recv = 2,
    RdmaWrite = 3,
    RdmaRead = 4,
    RmrBind = 5,
    RmrUnbind = 6,
    RdmaWriteImm = 7,
    SendInvalidate = 8,
}

/// DTO completion status (`enum rkdapl_dto_status`, after DAT's `DAT_DTO_COMPLETION_STATUS`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DtoStatus {
    Success = 0,
    Flushed = 1,
    LocalLength = 2,
    LocalEp = 3,
    LocalProtection = 4,
    BadResponse = 5,
    RemoteAccess = 6,
    RemoteResponder = 7,
    Transport = 8,
    ReceiverNotReady = 9,
    RmrOperationFailed = 10,
    Generic = 11,
}

impl DtoOp {
    const ALL: [DtoOp; 8] = [
        DtoOp::Send,
        DtoOp::Recv,
        DtoOp::RdmaWrite,
        DtoOp::RdmaRead,
        DtoOp::RmrBind,
        DtoOp::RmrUnbind,
        DtoOp::RdmaWriteImm,
        DtoOp::SendInvalidate,
    ];

    /// The name used in debugfs (and in `rkdapl_trace.h`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            DtoOp::Send => "send",
            DtoOp::Recv => "recv",
            DtoOp::RdmaWrite => "rdma_write",
            DtoOp::RdmaRead => "rdma_read",
            DtoOp::RmrBind => "rmr_bind",
            DtoOp::RmrUnbind => "rmr_unbind",
            DtoOp::RdmaWriteImm => "rdma_write_imm",
            DtoOp::SendInvalidate => "send_inv",
        }
    }

    fn idx(self) -> usize {
        self as usize - 1
    }
}

/// Counters of one ring of DTO contexts, shown in debugfs. Updated with relaxed atomics on the
/// data path: a reader sees each counter exact but not a snapshot of all of them.
#[derive(Default)]
pub(crate) struct DtoStats {
    /// DTOs accepted by the post calls, per `DtoOp`.
    posted: [AtomicU64; 8],
    /// DTOs completed, successful or not, per `DtoOp`.
    completed: [AtomicU64; 8],
    /// Bytes of successful DTOs, per `DtoOp` (RECV: bytes received).
    bytes: [AtomicU64; 8],
    /// DTOs completed in error other than FLUSHED.
    errors: AtomicU64,
    /// DTOs completed FLUSHED (posted when the connection ended).
    flushed: AtomicU64,
    /// Post calls refused (full queue, bad segment, driver error).
    refused: AtomicU64,
}

impl DtoStats {
    fn posted(&self, op: DtoOp) {
        self.posted[op.idx()].fetch_add(1, Ordering::Relaxed);
    }

    fn completed(&self, op: DtoOp, status: DtoStatus, len: u64) {
        self.completed[op.idx()].fetch_add(1, Ordering::Relaxed);
        match status {
            DtoStatus::Success => {
                self.bytes[op.idx()].fetch_add(len, Ordering::Relaxed);
            }
            DtoStatus::Flushed => {
                self.flushed.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// DTOs posted and not yet completed.
    pub(crate) fn in_flight(&self) -> u64 {
        let mut n = 0u64;
        for i in 0..self.posted.len() {
            n = n.wrapping_add(self.posted[i].load(Ordering::Relaxed));
            n = n.wrapping_sub(self.completed[i].load(Ordering::Relaxed));
        }
        n
    }

    /// One line per operation used so far, then the totals: the debugfs `counters` file.
    pub(crate) fn show(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for op in DtoOp::ALL {
            let posted = self.posted[op.idx()].load(Ordering::Relaxed);
            if posted == 0 {
                continue;
            }
            writeln!(
                f,
                "{:<10} posted {} completed {} bytes {}",
                op.name(),
                posted,
                self.completed[op.idx()].load(Ordering::Relaxed),
                self.bytes[op.idx()].load(Ordering::Relaxed)
            )?;
        }
        Ok(())
    }

    pub(crate) fn show_totals(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "in_flight {} errors {} flushed {} refused {}",
            self.in_flight(),
            self.errors.load(Ordering::Relaxed),
            self.flushed.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed)
        )
    }
}

impl DtoStatus {
    fn from_wc(wc: &Wc) -> DtoStatus {
        use DtoStatus::*;
        match wc.status() {
            bindings::ib_wc_status_IB_WC_SUCCESS => Success,
            bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR => Flushed,
            bindings::ib_wc_status_IB_WC_LOC_LEN_ERR => LocalLength,
            bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR => LocalEp,
            bindings::ib_wc_status_IB_WC_LOC_PROT_ERR => LocalProtection,
            bindings::ib_wc_status_IB_WC_BAD_RESP_ERR => BadResponse,
            bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR => RemoteAccess,
            bindings::ib_wc_status_IB_WC_REM_OP_ERR
            | bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR => RemoteResponder,
            bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR => Transport,
            bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR => ReceiverNotReady,
            bindings::ib_wc_status_IB_WC_MW_BIND_ERR => RmrOperationFailed,
            _ => Generic,
        }
    }
}

/// One local segment of a DTO: `length` bytes at `offset` of an LMR.
/// One item in place, more in a vector.
///
/// The post path's segment, SGE and work-request lists hold a single item nearly always (one
/// LMR triplet, a physically contiguous buffer, one work request); then they need no
/// allocation. Longer lists grow a vector with the caller's flags (`GFP_ATOMIC` on the post
/// path).
pub(crate) enum OneOrMore<T> {
    Empty,
    One(T),
    More(KVec<T>),
}

impl<T> OneOrMore<T> {
    /// Appends `v`; allocates only from the second item on. On failure the list keeps what
    /// it held (and `v` is dropped). Always inlined: it runs once per SGE of a DTO, and once
    /// it had a second caller (`inline_sges`) LLVM stopped inlining it into the SGE loop,
    /// which cost about 23 instructions per SGE (`make bench`, `buf=sparse`).
    #[inline(always)]
    pub(crate) fn push(&mut self, v: T, flags: kernel::alloc::Flags) -> Result {
        match self {
            OneOrMore::Empty => *self = OneOrMore::One(v),
            OneOrMore::One(_) => {
                let mut k = KVec::with_capacity(4, flags)?;
                if let OneOrMore::One(first) = core::mem::replace(self, OneOrMore::Empty) {
                    // Cannot fail: the capacity is 4.
                    let _ = k.push_within_capacity(first);
                }
                let _ = k.push_within_capacity(v);
                *self = OneOrMore::More(k);
            }
            OneOrMore::More(k) => k.push(v, flags)?,
        }
        Ok(())
    }

    /// Makes room for `n` items in all, so that pushing them into the empty list does not
    /// allocate.
    pub(crate) fn reserve(&mut self, n: usize, flags: kernel::alloc::Flags) -> Result {
        if n > 1 && matches!(self, OneOrMore::Empty) {
            *self = OneOrMore::More(KVec::with_capacity(n, flags)?);
        }
        Ok(())
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            OneOrMore::Empty => &[],
            OneOrMore::One(v) => core::slice::from_ref(v),
            OneOrMore::More(k) => k,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            OneOrMore::Empty => &mut [],
            OneOrMore::One(v) => core::slice::from_mut(v),
            OneOrMore::More(k) => k,
        }
    }
}

pub(crate) struct Segment {
    pub(crate) lmr: Arc<Lmr>,
    pub(crate) offset: u64,
    pub(crate) length: u64,
}

/// `RKDAPL_EVENT_WITH_IMM`: the RECV's completion carries immediate data.
pub(crate) const EVENT_WITH_IMM: u32 = 1 << 0;
/// `RKDAPL_EVENT_RDMA_WRITE_IMM`: an RDMA WRITE with immediate consumed the RECV.
pub(crate) const EVENT_RDMA_WRITE_IMM: u32 = 1 << 1;
/// `RKDAPL_EVENT_INVALIDATED`: a SEND with invalidate consumed the RECV.
pub(crate) const EVENT_INVALIDATED: u32 = 1 << 2;

/// Flags of a send-queue DTO (`enum rkdapl_completion_flags`, DAT's `DAT_COMPLETION_FLAGS`).
#[derive(Clone, Copy, Default)]
pub(crate) struct DtoFlags {
    /// `RKDAPL_COMPLETION_SUPPRESS`: no event on success (selective signalling).
    pub(crate) suppress: bool,
    /// `RKDAPL_COMPLETION_SOLICITED_WAIT`: the solicited-event bit (`IB_SEND_SOLICITED`).
    pub(crate) solicited: bool,
    /// `RKDAPL_COMPLETION_BARRIER_FENCE`: start after earlier RDMA READs completed
    /// (`IB_SEND_FENCE`).
    pub(crate) fence: bool,
}

/// One send-queue DTO to post, alone or in a chain.
pub(crate) struct SendDto<'a> {
    /// `Send`, `SendInvalidate`, `RdmaWrite`, `RdmaWriteImm` or `RdmaRead`.
    pub(crate) op: DtoOp,
    /// The local segments.
    pub(crate) segs: &'a [Segment],
    /// RDMA operations: the peer's address and rkey; `None` for SENDs.
    pub(crate) remote: Option<(u64, u32)>,
    /// `RdmaWriteImm`: the immediate data (host order).
    pub(crate) imm: u32,
    /// `SendInvalidate`: the peer's rkey to invalidate.
    pub(crate) invalidate_rkey: u32,
    /// The consumer's cookie.
    pub(crate) cookie: u64,
    pub(crate) flags: DtoFlags,
}

/// A DTO whose context is taken and armed, ready for its work requests.
struct Prepared<'r> {
    ctx: &'r DtoCtx,
    sges: OneOrMore<bindings::ib_sge>,
    nwr: u32,
    /// Bytes of the local segments.
    total: u64,
    signalled: bool,
    /// Posted with `IB_SEND_INLINE`: `sges` hold kernel virtual addresses.
    inline: bool,
    /// Inline, and its segments were synced for the CPU (`sync_inline_back` undoes it).
    synced: bool,
}

struct CtxState {
    cookie: u64,
    op: DtoOp,
    len: u64,
    /// 1 from arming until the DTO is finished: by its last work request's completion, or,
    /// for one posted unsignalled or stopped inside by its post call, when a later
    /// completion or the teardown reaps it; 0 while the context is free.
    pending: u32,
    /// Send-queue slots the posted work requests hold, returned at the last completion.
    nwr: u32,
    status: DtoStatus,
    imm: u32,
    /// RECV: `RKDAPL_EVENT_*` flags of the completion.
    recv_flags: u32,
    /// RECV with `RKDAPL_EVENT_INVALIDATED`: the rkey the peer invalidated.
    inv_rkey: u32,
    lmrs: KVec<Arc<Lmr>>,
    rmr: Option<Arc<Rmr>>,
    /// The post call failed after posting some of the DTO's work requests (the caller was
    /// given the error): the context is finished without an event.
    silent: bool,
    /// `RKDAPL_COMPLETION_SUPPRESS`: no event if the DTO succeeds.
    suppress: bool,
    /// The post call stopped inside the DTO: its posted work requests are unsignalled ones
    /// that report nothing if they succeed. Finished (silently) by a later successful
    /// completion (`RingShared::reap_before`) or at teardown, once the QP is drained
    /// (`DtoRing::reap_all`).
    orphan: bool,
}

/// The unsignalled DTOs of a send queue, oldest first: (sequence number, context address).
///
/// # Invariants
///
/// `buf` has a fixed length (the ring's number of contexts); `head < buf.len()`,
/// `len <= buf.len()`. Entries may be stale (their context finished by an error completion,
/// or never posted); a context's current sequence number tells.
struct Unsignalled {
    buf: KVec<(u64, usize)>,
    head: usize,
    len: usize,
}

impl Unsignalled {
    fn push(&mut self, e: (u64, usize)) -> bool {
        let cap = self.buf.len();
        if self.len == cap {
            return false;
        }
        let at = self.head + self.len;
        let at = if at >= cap { at - cap } else { at };
        match self.buf.get_mut(at) {
            Some(slot) => *slot = e,
            None => return false,
        }
        self.len += 1;
        true
    }

    /// Removes and returns the oldest entry if its sequence number is below `seq`.
    fn pop_before(&mut self, seq: u64) -> Option<(u64, usize)> {
        if self.len == 0 {
            return None;
        }
        let e = *self.buf.get(self.head)?;
        if e.0 >= seq {
            return None;
        }
        self.head += 1;
        if self.head == self.buf.len() {
            self.head = 0;
        }
        self.len -= 1;
        Some(e)
    }
}

/// What the completion path of a ring needs.
#[pin_data]
pub(crate) struct RingShared {
    #[pin]
    free: SpinLockIrq<KVec<u16>>,
    /// Free work-request slots of the queue.
    credits: AtomicU32,
    evd: Arc<Evd>,
    /// The EP's PZ, for the receive queue: a SEND with invalidate ends the grant it names.
    pz: Option<Arc<Pz>>,
    ep_handle: AtomicUsize,
    /// The EP's number (debugfs directory, trace events, log lines).
    ep_id: u32,
    pub(crate) stats: DtoStats,
    /// Sequence number of the next send-queue DTO (posting order).
    next_seq: AtomicU64,
    /// Unsignalled DTOs waiting for a later completion; `n_unsignalled` mirrors its length
    /// so that completions need not lock it when it is empty.
    #[pin]
    unsignalled: SpinLockIrq<Unsignalled>,
    n_unsignalled: AtomicUsize,
}

/// The completion context of one DTO.
///
/// # Invariants
///
/// `cqe` is the first field and was made by `Cqe::new::<DtoCtx>()`; `early` was made by
/// `EarlyCqe::new()`. While `st.pending` is non-zero the context is off the free list and owned
/// by its posted work requests.
#[repr(C)]
#[pin_data]
pub(crate) struct DtoCtx {
    cqe: Cqe,
    /// The entry of the DTO's unsignalled work requests before its last.
    early: EarlyCqe,
    ring: Arc<RingShared>,
    idx: u16,
    /// Sequence number of the current send-queue DTO; written under `st`.
    seq: AtomicU64,
    #[pin]
    st: SpinLockIrq<CtxState>,
}

// SAFETY: `DtoCtx` is `repr(C)` with its `Cqe` first, made by `Cqe::new::<DtoCtx>()`. Contexts
// live in their EP's `DtoRing`, which is dropped only after the EP's QP has been drained and
// destroyed (`Ep::teardown`, then the CM id owning the QP is dropped before the EP), so every
// completion is delivered while the context exists.
unsafe impl CqeDone for DtoCtx {
    fn done(this: &Self, wc: &Wc) {
        if wc.is_ok() {
            // In-order completion: unsignalled DTOs posted before this one are done too.
            this.ring.reap_before(this.seq.load(Ordering::Acquire));
        }
        // The flags of a failed completion are undefined (IB spec 11.4.2.1).
        let inv_rkey = wc.is_ok().then(|| wc.invalidated_rkey()).flatten();
        if let (Some(rkey), Some(pz)) = (inv_rkey, this.ring.pz.as_ref()) {
            // The device invalidated the rkey before completing the RECV; end the grant first,
            // so that a consumer seeing the event finds the RMR unbound. Completions run in
            // process context (`IB_POLL_WORKQUEUE`), where the RMR's mutex may be taken.
            if let Some(rmr) = pz.take_grant(rkey) {
                rmr.remote_invalidated(rkey);
            }
        }
        let mut st = this.st.lock();
        st.pending = st.pending.saturating_sub(1);
        if !wc.is_ok() {
            let status = DtoStatus::from_wc(wc);
            if st.status == DtoStatus::Success {
                st.status = status;
            }
            if status != DtoStatus::Flushed {
                trace::log_dto_error(
                    this.ring.ep_id,
                    st.op as u32,
                    st.cookie,
                    status as i32,
                    wc.status(),
                );
            }
        }
        if st.op == DtoOp::Recv && wc.is_ok() {
            // For an RDMA WRITE with immediate, the length the peer wrote to its grant.
            st.len = u64::from(wc.byte_len());
            st.imm = wc.imm_data().unwrap_or(0);
            st.recv_flags = 0;
            if wc.imm_data().is_some() {
                st.recv_flags |= EVENT_WITH_IMM;
            }
            if wc.opcode() == bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM {
                st.recv_flags |= EVENT_RDMA_WRITE_IMM;
            }
            if let Some(rkey) = inv_rkey {
                st.recv_flags |= EVENT_INVALIDATED;
                st.inv_rkey = rkey;
            }
        }
        if st.pending == 0 {
            this.finish(st);
        }
    }
}

/// The completion entry of a DTO's work requests before its last: they are unsignalled, so
/// they complete only in error (or flushed after an error), and then only record the status.
///
/// # Invariants
///
/// Every `EarlyCqe` is the `early` field of a [`DtoCtx`].
#[repr(C)]
struct EarlyCqe {
    cqe: Cqe,
}

impl EarlyCqe {
    /// Only for [`DtoCtx::early`] (the type invariant).
    fn new() -> EarlyCqe {
        EarlyCqe {
            cqe: Cqe::new::<EarlyCqe>(),
        }
    }
}

// SAFETY: `EarlyCqe` is `repr(C)` with its `Cqe` first, made by `Cqe::new::<EarlyCqe>()`; it is
// a field of a `DtoCtx`, which outlives every completion of its work requests (see the
// `CqeDone` impl of `DtoCtx`).
unsafe impl CqeDone for EarlyCqe {
    fn done(this: &Self, wc: &Wc) {
        let field = core::ptr::from_ref(this).cast_mut();
        // SAFETY: By the type invariant `this` is the `early` field of a `DtoCtx`, so the
        // containing struct starts that field's offset before it, in the same allocation, and
        // is alive (see above); it is only read through shared references.
        let ctx = unsafe { &*kernel::container_of!(field, DtoCtx, early) };
        if wc.is_ok() {
            // Cannot happen: these work requests are unsignalled.
            return;
        }
        let status = DtoStatus::from_wc(wc);
        let mut st = ctx.st.lock();
        if st.status == DtoStatus::Success {
            st.status = status;
        }
        if status != DtoStatus::Flushed {
            trace::log_dto_error(ctx.ring.ep_id, st.op as u32, st.cookie, status as i32, wc.status());
        }
    }
}

impl DtoCtx {
    /// The DTO is over (its last work request completed, or none is left to complete): report
    /// it, release what it held and put the context back on the free list.
    fn finish(&self, mut st: kernel::sync::lock::Guard<'_, CtxState, kernel::sync::lock::spinlock::SpinLockIrqBackend>) {
        let ring = &self.ring;
        let mut ev = Event::new(match st.op {
            DtoOp::RmrBind | DtoOp::RmrUnbind => EventType::RmrBindCompletion,
            _ => EventType::DtoCompletion,
        });
        ev.status = st.status as i32;
        ev.ep = ring.ep_handle.load(Ordering::Relaxed);
        ev.cookie = st.cookie;
        ev.transferred_length = if st.status == DtoStatus::Success {
            st.len
        } else {
            0
        };
        ev.op = st.op as u32;
        ev.immediate = st.imm;
        ev.flags = st.recv_flags;
        ev.invalidated_rkey = st.inv_rkey;
        ring.stats.completed(st.op, st.status, ev.transferred_length);
        trace::completion(ring.ep_id, ev.op, ev.cookie, ev.status, ev.transferred_length);
        let silent = core::mem::replace(&mut st.silent, false)
            || (st.suppress && st.status == DtoStatus::Success);
        let nwr = st.nwr;
        let mut lmrs = core::mem::take(&mut st.lmrs);
        let rmr = st.rmr.take();
        drop(st);
        for l in &lmrs {
            l.inflight.fetch_sub(1, Ordering::AcqRel);
        }
        // The references are dropped outside the lock (the last one of an LMR or RMR the
        // consumer freed meanwhile unmaps or deregisters, which may sleep); the emptied vector
        // goes back so that the next DTO on this context does not allocate.
        lmrs.clear();
        drop(rmr);
        self.st.lock().lmrs = lmrs;
        ring.credits.fetch_add(nwr, Ordering::AcqRel);
        ring.release(self.idx);
        if !silent {
            ring.evd.post(ev);
        }
    }
}

impl RingShared {
    /// Finishes, without an event, every unsignalled DTO posted before sequence number `seq`
    /// that is still outstanding: a later work request completed, so they did too. Called
    /// from the send CQ's completion handler (one at a time per CQ) and from teardown after
    /// the QP is drained. Never with a context's lock held.
    fn reap_before(&self, seq: u64) {
        if self.n_unsignalled.load(Ordering::Acquire) == 0 {
            return;
        }
        loop {
            let Some((s, addr)) = self.unsignalled.lock().pop_before(seq) else {
                return;
            };
            self.n_unsignalled.fetch_sub(1, Ordering::AcqRel);
            // SAFETY: `addr` is the address of a context of this ring (`DtoRing::prepare` and
            // `DtoRing::finish_post` push only those). Contexts are pinned in their `DtoRing`, which is dropped only
            // after the QP is drained and this queue reaped (`DtoRing::reap_all`), and
            // completions stop with the drain, so the context is alive.
            let ctx = unsafe { &*(addr as *const DtoCtx) };
            let mut st = ctx.st.lock();
            // A stale entry: the DTO failed (its completion finished it) or was never posted,
            // and the context may be serving another DTO by now.
            if ctx.seq.load(Ordering::Acquire) == s && st.pending > 0 {
                st.pending = 0;
                ctx.finish(st);
            }
        }
    }

    fn release(&self, idx: u16) {
        let mut f = self.free.lock();
        // Cannot fail: the list has room for every context.
        let _ = f.push_within_capacity(idx);
    }
}

/// The contexts of one queue of an EP.
pub(crate) struct DtoRing {
    ctxs: KVec<Pin<KBox<DtoCtx>>>,
    shared: Arc<RingShared>,
}

impl DtoRing {
    /// `n` contexts for a queue of `depth` work requests of EP number `ep_id`, whose
    /// completions go to `evd`.
    /// `pz` is given for a receive queue: completions of SENDs with invalidate end the
    /// grant of that PZ they name.
    pub(crate) fn new(
        n: u32,
        depth: u32,
        ep_id: u32,
        evd: Arc<Evd>,
        pz: Option<Arc<Pz>>,
    ) -> Result<DtoRing> {
        let n = n.min(u32::from(u16::MAX));
        let mut free = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for i in 0..n {
            free.push(i as u16, GFP_KERNEL)?;
        }
        let mut ubuf = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for _ in 0..n {
            ubuf.push((0u64, 0usize), GFP_KERNEL)?;
        }
        let shared = Arc::pin_init(
            pin_init!(RingShared {
                free <- new_spinlock_irq!(free, "rkdapl_dto_free"),
                credits: AtomicU32::new(depth),
                evd,
                pz,
                ep_handle: AtomicUsize::new(0),
                ep_id,
                stats: DtoStats::default(),
                next_seq: AtomicU64::new(1),
                unsignalled <- new_spinlock_irq!(
                    Unsignalled { buf: ubuf, head: 0, len: 0 },
                    "rkdapl_dto_unsignalled"
                ),
                n_unsignalled: AtomicUsize::new(0),
            }),
            GFP_KERNEL,
        )?;
        let mut ctxs = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for i in 0..n {
            let ring = shared.clone();
            let c = KBox::pin_init(
                pin_init!(DtoCtx {
                    cqe: Cqe::new::<DtoCtx>(),
                    early: EarlyCqe::new(),
                    ring,
                    idx: i as u16,
                    seq: AtomicU64::new(0),
                    st <- new_spinlock_irq!(
                        CtxState {
                            cookie: 0,
                            op: DtoOp::Send,
                            len: 0,
                            pending: 0,
                            nwr: 0,
                            status: DtoStatus::Success,
                            imm: 0,
                            recv_flags: 0,
                            inv_rkey: 0,
                            lmrs: KVec::new(),
                            rmr: None,
                            silent: false,
                            suppress: false,
                            orphan: false,
                        },
                        "rkdapl_dto_ctx"
                    ),
                }),
                GFP_KERNEL,
            )?;
            ctxs.push(c, GFP_KERNEL)?;
        }
        Ok(DtoRing { ctxs, shared })
    }

    /// Finishes the unsignalled DTOs still outstanding once the QP is drained (they
    /// succeeded: a failed or flushed work request would have completed), and the DTOs a post
    /// call stopped inside of. Process context.
    pub(crate) fn reap_all(&self) {
        self.shared.reap_before(u64::MAX);
        for ctx in &self.ctxs {
            let mut st = ctx.st.lock();
            if st.orphan && st.pending > 0 {
                st.orphan = false;
                st.pending = 0;
                ctx.finish(st);
            }
        }
    }

    pub(crate) fn set_ep_handle(&self, h: usize) {
        self.shared.ep_handle.store(h, Ordering::Relaxed);
    }

    /// The ring's counters.
    pub(crate) fn stats(&self) -> &DtoStats {
        &self.shared.stats
    }

    /// Takes a free context and `nwr` queue slots.
    fn take(&self, nwr: u32) -> Result<&DtoCtx> {
        let mut credits = self.shared.credits.load(Ordering::Acquire);
        loop {
            if credits < nwr {
                return Err(ENOSPC);
            }
            match self.shared.credits.compare_exchange(
                credits,
                credits - nwr,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(c) => credits = c,
            }
        }
        let Some(idx) = self.shared.free.lock().pop() else {
            self.shared.credits.fetch_add(nwr, Ordering::AcqRel);
            return Err(ENOSPC);
        };
        Ok(&self.ctxs[usize::from(idx)])
    }

    /// Returns a context whose work requests were never posted.
    fn untake(&self, ctx: &DtoCtx, nwr: u32) {
        let mut st = ctx.st.lock();
        st.pending = 0;
        for l in &st.lmrs {
            l.inflight.fetch_sub(1, Ordering::AcqRel);
        }
        st.lmrs.clear();
        st.rmr = None;
        drop(st);
        self.shared.credits.fetch_add(nwr, Ordering::AcqRel);
        self.shared.release(ctx.idx);
    }

    #[expect(clippy::too_many_arguments)]
    fn arm(
        ctx: &DtoCtx,
        op: DtoOp,
        cookie: u64,
        len: u64,
        nwr: u32,
        segs: &[Segment],
        rmr: Option<Arc<Rmr>>,
        suppress: bool,
    ) -> Result {
        let mut st = ctx.st.lock();
        if op != DtoOp::Recv {
            let seq = ctx.ring.next_seq.fetch_add(1, Ordering::AcqRel);
            ctx.seq.store(seq, Ordering::Release);
        }
        st.suppress = suppress;
        st.cookie = cookie;
        st.op = op;
        st.len = len;
        // One signalled work request per DTO, its last (see the module documentation).
        st.pending = 1;
        st.nwr = nwr;
        st.orphan = false;
        st.status = DtoStatus::Success;
        st.imm = 0;
        st.recv_flags = 0;
        st.inv_rkey = 0;
        st.rmr = rmr;
        st.silent = false;
        st.lmrs.clear();
        for s in segs {
            st.lmrs.push(s.lmr.clone(), GFP_ATOMIC)?;
            s.lmr.inflight.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// The SGEs of `segs`, checked against the EP's PZ. Allocates only for more than one SGE.
    fn sges(segs: &[Segment], need_write: bool) -> Result<(OneOrMore<bindings::ib_sge>, u64)> {
        let mut sges = OneOrMore::Empty;
        let mut total = 0u64;
        for s in segs {
            if need_write && s.lmr.privileges & crate::lmr::MEM_LOCAL_WRITE == 0 {
                return Err(EACCES);
            }
            // The region stays mapped while the DTO runs: device removal unmaps it only after
            // draining every EP of the device.
            s.lmr.region.try_access().ok_or(ENODEV)?.for_each_sge(
                s.offset,
                s.length,
                s.lmr.lkey(),
                |sge| sges.push(sge, GFP_ATOMIC),
            )?;
            total = total.checked_add(s.length).ok_or(EINVAL)?;
        }
        if total > u64::from(u32::MAX) {
            return Err(EMSGSIZE);
        }
        Ok((sges, total))
    }

    /// The SGEs of an inline DTO over `segs`, or `None` if it cannot go inline: inline data
    /// (`IB_SEND_INLINE`) is copied by the CPU when the work request is posted, so an SGE
    /// names the segment's kernel virtual address, which only virtually contiguous LMRs have
    /// (`Lmr::cpu_addr`), and all of it must fit in the QP's `max_inline` bytes. With the
    /// SGEs: their total and whether the segments were synced for the CPU. Checks the
    /// segments as [`Self::sges`] does.
    fn inline_sges(
        segs: &[Segment],
        max_inline: u32,
        max_sge: usize,
    ) -> Result<Option<(OneOrMore<bindings::ib_sge>, u64, bool)>> {
        let total = segs.iter().map(|s| s.length).fold(0u64, u64::saturating_add);
        if total == 0 || total > u64::from(max_inline) || segs.len() > max_sge {
            return Ok(None);
        }
        // Everything that can send the DTO the other way, or refuse it, before any sync.
        for s in segs {
            if s.lmr.cpu_addr.is_none() {
                return Ok(None);
            }
            if s.offset.checked_add(s.length).is_none_or(|end| end > s.lmr.len) {
                return Err(ERANGE);
            }
        }
        let mut sges = OneOrMore::Empty;
        let mut synced = false;
        for (i, s) in segs.iter().enumerate() {
            // After a device removal the LMR's memory is no longer the device's to use. The
            // CPU reads the bytes now: make what the device wrote there (a RECV or READ being
            // forwarded) visible first, where the device needs it; `sync_inline_back` returns
            // the range afterwards (here, if the DTO fails on the way).
            let step = s.lmr.region.try_access().ok_or(ENODEV).and_then(|region| {
                if region.needs_sync() {
                    region.sync_for_cpu(s.offset, s.length);
                    synced = true;
                }
                sges.push(
                    bindings::ib_sge {
                        // Checked above: the LMR has a kernel virtual address.
                        addr: (s.lmr.cpu_addr.unwrap_or(0) as u64).wrapping_add(s.offset),
                        // Cannot truncate: `total` fits in `max_inline`.
                        length: s.length as u32,
                        lkey: s.lmr.lkey(),
                    },
                    GFP_ATOMIC,
                )
            });
            if let Err(e) = step {
                if synced {
                    Self::sync_inline_back(segs.get(..=i).unwrap_or(segs));
                }
                return Err(e);
            }
        }
        Ok(Some((sges, total, synced)))
    }

    /// Hands the segments of an inline DTO back to the device once the driver has copied
    /// them (`inline_sges` synced them for the CPU), as the DMA API wants before the device
    /// may use them again. A no-op on DMA-coherent machines. Any context.
    fn sync_inline_back(segs: &[Segment]) {
        for s in segs {
            if let Some(r) = s.lmr.region.try_access() {
                if r.needs_sync() {
                    r.sync_for_device(s.offset, s.length);
                }
            }
        }
    }

    /// Takes a context for `d` and arms it: the first step of posting it. SENDs and RDMA
    /// WRITEs of at most `max_inline` bytes go inline where their LMRs allow it. Any context.
    fn prepare(&self, d: &SendDto<'_>, max_sge: usize, max_inline: u32) -> Result<Prepared<'_>> {
        let one_wr = matches!(d.op, DtoOp::Send | DtoOp::SendInvalidate);
        let rdma = matches!(d.op, DtoOp::RdmaWrite | DtoOp::RdmaWriteImm | DtoOp::RdmaRead);
        if !(one_wr || rdma) || rdma != d.remote.is_some() {
            return Err(EINVAL);
        }
        // IB spec 9.2.3: the solicited-event bit exists on SENDs and RDMA WRITEs with immediate.
        if d.flags.solicited && !(one_wr || d.op == DtoOp::RdmaWriteImm) {
            return Err(EINVAL);
        }
        let inline = if d.op == DtoOp::RdmaRead {
            None
        } else {
            Self::inline_sges(d.segs, max_inline, max_sge)?
        };
        let is_inline = inline.is_some();
        let (sges, total, synced) = match inline {
            Some(x) => x,
            None => {
                let (sges, total) = Self::sges(d.segs, d.op == DtoOp::RdmaRead)?;
                (sges, total, false)
            }
        };
        let nwr = sges.as_slice().len().div_ceil(max_sge).max(1);
        if nwr > crate::ep::MAX_WR_PER_DTO as usize || (one_wr && nwr > 1) {
            return Err(EMSGSIZE);
        }
        let nwr = nwr as u32;
        let ctx = self.take(nwr)?;
        if let Err(e) = Self::arm(ctx, d.op, d.cookie, total, nwr, d.segs, None, d.flags.suppress)
        {
            self.untake(ctx, nwr);
            return Err(e);
        }
        // Unsignalled only for one work request (kept simple: a DTO split into several has
        // one signalled work request already, its last), and only while fewer than half of
        // the contexts wait unsignalled; otherwise signalled, and still silent on success.
        let unsignalled = d.flags.suppress
            && nwr == 1
            && self.shared.n_unsignalled.load(Ordering::Acquire) < self.ctxs.len() / 2
            && self.shared.unsignalled.lock().push((
                ctx.seq.load(Ordering::Acquire),
                ctx as *const DtoCtx as usize,
            ));
        if unsignalled {
            self.shared.n_unsignalled.fetch_add(1, Ordering::AcqRel);
        }
        Ok(Prepared {
            ctx,
            sges,
            nwr,
            total,
            signalled: !unsignalled,
            inline: is_inline,
            synced,
        })
    }

    /// Appends the work requests of the prepared DTO `p` (described by `d`) to `wrs`. Large
    /// RDMA DTOs are split into work requests of `max_sge` SGEs, each at its offset of the
    /// remote range; only the last is signalled and carries the immediate data and the
    /// solicited bit, only the first the fence.
    fn push_wrs(
        d: &SendDto<'_>,
        p: &Prepared<'_>,
        max_sge: usize,
        wrs: &mut OneOrMore<SendWr>,
    ) -> Result {
        let sges = p.sges.as_slice();
        let (addr, rkey) = d.remote.unwrap_or((0, 0));
        let mut at = 0u64;
        for i in 0..p.nwr as usize {
            let chunk = sges
                .get(i * max_sge..sges.len().min((i + 1) * max_sge))
                .unwrap_or(&[]);
            let last = i + 1 == p.nwr as usize;
            let mut flags = if p.signalled && last {
                SendFlags::SIGNALED
            } else {
                SendFlags::empty()
            };
            if i == 0 && d.flags.fence {
                flags = flags | SendFlags::FENCE;
            }
            if p.inline {
                flags = flags | SendFlags::INLINE;
            }
            if last && d.flags.solicited {
                flags = flags | SendFlags::SOLICITED;
            }
            let remote_addr = addr.wrapping_add(at);
            let op = match d.op {
                DtoOp::RdmaWriteImm if last => SendOp::WriteImm {
                    remote_addr,
                    rkey,
                    imm: d.imm,
                },
                DtoOp::RdmaWrite | DtoOp::RdmaWriteImm => SendOp::Write { remote_addr, rkey },
                DtoOp::RdmaRead => SendOp::Read { remote_addr, rkey },
                DtoOp::SendInvalidate => SendOp::SendInv {
                    rkey: d.invalidate_rkey,
                },
                _ => SendOp::Send,
            };
            at += chunk.iter().map(|s| u64::from(s.length)).sum::<u64>();
            // All but the last are unsignalled and report only a failure (`EarlyCqe`).
            let cqe = if last { &p.ctx.cqe } else { &p.ctx.early.cqe };
            wrs.push(SendWr::new(op, cqe, chunk, flags), GFP_ATOMIC)?;
        }
        Ok(())
    }

    /// Posts a chain of send-queue DTOs on `qp`, in order, as one `ib_post_send` call. Any
    /// context.
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs, from the start of `dtos`, were posted before it
    /// (those report their completions; the rest never do):
    /// `-EINVAL` for an operation that is not a send-queue DTO, a missing or superfluous
    /// remote range or the solicited flag on an RDMA WRITE or READ, `-ERANGE` for a segment
    /// outside its LMR, `-EACCES` for an RDMA READ into an LMR without local write,
    /// `-EMSGSIZE` for a DTO needing more work requests than allowed (or a SEND needing more
    /// SGEs than one work request holds), `-ENOSPC` if too many DTOs are outstanding,
    /// `-ENOMEM`, or the driver's error.
    ///
    /// With `flags.suppress` a successful DTO reports no event; a DTO of one work request is
    /// then posted unsignalled (see the module documentation). SENDs and RDMA WRITEs of at
    /// most `max_inline` bytes (the QP's inline capacity) over virtually contiguous LMRs are
    /// posted inline. The caller serialises posts to
    /// `qp`'s send queue (the EP's connection lock), so that posting order is sequence order.
    pub(crate) fn post_chain(
        &self,
        qp: &Qp,
        max_sge: u32,
        max_inline: u32,
        dtos: &[SendDto<'_>],
    ) -> core::result::Result<(), (Error, usize)> {
        let max_sge = max_sge.max(1) as usize;
        // First every DTO takes and arms its context, so that the SGE lists are in their
        // final place before work requests point at them. Room for all of them first, so
        // that no context is taken before an allocation that could fail.
        let mut prep = OneOrMore::Empty;
        prep.reserve(dtos.len(), GFP_ATOMIC).map_err(|e| (e, 0))?;
        let mut first_err = None;
        for d in dtos {
            let p = match self.prepare(d, max_sge, max_inline) {
                Ok(p) => p,
                Err(e) => {
                    let _ = self.account(d.op, d.cookie, Err(e));
                    first_err = Some(e);
                    break;
                }
            };
            let (ctx, nwr) = (p.ctx, p.nwr);
            if let Err(e) = prep.push(p, GFP_ATOMIC) {
                self.untake(ctx, nwr);
                let _ = self.account(d.op, d.cookie, Err(e));
                first_err = Some(e);
                break;
            }
        }
        let prep = prep.as_slice();
        let nwr: usize = prep.iter().map(|p| p.nwr as usize).sum();
        let mut wrs = OneOrMore::Empty;
        let built = wrs.reserve(nwr, GFP_ATOMIC).and_then(|()| {
            prep.iter()
                .zip(dtos)
                .try_for_each(|(p, d)| Self::push_wrs(d, p, max_sge, &mut wrs))
        });
        let r = match built {
            // SGEs come from LMRs of this EP's device with the PZ's lkey (inline ones: the
            // kernel virtual addresses of virtually contiguous LMRs, checked to lie inside
            // them, which the driver copies during this call); each context holds those LMRs
            // (busy, so `rkdapl_lmr_free` refuses) until its completion.
            // SAFETY: As above; the contexts outlive their completions (`CqeDone` impl).
            Ok(()) => unsafe { qp.post_send(wrs.as_mut_slice()) },
            Err(e) => Err((e, 0)),
        };
        for (p, d) in prep.iter().zip(dtos) {
            if p.synced {
                Self::sync_inline_back(d.segs);
            }
        }
        let posted_wrs = match r {
            Ok(()) => nwr,
            Err((_, n)) => n,
        };
        // Settle each DTO: wholly posted, partly posted (finished silently once reaped, see
        // `finish_post`), or not posted at all.
        let mut start = 0usize;
        let mut posted = 0usize;
        for (p, d) in prep.iter().zip(dtos) {
            let end = start + p.nwr as usize;
            if end <= posted_wrs {
                let _ = self.account(d.op, d.cookie, Ok((p.total, p.nwr)));
                posted += 1;
            } else if let Err((e, _)) = r {
                let res = if start < posted_wrs {
                    Err((e, posted_wrs - start))
                } else {
                    Err((e, 0))
                };
                if start <= posted_wrs {
                    // The DTO the chain stopped at is the one refused.
                    let _ = self.finish_post(p.ctx, d.op, p.nwr, res);
                    let _ = self.account(d.op, d.cookie, Err(e));
                    first_err = Some(e);
                } else {
                    self.untake(p.ctx, p.nwr);
                }
            }
            start = end;
        }
        match first_err {
            None => Ok(()),
            Some(e) => Err((e, posted)),
        }
    }

    /// Handles a failed post of the `nwr` work requests of DTO `ctx`.
    fn finish_post(
        &self,
        ctx: &DtoCtx,
        op: DtoOp,
        nwr: u32,
        r: core::result::Result<(), (Error, usize)>,
    ) -> Result {
        match r {
            Ok(()) => Ok(()),
            Err((e, 0)) => {
                self.untake(ctx, nwr);
                Err(e)
            }
            Err((e, posted)) => {
                // The posted ones are unsignalled work requests before the DTO's last, which
                // was not posted: they report nothing if they succeed. Like an unsignalled
                // DTO, the context is finished, without an event, by the next successful
                // completion on the queue (completions come in order, so they are done) or at
                // teardown after the drain; until then it keeps their slots and LMRs. It counts
                // as failed in the statistics (the caller got the error).
                self.shared.stats.posted(op);
                let unposted = nwr - posted as u32;
                {
                    let mut st = ctx.st.lock();
                    st.nwr -= unposted;
                    st.silent = true;
                    st.orphan = true;
                    st.status = DtoStatus::Generic;
                }
                self.shared.credits.fetch_add(unposted, Ordering::AcqRel);
                let entry = (ctx.seq.load(Ordering::Acquire), ctx as *const DtoCtx as usize);
                if self.shared.unsignalled.lock().push(entry) {
                    self.shared.n_unsignalled.fetch_add(1, Ordering::AcqRel);
                }
                Err(e)
            }
        }
    }

    /// Counts and traces the outcome of a post call: `(bytes, work requests)` or its error.
    fn account(&self, op: DtoOp, cookie: u64, r: Result<(u64, u32)>) -> Result {
        let (len, nwr, ret) = match r {
            Ok((len, nwr)) => {
                self.shared.stats.posted(op);
                (len, nwr, 0)
            }
            Err(e) => {
                self.shared.stats.refused.fetch_add(1, Ordering::Relaxed);
                (0, 0, e.to_errno())
            }
        };
        trace::post(self.shared.ep_id, op as u32, cookie, len, nwr, ret);
        r.map(|_| ())
    }

    /// Posts a RECV into `segs` on `qp`. Any context.
    ///
    /// # Errors
    ///
    /// `-EACCES` for an LMR without local write, `-EMSGSIZE` for more SGEs than `max_sge`,
    /// `-ENOSPC` if too many RECVs are outstanding, or the driver's error.
    pub(crate) fn post_recv(&self, qp: &Qp, max_sge: u32, segs: &[Segment], cookie: u64) -> Result {
        let r = self.do_post_recv(qp, max_sge, segs, cookie);
        self.account(DtoOp::Recv, cookie, r)
    }

    fn do_post_recv(
        &self,
        qp: &Qp,
        max_sge: u32,
        segs: &[Segment],
        cookie: u64,
    ) -> Result<(u64, u32)> {
        let (sges, total) = Self::sges(segs, true)?;
        let sges = sges.as_slice();
        if sges.len() > max_sge as usize {
            return Err(EMSGSIZE);
        }
        let ctx = self.take(1)?;
        if let Err(e) = Self::arm(ctx, DtoOp::Recv, cookie, total, 1, segs, None, false) {
            self.untake(ctx, 1);
            return Err(e);
        }
        // SAFETY: As in `post_send`: the SGEs name LMR memory with local write, held by the
        // context until the completion, and the context outlives its completion.
        let r = unsafe { qp.post_recv(&ctx.cqe, sges) }.map_err(|e| (e, 0));
        self.finish_post(ctx, DtoOp::Recv, 1, r)?;
        Ok((total, 1))
    }

    /// Posts the REG_MR that makes `rmr`'s current mapping of `lmr` valid for `access`, or the
    /// LOCAL_INV of `rkey` if `access` is `None`. Any context.
    ///
    /// # Errors
    ///
    /// `-ENOSPC` if the send queue is full, or the driver's error.
    pub(crate) fn post_rmr(
        &self,
        qp: &Qp,
        mr: &FrMr,
        rmr: &Arc<Rmr>,
        lmr: Option<Arc<Lmr>>,
        access: Option<Access>,
        cookie: u64,
    ) -> Result {
        let (op, len) = if access.is_some() {
            (DtoOp::RmrBind, mr.length())
        } else {
            (DtoOp::RmrUnbind, 0)
        };
        let r = self.do_post_rmr(qp, mr, rmr, lmr, access, op, len, cookie);
        self.account(op, cookie, r)
    }

    #[expect(clippy::too_many_arguments)]
    fn do_post_rmr(
        &self,
        qp: &Qp,
        mr: &FrMr,
        rmr: &Arc<Rmr>,
        lmr: Option<Arc<Lmr>>,
        access: Option<Access>,
        op: DtoOp,
        len: u64,
        cookie: u64,
    ) -> Result<(u64, u32)> {
        let segs = match lmr {
            Some(l) => OneOrMore::One(Segment {
                lmr: l,
                offset: 0,
                length: 0,
            }),
            None => OneOrMore::Empty,
        };
        let segs = segs.as_slice();
        let ctx = self.take(1)?;
        if let Err(e) = Self::arm(ctx, op, cookie, len, 1, segs, Some(rmr.clone()), false) {
            self.untake(ctx, 1);
            return Err(e);
        }
        // SAFETY: The context holds `rmr` (which owns `mr`) and the LMR whose memory `mr` maps
        // until the completion; the context outlives its completion.
        let r = unsafe {
            match access {
                Some(a) => qp.post_reg_mr(&ctx.cqe, mr, a, SendFlags::SIGNALED),
                None => qp.post_local_inv(&ctx.cqe, mr.rkey(), SendFlags::SIGNALED),
            }
        }
        .map_err(|e| (e, 0));
        self.finish_post(ctx, op, 1, r)?;
        Ok((len, 1))
    }
}
