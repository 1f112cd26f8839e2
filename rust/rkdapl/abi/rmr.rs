// SPDX-License-Identifier: GPL-2.0

//! C entry points of the RMR: create, bind, unbind, free; and of the EP's pooled RMRs.

use super::{handle::Handles, publish_live, put, Object};
use crate::{dto::Completion, ep::Ep, lmr::Lmr, pz::Pz, rmr::Rmr};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Rmr {
    fn unpublished(&self) {
        self.free();
    }
}

/// See `rkdapl_rmr_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `rmr` is NULL or valid for a write of a pointer. `pz` may be any value: one that is not a
/// live PZ handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_rmr_create(pz: *mut c_void, rmr: *mut *mut c_void) -> c_int {
    from_result(|| {
        let pz: Arc<Pz> = Handles::get::<Pz>(pz)?;
        let ia = pz.ia.clone();
        // SAFETY: `rmr` is NULL or writable (this function's `# Safety`).
        unsafe { publish_live(&ia, rmr, |_| Rmr::new(pz)) }?;
        Ok(0)
    })
}

/// See `rkdapl_rmr_bind` in `include/rkdapl.h`.
///
/// # Safety
///
/// `rkey` and `address` are each NULL or valid for a write of a `u32` and a `u64`. `rmr`,
/// `lmr` and `ep` may be any value: one that is not a live handle of its kind is refused with
/// `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_rmr_bind(
    rmr: *mut c_void,
    lmr: *mut c_void,
    offset: u64,
    length: u64,
    privileges: u32,
    ep: *mut c_void,
    cookie: u64,
    rkey: *mut u32,
    address: *mut u64,
) -> c_int {
    from_result(|| {
        if rkey.is_null() || address.is_null() {
            return Err(EINVAL);
        }
        let r: Arc<Rmr> = Handles::get::<Rmr>(rmr)?;
        let l: Arc<Lmr> = Handles::get::<Lmr>(lmr)?;
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        let (k, a) = r.bind(
            &e,
            &l,
            offset,
            length,
            super::lmr::mem_privs(privileges)?,
            Completion::reported(cookie),
        )?;
        // SAFETY: `rkey` and `address` are not NULL (checked), so they are writable (this
        // function's `# Safety`).
        unsafe {
            put(rkey, k)?;
            put(address, a)?;
        }
        Ok(0)
    })
}

/// See `rkdapl_rmr_unbind` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `rmr` and `ep` may be any value; one that is not a live handle
/// of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_rmr_unbind(
    rmr: *mut c_void,
    ep: *mut c_void,
    cookie: u64,
) -> c_int {
    from_result(|| {
        let r: Arc<Rmr> = Handles::get::<Rmr>(rmr)?;
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        r.unbind(&e, cookie)?;
        Ok(0)
    })
}

/// See `rkdapl_rmr_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `rmr` may be any value; one that is not a live RMR handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_rmr_free(rmr: *mut c_void) -> c_int {
    from_result(|| {
        // A grant left ends with the RMR's last reference, and makes its LMR free-able: gone
        // before this returns.
        Handles::remove_sync::<Rmr>(rmr)?.free();
        Ok(0)
    })
}

/// See `rkdapl_ep_pooled_rmr_bind` in `include/rkdapl.h`.
///
/// # Safety
///
/// `rkey` and `address` are each NULL or valid for a write of a `u32` and a `u64`. `ep` and
/// `lmr` may be any value: one that is not a live handle of its kind is refused with
/// `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_pooled_rmr_bind(
    ep: *mut c_void,
    lmr: *mut c_void,
    offset: u64,
    length: u64,
    privileges: u32,
    cookie: u64,
    rkey: *mut u32,
    address: *mut u64,
) -> c_int {
    from_result(|| {
        if rkey.is_null() || address.is_null() {
            return Err(EINVAL);
        }
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        let l: Arc<Lmr> = Handles::get::<Lmr>(lmr)?;
        let (k, a) = e.bind_pooled_rmr(
            &l,
            offset,
            length,
            super::lmr::mem_privs(privileges)?,
            Completion::reported(cookie),
        )?;
        // SAFETY: `rkey` and `address` are not NULL (checked), so they are writable (this
        // function's `# Safety`).
        unsafe {
            put(rkey, k)?;
            put(address, a)?;
        }
        Ok(0)
    })
}

/// See `rkdapl_ep_pooled_rmr_unbind` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `ep` may be any value; one that is not a live EP handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_pooled_rmr_unbind(
    ep: *mut c_void,
    rkey: u32,
    cookie: u64,
) -> c_int {
    from_result(|| {
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        e.unbind_pooled_rmr(rkey, cookie)?;
        Ok(0)
    })
}
