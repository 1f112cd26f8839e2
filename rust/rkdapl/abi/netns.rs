// SPDX-License-Identifier: GPL-2.0

//! C entry points of IAs in a given network namespace: open by device name or by local address
//! of that namespace (`__rkdapl_ia_open_net`, `__rkdapl_ia_open_addr_net`).

use super::ia::open;
use crate::{
    adapters, bindings,
    rdma::cm::{NetNs, SockAddr},
};
use kernel::{error::from_result, prelude::*};

/// See `__rkdapl_ia_open_net` in `include/rkdapl.h` (`rkdapl_ia_open_net`, a macro, passes
/// `KBUILD_MODNAME` as `owner`).
///
/// # Safety
///
/// `net` is NULL or a network namespace the caller holds a reference to for the call; `name`
/// and `owner` are each NULL or a NUL-terminated string readable for the call; `ia` is NULL or
/// valid for a write of a pointer.
#[no_mangle]
pub(crate) unsafe extern "C" fn __rkdapl_ia_open_net(
    net: *mut bindings::net,
    name: *const c_char,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    from_result(|| {
        // SAFETY: `net` is NULL (refused) or held by the caller for the call (this function's
        // `# Safety`); the IA takes its own reference.
        let net = unsafe { NetNs::from_raw(net) }?;
        if name.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `name` is not NULL (checked), so it is a NUL-terminated string readable for
        // the call (this function's `# Safety`).
        let name = unsafe { CStr::from_char_ptr(name) };
        // SAFETY: `owner` and `ia` are as this function's `# Safety` says.
        unsafe { open(ia, owner, |owner| adapters::open_in(&net, name, owner)) }
    })
}

/// See `__rkdapl_ia_open_addr_net` in `include/rkdapl.h` (`rkdapl_ia_open_addr_net`, a macro,
/// passes `KBUILD_MODNAME` as `owner`).
///
/// # Safety
///
/// `net` is NULL or a network namespace the caller holds a reference to for the call; `addr`
/// is NULL or points to a readable `struct sockaddr` whose family field is readable and, if it
/// says `AF_INET` or `AF_INET6`, to a whole readable `sockaddr_in` or `sockaddr_in6`; `owner`
/// is NULL or a NUL-terminated string readable for the call; `ia` is NULL or valid for a write
/// of a pointer.
#[no_mangle]
pub(crate) unsafe extern "C" fn __rkdapl_ia_open_addr_net(
    net: *mut bindings::net,
    addr: *const bindings::sockaddr,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    from_result(|| {
        // SAFETY: As in `__rkdapl_ia_open_net`.
        let net = unsafe { NetNs::from_raw(net) }?;
        // SAFETY: A non-NULL `addr` points to a `sockaddr_in` or `sockaddr_in6`, as its family
        // says (this function's `# Safety`); `from_raw` refuses NULL and other families.
        let addr = unsafe { SockAddr::from_raw(addr) }?;
        // SAFETY: `owner` and `ia` are as this function's `# Safety` says.
        unsafe {
            open(ia, owner, |owner| {
                adapters::open_by_addr_in(&net, &addr, owner)
            })
        }
    })
}
