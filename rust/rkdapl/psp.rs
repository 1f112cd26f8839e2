// SPDX-License-Identifier: GPL-2.0

//! PSP: public service point (DAT 2.0 section 6.3), a listening CM id, and CR: the
//! connection requests it receives.
//!
//! A connect request on the PSP's port becomes a CR: its CM id is adopted (rkdapl now owns
//! it), and an `RKDAPL_CONNECTION_REQUEST_EVENT` carrying the CR handle and the peer's private
//! data goes to the PSP's EVD. The consumer then accepts the CR on an unconnected EP, or
//! rejects it, from process context, or from the upcall of that event: the upcall runs in
//! rdma_cm's handler of the request (the CR's CM id was adopted there), where the layer's
//! [`crate::rdma::cm::CmId::accept`] runs `rdma_accept` under the handler lock rdma_cm holds,
//! and where a CR's id dropped (rejected, or a failed accept) is given back to rdma_cm, which
//! destroys it when the handler returns.

use crate::rdma::cm::{CmEvent, CmEventKind, CmId, CmIdRef, ConnRequest, SockAddr};
use crate::{
    cm::{CmCtx, CmTarget, EpCmId},
    ep::{Ep, EpState},
    evd::{Evd, Event, PrivateData},
    ia::Ia,
    registry::{Child, Rank},
    trace,
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_mutex, pr_warn_once,
    prelude::*,
    sync::{Arc, Mutex},
};

/// How a PSP hands its CRs to the consumer: the C ABI makes each a handle (`abi::psp`), the
/// Rust API keeps them with the EVD their events go to (`api::evd`). The value `publish`
/// returns is the CR's token: the event's `cr` field and the argument of `retract`, `cr_done`,
/// [`Cr::accept`] and [`Cr::reject`].
pub(crate) trait CrPublisher: Send + Sync {
    /// Makes `cr` reachable by the consumer. Process context (rdma_cm's handler).
    ///
    /// # Errors
    ///
    /// `-ENOMEM`; the request is then left to rdma_cm to refuse.
    fn publish(&self, cr: Arc<Cr>) -> Result<usize>;
    /// Takes back the CR published as `h`, unless the consumer answered it already. Process
    /// context; may sleep.
    fn retract(&self, h: usize) -> Option<Arc<Cr>>;
}

/// A connection request waiting for accept or reject. Registered with its IA from its arrival
/// until it is answered ([`Cr::accept`], [`Cr::reject`]) or its PSP goes ([`Psp::shutdown`]).
///
/// Its CM id's context keeps it alive until it is answered or revoked (which take the id and
/// clear its handler); dropping it then lets go of the PSP.
#[pin_data]
pub(crate) struct Cr {
    pub(crate) psp: Arc<Psp>,
    /// The request's CM id, until accepted or rejected.
    #[pin]
    pub(crate) id: Mutex<Option<EpCmId>>,
    /// RDMA READs the peer will issue to us and will answer from us, as its request said
    /// (rdma_cm's `responder_resources` and `initiator_depth`, already from our side).
    pub(crate) peer_rd: (u8, u8),
    /// The peer gave up on the request (its connect timed out or its EP was freed: the IB CM
    /// delivered its REJ) before the CR was answered.
    peer_gone: AtomicBool,
}

impl CmTarget for Cr {
    /// Events of a CR's id before it is accepted: the peer gave up.
    fn cm_event(&self, _id: &CmIdRef, ev: &CmEvent<'_>) {
        trace::cm_event(0, 0, ev.name(), ev.status());
        if matches!(
            ev.kind(),
            CmEventKind::Rejected
                | CmEventKind::Unreachable
                | CmEventKind::ConnectError
                | CmEventKind::Disconnected
        ) {
            self.peer_gone.store(true, Ordering::Relaxed);
        }
    }
}

impl Cr {
    /// The address of the peer asking to connect (DAT's `remote_ia_address` of the CR), and
    /// the PSP's port. Process context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` once the CR was accepted or rejected.
    pub(crate) fn peer(&self) -> Result<(SockAddr, u16)> {
        let g = self.id.lock();
        let id = g.as_ref().ok_or(EINVAL)?;
        let addr = id.id()?.dst_addr();
        Ok((addr, self.psp.port))
    }

