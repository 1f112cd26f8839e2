// SPDX-License-Identifier: GPL-2.0

//! C entry points of the LMR: create (over a kernel buffer, pages or a scatterlist), allocate,
//! DMA sync, free.

use super::{handle::Handles, publish, put, Object};
use crate::{
    bindings,
    rdma::{bound::Bound, mr::DmaRegion},
};
use crate::{
    lmr::{Lmr, MemPriv, MemPrivs},
    pz::Pz,
};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Lmr {
    /// A new LMR is not busy: its free is not refused.
    fn unpublished(&self) {
        let _ = self.free();
    }
}

/// Makes an LMR of the PZ behind the handle `pz` with `make` (given the device, held bound,
/// and the PZ) and publishes it in `*lmr`. Without the IA's `live` mutex
/// ([`crate::ia::Ia::with_binding`]): the IA's registry refuses the LMR after device removal.
///
/// # Errors
///
/// `-EINVAL` for a bad handle or a NULL `lmr`, `-ENODEV` after device removal, `make`'s error.
///
/// # Safety
///
/// `lmr` is NULL or valid for a write of a pointer.
unsafe fn create(
    pz: *mut c_void,
    lmr: *mut *mut c_void,
    make: impl FnOnce(&Bound<'_>, Arc<Pz>) -> Result<Arc<Lmr>>,
) -> Result<c_int> {
    let pz: Arc<Pz> = Handles::get::<Pz>(pz)?;
    let ia = pz.ia.clone();
    if lmr.is_null() {
        return Err(EINVAL);
    }
    ia.with_binding(|dev| {
        let obj = make(dev, pz)?;
        // SAFETY: `lmr` is not NULL (checked), so writable (the caller's guarantee).
        unsafe { publish(obj, lmr) }
    })?;
    Ok(0)
}

/// `RKDAPL_MEM_*` (`enum rkdapl_mem_priv`) and the privilege each is.
const MEM_PRIVS: [(u32, MemPriv); 4] = [
    (1 << 0, MemPriv::LocalWrite),   // RKDAPL_MEM_LOCAL_WRITE
    (1 << 1, MemPriv::RemoteRead),   // RKDAPL_MEM_REMOTE_READ
    (1 << 2, MemPriv::RemoteWrite),  // RKDAPL_MEM_REMOTE_WRITE
    (1 << 3, MemPriv::RemoteAtomic), // RKDAPL_MEM_REMOTE_ATOMIC
];

/// The privileges a C caller's mask of `RKDAPL_MEM_*` names.
///
/// # Errors
///
/// `-EINVAL` for a bit that is none of them.
pub(super) fn mem_privs(bits: u32) -> Result<MemPrivs> {
    let mut p = MemPrivs::empty();
    let mut known = 0;
    for (c, m) in MEM_PRIVS {
        known |= c;
        if bits & c != 0 {
            p |= m;
        }
    }
    if bits & !known != 0 {
        return Err(EINVAL);
    }
    Ok(p)
}

/// See `rkdapl_lmr_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `addr` is NULL or the start of `length` bytes of kernel memory (linear map or vmalloc) that
/// stay allocated until `rkdapl_lmr_free` of the new LMR returns 0; `lmr` is NULL or valid for
/// a write of a pointer. `pz` may be any value: one that is not a live PZ handle is refused
/// with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_create(
    pz: *mut c_void,
    addr: *mut c_void,
    length: u64,
    privileges: u32,
    lmr: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        if addr.is_null() || length == 0 || lmr.is_null() {
            return Err(EINVAL);
        }
        let len = usize::try_from(length).map_err(|_| EINVAL)?;
        let make = |dev: &Bound<'_>, pz| {
            // SAFETY: The buffer stays allocated until `rkdapl_lmr_free` returns (this
            // function's `# Safety`), which drops the region.
            let region = unsafe { DmaRegion::new(dev, addr as usize, len) }?;
            Lmr::new(pz, region, mem_privs(privileges)?)
        };
        // SAFETY: `lmr` is writable (this function's `# Safety`).
        unsafe { create(pz, lmr, make) }
    })
}

