// SPDX-License-Identifier: GPL-2.0

//! Public service points and the connection requests they receive.

use super::{Ep, Evd, Ia, SockAddr, MAX_PRIVATE_DATA};
use crate::{ep, psp};
use kernel::{prelude::*, sync::Arc};

/// A listening port (`rkdapl_psp_create`, DAT's `dat_psp_create`); connection requests arrive
/// on its EVD as [`super::EventType::ConnectionRequest`] events that own their [`Cr`]. Freed
/// when dropped (`rkdapl_psp_free`): it stops listening and rejects the requests not yet
/// taken from the EVD.
pub struct Psp(Arc<psp::Psp>);

impl Psp {
    /// Listens on `port` (host byte order: 7471, as `rkdapl_psp_create` takes it; a connecting
    /// side's [`SockAddr`] carries it as any socket address does) of the IPv4 and the IPv6
    /// wildcard address of the IA's network namespace (as `rkdapl_psp_create`), for connections
    /// to `ia`'s device, with `backlog` requests pending at most; requests go to `evd`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for port 0 or a zero backlog, `EADDRINUSE` if the port is taken, `ENODEV` after
    /// device removal, `ENOMEM`, or rdma_cm's errors.
    #[inline(never)]
    pub fn new(ia: &Ia, port: u16, backlog: u32, evd: &Evd) -> Result<Psp> {
        let (ia, e, crs) = (&ia.0, &evd.evd, &evd.crs);
        ia.with_device(|_| psp::Psp::new(ia.clone(), port, backlog, e.clone(), crs.clone()))
            .map(Psp)
    }
}

impl Drop for Psp {
    /// `rkdapl_psp_free`. Process context; may sleep (inside an upcall, on the RDMA layer's
    /// deferral workqueue once the upcall returned).
    #[inline(never)]
    fn drop(&mut self) {
        super::free_outside_upcall(&self.0, psp::Psp::free);
    }
}

/// Who is asking to connect (`struct rkdapl_cr_param`, DAT's `DAT_CR_PARAM`).
#[derive(Clone, Copy)]
pub struct CrParam {
    /// The connecting peer's address and port.
    pub remote_addr: SockAddr,
    /// The PSP's port, in host order.
    pub local_port: u16,
}

/// A connection request from [`super::Event::take_cr`]: accept it on an unconnected EP or
/// reject it; dropped unanswered, it is rejected.
///
/// It may be answered (or dropped) from process context, or inside the upcall of its own
/// event ([`super::Evd::set_upcall`]), which runs in rdma_cm's handler of the request; not
/// inside another upcall.
pub struct Cr {
    /// The provider's CR and the token its PSP published it with, until answered.
    cr: Option<(Arc<psp::Cr>, usize)>,
}

impl Cr {
    pub(super) fn new(cr: Arc<psp::Cr>, token: usize) -> Cr {
        Cr {
            cr: Some((cr, token)),
        }
    }

    /// Who is asking to connect (`rkdapl_cr_query`).
    ///
    /// Process context, or the upcall of this CR's event; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` if the request is gone (device removal or its PSP dropped).
    #[inline(never)]
    pub fn query(&self) -> Result<CrParam> {
        let (cr, _) = self.cr.as_ref().ok_or(EINVAL)?;
        let (remote_addr, local_port) = cr.peer()?;
        Ok(CrParam {
            remote_addr,
            local_port,
        })
    }

    /// Accepts on the unconnected `ep` with `private_data` for the peer's ESTABLISHED
    /// (`rkdapl_cr_accept`); RECVs may be posted from now on, and ESTABLISHED follows on the
    /// EP's connection EVD (wait for it before posting SENDs).
    ///
    /// Process context, or the upcall of this CR's event; may sleep.
    ///
    /// # Errors
    ///
    /// With the request given back (to accept on another EP, or to reject): `EINVAL` for too
    /// much private data, `EISCONN` unless `ep` is UNCONNECTED, `EXDEV` if `ep` is on another
    /// device. With the request consumed (and refused; `ep` is UNCONNECTED again): QP
    /// creation and `rdma_accept` errors, `EINVAL` if it is gone, `ECONNABORTED` if the peer
    /// gave up on it (its connect timed out or its EP was freed) before or during the accept.
    ///
    /// After success the EP gets exactly one outcome: ESTABLISHED (then DISCONNECTED), or one
    /// failure event, DISCONNECTED with status `-ECONNRESET` if the peer disconnected before
    /// this side saw the connection established (`rkdapl_cr_accept` in `include/rkdapl.h`).
    #[inline(never)]
    pub fn accept(
        self,
        ep: &Ep,
        private_data: &[u8],
    ) -> core::result::Result<(), (Error, Option<Cr>)> {
        self.accept_on(&ep.0, private_data)
    }

    /// [`Cr::accept`] on the provider's EP `ep` (of an untyped or a typed EP).
    #[inline(never)]
    pub(super) fn accept_on(
        mut self,
        ep: &Arc<ep::Ep>,
        private_data: &[u8],
    ) -> core::result::Result<(), (Error, Option<Cr>)> {
        let Some((cr, _)) = self.cr.as_ref() else {
            return Err((EINVAL, None));
        };
        let r = if private_data.len() > MAX_PRIVATE_DATA {
            Err(EINVAL)
        } else {
            cr.can_accept(ep)
        };
        if let Err(e) = r {
            return Err((e, Some(self)));
        }
        let Some((cr, token)) = self.cr.take() else {
            return Err((EINVAL, None));
        };
        cr.accept(token, ep, private_data).map_err(|e| (e, None))
    }

    /// Rejects the request with `private_data` for the peer's PEER_REJECTED event
    /// (`rkdapl_cr_reject`).
    ///
    /// Process context, or the upcall of this CR's event; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for too much private data (the request is then rejected without any) or a
    /// request that is gone, or rdma_cm's error.
    #[inline(never)]
    pub fn reject(mut self, private_data: &[u8]) -> Result {
        let (cr, token) = self.cr.take().ok_or(EINVAL)?;
        if private_data.len() > MAX_PRIVATE_DATA {
            let _ = cr.reject(token, &[]);
            return Err(EINVAL);
        }
        cr.reject(token, private_data)
    }
}

impl Drop for Cr {
    /// Rejects a request not answered (`rkdapl_cr_reject`). Process context, or the upcall of
    /// this CR's event; may sleep.
    #[inline(never)]
    fn drop(&mut self) {
        if let Some((cr, token)) = self.cr.take() {
            let _ = cr.reject(token, &[]);
        }
    }
}