    /// Whether the request arrived on `ia`'s device.
    pub(crate) fn on_device(&self, ia: &Ia) -> bool {
        self.id
            .lock()
            .as_ref()
            .is_some_and(|id| {
                id.id()
                    .is_ok_and(|g| g.device().is_some_and(|d| ia.same_device(d)))
            })
    }

    /// Device removal: rejects the request and releases its CM id. Process context; sleeps.
    pub(crate) fn revoke(&self) {
        if let Ok(id) = self.take_id() {
            let _ = id.id().and_then(|g| g.reject(&[]));
            id.handler().set(None);
        }
    }

    /// Takes the CR's CM id (accept or reject).
    ///
    /// # Errors
    ///
    /// `-EINVAL` if it was taken already.
    fn take_id(&self) -> Result<EpCmId> {
        self.id.lock().take().ok_or(EINVAL)
    }

    /// Whether `ep` may accept this CR, checked before the CR is consumed (so the consumer can
    /// still accept it on another EP or reject it). Process context.
    ///
    /// # Errors
    ///
    /// `-EISCONN` unless the EP is UNCONNECTED, `-EXDEV` if the request arrived on another
    /// device than the EP's.
    pub(crate) fn can_accept(&self, ep: &Ep) -> Result {
        if ep.state() != EpState::Unconnected {
            return Err(EISCONN);
        }
        if !self.on_device(&ep.ia) {
            return Err(EXDEV);
        }
        Ok(())
    }

    /// The consumer answered the CR published as `token`: it leaves its PSP's pending list and
    /// its IA's registry, and its CM id is handed over.
    fn answered(&self, token: usize) -> Result<EpCmId> {
        self.psp.cr_done(token);
        self.psp.ia.children.remove(self);
        self.take_id()
    }

    /// `rkdapl_cr_accept` of the CR published as `token`, which the caller consumed (after
    /// [`Cr::can_accept`]): `ep` takes over its CM id and accepts with `private_data`. May
    /// sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the CR was answered already, `-ECONNABORTED` (the CR consumed) if the peer
    /// gave up on the request before or while it was accepted, or [`Ep::accept`]'s errors.
    pub(crate) fn accept(&self, token: usize, ep: &Arc<Ep>, private_data: &[u8]) -> Result {
        let id = self.answered(token)?;
        if self.peer_gone.load(Ordering::Relaxed) {
            // Nobody waits for an answer: the request's id just goes.
            id.handler().set(None);
            return Err(ECONNABORTED);
        }
        let id = Arc::new(id, GFP_KERNEL)?;
        ep.accept(id, self.peer_rd, private_data).map_err(|e| {
            if self.peer_gone.load(Ordering::Relaxed) {
                ECONNABORTED
            } else {
                e
            }
        })
    }

    /// `rkdapl_cr_reject` of the CR published as `token`, which the caller consumed: rejects
    /// with `private_data` and destroys the CM id. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the CR was answered already, or `rdma_reject`'s error.
    pub(crate) fn reject(&self, token: usize, private_data: &[u8]) -> Result {
        let id = self.answered(token)?;
        let r = id.id().and_then(|g| g.reject(private_data));
        id.handler().set(None);
        r
    }
}

impl Child for Cr {
    fn rank(&self) -> Rank {
        Rank::Cr
    }

    fn revoke(&self) {
        Cr::revoke(self)
    }

    /// After [`Child::revoke`]: the CR leaves the registry (its PSP's shutdown retracts its
    /// publication).
    fn release(&self) {
        self.psp.ia.children.remove(self);
    }
}

/// A public service point. Registered with its IA from [`Psp::new`] to [`Psp::free`].
///
/// Its listening CM id keeps it alive through the id's context until [`Psp::shutdown`]
/// destroys the id (which waits for a running handler); dropping it then lets go of the EVD
/// and the IA.
#[pin_data]
pub(crate) struct Psp {
    pub(crate) ia: Arc<Ia>,
    pub(crate) evd: Arc<Evd>,
    /// The port it listens on (host order).
    pub(crate) port: u16,
    /// The listening ids, IPv4 and (unless the kernel has no IPv6) IPv6; empty once the PSP
    /// is freed.
    #[pin]
    id: Mutex<KVec<EpCmId>>,
    /// How the consumer is handed its CRs (the C ABI: handles).
    crs: Arc<dyn CrPublisher>,
    /// CR handles not yet accepted or rejected, rejected when the PSP is freed.
    #[pin]
    pending: Mutex<KVec<usize>>,
}

