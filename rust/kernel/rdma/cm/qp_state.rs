// SPDX-License-Identifier: GPL-2.0

//! The QPs the layer moves through their states itself (RoCE ports), to settle the path MTU
//! of peers whose network devices' MTUs differ.
//!
//! RoCE has no subnet manager to settle a path MTU: rdma_cm puts the connecting side's route
//! MTU (`iboe_get_mtu()` of its own netdev's MTU) into the REQ, and both QPs get it on their
//! way to RTR (the passive side's from the REQ, `cm_init_qp_rtr_attr`). When the connecting
//! side's netdev MTU is the larger, the passive side's QP sends packets its own netdev cannot
//! carry and every message over one MTU is lost. `IB_QP_PATH_MTU` can only be set on the
//! INIT to RTR transition, and rdma_cm makes that transition itself for a QP it created
//! (`rdma_create_qp`), inside `rdma_accept` on the passive side and on receipt of the REP on
//! the active side, before the consumer hears of it.
//!
//! rdma_cm also lets a ULP own the QP (`rdma_cm_id.qp` NULL, its number given in
//! `rdma_conn_param.qp_num`): then it makes no QP transition and leaves them to the ULP, which
//! takes the attributes from `rdma_init_qp_attr()`, reports the REP on the active side as
//! `RDMA_CM_EVENT_CONNECT_RESPONSE` and sends the RTU when the ULP calls `rdma_accept(id,
//! NULL)`. On RoCE ports the layer does so for every QP ([`super::CmId::create_qp`]), so that
//! one path serves (and every RoCE test runs through) all connections:
//!
//! - passive side ([`super::CmId::accept`]): RTR with the smaller of the REQ's path MTU and
//!   its own port's (the one rdma_cm would offer from it, `iboe_get_mtu()` of its netdev's
//!   MTU), RTS, and the REP carries the MTU it chose in a trailer of its private data (the
//!   last 8 of the REP's 196 bytes: `"rkMT"`, version 1, the `enum ib_mtu`, two zero bytes;
//!   the consumer's part is [`super::MAX_ACCEPT_PRIVATE_DATA`] bytes at most);
//! - active side (the REP's event): RTR with the smaller of its route's MTU and the trailer's
//!   (a REP without one, from a peer that is not this layer, leaves the route's), RTS, the
//!   RTU; the handler sees [`CmEventKind::Established`], as with a QP rdma_cm moves;
//! - the error state where rdma_cm would move its own QP there: a local disconnect
//!   ([`CmIdRef::disconnect`]), a REJ received, a failed accept (after which the request is
//!   rejected, as rdma_cm does).
//!
//! A peer that is not this layer and connects with the larger MTU gets the smaller one from
//! no one: its QP keeps the REQ's, and its messages over the passive side's MTU fail (the
//! passive side refuses packets longer than its path MTU). InfiniBand (whose subnet manager
//! settles the path) and iWARP (which has no path MTU) keep rdma_cm's QPs.

use super::super::{device::Transport, pd::Pd};
use super::{
    CmEvent, CmEventKind, CmHandler, CmId, CmIdRef, IB_CM_REJ_CONSUMER_DEFINED,
    MAX_ACCEPT_PRIVATE_DATA,
};
use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
};
use core::{
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};

/// Bytes of private data an IB CM REP carries (IB spec 12.6.8), all of which the active
/// side's event shows.
const REP_PRIVATE_DATA: usize = 196;
/// Bytes of the trailer at the end of a REP's private data.
const TRAILER_LEN: usize = 8;
const TRAILER_TAG: [u8; 4] = *b"rkMT";
const TRAILER_VERSION: u8 = 1;
const _: () = assert!(MAX_ACCEPT_PRIVATE_DATA + TRAILER_LEN == REP_PRIVATE_DATA);

/// The REP trailer announcing path MTU `mtu` (`enum ib_mtu`).
fn trailer(mtu: bindings::ib_mtu) -> [u8; TRAILER_LEN] {
    let t = TRAILER_TAG;
    [t[0], t[1], t[2], t[3], TRAILER_VERSION, mtu as u8, 0, 0]
}

/// The path MTU (`enum ib_mtu`, 1..=5) a REP's private data announces, if it ends with a
/// trailer of this layer.
fn parse_trailer(pdata: &[u8]) -> Option<bindings::ib_mtu> {
    let t = pdata.get(MAX_ACCEPT_PRIVATE_DATA..REP_PRIVATE_DATA)?;
    if t[..4] != TRAILER_TAG || t[4] != TRAILER_VERSION || t[6] != 0 || t[7] != 0 {
        return None;
    }
    matches!(t[5], 1..=5).then_some(bindings::ib_mtu::from(t[5]))
}

