// SPDX-License-Identifier: GPL-2.0

//! Endpoints: one reliable connection each.

use super::{EpAttr, EpState, Evd, Pz, SockAddr};
use crate::ep;
use kernel::{prelude::*, sync::Arc};

/// What [`Ep::query`] tells (DAT's `DAT_EP_PARAM`).
#[derive(Clone, Copy)]
pub struct EpParam {
    /// The attributes the EP was created with, defaults and device limits applied; once the
    /// connection got as far as the IB CM's REQ/REP, the RDMA READ limits settled with the
    /// peer.
    pub attr: EpAttr,
    /// The peer's address and port once the EP connects or accepted a CR (DAT's
    /// `remote_ia_address` and `remote_port_qual`).
    pub remote_addr: Option<SockAddr>,
    /// The connection's path MTU in bytes once it was established (0 before): see
    /// `rkdapl_ep_attr.path_mtu` in `include/rkdapl.h`.
    pub path_mtu: u32,
}

/// An endpoint: one reliable connection, an RC QP (`rkdapl_ep_create`, DAT's
/// `dat_ep_create`). Freed when dropped (`rkdapl_ep_free`): every DTO still posted completes
/// first (flushed), then the CM id and the QP are destroyed.
pub struct Ep(pub(super) Arc<ep::Ep>);

impl Ep {
    /// An unconnected EP in `pz` with default attributes; DTO and RMR completions go to
    /// `dto_evd`, connection events to `conn_evd` (may be the same).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` after device removal, `ENOMEM`, or the driver's error.
    #[inline(never)]
    pub fn new(pz: &Pz, dto_evd: &Evd, conn_evd: &Evd) -> Result<Ep> {
        Self::with_attr(pz, dto_evd, conn_evd, &EpAttr::default())
    }

    /// An unconnected EP as [`Ep::new`], with the attributes `attr` (zero fields take
    /// defaults).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for attributes beyond the device's limits, `ENODEV` after device removal,
    /// `ENOMEM`, or the driver's error.
    #[inline(never)]
    pub fn with_attr(pz: &Pz, dto_evd: &Evd, conn_evd: &Evd, attr: &EpAttr) -> Result<Ep> {
        let (pz, dto, conn) = (&pz.0, &dto_evd.evd, &conn_evd.evd);
        pz.ia
            .with_device(|dev| ep::Ep::new(pz.clone(), dev, dto.clone(), conn.clone(), *attr))
            .map(Ep)
    }

    /// The EP's number: what [`super::Event::ep_id`] reports for its events (and its
    /// directory in debugfs, `ep<id>`). Any context.
    #[inline(never)]
    pub fn id(&self) -> u32 {
        self.0.id
    }

    /// Connects to the PSP at `remote` (address and port) with `private_data` (at most
    /// [`super::MAX_PRIVATE_DATA`] bytes), resolving the address and route in up to
    /// `timeout_ms` ms each (`rkdapl_ep_connect`). ESTABLISHED, PEER_REJECTED, UNREACHABLE,
    /// TIMED_OUT or NON_PEER_REJECTED follows on the connection EVD.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a zero timeout or too much private data, `EISCONN` unless the EP is
    /// UNCONNECTED, `ENODEV` after device removal, rdma_cm's errors (e.g. `ENETUNREACH`).
    #[inline(never)]
    pub fn connect(&self, remote: &SockAddr, timeout_ms: u32, private_data: &[u8]) -> Result {
        self.0.connect(None, remote, timeout_ms, private_data)
    }

    /// As [`Ep::connect`], from the source address `local` (`rkdapl_ep_connect_from`): the
    /// connection leaves from that address (its port, if not 0, too), which picks the path when
    /// the machine has several addresses or RDMA devices towards `remote`, as nvme-rdma's
    /// `host_traddr` does. `local` must be an address of the EP's IA's RDMA device, or
    /// UNREACHABLE follows.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Ep::connect`], and `EINVAL` if `local` and `remote` are of different families,
    /// `EADDRNOTAVAIL` if `local` is no address of this machine, `EADDRINUSE` if its port is
    /// taken.
    #[inline(never)]
    pub fn connect_from(
        &self,
        local: &SockAddr,
        remote: &SockAddr,
        timeout_ms: u32,
        private_data: &[u8],
    ) -> Result {
        self.0
            .connect(Some(local), remote, timeout_ms, private_data)
    }

    /// Starts a graceful disconnect (`rkdapl_ep_disconnect`);
    /// [`super::EventType::Disconnected`] follows and DTOs still queued complete flushed.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENOTCONN` unless CONNECTED.
    #[inline(never)]
    pub fn disconnect(&self) -> Result {
        self.0.disconnect()
    }

    /// The EP's state (`rkdapl_ep_get_state`).
    ///
    /// Any context.
    #[inline(never)]
    pub fn state(&self) -> EpState {
        self.0.state()
    }

    /// Makes a DISCONNECTED EP UNCONNECTED again, to connect or accept once more
    /// (`rkdapl_ep_reset`, DAT's `dat_ep_reset`). The old connection's QP is drained and its
    /// CM id destroyed; the next [`Ep::connect`] or [`super::Cr::accept`] makes new ones with
    /// the same attributes. The EP keeps its EVDs and its [`Ep::id`].
    ///
    /// Process context; sleeps (drains the old QP); not from an upcall.
    ///
    /// # Errors
    ///
    /// `EINVAL` unless DISCONNECTED; `EBUSY` while DTOs posted on the EP have not all
    /// reported their completion (flushed ones included; suppressed ones do not count);
    /// `ENODEV` after device removal.
    #[inline(never)]
    pub fn reset(&self) -> Result {
        self.0.reset()
    }

