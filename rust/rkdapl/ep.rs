// SPDX-License-Identifier: GPL-2.0

//! EP: endpoint (DAT 2.0 section 6.4), one reliable connection: its CM id, QP, CQs and the
//! contexts of its DTOs, with DAT's endpoint state machine.
//!
//! States (`enum rkdapl_ep_state`): UNCONNECTED -> ACTIVE_CONNECTION_PENDING (connect) or
//! PASSIVE_CONNECTION_PENDING (CR accepted) -> CONNECTED -> DISCONNECT_PENDING (disconnect)
//! -> DISCONNECTED. Failures on the way go straight to DISCONNECTED with a connection event.
//! A reset (`ep/reset.rs`) takes a DISCONNECTED EP back to UNCONNECTED.
//!
//! The connection's CM id sits in `conn` behind an IRQ-safe spinlock: the data path borrows its
//! QP under that lock (posting does not sleep); the control path clones the `Arc` and works
//! without the lock. Teardown takes the id out, drains the QP and drops the id in process
//! context. rdma_cm's handlers hold a reference on the id while they run (`ep/connect.rs`), so
//! a teardown from another thread never waits for a handler in progress: the id's last
//! reference then goes in the handler, where the RDMA layer defers its release (and an accept
//! that fails in the upcall of the CR's event, inside rdma_cm's handler of the request, gives
//! the id back to rdma_cm).

use crate::rdma::{
    bound::Bound,
    cm::{CmEvent, CmIdRef, QpInit, SockAddr},
    cq::{Cq, PollContext},
    device::Transport,
    mr::FrMr,
    qp::QpCap,
    Access,
};
use crate::{
    cm::{CmTarget, EpCmId},
    debugfs::EpView,
    dto::{Completion, Dto, DtoHandler, DtoRing, DtoSink, KeepAlive, QpOwner, RingShared, Segment},
    evd::{Evd, EventType},
    ia::Ia,
    lmr::Lmr,
    pz::Pz,
    registry::{Child, Rank},
};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::{
    new_mutex, new_spinlock_irq,
    prelude::*,
    sync::{Arc, Mutex, SetOnce, SpinLockIrq},
};

mod attr;
mod connect;
mod lent;
mod pooled;
mod srq;
pub use attr::EpAttr;
mod qp_events;
mod reset;

/// DAT endpoint states (`enum rkdapl_ep_state`, DAT's `DAT_EP_STATE`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpState {
    /// Created, never connected.
    Unconnected = 0,
    /// A connect is in progress.
    ActiveConnectionPending = 1,
    /// An accept is in progress.
    PassiveConnectionPending = 2,
    /// DTOs may be posted.
    Connected = 3,
    /// A disconnect is in progress.
    DisconnectPending = 4,
    /// The connection ended or failed; the EP can be freed, or reset to UNCONNECTED
    /// (`rkdapl_ep_reset`, `ep/reset.rs`) and connected again.
    Disconnected = 5,
}

impl EpState {
    /// Whether a connect or an accept is in progress (its outcome not yet reported).
    pub fn connecting(self) -> bool {
        matches!(
            self,
            EpState::ActiveConnectionPending | EpState::PassiveConnectionPending
        )
    }

    /// DAT's name of the state (`DAT_EP_STATE_*` without the prefix).
    pub fn name(self) -> &'static str {
        match self {
            EpState::Unconnected => "UNCONNECTED",
            EpState::ActiveConnectionPending => "ACTIVE_CONNECTION_PENDING",
            EpState::PassiveConnectionPending => "PASSIVE_CONNECTION_PENDING",
            EpState::Connected => "CONNECTED",
            EpState::DisconnectPending => "DISCONNECT_PENDING",
            EpState::Disconnected => "DISCONNECTED",
        }
    }
}

/// Connection state and the CM id, guarded together.
pub(crate) struct Conn {
    pub(crate) state: EpState,
    pub(crate) id: Option<Arc<EpCmId>>,
    /// Whether the consumer was told the connection is up (so a later loss is reported).
    pub(crate) was_connected: bool,
    /// RDMA READs the peer may have in flight against us and we against the peer, as
    /// settled with the peer through the IB CM (REQ/REP), once connecting got that far.
    pub(crate) rd: Option<(u32, u32)>,
    /// Bytes of inline data the QP takes per work request, as the device granted it (0
    /// before the QP exists): small SENDs and RDMA WRITEs go inline (see `dto`).
    pub(crate) max_inline: u32,
    /// The QP's path MTU in bytes, read when the connection is established (0 before).
    pub(crate) path_mtu: u32,
}

