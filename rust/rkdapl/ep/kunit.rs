// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_ep`: how an EP's attributes are resolved against a device's limits
//! ([`EpAttr::resolve`], [`EpAttr::sq_depth`], [`EpAttr::read_limits`]), that an EP may ask for
//! the limits its IA reports ([`crate::ia::IaAttr::of_device`]), the RDMA READ limits an
//! active connect settled on either transport ([`super::attr::settled_read_limits`]), and
//! which connection event a CM error becomes ([`Ep::timeout_or`]). Runs when rkdapl.ko is
//! loaded on a kernel with KUnit enabled.

use kernel::prelude::kunit_tests;

#[kunit_tests(rkdapl_ep)]
mod tests {
    use super::super::{
        attr::{settled_read_limits, DEFAULT_DTOS, DEFAULT_IOV},
        Ep, EpAttr,
    };
    use crate::rdma::device::{DeviceAttrs, Transport};
    use crate::{dto::MAX_WR_PER_DTO, evd::EventType, ia::IaAttr};
    use kernel::prelude::*;

    /// Limits of a roomy device (Soft-RoCE's order of magnitude).
    fn dev() -> DeviceAttrs {
        DeviceAttrs {
            max_mr_size: u64::MAX,
            page_size_cap: 0xffff_f000,
            max_qp_wr: 16384,
            max_send_sge: 32,
            max_recv_sge: 32,
            max_sge_rd: 32,
            max_cqe: 32767,
            max_qp_rd_atom: 128,
            max_qp_init_rd_atom: 128,
            max_fast_reg_page_list_len: 512,
            atomics: true,
        }
    }

    fn attr(dtos: u32, iov: u32, rd: u32, retry: u32) -> EpAttr {
        EpAttr {
            max_request_dtos: dtos,
            max_recv_dtos: dtos,
            max_request_iov: iov,
            max_recv_iov: iov,
            max_rdma_read_in: rd,
            max_rdma_read_out: rd,
            retry_count: retry,
            rnr_retry_count: retry,
            max_pooled_rmrs: 0,
        }
    }

    /// The eight fields, in declaration order, to compare whole attribute sets.
    fn fields(a: &EpAttr) -> [u32; 8] {
        [
            a.max_request_dtos,
            a.max_recv_dtos,
            a.max_request_iov,
            a.max_recv_iov,
            a.max_rdma_read_in,
            a.max_rdma_read_out,
            a.retry_count,
            a.rnr_retry_count,
        ]
    }

    #[test]
    fn zero_fields_take_defaults() -> Result {
        assert_eq!((DEFAULT_DTOS, DEFAULT_IOV), (64, 4));
        let r = EpAttr::default().resolve(&dev())?;
        assert_eq!(fields(&r), [64, 64, 4, 4, 4, 4, 7, 7]);
        Ok(())
    }

    #[test]
    fn given_fields_are_kept() -> Result {
        let a = EpAttr {
            max_request_dtos: 100,
            max_recv_dtos: 200,
            max_request_iov: 8,
            max_recv_iov: 16,
            max_rdma_read_in: 2,
            max_rdma_read_out: 3,
            retry_count: 1,
            rnr_retry_count: 6,
            max_pooled_rmrs: 0,
        };
        assert_eq!(fields(&a.resolve(&dev())?), [100, 200, 8, 16, 2, 3, 1, 6]);
        Ok(())
    }

    #[test]
    fn rdma_read_limits_are_clamped_not_refused() -> Result {
        let mut d = dev();
        d.max_qp_rd_atom = 2;
        d.max_qp_init_rd_atom = 1;
        // Defaults (4) and a large request alike come down to the device's limits.
        let r = EpAttr::default().resolve(&d)?;
        assert_eq!((r.max_rdma_read_in, r.max_rdma_read_out), (2, 1));
        let r = attr(0, 0, u32::MAX, 0).resolve(&d)?;
        assert_eq!((r.max_rdma_read_in, r.max_rdma_read_out), (2, 1));
        // A device without RDMA READ responder resources: 0, the EP still created.
        d.max_qp_rd_atom = 0;
        d.max_qp_init_rd_atom = 0;
        let r = attr(0, 0, 1, 0).resolve(&d)?;
        assert_eq!((r.max_rdma_read_in, r.max_rdma_read_out), (0, 0));
        Ok(())
    }

