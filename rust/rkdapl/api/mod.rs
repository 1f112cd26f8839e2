// SPDX-License-Identifier: GPL-2.0

//! rkdapl's Rust API, for Rust consumer modules.
//!
//! A Rust module that depends on rkdapl (built with `--extern rkdapl` against the crate
//! metadata rkdapl's build emits, the way `nova-drm` uses `nova-core`; see `Kbuild`) uses these
//! types instead of `include/rkdapl.h`. They are the same DAT 2.0 objects with the same rules,
//! errors and calling contexts as the C API, whose kernel-doc each method names; what Rust adds:
//!
//! - every object frees itself when dropped (IA close, PZ/LMR/RMR/EVD/EP/PSP free), and
//!   objects keep what they were made from alive, so there is no order to get wrong;
//! - a connection request is a [`Cr`] that is rejected if dropped unanswered;
//! - [`Lmr::alloc`] memory is reached through [`Lmr::write`] and [`Lmr::read`], which copy
//!   and apply the DMA sync rules, so a Rust consumer needs no raw pointer;
//! - results are `Result`s with the C API's negative errnos as [`Error`]s.
//!
//! Like the C handles, each object is registered with rkdapl: device removal revokes it and a
//! consumer module that unloads with objects still alive has them freed.
//!
//! # Examples
//!
//! See `samples/rust/rkdapl_rust_sample.rs`: a loopback connection through a PSP, an RMR grant,
//! RDMA WRITE, READ and SEND/RECV with every byte checked.

use crate::{
    abi::{
        self,
        dto::{LmrTriplet, RmrTriplet},
    },
    evd::Event as RawEvent,
};
use core::ptr::NonNull;
use kernel::{error::to_result, ffi::c_void, prelude::*, rdma::cm::SockAddr};

pub use kernel::rdma::cm::SockAddr as Address;

mod event;
mod post;

pub use event::{DtoOp, DtoStatus, Event, EventKind, UpcallPolicy};
pub use post::{Dto, DtoFlags, Op, Segment};

/// `RKDAPL_MEM_LOCAL_WRITE`: RECVs and RDMA READs may write the LMR.
pub const MEM_LOCAL_WRITE: u32 = crate::lmr::MEM_LOCAL_WRITE;
/// `RKDAPL_MEM_REMOTE_READ`: RMRs over the LMR may grant remote read.
pub const MEM_REMOTE_READ: u32 = crate::lmr::MEM_REMOTE_READ;
/// `RKDAPL_MEM_REMOTE_WRITE`: RMRs over the LMR may grant remote write.
pub const MEM_REMOTE_WRITE: u32 = crate::lmr::MEM_REMOTE_WRITE;

/// A C handle owned by one Rust object.
///
/// # Invariants
///
/// A live rkdapl handle until the owner frees it in `drop`.
struct Handle(NonNull<c_void>);

// SAFETY: rkdapl handles may be used from any thread (the C API's rules).
unsafe impl Send for Handle {}
// SAFETY: See `Send`; every call validates the handle and locks internally.
unsafe impl Sync for Handle {}

impl Handle {
    fn from_out(p: *mut c_void) -> Result<Handle> {
        NonNull::new(p).map(Handle).ok_or(EINVAL)
    }

    /// The handle the C create call `create` stores through the out-pointer it is given.
    fn create(create: impl FnOnce(*mut *mut c_void) -> c_int) -> Result<Handle> {
        let mut h = core::ptr::null_mut();
        to_result(create(&mut h))?;
        Handle::from_out(h)
    }

    fn raw(&self) -> *mut c_void {
        self.0.as_ptr()
    }
}

/// `impl Drop for $t` that frees the handle with the C call `$free` (its result is not
/// needed: the handle is valid, and a refusal leaves it for the consumer's unload).
macro_rules! frees_on_drop {
    ($t:ident, $free:path) => {
        impl Drop for $t {
            #[inline(never)]
            fn drop(&mut self) {
                // SAFETY: The free calls take no pointer but the handle, which they validate.
                unsafe { $free(self.0.raw()) };
            }
        }
    };
}

/// An interface adapter: an open RDMA device (`rkdapl_ia_open`).
pub struct Ia(Handle);

