// SPDX-License-Identifier: GPL-2.0

//! [`CmIdRef`], a CM id borrowed for the duration of a call, and the rdma_cm calls made on it:
//! address and route resolution, bind, listen, connect, reject and disconnect.
//!
//! A [`CmIdRef`] is what a [`super::CmHandler`] gets with each event, and what a
//! [`super::CmIdAccess`] of the owning [`super::CmId`] dereferences to.

use super::super::{device::Device, qp::Qp};
use super::{ConnParam, SockAddr, MAX_CONNECT_PRIVATE_DATA, MAX_REJECT_PRIVATE_DATA};
use crate::{bindings, error::to_result, prelude::*, types::Opaque};

/// IB CM reject reason "consumer defined" (IB spec table 112), used for consumer rejects.
pub(super) const IB_CM_REJ_CONSUMER_DEFINED: u8 = 28;

/// A CM id borrowed for the duration of a call.
///
/// # Invariants
///
/// The `rdma_cm_id` is live for as long as the `&CmIdRef` exists, and so is its QP if it has one (a
/// QP is only destroyed after its CM id). It is an id this layer created (or rdma_cm created for
/// one of its listeners): its `context` is NULL or the `Ctx` of the [`CmId`](super::CmId) that owns
/// it (`cm/qp_state.rs` reads the consumer's QP there).
#[repr(transparent)]
pub struct CmIdRef(Opaque<bindings::rdma_cm_id>);

// SAFETY: rdma_cm's functions lock internally; the ones that need the handler lock say so.
unsafe impl Send for CmIdRef {}
// SAFETY: See the `Send` impl.
unsafe impl Sync for CmIdRef {}

impl CmIdRef {
    /// # Safety
    ///
    /// `ptr` is a live CM id for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::rdma_cm_id) -> &'a CmIdRef {
        // SAFETY: Transparent wrapper; liveness is the caller's guarantee.
        unsafe { &*ptr.cast::<CmIdRef>() }
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::rdma_cm_id {
        self.0.get()
    }

    /// The RDMA device the id is bound to, once an address is resolved or bound.
    pub fn device(&self) -> Option<&Device> {
        // SAFETY: The id is live; `device` is set by rdma_cm once bound and the device stays
        // registered while ids on it exist (rdma_cm waits for them on removal).
        let d = unsafe { (*self.as_raw()).device };
        // SAFETY: See above.
        (!d.is_null()).then(|| unsafe { Device::from_raw(d) })
    }

    /// The QP created on the id, if any (rdma_cm's, or one its consumer moves:
    /// [`CmId::own_qp_transitions`](super::CmId::own_qp_transitions)).
    pub fn qp(&self) -> Option<&Qp> {
        // SAFETY: The id is live; its QP outlives it (type invariant).
        let q = unsafe { (*self.as_raw()).qp };
        let q = if q.is_null() { self.own_qp() } else { q };
        // SAFETY: See above.
        (!q.is_null()).then(|| unsafe { Qp::from_raw(q) })
    }

    /// Resolves `dst` (and binds to `src` if given) to a local RDMA device; completes with
    /// [`CmEventKind::AddrResolved`](super::CmEventKind::AddrResolved) or an error event within
    /// `timeout_ms`. May sleep.
    ///
    /// # Errors
    ///
    /// rdma_cm's immediate errors (`-EINVAL` for a bad state or address, `-ENODEV`, ...).
    pub fn resolve_addr(&self, src: Option<&SockAddr>, dst: &SockAddr, timeout_ms: u32) -> Result {
        let src = src.map_or(core::ptr::null_mut(), |s| s.as_ptr());
        // SAFETY: The id is live; the addresses are valid for the call (rdma_cm copies them).
        to_result(unsafe {
            bindings::rdma_resolve_addr(self.as_raw(), src, dst.as_ptr(), timeout_ms as c_ulong)
        })
    }

    /// Resolves the route to the resolved address; completes with
    /// [`CmEventKind::RouteResolved`](super::CmEventKind::RouteResolved) or
    /// [`CmEventKind::RouteError`](super::CmEventKind::RouteError). May sleep.
    ///
    /// # Errors
    ///
    /// rdma_cm's immediate errors.
    pub fn resolve_route(&self, timeout_ms: u32) -> Result {
        // SAFETY: The id is live.
        to_result(unsafe { bindings::rdma_resolve_route(self.as_raw(), timeout_ms as c_ulong) })
    }

