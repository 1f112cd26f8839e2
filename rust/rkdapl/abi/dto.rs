// SPDX-License-Identifier: GPL-2.0

//! C entry points of the DTOs (the post calls) and the C structures they take: LMR and RMR
//! triplets and `struct rkdapl_dto`.

use super::handle::Handles;
use crate::{
    dto::{self, DtoFlags, DtoOp, OneOrMore, Op, RemoteRegion, Segment},
    ep::Ep,
    iov::MAX_CHAIN,
    lmr::Lmr,
};
use kernel::{error::from_result, prelude::*, sync::rcu};

/// `RKDAPL_COMPLETION_SUPPRESS`: no event for a send-queue DTO that succeeds.
const COMPLETION_SUPPRESS: u32 = 1 << 0;
/// `RKDAPL_COMPLETION_SOLICITED_WAIT`: the solicited-event bit.
const COMPLETION_SOLICITED_WAIT: u32 = 1 << 1;
/// `RKDAPL_COMPLETION_BARRIER_FENCE`: start after earlier RDMA READs completed.
const COMPLETION_BARRIER_FENCE: u32 = 1 << 2;
const COMPLETION_FLAGS_ALL: u32 =
    COMPLETION_SUPPRESS | COMPLETION_SOLICITED_WAIT | COMPLETION_BARRIER_FENCE;

/// `struct rkdapl_lmr_triplet`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct LmrTriplet {
    pub(crate) lmr: *const c_void,
    pub(crate) offset: u64,
    pub(crate) length: u64,
}

/// `struct rkdapl_rmr_triplet`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct RmrTriplet {
    pub(crate) address: u64,
    pub(crate) rkey: u32,
    pub(crate) reserved: u32,
    pub(crate) length: u64,
}

impl RmrTriplet {
    /// The remote region it names.
    fn region(&self) -> RemoteRegion {
        RemoteRegion {
            address: self.address,
            rkey: self.rkey,
            length: self.length,
        }
    }
}

/// `struct rkdapl_dto`: one send-queue DTO of `rkdapl_post_chain`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Dto {
    op: u32,
    flags: u32,
    iov: *const LmrTriplet,
    num_iov: u32,
    immediate: u32,
    remote: RmrTriplet,
    invalidate_rkey: u32,
    reserved: u32,
    cookie: u64,
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::size_of::<Dto>() == 64);
    assert!(core::mem::offset_of!(Dto, remote) == 24);
    assert!(core::mem::offset_of!(Dto, cookie) == 56);
};

/// Turns a C IOV into segments of LMRs of `ep`'s PZ.
///
/// # Errors
///
/// `-EINVAL` for more than [`crate::iov::MAX_IOV`] triplets, a NULL `iov` with triplets or a
/// bad LMR handle, or [`Ep::segments`]' errors.
///
/// # Safety
///
/// `iov` is NULL or valid for reads of `num` triplets (only when `num` is at most
/// [`crate::iov::MAX_IOV`] is it read).
unsafe fn segments<'g>(
    ep: &Ep,
    iov: *const LmrTriplet,
    num: u32,
    g: &'g rcu::Guard,
) -> Result<OneOrMore<Segment<'g>>> {
    if num > 0 && iov.is_null() {
        return Err(EINVAL);
    }
    ep.segments(num as usize, |i| {
        // SAFETY: `iov` is not NULL (checked), so it points to `num` readable triplets (the
        // caller's guarantee); `segments` asks only for `i < num <= MAX_IOV`.
        let t = unsafe { iov.add(i).read() };
        Ok((Handles::borrow::<Lmr>(t.lmr, g)?, t.offset, t.length))
    })
}