impl Ia {
    /// Opens the RDMA device `device` (for example `c"rxe0"`) for the module `owner` (its name,
    /// shown by `rdma res show`). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` if there is no such device, `EINVAL`, `ENOMEM`.
    #[inline(never)]
    pub fn open(device: &CStr, owner: &CStr) -> Result<Ia> {
        Handle::create(|h| {
            // SAFETY: `device` and `owner` are NUL-terminated strings that outlive the call; `h`
            // is writable.
            unsafe { abi::ia::__rkdapl_ia_open(device.as_char_ptr(), h, owner.as_char_ptr()) }
        })
        .map(Ia)
    }

    /// Opens the RDMA device the local address `addr` is on (`rkdapl_ia_open_addr`). Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `EADDRNOTAVAIL` if no RDMA device has the address, `EINVAL`, `ENOMEM`.
    #[inline(never)]
    pub fn open_addr(addr: &SockAddr, owner: &CStr) -> Result<Ia> {
        Handle::create(|h| {
            // SAFETY: `addr` is a whole socket address of its family, `owner` a NUL-terminated
            // string, both outliving the call; `h` is writable.
            unsafe { abi::ia::__rkdapl_ia_open_addr(addr.as_ptr(), h, owner.as_char_ptr()) }
        })
        .map(Ia)
    }
}

frees_on_drop!(Ia, abi::ia::rkdapl_ia_close);

/// A protection zone, an IB PD (`rkdapl_pz_create`).
pub struct Pz(Handle);

impl Pz {
    /// A new PZ on `ia`. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` after device removal, `ENOMEM`.
    #[inline(never)]
    pub fn new(ia: &Ia) -> Result<Pz> {
        // SAFETY: `h` is writable; the handle needs no guarantee.
        Handle::create(|h| unsafe { abi::pz::rkdapl_pz_create(ia.0.raw(), h) }).map(Pz)
    }
}

frees_on_drop!(Pz, abi::pz::rkdapl_pz_free);

/// An event dispatcher: a bounded queue of events (`rkdapl_evd_create`).
pub struct Evd(Handle);

impl Evd {
    /// An EVD of `qlen` entries (1..65536) on `ia`. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a length out of range, `ENOMEM`.
    #[inline(never)]
    pub fn new(ia: &Ia, qlen: u32) -> Result<Evd> {
        // SAFETY: `h` is writable; the handle needs no guarantee.
        Handle::create(|h| unsafe { abi::evd::rkdapl_evd_create(ia.0.raw(), qlen, h) }).map(Evd)
    }

    /// Waits up to `timeout_ms` ms for the next event (`rkdapl_evd_wait`). Process context;
    /// sleeps interruptibly.
    ///
    /// # Errors
    ///
    /// `ETIMEDOUT` if none came, `EINTR` on a signal.
    #[inline(never)]
    pub fn wait(&self, timeout_ms: u32) -> Result<Event> {
        let mut ev = RawEvent::new(crate::evd::EventType::DtoCompletion);
        // SAFETY: `ev` is a writable `struct rkdapl_event`.
        to_result(unsafe { abi::evd::rkdapl_evd_wait(self.0.raw(), timeout_ms, &mut ev) })?;
        Ok(Event(ev))
    }

    /// Takes the next event without waiting (`rkdapl_evd_dequeue`). Any context.
    ///
    /// # Errors
    ///
    /// `EAGAIN` if the queue is empty.
    #[inline(never)]
    pub fn dequeue(&self) -> Result<Event> {
        let mut ev = RawEvent::new(crate::evd::EventType::DtoCompletion);
        // SAFETY: `ev` is a writable `struct rkdapl_event`.
        to_result(unsafe { abi::evd::rkdapl_evd_dequeue(self.0.raw(), &mut ev) })?;
        Ok(Event(ev))
    }
}

frees_on_drop!(Evd, abi::evd::rkdapl_evd_free);

/// A local memory region over memory rkdapl allocated (`rkdapl_lmr_alloc`).
///
/// # Invariants
///
/// `addr` is the LMR's memory, `len` bytes, valid until the LMR is freed in `drop`.
pub struct Lmr {
    h: Handle,
    addr: NonNull<u8>,
    len: usize,
}

// SAFETY: The memory belongs to the LMR; access goes through copies (`read`, `write`).
unsafe impl Send for Lmr {}
// SAFETY: See `Send`.
unsafe impl Sync for Lmr {}