/// An endpoint. Registered with its IA, together with its debugfs directory, from [`Ep::new`]
/// to [`Ep::free`].
///
/// Dropping it ends what is left of the connection in ib_core's order ([`Ep::teardown`]: the
/// QP drained, the CM id destroyed, then the QP, then the CQs); the PZ (and so the PD) goes
/// after, with the fields.
#[pin_data(PinnedDrop)]
pub(crate) struct Ep {
    /// The EP's number: debugfs `ep<id>`, trace events, log lines.
    pub(crate) id: u32,
    pub(crate) ia: Arc<Ia>,
    pub(crate) pz: Arc<Pz>,
    pub(crate) attr: EpAttr,
    pub(crate) conn_evd: Arc<Evd>,
    /// The EVD of its DTO completions; for an EP whose DTOs report to a handler
    /// ([`Ep::with_handler`]), its connection EVD, which then gets no DTO event.
    pub(crate) dto_evd: Arc<Evd>,
    /// The send and receive CQs, until the EP is freed or its device removed.
    #[pin]
    cqs: Mutex<Option<(Arc<Cq>, Arc<Cq>)>>,
    /// Contexts of send-queue DTOs and of RECVs.
    pub(crate) sq: DtoRing,
    pub(crate) rq: DtoRing,
    /// The C handle, reported in events.
    pub(crate) handle: AtomicUsize,
    #[pin]
    pub(crate) conn: SpinLockIrq<Conn>,
    /// Parameters of an active connect, used by the CM event handler.
    #[pin]
    pending: Mutex<Option<Pending>>,
    /// Held by an accept inside rdma_cm's handler of the request from before its id is in
    /// `conn` until it is over; [`Ep::end_connection`] waits for it (see [`Ep::accept`]).
    #[pin]
    accepting: Mutex<()>,
    /// Held across [`Ep::end_connection`]: a second caller (`rkdapl_ep_free` racing device
    /// removal's revocation) returns only once the first drained the QP and finished every
    /// DTO, so that the LMRs they used are no longer busy when it returns.
    #[pin]
    ending: Mutex<()>,
    /// The SRQ the EP takes its RECVs from, if created on one (`ep/srq.rs`).
    srq: SetOnce<Arc<crate::srq::Srq>>,
    /// The pool of its pooled RMRs and the grants bound from it (`ep/pooled.rs`), while it
    /// has a QP.
    #[pin]
    pooled: SpinLockIrq<pooled::Pooled>,
}

struct Pending {
    timeout_ms: u32,
    private_data: KVec<u8>,
}

impl Ep {
    /// Creates an unconnected EP in `pz`, with its CQs (on `dev`, the device of `pz`'s IA,
    /// which the caller holds live), DTO contexts and debugfs directory, and registers it with
    /// its IA. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for attributes beyond the device's limits, `-ENOMEM`, the driver's error, or
    /// the registry's (`-ENODEV` after device removal).
    pub(crate) fn new(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        dto_evd: Arc<Evd>,
        conn_evd: Arc<Evd>,
        attr: EpAttr,
    ) -> Result<Arc<Ep>> {
        let sink = DtoSink::Evd(dto_evd.clone());
        Self::with_sink(pz, dev, sink, dto_evd, conn_evd, attr)
    }

    /// Creates an EP as [`Ep::new`] whose finished DTOs go to `handler` instead of an EVD
    /// (called from the completion context, see [`DtoHandler::done`]); connection events
    /// go to `conn_evd`. May sleep.
    ///
    /// # Errors
    ///
    /// As [`Ep::new`].
    pub(crate) fn with_handler(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        handler: Arc<dyn DtoHandler>,
        conn_evd: Arc<Evd>,
        attr: EpAttr,
    ) -> Result<Arc<Ep>> {
        let sink = DtoSink::Handler(handler);
        Self::with_sink(pz, dev, sink, conn_evd.clone(), conn_evd, attr)
    }