impl Psp {
    /// Listens on `port` of every local address, IPv4 and IPv6, of `ia`'s network namespace,
    /// for connections to `ia`'s device, with `backlog` requests pending at most; requests go
    /// to `evd`; registers the PSP with `ia`. The caller holds the IA live ([`Ia::live`]). May
    /// sleep.
    ///
    /// Two listening ids, one per family (IPv6 only, `afonly`): a single dual-stack IPv6 id
    /// would do on RoCE, but on iWARP it is an IPv6 TCP socket, which would show IPv4 peers as
    /// IPv4-mapped IPv6 addresses. (An IPv4 listener alone, as rkdapl had, makes rdma_cm find no
    /// listener for an IPv6 request, which the IB CM then rejects as "consumer defined", 28.)
    ///
    /// # Errors
    ///
    /// `-EINVAL` for port 0 or a zero backlog, `-EADDRINUSE` if the port is taken,
    /// rdma_cm's errors, or the registry's (`-ENODEV` after device removal).
    pub(crate) fn new(
        ia: Arc<Ia>,
        port: u16,
        backlog: u32,
        evd: Arc<Evd>,
        crs: Arc<dyn CrPublisher>,
    ) -> Result<Arc<Psp>> {
        if port == 0 || backlog == 0 {
            return Err(EINVAL);
        }
        let psp = Arc::pin_init(
            pin_init!(Psp {
                ia,
                evd,
                id <- new_mutex!(KVec::new(), "rkdapl_psp_id"),
                port,
                crs,
                pending <- new_mutex!(KVec::new(), "rkdapl_psp_pending"),
            }),
            GFP_KERNEL,
        )?;
        let ctx = CmCtx::new(psp.clone())?;
        let r = psp
            .listen(&ctx, SockAddr::ipv4(0, port), backlog)
            .and_then(|id4| {
                let mut ids = KVec::with_capacity(2, GFP_KERNEL)?;
                ids.push(id4, GFP_KERNEL)?;
                match psp.listen(&ctx, SockAddr::ipv6([0; 16], port), backlog) {
                    Ok(id6) => ids.push(id6, GFP_KERNEL)?,
                    // A kernel, or a namespace, without IPv6: IPv4 only.
                    Err(e) if e == EAFNOSUPPORT => {}
                    Err(e) => return Err(e),
                }
                Ok(ids)
            });
        match r {
            Ok(ids) => *psp.id.lock() = ids,
            Err(e) => {
                ctx.set(None);
                return Err(e);
            }
        }
        if let Err(e) = psp.ia.children.add(psp.clone(), None) {
            psp.shutdown();
            return Err(e);
        }
        Ok(psp)
    }

    /// One listening id of the PSP, bound to the wildcard `addr` of its family in the IA's
    /// network namespace, its events going to `ctx`. May sleep.
    ///
    /// # Errors
    ///
    /// `-EADDRINUSE` if the port is taken, `-EAFNOSUPPORT` for IPv6 where there is none,
    /// rdma_cm's errors.
    fn listen(&self, ctx: &Arc<CmCtx>, addr: SockAddr, backlog: u32) -> Result<EpCmId> {
        let owned = CmId::new_in(ctx.clone(), &self.ia.owner, &self.ia.net)?;
        let id = owned.id()?;
        if addr.is_ipv6() {
            id.set_afonly(true)?;
        }
        // rdma_cm reports a port taken by another wildcard listener as EADDRNOTAVAIL.
        id.bind_addr(&addr)
            .map_err(|e| if e == EADDRNOTAVAIL { EADDRINUSE } else { e })?;
        id.listen(backlog)?;
        drop(id);
        Ok(owned)
    }

    /// `rkdapl_psp_free`: [`Psp::shutdown`], then the PSP leaves its IA's registry. Never
    /// refused. Process context; sleeps.
    pub(crate) fn free(&self) {
        self.shutdown();
        self.ia.children.remove(self);
    }