/// `enum ib_mtu` of a path MTU in bytes (0 for anything else).
fn mtu_enum(bytes: u32) -> bindings::ib_mtu {
    match bytes {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        4096 => 5,
        _ => 0,
    }
}

/// The QP the layer moves itself, at the head of every CM id's context (see `Ctx`).
/// NULL until `CmId::create_qp_raw` created one, and for QPs rdma_cm moves.
pub(super) struct OwnQp(AtomicPtr<bindings::ib_qp>);

impl OwnQp {
    pub(super) const fn new() -> OwnQp {
        OwnQp(AtomicPtr::new(ptr::null_mut()))
    }
}

impl CmIdRef {
    /// The QP the layer moves itself for this id: NULL if the id has none, or has one that
    /// rdma_cm moves (`rdma_cm_id.qp`). Any context.
    pub(super) fn own_qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: The id is live. Its `context` is NULL (a child nobody adopted, or one given
        // back) or the `Ctx` of the `CmId` owning it, which is `repr(C)` with an `OwnQp` first
        // and lives as long as the id (`CmId`'s invariant).
        unsafe {
            let ctx = (*self.as_raw()).context;
            if ctx.is_null() {
                return ptr::null_mut();
            }
            (*ctx.cast::<OwnQp>()).0.load(Ordering::Acquire)
        }
    }

    /// Whether the layer moves the QP of this (bound) id itself: on RoCE ports.
    fn moves_qp(&self) -> bool {
        self.device()
            .is_some_and(|d| matches!(d.transport(self.port_num()), Ok(Transport::Roce)))
    }

    /// Moves `qp` to `state` with the attributes rdma_cm gives it now (`rdma_init_qp_attr`),
    /// changed by `adjust`. May sleep.
    fn modify(
        &self,
        qp: *mut bindings::ib_qp,
        state: bindings::ib_qp_state,
        adjust: impl FnOnce(&mut bindings::ib_qp_attr),
    ) -> Result {
        let mut attr = bindings::ib_qp_attr {
            qp_state: state,
            ..Default::default()
        };
        let mut mask: c_int = 0;
        // SAFETY: The id is live; `attr` and `mask` are writable for the call.
        to_result(unsafe { bindings::rdma_init_qp_attr(self.as_raw(), &mut attr, &mut mask) })?;
        adjust(&mut attr);
        // SAFETY: `qp` is the id's live QP (its caller's); `attr` is valid for the call.
        to_result(unsafe { bindings::ib_modify_qp(qp, &mut attr, mask) })
    }

    /// Moves the layer's QP of the id (if any) to the error state, where rdma_cm would move a
    /// QP of its own: every posted work request is flushed. May sleep.
    pub(super) fn own_qp_to_error(&self) {
        let qp = self.own_qp();
        if qp.is_null() {
            return;
        }
        let mut attr = bindings::ib_qp_attr {
            qp_state: bindings::ib_qp_state_IB_QPS_ERR,
            ..Default::default()
        };
        // SAFETY: `qp` is the id's live QP; any state may go to ERR. On failure (a QP already
        // in ERR or RESET) there is nothing to flush.
        let _ = unsafe {
            bindings::ib_modify_qp(
                qp,
                &mut attr,
                bindings::ib_qp_attr_mask_IB_QP_STATE as c_int,
            )
        };
    }

    /// Names the layer's QP (if any) in connection parameters, as rdma_cm wants of a QP it
    /// does not move (`qp_num`, `srq`).
    pub(super) fn own_qp_param(&self, p: &mut bindings::rdma_conn_param) {
        let qp = self.own_qp();
        if qp.is_null() {
            return;
        }
        // SAFETY: `qp` is the id's live QP; reading fields fixed at its creation.
        unsafe {
            p.qp_num = (*qp).qp_num;
            p.srq = u8::from(!(*qp).srq.is_null());
        }
    }

