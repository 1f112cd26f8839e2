// SPDX-License-Identifier: GPL-2.0

//! DTOs: data transfer operations (DAT 2.0 section 6.5) and their completion contexts.
//!
//! Each EP has two rings of DTO contexts ([`DtoRing`]), one for its send queue (SEND, RDMA
//! WRITE/READ, RMR bind) and one for RECVs. The post calls of a ring serialise on its lock;
//! its completion side takes no lock of theirs, as the send contexts of the kernel's NFS/RDMA
//! client (`ring`'s `# Locking`). An RC QP completes each of its queues in posting order, so
//! a ring hands out its contexts in posting order too and takes them back in that order: a
//! completion for the DTO at sequence number `s` finishes every DTO before `s` that is still
//! outstanding. That one rule replaces a free list, credits, per-context locks and a list of
//! unsignalled DTOs.
//!
//! A DTO is posted as one or more work requests. Only the last is signalled and points at the
//! context's `ib_cqe` (as `rdma_rw` posts its contexts, `drivers/infiniband/core/rw.c`): its
//! completion, flushed or not, comes after every earlier one of the DTO. The earlier ones point
//! at a second entry of the context and complete only if they fail; that completion records
//! the error, which the last work request (then flushed) reports. So a DTO yields one event
//! with its cookie and first error, however many work requests it took.
//!
//! Selective signalling (`RKDAPL_COMPLETION_SUPPRESS`, DAT's `DAT_COMPLETION_SUPPRESS_FLAG`): a
//! send-queue DTO of one work request may be posted unsignalled. It then completes on its own
//! only if it fails; otherwise the next completion of a later DTO finishes it (in order), or
//! the teardown once the QP is drained. So that unsignalled DTOs cannot hold every context,
//! one is signalled anyway (still without a success event) after half the ring's contexts in a
//! row were posted unsignalled, or when only a quarter of the ring's contexts or of the send
//! queue's slots is left.
//!
//! Files: [`ring`] (contexts, completions), [`post`] (the post calls), [`stats`] (counters),
//! [`iwarp`] (iWARP's rules: RDMA READs into registered sinks), [`early`] (RECVs posted
//! before the QP exists).

mod early;
mod inline_vec;
mod iwarp;
mod post;
mod ring;
mod stats;

/// Work requests one send-queue DTO may be split into.
pub(crate) const MAX_WR_PER_DTO: u32 = 8;

pub(crate) use inline_vec::{InlineVec, CHAIN_IN_PLACE};
pub(crate) use iwarp::{READ_MRS, READ_MR_PAGES};

pub(crate) use post::PooledWr;
pub(crate) use ring::{DtoHandler, DtoRing, DtoSink, KeepAlive, QpOwner, RingShared};
pub(crate) use stats::DtoStats;

use kernel::{prelude::*, sync::Arc};

use crate::lmr::Lmr;

pub use crate::dto_op::{DtoOp, DtoStatus, Op, RemoteRegion};

/// What the completion of an RMR bind or unbind reports: the consumer's `cookie`, and with
/// `suppress` (DAT's `DAT_COMPLETION_SUPPRESS_FLAG`) no event when it succeeds. The work
/// request stays signalled: its completion lets go of what the context holds (the MR, the
/// LMR), as ever.
#[derive(Clone, Copy)]
pub(crate) struct Completion {
    pub(crate) cookie: u64,
    pub(crate) suppress: bool,
}

impl Completion {
    /// An event for every completion, with `cookie`.
    pub(crate) fn reported(cookie: u64) -> Completion {
        Completion {
            cookie,
            suppress: false,
        }
    }
}

/// Up to two items in place, more in a vector.
///
/// A DTO's segment and SGE lists, and the LMRs its context holds, have a single item nearly
/// always (one LMR triplet, a physically contiguous buffer): then they need no allocation.
/// Longer lists grow a vector with the caller's flags (`GFP_ATOMIC` on the post path). A
/// chain's per-DTO lists are [`InlineVec`]s.
pub(crate) enum OneOrMore<T> {
    Empty,
    One(T),
    Two([T; 2]),
    More(KVec<T>),
}

