// SPDX-License-Identifier: GPL-2.0

//! The C ABI of rkdapl: the `extern "C"` functions `include/rkdapl.h` declares, exported with
//! `EXPORT_SYMBOL_GPL` by `exports.c`.
//!
//! Each function validates what C hands it (NULL pointers, handles, lengths, flags, state)
//! and answers a bad argument with a negative errno, then calls the safe provider code. This
//! file and [`handle`] are the only places of the provider that read C pointers.

pub(crate) mod handle;
pub(crate) mod inet;

// The trace events are not part of the C ABI; the data path still reaches them as `abi::trace`.
pub(crate) use crate::trace;

use crate::{
    dto::{DtoFlags, DtoOp, OneOrMore, SendDto, Segment},
    ep::{Ep, EpAttr},
    evd::{Evd, Event},
    ia::Ia,
    lmr::Lmr,
    psp::{Cr, Psp},
    pz::Pz,
    rmr::Rmr,
};
use handle::{Handles, Kind};
use kernel::{
    bindings,
    prelude::*,
    rdma::{cm::SockAddr, mr::DmaRegion},
    sync::Arc,
};

/// Largest IOV a DTO takes, in LMR triplets.
const MAX_IOV: u32 = 256;

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

/// `struct rkdapl_ia_attr`.
#[repr(C)]
pub(crate) struct IaAttr {
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
}

fn errno(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Stores `v` through the C out-pointer `out`.
fn put<T>(out: *mut T, v: T) -> Result {
    if out.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The caller of the C function passed `out` as a pointer to a writable `T`; it is
    // not NULL.
    unsafe { out.write(v) };
    Ok(())
}

/// Creates the handle for `obj` and stores it in `*out`; on failure nothing stays behind.
fn publish<T>(obj: Arc<T>, kind: Kind, out: *mut *mut c_void) -> Result<usize> {
    if out.is_null() {
        return Err(EINVAL);
    }
    let h = Handles::insert(obj, kind)?;
    put(out, h)?;
    Ok(h as usize)
}

/// Copies `len` bytes of private data from C.
fn private_data(p: *const c_void, len: u32) -> Result<KVec<u8>> {
    let mut v = KVec::new();
    if len == 0 {
        return Ok(v);
    }
    if p.is_null() || len as usize > crate::evd::MAX_PRIVATE_DATA {
        return Err(EINVAL);
    }
    // SAFETY: The C caller passes `len` readable bytes at `p` (not NULL, checked).
    let s = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len as usize) };
    v.extend_from_slice(s, GFP_KERNEL)?;
    Ok(v)
}

/// Turns a C IOV into segments of LMRs of `pz`.
fn segments(iov: *const LmrTriplet, num: u32, pz: &Arc<Pz>) -> Result<OneOrMore<Segment>> {
    if num > MAX_IOV || (num > 0 && iov.is_null()) {
        return Err(EINVAL);
    }
    let mut v = OneOrMore::Empty;
    for i in 0..num as usize {
        // SAFETY: The C caller passes `num` readable triplets at `iov` (not NULL, checked).
        let t = unsafe { iov.add(i).read() };
        let lmr: Arc<Lmr> = Handles::get(t.lmr, Kind::Lmr)?;
        if !Arc::ptr_eq(&lmr.pz, pz) {
            return Err(EXDEV);
        }
        let end = t.offset.checked_add(t.length).ok_or(ERANGE)?;
        if end > lmr.len {
            return Err(ERANGE);
        }
        v.push(
            Segment {
                lmr,
                offset: t.offset,
                length: t.length,
            },
            GFP_ATOMIC,
        )?;
    }
    Ok(v)
}

// ---------------------------------------------------------------------------------------------
// IA

/// See `rkdapl_ia_open` in `include/rkdapl.h` (a macro passing `KBUILD_MODNAME` as `owner`).
#[no_mangle]
pub(crate) extern "C" fn __rkdapl_ia_open(
    name: *const c_char,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    errno((|| {
        if name.is_null() || owner.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: The C caller passes a NUL-terminated device name (not NULL, checked).
        let name = unsafe { CStr::from_char_ptr(name) };
        // SAFETY: The C caller passes a NUL-terminated module name (not NULL, checked); it is
        // copied before the call returns.
        let owner = unsafe { CStr::from_char_ptr(owner) };
        publish(Ia::open(name, owner)?, Kind::Ia, ia).map(|_| ())
    })())
}