    /// [`Ep::new`] with its DTOs reported to `sink`.
    fn with_sink(
        pz: Arc<Pz>,
        dev: &Bound<'_>,
        sink: DtoSink,
        dto_evd: Arc<Evd>,
        conn_evd: Arc<Evd>,
        attr: EpAttr,
    ) -> Result<Arc<Ep>> {
        let ia = pz.ia.clone();
        let a = ia.attrs();
        let attr = attr.resolve(&a)?;
        let sq_depth = attr.sq_depth(&a);
        let id = crate::ia::next_ep_id();
        let mut sq = DtoRing::new(
            attr.max_request_dtos,
            sq_depth,
            a.max_send_sge.min(a.max_sge_rd),
            id,
            sink.clone(),
            None,
            Some(dev.binding().clone()),
        )?;
        // iWARP's rules, decided once per EP (`crate::dto::DtoRing::for_iwarp`).
        if ia.transport() == Transport::Iwarp {
            sq = sq.for_iwarp(crate::dto::READ_MRS.min(attr.max_request_dtos));
        }
        if !a.atomics {
            sq = sq.without_atomics();
        }
        let rq = DtoRing::new(
            attr.max_recv_dtos,
            attr.max_recv_dtos,
            a.max_recv_sge,
            id,
            sink,
            Some(pz.clone()),
            Some(dev.binding().clone()),
        )?;
        // The CQs' errors go to the IA's async EVD, naming the EP (`ep/qp_events.rs`).
        let send_cq = Arc::new(
            Cq::with_events(
                dev,
                sq_depth,
                0,
                PollContext::Workqueue,
                &ia.owner,
                qp_events::EpCqEvents::handler(&sq, &ia)?,
            )?,
            GFP_KERNEL,
        )?;
        let recv_cq = Arc::new(
            Cq::with_events(
                dev,
                attr.max_recv_dtos,
                0,
                PollContext::Workqueue,
                &ia.owner,
                qp_events::EpCqEvents::handler(&rq, &ia)?,
            )?,
            GFP_KERNEL,
        )?;
        let ep = Arc::pin_init(
            try_pin_init!(Ep {
                id,
                ia,
                pz,
                attr,
                conn_evd,
                dto_evd,
                cqs <- new_mutex!(Some((send_cq, recv_cq)), "rkdapl_ep_cqs"),
                sq,
                rq,
                handle: AtomicUsize::new(0),
                conn <- new_spinlock_irq!(
                    Conn {
                        state: EpState::Unconnected,
                        id: None,
                        was_connected: false,
                        rd: None,
                        max_inline: 0,
                        path_mtu: 0,
                    },
                    "rkdapl_ep_conn"
                ),
                pending <- new_mutex!(None, "rkdapl_ep_pending"),
                accepting <- new_mutex!((), "rkdapl_ep_accepting"),
                ending <- new_mutex!((), "rkdapl_ep_ending"),
                srq: SetOnce::new(),
                pooled <- new_spinlock_irq!(pooled::Pooled::default(), "rkdapl_ep_pooled"),
            }),
            GFP_KERNEL,
        )?;
        // Events name the EP by its number until the C ABI gives it a handle.
        ep.set_handle(id as usize);
        // The directory's files hold references to the EP; the registry holds the directory
        // (not the EP itself), and `free` removes both.
        let dir = KBox::new(
            crate::debugfs::ep_dir(&ep.ia.dir, ep.id, ep.clone())?,
            GFP_KERNEL,
        )?;
        ep.ia.children.add(ep.clone(), Some(dir))?;
        Ok(ep)
    }

    /// Records the value this EP's events carry as their EP (`Event`'s `ep`): the
    /// EP's C handle once the C ABI published it, its number (`id`) before (and always
    /// for an EP of the Rust API, which has no handle).
    pub(crate) fn set_handle(&self, h: usize) {
        self.handle.store(h, Ordering::Relaxed);
        self.sq.set_ep_handle(h);
        self.rq.set_ep_handle(h);
    }

    pub(crate) fn state(&self) -> EpState {
        self.conn.lock().state
    }