impl<T> OneOrMore<T> {
    /// Appends `v`; allocates only from the third item on. On failure the list keeps what
    /// it held (and `v` is dropped). Always inlined: it runs once per SGE of a DTO, and once
    /// it had a second caller (`inline_sges`) LLVM stopped inlining it into the SGE loop,
    /// which cost about 23 instructions per SGE (`make bench`, `buf=sparse`).
    #[inline(always)]
    pub(crate) fn push(&mut self, v: T, flags: kernel::alloc::Flags) -> Result {
        match self {
            OneOrMore::Empty => *self = OneOrMore::One(v),
            OneOrMore::One(_) => {
                if let OneOrMore::One(first) = core::mem::replace(self, OneOrMore::Empty) {
                    *self = OneOrMore::Two([first, v]);
                }
            }
            OneOrMore::Two(_) => {
                let mut k = KVec::with_capacity(4, flags)?;
                if let OneOrMore::Two([a, b]) = core::mem::replace(self, OneOrMore::Empty) {
                    // Cannot fail: the capacity is 4.
                    let _ = k.push_within_capacity(a);
                    let _ = k.push_within_capacity(b);
                }
                let _ = k.push_within_capacity(v);
                *self = OneOrMore::More(k);
            }
            OneOrMore::More(k) => k.push(v, flags)?,
        }
        Ok(())
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            OneOrMore::Empty => &[],
            OneOrMore::One(v) => core::slice::from_ref(v),
            OneOrMore::Two(v) => v,
            OneOrMore::More(k) => k,
        }
    }
}

/// One local segment of a DTO: `length` bytes at `offset` of an LMR the caller holds for the
/// post call (`struct rkdapl_lmr_triplet`, DAT's `DAT_LMR_TRIPLET`; the context the DTO takes
/// keeps a reference of its own until it finishes). Made by [`crate::api::Lmr::segment`] (or
/// the C ABI from a triplet); the post calls check it against the EP's PZ
/// ([`Segment::check`]) before the rings see it.
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    pub(crate) lmr: &'a Arc<Lmr>,
    pub(crate) offset: u64,
    pub(crate) length: u64,
}

impl<'a> Segment<'a> {
    /// `length` bytes at `offset` of `lmr`, for a DTO of an EP in `pz`.
    ///
    /// # Errors
    ///
    /// As [`Segment::check`].
    pub(crate) fn new(
        lmr: &'a Arc<Lmr>,
        offset: u64,
        length: u64,
        pz: &Arc<crate::pz::Pz>,
    ) -> Result<Segment<'a>> {
        let s = Segment {
            lmr,
            offset,
            length,
        };
        s.check(pz)?;
        Ok(s)
    }

    /// Whether the segment may be posted on an EP (or SRQ) in `pz`. Any context.
    ///
    /// # Errors
    ///
    /// `-EXDEV` for an LMR of another PZ, `-ERANGE` for a range outside it.
    #[inline]
    pub(crate) fn check(&self, pz: &Arc<crate::pz::Pz>) -> Result {
        if !Arc::ptr_eq(&self.lmr.pz, pz) {
            return Err(EXDEV);
        }
        let end = self.offset.checked_add(self.length).ok_or(ERANGE)?;
        if end > self.lmr.len {
            return Err(ERANGE);
        }
        Ok(())
    }

    /// Checks the segments `segs` of one DTO for an EP (or SRQ) in `pz` that takes at most
    /// `max` of them. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for more than `max` segments, or as [`Segment::check`].
    #[inline]
    pub(crate) fn check_all(segs: &[Segment<'_>], pz: &Arc<crate::pz::Pz>, max: u32) -> Result {
        if segs.len() > max as usize {
            return Err(EINVAL);
        }
        segs.iter().try_for_each(|s| s.check(pz))
    }
}

kernel::impl_flags!(
    /// What a RECV's completion reported besides its length (the event's `immediate`,
    /// `by_rdma_write_imm` and `invalidated_rkey`; the C API's `RKDAPL_EVENT_*` flags): a set
    /// of [`RecvFlag`]s.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub(crate) struct RecvFlags(u32);

    /// One thing a RECV's completion reported.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum RecvFlag {
        /// It carries immediate data.
        WithImm = kernel::bits::bit_u32(0),
        /// An RDMA WRITE with immediate consumed the RECV.
        RdmaWriteImm = kernel::bits::bit_u32(1),
        /// A SEND with invalidate consumed the RECV.
        Invalidated = kernel::bits::bit_u32(2),
    }
);

/// Completion flags of a send-queue DTO (DAT's `DAT_COMPLETION_FLAGS`; the C API's
/// `enum rkdapl_completion_flags`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtoFlags {
    /// No event if it succeeds (selective signalling; `RKDAPL_COMPLETION_SUPPRESS` says when
    /// its LMRs come back).
    pub suppress: bool,
    /// The solicited-event bit (`IB_SEND_SOLICITED`: SEND, SEND with immediate, SEND with
    /// invalidate and RDMA WRITE with immediate).
    pub solicited: bool,
    /// Start after earlier RDMA READs of the EP completed (`IB_SEND_FENCE`).
    pub fence: bool,
}

/// One send-queue DTO to post, alone or in a chain (`struct rkdapl_dto`; the Rust API's
/// [`crate::api::Ep::post`] takes it as it is, the C ABI makes it from its arguments).
#[derive(Clone, Copy)]
pub struct Dto<'a> {
    /// The operation and its operands.
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
