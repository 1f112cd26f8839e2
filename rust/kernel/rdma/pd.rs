// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`, IB spec 10.2.3).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::bound::{Bound, BoundDevice, Rank, Release, Slot};
use crate::{bindings, error::from_err_ptr, prelude::*, str::CString, sync::Arc};
use core::ptr::NonNull;

/// A kernel protection domain.
///
/// Queue pairs and memory regions created in the same PD may be used together; a key from
/// one PD is refused by a QP of another.
///
/// The PD is deallocated when the `Pd` is dropped, or, if the device goes first, when the
/// device's client registration revokes it ([`super::bound`]); after that the `Pd` makes no
/// more objects (`-ENODEV`).
///
/// # Invariants
///
/// `ptr` was returned by `__ib_alloc_pd` and is the PD `slot` holds: it is live while the slot
/// has not been revoked, which an [`BoundDevice::access`] token of `slot.bound()` or an RCU
/// section in which it is [`BoundDevice::live`] guarantees. `lkey` is its `local_dma_lkey`.
pub struct Pd {
    ptr: NonNull<bindings::ib_pd>,
    lkey: u32,
    slot: Arc<Slot<PdRes>>,
}

/// The PD as its device's binding tracks it.
///
/// # Invariants
///
/// `ptr` is a live PD whose restrack entry names `_name`, which is freed only after the PD.
struct PdRes {
    ptr: NonNull<bindings::ib_pd>,
    /// The owner's name ib_core keeps a pointer to; dropped after the PD is deallocated.
    _name: CString,
}

// SAFETY: PD verbs may be called from any thread; ib_core locks internally.
unsafe impl Send for PdRes {}

impl Release for PdRes {
    const RANK: Rank = Rank::Pd;

    fn release(self) {
        // SAFETY: The type invariant says `ptr` is a live PD; everything created in it has
        // been released (by its owners, or by revocation, which releases PDs last).
        unsafe { bindings::ib_dealloc_pd(self.ptr.as_ptr()) };
        // `name` goes after this, once ib_core has forgotten it.
    }
}

// SAFETY: PD verbs may be called from any thread; ib_core locks internally.
unsafe impl Send for Pd {}
// SAFETY: `&Pd` only reads immutable fields.
unsafe impl Sync for Pd {}

impl Pd {
    /// Allocates a PD on `dev`. `caller` names the owner in `rdma res show pd` (and of the
    /// PD's MRs); the PD keeps a copy of it, since ib_core keeps the pointer.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` or the driver's error.
    pub fn new(dev: &Bound<'_>, caller: &CStr) -> Result<Pd> {
        let name = CString::try_from(caller)?;
        // SAFETY: `dev` is registered (the token holds it bound); `name` is a NUL-terminated
        // string whose bytes do not move (its own allocation) and live until after the PD is
        // deallocated (`PdRes`).
        let ptr =
            from_err_ptr(unsafe { bindings::__ib_alloc_pd(dev.as_raw(), 0, name.as_char_ptr()) })?;
        let ptr = NonNull::new(ptr).ok_or(ENOMEM)?;
        // SAFETY: Set at allocation and never changed; `ptr` is live.
        let lkey = unsafe { (*ptr.as_ptr()).local_dma_lkey };
        // INVARIANT: The PD's restrack entry names `name`, which the tracked `PdRes` owns.
        let slot = BoundDevice::track(dev.binding(), PdRes { ptr, _name: name })?;
        Ok(Pd { ptr, lkey, slot })
    }

    /// The raw pointer, for calls into C. Valid while the PD's device is bound (an
    /// [`BoundDevice::access`] token of [`Pd::binding`], or an RCU section in which it is
    /// [`BoundDevice::live`]).
    pub fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }

    /// The lkey that gives the local HCA access to any DMA-mapped kernel memory
    /// (`pd->local_dma_lkey`). Never given to a peer: it grants no remote access.
    pub fn local_dma_lkey(&self) -> u32 {
        self.lkey
    }

    /// The binding of the device the PD belongs to: [`BoundDevice::access`] on it holds the
    /// device for a call.
    pub fn binding(&self) -> &Arc<BoundDevice> {
        self.slot.bound()
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // Deallocates the PD unless its device's removal did.
        Slot::release_now(&self.slot);
    }
}
