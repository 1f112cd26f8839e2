// SPDX-License-Identifier: GPL-2.0

//! C entry points of the SRQ: create, post a RECV, set the low watermark, query, free, and
//! EPs created on an SRQ.

use super::{
    dto::LmrTriplet,
    ep::{read_attr, CEpAttr},
    handle::Handles,
    publish_live, put, Object,
};
use crate::evd::refuse_in_upcall;
use crate::{
    ep::Ep,
    evd::Evd,
    lmr::Lmr,
    pz::Pz,
    srq::{Srq, SrqAttr},
};
use kernel::{
    error::from_result,
    prelude::*,
    sync::{rcu, Arc},
};

impl Object for Srq {
    /// The handle is reported in the SRQ's async events.
    fn published(&self, handle: usize) {
        self.set_handle(handle);
    }

    fn unpublished(&self) {
        let _ = self.free();
    }
}

/// `struct rkdapl_srq_attr`: an [`SrqAttr`] as C passes it in ([`rkdapl_srq_create`] takes
/// the first three fields) and reads it back ([`rkdapl_srq_query`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CSrqAttr {
    max_recv_dtos: u32,
    max_recv_iov: u32,
    low_watermark: u32,
    outstanding: u32,
    max_srq_dtos: u32,
    max_srq_iov: u32,
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::size_of::<CSrqAttr>() == 24);
    assert!(core::mem::offset_of!(CSrqAttr, low_watermark) == 8);
    assert!(core::mem::offset_of!(CSrqAttr, max_srq_iov) == 20);
};

impl From<&CSrqAttr> for SrqAttr {
    /// What `rkdapl_srq_create` takes: the first three fields; the others, which only
    /// `rkdapl_srq_query` fills in, are ignored.
    fn from(c: &CSrqAttr) -> SrqAttr {
        SrqAttr {
            max_recv_dtos: c.max_recv_dtos,
            max_recv_iov: c.max_recv_iov,
            low_watermark: c.low_watermark,
            ..SrqAttr::default()
        }
    }
}

impl From<&SrqAttr> for CSrqAttr {
    fn from(a: &SrqAttr) -> CSrqAttr {
        CSrqAttr {
            max_recv_dtos: a.max_recv_dtos,
            max_recv_iov: a.max_recv_iov,
            low_watermark: a.low_watermark,
            outstanding: a.outstanding,
            max_srq_dtos: a.max_srq_dtos,
            max_srq_iov: a.max_srq_iov,
        }
    }
}

/// See `rkdapl_srq_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct rkdapl_srq_attr`; `srq` is NULL or valid
/// for a write of a pointer. `pz` and `evd` may be any value: one that is not a live handle of
/// its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_srq_create(
    pz: *mut c_void,
    evd: *mut c_void,
    attr: *const CSrqAttr,
    srq: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        let pz: Arc<Pz> = Handles::get::<Pz>(pz)?;
        let evd: Arc<Evd> = Handles::get::<Evd>(evd)?;
        if attr.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `attr` is not NULL (checked), so it points to a readable
        // `struct rkdapl_srq_attr` (this function's `# Safety`).
        let a = SrqAttr::from(&unsafe { attr.read() });
        let ia = pz.ia.clone();
        // SAFETY: `srq` is NULL or writable (this function's `# Safety`).
        unsafe { publish_live(&ia, srq, |dev| Srq::new(pz, dev, evd, a)) }?;
        Ok(0)
    })
}

/// See `rkdapl_srq_post_recv` in `include/rkdapl.h`.
///
/// # Safety
///
/// `iov` is NULL or valid for reads of `num_iov` triplets. `srq` and the triplets' LMRs may
/// be any value: one that is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_srq_post_recv(
    srq: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    cookie: u64,
) -> c_int {
    from_result(|| {
        let g = rcu::read_lock();
        let s = Handles::borrow::<Srq>(srq, &g)?;
        if num_iov > 0 && iov.is_null() {
            return Err(EINVAL);
        }
        let segs = s.segments(num_iov as usize, |i| {
            // SAFETY: `iov` is not NULL (checked), so it points to `num_iov` readable
            // triplets (this function's `# Safety`); `segments` asks only for `i < num_iov`.
            let t = unsafe { iov.add(i).read() };
            Ok((Handles::borrow::<Lmr>(t.lmr, &g)?, t.offset, t.length))
        })?;
        s.post_recv(segs.as_slice(), cookie)?;
        Ok(0)
    })
}