/// The remote range of an RDMA post call.
///
/// # Errors
///
/// `-EINVAL` for a NULL `remote`.
///
/// # Safety
///
/// `remote` is NULL or points to a readable `struct rkdapl_rmr_triplet`.
#[inline]
unsafe fn remote_region(remote: *const RmrTriplet) -> Result<RemoteRegion> {
    if remote.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `remote` is not NULL (checked), so it is readable (the caller's guarantee).
    Ok(unsafe { remote.read() }.region())
}

/// The send-queue DTO `op` over `segs`, reported with `cookie`, with the completion flags
/// `flags`: the one conversion of a post call's arguments (or of a `struct rkdapl_dto`) into
/// the DTO the rings post.
///
/// # Errors
///
/// `-EINVAL` for an unknown completion flag, or for a remote range of nonzero length that is
/// not the segments' total.
#[inline]
fn send_dto<'a>(op: Op, segs: &'a [Segment<'a>], cookie: u64, flags: u32) -> Result<dto::Dto<'a>> {
    let flags = completion_flags(flags)?;
    if let Some(r) = op.remote() {
        if r.length != 0 && r.length != segs.iter().map(|s| s.length).sum::<u64>() {
            return Err(EINVAL);
        }
    }
    Ok(dto::Dto {
        op,
        segs,
        cookie,
        flags,
    })
}

impl Dto {
    /// The DTO to post over `segs` (this DTO's segments, see [`segments`]). Atomics are not
    /// among the ops of `struct rkdapl_dto` (their operands have no field there): they are
    /// posted alone ([`post_atomic`]).
    fn to_send<'a>(self, segs: &'a [Segment<'a>]) -> Result<dto::Dto<'a>> {
        if self.reserved != 0 {
            return Err(EINVAL);
        }
        let r = self.remote.region();
        let op = match self.op {
            x if x == DtoOp::Send as u32 => Op::Send,
            x if x == DtoOp::SendImm as u32 => Op::SendImm(self.immediate),
            x if x == DtoOp::SendInvalidate as u32 => Op::SendInvalidate {
                rkey: self.invalidate_rkey,
            },
            x if x == DtoOp::RdmaWrite as u32 => Op::RdmaWrite(r),
            x if x == DtoOp::RdmaRead as u32 => Op::RdmaRead(r),
            x if x == DtoOp::RdmaWriteImm as u32 => Op::RdmaWriteImm(r, self.immediate),
            _ => return Err(EINVAL),
        };
        send_dto(op, segs, self.cookie, self.flags)
    }
}

/// The completion flags of a post call (`enum rkdapl_completion_flags`).
///
/// # Errors
///
/// `-EINVAL` for an unknown flag.
fn completion_flags(flags: u32) -> Result<DtoFlags> {
    if flags & !COMPLETION_FLAGS_ALL != 0 {
        return Err(EINVAL);
    }
    Ok(DtoFlags {
        suppress: flags & COMPLETION_SUPPRESS != 0,
        solicited: flags & COMPLETION_SOLICITED_WAIT != 0,
        fence: flags & COMPLETION_BARRIER_FENCE != 0,
    })
}

/// Posts the send-queue DTO `op` of a single-DTO post call, over the `num_iov` triplets at
/// `iov`. A DTO over one triplet (the common case) goes from the call's arguments to the ring
/// directly: its segment is checked and handed on from the stack, with no list of segments
/// and no `struct rkdapl_dto`. The checks and their order are the same either way.
///
/// # Errors
///
/// As the post calls.
///
/// # Safety
///
/// `iov` is NULL or valid for reads of `num_iov` triplets.
#[inline(always)]
unsafe fn post_one(
    ep: *mut c_void,
    op: Op,
    iov: *const LmrTriplet,
    num_iov: u32,
    cookie: u64,
    flags: u32,
) -> Result<c_int> {
    // The EP and the LMRs are borrowed under one RCU read section: a concurrent free of any of
    // them (a caller bug) then waits for this call.
    let g = rcu::read_lock();
    let e = Handles::borrow::<Ep>(ep, &g)?;
    let post = |segs: &[Segment<'_>]| {
        let d = send_dto(op, segs, cookie, flags)?;
        e.post_chain(core::slice::from_ref(&d)).map_err(|(e, _)| e)
    };
    if num_iov == 1 && !iov.is_null() {
        // SAFETY: `iov` is not NULL (checked), so it points to one readable triplet (the
        // caller's guarantee).
        let t = unsafe { iov.read() };
        let lmr = Handles::borrow::<Lmr>(t.lmr, &g)?;
        post(&[Segment::new(lmr, t.offset, t.length, &e.pz)?])?;
    } else {
        // SAFETY: `iov` is NULL or `num_iov` readable triplets (the caller's guarantee).
        let segs = unsafe { segments(e, iov, num_iov, &g) }?;
        post(segs.as_slice())?;
    }
    Ok(0)
}

/// See `rkdapl_post_send` in `include/rkdapl.h`.
///
/// # Safety
///
/// `iov` is NULL or valid for reads of `num_iov` triplets. `ep` and the triplets' LMRs may be
/// any value: one that is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_send(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    // SAFETY: `iov` is NULL or `num_iov` readable triplets (this function's `# Safety`).
    from_result(|| unsafe { post_one(ep, Op::Send, iov, num_iov, cookie, flags) })
}

/// A C caller's scatterlist, lent to one SEND (`rkdapl_post_send_sg`): its pages are the
/// caller's, which keeps them and the list until the SEND's event; dropping it does nothing.
struct CallerSg {
    sgl: *mut kernel::bindings::scatterlist,
    nents: usize,
}

// SAFETY: The list is only read, by whichever thread maps or unmaps it (`SgOwner`); the caller
// of `rkdapl_post_send_sg` does not change it meanwhile.
unsafe impl Send for CallerSg {}
// SAFETY: See the `Send` impl.
unsafe impl Sync for CallerSg {}

// SAFETY: `rkdapl_post_send_sg`'s contract: the list and its pages stay, unchanged and the
// SEND's to map, until its event, which comes after the region that holds this owner was
// dropped (the DTO's context drops it before reporting), or until the call returns an error
// (the region is then gone already).
unsafe impl crate::rdma::mr::SgOwner for CallerSg {
    fn sg(&self) -> (*mut kernel::bindings::scatterlist, usize) {
        (self.sgl, self.nents)
    }
}

/// See `rkdapl_post_send_sg` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_send`]; `sgl` is NULL or the first of `nents` entries of a scatterlist
/// over pages the caller keeps, with the list, unchanged until the SEND's completion event
/// (or the error return).
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_send_sg(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    sgl: *mut kernel::bindings::scatterlist,
    nents: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    from_result(|| {
        let flags = completion_flags(flags)?;
        if flags.suppress || sgl.is_null() || nents == 0 {
            return Err(EINVAL);
        }
        let g = rcu::read_lock();
        let e = Handles::borrow::<Ep>(ep, &g)?;
        // SAFETY: `iov` is NULL or `num_iov` readable triplets (the caller's guarantee).
        let segs = unsafe { segments(e, iov, num_iov, &g) }?;
        // Kept in place (two words): no allocation for it.
        let owner = crate::rdma::mr::Lender::new(
            CallerSg {
                sgl,
                nents: nents as usize,
            },
            GFP_ATOMIC,
        )?;
        e.post_send_lent(segs.as_slice(), owner, cookie, flags)?;
        Ok(0)
    })
}

/// See `rkdapl_post_send_with_invalidate` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_send`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_send_with_invalidate(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    rkey: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    let op = Op::SendInvalidate { rkey };
    // SAFETY: `iov` is NULL or `num_iov` readable triplets (this function's `# Safety`).
    from_result(|| unsafe { post_one(ep, op, iov, num_iov, cookie, flags) })
}

/// See `rkdapl_post_send_imm` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_send`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_send_imm(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    immediate: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    let op = Op::SendImm(immediate);
    // SAFETY: `iov` is NULL or `num_iov` readable triplets (this function's `# Safety`).
    from_result(|| unsafe { post_one(ep, op, iov, num_iov, cookie, flags) })
}

