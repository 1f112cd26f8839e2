// SPDX-License-Identifier: GPL-2.0

//! SENDs from pages the consumer lends (`rkdapl_post_send_sg`, the Rust API's
//! `Ep::post_send_lent`): the EP's side, which maps the pages for its device; the send queue's
//! side, which posts them with the PZ's local DMA lkey and holds the mapping until the SEND
//! finishes, is `crate::dto::post::lent`.

use super::Ep;
use crate::dto::{DtoFlags, Segment};
use crate::rdma::mr::{DataDirection, DmaRegion, Lender};
use kernel::prelude::*;

impl Ep {
    /// Posts a SEND of `head` (segments of LMRs of the EP's PZ, sent first, possibly none)
    /// followed by all the pages `owner` keeps, mapped for the device to read for this SEND
    /// only; `owner` is dropped once they are unmapped: when the SEND finishes, before its
    /// event, or before this returns an error. `flags.suppress` is refused: the event is what
    /// tells the caller its pages are back. Any context (allocates with `GFP_ATOMIC`).
    ///
    /// # Errors
    ///
    /// In this order: `-EINVAL` for `flags.suppress`, more than [`crate::iov::MAX_IOV`]
    /// segments, an empty scatterlist or an entry without a page or length; `-EXDEV` for an
    /// LMR of another PZ; `-ERANGE` for a segment outside its LMR; `-ENODEV` after device
    /// removal; `-ENOMEM`; `-EIO` if the mapping fails; `-ENOTCONN` unless CONNECTED;
    /// `-EMSGSIZE` for more SGEs than a work request of the EP holds; `-ENOSPC` with too many
    /// outstanding; or the driver's error.
    pub(crate) fn post_send_lent(
        &self,
        head: &[Segment<'_>],
        owner: Lender,
        cookie: u64,
        flags: DtoFlags,
    ) -> Result {
        if flags.suppress {
            return Err(EINVAL);
        }
        self.check_segments(head)?;
        let region = self.pz.ia.with_binding(|dev| {
            DmaRegion::from_sg_owner_gfp(dev, owner, DataDirection::ToDevice, GFP_ATOMIC)
        })?;
        self.sq
            .post_send_lent(head, region, self.pz.lkey, cookie, flags)
    }
}