/// See `rkdapl_srq_set_lw` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `srq` may be any value; one that is not a live SRQ handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_srq_set_lw(srq: *mut c_void, low_watermark: u32) -> c_int {
    from_result(|| {
        Handles::get::<Srq>(srq)?.set_lw(low_watermark)?;
        Ok(0)
    })
}

/// See `rkdapl_srq_query` in `include/rkdapl.h`.
///
/// # Safety
///
/// `attr` is NULL or valid for a write of a `struct rkdapl_srq_attr`. `srq` may be any value:
/// one that is not a live SRQ handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_srq_query(srq: *mut c_void, attr: *mut CSrqAttr) -> c_int {
    from_result(|| {
        let a = CSrqAttr::from(&Handles::get::<Srq>(srq)?.query()?);
        // SAFETY: `attr` is NULL or writable (this function's `# Safety`).
        unsafe { put(attr, a) }?;
        Ok(0)
    })
}

/// See `rkdapl_srq_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `srq` may be any value; one that is not a live SRQ handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_srq_free(srq: *mut c_void) -> c_int {
    from_result(|| {
        // The handle stays when the SRQ refuses (-EBUSY).
        let s = Handles::get::<Srq>(srq)?;
        refuse_in_upcall()?;
        s.free()?;
        Handles::remove::<Srq>(srq)?;
        Ok(0)
    })
}

/// See `rkdapl_ep_create_with_srq` in `include/rkdapl.h`.
///
/// # Safety
///
/// As `rkdapl_ep_create`; `srq` may be any value: one that is not a live SRQ handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_create_with_srq(
    pz: *mut c_void,
    dto_evd: *mut c_void,
    conn_evd: *mut c_void,
    srq: *mut c_void,
    attr: *const CEpAttr,
    ep: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        let pz: Arc<Pz> = Handles::get::<Pz>(pz)?;
        let dto: Arc<Evd> = Handles::get::<Evd>(dto_evd)?;
        let conn: Arc<Evd> = Handles::get::<Evd>(conn_evd)?;
        let srq: Arc<Srq> = Handles::get::<Srq>(srq)?;
        // SAFETY: `attr` is NULL or points to a readable `struct rkdapl_ep_attr` (this
        // function's `# Safety`: as `rkdapl_ep_create`'s).
        let attr = unsafe { read_attr(attr) };
        let ia = pz.ia.clone();
        // SAFETY: `ep` is NULL or writable (this function's `# Safety`).
        unsafe {
            publish_live(&ia, ep, |dev| {
                Ep::new_with_srq(pz, dev, dto, conn, srq, attr)
            })
        }?;
        Ok(0)
    })
}

#[kunit_tests(rkdapl_abi_srq)]
mod tests {
    use super::*;

    #[test]
    fn c_srq_attr_converts_each_field() {
        let a = SrqAttr {
            max_recv_dtos: 1,
            max_recv_iov: 2,
            low_watermark: 3,
            outstanding: 4,
            max_srq_dtos: 5,
            max_srq_iov: 6,
        };
        let c = CSrqAttr::from(&a);
        let fields = [
            c.max_recv_dtos,
            c.max_recv_iov,
            c.low_watermark,
            c.outstanding,
            c.max_srq_dtos,
            c.max_srq_iov,
        ];
        assert_eq!(fields, [1, 2, 3, 4, 5, 6]);
        // Creation takes the first three fields only.
        let back = SrqAttr::from(&c);
        assert_eq!(
            (back.max_recv_dtos, back.max_recv_iov, back.low_watermark),
            (1, 2, 3)
        );
        assert_eq!(
            (back.outstanding, back.max_srq_dtos, back.max_srq_iov),
            (0, 0, 0)
        );
    }
}