    /// The peer's address, once the EP has a CM id. Any context.
    pub(crate) fn peer(&self) -> Option<crate::rdma::cm::SockAddr> {
        self.conn
            .lock()
            .id
            .as_ref()
            .and_then(|id| id.id().ok().map(|g| g.dst_addr()))
    }

    /// Creates the QP of the connection on `id`, with the EP's CQs, in its PZ. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` after a device removal, or the errors of `rdma_create_qp`. The id keeps the
    /// CQs and the rings' context pools until its QP is drained and destroyed. On RoCE, with
    /// the path-MTU agreement on, the QP is one rkdapl moves through its states (`mtu.rs`).
    fn create_qp(&self, id: &EpCmId) -> Result {
        let pd = self.pz.pd()?;
        let (send_cq, recv_cq) = self.cqs.lock().clone().ok_or(ENODEV)?;
        if crate::mtu::applies(&*id.id()?) {
            id.own_qp_transitions()?;
        }
        let cap = match self.srq.as_ref() {
            Some(srq) => self.create_qp_on_srq(id, &pd, srq, send_cq, recv_cq)?,
            None => id.create_qp(&pd, self.qp_init(send_cq, recv_cq))?,
        };
        // The QP's number, for the trace events and debugfs (`rdma res show qp`'s `lqpn`).
        let qpn = id.qp().map_or(0, |qp| qp.qp_num());
        self.sq.set_qpn(qpn);
        self.rq.set_qpn(qpn);
        // iWARP: the RDMA READ sink MRs of this QP (none on other transports).
        let pages = crate::dto::READ_MR_PAGES.min(self.ia.attrs().max_fast_reg_page_list_len);
        self.sq.fill_read_mrs(&pd, pages)?;
        self.create_rmr_pool(id)?;
        self.conn_mut().max_inline = cap.max_inline_data;
        // RECVs posted before the QP existed, before rdma_cm connects or accepts on it.
        self.rq.post_early();
        Ok(())
    }

    fn qp_init(&self, send_cq: Arc<Cq>, recv_cq: Arc<Cq>) -> QpInit<RingShared, RingShared> {
        let a = self.ia.attrs();
        QpInit {
            send_cq,
            recv_cq,
            send_pool: self.sq.pool.clone(),
            recv_pool: self.rq.pool.clone(),
            cap: QpCap {
                max_send_wr: self.attr.sq_depth(&a),
                max_recv_wr: self.attr.max_recv_dtos,
                max_send_sge: a.max_send_sge.min(a.max_sge_rd),
                max_recv_sge: self.attr.max_recv_iov,
                max_inline_data: 0,
                max_rdma_ctxs: 0,
            },
        }
    }

    /// The EP's attributes: those it was created with, defaults resolved, and once connected
    /// the RDMA READ limits settled with the peer. Any context.
    pub(crate) fn query(&self) -> EpAttr {
        let mut a = self.attr;
        if let Some((rd_in, rd_out)) = self.conn.lock().rd {
            a.max_rdma_read_in = rd_in;
            a.max_rdma_read_out = rd_out;
        }
        a
    }

    /// The connection's path MTU in bytes once it was established (0 before). Any context.
    pub(crate) fn path_mtu(&self) -> u32 {
        self.conn.lock().path_mtu
    }

    /// Starts a graceful disconnect; `RKDAPL_CONNECTION_EVENT_DISCONNECTED` follows. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOTCONN` unless the EP is CONNECTED.
    pub(crate) fn disconnect(&self) -> Result {
        let id = {
            let mut c = self.conn_mut();
            if c.state != EpState::Connected {
                return Err(ENOTCONN);
            }
            c.state = EpState::DisconnectPending;
            c.id.clone()
        };
        match id {
            Some(id) => id.id().and_then(|g| g.disconnect()),
            None => Err(ENOTCONN),
        }
    }

    /// Tears the connection down for good: disconnect, drain the QP (every posted DTO
    /// completes, flushed ones with `RKDAPL_DTO_FLUSHED`), destroy the CM id and then the QP,
    /// then the CQs. Process context; sleeps.
    pub(crate) fn teardown(&self) {
        self.end_connection();
        let cqs = self.cqs.lock().take();
        drop(cqs);
    }