/// The NUL-terminated module name a C caller passes as `owner`.
fn owner_name<'a>(owner: *const c_char) -> Result<&'a CStr> {
    if owner.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The C caller passes a NUL-terminated module name (not NULL, checked); it is
    // copied before the call returns.
    Ok(unsafe { CStr::from_char_ptr(owner) })
}

/// See `rkdapl_ia_open_addr` in `include/rkdapl.h` (a macro passing `KBUILD_MODNAME`).
#[no_mangle]
pub(crate) extern "C" fn __rkdapl_ia_open_addr(
    addr: *const bindings::sockaddr,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    errno((|| {
        let owner = owner_name(owner)?;
        if ia.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: A non-NULL `addr` points to a `sockaddr_in` or `sockaddr_in6`, as its family
        // says (the C API's contract); `from_raw` refuses NULL and other families.
        let addr = unsafe { SockAddr::from_raw(addr) }?;
        publish(Ia::open_by_addr(&addr, owner)?, Kind::Ia, ia).map(|_| ())
    })())
}

/// See `rkdapl_ia_open_netdev` in `include/rkdapl.h` (a macro passing `KBUILD_MODNAME`).
#[no_mangle]
pub(crate) extern "C" fn __rkdapl_ia_open_netdev(
    ndev: *mut bindings::net_device,
    ia: *mut *mut c_void,
    owner: *const c_char,
) -> c_int {
    errno((|| {
        let owner = owner_name(owner)?;
        if ndev.is_null() || ia.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: The C caller holds a reference to `ndev` (not NULL, checked) for the call.
        let opened = unsafe { Ia::open_by_netdev(ndev, owner) }?;
        publish(opened, Kind::Ia, ia).map(|_| ())
    })())
}

/// `struct rkdapl_port_attr`.
#[repr(C)]
pub(crate) struct PortAttr {
    port: u32,
    port_count: u32,
    state: u32,
    phys_state: u32,
    active_mtu: u32,
    max_mtu: u32,
    max_msg_size: u32,
    link_layer: u32,
}

/// See `rkdapl_ia_query_port` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ia_query_port(
    ia: *mut c_void,
    port: u32,
    attr: *mut PortAttr,
) -> c_int {
    errno((|| {
        let ia: Arc<Ia> = Handles::get(ia, Kind::Ia)?;
        let (a, n) = ia.query_port(port)?;
        put(
            attr,
            PortAttr {
                port,
                port_count: n,
                state: a.state,
                phys_state: u32::from(a.phys_state),
                active_mtu: a.active_mtu,
                max_mtu: a.max_mtu,
                max_msg_size: a.max_msg_sz,
                link_layer: a.link_layer,
            },
        )
    })())
}

/// See `rkdapl_ia_set_async_evd` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ia_set_async_evd(ia: *mut c_void, evd: *mut c_void) -> c_int {
    errno((|| {
        let ia: Arc<Ia> = Handles::get(ia, Kind::Ia)?;
        let e = if evd.is_null() {
            None
        } else {
            let e: Arc<Evd> = Handles::get(evd, Kind::Evd)?;
            if !e.same_ia(&ia.async_slot) {
                return Err(EXDEV);
            }
            Some(e)
        };
        drop(ia.async_slot.set(e)?);
        Ok(())
    })())
}

/// See `rkdapl_ia_close` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ia_close(ia: *mut c_void) -> c_int {
    errno(Handles::remove::<Ia>(ia, Kind::Ia).map(drop))
}

/// See `rkdapl_ia_query` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ia_query(ia: *mut c_void, attr: *mut IaAttr) -> c_int {
    errno((|| {
        let ia: Arc<Ia> = Handles::get(ia, Kind::Ia)?;
        let a = ia.attrs();
        let mut out = IaAttr {
            name: [0; 64],
            max_mr_size: a.max_mr_size,
            max_dtos: a.max_qp_wr.min(4096),
            max_iov: a.max_send_sge.min(a.max_sge_rd),
            max_rdma_read_in: a.max_qp_rd_atom,
            max_rdma_read_out: a.max_qp_init_rd_atom,
            max_rmr_pages: a.max_fast_reg_page_list_len,
            max_evd_qlen: crate::evd::MAX_EVD_QLEN,
            max_private_data: crate::evd::MAX_PRIVATE_DATA as u32,
            reserved: 0,
        };
        // A removed device's IA answers -ENODEV: the consumer should free its objects.
        if ia.is_removed() {
            return Err(ENODEV);
        }
        let n = ia.dev_name.to_bytes();
        let n = &n[..n.len().min(63)];
        out.name[..n.len()].copy_from_slice(n);
        put(attr, out)
    })())
}

