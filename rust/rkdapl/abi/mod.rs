// SPDX-License-Identifier: GPL-2.0

//! The C ABI of rkdapl: the `extern "C"` functions `include/rkdapl.h` declares, exported with
//! `EXPORT_SYMBOL_GPL` by `exports.c`, one file per DAT object, and the C shapes they take
//! and give (`struct rkdapl_event`, `struct rkdapl_ia_attr`, the `RKDAPL_*` integer values of
//! the provider's Rust types, handles); [`handle`]'s table is a static initialised by module
//! init before any C can reach the module. Outside `abi/`, only [`crate::trace`] (the C trace
//! events the provider fires) and [`crate::statics`] (the module's statics that take an
//! `unsafe` promise to set up) hold `unsafe`.
//!
//! Each function is a thin shim: it validates what C hands it (NULL pointers, handles, lengths,
//! flags), answers a bad argument with a negative errno (through
//! [`kernel::error::from_result`]) and calls the safe provider code. These files and [`handle`]
//! are the only places of the provider that read C pointers; each function's `# Safety` says
//! what its C caller guarantees, and handles need no guarantee: they are numbers, looked up in
//! [`handle::Handles`], and anything that is not a live handle of the right kind is refused
//! with `-EINVAL`.

pub(crate) mod consumer;
pub(crate) mod dto;
pub(crate) mod ep;
pub(crate) mod evd;
pub(crate) mod handle;
pub(crate) mod ia;
pub(crate) mod lmr;
// The names of the C API's values, for messages.
pub(crate) mod msg;
// IAs in a given network namespace.
pub(crate) mod netns;
pub(crate) mod psp;
pub(crate) mod pz;
pub(crate) mod removal;
pub(crate) mod rmr;
pub(crate) mod srq;

pub(crate) use consumer::ConsumerWatch;

use crate::rdma::bound::Bound;
use crate::{evd::MAX_PRIVATE_DATA, ia::Ia};
use handle::Handles;
use kernel::{prelude::*, sync::Arc};

/// An rkdapl object that a C create call hands out a handle for.
pub(crate) trait Object: handle::Handled {
    /// Called with the value of the object's new handle, before the create call returns.
    fn published(&self, _handle: usize) {}

    /// Frees an object whose handle could not be published (its provider-level free: the
    /// constructor registered it with its IA), since nothing else could.
    fn unpublished(&self);
}

/// Stores `v` through the C out-pointer `out`.
///
/// # Errors
///
/// `-EINVAL` if `out` is NULL.
///
/// # Safety
///
/// `out` is NULL or valid for a write of a `T`.
unsafe fn put<T>(out: *mut T, v: T) -> Result {
    if out.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `out` is not NULL (checked), so it is valid for a write of a `T` (the caller's
    // guarantee).
    unsafe { out.write(v) };
    Ok(())
}

/// Creates the handle for `obj` and stores it in `*out`; on failure nothing stays behind
/// ([`Object::unpublished`]).
///
/// # Errors
///
/// `-EINVAL` if `out` is NULL, or [`Handles::insert`]'s error.
///
/// # Safety
///
/// `out` is NULL or valid for a write of a pointer.
unsafe fn publish<T: Object>(obj: Arc<T>, out: *mut *mut c_void) -> Result {
    if out.is_null() {
        obj.unpublished();
        return Err(EINVAL);
    }
    let h = Handles::insert(obj.clone()).inspect_err(|_| obj.unpublished())?;
    // SAFETY: `out` is not NULL (checked), so it is valid for a write of a pointer (the
    // caller's guarantee).
    unsafe { out.write(h) };
    obj.published(h as usize);
    Ok(())
}

/// Makes an object on the device of `ia` with `make` and publishes it in `*out`, both while
/// the IA is live: `make` registers the object with the IA, so a device removal either finds
/// it there or makes the call fail with `-ENODEV`.
///
/// # Errors
///
/// `-EINVAL` if `out` is NULL (checked before anything is made), `-ENODEV` once the device
/// was removed, `make`'s error, or [`publish`]'s.
///
/// # Safety
///
/// `out` is NULL or valid for a write of a pointer.
unsafe fn publish_live<T: Object>(
    ia: &Ia,
    out: *mut *mut c_void,
    make: impl FnOnce(&Bound<'_>) -> Result<Arc<T>>,
) -> Result {
    if out.is_null() {
        return Err(EINVAL);
    }
    ia.with_device(|dev| {
        let obj = make(dev)?;
        // SAFETY: `out` is writable (the caller's guarantee).
        unsafe { publish(obj, out) }
    })
}

/// Copies `len` bytes of private data from C.
///
/// # Errors
///
/// `-EINVAL` for a NULL `p` with a nonzero `len` or more than `RKDAPL_MAX_PRIVATE_DATA`
/// bytes, `-ENOMEM`.
///
/// # Safety
///
/// `p` is NULL or valid for reads of `len` bytes (only when `len` is at most
/// `RKDAPL_MAX_PRIVATE_DATA` is it read).
unsafe fn private_data(p: *const c_void, len: u32) -> Result<KVec<u8>> {
    let mut v = KVec::new();
    if len == 0 {
        return Ok(v);
    }
    if p.is_null() || len as usize > MAX_PRIVATE_DATA {
        return Err(EINVAL);
    }
    // SAFETY: `p` is not NULL (checked), so it points to `len` readable bytes (the caller's
    // guarantee), which are copied before this returns.
    let s = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len as usize) };
    v.extend_from_slice(s, GFP_KERNEL)?;
    Ok(v)
}

#[kunit_tests(rkdapl_abi)]
mod tests {
    use super::*;
    use crate::evd::MAX_PRIVATE_DATA;

    #[test]
    fn put_refuses_null() {
        let mut x = 0u32;
        // SAFETY: NULL, then a live local.
        unsafe {
            assert_eq!(put(core::ptr::null_mut(), 5u32), Err(EINVAL));
            assert_eq!(put(&mut x, 5), Ok(()));
        }
        assert_eq!(x, 5);
    }

    #[test]
    fn private_data_length_and_null_checks() -> Result {
        let src = [0x5au8; MAX_PRIVATE_DATA + 1];
        let p = src.as_ptr().cast::<c_void>();
        // SAFETY: `p` points to `MAX_PRIVATE_DATA + 1` readable bytes; NULL only with a
        // length that is refused or 0.
        unsafe {
            assert_eq!(private_data(core::ptr::null(), 0)?.len(), 0);
            assert_eq!(private_data(p, 0)?.len(), 0);
            assert_eq!(private_data(core::ptr::null(), 1).err(), Some(EINVAL));
            assert_eq!(
                private_data(p, MAX_PRIVATE_DATA as u32 + 1).err(),
                Some(EINVAL)
            );
            assert_eq!(private_data(p, u32::MAX).err(), Some(EINVAL));
            let v = private_data(p, MAX_PRIVATE_DATA as u32)?;
            assert_eq!(v.len(), 56);
            assert_eq!(v[..], src[..56]);
        }
        Ok(())
    }
}
