// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`, IB spec 10.2.3).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::Device;
use crate::{bindings, error::from_err_ptr, prelude::*, str::CString};
use core::ptr::NonNull;

/// A kernel protection domain.
///
/// Queue pairs and memory regions created in the same PD may be used together; a key from
/// one PD is refused by a QP of another.
///
/// # Invariants
///
/// `ptr` was returned by `__ib_alloc_pd` and is deallocated only in `drop`; its restrack
/// entry names `name`, which is freed only after the PD (the MRs allocated in the PD, which
/// ib_core gives the same name, are deregistered before the PD).
pub struct Pd {
    ptr: NonNull<bindings::ib_pd>,
    /// The owner's name ib_core keeps a pointer to; dropped after `drop` deallocates the PD.
    name: CString,
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
    pub fn new(dev: &Device, caller: &CStr) -> Result<Pd> {
        let name = CString::try_from(caller)?;
        // SAFETY: `dev` is registered (type invariant of `Device`); `name` is a NUL-terminated
        // string whose bytes do not move (its own allocation) and live until after the PD is
        // deallocated (type invariant).
        let ptr =
            from_err_ptr(unsafe { bindings::__ib_alloc_pd(dev.as_raw(), 0, name.as_char_ptr()) })?;
        // INVARIANT: The PD's restrack entry names `name`, which the `Pd` owns.
        Ok(Pd {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
            name,
        })
    }

    /// The owner's name the PD was allocated with.
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ptr.as_ptr()
    }

    /// The lkey that gives the local HCA access to any DMA-mapped kernel memory
    /// (`pd->local_dma_lkey`). Never given to a peer: it grants no remote access.
    pub fn local_dma_lkey(&self) -> u32 {
        // SAFETY: Set at allocation and never changed; `ptr` is valid (type invariant).
        unsafe { (*self.as_raw()).local_dma_lkey }
    }

    /// The device the PD belongs to.
    pub fn device(&self) -> &Device {
        // SAFETY: A PD keeps its device registered until it is deallocated.
        unsafe { Device::from_raw((*self.as_raw()).device) }
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: The type invariant says `ptr` is a live PD owned by `self`; everything created
        // in it has been released by the owners that borrowed it.
        unsafe { bindings::ib_dealloc_pd(self.as_raw()) };
        // `name` goes after this, once ib_core has forgotten it.
    }
}
