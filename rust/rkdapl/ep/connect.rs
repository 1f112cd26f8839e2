// SPDX-License-Identifier: GPL-2.0

//! An EP's connection set-up and its rdma_cm events: connect (active side), accept of a CR
//! (passive side), the connection parameters both send, and the connection events the CM
//! id's events become (DAT 2.0 section 6.4: `dat_ep_connect`, `dat_cr_accept`, the
//! connection event stream).

use super::{attr, Ep, EpState, Pending};
use crate::rdma::cm::{CmEvent, CmEventKind, CmId, CmIdRef, ConnParam, SockAddr};
use crate::{
    cm::{CmCtx, EpCmId},
    evd::{Event, EventType},
    mtu, trace,
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

impl Ep {
    /// The connection parameters of a connect (`peer_rd` `None`) or of an accept: then the RDMA
    /// READ limits are the smaller of the EP's and the peer's request (`peer_rd`: rdma_cm's
    /// responder resources and initiator depth of the request, from our side), as IB CM wants.
    pub(super) fn conn_param<'a>(
        &self,
        private_data: &'a [u8],
        peer_rd: Option<(u8, u8)>,
    ) -> ConnParam<'a> {
        let (rr, id) = self.attr.read_limits(peer_rd);
        ConnParam {
            private_data,
            responder_resources: rr,
            initiator_depth: id,
            retry_count: self.attr.retry_count as u8,
            rnr_retry_count: self.attr.rnr_retry_count as u8,
        }
    }

    pub(super) fn conn_event(&self, kind: EventType, status: i32, pdata: &[u8]) {
        let ev = Event::conn(kind, self.handle.load(Ordering::Relaxed), status, pdata);
        self.conn_evd.post(ev);
    }

    /// Active connect to `dst` with `private_data`, giving up after `timeout_ms`, from the
    /// source address `src` (its port 0: any) if given, as `rdma_resolve_addr()` takes one. The
    /// outcome arrives on the connection EVD. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a zero timeout, private data over 56 bytes or a `src` of another family
    /// than `dst`, `-EISCONN` unless the EP is UNCONNECTED, `-ENOMEM`, or rdma_cm's immediate
    /// errors (`-EADDRNOTAVAIL` for a `src` that is no address of this machine,
    /// `-EADDRINUSE` for its port in use).
    pub(crate) fn connect(
        self: &Arc<Self>,
        src: Option<&SockAddr>,
        dst: &SockAddr,
        timeout_ms: u32,
        private_data: &[u8],
    ) -> Result {
        if timeout_ms == 0
            || private_data.len() > crate::evd::MAX_PRIVATE_DATA
            || src.is_some_and(|s| s.family() != dst.family())
        {
            return Err(EINVAL);
        }
        let ctx = CmCtx::new(self.clone())?;
        // Live until the id is in `conn`, where a device removal finds it.
        let _live = self.ia.live()?;
        let id = Arc::new(
            CmId::new_in(ctx.clone(), &self.ia.owner, &self.ia.net)?,
            GFP_KERNEL,
        )?;
        {
            let mut c = self.conn_mut();
            if c.state != EpState::Unconnected {
                drop(c);
                ctx.set(None);
                return Err(EISCONN);
            }
            c.state = EpState::ActiveConnectionPending;
            c.id = Some(id.clone());
        }
        let mut pdata = KVec::new();
        pdata.extend_from_slice(private_data, GFP_KERNEL)?;
        *self.pending.lock() = Some(Pending {
            timeout_ms,
            private_data: pdata,
        });
        if let Err(e) = id.id().and_then(|g| g.resolve_addr(src, dst, timeout_ms)) {
            // Not inside a CM handler: the id may be dropped here.
            let id = {
                let mut c = self.conn_mut();
                c.state = EpState::Unconnected;
                c.id.take()
            };
            ctx.set(None);
            drop(id);
            return Err(e);
        }
        Ok(())
    }

    /// Ends a connection attempt or connection from a CM event: DISCONNECTED state and an
    /// event. The id stays until the EP is freed (it must not be dropped in its handler).
    pub(super) fn fail(&self, kind: EventType, status: i32, pdata: &[u8]) {
        {
            let mut c = self.conn_mut();
            if c.state == EpState::Disconnected {
                return;
            }
            c.state = EpState::Disconnected;
        }
        self.conn_event(kind, status, pdata);
        // RECVs posted while the QP did not exist yet (a QP's own are flushed by the driver).
        self.rq.flush_early();
    }

    pub(super) fn timeout_or(status: i32, other: EventType) -> EventType {
        if status == ETIMEDOUT.to_errno() {
            EventType::TimedOut
        } else {
            other
        }
    }

    /// rdma_cm events of the EP's id (process context, serialized per id).
    ///
    /// The EP's id stays referenced until the event is handled: an `rkdapl_ep_free` from
    /// another thread meanwhile takes the id from the EP and returns without waiting for this
    /// handler (which may be in the consumer's upcall, waiting for that very thread), and the
    /// id's last reference goes here, where the RDMA layer defers its release.
    pub(super) fn on_cm_event(&self, id: &CmIdRef, ev: &CmEvent<'_>) {
        let _own = self
            .conn
            .lock()
            .id
            .clone()
            .filter(|own| core::ptr::eq(own.as_raw(), id.as_raw()));
        let status = ev.status();
        trace::cm_event(self.id, self.sq.qpn(), ev.name(), status);
        match ev.kind() {
            CmEventKind::AddrResolved => {
                let same = id.device().is_some_and(|d| self.ia.same_device(d));
                let timeout = self.pending.lock().as_ref().map_or(2000, |p| p.timeout_ms);
                if !same {
                    // The address is on another RDMA device than this EP's IA.
                    self.fail(EventType::Unreachable, ENETUNREACH.to_errno(), &[]);
                } else if let Err(e) = id.resolve_route(timeout) {
                    self.fail(EventType::Unreachable, e.to_errno(), &[]);
                }
            }
            CmEventKind::RouteResolved => {
                let pending = self.pending.lock().take();
                let pdata = pending.as_ref().map_or(&[][..], |p| &p.private_data[..]);
                // The EP's own id (the one this event is for), which owns the QP.
                let own = self.conn.lock().id.clone();
                let r = own
                    .ok_or(ENOTCONN)
                    .and_then(|own| self.create_qp(&own))
                    .and_then(|()| id.connect_locked(&self.conn_param(pdata, None)));
                if let Err(e) = r {
                    self.fail(EventType::NonPeerRejected, e.to_errno(), &[]);
                }
            }
            CmEventKind::ConnectResponse => {
                // The REP to a connect whose QP rkdapl moves (`mtu.rs`): RTR with the smaller
                // of the route's path MTU and the one the REP announces, RTS, the RTU.
                match id.establish(mtu::announced(ev.private_data()).unwrap_or(0)) {
                    Ok(()) => {
                        // The connection is established here (rdma_cm reports no
                        // ESTABLISHED on this side for a QP it does not move).
                        trace::cm_event(self.id, self.sq.qpn(), c"established", 0);
                        self.on_established(id, ev)
                    }
                    Err(e) => self.fail(
                        Self::timeout_or(e.to_errno(), EventType::Unreachable),
                        e.to_errno(),
                        &[],
                    ),
                }
            }
            CmEventKind::Established => self.on_established(id, ev),
            CmEventKind::Rejected => self.fail(EventType::PeerRejected, status, ev.private_data()),
            CmEventKind::Unreachable | CmEventKind::ConnectError => self.fail(
                Self::timeout_or(status, EventType::Unreachable),
                status,
                &[],
            ),
            CmEventKind::AddrError | CmEventKind::RouteError => self.fail(
                Self::timeout_or(status, EventType::Unreachable),
                status,
                &[],
            ),
            CmEventKind::Disconnected => {
                // Answer the peer's DREQ (or finish our own) so both sides leave the
                // connection promptly; this also moves the QP to the error state, flushing
                // what is still posted. Allowed inside the handler: it does not take the
                // handler lock.
                let _ = id.disconnect();
                // Also while connecting: the peer's DREQ can overtake the RTU that would have
                // made this side ESTABLISHED (the IB CM then leaves REP_SENT for DREQ_RCVD, and
                // the RTU is dropped as a duplicate), e.g. when the RTU is lost, or when the
                // IB CM's per-CPU work items for the two run on different CPUs. The accept is
                // then over: DISCONNECTED with -ECONNRESET, the EP's one terminal event.
                let status = {
                    let mut c = self.conn_mut();
                    let status = match c.state {
                        EpState::Disconnected => None,
                        s if s.connecting() => Some(ECONNRESET.to_errno()),
                        _ if c.was_connected => Some(0),
                        _ => None,
                    };
                    c.state = EpState::Disconnected;
                    status
                };
                if let Some(status) = status {
                    self.conn_event(EventType::Disconnected, status, &[]);
                }
            }
            CmEventKind::DeviceRemoval => self.fail(EventType::Broken, ENODEV.to_errno(), &[]),
            _ => {}
        }
    }

    /// The connection on `id` is up: rdma_cm's ESTABLISHED, or on the active side of a QP
    /// rkdapl moves, the REP `ev` answered (`mtu.rs`). Inside the id's handler.
    fn on_established(&self, id: &CmIdRef, ev: &CmEvent<'_>) {
        // What the QP got on its way to RTS (`rkdapl_ep_attr.path_mtu`).
        let mtu = id.qp().and_then(|qp| qp.path_mtu().ok()).unwrap_or(0);
        {
            let mut c = self.conn_mut();
            c.path_mtu = mtu;
            if !c.state.connecting() {
                // A late event: the EP was torn down or broken meanwhile.
                return;
            }
            c.state = EpState::Connected;
            c.was_connected = true;
            if c.rd.is_none() {
                // Active side: the passive side's answer, which it clamped to this side's
                // request, as the transport's CM reports it.
                let t = self.ia.transport();
                c.rd = Some(attr::settled_read_limits(t, ev.conn_param()));
            }
        }
        self.conn_event(EventType::Established, 0, ev.private_data());
    }

    /// Passive side: takes over a connection request's id, creates the QP and accepts with the
    /// RDMA READ limits clamped to the peer's request `peer_rd`. May sleep; from a thread, or
    /// inside rdma_cm's handler of the request (the upcall of the CR's event).
    ///
    /// # Errors
    ///
    /// `-EISCONN` unless the EP is UNCONNECTED, `-EINVAL` for private data over 56 bytes,
    /// `-ENODEV` after a device removal, or the errors of QP creation and `rdma_accept`.
    pub(crate) fn accept(
        self: &Arc<Self>,
        id: Arc<EpCmId>,
        peer_rd: (u8, u8),
        private_data: &[u8],
    ) -> Result {
        if private_data.len() > crate::evd::MAX_PRIVATE_DATA {
            return Err(EINVAL);
        }
        if !id.id()?.device().is_some_and(|d| self.ia.same_device(d)) {
            return Err(EXDEV);
        }
        // A device removal waits for the accept: from a thread, it holds the IA live; inside
        // rdma_cm's handler of the request, where `Ia::live` would invert the order of the
        // calls that hold it and take rdma_cm's handler lock, `accepting`, which the removal's
        // revocation of this EP takes after marking the IA removed.
        let in_handler = id.in_request_callback();
        let _live = if in_handler {
            None
        } else {
            Some(self.ia.live()?)
        };
        let _accepting = in_handler.then(|| self.accepting.lock());
        if self.ia.is_removed() {
            return Err(ENODEV);
        }
        {
            let mut c = self.conn_mut();
            if c.state != EpState::Unconnected {
                return Err(EISCONN);
            }
            c.state = EpState::PassiveConnectionPending;
            c.id = Some(id.clone());
        }
        id.handler().set(Some(self.clone()));
        let param = self.conn_param(private_data, Some(peer_rd));
        // What this side's QP gets: it serves `responder_resources` READs and issues
        // `initiator_depth`.
        self.conn_mut().rd = Some((
            u32::from(param.responder_resources),
            u32::from(param.initiator_depth),
        ));
        let r = self.create_qp(&id).and_then(|()| {
            let g = id.id()?;
            if mtu::applies(&g) {
                // A QP rkdapl moves (`mtu.rs`): the smaller path MTU, announced in the REP.
                let mtu = mtu::settle(&g);
                drop(g);
                let rep = mtu::rep_private_data(private_data, mtu);
                let with_rep = ConnParam {
                    private_data: &rep,
                    ..param
                };
                id.accept_with_path_mtu(&with_rep, mtu)
            } else {
                id.accept(&param)
            }
        });
        if r.is_err() {
            let id = {
                let mut c = self.conn_mut();
                c.state = EpState::Unconnected;
                c.rd = None;
                c.id.take()
            };
            if let Some(id) = id {
                id.handler().set(None);
            }
        }
        // The last reference but `conn`'s goes before the guards: a revocation that waited for
        // them drops the id for good (or it went here, failed).
        drop(id);
        r
    }
}
