// SPDX-License-Identifier: GPL-2.0

//! C entry points of the EP: create, connect, disconnect, state, query, free.

use super::{handle::Handles, private_data, publish_live, put, Object};
use crate::evd::refuse_in_upcall;
use crate::{bindings, rdma::cm::SockAddr};
use crate::{
    ep::{Ep, EpAttr},
    evd::Evd,
    pz::Pz,
};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Ep {
    /// The handle is reported in the EP's events.
    fn published(&self, handle: usize) {
        self.set_handle(handle);
    }

    fn unpublished(&self) {
        self.free();
    }
}

/// See `rkdapl_ep_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct rkdapl_ep_attr`; `ep` is NULL or valid for a
/// write of a pointer. `pz`, `dto_evd` and `conn_evd` may be any value: one that is not a live
/// handle of its kind is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_create(
    pz: *mut c_void,
    dto_evd: *mut c_void,
    conn_evd: *mut c_void,
    attr: *const EpAttr,
    ep: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        let pz: Arc<Pz> = Handles::get::<Pz>(pz)?;
        let dto: Arc<Evd> = Handles::get::<Evd>(dto_evd)?;
        let conn: Arc<Evd> = Handles::get::<Evd>(conn_evd)?;
        let attr = if attr.is_null() {
            EpAttr::default()
        } else {
            // SAFETY: `attr` is not NULL (checked), so it points to a readable
            // `struct rkdapl_ep_attr` (this function's `# Safety`).
            unsafe { attr.read() }
        };
        let ia = pz.ia.clone();
        // SAFETY: `ep` is NULL or writable (this function's `# Safety`).
        unsafe { publish_live(&ia, ep, |dev| Ep::new(pz, dev, dto, conn, attr)) }?;
        Ok(0)
    })
}

/// See `rkdapl_ep_connect` in `include/rkdapl.h`.
///
/// # Safety
///
/// `remote` is NULL or points to a readable `struct sockaddr` whose family field is readable
/// and, if it says `AF_INET` or `AF_INET6`, to a whole readable `sockaddr_in` or
/// `sockaddr_in6`; `pdata` is NULL or valid for reads of `pdata_len` bytes. `ep` may be any
/// value: one that is not a live EP handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_connect(
    ep: *mut c_void,
    remote: *const bindings::sockaddr,
    timeout_ms: u32,
    pdata: *const c_void,
    pdata_len: u32,
) -> c_int {
    from_result(|| {
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        // SAFETY: A non-NULL `remote` points to a `sockaddr_in` or `sockaddr_in6`, as its
        // family says (this function's `# Safety`); `from_raw` refuses NULL and other families.
        let dst = unsafe { SockAddr::from_raw(remote) }?;
        // SAFETY: `pdata` is NULL or `pdata_len` readable bytes (this function's `# Safety`).
        let pdata = unsafe { private_data(pdata, pdata_len) }?;
        e.connect(&dst, timeout_ms, &pdata)?;
        Ok(0)
    })
}

/// See `rkdapl_ep_disconnect` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `ep` may be any value; one that is not a live EP handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_disconnect(ep: *mut c_void) -> c_int {
    from_result(|| {
        Handles::get::<Ep>(ep)?.disconnect()?;
        Ok(0)
    })
}

/// See `rkdapl_ep_get_state` in `include/rkdapl.h`.
///
/// # Safety
///
/// `state` is NULL or valid for a write of a `u32`. `ep` may be any value: one that is not a
/// live EP handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_get_state(ep: *mut c_void, state: *mut u32) -> c_int {
    from_result(|| {
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        // SAFETY: `state` is NULL or writable (this function's `# Safety`).
        unsafe { put(state, e.state() as u32) }?;
        Ok(0)
    })
}

/// `struct rkdapl_ep_attr` as a whole: the attributes [`rkdapl_ep_create`] reads (the first
/// part) and the peer's address [`rkdapl_ep_query`] adds.
#[repr(C)]
pub(crate) struct EpAttrQuery {
    attr: EpAttr,
    remote_addr: bindings::__kernel_sockaddr_storage,
    path_mtu: u32,
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::size_of::<EpAttr>() == 32);
    assert!(core::mem::offset_of!(EpAttrQuery, remote_addr) == 32);
    assert!(core::mem::offset_of!(EpAttrQuery, path_mtu) == 160);
    assert!(core::mem::size_of::<EpAttrQuery>() == 168);
};

/// The C form of a socket address: zeroes (`AF_UNSPEC`) for none.
pub(crate) fn sockaddr_storage(a: Option<SockAddr>) -> bindings::__kernel_sockaddr_storage {
    match a {
        // SAFETY: `as_ptr` points at `a`'s whole `sockaddr_storage` (`SockAddr` holds one),
        // readable for this call.
        Some(a) => unsafe {
            a.as_ptr()
                .cast::<bindings::__kernel_sockaddr_storage>()
                .read()
        },
        // SAFETY: All zeroes is a valid `sockaddr_storage` (family `AF_UNSPEC`).
        None => unsafe { core::mem::zeroed() },
    }
}

/// See `rkdapl_ep_query` in `include/rkdapl.h`.
///
/// # Safety
///
/// `attr` is NULL or valid for a write of a `struct rkdapl_ep_attr`. `ep` may be any value:
/// one that is not a live EP handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_query(ep: *mut c_void, attr: *mut EpAttrQuery) -> c_int {
    from_result(|| {
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        let q = EpAttrQuery {
            attr: e.query(),
            remote_addr: sockaddr_storage(e.peer()),
            path_mtu: e.path_mtu(),
        };
        // SAFETY: `attr` is NULL or writable (this function's `# Safety`).
        unsafe { put(attr, q) }?;
        Ok(0)
    })
}

/// See `rkdapl_ep_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `ep` may be any value; one that is not a live EP handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_free(ep: *mut c_void) -> c_int {
    from_result(|| {
        Handles::get::<Ep>(ep)?;
        refuse_in_upcall()?;
        Handles::remove::<Ep>(ep)?.free();
        Ok(0)
    })
}

/// See `rkdapl_ep_reset` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `ep` may be any value; one that is not a live EP handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_reset(ep: *mut c_void) -> c_int {
    from_result(|| {
        let ep = Handles::get::<Ep>(ep)?;
        refuse_in_upcall()?;
        ep.reset()?;
        Ok(0)
    })
}