    #[test]
    fn queue_and_segment_limits() {
        let d = dev();
        assert!(attr(4096, 4, 0, 0).resolve(&d).is_ok());
        assert_eq!(attr(4097, 4, 0, 0).resolve(&d).err(), Some(EINVAL));
        assert_eq!(attr(u32::MAX, 4, 0, 0).resolve(&d).err(), Some(EINVAL));
        let only_sends = EpAttr {
            max_request_dtos: 4097,
            ..EpAttr::default()
        };
        assert_eq!(only_sends.resolve(&d).err(), Some(EINVAL));
        // RECVs are bounded by the device's QP and CQ sizes as well.
        let mut small = dev();
        small.max_qp_wr = 100;
        small.max_cqe = 50;
        let recv = |n| EpAttr {
            max_recv_dtos: n,
            ..EpAttr::default()
        };
        assert!(recv(50).resolve(&small).is_ok());
        assert_eq!(recv(51).resolve(&small).err(), Some(EINVAL));
        // Send-queue segments: at most 256 whatever the device (a DTO may take several
        // work requests); RECV segments: at most the device's.
        let iov = |req, recv| EpAttr {
            max_request_iov: req,
            max_recv_iov: recv,
            ..EpAttr::default()
        };
        assert!(iov(256, 32).resolve(&d).is_ok());
        assert_eq!(iov(257, 32).resolve(&d).err(), Some(EINVAL));
        assert_eq!(iov(4, 33).resolve(&d).err(), Some(EINVAL));
    }

    #[test]
    fn retry_counts() {
        let d = dev();
        let r = |retry, rnr| EpAttr {
            retry_count: retry,
            rnr_retry_count: rnr,
            ..EpAttr::default()
        };
        assert!(r(7, 7).resolve(&d).is_ok());
        assert_eq!(r(8, 7).resolve(&d).err(), Some(EINVAL));
        assert_eq!(r(7, 8).resolve(&d).err(), Some(EINVAL));
        assert_eq!(r(u32::MAX, 1).resolve(&d).err(), Some(EINVAL));
    }

    #[test]
    fn send_queue_depth() -> Result {
        let mut d = dev();
        let a = EpAttr::default().resolve(&d)?;
        assert_eq!(MAX_WR_PER_DTO, 8);
        assert_eq!(a.sq_depth(&d), 64 * 8);
        // The largest EP: 4096 DTOs of up to 8 work requests, capped by the device.
        let big = attr(4096, 4, 0, 0).resolve(&d)?;
        assert_eq!(big.sq_depth(&d), 16384);
        d.max_qp_wr = 1 << 20;
        d.max_cqe = 1 << 20;
        assert_eq!(big.sq_depth(&d), 32768);
        d.max_cqe = 300;
        assert_eq!(a.sq_depth(&d), 300);
        d.max_qp_wr = 1;
        assert_eq!(a.sq_depth(&d), 1);
        Ok(())
    }

