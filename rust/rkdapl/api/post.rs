// SPDX-License-Identifier: GPL-2.0

//! DTOs of every kind, alone or chained: the provider's own [`Dto`], [`Op`] and [`Segment`],
//! posted as they are.

use super::{Dto, Ep, Segment};
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
