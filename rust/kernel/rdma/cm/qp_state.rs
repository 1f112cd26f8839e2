// SPDX-License-Identifier: GPL-2.0

//! QPs their consumer moves through their states (rdma_cm's ULP-owned QPs).
//!
//! By default a [`CmId`](super::CmId) creates its QP with `rdma_create_qp`, and rdma_cm moves it:
//! to INIT at creation, to RTR and RTS inside `rdma_accept` on the passive side and on receipt of
//! the REP on the active side, to ERR on a disconnect or a REJ. A consumer that needs to change
//! what the QP gets on its way (on RoCE, for example, the path MTU, which rdma_cm takes from the
//! connecting side's netdev for both sides) cannot: `IB_QP_PATH_MTU` is only set on the INIT to RTR
//! transition, made before the consumer hears of the connection.
//!
//! rdma_cm also lets a ULP own the QP, as librdmacm does for every user-space QP (`rdma_cm_id.qp`
//! NULL, its number in `rdma_conn_param.qp_num`): it then makes no QP transition, gives the
//! attributes of each through `rdma_init_qp_attr()`, reports the REP on the active side as
//! `RDMA_CM_EVENT_CONNECT_RESPONSE`, and sends the RTU when the ULP calls `rdma_accept(id, NULL)`.
//! A consumer opts in per id, before the QP is created, with
//! [`CmId::own_qp_transitions`](super::CmId::own_qp_transitions) (ports that use the IB CM:
//! InfiniBand and RoCE). The layer then moves the QP the way rdma_cm moves its own, with rdma_cm's
//! attributes, and the consumer may lower the path MTU at RTR:
//!
//! - creation: `ib_create_qp`, then INIT (as `rdma_create_qp`);
//! - passive side ([`CmId::accept_with_path_mtu`](super::CmId::accept_with_path_mtu)): INIT again,
//!   RTR (path MTU at most the consumer's limit) and RTS with the accept's RDMA READ limits (as
//!   `cma_modify_qp_rtr`/`_rts`), then the REP; on failure ERR and a REJ, as `rdma_accept` does;
//! - active side: the handler gets [`CmEventKind::ConnectResponse`] with the REP's private
//!   data and answers it with [`CmIdRef::establish`]: INIT again, RTR (path MTU at most the
//!   consumer's limit), RTS and the RTU; on failure ERR and a REJ;
//! - ERR where rdma_cm moves its own QP there: a local disconnect ([`CmIdRef::disconnect`])
//!   and a REJ received (before the handler sees [`CmEventKind::Rejected`]).
//!
//! iWARP's CM moves the QP itself (`iw_cm`), whoever created it: there the opt-in is refused.

use super::super::device::mtu_enum;
use super::{id_ref::IB_CM_REJ_CONSUMER_DEFINED, CmEvent, CmEventKind, CmIdRef};
use crate::{bindings, error::to_result, prelude::*};
use core::{
    ptr,
    sync::atomic::{AtomicBool, AtomicPtr, Ordering},
};

/// `attr.path_mtu` lowered to at most `max_bytes` (an `enum ib_mtu` value of 256 to 4096
/// bytes; any other value leaves it).
fn lower_path_mtu(attr: &mut bindings::ib_qp_attr, max_bytes: u32) {
    let max = mtu_enum(max_bytes);
    if max != 0 && max < attr.path_mtu {
        attr.path_mtu = max;
    }
}

/// The QP its consumer moves, at the head of every CM id's context (see `Ctx`).
pub(super) struct OwnQp {
    /// The QP, from `CmId::create_qp_raw` until it is destroyed; NULL otherwise and for QPs
    /// rdma_cm moves.
    pub(super) qp: AtomicPtr<bindings::ib_qp>,
    /// Set by [`CmId::own_qp_transitions`](super::CmId::own_qp_transitions): the QP created next is
    /// the consumer's.
    pub(super) wanted: AtomicBool,
}

impl OwnQp {
    pub(super) const fn new() -> OwnQp {
        OwnQp {
            qp: AtomicPtr::new(ptr::null_mut()),
            wanted: AtomicBool::new(false),
        }
    }
}

impl CmIdRef {
    /// The QP its consumer moves for this id: NULL if the id has none, or has one that rdma_cm
    /// moves (`rdma_cm_id.qp`). Any context.
    pub(super) fn own_qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: The id is live. Its `context` is NULL (a child nobody adopted, or one given
        // back) or the `Ctx` of the `CmId` owning it, which is `repr(C)` with an `OwnQp` first
        // and lives as long as the id (`CmId`'s invariant).
        unsafe {
            let ctx = (*self.as_raw()).context;
            if ctx.is_null() {
                return ptr::null_mut();
            }
            (*ctx.cast::<OwnQp>()).qp.load(Ordering::Acquire)
        }
    }