// ---------------------------------------------------------------------------------------------
// PZ

/// See `rkdapl_pz_create` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_pz_create(ia: *mut c_void, pz: *mut *mut c_void) -> c_int {
    errno((|| {
        if pz.is_null() {
            return Err(EINVAL);
        }
        let ia: Arc<Ia> = Handles::get(ia, Kind::Ia)?;
        // Created and published while the IA is live: a device removal either sees the new
        // object in the handle table or makes this call fail with -ENODEV. Likewise below.
        let live = ia.live()?;
        let dev = live.as_ref().ok_or(ENODEV)?;
        publish(Pz::new(ia.clone(), dev)?, Kind::Pz, pz).map(|_| ())
    })())
}

/// See `rkdapl_pz_free` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_pz_free(pz: *mut c_void) -> c_int {
    errno(Handles::remove::<Pz>(pz, Kind::Pz).map(drop))
}

// ---------------------------------------------------------------------------------------------
// LMR

/// See `rkdapl_lmr_create` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_create(
    pz: *mut c_void,
    addr: *mut c_void,
    length: u64,
    privileges: u32,
    lmr: *mut *mut c_void,
) -> c_int {
    errno((|| {
        if addr.is_null() || length == 0 || lmr.is_null() {
            return Err(EINVAL);
        }
        let len = usize::try_from(length).map_err(|_| EINVAL)?;
        let pz: Arc<Pz> = Handles::get(pz, Kind::Pz)?;
        let ia = pz.ia.clone();
        let live = ia.live()?;
        let dev = live.as_ref().ok_or(ENODEV)?;
        // SAFETY: The C caller promises (kernel-doc of `rkdapl_lmr_create`) that the buffer
        // stays allocated until `rkdapl_lmr_free` returns, which drops the region.
        let region = unsafe { DmaRegion::new(dev, addr as usize, len) }?;
        // SAFETY: As above: the region maps the buffer at `addr`, which stays allocated until
        // the LMR is freed.
        let l = unsafe { Lmr::with_cpu_addr(pz, region, privileges, addr as usize) }?;
        // Published while the IA is live, so a device removal sees the new LMR.
        publish(l, Kind::Lmr, lmr).map(|_| ())
    })())
}

/// The device of `pz`'s IA, held live for `f`, which makes the region of a new LMR; the LMR
/// is published while the IA is live, so a device removal sees it.
fn lmr_create_with(
    pz: *mut c_void,
    lmr: *mut *mut c_void,
    privileges: u32,
    f: impl FnOnce(&kernel::rdma::device::Device) -> Result<(DmaRegion, Option<KVVec<u8>>)>,
) -> Result<usize> {
    if lmr.is_null() {
        return Err(EINVAL);
    }
    let pz: Arc<Pz> = Handles::get(pz, Kind::Pz)?;
    let ia = pz.ia.clone();
    let live = ia.live()?;
    let dev = live.as_ref().ok_or(ENODEV)?;
    let (region, buf) = f(dev)?;
    publish(Lmr::with_buffer(pz, region, privileges, buf)?, Kind::Lmr, lmr)
}

/// See `rkdapl_lmr_create_pages` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_create_pages(
    pz: *mut c_void,
    pages: *const *mut bindings::page,
    npages: u32,
    offset: u32,
    length: u64,
    privileges: u32,
    lmr: *mut *mut c_void,
) -> c_int {
    errno((|| {
        if pages.is_null() || npages == 0 {
            return Err(EINVAL);
        }
        let len = usize::try_from(length).map_err(|_| EINVAL)?;
        // SAFETY: The C caller passes `npages` readable page pointers at `pages` (not NULL,
        // checked).
        let pages = unsafe { core::slice::from_raw_parts(pages, npages as usize) };
        lmr_create_with(pz, lmr, privileges, |dev| {
            // SAFETY: The C caller keeps the pages allocated until `rkdapl_lmr_free` returns
            // (kernel-doc of `rkdapl_lmr_create_pages`), which drops the region.
            Ok((unsafe { DmaRegion::from_pages(dev, pages, offset as usize, len) }?, None))
        })
        .map(|_| ())
    })())
}

