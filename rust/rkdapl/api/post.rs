// SPDX-License-Identifier: GPL-2.0

//! DTOs of every kind, alone or chained: the provider's own [`Dto`], [`Op`] and [`Segment`],
//! posted as they are.

use super::{Dto, DtoFlags, Ep, Segment, SgOwner};
use crate::rdma::mr::Lender;
use kernel::prelude::*;

impl Ep {
    /// Posts `dtos` in order (`rkdapl_post_chain`; one DTO: the single post calls, such as
    /// `rkdapl_post_send`): more than one go to the device as one chain (one doorbell), and
    /// every DTO up to the first refused one is posted, as `ib_post_send()` does. Each
    /// completes as if posted alone, with one event (none for a successful suppressed one).
    ///
    /// Any context (does not sleep; a chain of more than two DTOs allocates two arrays with
    /// `GFP_ATOMIC`).
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs were posted before it: `EINVAL` for no DTOs or more
    /// than [`super::MAX_CHAIN`], more than [`super::MAX_IOV`] segments, the solicited flag on
    /// an RDMA WRITE or READ; `ENOTCONN` unless CONNECTED; `EXDEV` for an LMR of another PZ;
    /// `ERANGE` for a segment outside its LMR; `EACCES` for a READ into an LMR without local
    /// write; `EMSGSIZE` if the segments need more SGEs than allowed; `ENOSPC` with too many
    /// outstanding; `ENOMEM`; `EOPNOTSUPP` for [`super::Op::RdmaWriteImm`] and
    /// [`super::Op::SendImm`] on an iWARP EP.
    #[inline(never)]
    pub fn post(&self, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
        self.0.post_checked(dtos)
    }

    /// Posts a SEND of `head` (segments of LMRs of the EP's PZ, possibly none) followed by
    /// the pages `pages` keeps, with no LMR over them (`rkdapl_post_send_sg`): the zero-copy
    /// SEND of a block request's in-capsule data. The pages are mapped for the device to read
    /// for this SEND only and sent with the PZ's local DMA lkey (local access, nothing a peer
    /// can reach); `pages` is dropped once they are unmapped: when the SEND finishes, before
    /// its completion event, or before this returns an error. The SEND is signalled, reported
    /// with `cookie`.
    ///
    /// Any context (does not sleep; allocates with `GFP_ATOMIC`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for more than [`super::MAX_IOV`] segments, an empty scatterlist or an entry
    /// without a page or length; `EXDEV` for an LMR of another PZ; `ERANGE` for a segment
    /// outside its LMR; `ENOMEM`; `ENODEV` after device removal; `EIO` if the mapping fails;
    /// `ENOTCONN` unless CONNECTED; `EMSGSIZE` if the segments and pages need more SGEs than
    /// a work request of the EP holds, or more than 4 GiB in all; `ENOSPC` with too many
    /// outstanding.
    #[inline(never)]
    pub fn post_send_lent<O: SgOwner>(
        &self,
        head: &[Segment<'_>],
        pages: O,
        cookie: u64,
    ) -> Result {
        // Kept in place if no larger than two pointers (a block request's token): no
        // allocation for it.
        let owner = Lender::new(pages, GFP_ATOMIC)?;
        self.0
            .post_send_lent(head, owner, cookie, DtoFlags::default())
    }

    /// Posts a RECV into `segs` (LMRs with [`super::MemPriv::LocalWrite`]), reported with `cookie`
    /// (`rkdapl_post_recv`); allowed from the EP's creation until its disconnect starts:
    /// posted before [`Ep::connect`] or an accept, it waits in the EP until the QP exists and
    /// is given to it before the connection is set up (what a peer that may SEND at once
    /// needs, on iWARP above all). It is consumed by the peer's next SEND, SEND with
    /// immediate, SEND with invalidate or RDMA WRITE with immediate; its event tells which.
    ///
    /// Any context (does not sleep).
    ///
    /// # Errors
    ///
    /// `EINVAL` for more than [`super::MAX_IOV`] segments, `ENOTCONN` from the disconnect
    /// on, `EXDEV`, `ERANGE`, `EACCES` for an LMR without local write, `EMSGSIZE`,
    /// `ENOSPC` with too many outstanding, `ENOMEM`.
    #[inline(never)]
    pub fn post_recv(&self, segs: &[Segment<'_>], cookie: u64) -> Result {
        self.0.check_segments(segs)?;
        self.0.post_recv(segs, cookie)
    }
}