/// See `rkdapl_post_recv` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_send`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_recv(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    from_result(|| {
        // No completion flag applies to a RECV.
        if flags != 0 {
            return Err(EINVAL);
        }
        let g = rcu::read_lock();
        let e = Handles::borrow::<Ep>(ep, &g)?;
        // One triplet goes from the stack, as in `post_one`.
        if num_iov == 1 && !iov.is_null() {
            // SAFETY: `iov` is not NULL (checked), so it points to one readable triplet (this
            // function's `# Safety`).
            let t = unsafe { iov.read() };
            let lmr = Handles::borrow::<Lmr>(t.lmr, &g)?;
            e.post_recv(&[Segment::new(lmr, t.offset, t.length, &e.pz)?], cookie)?;
            return Ok(0);
        }
        // SAFETY: `iov` is NULL or `num_iov` readable triplets (this function's `# Safety`).
        let segs = unsafe { segments(e, iov, num_iov, &g) }?;
        e.post_recv(segs.as_slice(), cookie)?;
        Ok(0)
    })
}

/// See `rkdapl_post_rdma_write` in `include/rkdapl.h`.
///
/// # Safety
///
/// `iov` is NULL or valid for reads of `num_iov` triplets; `remote` is NULL or points to a
/// readable `struct rkdapl_rmr_triplet`. `ep` and the triplets' LMRs may be any value: one
/// that is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_rdma_write(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    remote: *const RmrTriplet,
    cookie: u64,
    flags: u32,
) -> c_int {
    // SAFETY: `iov` and `remote` are as this function's `# Safety` says.
    from_result(|| unsafe {
        let op = Op::RdmaWrite(remote_region(remote)?);
        post_one(ep, op, iov, num_iov, cookie, flags)
    })
}

