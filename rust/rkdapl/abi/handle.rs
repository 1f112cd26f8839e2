// SPDX-License-Identifier: GPL-2.0

//! Validated C handles.
//!
//! A C handle (`struct rkdapl_ep *`, ...) is not an address: it is a number that encodes an
//! index of one XArray, the object's kind and a generation:
//!
//! ```text
//!   63            32 31                4 3      0
//!  +----------------+-------------------+--------+
//!  |  XArray index  | generation (28 b) |  kind  |
//!  +----------------+-------------------+--------+
//! ```
//!
//! The entry at the index is a [`Slot`]: the handle's value and the `Arc` reference the handle
//! owns. A C call turns a handle back into its object with [`Handles::get`] (a new reference)
//! or [`Handles::with`] (a borrow, for calls that do not sleep): an RCU-protected `xa_load()`
//! and a comparison of the whole handle value with the slot's, so no lock is taken and no
//! lock is shared by the objects' users. NULL, a pointer to anything else, a handle of the
//! wrong kind and a freed handle are refused with `-EINVAL` instead of being dereferenced: a
//! freed handle's index is empty, or reused with another generation. (A reused index matches
//! only if 2^28 handles were created in between and the last one got the same index.)
//!
//! Insertion and removal take the XArray's own lock (process context). Removal waits for an
//! RCU grace period before it gives back the reference and frees the slot, so a lookup that
//! raced with it (a caller bug, but not a crash) never touches freed memory.

use crate::bindings;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use kernel::{prelude::*, sync::rcu, sync::Arc, types::Opaque};

/// A type of rkdapl object a C caller holds a handle to, and the kind its handles carry: each
/// kind belongs to exactly one type, which is what lets a lookup cast a slot back safely.
pub(crate) trait Handled: Send + Sync + 'static {
    /// The kind of this type's handles.
    const KIND: Kind;
}

macro_rules! handled {
    ($($t:ty => $k:ident),* $(,)?) => {
        $(impl Handled for $t {
            const KIND: Kind = Kind::$k;
        })*
    };
}

handled! {
    crate::ia::Ia => Ia,
    crate::pz::Pz => Pz,
    crate::lmr::Lmr => Lmr,
    crate::rmr::Rmr => Rmr,
    crate::evd::Evd => Evd,
    crate::ep::Ep => Ep,
    crate::psp::Psp => Psp,
    crate::psp::Cr => Cr,
    crate::srq::Srq => Srq,
}

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
    Srq,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Ia,
        Kind::Pz,
        Kind::Lmr,
        Kind::Rmr,
        Kind::Evd,
        Kind::Ep,
        Kind::Psp,
        Kind::Cr,
        Kind::Srq,
    ];

    /// The kind's code in a handle's low bits: never 0.
    const fn code(self) -> usize {
        self as usize + 1
    }

    fn from_code(c: usize) -> Option<Kind> {
        Kind::ALL.get(c.wrapping_sub(1)).copied()
    }
}

const KIND_BITS: u32 = 4;
const KIND_MASK: usize = (1 << KIND_BITS) - 1;
const GEN_BITS: u32 = 28;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;
const INDEX_SHIFT: u32 = KIND_BITS + GEN_BITS;

// A handle must hold a 32-bit index above the kind and generation bits.
const _: () = assert!(usize::BITS == 64);

/// The handle value of index `index`, generation `gen`, kind `kind`.
fn encode(index: u32, gen: u32, kind: Kind) -> usize {
    ((index as usize) << INDEX_SHIFT) | (((gen & GEN_MASK) as usize) << KIND_BITS) | kind.code()
}

/// The XArray index of `handle` if its kind bits say `kind`.
fn index_of(handle: usize, kind: Kind) -> Result<usize> {
    if handle & KIND_MASK != kind.code() {
        return Err(EINVAL);
    }
    Ok(handle >> INDEX_SHIFT)
}

/// What the XArray holds for one live handle.
///
/// # Invariants
///
/// `handle` is 0 until the slot is published, then the value of the handle that owns
/// `obj`'s reference; a slot of kind `k` always holds an `Arc` of the one type used with `k`.
#[repr(C)]
struct Slot<T> {
    /// First, so that code that does not know `T` can read it ([`Handles::snapshot`]).
    handle: AtomicUsize,
    obj: Arc<T>,
}

/// The handle table: an allocating XArray (indices from 1).
struct Table(Opaque<bindings::xarray>);

// SAFETY: The XArray is used only through its C API, which is thread-safe (its lock for
// changes, RCU for loads).
unsafe impl Sync for Table {}

