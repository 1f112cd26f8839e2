// SPDX-License-Identifier: GPL-2.0

//! The QP of a [`CmId`] (`rdma_create_qp`, or one its consumer moves: `qp_state.rs`): its
//! creation, with the CQs, context pools and event handler the id keeps until the QP is
//! destroyed.
//!
//! Every QP a [`CmId`] gets goes through [`CmId::create_qp_with`], whatever receives its RECVs
//! (its own receive queue, [`CmId::create_qp`], or a shared receive queue,
//! `CmId::create_qp_on_srq` in `srq.rs`): it installs the QP's asynchronous event
//! handler ([`CmHandler::qp_event`]), records the parts the QP uses, creates the QP and
//! attaches the two context pools to it.

use super::super::{
    bound::BoundDevice,
    cq::Cq,
    device::Transport,
    mr::MrPool,
    pd::Pd,
    qp::QpCap,
    wr::{WrCompletion, WrPool},
};
use super::{qp_events::QpEvents, CmHandler, CmId, CmIdRes, QpParts};
use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::Arc,
};
use core::{
    ptr::{self, NonNull},
    sync::atomic::Ordering,
};

/// What a QP is created with (`struct ib_qp_init_attr` for an RC QP): its CQs and the
/// [`WrPool`]s of its two queues, which the CM id owning the QP keeps until the QP is drained
/// and destroyed (so the CQs outlive the QP and no completion reaches a freed context).
pub struct QpInit<S: WrCompletion, R: WrCompletion> {
    /// The CQ that receives SEND-queue completions.
    pub send_cq: Arc<Cq>,
    /// The CQ that receives RECV-queue completions.
    pub recv_cq: Arc<Cq>,
    /// The contexts of SEND-queue work requests; attached to no other QP.
    pub send_pool: Arc<WrPool<S>>,
    /// The contexts of RECV work requests; attached to no other QP.
    pub recv_pool: Arc<WrPool<R>>,
    /// Queue sizes.
    pub cap: QpCap,
}

impl<S: WrCompletion, R: WrCompletion> QpInit<S, R> {
    pub(crate) fn to_c(&self) -> bindings::ib_qp_init_attr {
        let mut a = bindings::ib_qp_init_attr {
            send_cq: self.send_cq.as_raw(),
            recv_cq: self.recv_cq.as_raw(),
            ..Default::default()
        };
        a.cap.max_send_wr = self.cap.max_send_wr;
        a.cap.max_recv_wr = self.cap.max_recv_wr;
        a.cap.max_send_sge = self.cap.max_send_sge;
        a.cap.max_recv_sge = self.cap.max_recv_sge;
        a.cap.max_inline_data = self.cap.max_inline_data;
        a.cap.max_rdma_ctxs = self.cap.max_rdma_ctxs;
        a.sq_sig_type = bindings::ib_sig_type_IB_SIGNAL_REQ_WR;
        a.qp_type = bindings::ib_qp_type_IB_QPT_RC;
        a
    }
}

impl<T: CmHandler> CmId<T> {
    /// Creates the id's RC QP in `pd` with `init`'s CQs and context pools, and returns the
    /// capacities the device granted, which may exceed those asked for (`rdma_create_qp` writes
    /// them back: e.g. rxe grants as many bytes of inline data as its work-queue entries hold
    /// SGEs). The id keeps the CQs, pools and a reference on `pd`; its `Drop` drains the QP,
    /// destroys the id and then the QP, and only then lets them go. An id gets one QP: after a
    /// failure, use a new id. May sleep.
    ///
    /// # Errors
    ///
    /// `-EBUSY` if the id already has (or had) a QP or a pool is attached to another QP,
    /// `-EINVAL` for capacities the device refuses,
    /// `-ENOMEM`, or the driver's error.
    pub fn create_qp<S: WrCompletion, R: WrCompletion>(
        &self,
        pd: &Arc<Pd>,
        init: QpInit<S, R>,
    ) -> Result<QpCap> {
        let attr = init.to_c();
        let parts = QpParts {
            pools: [init.send_pool, init.recv_pool],
            cqs: [init.send_cq, init.recv_cq],
            _pd: pd.clone(),
        };
        self.create_qp_with(pd, attr, parts)
    }