/// See `rkdapl_lmr_create_sg` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_create_sg(
    pz: *mut c_void,
    sgl: *mut bindings::scatterlist,
    nents: u32,
    privileges: u32,
    lmr: *mut *mut c_void,
) -> c_int {
    errno(
        lmr_create_with(pz, lmr, privileges, |dev| {
            // SAFETY: The C caller passes a scatterlist of `nents` entries and keeps its pages
            // allocated until `rkdapl_lmr_free` returns (kernel-doc of `rkdapl_lmr_create_sg`);
            // `from_sg` refuses NULL.
            Ok((unsafe { DmaRegion::from_sg(dev, sgl, nents as usize) }?, None))
        })
        .map(|_| ()),
    )
}

/// Largest `rkdapl_lmr_alloc`, in bytes.
const MAX_LMR_ALLOC: u64 = 1 << 30;

/// See `rkdapl_lmr_alloc` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_alloc(
    pz: *mut c_void,
    length: u64,
    privileges: u32,
    addr: *mut *mut c_void,
    lmr: *mut *mut c_void,
) -> c_int {
    errno((|| {
        if addr.is_null() || length == 0 || length > MAX_LMR_ALLOC {
            return Err(EINVAL);
        }
        let mut at = 0usize;
        lmr_create_with(pz, lmr, privileges, |dev| {
            let buf = KVVec::from_elem(0u8, length as usize, GFP_KERNEL)?;
            at = buf.as_ptr() as usize;
            // SAFETY: The LMR owns `buf` and drops it only after the region (field order of
            // `Lmr`); the vector's heap memory does not move when the vector does.
            let region = unsafe { DmaRegion::new(dev, at, length as usize) }?;
            Ok((region, Some(buf)))
        })?;
        put(addr, at as *mut c_void)
    })())
}

/// See `rkdapl_lmr_free` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_free(lmr: *mut c_void) -> c_int {
    errno((|| {
        let l: Arc<Lmr> = Handles::get(lmr, Kind::Lmr)?;
        if l.busy() {
            return Err(EBUSY);
        }
        drop(l);
        Handles::remove::<Lmr>(lmr, Kind::Lmr).map(drop)
    })())
}

/// See `rkdapl_lmr_sync_rdma_read` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_sync_rdma_read(lmr: *mut c_void, offset: u64, length: u64) -> c_int {
    lmr_sync(lmr, offset, length, true)
}

/// See `rkdapl_lmr_sync_rdma_write` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_lmr_sync_rdma_write(lmr: *mut c_void, offset: u64, length: u64) -> c_int {
    lmr_sync(lmr, offset, length, false)
}

fn lmr_sync(lmr: *mut c_void, offset: u64, length: u64, for_device: bool) -> c_int {
    errno((|| {
        let l: Arc<Lmr> = Handles::get(lmr, Kind::Lmr)?;
        let end = offset.checked_add(length).ok_or(ERANGE)?;
        if end > l.len {
            return Err(ERANGE);
        }
        let region = l.region.try_access().ok_or(ENODEV)?;
        if for_device {
            region.sync_for_device(offset, length);
        } else {
            region.sync_for_cpu(offset, length);
        }
        Ok(())
    })())
}

// ---------------------------------------------------------------------------------------------
// RMR

/// See `rkdapl_rmr_create` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_rmr_create(pz: *mut c_void, rmr: *mut *mut c_void) -> c_int {
    errno((|| {
        if rmr.is_null() {
            return Err(EINVAL);
        }
        let pz: Arc<Pz> = Handles::get(pz, Kind::Pz)?;
        let ia = pz.ia.clone();
        let _live = ia.live()?;
        publish(Rmr::new(pz)?, Kind::Rmr, rmr).map(|_| ())
    })())
}

/// See `rkdapl_rmr_bind` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_rmr_bind(
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
    errno((|| {
        if rkey.is_null() || address.is_null() {
            return Err(EINVAL);
        }
        let r: Arc<Rmr> = Handles::get(rmr, Kind::Rmr)?;
        let l: Arc<Lmr> = Handles::get(lmr, Kind::Lmr)?;
        let e: Arc<Ep> = Handles::get(ep, Kind::Ep)?;
        let (k, a) = r.bind(&e, &l, offset, length, privileges, cookie)?;
        put(rkey, k)?;
        put(address, a)
    })())
}

/// See `rkdapl_rmr_unbind` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_rmr_unbind(rmr: *mut c_void, ep: *mut c_void, cookie: u64) -> c_int {
    errno((|| {
        let r: Arc<Rmr> = Handles::get(rmr, Kind::Rmr)?;
        let e: Arc<Ep> = Handles::get(ep, Kind::Ep)?;
        r.unbind(&e, cookie)
    })())
}

