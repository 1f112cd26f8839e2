// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_ia`: the limits an IA reports for its device ([`IaAttr::of_device`],
//! what `rkdapl_ia_query` returns). Runs when rkdapl.ko is loaded on a kernel with KUnit
//! enabled.

use kernel::prelude::kunit_tests;

#[kunit_tests(rkdapl_ia)]
mod tests {
    use super::super::IaAttr;
    use crate::evd::MAX_EVD_QLEN;
    use crate::rdma::device::{DeviceAttrs, Transport};

    /// Limits of a roomy device (Soft-RoCE's order of magnitude), each field distinct.
    fn dev() -> DeviceAttrs {
        DeviceAttrs {
            max_mr_size: 1 << 40,
            page_size_cap: 0xffff_f000,
            max_qp_wr: 16384,
            max_send_sge: 32,
            max_recv_sge: 31,
            max_sge_rd: 30,
            max_cqe: 32767,
            max_qp_rd_atom: 128,
            max_qp_init_rd_atom: 64,
            max_fast_reg_page_list_len: 512,
            atomics: true,
        }
    }

    /// The numeric fields, in declaration order.
    fn fields(a: &IaAttr) -> (u64, [u32; 7]) {
        (
            a.max_mr_size,
            [
                a.max_dtos,
                a.max_iov,
                a.max_rdma_read_in,
                a.max_rdma_read_out,
                a.max_rmr_pages,
                a.max_evd_qlen,
                a.max_private_data,
            ],
        )
    }

    #[test]
    fn limits_come_from_the_device() {
        let a = IaAttr::of_device(&dev(), b"rxe0", Transport::Roce);
        assert_eq!(MAX_EVD_QLEN, 65536);
        assert_eq!(fields(&a), (1 << 40, [4096, 30, 128, 64, 512, 65536, 56]));
        // Fewer receive SGEs than RDMA READ ones: those.
        let mut d = dev();
        d.max_recv_sge = 3;
        assert_eq!(IaAttr::of_device(&d, b"rxe0", Transport::Roce).max_iov, 3);
        // A device without RDMA READ resources or fast registration says so.
        let mut d = dev();
        d.max_qp_rd_atom = 0;
        d.max_qp_init_rd_atom = 0;
        d.max_fast_reg_page_list_len = 0;
        let a = IaAttr::of_device(&d, b"rxe0", Transport::Roce);
        assert_eq!(fields(&a).1[2..5], [0, 0, 0]);
    }

    #[test]
    fn queues_and_segments_are_capped() {
        let mut d = dev();
        // At most 4096 DTOs per queue (an EP's limit), fewer if the device's QPs are smaller.
        d.max_qp_wr = 4097;
        assert_eq!(IaAttr::of_device(&d, b"", Transport::Roce).max_dtos, 4096);
        d.max_qp_wr = 4096;
        assert_eq!(IaAttr::of_device(&d, b"", Transport::Roce).max_dtos, 4096);
        d.max_qp_wr = 100;
        assert_eq!(IaAttr::of_device(&d, b"", Transport::Roce).max_dtos, 100);
        // CQs smaller than the QPs: each queue's CQ bounds it.
        d.max_qp_wr = 16384;
        d.max_cqe = 50;
        assert_eq!(IaAttr::of_device(&d, b"", Transport::Roce).max_dtos, 50);
        d.max_cqe = 32767;
        // Segments: what both a send work request and an RDMA READ take, whichever is fewer.
        d.max_send_sge = 2;
        assert_eq!(IaAttr::of_device(&d, b"", Transport::Roce).max_iov, 2);
        d.max_send_sge = 32;
        d.max_sge_rd = 1;
        assert_eq!(IaAttr::of_device(&d, b"", Transport::Roce).max_iov, 1);
    }

    #[test]
    fn the_transport_and_the_device_decide_the_caps() {
        use crate::ia::{Cap, Caps};
        let all: Caps = Cap::RdmaWriteImm | Cap::RnrRetry | Cap::RetryCount | Cap::SendInvalidate;
        let a = IaAttr::of_device(&dev(), b"rxe0", Transport::Roce);
        assert_eq!(
            (a.transport, a.caps, a.max_read_iov),
            (Transport::Roce, all | Cap::Atomics, 30)
        );
        // siw: one RDMA READ SGE, no immediate data, no RNR or transport retries, no atomics.
        let mut d = dev();
        d.max_sge_rd = 1;
        d.atomics = false;
        let a = IaAttr::of_device(&d, b"siw0", Transport::Iwarp);
        assert_eq!(
            (a.transport, a.caps, a.max_read_iov, a.max_iov),
            (Transport::Iwarp, Caps::from(Cap::SendInvalidate), 1, 1)
        );
    }

    #[test]
    fn the_name_is_cut_and_terminated() {
        let a = IaAttr::of_device(&dev(), b"rxe0", Transport::Roce);
        assert_eq!(a.name(), b"rxe0");
        assert_eq!(a.name[..5], *b"rxe0\0");
        assert!(a.name[4..].iter().all(|b| *b == 0));
        assert_eq!(IaAttr::of_device(&dev(), b"", Transport::Roce).name(), b"");
        // 63 bytes and the NUL fit; a longer name is cut at 63.
        let long = [b'x'; 70];
        let a = IaAttr::of_device(&dev(), &long, Transport::Roce);
        assert_eq!(a.name().len(), 63);
        assert_eq!(a.name[63], 0);
        assert_eq!(
            IaAttr::of_device(&dev(), &long[..63], Transport::Roce).name(),
            &long[..63]
        );
    }
}