    /// `rkdapl_ep_free`: [`Ep::teardown`], then the EP leaves its IA's registry (and its
    /// debugfs directory goes). Never refused. Process context; sleeps.
    pub(crate) fn free(&self) {
        self.teardown();
        if let Some(srq) = self.srq.as_ref() {
            srq.detach_ep(self);
        }
        self.ia.children.remove(self);
    }

    /// Device removal, first step (for every EP of the device before any is revoked, so that
    /// none sees its peer's disconnect instead): a connection or connection attempt ends with
    /// `RKDAPL_CONNECTION_EVENT_BROKEN`, status `-ENODEV`, on the connection EVD. Any context.
    pub(crate) fn mark_broken(&self) {
        if self.state() != EpState::Unconnected {
            self.fail(EventType::Broken, ENODEV.to_errno(), &[]);
        }
    }

    /// Device removal, second step: every posted DTO completes FLUSHED and the CM id, QP and
    /// CQs are released. The EP stays until freed; posts get `-ENOTCONN`. Process context;
    /// sleeps.
    pub(crate) fn revoke(&self) {
        self.end_connection();
        let cqs = self.cqs.lock().take();
        drop(cqs);
    }

    /// Disconnects, drains the QP and destroys the CM id and then the QP, after an accept in
    /// progress inside rdma_cm's handler; a concurrent call returns after this one. Process
    /// context; never inside rdma_cm's handler (it destroys the CM id).
    fn end_connection(&self) {
        let _ending = self.ending.lock();
        self.end_connection_locked();
    }

    /// [`Ep::end_connection`], with `ending` held or the EP not shared (its drop).
    fn end_connection_locked(&self) {
        drop(self.accepting.lock());
        let id = {
            let mut c = self.conn_mut();
            c.state = EpState::Disconnected;
            c.id.take()
        };
        // RECVs that never reached a QP complete FLUSHED.
        self.rq.flush_early();
        let Some(id) = id else { return };
        let _ = id.id().and_then(|g| g.disconnect());
        if let Some(qp) = id.qp() {
            qp.drain();
            // Unsignalled DTOs that succeeded have no completion of their own; RECVs that
            // waited for the QP and that it refused have none either.
            // SAFETY: The QP is drained: the CQs' completion work handled every completion of
            // it, and no DTO can be posted any more (the rings' target is gone). The other
            // finisher, `flush_early` above, is serialised with this (`ending`, or the drop).
            unsafe {
                self.sq.reap_all();
                self.rq.reap_all();
            }
        }
        id.handler().set(None);
        drop(id);
        // The pool went with the QP: the grants still bound end.
        self.end_pooled_rmrs();
        // The QP is drained and gone, or (its id's last reference held by a CM handler in
        // progress) drained and released with the id once the handler returns: no work
        // request uses the iWARP READ sink MRs any more.
        self.sq.release_read_mrs();
    }

    /// Posts a chain of send-queue DTOs, in order, in one call to the driver. Any context.
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs were posted before it: `-ENOTCONN` (none) unless
    /// CONNECTED, otherwise as [`DtoRing::post_chain`].
    pub(crate) fn post_chain(&self, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
        self.sq.post_chain(dtos)
    }

    /// Posts a RECV; allowed from the EP's creation (before the QP exists the RECV waits for
    /// it) until the disconnect starts. Any context.
    ///
    /// # Errors
    ///
    /// As [`DtoRing::post_recv`].
    pub(crate) fn post_recv(&self, segs: &[Segment<'_>], cookie: u64) -> Result {
        if self.srq.as_ref().is_some() {
            // Its RECVs come from its SRQ (`rkdapl_srq_post_recv`).
            return Err(EINVAL);
        }
        self.rq.post_recv(segs, cookie)
    }

    /// Posts an RMR bind (`access` given) or unbind, its completion reported as `done` says.
    /// Any context.
    ///
    /// # Errors
    ///
    /// As [`DtoRing::post_rmr`].
    pub(crate) fn post_rmr(
        &self,
        mr: &FrMr,
        rmr: Arc<dyn KeepAlive>,
        lmr: Option<Arc<Lmr>>,
        access: Option<Access>,
        done: Completion,
    ) -> Result {
        let seg = lmr.as_ref().map(|lmr| Segment {
            lmr,
            offset: 0,
            length: 0,
        });
        self.sq.post_rmr(mr, rmr, seg, access, done)
    }
}

/// The EP's connection state, locked for a change: when the change is over (the guard drops)
/// the DTO rings are told what they may post to (see [`Ep::mirror`]).
struct ConnMut<'a> {
    ep: &'a Ep,
    g: kernel::sync::lock::Guard<'a, Conn, kernel::sync::lock::spinlock::SpinLockIrqBackend>,
}

