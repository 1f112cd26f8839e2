// SPDX-License-Identifier: GPL-2.0

//! Validated C handles.
//!
//! A C handle (`struct rkdapl_ep *`, ...) is not an address: it is a number that encodes an
//! index of the handle table, the object's kind and the index's generation:
//!
//! ```text
//!   63            32 31                4 3      0
//!  +----------------+-------------------+--------+
//!  |  table index   | generation (28 b) |  kind  |
//!  +----------------+-------------------+--------+
//! ```
//!
//! The table ([`table`]) is a flat array, published with RCU as a task's file descriptor table
//! is, of pointers to [`Slot`]s: the handle's value and the `Arc` reference the handle owns. A
//! C call turns a handle back into its object with [`Handles::get`] (a new reference) or
//! [`Handles::with`] (a borrow, for calls that do not sleep): one RCU load of the array, a
//! bounds check, one load of the entry and a comparison of the whole handle value with the
//! slot's, so no lock is taken and no lock is shared by the objects' users. NULL, a pointer to
//! anything else, a handle of the wrong kind and a freed handle are refused with `-EINVAL`
//! instead of being dereferenced: a freed handle's entry is empty, or reused with another
//! generation.
//!
//! Each index has its own generation, which advances by one each time a handle at the index is
//! freed, modulo 2^28. A freed handle is therefore refused until its index has been reused
//! exactly 2^28 times (268,435,456 create/free cycles of that one index): then, if the handle
//! live at the index has the freed one's kind as well, the freed handle names it. Fewer cycles
//! never make a freed handle valid (KUnit: `rkdapl_handle`).
//!
//! Creating and freeing a handle take the table's mutex (process context). Freeing clears the
//! entry at once, so that later lookups fail; the slot, with the object reference it holds, is
//! released after an RCU grace period, so a lookup that raced with the free (a caller bug, but
//! not a crash) never touches freed memory. [`Handles::remove`] does not wait for that grace
//! period: the slot is released with `call_rcu()`, then on a workqueue (process context: an
//! object's last reference may sleep), and the caller gets a reference of its own. Whatever
//! the object frees only with its last reference (a PZ's PD, an IA's device reference) goes
//! then, unless another holder keeps it longer; [`Handles::drain`] waits for it.
//! [`Handles::remove_sync`] waits for the grace period and hands back the handle's own
//! reference, for objects whose last reference must go before the free returns.

mod table;

use kernel::{prelude::*, sync::rcu, sync::Arc};
use table::Head;

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

/// The table index of `handle` if its kind bits say `kind`.
fn index_of(handle: usize, kind: Kind) -> Result<usize> {
    if handle & KIND_MASK != kind.code() {
        return Err(EINVAL);
    }
    Ok(handle >> INDEX_SHIFT)
}

/// What the table holds for one live handle.
///
/// # Invariants
///
/// `head.handle` is the value of the handle that owns `obj`'s reference, set before the slot
/// is published; a slot of kind `k` always holds an `Arc` of the one type used with `k`;
/// `head.release` is [`release_slot`] for `T`.
#[repr(C)]
struct Slot<T> {
    /// First, so that code that does not know `T` can read the handle ([`Handles::snapshot`]).
    head: Head,
    obj: Arc<T>,
}

/// Frees a [`Slot<T>`] and drops the reference it holds. Process context (the release work);
/// may sleep.
///
/// # Safety
///
/// `p` is the head of a `Slot<T>` from `KBox::into_raw`, taken out of the table, which no
/// lookup can still read.
unsafe fn release_slot<T>(p: *mut Head) {
    // SAFETY: The caller's guarantee; `Head` is the first field of the `repr(C)` `Slot<T>`.
    drop(unsafe { KBox::from_raw(p.cast::<Slot<T>>()) });
}

/// The handle table's operations.
pub(crate) struct Handles;

impl Handles {
    /// Must be called once, before any other function of this type (module init).
    pub(crate) fn init() {
        table::init();
    }

