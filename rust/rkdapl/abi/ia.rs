// SPDX-License-Identifier: GPL-2.0

//! C entry points of the IA: open (by name, address or netdev), query, ports, async EVD, close.

use super::{handle::Handles, publish, put, Object};
use crate::{
    adapters,
    evd::Evd,
    ia::{Cap, Ia, IaAttr, PortAttr},
};
use crate::{
    bindings,
    rdma::cm::{NetNs, SockAddr},
    rdma::device::{Device, Transport},
};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Ia {
    fn unpublished(&self) {
        self.close();
    }
}

/// The body of the `__rkdapl_ia_open*` calls: opens an IA for the module `owner` with `by`
/// and publishes it in `*ia`.
///
/// # Errors
///
/// `-EINVAL` for a NULL `owner` or `ia` (checked before anything is opened), `by`'s error or
/// [`publish`]'s.
///
/// # Safety
///
/// `owner` is NULL or a NUL-terminated string readable for the call; `ia` is NULL or valid for
/// a write of a pointer.
pub(super) unsafe fn open(
    ia: *mut *mut c_void,
    owner: *const c_char,
    by: impl FnOnce(&CStr) -> Result<Arc<Ia>>,
) -> Result<c_int> {
    if owner.is_null() || ia.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `owner` is not NULL (checked), so it is a NUL-terminated string readable for the
    // call (the caller's guarantee); the IA copies it.
    let owner = unsafe { CStr::from_char_ptr(owner) };
    let opened = by(owner)?;
    // SAFETY: `ia` is not NULL (checked), so it is writable (the caller's guarantee).
    unsafe { publish(opened, ia) }?;
    Ok(0)
}

/// See `__rkdapl_ia_open` in `include/rkdapl.h` (`rkdapl_ia_open`, a macro, passes
/// `KBUILD_MODNAME` as `owner`).
///
/// # Safety
///
/// `name` and `owner` are each NULL or a NUL-terminated string readable for the call; `ia` is
/// NULL or valid for a write of a pointer.
#[no_mangle]
pub(crate) unsafe extern "C" fn __rkdapl_ia_open(
    name: *const c_char,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    from_result(|| {
        if name.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `name` is not NULL (checked), so it is a NUL-terminated string readable for
        // the call (this function's `# Safety`).
        let name = unsafe { CStr::from_char_ptr(name) };
        // SAFETY: `owner` and `ia` are as this function's `# Safety` says.
        unsafe { open(ia, owner, |owner| adapters::open(name, owner)) }
    })
}

/// See `__rkdapl_ia_open_addr` in `include/rkdapl.h` (`rkdapl_ia_open_addr`, a macro, passes
/// `KBUILD_MODNAME` as `owner`).
///
/// # Safety
///
/// `addr` is NULL or points to a readable `struct sockaddr` whose family field is readable and,
/// if it says `AF_INET` or `AF_INET6`, to a whole readable `sockaddr_in` or `sockaddr_in6`;
/// `owner` is NULL or a NUL-terminated string readable for the call; `ia` is NULL or valid for
/// a write of a pointer.
#[no_mangle]
pub(crate) unsafe extern "C" fn __rkdapl_ia_open_addr(
    addr: *const bindings::sockaddr,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    from_result(|| {
        let by_addr = |owner: &CStr| {
            // SAFETY: A non-NULL `addr` points to a `sockaddr_in` or `sockaddr_in6`, as its
            // family says (this function's `# Safety`); `from_raw` refuses NULL and other
            // families.
            let addr = unsafe { SockAddr::from_raw(addr) }?;
            adapters::open_by_addr(&addr, owner)
        };
        // SAFETY: `owner` and `ia` are as this function's `# Safety` says.
        unsafe { open(ia, owner, by_addr) }
    })
}

/// See `__rkdapl_ia_open_netdev` in `include/rkdapl.h` (`rkdapl_ia_open_netdev`, a macro,
/// passes `KBUILD_MODNAME` as `owner`).
///
/// # Safety
///
/// `ndev` is NULL or a `struct net_device` the caller holds a reference to for the call;
/// `owner` is NULL or a NUL-terminated string readable for the call; `ia` is NULL or valid for
/// a write of a pointer.
#[no_mangle]
pub(crate) unsafe extern "C" fn __rkdapl_ia_open_netdev(
    ndev: *mut bindings::net_device,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    from_result(|| {
        let by_netdev = |owner: &CStr| {
            if ndev.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: `ndev` is not NULL (checked), so the caller holds a reference to it for
            // the call (this function's `# Safety`).
            let (dev, net) = unsafe { (Device::get_by_netdev(ndev), NetNs::of_netdev(ndev)) };
            adapters::open_netdev(dev, &net, owner)
        };
        // SAFETY: `owner` and `ia` are as this function's `# Safety` says.
        unsafe { open(ia, owner, by_netdev) }
    })
}

/// `struct rkdapl_port_attr`: a [`PortAttr`] as C reads it.
#[repr(C)]
pub(crate) struct CPortAttr {
    port: u32,
    port_count: u32,
    /// `enum rkdapl_port_state` (0 for a state IB does not define).
    state: u32,
    phys_state: u32,
    active_mtu: u32,
    max_mtu: u32,
    max_msg_size: u32,
    link_layer: u32,
}

// The C side checks the same size (`exports.c`).
const _: () = assert!(core::mem::size_of::<CPortAttr>() == 32);