    /// `rdma_accept` of a connect request, `p` built from the consumer's `private_data`: for
    /// the layer's QP, first RTR (the smaller path MTU) and RTS, then the REP with the
    /// trailer. rdma_cm's handler lock must be held. May sleep.
    ///
    /// # Errors
    ///
    /// The errors of the transitions (the request is then rejected) or of `rdma_accept`
    /// (which rejects it itself).
    pub(super) fn accept_locked(
        &self,
        p: &mut bindings::rdma_conn_param,
        private_data: &[u8],
    ) -> Result {
        let qp = self.own_qp();
        if qp.is_null() {
            // SAFETY: The id is live; the caller holds its handler lock; `p` is valid.
            return to_result(unsafe { bindings::rdma_accept(self.as_raw(), p) });
        }
        let own = self
            .device()
            .and_then(|d| d.port_roce_mtu(self.port_num()).ok())
            .map_or(0, mtu_enum);
        let mut mtu = 0;
        let (rr, id) = (p.responder_resources, p.initiator_depth);
        let r = self
            .modify(qp, bindings::ib_qp_state_IB_QPS_INIT, |_| ())
            .and_then(|()| {
                self.modify(qp, bindings::ib_qp_state_IB_QPS_RTR, |a| {
                    if own != 0 && own < a.path_mtu {
                        a.path_mtu = own;
                    }
                    mtu = a.path_mtu;
                    a.max_dest_rd_atomic = rr;
                })
            })
            .and_then(|()| {
                self.modify(qp, bindings::ib_qp_state_IB_QPS_RTS, |a| {
                    a.max_rd_atomic = id
                })
            });
        if let Err(e) = r {
            self.own_qp_to_error();
            // SAFETY: The id is live and has a connect request to refuse.
            unsafe {
                bindings::rdma_reject(self.as_raw(), ptr::null(), 0, IB_CM_REJ_CONSUMER_DEFINED)
            };
            return Err(e);
        }
        let mut rep = [0u8; REP_PRIVATE_DATA];
        let n = private_data.len().min(MAX_ACCEPT_PRIVATE_DATA);
        rep[..n].copy_from_slice(&private_data[..n]);
        rep[MAX_ACCEPT_PRIVATE_DATA..].copy_from_slice(&trailer(mtu));
        p.private_data = rep.as_ptr().cast();
        p.private_data_len = REP_PRIVATE_DATA as u8;
        self.own_qp_param(p);
        // SAFETY: The id is live; the caller holds its handler lock; `p` and the private data
        // it points to (`rep`) are valid for the call (the IB CM copies them).
        let r = to_result(unsafe { bindings::rdma_accept(self.as_raw(), p) });
        if r.is_err() {
            // rdma_accept rejected the request, but moves only its own QPs to ERR.
            self.own_qp_to_error();
        }
        r
    }

    /// Active side, on the REP (`RDMA_CM_EVENT_CONNECT_RESPONSE`, whose private data is
    /// `pdata`): RTR with the smaller path MTU, RTS, then the RTU. Inside the id's handler.
    ///
    /// # Errors
    ///
    /// The errors of the transitions or of sending the RTU; the QP is in ERR and the peer
    /// gets a REJ.
    fn settle_active(&self, qp: *mut bindings::ib_qp, pdata: &[u8]) -> Result {
        let peer = parse_trailer(pdata);
        let r = self
            .modify(qp, bindings::ib_qp_state_IB_QPS_INIT, |_| ())
            .and_then(|()| {
                self.modify(qp, bindings::ib_qp_state_IB_QPS_RTR, |a| {
                    if let Some(m) = peer.filter(|m| *m < a.path_mtu) {
                        a.path_mtu = m;
                    }
                })
            })
            .and_then(|()| self.modify(qp, bindings::ib_qp_state_IB_QPS_RTS, |_| ()));
        if let Err(e) = r {
            self.own_qp_to_error();
            // SAFETY: The id is live, in its handler, with a REP received: the IB CM sends a
            // REJ (rdma_reject does not require the passive side).
            unsafe {
                bindings::rdma_reject(self.as_raw(), ptr::null(), 0, IB_CM_REJ_CONSUMER_DEFINED)
            };
            return Err(e);
        }
        // SAFETY: The id is live and its handler lock held (this runs in its handler); a NULL
        // parameter on the active side sends the RTU (and on failure a REJ).
        let r = to_result(unsafe { bindings::rdma_accept(self.as_raw(), ptr::null_mut()) });
        if r.is_err() {
            self.own_qp_to_error();
        }
        r
    }
}