    /// Turns `obj` into a C handle (of `T`'s kind); the handle owns this reference. Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`, or `-EBUSY` if 2^32 - 1 handles are live.
    pub(crate) fn insert<T: Handled>(obj: Arc<T>) -> Result<*mut c_void> {
        let slot = KBox::new(
            Slot {
                head: Head::new(release_slot::<T>),
                obj,
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(slot);
        // INVARIANT: `publish` sets the handle before it publishes the slot.
        // SAFETY: `raw` is an unpublished `Slot<T>`, whose head releases it as one.
        match unsafe { table::publish(raw.cast(), T::KIND) } {
            Ok(h) => Ok(h as *mut c_void),
            Err(e) => {
                // SAFETY: Not published: `raw` is still ours alone.
                drop(unsafe { KBox::from_raw(raw) });
                Err(e)
            }
        }
    }

    /// Runs `f` on the object behind `handle`, without taking a reference, inside an RCU read
    /// section: `f` must not sleep. Any context. For the calls that do not sleep (posting,
    /// dequeuing); the object outlives `f` even if the same handle is freed meanwhile.
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
        let index = index_of(handle as usize, T::KIND)?;
        let p = table::load(index, g);
        // SAFETY: A non-NULL entry is a slot's head, released only a grace period after it
        // was taken out of the table; `g` is an RCU read section that outlives the borrow.
        // The handle is a slot's first field, read without knowing the slot's type.
        if p.is_null() || unsafe { (*p).handle } != handle as usize {
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

    /// Takes `handle`'s slot out of the table: later lookups of `handle` fail.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T`.
    fn take<T: Handled>(handle: *const c_void) -> Result<*mut Slot<T>> {
        let index = index_of(handle as usize, T::KIND)?;
        let p = table::take(index, handle as usize);
        if p.is_null() {
            return Err(EINVAL);
        }
        // The whole value matched, kind bits included: the slot is a `Slot<T>`.
        Ok(p.cast())
    }

    /// Ends the handle and returns a reference to its object. The reference the handle owned
    /// is dropped later, after an RCU grace period, in process context (a workqueue): with it
    /// goes whatever the object frees only with its last reference, unless the caller's
    /// reference is the last. Does not wait for the grace period. Process context; may sleep
    /// (the table's mutex).
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T` (for example, freed already).
    pub(crate) fn remove<T: Handled>(handle: *const c_void) -> Result<Arc<T>> {
        let p = Self::take::<T>(handle)?;
        // SAFETY: `p` is a valid `Slot<T>` until it is retired, below.
        let obj = unsafe { (*p).obj.clone() };
        // SAFETY: `p` is out of the table (lookups that start now do not find it) and retired
        // once, here; its head releases it as a `Slot<T>` (type invariant).
        unsafe { table::retire(p.cast()) };
        Ok(obj)
    }

    /// Ends the handle and returns the reference it owned, once no lookup can still use it:
    /// waits for one RCU grace period. For objects whose last reference must go before the
    /// free returns (an LMR's unmaps the consumer's memory). Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-EINVAL` if `handle` is not a live handle of `T` (for example, freed already).
    pub(crate) fn remove_sync<T: Handled>(handle: *const c_void) -> Result<Arc<T>> {
        let p = Self::take::<T>(handle)?;
        // Lookups that found the slot before it was taken are done after this.
        rcu::synchronize_rcu();
        // SAFETY: `p` came from `KBox::into_raw` in `insert`; it is out of the table, and no
        // reader can still see it after the grace period.
        let slot = unsafe { KBox::from_raw(p) };
        Ok(KBox::into_inner(slot).obj)
    }

    /// Waits until the references of every handle ended so far by [`Handles::remove`] are
    /// dropped (and with them what the objects free with their last one). Process context;
    /// sleeps (`rcu_barrier()` and the release work); not from the release work (an object's
    /// drop).
    pub(crate) fn drain() {
        table::drain();
    }

    /// [`Handles::drain`], unless the caller is inside an upcall: a release there might wait
    /// for the context the upcall holds up (a CQ's completion work, an rdma_cm id's handler),
    /// so the releases then end on their own, shortly after. Process context; may sleep.
    pub(crate) fn drain_unless_in_upcall() {
        if !crate::evd::in_upcall::in_upcall() {
            table::drain();
        }
    }

    /// Calls `f` with each live handle's value and kind, under the RCU read lock (`f` must not
    /// sleep). Returns how many it saw.
    fn for_each(mut f: impl FnMut(usize, Kind)) -> usize {
        let mut n = 0usize;
        table::for_each(|h| {
            if let Some(k) = Kind::from_code(h & KIND_MASK) {
                f(h, k);
                n += 1;
            }
        });
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

/// Owned by the module: releases what handles left pending and frees the table when dropped,
/// which the module orders after the ib_client's unregistration (whose device removal walks
/// the table).
pub(crate) struct TableGuard;

impl Drop for TableGuard {
    fn drop(&mut self) {
        table::exit();
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
        // The table reuses the index freed last: the one just freed.
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

    /// The index of handle `h`.
    fn index(h: *mut c_void) -> usize {
        h as usize >> INDEX_SHIFT
    }

    #[test]
    fn stale_handle_is_refused_until_its_index_wraps_its_generation() -> Result {
        let (a, b) = (evd()?, evd()?);
        let h0 = Handles::insert(a)?;
        let i = index(h0);
        let g0 = (h0 as usize >> KIND_BITS) as u32 & GEN_MASK;
        drop(Handles::remove::<Evd>(h0)?);
        // 1,000 real create/free cycles of the one index: each a new generation, and no
        // handle of an earlier cycle is found.
        let mut prev = h0;
        for n in 1..=1000u32 {
            let h = Handles::insert(b.clone())?;
            assert_eq!(index(h), i);
            assert_eq!(h as usize, encode(i as u32, g0.wrapping_add(n), Kind::Evd));
            assert!(Arc::ptr_eq(&Handles::get::<Evd>(h)?, &b));
            assert_eq!(Handles::get::<Evd>(h0).err(), Some(EINVAL));
            assert_eq!(Handles::get::<Evd>(prev).err(), Some(EINVAL));
            drop(Handles::remove::<Evd>(h)?);
            assert_eq!(Handles::get::<Evd>(h).err(), Some(EINVAL));
            prev = h;
        }
        assert_eq!(
            table::generation(i),
            Some(g0.wrapping_add(1001) & GEN_MASK)
        );
        // The bound, exactly: after 2^28 - 1 reuses of the index the stale `h0` is still
        // refused; the 2^28th reuse gives its value back (the cycles in between are set, not
        // run: a quarter of a billion would take hours here).
        assert!(table::set_generation(i, g0.wrapping_add(GEN_MASK)));
        let last = Handles::insert(b.clone())?;
        assert_eq!(index(last), i);
        assert!(last != h0);
        assert_eq!(Handles::get::<Evd>(h0).err(), Some(EINVAL));
        drop(Handles::remove::<Evd>(last)?);
        assert_eq!(table::generation(i), Some(g0));
        let wrapped = Handles::insert(b.clone())?;
        assert_eq!(wrapped, h0);
        assert!(Arc::ptr_eq(&Handles::get::<Evd>(h0)?, &b));
        drop(Handles::remove::<Evd>(wrapped)?);
        Handles::drain();
        Ok(())
    }

    #[test]
    fn handles_stay_valid_across_growth() -> Result {
        let e = evd()?;
        let before = Handles::count();
        let len0 = table::len();
        let mut hs = KVec::new();
        // Until the array was replaced by a bigger one, and a few more.
        while table::len() == len0 || hs.len() < 70 {
            hs.push(Handles::insert(e.clone())?, GFP_KERNEL)?;
            assert!(hs.len() <= len0 + 200);
        }
        assert!(table::len() >= 2 * len0.max(32));
        assert_eq!(Handles::count(), before + hs.len());
        for &h in hs.iter() {
            assert!(Arc::ptr_eq(&Handles::get::<Evd>(h)?, &e));
            assert_eq!(Handles::with(h, |x: &Arc<Evd>| Arc::ptr_eq(x, &e)), Ok(true));
        }
        for &h in hs.iter() {
            assert!(Arc::ptr_eq(&Handles::remove::<Evd>(h)?, &e));
        }
        for &h in hs.iter() {
            assert_eq!(Handles::get::<Evd>(h).err(), Some(EINVAL));
            assert_eq!(Handles::remove::<Evd>(h).err(), Some(EINVAL));
        }
        assert_eq!(Handles::count(), before);
        Handles::drain();
        Ok(())
    }

    #[test]
    fn remove_sync_hands_back_the_handles_reference() -> Result {
        let e = evd()?;
        let h = Handles::insert(e.clone())?;
        assert!(Arc::ptr_eq(&Handles::remove_sync::<Evd>(h)?, &e));
        assert_eq!(Handles::get::<Evd>(h).err(), Some(EINVAL));
        assert_eq!(Handles::remove_sync::<Evd>(h).err(), Some(EINVAL));
        assert_eq!(Handles::remove_sync::<Evd>(core::ptr::null()).err(), Some(EINVAL));
        Ok(())
    }
}