static TABLE: Table = Table(Opaque::uninit());

/// Generations, one per created handle.
static NEXT_GEN: AtomicU32 = AtomicU32::new(0);

fn xa() -> *mut bindings::xarray {
    TABLE.0.get()
}

/// The entry at `index`, or NULL. The caller holds the RCU read lock or the XArray's lock.
fn load(index: usize) -> *mut c_void {
    // SAFETY: The table was initialised by `Handles::init`; `xa_load` may run in any context.
    unsafe { bindings::xa_load(xa(), index) }
}

/// The handle table's operations.
pub(crate) struct Handles;

impl Handles {
    /// Must be called once, before any other function of this type (module init).
    pub(crate) fn init() {
        // SAFETY: Called exactly once, from module init, before any C entry point can run;
        // `TABLE` is static, so the XArray never moves.
        unsafe { bindings::xa_init_flags(xa(), bindings::XA_FLAGS_ALLOC1) };
    }

    /// Frees the table's own memory (module exit, through [`TableGuard`]). Slots still in it
    /// (objects a consumer left open when rkdapl was forced out) are leaked on purpose: they
    /// may still be in use.
    fn exit() {
        // SAFETY: Module exit: no C entry point runs any more.
        unsafe { bindings::xa_destroy(xa()) };
    }

    /// Turns `obj` into a C handle (of `T`'s kind); the handle owns this reference. Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`, or `-EBUSY` if 2^32 - 1 handles are live.
    pub(crate) fn insert<T: Handled>(obj: Arc<T>) -> Result<*mut c_void> {
        let kind = T::KIND;
        let gen = NEXT_GEN.fetch_add(1, Ordering::Relaxed);
        let slot = KBox::new(
            Slot {
                handle: AtomicUsize::new(0),
                obj,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(slot);
        let mut index = 0u32;
        let limit = bindings::xa_limit {
            min: 1,
            max: u32::MAX,
        };
        // SAFETY: The table is initialised; `__xa_alloc` wants the XArray's lock held, and
        // may drop and retake it to allocate with `GFP_KERNEL` (process context).
        let r = unsafe {
            bindings::xa_lock(xa());
            let r = bindings::__xa_alloc(xa(), &mut index, raw.cast(), limit, bindings::GFP_KERNEL);
            bindings::xa_unlock(xa());
            r
        };
        if r != 0 {
            // SAFETY: Not published: `raw` is still ours alone.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(Error::from_errno(r));
        }
        let h = encode(index, gen, kind);
        // INVARIANT: Published with the value of the handle that now owns the reference.
        // SAFETY: `raw` is valid: only `remove`, which needs this value, frees it.
        unsafe { (*raw).handle.store(h, Ordering::Release) };
        Ok(h as *mut c_void)
    }

    /// Runs `f` on the object behind `handle`, without taking a reference, inside an RCU read
    /// section: `f` must not sleep. Any context. For the calls that do not sleep (posting,
    /// dequeuing); a concurrent free of the same handle waits until `f` returns.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T`.
    pub(crate) fn with<T: Handled, R>(
        handle: *const c_void,
        f: impl FnOnce(&Arc<T>) -> R,
    ) -> Result<R> {
        let g = rcu::read_lock();
        Ok(f(Self::borrow(handle, &g)?))
    }

    /// The object behind `handle`, borrowed for the RCU read section `g`: the post and dequeue
    /// calls borrow the EP and every LMR of a DTO under one section, without taking
    /// references. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T`.
    pub(crate) fn borrow<'g, T: Handled>(
        handle: *const c_void,
        g: &'g rcu::Guard,
    ) -> Result<&'g Arc<T>> {
        let _ = g;
        let index = index_of(handle as usize, T::KIND)?;
        let p = load(index);
        if p.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: Entries are `Slot`s from `insert`, freed by `remove` only after an RCU
        // grace period that follows their erasure; `g` is an RCU read section that outlives
        // the borrow. `Slot` is `repr(C)` with the handle first, which is read without knowing
        // the slot's type.
        let h = unsafe { (*p.cast::<AtomicUsize>()).load(Ordering::Acquire) };
        if h != handle as usize {
            return Err(EINVAL);
        }
        // SAFETY: As above (the slot outlives `'g`); the whole value matched, kind bits
        // included, so the slot holds an `Arc<T>`: each kind belongs to one type (`Handled`).
        let slot = unsafe { &*p.cast::<Slot<T>>() };
        Ok(&slot.obj)
    }

