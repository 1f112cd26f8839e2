// SPDX-License-Identifier: GPL-2.0

//! Validated C handles.
//!
//! A C handle (`struct rkdapl_ep *`, ...) is the address of a reference-counted rkdapl object,
//! made by [`Handles::insert`] from one `Arc` reference that the handle owns. Every live
//! handle is listed, with its kind, in one table; a C call turns a handle back into an `Arc`
//! only through [`Handles::get`], under the table's lock. So NULL, a pointer to anything else,
//! a handle of the wrong kind and (unless the address was reused) a freed handle are refused
//! with `-EINVAL` instead of being dereferenced.

use kernel::{prelude::*, sync::Arc, sync::ArcBorrow};

/// The kinds of rkdapl objects a C caller holds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Kind {
    Ia,
    Pz,
    Lmr,
    Rmr,
    Evd,
    Ep,
    Psp,
    Cr,
}

kernel::sync::global_lock! {
    // SAFETY: Initialized in `Handles::init`, called first thing in module init.
    unsafe(uninit) static TABLE: SpinLockIrq<KVec<(usize, Kind)>> = KVec::new();
}

/// The table of live handles.
pub(crate) struct Handles;

impl Handles {
    /// Must be called once, before any other function of this type.
    pub(crate) fn init() {
        // SAFETY: Called exactly once, from module init, before any C entry point can run.
        unsafe { TABLE.init() };
    }

    /// Turns `obj` into a C handle of `kind`; the handle owns this reference.
    pub(crate) fn insert<T>(obj: Arc<T>, kind: Kind) -> Result<*mut c_void> {
        let addr = Arc::as_ptr(&obj) as usize;
        let mut t = TABLE.lock();
        let pos = match t.binary_search(&(addr, kind)) {
            Ok(_) => return Err(EEXIST),
            Err(pos) => pos,
        };
        t.insert_within_capacity(pos, (addr, kind)).or_else(|_| {
            t.reserve(1, GFP_ATOMIC)?;
            t.insert_within_capacity(pos, (addr, kind))
                .map_err(|_| ENOMEM)
        })?;
        drop(t);
        Ok(Arc::into_raw(obj).cast_mut().cast())
    }

    /// A new reference to the object behind `handle`.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `kind`.
    pub(crate) fn get<T>(handle: *const c_void, kind: Kind) -> Result<Arc<T>> {
        let addr = handle as usize;
        let t = TABLE.lock();
        if t.binary_search(&(addr, kind)).is_err() {
            return Err(EINVAL);
        }
        // SAFETY: The table lists `addr` with `kind`, so it came from `insert::<T>` (each kind
        // is used with one `T`) and its reference is still owned by the handle; the lock keeps
        // `remove` from dropping that reference while we take another.
        let obj = unsafe { ArcBorrow::<T>::from_raw(addr as *const T) }.into();
        drop(t);
        Ok(obj)
    }

    /// Ends the handle and returns the reference it owned.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `kind` (for example, freed already).
    pub(crate) fn remove<T>(handle: *const c_void, kind: Kind) -> Result<Arc<T>> {
        let addr = handle as usize;
        let mut t = TABLE.lock();
        let pos = t.binary_search(&(addr, kind)).map_err(|_| EINVAL)?;
        t.remove(pos).map_err(|_| EINVAL)?;
        if t.is_empty() {
            // The table is a static: free its memory when the last handle goes, so nothing
            // is left at module unload.
            *t = KVec::new();
        }
        drop(t);
        // SAFETY: The entry came from `insert::<T>`, which leaked this reference for the
        // handle; removing the entry under the lock made us its only owner.
        Ok(unsafe { Arc::from_raw(addr as *const T) })
    }

    /// A copy of the table: every live handle and its kind. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn snapshot() -> Result<KVec<(usize, Kind)>> {
        loop {
            let want = Self::count() + 16;
            let mut v = KVec::with_capacity(want, GFP_KERNEL)?;
            let t = TABLE.lock();
            if t.len() <= want {
                for e in t.iter() {
                    // Cannot fail: the capacity was checked under the lock.
                    let _ = v.push_within_capacity(*e);
                }
                return Ok(v);
            }
        }
    }

    /// Number of live handles (all kinds), for leak checks at module unload.
    pub(crate) fn count() -> usize {
        TABLE.lock().len()
    }
}