/// See `rkdapl_lmr_create_pages` in `include/rkdapl.h`.
///
/// # Safety
///
/// `pages` is NULL or points to `npages` readable page pointers, and the pages the region
/// covers stay allocated until `rkdapl_lmr_free` of the new LMR returns 0; `lmr` is NULL or
/// valid for a write of a pointer. `pz` may be any value: one that is not a live PZ handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_create_pages(
    pz: *mut c_void,
    pages: *const *mut bindings::page,
    npages: u32,
    offset: u32,
    length: u64,
    privileges: u32,
    lmr: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        if pages.is_null() || npages == 0 {
            return Err(EINVAL);
        }
        let len = usize::try_from(length).map_err(|_| EINVAL)?;
        // SAFETY: `pages` is not NULL (checked), so it points to `npages` readable page
        // pointers (this function's `# Safety`), read during this call only.
        let pages = unsafe { core::slice::from_raw_parts(pages, npages as usize) };
        let make = |dev: &Bound<'_>, pz| {
            // SAFETY: The pages stay allocated until `rkdapl_lmr_free` returns (this
            // function's `# Safety`), which drops the region.
            let region = unsafe { DmaRegion::from_pages(dev, pages, offset as usize, len) }?;
            Lmr::new(pz, region, mem_privs(privileges)?)
        };
        // SAFETY: `lmr` is NULL or writable (this function's `# Safety`).
        unsafe { create(pz, lmr, make) }
    })
}

/// See `rkdapl_lmr_create_sg` in `include/rkdapl.h`.
///
/// # Safety
///
/// `sgl` is NULL or a valid scatterlist of at least `nents` entries for the call, whose pages
/// stay allocated until `rkdapl_lmr_free` of the new LMR returns 0; `lmr` is NULL or valid for
/// a write of a pointer. `pz` may be any value: one that is not a live PZ handle is refused
/// with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_create_sg(
    pz: *mut c_void,
    sgl: *mut bindings::scatterlist,
    nents: u32,
    privileges: u32,
    lmr: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        let make = |dev: &Bound<'_>, pz| {
            // SAFETY: `sgl` is NULL or a scatterlist of `nents` entries whose pages stay
            // allocated until `rkdapl_lmr_free` returns (this function's `# Safety`);
            // `from_sg` refuses NULL.
            let region = unsafe { DmaRegion::from_sg(dev, sgl, nents as usize) }?;
            Lmr::new(pz, region, mem_privs(privileges)?)
        };
        // SAFETY: `lmr` is NULL or writable (this function's `# Safety`).
        unsafe { create(pz, lmr, make) }
    })
}

/// See `rkdapl_lmr_alloc` in `include/rkdapl.h`.
///
/// # Safety
///
/// `addr` and `lmr` are each NULL or valid for a write of a pointer. `pz` may be any value:
/// one that is not a live PZ handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_alloc(
    pz: *mut c_void,
    length: u64,
    privileges: u32,
    addr: *mut *mut c_void,
    lmr: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        if addr.is_null() {
            return Err(EINVAL);
        }
        // Checked before the PZ handle, as always.
        Lmr::check_alloc(length)?;
        let mut at = 0usize;
        let make = |dev: &Bound<'_>, pz| {
            // The C caller reaches the memory through its address.
            let lmr = Lmr::alloc_for_c(pz, dev, length, mem_privs(privileges)?)?;
            at = lmr.cpu_addr.unwrap_or(0);
            Ok(lmr)
        };
        // SAFETY: `lmr` is NULL or writable (this function's `# Safety`).
        unsafe { create(pz, lmr, make) }?;
        // SAFETY: `addr` is not NULL (checked), so it is writable (this function's `# Safety`).
        unsafe { put(addr, at as *mut c_void) }?;
        Ok(0)
    })
}

/// See `rkdapl_lmr_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `lmr` may be any value; one that is not a live LMR handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_free(lmr: *mut c_void) -> c_int {
    from_result(|| {
        // The handle stays when the LMR refuses (-EBUSY).
        Handles::get::<Lmr>(lmr)?.free()?;
        // The LMR's last reference unmaps the consumer's memory: gone before this returns.
        Handles::remove_sync::<Lmr>(lmr)?;
        Ok(0)
    })
}

/// See `rkdapl_lmr_sync_rdma_read` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `lmr` may be any value; one that is not a live LMR handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_sync_rdma_read(
    lmr: *mut c_void,
    offset: u64,
    length: u64,
) -> c_int {
    from_result(|| {
        Handles::get::<Lmr>(lmr)?.sync_rdma_read(offset, length)?;
        Ok(0)
    })
}

/// See `rkdapl_lmr_sync_rdma_write` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `lmr` may be any value; one that is not a live LMR handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_lmr_sync_rdma_write(
    lmr: *mut c_void,
    offset: u64,
    length: u64,
) -> c_int {
    from_result(|| {
        Handles::get::<Lmr>(lmr)?.sync_rdma_write(offset, length)?;
        Ok(0)
    })
}
