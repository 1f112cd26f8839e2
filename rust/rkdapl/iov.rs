// SPDX-License-Identifier: GPL-2.0

//! What the post calls of the C ABI and of the Rust API share: checking a DTO's local segments
//! (LMR triplets, DAT's IOV; the C ABI's are made here into [`Segment`]s), and posting a chain
//! of send-queue DTOs up to the first one that cannot be posted.

use crate::{
    dto::{Dto, InlineVec, OneOrMore, Segment, CHAIN_IN_PLACE},
    ep::Ep,
    lmr::Lmr,
};
use kernel::{prelude::*, sync::Arc};

/// Most local segments (LMR triplets) one DTO takes.
pub const MAX_IOV: u32 = 256;

/// Longest chain of send-queue DTOs one post takes (an EP never has more outstanding).
pub const MAX_CHAIN: u32 = 4096;

/// A chain's first error, and how many DTOs (from the start) were posted before it.
pub(crate) type ChainResult = core::result::Result<(), (Error, usize)>;

impl Ep {
    /// The segments of one DTO on this EP: `n` LMR triplets, the `i`-th given by `triplet(i)`
    /// as an LMR, an offset and a length. Any context (allocates with `GFP_ATOMIC` from the
    /// second segment on).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for more than [`MAX_IOV`] triplets, `triplet`'s error (the C ABI: `-EINVAL`
    /// for a bad LMR handle), `-EXDEV` for an LMR of another PZ, `-ERANGE` for a segment
    /// outside its LMR, `-ENOMEM`.
    pub(crate) fn segments<'a>(
        &self,
        n: usize,
        mut triplet: impl FnMut(usize) -> Result<(&'a Arc<Lmr>, u64, u64)>,
    ) -> Result<OneOrMore<Segment<'a>>> {
        if n > MAX_IOV as usize {
            return Err(EINVAL);
        }
        let mut v = OneOrMore::Empty;
        for i in 0..n {
            let (lmr, offset, length) = triplet(i)?;
            v.push(Segment::new(lmr, offset, length, &self.pz)?, GFP_ATOMIC)?;
        }
        Ok(v)
    }

    /// Checks the segments of one DTO for this EP. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for more than [`MAX_IOV`] segments, `-EXDEV` for an LMR of another PZ,
    /// `-ERANGE` for a segment outside its LMR.
    #[inline]
    pub(crate) fn check_segments(&self, segs: &[Segment<'_>]) -> Result {
        Segment::check_all(segs, &self.pz, MAX_IOV)
    }

    /// Posts `dtos` (the Rust API's post) as one chain, in order, after checking their
    /// segments: every DTO before the first one with a bad segment is posted, as
    /// [`Ep::post_dtos`] does. Any context (does not sleep).
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs were posted before it: `-EINVAL` for no DTOs or more
    /// than [`MAX_CHAIN`], [`Ep::check_segments`]' error for the DTO it stopped at, or as
    /// [`Ep::post_chain`].
    pub(crate) fn post_checked(&self, dtos: &[Dto<'_>]) -> ChainResult {
        if let [d] = dtos {
            self.check_segments(d.segs).map_err(|e| (e, 0))?;
            return self.post_chain(dtos);
        }
        if dtos.is_empty() || dtos.len() > MAX_CHAIN as usize {
            return Err((EINVAL, 0));
        }
        let mut bad = None;
        let mut n = dtos.len();
        for (i, d) in dtos.iter().enumerate() {
            if let Err(e) = self.check_segments(d.segs) {
                bad = Some(e);
                n = i;
                break;
            }
        }
        // Even an empty chain: the EP's state is checked first, as ever.
        self.post_chain(dtos.get(..n).unwrap_or(&[]))?;
        match bad {
            None => Ok(()),
            Some(e) => Err((e, n)),
        }
    }

    /// Posts one send-queue DTO: `segs()` gives its segments, `dto(segs)` the DTO over them.
    /// Any context (does not sleep).
    ///
    /// # Errors
    ///
    /// `segs`' or `dto`'s error, or as [`Ep::post_chain`].
    pub(crate) fn post_one<'l>(
        &self,
        segs: impl FnOnce() -> Result<OneOrMore<Segment<'l>>>,
        dto: impl for<'a> FnOnce(&'a [Segment<'l>]) -> Result<Dto<'a>>,
    ) -> Result {
        let segs = segs()?;
        let d = dto(segs.as_slice())?;
        self.post_chain(core::slice::from_ref(&d))
            .map_err(|(e, _)| e)
    }

    /// Posts `n` send-queue DTOs as one chain, in order: `segs(i)` gives the `i`-th DTO's
    /// segments, `dto(i, segs)` the DTO over them. Every DTO before the first one that cannot
    /// be built or posted is posted, as `ib_post_send()` does with a chain. Any context (does
    /// not sleep; allocates nothing for up to [`CHAIN_IN_PLACE`] DTOs, two arrays of `n` entries
    /// with `GFP_ATOMIC` for more).
    ///
    /// # Errors
    ///
    /// The first error and how many DTOs were posted before it: `-EINVAL` for no DTOs or more
    /// than [`MAX_CHAIN`], `segs`' or `dto`'s error for the DTO it stopped at, `-ENOMEM`, or
    /// as [`Ep::post_chain`].
    pub(crate) fn post_dtos<'l>(
        &self,
        n: usize,
        mut segs: impl FnMut(usize) -> Result<OneOrMore<Segment<'l>>>,
        dto: impl for<'a> Fn(usize, &'a [Segment<'l>]) -> Result<Dto<'a>>,
    ) -> ChainResult {
        if n == 0 || n > MAX_CHAIN as usize {
            return Err((EINVAL, 0));
        }
        let mut bad = None;
        // In place for a chain of up to `CHAIN_IN_PLACE` DTOs, allocated for a longer one.
        let mut segv = InlineVec::<_, CHAIN_IN_PLACE>::new();
        segv.reserve(n, GFP_ATOMIC).map_err(|e| (e, 0))?;
        for i in 0..n {
            match segs(i) {
                // Cannot fail: room for `n` was reserved.
                Ok(s) => segv.push(s, GFP_ATOMIC).map_err(|e| (e, 0))?,
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            }
        }
        let mut sds = InlineVec::<_, CHAIN_IN_PLACE>::new();
        sds.reserve(segv.len(), GFP_ATOMIC).map_err(|e| (e, 0))?;
        for (i, s) in segv.as_slice().iter().enumerate() {
            match dto(i, s.as_slice()) {
                // Cannot fail: room for `segv.len()` was reserved.
                Ok(d) => sds.push(d, GFP_ATOMIC).map_err(|e| (e, 0))?,
                Err(e) => {
                    bad = Some(e);
                    break;
                }
            }
        }
        // Even an empty chain: the EP's state is checked first, as ever.
        let sds = sds.as_slice();
        self.post_chain(sds)?;
        match bad {
            None => Ok(()),
            Some(e) => Err((e, sds.len())),
        }
    }
}
