// SPDX-License-Identifier: GPL-2.0

//! An EP's attributes: what the consumer asks for, resolved against the device's limits.

use crate::dto::MAX_WR_PER_DTO;
use crate::rdma::device::{DeviceAttrs, Transport};
use kernel::prelude::*;

/// Endpoint attributes (DAT's `DAT_EP_ATTR`); zero fields take defaults. C passes them in
/// the first part of `struct rkdapl_ep_attr` (`abi/ep.rs`), whose documentation in
/// `include/rkdapl.h` says what each means and its limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EpAttr {
    /// Outstanding send-queue DTOs: SEND, RDMA WRITE and READ, RMR bind (default 64, at most
    /// 4096).
    pub max_request_dtos: u32,
    /// Outstanding RECVs (default 64, at most 4096 and the device's limit).
    pub max_recv_dtos: u32,
    /// Local segments per send-queue DTO (default 4, at most 256).
    pub max_request_iov: u32,
    /// Local segments per RECV (default 4).
    pub max_recv_iov: u32,
    /// RDMA READs the peer may have in flight against this EP, responder resources (default
    /// 4, clamped to the device and, once connected, to the peer).
    pub max_rdma_read_in: u32,
    /// RDMA READs this EP may have in flight, initiator depth (default 4, clamped).
    pub max_rdma_read_out: u32,
    /// Transport retries, 1..7 (default 7; rdma_rxe retries forever with 7).
    pub retry_count: u32,
    /// How often the peer retries a SEND that finds no RECV posted here, 1..7, 7 = forever
    /// (default 7).
    pub rnr_retry_count: u32,
    /// RMRs of the EP's pool (default 0: none, at most 4096): FRWR MRs allocated with the EP's
    /// QP, each bound per I/O by [`crate::api::Ep::bind_pooled_rmr`] in any context.
    pub max_pooled_rmrs: u32,
}

pub(super) const DEFAULT_DTOS: u32 = 64;
pub(super) const DEFAULT_IOV: u32 = 4;

impl EpAttr {
    /// The attributes an EP is created with: zero fields take their defaults (64 DTOs per
    /// queue, 4 segments per DTO, 4 RDMA READs each way, 7 retries of each kind), the RDMA
    /// READ limits are clamped to what the device `a` allows. Pure: KUnit-tested.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for more than 4096 DTOs per queue, more RECVs than the device's QP or CQ
    /// holds, more than 256 segments per send-queue DTO, more RECV segments than the device
    /// takes, a retry count over 7, or more than 4096 pooled RMRs.
    pub(super) fn resolve(mut self, a: &DeviceAttrs) -> Result<EpAttr> {
        let def = |v: u32, d: u32| if v == 0 { d } else { v };
        self.max_request_dtos = def(self.max_request_dtos, DEFAULT_DTOS);
        self.max_recv_dtos = def(self.max_recv_dtos, DEFAULT_DTOS);
        self.max_request_iov = def(self.max_request_iov, DEFAULT_IOV);
        self.max_recv_iov = def(self.max_recv_iov, DEFAULT_IOV);
        self.max_rdma_read_in = def(self.max_rdma_read_in, 4).min(a.max_qp_rd_atom);
        self.max_rdma_read_out = def(self.max_rdma_read_out, 4).min(a.max_qp_init_rd_atom);
        if self.retry_count == 0 {
            self.retry_count = 7;
        }
        if self.rnr_retry_count == 0 {
            self.rnr_retry_count = 7;
        }
        if self.max_request_dtos > 4096
            || self.max_recv_dtos > 4096
            || self.max_recv_dtos > a.max_qp_wr.min(a.max_cqe)
            || self.max_request_iov > 256
            || self.max_recv_iov > a.max_recv_sge
            || self.retry_count > 7
            || self.rnr_retry_count > 7
            || self.max_pooled_rmrs > crate::rdma::mr::MR_POOL_MAX
        {
            return Err(EINVAL);
        }
        Ok(self)
    }

    /// Send-queue depth in work requests on a device with limits `a` (resolved attributes).
    pub(crate) fn sq_depth(&self, a: &DeviceAttrs) -> u32 {
        (self.max_request_dtos * MAX_WR_PER_DTO)
            .min(a.max_qp_wr)
            .min(a.max_cqe)
    }

    /// The RDMA READ limits to offer (responder resources, initiator depth): the EP's, at
    /// most 255 (IB CM's byte), and for an accept at most what the peer asked for (`peer_rd`).
    pub(super) fn read_limits(&self, peer_rd: Option<(u8, u8)>) -> (u8, u8) {
        let (mut rr, mut id) = (
            self.max_rdma_read_in.min(255) as u8,
            self.max_rdma_read_out.min(255) as u8,
        );
        if let Some((peer_rr, peer_id)) = peer_rd {
            rr = rr.min(peer_rr);
            id = id.min(peer_id);
        }
        (rr, id)
    }
}

/// The RDMA READ limits an active connect settled, `(in, out)`, from `conn`, rdma_cm's
/// `(responder_resources, initiator_depth)` of its ESTABLISHED event, on a device of
/// `transport`. The IB CM hands over the passive side's answer (REP) from this side's view,
/// the READs this side serves first (cm.c swaps the REP's). iw_cm's CONNECT_REPLY carries this
/// side's own IRD and ORD as the driver settled them (`siw_cm_upcall`), which
/// `cma_iw_handler` passes on as if they were the peer's (`initiator_depth` = IRD,
/// `responder_resources` = ORD): swapped back, so that both transports report the same.
pub(super) fn settled_read_limits(transport: Transport, conn: (u8, u8)) -> (u32, u32) {
    let (rd_in, rd_out) = match transport {
        Transport::Iwarp => (conn.1, conn.0),
        _ => conn,
    };
    (u32::from(rd_in), u32::from(rd_out))
}
