// SPDX-License-Identifier: GPL-2.0

//! C entry points of the EVD: create, dequeue, wait, upcalls, free.

use super::{handle::Handles, publish, put, Object};
use crate::evd::refuse_in_upcall;
use crate::{
    evd::{Evd, Event, UpcallFn, UpcallPolicy},
    ia::Ia,
};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Evd {
    /// The handle is reported in the EVD's overflow events.
    fn published(&self, handle: usize) {
        self.set_handle(handle);
    }

    fn unpublished(&self) {
        self.free();
    }
}

/// See `rkdapl_evd_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `evd` is NULL or valid for a write of a pointer. `ia` may be any value: one that is not a
/// live IA handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_create(
    ia: *mut c_void,
    qlen: u32,
    evd: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        if evd.is_null() {
            return Err(EINVAL);
        }
        let ia: Arc<Ia> = Handles::get::<Ia>(ia)?;
        let e = Evd::new(qlen, ia.async_slot.clone(), &ia.children)?;
        // SAFETY: `evd` is not NULL (checked), so it is writable (this function's `# Safety`).
        unsafe { publish(e, evd) }?;
        Ok(0)
    })
}

/// See `rkdapl_evd_dequeue` in `include/rkdapl.h`.
///
/// # Safety
///
/// `event` is NULL or valid for a write of a `struct rkdapl_event`. `evd` may be any value:
/// one that is not a live EVD handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_dequeue(evd: *mut c_void, event: *mut Event) -> c_int {
    from_result(|| {
        if event.is_null() {
            return Err(EINVAL);
        }
        let ev = Handles::with(evd, |e: &Arc<Evd>| e.dequeue())??;
        // SAFETY: `event` is not NULL (checked), so it is writable (this function's
        // `# Safety`).
        unsafe { put(event, ev) }?;
        Ok(0)
    })
}

/// See `rkdapl_evd_wait` in `include/rkdapl.h`.
///
/// # Safety
///
/// `event` is NULL or valid for a write of a `struct rkdapl_event`. `evd` may be any value:
/// one that is not a live EVD handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_wait(
    evd: *mut c_void,
    timeout_ms: u32,
    event: *mut Event,
) -> c_int {
    from_result(|| {
        if event.is_null() {
            return Err(EINVAL);
        }
        let e: Arc<Evd> = Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        let ev = e.wait(timeout_ms)?;
        // SAFETY: `event` is not NULL (checked), so it is writable (this function's
        // `# Safety`).
        unsafe { put(event, ev) }?;
        Ok(0)
    })
}

/// See `rkdapl_evd_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `evd` may be any value; one that is not a live EVD handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_free(evd: *mut c_void) -> c_int {
    from_result(|| {
        Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        // EPs may keep the EVD alive: its upcall, into the consumer, ends here.
        Handles::remove::<Evd>(evd)?.free();
        Ok(0)
    })
}

/// A C consumer's upcall (`rkdapl_upcall_fn`) and its context pointer.
///
/// # Invariants
///
/// `f` may be called with `ctx` and an event from any CPU, in parallel, until the upcall is
/// changed or disabled (the contract of `rkdapl_evd_modify_upcall`, see its `# Safety`).
struct CUpcall {
    f: unsafe extern "C" fn(ctx: *mut c_void, ev: *const Event),
    ctx: *mut c_void,
}

// SAFETY: `ctx` is the consumer's opaque pointer, only passed back to its own function, which
// the consumer made callable from any thread (the type invariant).
unsafe impl Send for CUpcall {}
// SAFETY: As for `Send`: `CUpcall` is never changed after it is made.
unsafe impl Sync for CUpcall {}

impl UpcallFn for CUpcall {
    fn call(&self, ev: &Event) {
        // SAFETY: By the type invariant the call is allowed while the upcall is set, and the
        // EVD calls only a set upcall (disabling waits for calls in progress); `ev` is valid
        // for the call.
        unsafe { (self.f)(self.ctx, ev) }
    }
}

/// See `rkdapl_evd_modify_upcall` in `include/rkdapl.h`.
///
/// # Safety
///
/// With a policy other than `RKDAPL_UPCALL_DISABLE`, a non-NULL `upcall` is a function that
/// may be called with `ctx` and an event as `rkdapl_upcall_fn` says (process context, from
/// any CPU, and in parallel for `RKDAPL_UPCALL_MANY`) until this EVD's upcall is changed or
/// disabled, the EVD is freed or the calling module is unloaded. `evd` may be any value: one
/// that is not a live EVD handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_modify_upcall(
    evd: *mut c_void,
    policy: u32,
    upcall: Option<unsafe extern "C" fn(ctx: *mut c_void, ev: *const Event)>,
    ctx: *mut c_void,
) -> c_int {
    from_result(|| {
        let policy = UpcallPolicy::from_raw(policy).ok_or(EINVAL)?;
        let e: Arc<Evd> = Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        let f = match upcall {
            Some(f) => Some(Arc::new(CUpcall { f, ctx }, GFP_KERNEL)? as Arc<dyn UpcallFn>),
            None => None,
        };
        e.modify_upcall(policy, f)?;
        Ok(0)
    })
}
