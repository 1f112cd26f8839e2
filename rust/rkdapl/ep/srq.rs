// SPDX-License-Identifier: GPL-2.0

//! EPs created on an SRQ (`rkdapl_ep_create_with_srq`, DAT's `dat_ep_create_with_srq`): their
//! QP takes its RECVs from the SRQ, and RECVs posted to the EP itself are refused.

use super::{Ep, EpAttr};
use crate::rdma::{cq::Cq, pd::Pd, qp::QpCap, srq::SrqQpInit};
use crate::{
    cm::EpCmId,
    evd::Evd,
    pz::Pz,
    srq::{Srq, SrqEp},
};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

impl Ep {
    /// Creates an unconnected EP in `pz` whose QP will take its RECVs from `srq` (in the same
    /// PZ), as [`Ep::new`] does otherwise; `attr.max_recv_dtos` and `attr.max_recv_iov` are
    /// ignored (the receive CQ is sized for every RECV the SRQ holds). May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an SRQ of another PZ, `-ENODEV` after the SRQ's free or its device's
    /// removal, otherwise as [`Ep::new`].
    pub(crate) fn new_with_srq(
        pz: Arc<Pz>,
        dev: &crate::rdma::bound::Bound<'_>,
        dto_evd: Arc<Evd>,
        conn_evd: Arc<Evd>,
        srq: Arc<Srq>,
        attr: EpAttr,
    ) -> Result<Arc<Ep>> {
        if !Arc::ptr_eq(&srq.pz, &pz) {
            return Err(EINVAL);
        }
        srq.for_qp()?;
        let attr = EpAttr {
            max_recv_dtos: srq.max_recv_dtos(),
            max_recv_iov: 1,
            ..attr
        };
        let ep = Ep::new(pz, dev, dto_evd, conn_evd, attr)?;
        if !ep.srq.populate(srq.clone()) {
            ep.free();
            return Err(EINVAL);
        }
        if let Err(e) = srq.attach_ep(ep.clone()) {
            ep.free();
            return Err(e);
        }
        Ok(ep)
    }

    /// Creates the QP of the connection on `id` on the SRQ, and records its number with the
    /// SRQ, so that the RECVs it consumes complete on this EP's DTO EVD. May sleep.
    pub(super) fn create_qp_on_srq(
        &self,
        id: &EpCmId,
        pd: &Arc<Pd>,
        srq: &Srq,
        send_cq: Arc<Cq>,
        recv_cq: Arc<Cq>,
    ) -> Result<QpCap> {
        let a = self.ia.attrs();
        let init = SrqQpInit {
            send_cq,
            recv_cq,
            send_pool: self.sq.pool.clone(),
            srq: srq.for_qp()?,
            cap: QpCap {
                max_send_wr: self.attr.sq_depth(&a),
                max_send_sge: a.max_send_sge.min(a.max_sge_rd),
                ..QpCap::default()
            },
        };
        let cap = id.create_qp_on_srq(pd, init)?;
        if let Some(qp) = id.qp() {
            srq.set_qp(self, qp.qp_num());
        }
        Ok(cap)
    }
}

impl SrqEp for Ep {
    fn dto_evd(&self) -> &Arc<Evd> {
        &self.dto_evd
    }

    fn event_ep(&self) -> usize {
        self.handle.load(Ordering::Relaxed)
    }
}