/// See `rkdapl_rmr_free` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_rmr_free(rmr: *mut c_void) -> c_int {
    errno(Handles::remove::<Rmr>(rmr, Kind::Rmr).map(|r| r.release()))
}

// ---------------------------------------------------------------------------------------------
// EVD

/// See `rkdapl_evd_create` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_evd_create(ia: *mut c_void, qlen: u32, evd: *mut *mut c_void) -> c_int {
    errno((|| {
        if evd.is_null() {
            return Err(EINVAL);
        }
        let ia: Arc<Ia> = Handles::get(ia, Kind::Ia)?;
        let e = Evd::new(qlen, ia.owner, ia.async_slot.clone())?;
        let h = publish(e.clone(), Kind::Evd, evd)?;
        e.set_handle(h);
        Ok(())
    })())
}

/// See `rkdapl_evd_dequeue` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_evd_dequeue(evd: *mut c_void, event: *mut Event) -> c_int {
    errno((|| {
        if event.is_null() {
            return Err(EINVAL);
        }
        let ev = Handles::with(evd, Kind::Evd, |e: &Arc<Evd>| e.dequeue())??;
        put(event, ev)
    })())
}

/// See `rkdapl_evd_wait` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_evd_wait(evd: *mut c_void, timeout_ms: u32, event: *mut Event) -> c_int {
    errno((|| {
        if event.is_null() {
            return Err(EINVAL);
        }
        let e: Arc<Evd> = Handles::get(evd, Kind::Evd)?;
        put(event, e.wait(timeout_ms)?)
    })())
}

/// See `rkdapl_evd_free` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_evd_free(evd: *mut c_void) -> c_int {
    // EPs may keep the EVD alive: its upcall, into the consumer, ends here.
    errno(Handles::remove::<Evd>(evd, Kind::Evd).map(|e| e.close()))
}

/// See `rkdapl_evd_modify_upcall` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_evd_modify_upcall(
    evd: *mut c_void,
    policy: u32,
    upcall: Option<crate::evd::UpcallFn>,
    ctx: *mut c_void,
) -> c_int {
    use crate::evd::UpcallPolicy;
    errno((|| {
        let policy = match policy {
            0 => UpcallPolicy::Disable,
            1 => UpcallPolicy::SingleInstance,
            2 => UpcallPolicy::Many,
            _ => return Err(EINVAL),
        };
        let e: Arc<Evd> = Handles::get(evd, Kind::Evd)?;
        e.modify_upcall(policy, upcall, ctx)
    })())
}

// ---------------------------------------------------------------------------------------------
// EP

/// See `rkdapl_ep_create` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ep_create(
    pz: *mut c_void,
    dto_evd: *mut c_void,
    conn_evd: *mut c_void,
    attr: *const EpAttr,
    ep: *mut *mut c_void,
) -> c_int {
    errno((|| {
        if ep.is_null() {
            return Err(EINVAL);
        }
        let pz: Arc<Pz> = Handles::get(pz, Kind::Pz)?;
        let dto: Arc<Evd> = Handles::get(dto_evd, Kind::Evd)?;
        let conn: Arc<Evd> = Handles::get(conn_evd, Kind::Evd)?;
        let attr = if attr.is_null() {
            EpAttr::default()
        } else {
            // SAFETY: A non-NULL `attr` points to a `struct rkdapl_ep_attr` (kernel-doc).
            unsafe { attr.read() }
        };
        let ia = pz.ia.clone();
        let live = ia.live()?;
        let dev = live.as_ref().ok_or(ENODEV)?;
        let e = Ep::new(pz, dev, dto, conn, attr)?;
        // Without a handle nobody could free the EP: end it here (its debugfs directory holds
        // a reference until `teardown`).
        let h = publish(e.clone(), Kind::Ep, ep).inspect_err(|_| e.teardown())?;
        e.set_handle(h);
        Ok(())
    })())
}

/// See `rkdapl_ep_connect` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ep_connect(
    ep: *mut c_void,
    remote: *const bindings::sockaddr,
    timeout_ms: u32,
    pdata: *const c_void,
    pdata_len: u32,
) -> c_int {
    errno((|| {
        let e: Arc<Ep> = Handles::get(ep, Kind::Ep)?;
        // SAFETY: The C caller passes a `sockaddr_in`/`sockaddr_in6` (kernel-doc); NULL is
        // refused by `from_raw`.
        let dst = unsafe { SockAddr::from_raw(remote) }?;
        if timeout_ms == 0 {
            return Err(EINVAL);
        }
        let pdata = private_data(pdata, pdata_len)?;
        e.connect(&dst, timeout_ms, &pdata)
    })())
}