/// What the layer does with an event of `id` before its handler sees it, for the layer's QP:
/// the REP settles the path MTU and is reported as established (or as a connect error), a
/// REJ moves the QP to ERR. Returns the event to deliver instead of `ev`, if any. Inside the
/// id's handler.
pub(super) fn before_event(id: &CmIdRef, ev: &CmEvent<'_>) -> Option<bindings::rdma_cm_event> {
    let qp = id.own_qp();
    if qp.is_null() {
        return None;
    }
    match ev.kind() {
        CmEventKind::Rejected => {
            id.own_qp_to_error();
            None
        }
        CmEventKind::ConnectResponse => {
            // SAFETY: `ev.0` is a live event; the copy holds the same plain data and pointers
            // (the private data stays rdma_cm's, valid for the handler's call).
            let mut e = unsafe { ptr::read(ev.0) };
            match id.settle_active(qp, ev.private_data()) {
                Ok(()) => e.event = bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED,
                Err(err) => {
                    e.event = bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR;
                    e.status = err.to_errno();
                }
            }
            Some(e)
        }
        _ => None,
    }
}

impl<T: CmHandler> CmId<T> {
    /// Creates the QP of `attr` in `pd` for this id: on a RoCE port one the layer moves itself
    /// (in INIT from here), otherwise with `rdma_create_qp`. Restrack names the layer's QPs
    /// after the id's owner. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a PD of another device, or the driver's error.
    pub(in super::super) fn create_qp_raw(
        &self,
        pd: &Pd,
        attr: &mut bindings::ib_qp_init_attr,
    ) -> Result {
        let id = self.id()?;
        if !id.moves_qp() {
            // SAFETY: The id is live and bound; `attr` is valid for the call.
            return to_result(unsafe {
                bindings::rdma_create_qp(id.as_raw(), pd.as_raw(), attr)
            });
        }
        if id.device().is_none_or(|d| !pd.binding().is(d)) {
            return Err(EINVAL);
        }
        attr.port_num = id.port_num();
        // SAFETY: The PD is live; `attr` is valid for the call; the name is NUL-terminated and
        // outlives the QP (the context keeps it until after `Drop` destroyed the QP).
        let qp = from_err_ptr(unsafe {
            bindings::ib_create_qp_kernel(pd.as_raw(), attr, self.ctx.name.as_char_ptr())
        })?;
        if let Err(e) = id.modify(qp, bindings::ib_qp_state_IB_QPS_INIT, |_| ()) {
            // SAFETY: `qp` was just created; nothing else knows it.
            unsafe { bindings::ib_destroy_qp(qp) };
            return Err(e);
        }
        self.ctx.own_qp.0.store(qp, Ordering::Release);
        Ok(())
    }

    /// Destroys the QP just created, to which nothing was posted (its pools could not be
    /// attached). May sleep.
    pub(in super::super) fn destroy_new_qp(&self) {
        // Called by `create_qp_with`, which holds the id live.
        let Ok(id) = self.id() else { return };
        let qp = id.own_qp();
        if qp.is_null() {
            // SAFETY: The id is live and has the QP rdma_create_qp just created.
            unsafe { bindings::rdma_destroy_qp(id.as_raw()) };
            return;
        }
        self.ctx.own_qp.0.store(ptr::null_mut(), Ordering::Release);
        // SAFETY: `qp` is the id's QP, which no work request used; the id forgot it above.
        unsafe { bindings::ib_destroy_qp(qp) };
    }
}

#[cfg(CONFIG_KUNIT = "y")]
#[kunit_tests(rust_kernel_rdma_cm)]
mod tests {
    use super::*;

    #[test]
    fn trailer_round_trip() {
        let mut rep = [0u8; REP_PRIVATE_DATA];
        assert_eq!(parse_trailer(&rep), None);
        rep[MAX_ACCEPT_PRIVATE_DATA..].copy_from_slice(&trailer(mtu_enum(1024)));
        assert_eq!(parse_trailer(&rep), Some(3));
        // A REP shorter than 196 bytes (not the IB CM's) or another tag: no trailer.
        assert_eq!(parse_trailer(&rep[..REP_PRIVATE_DATA - 1]), None);
        rep[MAX_ACCEPT_PRIVATE_DATA] = b'x';
        assert_eq!(parse_trailer(&rep), None);
        rep[MAX_ACCEPT_PRIVATE_DATA..].copy_from_slice(&trailer(0));
        assert_eq!(parse_trailer(&rep), None);
        assert_eq!(mtu_enum(4096), 5);
        assert_eq!(mtu_enum(1500), 0);
    }
}