/// See `rkdapl_post_rdma_write_imm` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_rdma_write`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_rdma_write_imm(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    remote: *const RmrTriplet,
    immediate: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    // SAFETY: `iov` and `remote` are as this function's `# Safety` says.
    from_result(|| unsafe {
        let op = Op::RdmaWriteImm(remote_region(remote)?, immediate);
        post_one(ep, op, iov, num_iov, cookie, flags)
    })
}

/// See `rkdapl_post_rdma_read` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_rdma_write`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_rdma_read(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    remote: *const RmrTriplet,
    cookie: u64,
    flags: u32,
) -> c_int {
    // SAFETY: `iov` and `remote` are as this function's `# Safety` says.
    from_result(|| unsafe {
        let op = Op::RdmaRead(remote_region(remote)?);
        post_one(ep, op, iov, num_iov, cookie, flags)
    })
}

/// Posts the atomic `op` (`FetchAdd` or `CmpSwap`, operands `atomic`) of the word at `remote`,
/// the word's old value into `local`.
///
/// # Errors
///
/// As `rkdapl_post_fetch_add`.
///
/// # Safety
///
/// `local` is NULL or valid for a read of one triplet; `remote` is NULL or valid for a read of
/// one `struct rkdapl_rmr_triplet`.
unsafe fn post_atomic(
    ep: *mut c_void,
    op: DtoOp,
    local: *const LmrTriplet,
    remote: *const RmrTriplet,
    atomic: (u64, u64),
    cookie: u64,
    flags: u32,
) -> Result<i32> {
    if local.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `remote` is NULL (refused) or readable (the caller's guarantee).
    let r = unsafe { remote_region(remote) }?;
    if r.length != 0 && r.length != 8 {
        return Err(EINVAL);
    }
    let flags = completion_flags(flags)?;
    let op = match (op, atomic) {
        (DtoOp::CmpSwap, (compare, swap)) => Op::CmpSwap(r, compare, swap),
        (_, (add, _)) => Op::FetchAdd(r, add),
    };
    let g = rcu::read_lock();
    let e = Handles::borrow::<Ep>(ep, &g)?;
    let segs = || {
        // SAFETY: `local` is one readable triplet (the caller's guarantee).
        unsafe { segments(e, local, 1, &g) }
    };
    e.post_one(segs, |segs| {
        Ok(dto::Dto {
            op,
            segs,
            cookie,
            flags,
        })
    })?;
    Ok(0)
}

/// See `rkdapl_post_fetch_add` in `include/rkdapl.h`.
///
/// # Safety
///
/// `local` is NULL or valid for a read of one `struct rkdapl_lmr_triplet`; `remote` is NULL or
/// points to a readable `struct rkdapl_rmr_triplet`. `ep` and the triplet's LMR may be any
/// value: one that is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_fetch_add(
    ep: *mut c_void,
    local: *const LmrTriplet,
    remote: *const RmrTriplet,
    add: u64,
    cookie: u64,
    flags: u32,
) -> c_int {
    // SAFETY: `local` and `remote` are as this function's `# Safety` says.
    from_result(|| unsafe {
        post_atomic(ep, DtoOp::FetchAdd, local, remote, (add, 0), cookie, flags)
    })
}

/// See `rkdapl_post_cmp_swap` in `include/rkdapl.h`.
///
/// # Safety
///
/// As [`rkdapl_post_fetch_add`].
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_cmp_swap(
    ep: *mut c_void,
    local: *const LmrTriplet,
    remote: *const RmrTriplet,
    compare: u64,
    swap: u64,
    cookie: u64,
    flags: u32,
) -> c_int {
    // SAFETY: `local` and `remote` are as this function's `# Safety` says.
    from_result(|| unsafe {
        post_atomic(
            ep,
            DtoOp::CmpSwap,
            local,
            remote,
            (compare, swap),
            cookie,
            flags,
        )
    })
}