    /// Moves `qp` to `state` with the attributes rdma_cm gives it now (`rdma_init_qp_attr`),
    /// changed by `adjust`. May sleep.
    pub(super) fn modify(
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

    /// INIT to INIT with the attributes rdma_cm gives now, which the connection may have
    /// changed since the QP's creation (as `cma_modify_qp_rtr` does first). May sleep.
    fn refresh_init(&self, qp: *mut bindings::ib_qp) -> Result {
        self.modify(qp, bindings::ib_qp_state_IB_QPS_INIT, |_| ())
    }

    /// Moves the consumer's QP of the id (if any) to the error state, where rdma_cm would move
    /// a QP of its own: every posted work request is flushed. May sleep.
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

    /// Names the consumer's QP (if any) in connection parameters, as rdma_cm wants of a QP it
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

    /// `rdma_accept` of a connect request with parameters `p`: for the consumer's QP, first
    /// RTR (path MTU at most `max_path_mtu` bytes) and RTS. rdma_cm's handler lock must be
    /// held. May sleep.
    ///
    /// # Errors
    ///
    /// The errors of the transitions (the QP is then in ERR and the request rejected) or of
    /// `rdma_accept` (which rejects it itself).
    pub(super) fn accept_locked(
        &self,
        p: &mut bindings::rdma_conn_param,
        max_path_mtu: u32,
    ) -> Result {
        let qp = self.own_qp();
        if qp.is_null() {
            // SAFETY: The id is live; the caller holds its handler lock; `p` is valid.
            return to_result(unsafe { bindings::rdma_accept(self.as_raw(), p) });
        }
        let (rr, id) = (p.responder_resources, p.initiator_depth);
        let r = self
            .refresh_init(qp)
            .and_then(|()| {
                self.modify(qp, bindings::ib_qp_state_IB_QPS_RTR, |a| {
                    lower_path_mtu(a, max_path_mtu);
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
        self.own_qp_param(p);
        // SAFETY: The id is live; the caller holds its handler lock; `p` and the private data
        // it points to are valid for the call (the IB CM copies them).
        let r = to_result(unsafe { bindings::rdma_accept(self.as_raw(), p) });
        if r.is_err() {
            // rdma_accept rejected the request, but moves only its own QPs to ERR.
            self.own_qp_to_error();
        }
        r
    }

    /// Active side of an id whose QP its consumer moves
    /// ([`CmId::own_qp_transitions`](super::CmId::own_qp_transitions)), on
    /// [`CmEventKind::ConnectResponse`] (the REP): moves the QP to RTR, with a path MTU of at most
    /// `max_path_mtu` bytes (256 to 4096; any other value keeps the route's), and RTS, with
    /// rdma_cm's attributes, then sends the RTU (`rdma_accept(id, NULL)`). The connection is then
    /// established: rdma_cm reports no [`CmEventKind::Established`] on this side. Only from this
    /// id's handler of that event (rdma_cm's handler lock must be held).
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the id has no QP its consumer moves, the errors of the transitions or of
    /// sending the RTU. The QP is then in the error state and the peer gets a REJ.
    pub fn establish(&self, max_path_mtu: u32) -> Result {
        let qp = self.own_qp();
        if qp.is_null() {
            return Err(EINVAL);
        }
        let r = self
            .refresh_init(qp)
            .and_then(|()| {
                self.modify(qp, bindings::ib_qp_state_IB_QPS_RTR, |a| {
                    lower_path_mtu(a, max_path_mtu)
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
        // SAFETY: The id is live and its handler lock held (the caller runs in its handler); a
        // NULL parameter on the active side sends the RTU (and on failure a REJ).
        let r = to_result(unsafe { bindings::rdma_accept(self.as_raw(), ptr::null_mut()) });
        if r.is_err() {
            self.own_qp_to_error();
        }
        r
    }
}

/// What the layer does with an event of `id` before its handler sees it, for the consumer's
/// QP: a REJ moves it to ERR, as rdma_cm moves its own. Inside the id's handler.
pub(super) fn before_event(id: &CmIdRef, ev: &CmEvent<'_>) {
    if ev.kind() == CmEventKind::Rejected {
        id.own_qp_to_error();
    }
}

#[cfg(CONFIG_KUNIT = "y")]
#[kunit_tests(rust_kernel_rdma_cm)]
mod tests {
    use super::*;

    #[test]
    fn path_mtu_is_only_lowered() {
        let mut a = bindings::ib_qp_attr {
            path_mtu: 4,
            ..Default::default()
        };
        lower_path_mtu(&mut a, 4096);
        assert_eq!(a.path_mtu, 4);
        lower_path_mtu(&mut a, 1500);
        assert_eq!(a.path_mtu, 4);
        lower_path_mtu(&mut a, 0);
        assert_eq!(a.path_mtu, 4);
        lower_path_mtu(&mut a, 1024);
        assert_eq!(a.path_mtu, 3);
    }
}