    /// Creates the id's RC QP in `pd` from `attr` (its CQs and, for a QP on an SRQ, the SRQ,
    /// matching `parts`), installs the QP's event handler, records `parts` in the id and
    /// attaches `parts.pools` (SEND queue, then RECV queue or SRQ) to the QP. Returns the
    /// capacities the device granted. May sleep.
    ///
    /// # Errors
    ///
    /// `-EBUSY` if the id already has (or had) a QP or a pool is attached to another QP,
    /// `-ENODEV` once the PD's device was removed,
    /// `-ENOMEM`, or the driver's error.
    pub(in super::super) fn create_qp_with(
        &self,
        pd: &Arc<Pd>,
        mut attr: bindings::ib_qp_init_attr,
        parts: QpParts,
    ) -> Result<QpCap> {
        let id = self.id()?;
        let dev = BoundDevice::access(pd.binding())?;
        if self.qp_events.as_ref().is_none() {
            let ev = QpEvents::new(self.ctx.handler.clone())?;
            // Losing the race to another `create_qp_with` is the `EBUSY` below.
            self.qp_events.populate(ev);
        }
        if let Some(ev) = self.qp_events.as_ref() {
            // The driver calls it with `qp_context` from the QP's creation until it is
            // destroyed; the `Arc` stays in `self` until after that (`Drop`).
            attr.event_handler = Some(QpEvents::<T>::callback);
            attr.qp_context = QpEvents::context(ev);
        }
        if id.qp().is_some() || !self.qp_parts.populate(parts) {
            return Err(EBUSY);
        }
        // The CQs (and the SRQ, if any) `attr` names are kept in `self.qp_parts` until the QP
        // is destroyed.
        self.create_qp_raw(pd, &mut attr)?;
        let Some(parts) = self.qp_parts.as_ref() else {
            return Err(EBUSY);
        };
        let qp = id.qp().map_or(core::ptr::null_mut(), |q| q.as_raw());
        let r = parts.pools[0].attach(qp).and_then(|()| {
            parts.pools[1]
                .attach(qp)
                .inspect_err(|_| parts.pools[0].detach())
        });
        if let Err(e) = r {
            // Nothing was posted: the QP goes at once.
            self.destroy_new_qp();
            return Err(e);
        }
        // From here the device's removal destroys the id and its QP if `self` outlives it.
        let res = CmIdRes {
            id: self.id,
            qp: NonNull::new(qp).ok_or(EINVAL)?,
            users: NonNull::from(&self.ctx.users),
            mr_pool: NonNull::from(&self.ctx.mr_pool),
            pools: [parts.pools[0].clone(), parts.pools[1].clone()],
            adoption: self.adoption.clone(),
        };
        match BoundDevice::try_track(dev.binding(), res) {
            Ok(slot) => {
                self.slot.populate(slot);
            }
            Err((e, _)) => {
                for p in &parts.pools {
                    p.detach();
                }
                self.destroy_new_qp();
                return Err(e);
            }
        }
        Ok(QpCap::from_c(&attr.cap))
    }
}

impl<T: CmHandler> CmId<T> {
    /// Creates a pool of `nr` FRWR MRs of `max_pages` pages each (at most the device's
    /// `max_fast_reg_page_list_len`) on the id's QP, in the QP's PD ([`MrPool`]): MRs taken
    /// out of it with [`MrPool::get`] and given back per I/O, in any context. The id keeps the
    /// pool and destroys it (deregisters every MR, those taken out too) after the QP was
    /// drained and before it is destroyed, when the id is dropped or its device removed; an
    /// MR still held then maps no more (`-ENODEV`). One pool per QP. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an id without a QP, `nr` of 0 or over
    /// [`MR_POOL_MAX`](super::super::mr::MR_POOL_MAX) or a page count the device refuses,
    /// `-EBUSY` if the QP has a pool already, `-ENODEV` once the device was removed,
    /// `-ENOMEM`, or the driver's error.
    pub fn create_mr_pool(&self, nr: u32, max_pages: u32) -> Result<Arc<MrPool>> {
        // Held until the pool is recorded: the revocation waits for it, then finds the pool.
        let id = self.id()?;
        let qp = id.qp().ok_or(EINVAL)?;
        let pd = &self.qp_parts.as_ref().ok_or(EINVAL)?._pd;
        if self.ctx.mr_pool.as_ref().is_some() {
            return Err(EBUSY);
        }
        // SAFETY: `qp` is the id's live QP, of `pd`; it is destroyed only after the pool is
        // (`Drop` and the revocation destroy the pool recorded below first; a pool not
        // recorded is destroyed here).
        let pool = unsafe { MrPool::create_on(qp.as_raw(), pd, nr, max_pages) }?;
        if !self.ctx.mr_pool.populate(pool.clone()) {
            pool.destroy();
            return Err(EBUSY);
        }
        Ok(pool)
    }

    /// Makes the QP that [`CmId::create_qp`] (or `CmId::create_qp_on_srq`) creates next one
    /// its consumer moves through its states, with the layer's help (`cm/qp_state.rs`): the
    /// handler must then answer [`CmEventKind::ConnectResponse`] with [`CmIdRef::establish`],
    /// and [`CmId::accept_with_path_mtu`] may lower the passive side's path MTU. Call it on an
    /// id bound to its device (route resolved, or a connect request's), before the QP exists.
    /// Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an id not bound to a device, `-EOPNOTSUPP` on an iWARP port (whose CM
    /// moves the QP itself), `-EBUSY` if the id has (or had) a QP, `-ENODEV` once the device
    /// was removed.
    pub fn own_qp_transitions(&self) -> Result {
        let id = self.id()?;
        let t = id.device().ok_or(EINVAL)?.transport(id.port_num())?;
        if t == Transport::Iwarp {
            return Err(EOPNOTSUPP);
        }
        if id.qp().is_some() || self.qp_parts.as_ref().is_some() {
            return Err(EBUSY);
        }
        self.ctx.own_qp.wanted.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Creates the QP of `attr` in `pd` for this id: one its consumer moves (in INIT from
    /// here) after [`CmId::own_qp_transitions`], otherwise with `rdma_create_qp`. Restrack
    /// names the consumer's QPs after the id's owner. May sleep.
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
        if !self.ctx.own_qp.wanted.load(Ordering::Relaxed) {
            // SAFETY: The id is live and bound; `attr` is valid for the call.
            return to_result(unsafe { bindings::rdma_create_qp(id.as_raw(), pd.as_raw(), attr) });
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
        self.ctx.own_qp.qp.store(qp, Ordering::Release);
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
        self.ctx.own_qp.qp.store(ptr::null_mut(), Ordering::Release);
        // SAFETY: `qp` is the id's QP, which no work request used; the id forgot it above.
        unsafe { bindings::ib_destroy_qp(qp) };
    }
}
