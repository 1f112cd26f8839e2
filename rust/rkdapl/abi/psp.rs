// SPDX-License-Identifier: GPL-2.0

//! C entry points of the PSP (create, free) and of the CRs it receives (accept, reject).

use super::{handle::Handles, private_data, publish_live, put, Object};
use crate::bindings;
use crate::evd::refuse_in_upcall;
use crate::{
    ep::Ep,
    evd::Evd,
    ia::Ia,
    psp::{Cr, CrPublisher, Psp},
};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Psp {
    fn unpublished(&self) {
        self.free();
    }
}

/// The C ABI hands CRs out as handles.
struct CrHandles;

impl CrPublisher for CrHandles {
    fn publish(&self, cr: Arc<Cr>) -> Result<usize> {
        Handles::insert(cr).map(|h| h as usize)
    }

    fn retract(&self, h: usize) -> Option<Arc<Cr>> {
        Handles::remove::<Cr>(h as *const c_void).ok()
    }
}

/// See `rkdapl_psp_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `psp` is NULL or valid for a write of a pointer. `ia` and `evd` may be any value: one that
/// is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_psp_create(
    ia: *mut c_void,
    port: u16,
    backlog: u32,
    evd: *mut c_void,
    psp: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        let ia: Arc<Ia> = Handles::get::<Ia>(ia)?;
        let evd: Arc<Evd> = Handles::get::<Evd>(evd)?;
        let crs: Arc<dyn CrPublisher> = Arc::new(CrHandles, GFP_KERNEL)?;
        // SAFETY: `psp` is NULL or writable (this function's `# Safety`).
        unsafe { publish_live(&ia, psp, |_| Psp::new(ia.clone(), port, backlog, evd, crs)) }?;
        Ok(0)
    })
}

/// See `rkdapl_psp_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `psp` may be any value; one that is not a live PSP handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_psp_free(psp: *mut c_void) -> c_int {
    from_result(|| {
        Handles::get::<Psp>(psp)?;
        refuse_in_upcall()?;
        Handles::remove::<Psp>(psp)?.free();
        Ok(0)
    })
}

/// See `rkdapl_cr_accept` in `include/rkdapl.h`.
///
/// # Safety
///
/// `pdata` is NULL or valid for reads of `pdata_len` bytes. `cr` and `ep` may be any value:
/// one that is not a live handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_cr_accept(
    cr: *mut c_void,
    ep: *mut c_void,
    pdata: *const c_void,
    pdata_len: u32,
) -> c_int {
    from_result(|| {
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        // SAFETY: `pdata` is NULL or `pdata_len` readable bytes (this function's `# Safety`).
        let pdata = unsafe { private_data(pdata, pdata_len) }?;
        let c: Arc<Cr> = Handles::get::<Cr>(cr)?;
        // Before the CR is consumed, so the consumer can still accept it on another EP or
        // reject it.
        c.can_accept(&e)?;
        Handles::remove::<Cr>(cr)?;
        c.accept(cr as usize, &e, &pdata)?;
        Ok(0)
    })
}

/// `struct rkdapl_cr_param`.
#[repr(C)]
pub(crate) struct CrParam {
    remote_addr: bindings::__kernel_sockaddr_storage,
    local_port: u16,
    reserved: [u16; 3],
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::offset_of!(CrParam, local_port) == 128);
    assert!(core::mem::size_of::<CrParam>() == 136);
};

/// See `rkdapl_cr_query` in `include/rkdapl.h`.
///
/// # Safety
///
/// `param` is NULL or valid for a write of a `struct rkdapl_cr_param`. `cr` may be any value:
/// one that is not a live CR handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_cr_query(cr: *mut c_void, param: *mut CrParam) -> c_int {
    from_result(|| {
        let c: Arc<Cr> = Handles::get::<Cr>(cr)?;
        let (peer, local_port) = c.peer()?;
        let p = CrParam {
            remote_addr: super::ep::sockaddr_storage(Some(peer)),
            local_port,
            reserved: [0; 3],
        };
        // SAFETY: `param` is NULL or writable (this function's `# Safety`).
        unsafe { put(param, p) }?;
        Ok(0)
    })
}

/// See `rkdapl_cr_reject` in `include/rkdapl.h`.
///
/// # Safety
///
/// `pdata` is NULL or valid for reads of `pdata_len` bytes. `cr` may be any value: one that is
/// not a live CR handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_cr_reject(
    cr: *mut c_void,
    pdata: *const c_void,
    pdata_len: u32,
) -> c_int {
    from_result(|| {
        // SAFETY: `pdata` is NULL or `pdata_len` readable bytes (this function's `# Safety`).
        let pdata = unsafe { private_data(pdata, pdata_len) }?;
        Handles::remove::<Cr>(cr)?.reject(cr as usize, &pdata)?;
        Ok(0)
    })
}