impl Lmr {
    /// `len` zeroed bytes registered in `pz` with `privileges` (`MEM_*`). Process context;
    /// may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a length of 0 or above 1 GiB or unknown privileges, `ENODEV`, `ENOMEM`.
    #[inline(never)]
    pub fn alloc(pz: &Pz, len: usize, privileges: u32) -> Result<Lmr> {
        let (mut h, mut a) = (core::ptr::null_mut(), core::ptr::null_mut());
        // SAFETY: `a` and `h` are writable.
        to_result(unsafe {
            abi::lmr::rkdapl_lmr_alloc(pz.0.raw(), len as u64, privileges, &mut a, &mut h)
        })?;
        Ok(Lmr {
            h: Handle::from_out(h)?,
            addr: NonNull::new(a.cast()).ok_or(EINVAL)?,
            len,
        })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the LMR is empty (never: it has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `data` to offset `off` (`&mut`: no other CPU access meanwhile) and makes it
    /// visible to the device
    /// (`rkdapl_lmr_sync_rdma_read`), for a SEND, an RDMA WRITE source or a peer's READ. Do not
    /// change memory a posted DTO is sending. Any context.
    ///
    /// # Errors
    ///
    /// `ERANGE` if the range leaves the LMR, `ENODEV` after device removal.
    #[inline(never)]
    pub fn write(&mut self, off: usize, data: &[u8]) -> Result {
        let end = off.checked_add(data.len()).ok_or(ERANGE)?;
        if end > self.len {
            return Err(ERANGE);
        }
        // SAFETY: `[off, end)` is inside the LMR's memory (checked, type invariant); a copy of
        // plain bytes, so a concurrent device access can only change the bytes' values.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), self.addr.as_ptr().add(off), data.len())
        };
        let len = data.len() as u64;
        // SAFETY: The call takes no pointer but the handle, which it validates.
        to_result(unsafe { abi::lmr::rkdapl_lmr_sync_rdma_read(self.h.raw(), off as u64, len) })
    }

    /// Makes what the device wrote at `off` visible (`rkdapl_lmr_sync_rdma_write`) and copies it
    /// into `out`, after a RECV or RDMA READ completion or a peer's WRITE. Any context.
    ///
    /// # Errors
    ///
    /// `ERANGE` if the range leaves the LMR, `ENODEV` after device removal.
    #[inline(never)]
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        let end = off.checked_add(out.len()).ok_or(ERANGE)?;
        if end > self.len {
            return Err(ERANGE);
        }
        let len = out.len() as u64;
        // SAFETY: The call takes no pointer but the handle, which it validates.
        to_result(unsafe { abi::lmr::rkdapl_lmr_sync_rdma_write(self.h.raw(), off as u64, len) })?;
        // SAFETY: As in `write`.
        unsafe {
            core::ptr::copy_nonoverlapping(self.addr.as_ptr().add(off), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    fn triplet(&self, off: u64, len: u64) -> LmrTriplet {
        LmrTriplet {
            lmr: self.h.raw(),
            offset: off,
            length: len,
        }
    }
}

impl Drop for Lmr {
    #[inline(never)]
    fn drop(&mut self) {
        // -EBUSY while a DTO or grant still uses it: the handle stays, and is freed with the
        // consumer's other leftovers when its module unloads.
        // SAFETY: The call takes no pointer but the handle, which it validates.
        unsafe { abi::lmr::rkdapl_lmr_free(self.h.raw()) };
    }
}

/// The peer's memory a grant names (`struct rkdapl_rmr_triplet`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemoteRegion {
    /// The address the peer's [`Rmr::bind`] returned.
    pub address: u64,
    /// The rkey the peer's [`Rmr::bind`] returned.
    pub rkey: u32,
    /// Bytes granted.
    pub length: u64,
}

/// A remote memory region: a grant of part of an LMR to the peer (`rkdapl_rmr_create`).
pub struct Rmr(Handle);

impl Rmr {
    /// An unbound RMR in `pz`. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV`, `ENOMEM`.
    #[inline(never)]
    pub fn new(pz: &Pz) -> Result<Rmr> {
        // SAFETY: `h` is writable; the handle needs no guarantee.
        Handle::create(|h| unsafe { abi::rmr::rkdapl_rmr_create(pz.0.raw(), h) }).map(Rmr)
    }

    /// Grants `privileges` (`MEM_REMOTE_*`) on `[off, off + len)` of `lmr` through `ep`
    /// (`rkdapl_rmr_bind`); valid once the bind completion with `cookie` arrives on the EP's
    /// DTO EVD. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As `rkdapl_rmr_bind`: `EBUSY` if bound, `EINVAL`, `EACCES`, `E2BIG`, `ENOTCONN`, ...
    #[inline(never)]
    pub fn bind(
        &self,
        lmr: &Lmr,
        off: u64,
        len: u64,
        privileges: u32,
        ep: &Ep,
        cookie: u64,
    ) -> Result<RemoteRegion> {
        let (mut rkey, mut address) = (0u32, 0u64);
        // SAFETY: `rkey` and `address` are writable; the handles need no guarantee.
        to_result(unsafe {
            abi::rmr::rkdapl_rmr_bind(
                self.0.raw(),
                lmr.h.raw(),
                off,
                len,
                privileges,
                ep.0.raw(),
                cookie,
                &mut rkey,
                &mut address,
            )
        })?;
        Ok(RemoteRegion {
            address,
            rkey,
            length: len,
        })
    }
}

frees_on_drop!(Rmr, abi::rmr::rkdapl_rmr_free);

/// An endpoint: one reliable connection (`rkdapl_ep_create`).
pub struct Ep(Handle);

impl Ep {
    /// An unconnected EP in `pz` with default attributes; DTO completions go to `dto_evd`,
    /// connection events to `conn_evd` (may be the same). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV`, `ENOMEM`.
    #[inline(never)]
    pub fn new(pz: &Pz, dto_evd: &Evd, conn_evd: &Evd) -> Result<Ep> {
        let (dto, conn, attr) = (dto_evd.0.raw(), conn_evd.0.raw(), core::ptr::null());
        // SAFETY: `attr` is NULL (the defaults) and `h` writable; the handles need no guarantee.
        Handle::create(|h| unsafe { abi::ep::rkdapl_ep_create(pz.0.raw(), dto, conn, attr, h) })
            .map(Ep)
    }

    /// Connects to `remote` (address and port) with `private_data` (at most 56 bytes);
    /// ESTABLISHED or a failure event follows on the connection EVD (`rkdapl_ep_connect`).
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EISCONN`, `EINVAL`, `ENODEV`, `ENOMEM`.
    #[inline(never)]
    pub fn connect(&self, remote: &SockAddr, timeout_ms: u32, private_data: &[u8]) -> Result {
        // SAFETY: `remote` is a whole socket address of its family and `private_data` readable,
        // both outliving the call.
        to_result(unsafe {
            abi::ep::rkdapl_ep_connect(
                self.0.raw(),
                remote.as_ptr(),
                timeout_ms,
                private_data.as_ptr().cast(),
                private_data.len() as u32,
            )
        })
    }

    /// Graceful disconnect (`rkdapl_ep_disconnect`). Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENOTCONN` if not connected.
    #[inline(never)]
    pub fn disconnect(&self) -> Result {
        // SAFETY: The call takes no pointer but the handle, which it validates.
        to_result(unsafe { abi::ep::rkdapl_ep_disconnect(self.0.raw()) })
    }

    /// SEND of `[off, off + len)` of `lmr` (`rkdapl_post_send`). Any context.
    ///
    /// # Errors
    ///
    /// `ENOTCONN`, `ENOSPC`, `ERANGE`, `EMSGSIZE`, `ENOMEM`.
    #[inline(never)]
    pub fn post_send(&self, lmr: &Lmr, off: u64, len: u64, cookie: u64) -> Result {
        let t = lmr.triplet(off, len);
        // SAFETY: `t` is one readable triplet; the handles need no guarantee.
        to_result(unsafe { abi::dto::rkdapl_post_send(self.0.raw(), &t, 1, cookie, 0) })
    }

    /// RECV into `[off, off + len)` of `lmr` (`rkdapl_post_recv`). Any context.
    ///
    /// # Errors
    ///
    /// `ENOTCONN`, `ENOSPC`, `ERANGE`, `EACCES`, `ENOMEM`.
    #[inline(never)]
    pub fn post_recv(&self, lmr: &Lmr, off: u64, len: u64, cookie: u64) -> Result {
        let t = lmr.triplet(off, len);
        // SAFETY: `t` is one readable triplet; the handles need no guarantee.
        to_result(unsafe { abi::dto::rkdapl_post_recv(self.0.raw(), &t, 1, cookie, 0) })
    }

    /// RDMA WRITE of `[off, off + len)` of `lmr` to the start of `remote`
    /// (`rkdapl_post_rdma_write`). Any context.
    ///
    /// # Errors
    ///
    /// As [`Ep::post_send`].
    #[inline(never)]
    pub fn post_rdma_write(
        &self,
        lmr: &Lmr,
        off: u64,
        len: u64,
        remote: &RemoteRegion,
        cookie: u64,
    ) -> Result {
        let post = abi::dto::rkdapl_post_rdma_write;
        self.post_rdma(post, lmr, off, len, remote, cookie)
    }

    /// RDMA READ of `len` bytes at the start of `remote` into `[off, off + len)` of `lmr`
    /// (`rkdapl_post_rdma_read`). Any context.
    ///
    /// # Errors
    ///
    /// As [`Ep::post_send`], and `EACCES` without local write.
    #[inline(never)]
    pub fn post_rdma_read(
        &self,
        lmr: &Lmr,
        off: u64,
        len: u64,
        remote: &RemoteRegion,
        cookie: u64,
    ) -> Result {
        let post = abi::dto::rkdapl_post_rdma_read;
        self.post_rdma(post, lmr, off, len, remote, cookie)
    }

    /// One RDMA DTO through the C entry point `post` (`rkdapl_post_rdma_write` or
    /// `rkdapl_post_rdma_read`).
    fn post_rdma(
        &self,
        post: unsafe extern "C" fn(
            *mut c_void,
            *const LmrTriplet,
            u32,
            *const RmrTriplet,
            u64,
            u32,
        ) -> kernel::ffi::c_int,
        lmr: &Lmr,
        off: u64,
        len: u64,
        remote: &RemoteRegion,
        cookie: u64,
    ) -> Result {
        let t = lmr.triplet(off, len);
        let r = RmrTriplet {
            address: remote.address,
            rkey: remote.rkey,
            reserved: 0,
            length: 0,
        };
        // SAFETY: `t` is one readable triplet and `r` a readable RMR triplet; the handles need
        // no guarantee.
        to_result(unsafe { post(self.0.raw(), &t, 1, &r, cookie, 0) })
    }
}

frees_on_drop!(Ep, abi::ep::rkdapl_ep_free);

/// A listening port (`rkdapl_psp_create`); connection requests arrive on its EVD.
pub struct Psp(Handle);

impl Psp {
    /// Listens on `port` of `ia`'s device with `backlog` pending requests; requests go to
    /// `evd`. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EADDRINUSE`, `EINVAL`, `ENODEV`, `ENOMEM`.
    #[inline(never)]
    pub fn new(ia: &Ia, port: u16, backlog: u32, evd: &Evd) -> Result<Psp> {
        let (ia, evd) = (ia.0.raw(), evd.0.raw());
        // SAFETY: `h` is writable; the handles need no guarantee.
        Handle::create(|h| unsafe { abi::psp::rkdapl_psp_create(ia, port, backlog, evd, h) })
            .map(Psp)
    }
}

frees_on_drop!(Psp, abi::psp::rkdapl_psp_free);

/// A connection request from [`Event::take_cr`]; rejected if dropped unanswered.
pub struct Cr(Option<Handle>);

impl Cr {
    /// Accepts on the unconnected `ep` with `private_data` (`rkdapl_cr_accept`); ESTABLISHED
    /// follows. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EISCONN`, `EXDEV`, `EINVAL`, `ENOMEM`; the request is rejected then.
    #[inline(never)]
    pub fn accept(mut self, ep: &Ep, private_data: &[u8]) -> Result {
        let h = self.0.take().ok_or(EINVAL)?;
        let (pdata, len) = (private_data.as_ptr().cast(), private_data.len() as u32);
        // SAFETY: `private_data` is readable for the call; the handles need no guarantee.
        let r = to_result(unsafe { abi::psp::rkdapl_cr_accept(h.raw(), ep.0.raw(), pdata, len) });
        // These are refused before the request is consumed; after, it is gone.
        if matches!(r, Err(e) if e == EISCONN || e == EXDEV || e == EINVAL) {
            reject(&h);
        }
        r
    }
}

impl Drop for Cr {
    #[inline(never)]
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            reject(&h);
        }
    }
}

/// Rejects the connection request `h` without private data (`rkdapl_cr_reject`).
fn reject(h: &Handle) {
    // SAFETY: No private data (NULL, 0); the handle needs no guarantee.
    unsafe { abi::psp::rkdapl_cr_reject(h.raw(), core::ptr::null(), 0) };
}