/// Posts the chain of `n` DTOs at `dtos` up to the first bad one, as `ib_post_send` does with
/// a chain, and sets `*done` to how many were posted.
///
/// # Errors
///
/// The error of the first DTO that was not posted, as its single post call would return it.
///
/// # Safety
///
/// `dtos` is NULL or valid for reads of `n` DTOs (only when `n` is at most [`MAX_CHAIN`] is it
/// read), each with an `iov` that is NULL or valid for reads of its `num_iov` triplets.
unsafe fn post_chain(ep: *mut c_void, dtos: *const Dto, n: u32, done: &mut usize) -> Result {
    if dtos.is_null() || n == 0 || n > MAX_CHAIN {
        return Err(EINVAL);
    }
    // SAFETY: `dtos` is not NULL (checked), so it points to `n` readable DTOs (the caller's
    // guarantee).
    let ds = unsafe { core::slice::from_raw_parts(dtos, n as usize) };
    // Borrowed under RCU, like the single posts: a concurrent free of the EP or of an LMR (a
    // caller bug) then waits for this call, so no reference dropped here is the last one.
    let g = rcu::read_lock();
    let e = Handles::borrow::<Ep>(ep, &g)?;
    let segs = |i: usize| {
        let d = ds.get(i).ok_or(EINVAL)?;
        // SAFETY: `d.iov` is NULL or `d.num_iov` readable triplets (the caller's guarantee).
        unsafe { segments(e, d.iov, d.num_iov, &g) }
    };
    let r = e.post_dtos(ds.len(), segs, |i, s| ds.get(i).ok_or(EINVAL)?.to_send(s));
    r.map_err(|(err, p)| {
        *done = p;
        err
    })?;
    *done = ds.len();
    Ok(())
}

/// See `rkdapl_post_chain` in `include/rkdapl.h`.
///
/// # Safety
///
/// `dtos` is NULL or valid for reads of `n` `struct rkdapl_dto`, each with an `iov` that is
/// NULL or valid for reads of its `num_iov` triplets; `posted` is NULL or valid for a write of
/// a `u32`. `ep` and the triplets'
/// LMRs may be any value: one that is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_post_chain(
    ep: *mut c_void,
    dtos: *const Dto,
    n: u32,
    posted: *mut u32,
) -> c_int {
    from_result(|| {
        let mut done = 0usize;
        // SAFETY: `dtos` and the triplets are as this function's `# Safety` says.
        let r = unsafe { post_chain(ep, dtos, n, &mut done) };
        if !posted.is_null() {
            // SAFETY: `posted` is not NULL (checked), so it is writable (this function's
            // `# Safety`).
            unsafe { posted.write(done as u32) };
        }
        r?;
        Ok(0)
    })
}

#[kunit_tests(rkdapl_abi_dto)]
mod tests {
    use super::*;

    const SEND_OPS: [DtoOp; 6] = [
        DtoOp::Send,
        DtoOp::SendImm,
        DtoOp::RdmaWrite,
        DtoOp::RdmaRead,
        DtoOp::RdmaWriteImm,
        DtoOp::SendInvalidate,
    ];

    /// A `struct rkdapl_dto` without segments.
    fn dto(op: u32, flags: u32) -> Dto {
        Dto {
            op,
            flags,
            iov: core::ptr::null(),
            num_iov: 0,
            immediate: 0,
            remote: RmrTriplet::default(),
            invalidate_rkey: 0,
            reserved: 0,
            cookie: 0,
        }
    }

    #[test]
    fn completion_flags_convert_bit_by_bit() -> Result {
        for bits in 0..8u32 {
            let f = dto(DtoOp::Send as u32, bits).to_send(&[])?.flags;
            assert_eq!(
                (f.suppress, f.solicited, f.fence),
                (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0)
            );
        }
        for bad in [1 << 3, 1 << 31, u32::MAX] {
            assert_eq!(
                dto(DtoOp::Send as u32, bad).to_send(&[]).err(),
                Some(EINVAL)
            );
        }
        Ok(())
    }

    #[test]
    fn only_send_queue_ops_are_taken() -> Result {
        for op in SEND_OPS {
            assert_eq!(dto(op as u32, 0).to_send(&[])?.op.dto_op(), op);
        }
        for bad in [
            0,
            DtoOp::Recv as u32,
            DtoOp::RmrBind as u32,
            DtoOp::RmrUnbind as u32,
            DtoOp::FetchAdd as u32,
            DtoOp::CmpSwap as u32,
            12,
            u32::MAX,
        ] {
            assert_eq!(dto(bad, 0).to_send(&[]).err(), Some(EINVAL));
        }
        Ok(())
    }