/// See `rkdapl_ep_disconnect` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ep_disconnect(ep: *mut c_void) -> c_int {
    errno(Handles::get::<Ep>(ep, Kind::Ep).and_then(|e| e.disconnect()))
}

/// See `rkdapl_ep_get_state` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ep_get_state(ep: *mut c_void, state: *mut u32) -> c_int {
    errno(Handles::get::<Ep>(ep, Kind::Ep).and_then(|e| put(state, e.state() as u32)))
}

/// See `rkdapl_ep_free` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ep_free(ep: *mut c_void) -> c_int {
    errno(Handles::remove::<Ep>(ep, Kind::Ep).map(|e| e.teardown()))
}

// ---------------------------------------------------------------------------------------------
// PSP and CR

/// See `rkdapl_ep_query` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_ep_query(ep: *mut c_void, attr: *mut EpAttr) -> c_int {
    errno((|| {
        let e: Arc<Ep> = Handles::get(ep, Kind::Ep)?;
        put(attr, e.query())
    })())
}

/// See `rkdapl_psp_create` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_psp_create(
    ia: *mut c_void,
    port: u16,
    backlog: u32,
    evd: *mut c_void,
    psp: *mut *mut c_void,
) -> c_int {
    errno((|| {
        if psp.is_null() {
            return Err(EINVAL);
        }
        let ia: Arc<Ia> = Handles::get(ia, Kind::Ia)?;
        let evd: Arc<Evd> = Handles::get(evd, Kind::Evd)?;
        let live = ia.live()?;
        let p = Psp::new(ia.clone(), port, backlog, evd)?;
        if let Err(e) = publish(p.clone(), Kind::Psp, psp) {
            p.shutdown();
            return Err(e);
        }
        drop(live);
        Ok(())
    })())
}

/// See `rkdapl_psp_free` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_psp_free(psp: *mut c_void) -> c_int {
    errno(Handles::remove::<Psp>(psp, Kind::Psp).map(|p| p.shutdown()))
}

/// See `rkdapl_cr_accept` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_cr_accept(
    cr: *mut c_void,
    ep: *mut c_void,
    pdata: *const c_void,
    pdata_len: u32,
) -> c_int {
    errno((|| {
        let e: Arc<Ep> = Handles::get(ep, Kind::Ep)?;
        let pdata = private_data(pdata, pdata_len)?;
        let c: Arc<Cr> = Handles::get(cr, Kind::Cr)?;
        if e.state() != crate::ep::EpState::Unconnected {
            return Err(EISCONN);
        }
        // Checked before the CR is consumed, so the consumer can still accept it on another
        // EP or reject it.
        if !c.on_device(&e.ia) {
            return Err(EXDEV);
        }
        Handles::remove::<Cr>(cr, Kind::Cr)?;
        c.psp.cr_done(cr as usize);
        let id = Arc::new(c.take_id()?, GFP_KERNEL)?;
        e.accept(id, c.peer_rd, &pdata)
    })())
}

/// See `rkdapl_cr_reject` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_cr_reject(
    cr: *mut c_void,
    pdata: *const c_void,
    pdata_len: u32,
) -> c_int {
    errno((|| {
        let pdata = private_data(pdata, pdata_len)?;
        let c: Arc<Cr> = Handles::remove(cr, Kind::Cr)?;
        c.psp.cr_done(cr as usize);
        let id = c.take_id()?;
        let r = id.reject(&pdata);
        *id.handler().target.lock() = crate::ep::CmTarget::None;
        r
    })())
}

// ---------------------------------------------------------------------------------------------
// DTOs

/// `RKDAPL_COMPLETION_SUPPRESS`: no event for a send-queue DTO that succeeds.
const COMPLETION_SUPPRESS: u32 = 1 << 0;
/// `RKDAPL_COMPLETION_SOLICITED_WAIT`: the solicited-event bit.
const COMPLETION_SOLICITED_WAIT: u32 = 1 << 1;
/// `RKDAPL_COMPLETION_BARRIER_FENCE`: start after earlier RDMA READs completed.
const COMPLETION_BARRIER_FENCE: u32 = 1 << 2;
const COMPLETION_FLAGS_ALL: u32 =
    COMPLETION_SUPPRESS | COMPLETION_SOLICITED_WAIT | COMPLETION_BARRIER_FENCE;

