// SPDX-License-Identifier: GPL-2.0

//! rkdapl's path-MTU agreement on RoCE: peers whose netdevs' MTUs differ settle the smaller
//! path MTU, announced in the REP.
//!
//! RoCE has no subnet manager to settle a path MTU: rdma_cm puts the connecting side's route
//! MTU (`iboe_get_mtu()` of its own netdev's MTU) into the REQ, and both QPs get it on their
//! way to RTR (the passive side's from the REQ). When the connecting side's netdev MTU is the
//! larger, the passive side's QP sends packets its own netdev cannot carry and every message
//! over one MTU is lost. Only the passive side knows both MTUs, and the active side can learn
//! the passive side's only from the REP, so no change inside rdma_cm alone can settle it: the
//! REP must say it, which is a protocol between the two consumers.
//!
//! The protocol (version 1), on RoCE ports while the module parameter `mtu_agreement` is on
//! (the default):
//!
//! - both sides create their QP as one they move themselves
//!   (`kernel::rdma`'s `CmId::own_qp_transitions`);
//! - passive side: its QP gets the smaller of the REQ's path MTU and its own port's (the one
//!   rdma_cm would offer from it), and the REP's private data is the consumer's (56 bytes at
//!   most, `RKDAPL_MAX_PRIVATE_DATA`), zero-padded to 188 bytes, then an 8-byte trailer: the
//!   bytes `"rkMT"`, the version 1, the path MTU as `enum ib_mtu` (3 = 1024, 4 = 2048, ...), two
//!   zero bytes; 196 bytes in all, the whole of an IB CM REP's private data;
//! - active side: its QP gets the smaller of its route's MTU and the trailer's, then the RTU
//!   goes out. A REP without a valid trailer (a peer that is not rkdapl, or has the agreement
//!   off) leaves the route's MTU, as rdma_cm would.
//!
//! With `mtu_agreement=0` rkdapl creates every QP with `rdma_create_qp`, rdma_cm moves it, and
//! the REP carries the consumer's private data alone. Consumers see no difference in the
//! private data either way: the trailer lies past the 56 bytes an rkdapl event delivers.

use crate::rdma::{
    cm::{CmIdRef, MAX_ACCEPT_PRIVATE_DATA},
    device::{mtu_enum, Transport},
};
#[cfg(CONFIG_KUNIT = "y")]
use kernel::prelude::kunit_tests;

/// Bytes of the trailer at the end of a REP's private data.
const TRAILER_LEN: usize = 8;
/// Where the trailer starts in the REP's private data.
const TRAILER_AT: usize = MAX_ACCEPT_PRIVATE_DATA - TRAILER_LEN;
const TRAILER_TAG: [u8; 4] = *b"rkMT";
const TRAILER_VERSION: u8 = 1;
const _: () = assert!(crate::evd::MAX_PRIVATE_DATA <= TRAILER_AT);

/// The private data of a REP with the trailer: the consumer's and the trailer.
pub(crate) type RepPrivateData = [u8; MAX_ACCEPT_PRIVATE_DATA];

/// Whether the agreement is on (module parameter `mtu_agreement`). Any context.
pub(crate) fn enabled() -> bool {
    crate::module_parameters::mtu_agreement.value()
}

/// Whether the connection of `id` (bound to its device) uses the agreement: on RoCE ports
/// while it is on. Any context.
pub(crate) fn applies(id: &CmIdRef) -> bool {
    enabled()
        && id
            .device()
            .is_some_and(|d| matches!(d.transport(id.port_num()), Ok(Transport::Roce)))
}

/// Passive side: the path MTU in bytes this side's QP takes for the connect request on `id`,
/// the smaller of the REQ's and this port's own; the REQ's if this port's is unknown. Any
/// context.
pub(crate) fn settle(id: &CmIdRef) -> u32 {
    let req = id.path_mtu();
    let own = id
        .device()
        .and_then(|d| d.port_roce_mtu(id.port_num()).ok())
        .unwrap_or(0);
    if own != 0 && own < req {
        own
    } else {
        req
    }
}

/// The REP's private data announcing path MTU `mtu` (bytes) after the consumer's `pdata`
/// (at most 56 bytes, checked by the caller; longer is cut).
pub(crate) fn rep_private_data(pdata: &[u8], mtu: u32) -> RepPrivateData {
    let mut rep = [0u8; MAX_ACCEPT_PRIVATE_DATA];
    let n = pdata.len().min(crate::evd::MAX_PRIVATE_DATA);
    rep[..n].copy_from_slice(&pdata[..n]);
    rep[TRAILER_AT..TRAILER_AT + 4].copy_from_slice(&TRAILER_TAG);
    rep[TRAILER_AT + 4] = TRAILER_VERSION;
    // `enum ib_mtu`: 0 to 5.
    rep[TRAILER_AT + 5] = mtu_enum(mtu) as u8;
    rep
}

/// Active side: the path MTU in bytes (256 to 4096) a REP's private data `pdata` announces, if
/// it ends with a valid trailer.
pub(crate) fn announced(pdata: &[u8]) -> Option<u32> {
    let t = pdata.get(TRAILER_AT..MAX_ACCEPT_PRIVATE_DATA)?;
    if t[..4] != TRAILER_TAG || t[4] != TRAILER_VERSION || t[6] != 0 || t[7] != 0 {
        return None;
    }
    matches!(t[5], 1..=5).then(|| 128 << t[5])
}

#[cfg(CONFIG_KUNIT = "y")]
#[kunit_tests(rkdapl_mtu_agreement)]
mod tests {
    use super::*;

    #[test]
    fn trailer_round_trip() {
        let rep = rep_private_data(b"consumer", 1024);
        assert_eq!(&rep[..8], b"consumer");
        assert!(rep[8..TRAILER_AT].iter().all(|b| *b == 0));
        assert_eq!(&rep[TRAILER_AT..], b"rkMT\x01\x03\x00\x00");
        assert_eq!(announced(&rep), Some(1024));
        assert_eq!(announced(&rep_private_data(&[], 4096)), Some(4096));
        // No trailer: a REP of zeros, a shorter one, another tag or version, an MTU that is
        // not one.
        assert_eq!(announced(&[0u8; MAX_ACCEPT_PRIVATE_DATA]), None);
        assert_eq!(announced(&rep[..MAX_ACCEPT_PRIVATE_DATA - 1]), None);
        let mut bad = rep;
        bad[TRAILER_AT] = b'x';
        assert_eq!(announced(&bad), None);
        let mut bad = rep;
        bad[TRAILER_AT + 4] = 2;
        assert_eq!(announced(&bad), None);
        assert_eq!(announced(&rep_private_data(&[], 1500)), None);
    }
}
