// SPDX-License-Identifier: GPL-2.0

//! DTOs of every kind, alone or chained.

use super::{Ep, Lmr, RemoteRegion};
use crate::{
    dto::{self, DtoFlags, SendDto},
    lmr,
};
use kernel::{prelude::*, sync::Arc};

/// One local segment of a DTO: `len` bytes at `off` of `lmr` (`struct rkdapl_lmr_triplet`,
/// DAT's `DAT_LMR_TRIPLET`).
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    /// The LMR, in the EP's PZ.
    pub lmr: &'a Lmr,
    /// Byte offset into it.
    pub off: u64,
    /// Bytes; may be 0.
    pub len: u64,
}

/// What a send-queue DTO does (`enum rkdapl_dto_op`).
#[derive(Clone, Copy)]
pub enum Op {
    /// SEND into the peer's next RECV.
    Send,
    /// SEND that also ends the peer's grant with this rkey (IB SEND with invalidate): the
    /// peer's RECV reports it, and its RMR is unbound.
    SendInvalidate {
        /// The peer's rkey to invalidate.
        rkey: u32,
    },
    /// RDMA WRITE to the start of the remote region.
    RdmaWrite(RemoteRegion),
    /// RDMA WRITE to the start of the remote region that also consumes a RECV of the peer,
    /// which gets the immediate data (host order). Only where [`super::IaAttr::caps`] has
    /// [`super::Cap::RdmaWriteImm`]: refused with `EOPNOTSUPP` on iWARP (siw).
    RdmaWriteImm(RemoteRegion, u32),
    /// RDMA READ from the start of the remote region.
    RdmaRead(RemoteRegion),
    /// Atomic fetch and add (`rkdapl_post_fetch_add`): adds the value to the 8-byte word at the
    /// region's address (8-byte aligned, granted with [`super::MemPriv::RemoteAtomic`]); the word's old
    /// value lands in the DTO's one 8-byte segment (an LMR with [`super::MemPriv::LocalWrite`]). Only
    /// with [`super::Cap::Atomics`] (`EOPNOTSUPP` otherwise).
    FetchAdd(RemoteRegion, u64),
    /// Atomic compare and swap (`rkdapl_post_cmp_swap`): the word becomes `swap` (the second
    /// value) if it held `compare` (the first); its old value lands in the one 8-byte segment.
    CmpSwap(RemoteRegion, u64, u64),
}

/// One send-queue DTO for [`Ep::post`] (`struct rkdapl_dto`).
#[derive(Clone, Copy)]
pub struct Dto<'a> {
    /// The operation.
    pub op: Op,
    /// The local segments (at most the EP's `max_request_iov`).
    pub segs: &'a [Segment<'a>],
    /// Reported in the DTO's completion event.
    pub cookie: u64,
    /// Completion flags.
    pub flags: DtoFlags,
}

impl<'a> Dto<'a> {
    /// `op` over `segs`, reported with `cookie`, without flags. Any context.
    #[inline]
    pub fn new(op: Op, segs: &'a [Segment<'a>], cookie: u64) -> Dto<'a> {
        Dto {
            op,
            segs,
            cookie,
            flags: DtoFlags::default(),
        }
    }
}

impl Ep {
    /// Posts `dtos` in order (`rkdapl_post_chain`; one DTO: the single post calls, such as
    /// `rkdapl_post_send`): more than one go to the device as one chain (one doorbell), and
    /// every DTO up to the first refused one is posted, as `ib_post_send()` does. Each
    /// completes as if posted alone, with one event (none for a successful suppressed one).
    ///
    /// Any context (does not sleep; a chain allocates two arrays with `GFP_ATOMIC`).
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs were posted before it: `EINVAL` for no DTOs or more
    /// than [`super::MAX_CHAIN`], more than [`super::MAX_IOV`] segments, the solicited flag on
    /// an RDMA WRITE or READ; `ENOTCONN` unless CONNECTED; `EXDEV` for an LMR of another PZ;
    /// `ERANGE` for a segment outside its LMR; `EACCES` for a READ into an LMR without local
    /// write; `EMSGSIZE` if the segments need more SGEs than allowed; `ENOSPC` with too many
    /// outstanding; `ENOMEM`; `EOPNOTSUPP` for [`Op::RdmaWriteImm`] on an iWARP EP.
    #[inline(never)]
    pub fn post(&self, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
        let ep = &self.0;
        let segs = |d| segments(ep, d);
        if let [d] = dtos {
            return ep
                .post_one(|| segs(d), |s| Ok(send_dto(d, s)))
                .map_err(|e| (e, 0));
        }
        ep.post_dtos(
            dtos.len(),
            |i| segs(dtos.get(i).ok_or(EINVAL)?),
            |i, s| Ok(send_dto(dtos.get(i).ok_or(EINVAL)?, s)),
        )
    }

    /// Posts a RECV into `segs` (LMRs with [`super::MemPriv::LocalWrite`]), reported with `cookie`
    /// (`rkdapl_post_recv`); allowed from the EP's creation until its disconnect starts:
    /// posted before [`Ep::connect`] or an accept, it waits in the EP until the QP exists and
    /// is given to it before the connection is set up (what a peer that may SEND at once
    /// needs, on iWARP above all). It is consumed by the peer's next SEND, SEND with
    /// invalidate or RDMA WRITE with immediate; its event tells which.
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
        let s = self.0.segments(segs.len(), |i| triplet(segs, i))?;
        self.0.post_recv(s.as_slice(), cookie)
    }
}

/// The provider's segments of `d`.
fn segments<'a>(ep: &crate::ep::Ep, d: &Dto<'a>) -> Result<dto::OneOrMore<dto::Segment<'a>>> {
    ep.segments(d.segs.len(), |i| triplet(d.segs, i))
}

/// The provider's triplet of `segs[i]`.
fn triplet<'a>(segs: &[Segment<'a>], i: usize) -> Result<(&'a Arc<lmr::Lmr>, u64, u64)> {
    let s = segs.get(i).ok_or(EINVAL)?;
    Ok((s.lmr.0.lmr(), s.off, s.len))
}

/// The provider's form of `d` over its segments `segs`.
fn send_dto<'a>(d: &Dto<'_>, segs: &'a [dto::Segment<'a>]) -> SendDto<'a> {
    let mut atomic = (0, 0);
    let (op, remote, imm, invalidate_rkey) = match d.op {
        Op::Send => (dto::DtoOp::Send, None, 0, 0),
        Op::SendInvalidate { rkey } => (dto::DtoOp::SendInvalidate, None, 0, rkey),
        Op::RdmaWrite(r) => (dto::DtoOp::RdmaWrite, Some((r.address, r.rkey)), 0, 0),
        Op::RdmaWriteImm(r, imm) => (dto::DtoOp::RdmaWriteImm, Some((r.address, r.rkey)), imm, 0),
        Op::RdmaRead(r) => (dto::DtoOp::RdmaRead, Some((r.address, r.rkey)), 0, 0),
        Op::FetchAdd(r, add) => {
            atomic = (add, 0);
            (dto::DtoOp::FetchAdd, Some((r.address, r.rkey)), 0, 0)
        }
        Op::CmpSwap(r, compare, swap) => {
            atomic = (compare, swap);
            (dto::DtoOp::CmpSwap, Some((r.address, r.rkey)), 0, 0)
        }
    };
    SendDto {
        op,
        segs,
        remote,
        imm,
        invalidate_rkey,
        atomic,
        cookie: d.cookie,
        flags: d.flags,
    }
}