    /// The EP's attributes and its peer's address (`rkdapl_ep_query`).
    ///
    /// Any context.
    #[inline(never)]
    pub fn query(&self) -> EpParam {
        EpParam {
            attr: self.0.query(),
            remote_addr: self.0.peer(),
            path_mtu: self.0.path_mtu(),
        }
    }

    /// Grants `privileges` (remote read, write, atomics: [`super::MemPriv`]) on
    /// `[off, off + len)` of `lmr` with an RMR of the EP's pool
    /// (`rkdapl_ep_pooled_rmr_bind`): an FRWR MR taken from the pool the EP's QP was created
    /// with ([`EpAttr::max_pooled_rmrs`]) is registered over the range with a fresh key by a
    /// REG_MR posted on the EP, valid once the [`super::EventType::RmrBindCompletion`] with
    /// `cookie` arrives (or for any DTO posted on the EP after this call). The grant ends
    /// with [`Ep::unbind_pooled_rmr`] of its rkey, or with the connection.
    ///
    /// Any context: nothing sleeps or allocates (per I/O, under a spinlock or in a block
    /// request's `queue_rq` without `BLK_MQ_F_BLOCKING`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a zero length, no privilege or [`super::MemPriv::LocalWrite`], `ERANGE` if
    /// the range leaves the LMR, `EACCES` if the LMR lacks a privilege, `EXDEV` for an LMR of
    /// another PZ, `E2BIG` if the range needs too many pages, `EAGAIN` if every pooled RMR is
    /// bound (or its unbind not completed yet), `ENOTCONN` if the EP has no pool (no QP yet or
    /// any more, or none asked for), `ENODEV` after device removal, `ENOSPC` if the send queue
    /// is full, `ENOMEM`.
    #[inline(never)]
    pub fn bind_pooled_rmr(
        &self,
        lmr: &super::Lmr,
        off: u64,
        len: u64,
        privileges: impl Into<super::MemPrivs>,
        cookie: u64,
    ) -> Result<super::RemoteRegion> {
        self.bind_pooled(
            lmr,
            off,
            len,
            privileges.into(),
            crate::dto::Completion::reported(cookie),
        )
    }

    /// [`Ep::bind_pooled_rmr`] with DAT's `DAT_COMPLETION_SUPPRESS_FLAG`: a bind that succeeds
    /// reports no event, and its REG_MR is posted unsignalled (as nvme-rdma posts it) unless
    /// too many DTOs in a row were: the completion of a later signalled DTO on the EP (a SEND
    /// carrying the rkey, say) covers it. One that fails reports its
    /// [`super::EventType::RmrBindCompletion`] with `cookie` and the error. Any context.
    ///
    /// # Errors
    ///
    /// As [`Ep::bind_pooled_rmr`].
    #[inline(never)]
    pub fn bind_pooled_rmr_suppressed(
        &self,
        lmr: &super::Lmr,
        off: u64,
        len: u64,
        privileges: impl Into<super::MemPrivs>,
        cookie: u64,
    ) -> Result<super::RemoteRegion> {
        let done = crate::dto::Completion {
            cookie,
            suppress: true,
        };
        self.bind_pooled(lmr, off, len, privileges.into(), done)
    }

    /// The two pooled binds, which differ only in how their completion is reported.
    fn bind_pooled(
        &self,
        lmr: &super::Lmr,
        off: u64,
        len: u64,
        privileges: super::MemPrivs,
        done: crate::dto::Completion,
    ) -> Result<super::RemoteRegion> {
        let (rkey, address) = self
            .0
            .bind_pooled_rmr(lmr.0.lmr(), off, len, privileges, done)?;
        Ok(super::RemoteRegion {
            address,
            rkey,
            length: len,
        })
    }

    /// Revokes the pooled grant of `rkey` with a LOCAL_INV posted on the EP
    /// (`rkdapl_ep_pooled_rmr_unbind`); an [`super::EventType::RmrBindCompletion`] of op
    /// [`super::DtoOp::RmrUnbind`] with `cookie` follows, and the pooled RMR is back in the
    /// pool then. Any context.
    ///
    /// # Errors
    ///
    /// `EINVAL` if no pooled grant of the EP has `rkey`, `ENOTCONN` if the EP has no QP any
    /// more, `ENOSPC` if its send queue is full (the grant stays bound).
    #[inline(never)]
    pub fn unbind_pooled_rmr(&self, rkey: u32, cookie: u64) -> Result {
        self.0.unbind_pooled_rmr(rkey, cookie)
    }
}

impl Drop for Ep {
    /// `rkdapl_ep_free`. Process context; sleeps until the QP is drained. Inside an upcall,
    /// where that would wait for the upcall's own context, the EP is freed on the RDMA layer's
    /// deferral workqueue once the upcall returned.
    #[inline(never)]
    fn drop(&mut self) {
        super::free_outside_upcall(&self.0, ep::Ep::free);
    }
}
