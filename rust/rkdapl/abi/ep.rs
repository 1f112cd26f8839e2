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
    attr: *const CEpAttr,
    ep: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        let pz: Arc<Pz> = Handles::get::<Pz>(pz)?;
        let dto: Arc<Evd> = Handles::get::<Evd>(dto_evd)?;
        let conn: Arc<Evd> = Handles::get::<Evd>(conn_evd)?;
        // SAFETY: `attr` is NULL or points to a readable `struct rkdapl_ep_attr` (this
        // function's `# Safety`).
        let attr = unsafe { read_attr(attr) };
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
    // SAFETY: This function's `# Safety` is `rkdapl_ep_connect_from`'s with a NULL `local`.
    unsafe { rkdapl_ep_connect_from(ep, core::ptr::null(), remote, timeout_ms, pdata, pdata_len) }
}

/// See `rkdapl_ep_connect_from` in `include/rkdapl.h`.
///
/// # Safety
///
/// `local` and `remote` are each NULL or point to a readable `struct sockaddr` whose family
/// field is readable and, if it says `AF_INET` or `AF_INET6`, to a whole readable
/// `sockaddr_in` or `sockaddr_in6`; `pdata` is NULL or valid for reads of `pdata_len` bytes.
/// `ep` may be any value: one that is not a live EP handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ep_connect_from(
    ep: *mut c_void,
    local: *const bindings::sockaddr,
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
        let src = if local.is_null() {
            None
        } else {
            // SAFETY: As `remote` above, for `local` (this function's `# Safety`).
            Some(unsafe { SockAddr::from_raw(local) }?)
        };
        // SAFETY: `pdata` is NULL or `pdata_len` readable bytes (this function's `# Safety`).
        let pdata = unsafe { private_data(pdata, pdata_len) }?;
        e.connect(src.as_ref(), &dst, timeout_ms, &pdata)?;
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

/// The first part of `struct rkdapl_ep_attr`: an [`EpAttr`] as C passes it in (all that
/// [`rkdapl_ep_create`] and `rkdapl_ep_create_with_srq` read) and reads it back.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CEpAttr {
    max_request_dtos: u32,
    max_recv_dtos: u32,
    max_request_iov: u32,
    max_recv_iov: u32,
    max_rdma_read_in: u32,
    max_rdma_read_out: u32,
    retry_count: u32,
    rnr_retry_count: u32,
    max_pooled_rmrs: u32,
}

/// `struct rkdapl_ep_attr` as a whole: the attributes [`rkdapl_ep_create`] reads (the first
/// part) and the peer's address and path MTU [`rkdapl_ep_query`] adds.
#[repr(C)]
pub(crate) struct CEpAttrQuery {
    attr: CEpAttr,
    remote_addr: bindings::__kernel_sockaddr_storage,
    path_mtu: u32,
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::size_of::<CEpAttr>() == 36);
    assert!(core::mem::offset_of!(CEpAttr, max_rdma_read_in) == 16);
    assert!(core::mem::offset_of!(CEpAttr, rnr_retry_count) == 28);
    assert!(core::mem::offset_of!(CEpAttr, max_pooled_rmrs) == 32);
    assert!(core::mem::offset_of!(CEpAttrQuery, remote_addr) == 40);
    assert!(core::mem::offset_of!(CEpAttrQuery, path_mtu) == 168);
    assert!(core::mem::size_of::<CEpAttrQuery>() == 176);
};

impl From<&CEpAttr> for EpAttr {
    fn from(c: &CEpAttr) -> EpAttr {
        EpAttr {
            max_request_dtos: c.max_request_dtos,
            max_recv_dtos: c.max_recv_dtos,
            max_request_iov: c.max_request_iov,
            max_recv_iov: c.max_recv_iov,
            max_rdma_read_in: c.max_rdma_read_in,
            max_rdma_read_out: c.max_rdma_read_out,
            retry_count: c.retry_count,
            rnr_retry_count: c.rnr_retry_count,
            max_pooled_rmrs: c.max_pooled_rmrs,
        }
    }
}

impl From<&EpAttr> for CEpAttr {
    fn from(a: &EpAttr) -> CEpAttr {
        CEpAttr {
            max_request_dtos: a.max_request_dtos,
            max_recv_dtos: a.max_recv_dtos,
            max_request_iov: a.max_request_iov,
            max_recv_iov: a.max_recv_iov,
            max_rdma_read_in: a.max_rdma_read_in,
            max_rdma_read_out: a.max_rdma_read_out,
            retry_count: a.retry_count,
            rnr_retry_count: a.rnr_retry_count,
            max_pooled_rmrs: a.max_pooled_rmrs,
        }
    }
}

/// The attributes C asks an EP to be created with: `attr`'s first part, or all defaults
/// (zeroes) for a NULL `attr`.
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct rkdapl_ep_attr` (its first part is read).
pub(super) unsafe fn read_attr(attr: *const CEpAttr) -> EpAttr {
    if attr.is_null() {
        return EpAttr::default();
    }
    // SAFETY: `attr` is not NULL (checked), so it points to a readable
    // `struct rkdapl_ep_attr` (this function's `# Safety`), whose first part is a `CEpAttr`.
    EpAttr::from(&unsafe { attr.read() })
}

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
pub(crate) unsafe extern "C" fn rkdapl_ep_query(ep: *mut c_void, attr: *mut CEpAttrQuery) -> c_int {
    from_result(|| {
        let e: Arc<Ep> = Handles::get::<Ep>(ep)?;
        let q = CEpAttrQuery {
            attr: CEpAttr::from(&e.query()),
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

#[kunit_tests(rkdapl_abi_ep)]
mod tests {
    use super::*;

    /// An `EpAttr` whose fields all differ.
    fn distinct() -> EpAttr {
        EpAttr {
            max_request_dtos: 1,
            max_recv_dtos: 2,
            max_request_iov: 3,
            max_recv_iov: 4,
            max_rdma_read_in: 5,
            max_rdma_read_out: 6,
            retry_count: 7,
            rnr_retry_count: 8,
            max_pooled_rmrs: 9,
        }
    }

    #[test]
    fn c_ep_attr_converts_each_field() {
        let c = CEpAttr::from(&distinct());
        let fields = [
            c.max_request_dtos,
            c.max_recv_dtos,
            c.max_request_iov,
            c.max_recv_iov,
            c.max_rdma_read_in,
            c.max_rdma_read_out,
            c.retry_count,
            c.rnr_retry_count,
            c.max_pooled_rmrs,
        ];
        assert_eq!(fields, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(EpAttr::from(&c), distinct());
    }

    #[test]
    fn read_attr_reads_the_first_part_or_takes_defaults() {
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { read_attr(core::ptr::null()) }, EpAttr::default());
        let q = CEpAttrQuery {
            attr: CEpAttr::from(&distinct()),
            remote_addr: sockaddr_storage(None),
            path_mtu: 1024,
        };
        // SAFETY: `q` is a readable `struct rkdapl_ep_attr`, its first part at its start.
        let a = unsafe { read_attr(core::ptr::from_ref(&q).cast::<CEpAttr>()) };
        assert_eq!(a, distinct());
    }
}