    #[test]
    fn reserved_must_be_zero() {
        let d = Dto {
            reserved: 1,
            ..dto(DtoOp::Send as u32, 0)
        };
        assert_eq!(d.to_send(&[]).err(), Some(EINVAL));
    }

    #[test]
    fn remote_side_for_rdma_operations_only() -> Result {
        let remote = RmrTriplet {
            address: 0x1000_0000_0000_0008,
            rkey: 0xabcd_0123,
            reserved: 0,
            length: 0,
        };
        for op in SEND_OPS {
            let d = Dto {
                remote,
                ..dto(op as u32, 0)
            };
            let want = match op {
                DtoOp::Send | DtoOp::SendImm | DtoOp::SendInvalidate => None,
                _ => Some((remote.address, remote.rkey)),
            };
            let got = d.to_send(&[])?.op.remote().map(|r| (r.address, r.rkey));
            assert_eq!(got, want);
        }
        // A nonzero remote length must be the IOV's total (here 0 bytes).
        let d = Dto {
            remote: RmrTriplet {
                length: 5,
                ..remote
            },
            ..dto(DtoOp::RdmaWrite as u32, 0)
        };
        assert_eq!(d.to_send(&[]).err(), Some(EINVAL));
        // A SEND ignores it.
        let d = Dto {
            remote: RmrTriplet {
                length: 5,
                ..remote
            },
            ..dto(DtoOp::Send as u32, 0)
        };
        assert!(d.to_send(&[]).is_ok());
        Ok(())
    }

    #[test]
    fn cookie_immediate_and_rkey_pass_through() -> Result {
        let d = Dto {
            cookie: u64::MAX,
            immediate: 0xdead_beef,
            invalidate_rkey: 0x1234_5678,
            ..dto(DtoOp::RdmaWriteImm as u32, 0)
        };
        let s = d.to_send(&[])?;
        let imm = match s.op {
            Op::RdmaWriteImm(_, imm) => Some(imm),
            _ => None,
        };
        assert_eq!((s.cookie, imm), (u64::MAX, Some(0xdead_beef)));
        assert_eq!(s.segs.len(), 0);
        let d = Dto {
            immediate: 0xfeed_f00d,
            ..dto(DtoOp::SendImm as u32, 0)
        };
        assert_eq!(d.to_send(&[])?.op, Op::SendImm(0xfeed_f00d));
        let d = Dto {
            invalidate_rkey: 0x1234_5678,
            ..dto(DtoOp::SendInvalidate as u32, 0)
        };
        let op = d.to_send(&[])?.op;
        assert_eq!(op, Op::SendInvalidate { rkey: 0x1234_5678 });
        Ok(())
    }

    #[test]
    fn single_posts_read_the_remote_triplet() -> Result {
        let remote = RmrTriplet {
            address: 0x2000,
            rkey: 7,
            reserved: 0,
            length: 24,
        };
        // SAFETY: NULL is not read; `remote` is a live triplet.
        let (null, r) = unsafe { (remote_region(core::ptr::null()), remote_region(&remote)?) };
        assert_eq!(null.err(), Some(EINVAL));
        assert_eq!((r.address, r.rkey, r.length), (0x2000, 7, 24));
        Ok(())
    }

    #[test]
    fn single_posts_convert_once() -> Result {
        let r = RemoteRegion {
            address: 0x3000,
            rkey: 9,
            length: 0,
        };
        let d = send_dto(Op::RdmaWriteImm(r, 0xab), &[], 4, COMPLETION_SOLICITED_WAIT)?;
        assert_eq!(
            (d.op, d.cookie, d.segs.len()),
            (Op::RdmaWriteImm(r, 0xab), 4, 0)
        );
        assert_eq!(
            (d.flags.suppress, d.flags.solicited, d.flags.fence),
            (false, true, false)
        );
        assert_eq!(send_dto(Op::Send, &[], 1, 1 << 3).err(), Some(EINVAL));
        // A nonzero remote length must be the segments' total (here 0 bytes); a SEND has none.
        let long = RemoteRegion { length: 1, ..r };
        assert_eq!(send_dto(Op::RdmaRead(long), &[], 1, 0).err(), Some(EINVAL));
        assert!(send_dto(Op::SendImm(3), &[], 1, 0).is_ok());
        Ok(())
    }
}