impl From<&PortAttr> for CPortAttr {
    fn from(a: &PortAttr) -> CPortAttr {
        CPortAttr {
            port: a.port,
            port_count: a.port_count,
            // `PortState`'s discriminants are `enum rkdapl_port_state`'s values.
            state: a.state.map_or(0, |s| s as u32),
            phys_state: u32::from(a.phys_state),
            active_mtu: a.active_mtu,
            max_mtu: a.max_mtu,
            max_msg_size: a.max_msg_size,
            link_layer: a.link_layer,
        }
    }
}

/// See `rkdapl_ia_query_port` in `include/rkdapl.h`.
///
/// # Safety
///
/// `attr` is NULL or valid for a write of a `struct rkdapl_port_attr`. `ia` may be any value:
/// one that is not a live IA handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ia_query_port(
    ia: *mut c_void,
    port: u32,
    attr: *mut CPortAttr,
) -> c_int {
    from_result(|| {
        let out = CPortAttr::from(&Handles::get::<Ia>(ia)?.query_port(port)?);
        // SAFETY: `attr` is NULL or writable (this function's `# Safety`).
        unsafe { put(attr, out) }?;
        Ok(0)
    })
}

/// See `rkdapl_ia_set_async_evd` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `ia` and `evd` may be any value; one that is not a live handle
/// of its kind (or NULL, for `evd`) is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ia_set_async_evd(
    ia: *mut c_void,
    evd: *mut c_void,
) -> c_int {
    from_result(|| {
        let ia: Arc<Ia> = Handles::get::<Ia>(ia)?;
        let e = if evd.is_null() {
            None
        } else {
            Some(Handles::get::<Evd>(evd)?)
        };
        ia.set_async_evd(e)?;
        Ok(0)
    })
}

/// See `rkdapl_ia_close` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `ia` may be any value; one that is not a live IA handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ia_close(ia: *mut c_void) -> c_int {
    from_result(|| {
        Handles::remove::<Ia>(ia)?.close();
        // What the consumer freed is released before this returns: its PDs, the device
        // references.
        Handles::drain_unless_in_upcall();
        Ok(0)
    })
}

/// `struct rkdapl_ia_attr`: an [`IaAttr`] as C reads it.
#[repr(C)]
pub(crate) struct CIaAttr {
    name: [u8; 64],
    max_mr_size: u64,
    max_dtos: u32,
    max_iov: u32,
    max_rdma_read_in: u32,
    max_rdma_read_out: u32,
    max_rmr_pages: u32,
    max_evd_qlen: u32,
    max_private_data: u32,
    reserved: u32,
    /// `enum rkdapl_transport`.
    transport: u32,
    /// `RKDAPL_CAP_*`.
    caps: u32,
    max_read_iov: u32,
    reserved2: u32,
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::size_of::<CIaAttr>() == 120);
    assert!(core::mem::offset_of!(CIaAttr, transport) == 104);
    assert!(core::mem::offset_of!(CIaAttr, max_read_iov) == 112);
};

/// `RKDAPL_CAP_*` and the cap each is.
const CAPS: [(u32, Cap); 5] = [
    (1 << 0, Cap::RdmaWriteImm),   // RKDAPL_CAP_RDMA_WRITE_IMM
    (1 << 1, Cap::RnrRetry),       // RKDAPL_CAP_RNR_RETRY
    (1 << 2, Cap::RetryCount),     // RKDAPL_CAP_RETRY_COUNT
    (1 << 3, Cap::SendInvalidate), // RKDAPL_CAP_SEND_INVALIDATE
    (1 << 4, Cap::Atomics),        // RKDAPL_CAP_ATOMICS
];

impl From<&IaAttr> for CIaAttr {
    fn from(a: &IaAttr) -> CIaAttr {
        let caps = CAPS
            .iter()
            .filter(|(_, c)| a.caps.contains(*c))
            .fold(0, |m, (bit, _)| m | bit);
        CIaAttr {
            name: a.name,
            max_mr_size: a.max_mr_size,
            max_dtos: a.max_dtos,
            max_iov: a.max_iov,
            max_rdma_read_in: a.max_rdma_read_in,
            max_rdma_read_out: a.max_rdma_read_out,
            max_rmr_pages: a.max_rmr_pages,
            max_evd_qlen: a.max_evd_qlen,
            max_private_data: a.max_private_data,
            reserved: 0,
            // `RKDAPL_TRANSPORT_IB`, `_ROCE`, `_IWARP`.
            transport: match a.transport {
                Transport::Ib => 1,
                Transport::Roce => 2,
                Transport::Iwarp => 3,
            },
            caps,
            max_read_iov: a.max_read_iov,
            reserved2: 0,
        }
    }
}

/// See `rkdapl_ia_query` in `include/rkdapl.h`.
///
/// # Safety
///
/// `attr` is NULL or valid for a write of a `struct rkdapl_ia_attr`. `ia` may be any value:
/// one that is not a live IA handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_ia_query(ia: *mut c_void, attr: *mut CIaAttr) -> c_int {
    from_result(|| {
        let out = CIaAttr::from(&Handles::get::<Ia>(ia)?.query()?);
        // SAFETY: `attr` is NULL or writable (this function's `# Safety`).
        unsafe { put(attr, out) }?;
        Ok(0)
    })
}