    /// A peer asks to connect (called in the listening id's handler).
    fn on_connect_request(self: Arc<Self>, req: ConnRequest<'_, CmCtx>, ev: &CmEvent<'_>) {
        trace::cm_event(0, 0, ev.name(), ev.status());
        if req.id().device().is_none_or(|d| !self.ia.same_device(d)) {
            // Arrived on another device than this PSP's IA: leave it to rdma_cm to refuse.
            return;
        }
        Self::check_path_mtu(req.id());
        // Everything that can fail happens before the id is adopted: not adopted, rdma_cm
        // refuses the request itself (adopted, the id could only be given back to it).
        let me = self.clone();
        let Ok(cr) = Arc::pin_init(
            pin_init!(Cr {
                psp: me,
                id <- new_mutex!(None, "rkdapl_cr_id"),
                peer_rd: ev.conn_param(),
                peer_gone: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        ) else {
            return;
        };
        let Ok(ctx) = CmCtx::new(cr.clone()) else {
            return;
        };
        if self.pending.lock().reserve(1, GFP_KERNEL).is_err() {
            return;
        }
        // Registered before it is published: device removal and consumer unload find every
        // CR the consumer can reach (and none once the device is gone).
        if self.ia.children.add(cr.clone(), None).is_err() {
            return;
        }
        let Ok(handle) = self.crs.publish(cr.clone()) else {
            self.ia.children.remove(&*cr);
            return;
        };
        *cr.id.lock() = Some(req.adopt(ctx));
        let _ = self.pending.lock().push_within_capacity(handle);
        let private_data = PrivateData::new(ev.private_data());
        let e = Event::Cr {
            cr: handle,
            private_data,
        };
        self.evd.post(e);
    }

    /// RoCE has no subnet manager to settle a path MTU: rdma_cm puts the connecting side's
    /// route MTU (from its own netdev) into the REQ. When it is larger than this port's,
    /// rkdapl's path-MTU agreement (`mtu.rs`) gives this side's QP this port's MTU and says so
    /// in the REP: an rkdapl peer follows, any other keeps the REQ's and loses its messages
    /// over this port's MTU (docs/guide.md, "Path MTU"). With the agreement off, this side
    /// keeps the REQ's too. Says so in the log for the first such request (once per module
    /// load).
    fn check_path_mtu(id: &CmIdRef) {
        let req = id.path_mtu();
        let Some(dev) = id.device() else { return };
        let Ok(own) = dev.port_roce_mtu(id.port_num()) else {
            return;
        };
        if req <= own || own == 0 {
            return;
        }
        let name = dev.name().to_str().unwrap_or("?");
        if crate::mtu::enabled() {
            pr_warn_once!(
                "a connect request's path MTU {} is over the {} of {}'s netdev: this side uses {} and tells the peer; an rkdapl peer follows, others keep {} and lose messages over {} bytes\n",
                req,
                own,
                name,
                own,
                req,
                own
            );
        } else {
            pr_warn_once!(
                "a connect request's path MTU {} is over the {} of {}'s netdev: this side keeps {} (mtu_agreement=0) and loses messages over {} bytes\n",
                req,
                own,
                name,
                req,
                own
            );
        }
    }

    /// Forgets a CR that was accepted or rejected.
    pub(crate) fn cr_done(&self, handle: usize) {
        self.pending.lock().retain(|h| *h != handle);
    }

    /// Stops listening and rejects every CR not yet answered; they leave the registry. Device
    /// removal; [`Psp::free`]. Process context; sleeps.
    pub(crate) fn shutdown(&self) {
        let ids = core::mem::take(&mut *self.id.lock());
        for id in ids {
            id.handler().set(None);
            drop(id);
        }
        let pending = core::mem::take(&mut *self.pending.lock());
        for h in pending {
            if let Some(cr) = self.crs.retract(h) {
                cr.revoke();
                self.ia.children.remove(&*cr);
            }
        }
    }
}

impl CmTarget for Psp {
    fn cm_event(&self, _id: &CmIdRef, ev: &CmEvent<'_>) {
        trace::cm_event(0, 0, ev.name(), ev.status());
    }

    fn connect_request(self: Arc<Self>, req: ConnRequest<'_, CmCtx>, ev: &CmEvent<'_>) {
        self.on_connect_request(req, ev)
    }
}

impl Child for Psp {
    fn rank(&self) -> Rank {
        Rank::Psp
    }

    fn revoke(&self) {
        self.shutdown()
    }

    fn release(&self) {
        self.free()
    }
}
