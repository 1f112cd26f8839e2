// SPDX-License-Identifier: GPL-2.0

//! PSP: public service point (DAT 2.0 section 6.3), a listening CM id, and CR: the
//! connection requests it receives.
//!
//! A connect request on the PSP's port becomes a CR: its CM id is adopted (rkdapl now owns
//! it), and an `RKDAPL_CONNECTION_REQUEST_EVENT` carrying the CR handle and the peer's private
//! data goes to the PSP's EVD. The consumer then accepts the CR on an unconnected EP, or
//! rejects it, from process context.

use crate::{
    cm::{CmCtx, CmTarget, EpCmId},
    ep::{Ep, EpState},
    evd::{Evd, Event, EventType},
    ia::Ia,
    trace,
};
use kernel::{
    new_mutex,
    prelude::*,
    rdma::cm::{CmEvent, CmId, CmIdRef, ConnRequest, SockAddr},
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

/// A connection request waiting for accept or reject.
#[pin_data]
pub(crate) struct Cr {
    pub(crate) psp: Arc<Psp>,
    /// The request's CM id, until accepted or rejected.
    #[pin]
    pub(crate) id: Mutex<Option<EpCmId>>,
    /// RDMA READs the peer will issue to us and will answer from us, as its request said
    /// (rdma_cm's `responder_resources` and `initiator_depth`, already from our side).
    pub(crate) peer_rd: (u8, u8),
}

impl CmTarget for Cr {
    /// Events of a CR's id before it is accepted: the peer gave up.
    fn cm_event(&self, _id: &CmIdRef, ev: &CmEvent<'_>) {
        trace::cm_event(0, ev.name(), ev.status());
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
        Ok((id.dst_addr(), self.psp.port))
    }

    /// Whether `ep` may accept this CR, checked before the consumer's side of it (its C
    /// handle, its Rust object) is consumed, so the consumer can still accept it on another EP
    /// or reject it. Process context.
    ///
    /// # Errors
    ///
    /// `-EISCONN` unless `ep` is UNCONNECTED, `-EXDEV` if the request arrived on another device
    /// than the EP's.
    pub(crate) fn can_accept(&self, ep: &Ep) -> Result {
        if ep.state() != EpState::Unconnected {
            return Err(EISCONN);
        }
        if !self.on_device(&ep.ia) {
            return Err(EXDEV);
        }
        Ok(())
    }

    /// Accepts the request published as `token` on `ep` with `private_data`
    /// (`rkdapl_cr_accept`, after [`Cr::can_accept`], once the caller consumed its side of the
    /// CR); ESTABLISHED follows on the EP's connection EVD. The request is consumed, whatever
    /// the outcome. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the CR was answered already, `-ENOMEM`, or [`Ep::accept`]'s errors.
    pub(crate) fn accept(&self, token: usize, ep: &Arc<Ep>, private_data: &[u8]) -> Result {
        self.psp.cr_done(token);
        let id = Arc::new(self.take_id()?, GFP_KERNEL)?;
        ep.accept(id, self.peer_rd, private_data)
    }

    /// Rejects the request published as `token` with `private_data` (`rkdapl_cr_reject`,
    /// once the caller consumed its side of the CR); the peer gets PEER_REJECTED. Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the CR was answered already, or rdma_cm's error.
    pub(crate) fn reject(&self, token: usize, private_data: &[u8]) -> Result {
        self.psp.cr_done(token);
        let id = self.take_id()?;
        let r = id.reject(private_data);
        id.handler().set(None);
        r
    }

    /// Whether the request arrived on `ia`'s device.
    pub(crate) fn on_device(&self, ia: &Ia) -> bool {
        self.id
            .lock()
            .as_ref()
            .and_then(|id| id.device())
            .is_some_and(|d| ia.same_device(d))
    }

    /// Device removal: rejects the request and releases its CM id. Process context; sleeps.
    pub(crate) fn revoke(&self) {
        if let Ok(id) = self.take_id() {
            let _ = id.reject(&[]);
            id.handler().set(None);
        }
    }

    /// Takes the CR's CM id (accept or reject).
    ///
    /// # Errors
    ///
    /// `-EINVAL` if it was taken already.
    pub(crate) fn take_id(&self) -> Result<EpCmId> {
        self.id.lock().take().ok_or(EINVAL)
    }
}

/// A public service point.
#[pin_data]
pub(crate) struct Psp {
    pub(crate) ia: Arc<Ia>,
    pub(crate) evd: Arc<Evd>,
    /// The port it listens on (host order).
    pub(crate) port: u16,
    /// The listening id; `None` once the PSP is freed.
    #[pin]
    id: Mutex<Option<EpCmId>>,
    /// How the consumer is handed its CRs (the C ABI: handles).
    crs: Arc<dyn CrPublisher>,
    /// CR handles not yet accepted or rejected, rejected when the PSP is freed.
    #[pin]
    pending: Mutex<KVec<usize>>,
}

impl Psp {
    /// Listens on `port` of every local address, for connections to `ia`'s device, with
    /// `backlog` requests pending at most; requests go to `evd`. The caller holds the IA live
    /// ([`Ia::live`]) until the PSP is published. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for port 0 or a zero backlog, `-EADDRINUSE` if the port is taken, or
    /// rdma_cm's errors.
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
                id <- new_mutex!(None, "rkdapl_psp_id"),
                port,
                crs,
                pending <- new_mutex!(KVec::new(), "rkdapl_psp_pending"),
            }),
            GFP_KERNEL,
        )?;
        let ctx = CmCtx::new(psp.clone())?;
        let id = CmId::new(ctx.clone(), psp.ia.owner)?;
        // rdma_cm reports a port taken by another wildcard listener as EADDRNOTAVAIL.
        let r = id
            .bind_addr(&SockAddr::ipv4(0, port))
            .map_err(|e| if e == EADDRNOTAVAIL { EADDRINUSE } else { e })
            .and_then(|()| id.listen(backlog));
        if let Err(e) = r {
            drop(id);
            ctx.set(None);
            return Err(e);
        }
        *psp.id.lock() = Some(id);
        Ok(psp)
    }

    /// A peer asks to connect (called in the listening id's handler).
    fn on_connect_request(self: Arc<Self>, req: ConnRequest<'_, CmCtx>, ev: &CmEvent<'_>) {
        trace::cm_event(0, ev.name(), ev.status());
        if req
            .id()
            .device()
            .is_none_or(|d| !self.ia.same_device(d))
        {
            // Arrived on another device than this PSP's IA: leave it to rdma_cm to refuse.
            return;
        }
        // Everything that can fail happens before the id is adopted: once adopted it cannot
        // be dropped inside this handler.
        let me = self.clone();
        let Ok(cr) = Arc::pin_init(
            pin_init!(Cr {
                psp: me,
                id <- new_mutex!(None, "rkdapl_cr_id"),
                peer_rd: ev.conn_param(),
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
        let Ok(handle) = self.crs.publish(cr.clone()) else {
            return;
        };
        *cr.id.lock() = Some(req.adopt(ctx));
        let _ = self.pending.lock().push_within_capacity(handle);
        let mut e = Event::new(EventType::ConnectionRequest).with_private_data(ev.private_data());
        e.cr = handle;
        self.evd.post(e);
    }

    /// Forgets a CR that was accepted or rejected.
    pub(crate) fn cr_done(&self, handle: usize) {
        self.pending.lock().retain(|h| *h != handle);
    }

    /// The consumer lets go of the PSP (`rkdapl_psp_free`, a Rust API PSP dropped): it stops
    /// listening and rejects every CR not yet answered ([`Psp::shutdown`]). Process context;
    /// sleeps.
    pub(crate) fn free(&self) {
        self.shutdown();
    }

    /// Stops listening and rejects every CR not yet answered. Process context; sleeps.
    pub(crate) fn shutdown(&self) {
        let id = self.id.lock().take();
        if let Some(id) = id {
            id.handler().set(None);
            drop(id);
        }
        let pending = core::mem::take(&mut *self.pending.lock());
        for h in pending {
            if let Some(cr) = self.crs.retract(h) {
                cr.revoke();
            }
        }
    }
}

impl CmTarget for Psp {
    fn cm_event(&self, _id: &CmIdRef, ev: &CmEvent<'_>) {
        trace::cm_event(0, ev.name(), ev.status());
    }

    fn connect_request(self: Arc<Self>, req: ConnRequest<'_, CmCtx>, ev: &CmEvent<'_>) {
        self.on_connect_request(req, ev)
    }
}