    /// A new reference to the object behind `handle`. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T`.
    pub(crate) fn get<T: Handled>(handle: *const c_void) -> Result<Arc<T>> {
        Self::with(handle, |o: &Arc<T>| o.clone())
    }

    /// Ends the handle and returns the reference it owned. Process context; sleeps (one RCU
    /// grace period).
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T` (for example, freed already).
    pub(crate) fn remove<T: Handled>(handle: *const c_void) -> Result<Arc<T>> {
        let index = index_of(handle as usize, T::KIND)?;
        // SAFETY: The table is initialised. Under its lock, the entry cannot be erased by
        // another `remove`; `__xa_erase` wants the lock held.
        let p = unsafe {
            bindings::xa_lock(xa());
            let p = load(index).cast::<Slot<T>>();
            // The handle first, read without knowing the slot's type (`repr(C)`).
            let ours = !p.is_null()
                && (*p.cast::<AtomicUsize>()).load(Ordering::Acquire) == handle as usize;
            if ours {
                bindings::__xa_erase(xa(), index);
            }
            bindings::xa_unlock(xa());
            if ours {
                p
            } else {
                core::ptr::null_mut()
            }
        };
        if p.is_null() {
            return Err(EINVAL);
        }
        // Lookups that found the slot before the erasure are done after this.
        rcu::synchronize_rcu();
        // SAFETY: `p` came from `KBox::into_raw` in `insert`; it is out of the table, and no
        // reader can still see it after the grace period.
        let slot = unsafe { KBox::from_raw(p) };
        Ok(KBox::into_inner(slot).obj)
    }

    /// Calls `f` with each live handle's value and kind, under the RCU read lock (`f` must not
    /// sleep). Returns how many it saw.
    fn for_each(mut f: impl FnMut(usize, Kind)) -> usize {
        let _rcu = rcu::read_lock();
        let mut n = 0usize;
        let mut index = 0usize;
        // SAFETY: The table is initialised; `xa_find` and `xa_find_after` run under RCU.
        let mut p =
            unsafe { bindings::xa_find(xa(), &mut index, usize::MAX, bindings::XA_PRESENT) };
        while !p.is_null() {
            // SAFETY: Entries are `Slot`s, valid in this RCU read section; `handle` is the
            // first field of every `Slot` (`repr(C)`).
            let h = unsafe { (*p.cast::<AtomicUsize>()).load(Ordering::Acquire) };
            if let Some(k) = Kind::from_code(h & KIND_MASK) {
                f(h, k);
                n += 1;
            }
            // SAFETY: As above.
            p = unsafe {
                bindings::xa_find_after(xa(), &mut index, usize::MAX, bindings::XA_PRESENT)
            };
        }
        n
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
            let mut fits = true;
            Self::for_each(|h, k| fits &= v.push_within_capacity((h, k)).is_ok());
            if fits {
                return Ok(v);
            }
        }
    }

    /// Number of live handles (all kinds), for leak checks at module unload.
    pub(crate) fn count() -> usize {
        Self::for_each(|_, _| ())
    }
}

/// Owned by the module: destroys the handle table when dropped, which the module orders after
/// the ib_client's unregistration (whose device removal walks the table).
pub(crate) struct TableGuard;

impl Drop for TableGuard {
    fn drop(&mut self) {
        Handles::exit();
    }
}

#[kunit_tests(rkdapl_handle)]
mod tests {
    use super::*;
    use crate::{
        ep::Ep,
        evd::{AsyncSlot, Evd},
    };

    /// A real object of kind EVD: the only kind that needs no RDMA device. It belongs to no
    /// IA, so a consumer's unload never collects it.
    fn evd() -> Result<Arc<Evd>> {
        Evd::unlisted(1, AsyncSlot::new()?)
    }

    #[test]
    fn encode_places_index_generation_kind() {
        // Kind codes: IA 1, PZ 2, LMR 3, RMR 4, EVD 5, EP 6, PSP 7, CR 8.
        assert_eq!(encode(5, 3, Kind::Evd), 0x0000_0005_0000_0035);
        assert_eq!(encode(1, 0, Kind::Ia), 0x0000_0001_0000_0001);
        assert_eq!(encode(u32::MAX, GEN_MASK, Kind::Cr), 0xffff_ffff_ffff_fff8);
        assert_eq!(encode(u32::MAX, 0, Kind::Ia) >> INDEX_SHIFT, 0xffff_ffff);
    }

    #[test]
    fn generation_wraps_inside_its_bits() {
        // 2^28 handles later the generation repeats; it never spills into the index.
        assert_eq!(encode(7, 1 << GEN_BITS, Kind::Pz), encode(7, 0, Kind::Pz));
        assert_eq!(encode(7, GEN_MASK + 2, Kind::Pz), encode(7, 1, Kind::Pz));
        assert_eq!(index_of(encode(7, u32::MAX, Kind::Pz), Kind::Pz), Ok(7));
        assert_eq!(encode(7, u32::MAX, Kind::Pz) & KIND_MASK, Kind::Pz.code());
    }

    #[test]
    fn kind_codes_are_distinct_nonzero_and_round_trip() {
        let mut seen = 0u32;
        for k in Kind::ALL {
            let c = k.code();
            assert!((1..=KIND_MASK).contains(&c));
            assert_eq!(seen & (1 << c), 0);
            seen |= 1 << c;
            assert_eq!(Kind::from_code(c), Some(k));
        }
        assert_eq!(seen, 0x3fe);
        assert_eq!(Kind::from_code(0), None);
        for c in 10..=KIND_MASK {
            assert_eq!(Kind::from_code(c), None);
        }
        assert_eq!(Kind::from_code(usize::MAX), None);
    }

    #[test]
    fn index_of_refuses_other_kinds_null_and_addresses() {
        let h = encode(42, 9, Kind::Lmr);
        assert_eq!(index_of(h, Kind::Lmr), Ok(42));
        for k in Kind::ALL {
            if k != Kind::Lmr {
                assert_eq!(index_of(h, k), Err(EINVAL));
            }
            // NULL, and a kernel address (aligned: kind bits 0), are no handle of any kind.
            assert_eq!(index_of(0, k), Err(EINVAL));
            assert_eq!(index_of(0xffff_8880_0123_4560, k), Err(EINVAL));
            // Kind bits 9..15 name no kind.
            assert_eq!(index_of(encode(42, 9, Kind::Ia) | 0xf, k), Err(EINVAL));
        }
    }

    #[test]
    fn live_handle_is_found_until_freed() -> Result {
        let e = evd()?;
        let before = Handles::count();
        let h = Handles::insert(e.clone())?;
        let v = h as usize;
        assert_eq!(v & KIND_MASK, Kind::Evd.code());
        assert!(v >> INDEX_SHIFT >= 1);
        assert_eq!(Handles::count(), before + 1);
        assert!(Arc::ptr_eq(&Handles::get::<Evd>(h)?, &e));
        assert_eq!(
            Handles::with(h, |x: &Arc<Evd>| Arc::ptr_eq(x, &e)),
            Ok(true)
        );

        // The same index and generation with another kind's bits, or another generation.
        let as_ep = ((v & !KIND_MASK) | Kind::Ep.code()) as *const c_void;
        assert_eq!(Handles::get::<Ep>(as_ep).err(), Some(EINVAL));
        let stale = (v ^ (1 << KIND_BITS)) as *const c_void;
        assert_eq!(Handles::get::<Evd>(stale).err(), Some(EINVAL));
        assert_eq!(Handles::remove::<Evd>(stale).err(), Some(EINVAL));
        assert_eq!(Handles::get::<Evd>(core::ptr::null()).err(), Some(EINVAL));
        // Refused removals left it in place.
        assert_eq!(Handles::count(), before + 1);

        let back = Handles::remove::<Evd>(h)?;
        assert!(Arc::ptr_eq(&back, &e));
        assert_eq!(Handles::get::<Evd>(h).err(), Some(EINVAL));
        assert_eq!(Handles::with(h, |_: &Arc<Evd>| ()), Err(EINVAL));
        assert_eq!(Handles::remove::<Evd>(h).err(), Some(EINVAL));
        assert_eq!(Handles::count(), before);
        Ok(())
    }

    #[test]
    fn reused_index_gets_a_new_generation() -> Result {
        let (a, b) = (evd()?, evd()?);
        let h1 = Handles::insert(a)? as usize;
        drop(Handles::remove::<Evd>(h1 as *const c_void)?);
        // The XArray hands out its lowest free index: the one just freed.
        let h2 = Handles::insert(b.clone())? as usize;
        assert_eq!(h2 >> INDEX_SHIFT, h1 >> INDEX_SHIFT);
        assert!(h2 != h1);
        assert_eq!(Handles::get::<Evd>(h1 as *const c_void).err(), Some(EINVAL));
        assert!(Arc::ptr_eq(&Handles::get::<Evd>(h2 as *const c_void)?, &b));
        assert!(Arc::ptr_eq(
            &Handles::remove::<Evd>(h2 as *const c_void)?,
            &b
        ));
        Ok(())
    }
}