    #[test]
    fn the_ias_maxima_are_accepted() -> Result {
        // An EP asking for every limit `rkdapl_ia_query` reports (for both queues: the IA has
        // one DTO and one segment limit) is created as asked; one DTO more is refused. Also
        // where the device's CQs are smaller than its QPs or it takes fewer RECV segments
        // than send ones (the IA reports the smaller).
        let maxima = |ia: &IaAttr| EpAttr {
            max_request_dtos: ia.max_dtos,
            max_recv_dtos: ia.max_dtos,
            max_request_iov: ia.max_iov,
            max_recv_iov: ia.max_iov,
            max_rdma_read_in: ia.max_rdma_read_in,
            max_rdma_read_out: ia.max_rdma_read_out,
            retry_count: 7,
            rnr_retry_count: 7,
            max_pooled_rmrs: 0,
        };
        let mut d = dev();
        let ia = IaAttr::of_device(&d, b"rxe0", Transport::Roce);
        let a = maxima(&ia);
        assert_eq!(
            fields(&a.resolve(&d)?),
            [4096, 4096, 32, 32, 128, 128, 7, 7]
        );
        let more = |mut a: EpAttr| {
            a.max_recv_dtos += 1;
            a
        };
        assert_eq!(more(a).resolve(&d).err(), Some(EINVAL));
        // A small device: its limits, not rkdapl's.
        d.max_qp_wr = 100;
        d.max_cqe = 100;
        d.max_send_sge = 2;
        d.max_recv_sge = 2;
        d.max_qp_rd_atom = 1;
        d.max_qp_init_rd_atom = 0;
        let a = maxima(&IaAttr::of_device(&d, b"rxe0", Transport::Roce));
        assert_eq!(fields(&a.resolve(&d)?), [100, 100, 2, 2, 1, 0, 7, 7]);
        assert_eq!(more(a).resolve(&d).err(), Some(EINVAL));
        // A device whose CQs are smaller than its QPs, with fewer receive than send SGEs:
        // the IA's maxima still resolve (the IA reports what an EP can get).
        let mut d = dev();
        d.max_cqe = 60;
        d.max_recv_sge = 3;
        let a = maxima(&IaAttr::of_device(&d, b"rxe0", Transport::Roce));
        assert_eq!(fields(&a.resolve(&d)?)[..4], [60, 60, 3, 3]);
        assert_eq!(more(a).resolve(&d).err(), Some(EINVAL));
        Ok(())
    }

    #[test]
    fn read_limits_offered_and_accepted() {
        let a = attr(0, 0, 16, 0);
        assert_eq!(a.read_limits(None), (16, 16));
        // An accept offers no more than the peer asked for, each way on its own.
        assert_eq!(a.read_limits(Some((4, 200))), (4, 16));
        assert_eq!(a.read_limits(Some((0, 0))), (0, 0));
        // IB CM carries a byte: larger limits saturate at 255.
        let a = EpAttr {
            max_rdma_read_in: 256,
            max_rdma_read_out: u32::MAX,
            ..EpAttr::default()
        };
        assert_eq!(a.read_limits(None), (255, 255));
        assert_eq!(a.read_limits(Some((255, 7))), (255, 7));
    }

    #[test]
    fn settled_read_limits_are_the_same_on_both_transports() {
        // The client asked in 2 out 3, the server in 5 out 1: the client ends up in 1 out 3.
        // The IB CM reports (responder_resources 1, initiator_depth 3) from the client's
        // view; iw_cm reports the client's IRD 1 as initiator_depth and ORD 3 as
        // responder_resources.
        assert_eq!(settled_read_limits(Transport::Roce, (1, 3)), (1, 3));
        assert_eq!(settled_read_limits(Transport::Iwarp, (3, 1)), (1, 3));
        assert_eq!(settled_read_limits(Transport::Iwarp, (255, 0)), (0, 255));
    }

    #[test]
    fn cm_timeouts_become_timed_out_events() {
        let t = ETIMEDOUT.to_errno();
        assert_eq!(
            Ep::timeout_or(t, EventType::Unreachable),
            EventType::TimedOut
        );
        assert_eq!(
            Ep::timeout_or(-t, EventType::Unreachable),
            EventType::Unreachable
        );
        assert_eq!(
            Ep::timeout_or(ECONNREFUSED.to_errno(), EventType::NonPeerRejected),
            EventType::NonPeerRejected
        );
        assert_eq!(
            Ep::timeout_or(0, EventType::Unreachable),
            EventType::Unreachable
        );
    }
}