    /// Binds the id to a local address (port 0 picks one). May sleep.
    ///
    /// # Errors
    ///
    /// `-EADDRINUSE`, `-EADDRNOTAVAIL`, `-EINVAL`, ...
    pub fn bind_addr(&self, addr: &SockAddr) -> Result {
        // SAFETY: The id is live; rdma_cm copies the address.
        to_result(unsafe { bindings::rdma_bind_addr(self.as_raw(), addr.as_ptr()) })
    }

    /// Listens for connect requests with `backlog` pending requests at most. May sleep.
    ///
    /// # Errors
    ///
    /// rdma_cm's errors (`-EINVAL` if not bound, ...).
    pub fn listen(&self, backlog: u32) -> Result {
        let backlog = i32::try_from(backlog).map_err(|_| EINVAL)?;
        // SAFETY: The id is live.
        to_result(unsafe { bindings::rdma_listen(self.as_raw(), backlog) })
    }

    /// Sends a connect request. Only from this id's own event handler (rdma_cm's handler lock must
    /// be held), typically on [`CmEventKind::RouteResolved`](super::CmEventKind::RouteResolved).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for private data longer than [`MAX_CONNECT_PRIVATE_DATA`] or bad retry counts,
    /// or rdma_cm's errors.
    pub fn connect_locked(&self, param: &ConnParam<'_>) -> Result {
        let mut p = param.to_c(MAX_CONNECT_PRIVATE_DATA)?;
        self.own_qp_param(&mut p);
        // SAFETY: The id is live; the caller is in its handler; `p` is valid for the call.
        to_result(unsafe { bindings::rdma_connect_locked(self.as_raw(), &mut p) })
    }

    /// Rejects a connect request received on this (child) id, with private data for the peer.
    /// May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for private data longer than [`MAX_REJECT_PRIVATE_DATA`], or rdma_cm's errors.
    pub fn reject(&self, private_data: &[u8]) -> Result {
        if private_data.len() > MAX_REJECT_PRIVATE_DATA {
            return Err(EINVAL);
        }
        // SAFETY: The id is live; the buffer is valid for the call.
        to_result(unsafe {
            bindings::rdma_reject(
                self.as_raw(),
                private_data.as_ptr().cast(),
                private_data.len() as u8,
                IB_CM_REJ_CONSUMER_DEFINED,
            )
        })
    }

    /// Starts disconnecting; [`CmEventKind::Disconnected`](super::CmEventKind::Disconnected)
    /// follows. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if the id is not connected, or rdma_cm's errors.
    pub fn disconnect(&self) -> Result {
        self.own_qp_to_error();
        // SAFETY: The id is live.
        to_result(unsafe { bindings::rdma_disconnect(self.as_raw()) })
    }

    /// The port of [`CmIdRef::device`] the id is bound to (0 before it is bound).
    pub fn port_num(&self) -> u32 {
        // SAFETY: The id is live; reading an integer rdma_cm sets once bound.
        unsafe { (*self.as_raw()).port_num }
    }

    /// The path MTU of the id's route in bytes (256..4096), 0 without a route: on the connecting
    /// side what route resolution found (on RoCE, from the local netdev's MTU), on a connect
    /// request's id the one the peer's REQ carries. rdma_cm gives it to the QPs of both sides; a
    /// consumer that moves its QP itself may give it less
    /// ([`CmId::accept_with_path_mtu`](super::CmId::accept_with_path_mtu), [`CmIdRef::establish`];
    /// [`Qp::path_mtu`] is what the QP got). Any context; stable from the route's resolution (or
    /// the request) on.
    pub fn path_mtu(&self) -> u32 {
        // SAFETY: The id is live; `route.path_rec` is NULL or rdma_cm's path record, which
        // lives as long as the id.
        let mtu = unsafe {
            let p = (*self.as_raw()).route.path_rec;
            if p.is_null() {
                return 0;
            }
            (*p).mtu
        };
        match mtu {
            m @ 1..=5 => 128 << m,
            _ => 0,
        }
    }

    /// The peer's address of a connected or resolving id.
    pub fn dst_addr(&self) -> SockAddr {
        // SAFETY: The id is live; `route.addr.dst_addr` is a sockaddr storage.
        SockAddr(unsafe { (*self.as_raw()).route.addr.dst_addr })
    }
}
