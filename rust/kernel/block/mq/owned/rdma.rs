// SPDX-License-Identifier: GPL-2.0

//! A request's pages lent to an RDMA region without a copy: [`RequestPages`] is an
//! [`SgOwner`].

use crate::block::mq::owned::{Driver, RequestPages};
use crate::{bindings, rdma::mr::SgOwner};

// SAFETY: the scatterlist is the request's, in its PDU (it does not move while the request
// lives), filled by `sg_init_table` and `blk_rq_map_sg` before the `RequestPages` was made (so
// its DMA fields and flags are clear; only a list of at least one entry is lent, and it is
// never mapped again). It is lent once, and from then on the `OwnedRequest` does not touch it
// (`copy_out_with` refuses a lent request): only the region does, until the `RequestPages` is
// dropped. It names the request's data pages, which stay allocated until the request ends,
// which needs the `RequestPages`' hold.
unsafe impl<D: Driver> SgOwner for RequestPages<D> {
    fn sg(&self) -> (*mut bindings::scatterlist, usize) {
        RequestPages::sg(self)
    }
}
