// SPDX-License-Identifier: GPL-2.0

//! Send-queue DTOs of every kind, alone or chained, on the provider directly.

use super::{Ep, Lmr, RemoteRegion};
use crate::{
    abi::handle::Handles,
    dto::{self, DtoFlags as RawFlags, OneOrMore, SendDto},
};
use kernel::{prelude::*, sync::Arc};

/// One local segment of a DTO: `len` bytes at `off` of `lmr` (an LMR triplet).
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    /// The LMR, in the EP's PZ.
    pub lmr: &'a Lmr,
    /// Byte offset into it.
    pub off: u64,
    /// Bytes.
    pub len: u64,
}

/// What a send-queue DTO does.
#[derive(Clone, Copy)]
pub enum Op {
    /// SEND into the peer's next RECV.
    Send,
    /// SEND that also ends the peer's grant with this rkey (IB SEND with invalidate).
    SendInvalidate {
        /// The peer's rkey to invalidate.
        rkey: u32,
    },
    /// RDMA WRITE to the start of the remote region.
    RdmaWrite(RemoteRegion),
    /// RDMA WRITE to the remote region that also consumes a RECV of the peer, which gets the
    /// immediate data.
    RdmaWriteImm(RemoteRegion, u32),
    /// RDMA READ from the start of the remote region.
    RdmaRead(RemoteRegion),
}

/// Completion flags of a DTO (`enum rkdapl_completion_flags`, DAT's `DAT_COMPLETION_FLAGS`).
#[derive(Clone, Copy, Default)]
pub struct DtoFlags {
    /// No event if it succeeds (selective signalling).
    pub suppress: bool,
    /// The solicited-event bit (SEND and RDMA WRITE with immediate).
    pub solicited: bool,
    /// Start after earlier RDMA READs completed.
    pub fence: bool,
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

impl Ep {
    /// Posts `dtos` in order as one chain (`rkdapl_post_chain`; one DTO: the single post
    /// calls): every DTO up to the first refused one is posted, as `ib_post_send()` does. Any
    /// context (does not sleep).
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs were posted before it: `EINVAL` for no DTOs or more
    /// than `rkdapl_post_chain` takes (4096), `ENOTCONN` unless CONNECTED,
    /// `EXDEV` for an LMR of another PZ, `ERANGE` for a segment outside its LMR, `EACCES` for
    /// a READ into an LMR without local write, `EMSGSIZE`, `ENOSPC` with too many
    /// outstanding, `EINVAL` for a solicited RDMA WRITE or READ, `ENOMEM`.
    #[inline(never)]
    pub fn post(&self, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
        // Borrowed under RCU, as the C posts do (no reference dropped here is the last one).
        Handles::with(self.0.raw(), |ep: &Arc<crate::ep::Ep>| post_on(ep, dtos))
            .map_err(|e| (e, 0))?
    }
}

/// [`Ep::post`] on the provider's EP.
fn post_on(ep: &Arc<crate::ep::Ep>, dtos: &[Dto<'_>]) -> core::result::Result<(), (Error, usize)> {
    // As `rkdapl_post_chain`: an empty chain or a longer one than it takes is refused.
    if dtos.is_empty() || dtos.len() > crate::abi::dto::MAX_CHAIN as usize {
        return Err((EINVAL, 0));
    }
    {
        let mut segv: KVec<OneOrMore<dto::Segment>> =
            KVec::with_capacity(dtos.len(), GFP_ATOMIC).map_err(|e| (e.into(), 0))?;
        let mut bad = None;
        for d in dtos {
            match segments(d.segs, &ep.pz) {
                Ok(s) => {
                    // Cannot fail: the capacity is `dtos.len()`.
                    let _ = segv.push_within_capacity(s);
                }
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            }
        }
        let mut sds: KVec<SendDto<'_>> =
            KVec::with_capacity(segv.len(), GFP_ATOMIC).map_err(|e| (e.into(), 0))?;
        for (d, s) in dtos.iter().zip(segv.iter()) {
            let _ = sds.push_within_capacity(send_dto(d, s.as_slice()));
        }
        ep.post_chain(&sds)?;
        match bad {
            None => Ok(()),
            Some(e) => Err((e, sds.len())),
        }
    }
}

/// The provider's segments of `segs`, for an EP in `pz`.
fn segments(segs: &[Segment<'_>], pz: &Arc<crate::pz::Pz>) -> Result<OneOrMore<dto::Segment>> {
    let mut v = OneOrMore::Empty;
    for s in segs {
        let lmr: Arc<crate::lmr::Lmr> = Handles::get(s.lmr.h.raw())?;
        v.push(dto::Segment::new(lmr, s.off, s.len, pz)?, GFP_ATOMIC)?;
    }
    Ok(v)
}

/// The provider's form of `d` over its segments `segs`.
fn send_dto<'a>(d: &Dto<'_>, segs: &'a [dto::Segment]) -> SendDto<'a> {
    let (op, remote, imm, invalidate_rkey) = match d.op {
        Op::Send => (dto::DtoOp::Send, None, 0, 0),
        Op::SendInvalidate { rkey } => (dto::DtoOp::SendInvalidate, None, 0, rkey),
        Op::RdmaWrite(r) => (dto::DtoOp::RdmaWrite, Some((r.address, r.rkey)), 0, 0),
        Op::RdmaWriteImm(r, imm) => (dto::DtoOp::RdmaWriteImm, Some((r.address, r.rkey)), imm, 0),
        Op::RdmaRead(r) => (dto::DtoOp::RdmaRead, Some((r.address, r.rkey)), 0, 0),
    };
    SendDto {
        op,
        segs,
        remote,
        imm,
        invalidate_rkey,
        cookie: d.cookie,
        flags: RawFlags {
            suppress: d.flags.suppress,
            solicited: d.flags.solicited,
            fence: d.flags.fence,
        },
    }
}