/// Longest chain `rkdapl_post_chain` takes, in DTOs (an EP never has more outstanding).
const MAX_CHAIN: u32 = 4096;

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

impl Dto {
    /// A DTO of the single-DTO post calls; `remote` may be NULL for SENDs only.
    fn new(
        op: DtoOp,
        iov: *const LmrTriplet,
        num_iov: u32,
        remote: *const RmrTriplet,
        cookie: u64,
        flags: u32,
    ) -> Result<Dto> {
        let remote = match op {
            DtoOp::Send | DtoOp::SendInvalidate => RmrTriplet::default(),
            _ if remote.is_null() => return Err(EINVAL),
            // SAFETY: A non-NULL `remote` points to a `struct rkdapl_rmr_triplet`.
            _ => unsafe { remote.read() },
        };
        Ok(Dto {
            op: op as u32,
            flags,
            iov,
            num_iov,
            immediate: 0,
            remote,
            invalidate_rkey: 0,
            reserved: 0,
            cookie,
        })
    }

    /// The DTO to post over `segs` (this DTO's segments, see [`segments`]).
    fn to_send<'a>(&self, segs: &'a [Segment]) -> Result<SendDto<'a>> {
        if self.flags & !COMPLETION_FLAGS_ALL != 0 || self.reserved != 0 {
            return Err(EINVAL);
        }
        let op = match self.op {
            x if x == DtoOp::Send as u32 => DtoOp::Send,
            x if x == DtoOp::RdmaWrite as u32 => DtoOp::RdmaWrite,
            x if x == DtoOp::RdmaRead as u32 => DtoOp::RdmaRead,
            x if x == DtoOp::RdmaWriteImm as u32 => DtoOp::RdmaWriteImm,
            x if x == DtoOp::SendInvalidate as u32 => DtoOp::SendInvalidate,
            _ => return Err(EINVAL),
        };
        let remote = match op {
            DtoOp::Send | DtoOp::SendInvalidate => None,
            _ => {
                let total: u64 = segs.iter().map(|s| s.length).sum();
                if self.remote.length != 0 && self.remote.length != total {
                    return Err(EINVAL);
                }
                Some((self.remote.address, self.remote.rkey))
            }
        };
        Ok(SendDto {
            op,
            segs,
            remote,
            imm: self.immediate,
            invalidate_rkey: self.invalidate_rkey,
            cookie: self.cookie,
            flags: DtoFlags {
                suppress: self.flags & COMPLETION_SUPPRESS != 0,
                solicited: self.flags & COMPLETION_SOLICITED_WAIT != 0,
                fence: self.flags & COMPLETION_BARRIER_FENCE != 0,
            },
        })
    }
}

/// Posts one send-queue DTO.
fn post_one(ep: *mut c_void, d: Result<Dto>) -> c_int {
    errno((|| {
        let d = d?;
        Handles::with(ep, Kind::Ep, |e: &Arc<Ep>| {
            let segs = segments(d.iov, d.num_iov, &e.pz)?;
            let sd = d.to_send(segs.as_slice())?;
            e.post_chain(core::slice::from_ref(&sd)).map_err(|(e, _)| e)
        })?
    })())
}

/// See `rkdapl_post_send` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_send(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    let d = Dto::new(DtoOp::Send, iov, num_iov, core::ptr::null(), cookie, flags);
    post_one(ep, d)
}

/// See `rkdapl_post_send_with_invalidate` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_send_with_invalidate(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    rkey: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    let d = Dto::new(
        DtoOp::SendInvalidate,
        iov,
        num_iov,
        core::ptr::null(),
        cookie,
        flags,
    );
    post_one(
        ep,
        d.map(|d| Dto {
            invalidate_rkey: rkey,
            ..d
        }),
    )
}

/// See `rkdapl_post_recv` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_recv(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    errno((|| {
        // No completion flag applies to a RECV.
        if flags != 0 {
            return Err(EINVAL);
        }
        Handles::with(ep, Kind::Ep, |e: &Arc<Ep>| {
            let segs = segments(iov, num_iov, &e.pz)?;
            e.post_recv(segs.as_slice(), cookie)
        })?
    })())
}