impl core::ops::Deref for ConnMut<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.g
    }
}

impl core::ops::DerefMut for ConnMut<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.g
    }
}

impl Drop for ConnMut<'_> {
    fn drop(&mut self) {
        self.ep.mirror(&self.g);
    }
}

impl Ep {
    /// Locks the connection state for a change (the lock order is `conn`, then a ring's).
    fn conn_mut(&self) -> ConnMut<'_> {
        ConnMut {
            ep: self,
            g: self.conn.lock(),
        }
    }

    /// What the data path may do in state `c`: SENDs and RDMA operations while CONNECTED,
    /// RMR binds on the QP from its creation until the disconnect starts, RECVs from the EP's
    /// creation (before the QP exists they wait for it, `crate::dto::DtoRing::post_early`)
    /// until the disconnect starts.
    fn mirror(&self, c: &Conn) {
        let open = !matches!(c.state, EpState::Disconnected | EpState::DisconnectPending);
        let owner = if open {
            c.id.clone().map(|id| id as Arc<dyn QpOwner>)
        } else {
            None
        };
        // The rings' previous references are never the last: `c.id` holds the id, or the
        // caller that took it out of `c` does.
        let early = c.state == EpState::Unconnected || c.state.connecting();
        drop(self.sq.set_target(
            owner.clone(),
            c.state == EpState::Connected,
            c.max_inline,
            false,
        ));
        drop(self.rq.set_target(owner, true, 0, early));
    }
}

impl EpView for Ep {
    fn show_state(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(f, "{}", self.state().name())
    }

    fn show_qp(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let dev = self.ia.dev_name.to_str().unwrap_or("?");
        writeln!(f, "device {dev} qpn {}", self.sq.qpn())
    }

    fn peer(&self) -> Option<SockAddr> {
        Ep::peer(self)
    }

    fn show_counters(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (sq, rq) = (self.sq.stats(), self.rq.stats());
        sq.show(f)?;
        rq.show(f)?;
        write!(f, "send queue: ")?;
        sq.show_totals(f)?;
        write!(f, "recv queue: ")?;
        rq.show_totals(f)
    }

    fn show_evds(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "dto_evd: ")?;
        self.dto_evd.show(f)?;
        write!(f, "conn_evd: ")?;
        self.conn_evd.show(f)
    }
}

impl CmTarget for Ep {
    fn cm_event(&self, id: &CmIdRef, ev: &CmEvent<'_>) {
        self.on_cm_event(id, ev)
    }

    fn qp_event(&self, kind: crate::rdma::event::EventKind) {
        self.on_qp_event(kind)
    }
}

#[pinned_drop]
impl PinnedDrop for Ep {
    /// Nothing is left after [`Ep::free`]: this covers an EP dropped without it (its creation
    /// failed after the CQs were made). Never inside the EP's own CM handler with an id left:
    /// the registry keeps the EP until `free`, which takes the id.
    fn drop(self: Pin<&mut Self>) {
        // Nobody else holds the EP: no need for `ending` (which rdma_cm's handler must not
        // take, in case the handler drops an EP).
        self.end_connection_locked();
        let cqs = self.cqs.lock().take();
        drop(cqs);
    }
}

impl Child for Ep {
    fn rank(&self) -> Rank {
        Rank::Ep
    }

    fn mark_broken(&self) {
        Ep::mark_broken(self)
    }

    fn revoke(&self) {
        Ep::revoke(self)
    }

    fn release(&self) {
        self.free()
    }

    fn parent(&self) -> Option<Arc<dyn Child>> {
        Some(self.pz.clone())
    }
}

// The KUnit suite `rkdapl_ep` (attribute resolution) has its own file: this one is near 800 lines.
#[cfg(CONFIG_KUNIT = "y")]
mod kunit;