/// See `rkdapl_post_rdma_write` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_rdma_write(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    remote: *const RmrTriplet,
    cookie: u64,
    flags: u32,
) -> c_int {
    post_one(ep, Dto::new(DtoOp::RdmaWrite, iov, num_iov, remote, cookie, flags))
}

/// See `rkdapl_post_rdma_write_imm` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_rdma_write_imm(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    remote: *const RmrTriplet,
    immediate: u32,
    cookie: u64,
    flags: u32,
) -> c_int {
    let d = Dto::new(DtoOp::RdmaWriteImm, iov, num_iov, remote, cookie, flags);
    post_one(ep, d.map(|d| Dto { immediate, ..d }))
}

/// See `rkdapl_post_rdma_read` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_rdma_read(
    ep: *mut c_void,
    iov: *const LmrTriplet,
    num_iov: u32,
    remote: *const RmrTriplet,
    cookie: u64,
    flags: u32,
) -> c_int {
    post_one(ep, Dto::new(DtoOp::RdmaRead, iov, num_iov, remote, cookie, flags))
}

/// See `rkdapl_post_chain` in `include/rkdapl.h`.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_post_chain(
    ep: *mut c_void,
    dtos: *const Dto,
    n: u32,
    posted: *mut u32,
) -> c_int {
    let mut done = 0usize;
    let r = (|| {
        if dtos.is_null() || n == 0 || n > MAX_CHAIN {
            return Err(EINVAL);
        }
        let e: Arc<Ep> = Handles::get(ep, Kind::Ep)?;
        // SAFETY: The C caller passes `n` readable DTOs at `dtos` (not NULL, checked).
        let ds = unsafe { core::slice::from_raw_parts(dtos, n as usize) };
        // Every DTO up to the first bad one is posted, as `ib_post_send` does with a chain.
        let mut bad = None;
        let mut segv = KVec::with_capacity(ds.len(), GFP_ATOMIC)?;
        for d in ds {
            match segments(d.iov, d.num_iov, &e.pz) {
                Ok(s) => segv.push(s, GFP_ATOMIC)?,
                Err(err) => {
                    bad = Some(err);
                    break;
                }
            }
        }
        let mut sds = KVec::with_capacity(segv.len(), GFP_ATOMIC)?;
        for (d, s) in ds.iter().zip(segv.iter()) {
            match d.to_send(s.as_slice()) {
                Ok(sd) => sds.push(sd, GFP_ATOMIC)?,
                Err(err) => {
                    bad = Some(err);
                    break;
                }
            }
        }
        match e.post_chain(&sds) {
            Ok(()) => {
                done = sds.len();
                bad.map_or(Ok(()), Err)
            }
            Err((err, p)) => {
                done = p;
                Err(err)
            }
        }
    })();
    if !posted.is_null() {
        // SAFETY: A non-NULL `posted` points to a writable `__u32`.
        unsafe { posted.write(done as u32) };
    }
    errno(r)
}

// ---------------------------------------------------------------------------------------------
// Consumer unload (called by rkdapl_notify.c, not part of the consumer API)

/// A module is going away (`MODULE_STATE_GOING`): frees whatever a consumer of that name left
/// open. Process context; sleeps.
#[no_mangle]
pub(crate) extern "C" fn rkdapl_owner_gone(name: *const c_char) {
    if name.is_null() {
        return;
    }
    // SAFETY: The module notifier passes the going module's NUL-terminated name, valid for the
    // duration of the call.
    let name = unsafe { CStr::from_char_ptr(name) };
    crate::removal::owner_gone(name);
}

extern "C" {
    fn rkdapl_module_notifier_register() -> c_int;
    fn rkdapl_module_notifier_unregister();
}

/// While it exists, consumer modules going away are noticed (`rkdapl_owner_gone`).
pub(crate) struct ConsumerWatch(());

impl ConsumerWatch {
    /// Registers the module notifier (module init).
    ///
    /// # Errors
    ///
    /// The error of `register_module_notifier`.
    pub(crate) fn new() -> Result<ConsumerWatch> {
        // SAFETY: Called once from module init; the notifier block is static in
        // rkdapl_notify.c and unregistered by `drop`.
        kernel::error::to_result(unsafe { rkdapl_module_notifier_register() })?;
        Ok(ConsumerWatch(()))
    }
}

impl Drop for ConsumerWatch {
    fn drop(&mut self) {
        // SAFETY: Registered by `new`.
        unsafe { rkdapl_module_notifier_unregister() }
    }
}
