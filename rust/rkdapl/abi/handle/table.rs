// SPDX-License-Identifier: GPL-2.0

//! The handle table's storage: a flat array of slot pointers published with RCU, as
//! `fs/file.c` publishes a task's `fdtable`, and the deferred release of what leaves it.
//!
//! A lookup is one `rcu_dereference()` of the array, a bounds check and one load of the entry;
//! the caller then compares the slot's handle value with the one it was given. Changes (a new
//! entry, a cleared entry, a bigger array) are made under one mutex, [`STATE`], which also
//! keeps what lookups never read: the free indexes and each index's generation.
//!
//! Growing allocates an array twice the size, copies the entries, publishes it with a release
//! store (`rcu_assign_pointer()`) and retires the old one. A cleared entry's slot is retired
//! too: a lookup that found it before it was cleared may still read it. A retired object goes,
//! after an RCU grace period (`call_rcu()`), to a list that one work item on
//! `system_unbound_wq` empties, in process context: a slot's release drops the object
//! reference the handle owned, and the last reference of an rkdapl object may sleep (it
//! destroys verbs objects, takes mutexes), which an RCU callback (softirq) must not. So a free
//! does not wait for a grace period; [`drain`] waits until everything retired so far is
//! released.

use super::{Kind, GEN_MASK};
use crate::bindings;
use core::{
    mem::offset_of,
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{prelude::*, sync::rcu, types::Opaque};

/// The first field of everything that is retired: slots ([`super::Slot`]) and arrays.
///
/// # Invariants
///
/// `release` frees the object this header starts, with the type it was created with.
#[repr(C)]
pub(super) struct Head {
    /// A slot's handle value, set before the slot is published and not changed after; 0 for
    /// an array. First, so that code that does not know a slot's type can read it.
    pub(super) handle: usize,
    /// For `call_rcu()`.
    rcu: Opaque<bindings::callback_head>,
    /// The next object on [`PENDING`].
    next: *mut Head,
    /// Frees the object. Process context; may sleep.
    release: unsafe fn(*mut Head),
}

impl Head {
    /// A header for an object that `release` frees.
    pub(super) const fn new(release: unsafe fn(*mut Head)) -> Head {
        Head {
            handle: 0,
            rcu: Opaque::uninit(),
            next: ptr::null_mut(),
            release,
        }
    }
}

/// One published array of entries: NULL or a slot's [`Head`].
#[repr(C)]
struct Array {
    head: Head,
    entries: KVVec<AtomicPtr<Head>>,
}

/// Frees an [`Array`] retired by a grow.
///
/// # Safety
///
/// `p` is the head of an `Array` from `KBox::into_raw`, no longer reachable by lookups.
unsafe fn release_array(p: *mut Head) {
    // SAFETY: The caller's guarantee; `Head` is the first field of the `repr(C)` `Array`.
    drop(unsafe { KBox::from_raw(p.cast::<Array>()) });
}

/// The array lookups read: NULL until the first handle is created.
static ARRAY: AtomicPtr<Array> = AtomicPtr::new(ptr::null_mut());

/// The smallest array.
const MIN_LEN: usize = 64;
/// Indexes are 32-bit (the handle layout); index 0 is never used.
const MAX_LEN: usize = 1 << 32;

/// What only changes of the table read, under [`STATE`].
struct State {
    /// Indexes of cleared entries, reused last freed first. Its capacity is kept at the
    /// array's length, so that a removal never allocates.
    free: KVVec<u32>,
    /// The generation of the next handle at each index of the array (`len` entries).
    gens: KVVec<u32>,
    /// The lowest index never used.
    next: usize,
}

kernel::sync::global_lock! {
    // SAFETY: Initialised by `init`, which module init calls before anything can use it
    // (`Handles::init`); `init` runs `GlobalLock::init` once.
    unsafe(uninit) static STATE: Mutex<State> =
        State { free: KVVec::new(), gens: KVVec::new(), next: 1 };
}

/// Objects retired whose grace period has ended, waiting for [`WORK`].
static PENDING: AtomicPtr<Head> = AtomicPtr::new(ptr::null_mut());

/// The work item that releases [`PENDING`].
struct StaticWork(Opaque<bindings::work_struct>);

// SAFETY: The work item is used only through the workqueue API, which is thread-safe.
unsafe impl Sync for StaticWork {}

static WORK: StaticWork = StaticWork(Opaque::uninit());

/// Sets up the table. Called once, by module init, before anything else here (see
/// `Handles::init`).
pub(super) fn init() {
    // SAFETY: Called once, by module init, before any use of `STATE`.
    unsafe { STATE.init() };
    let key = kernel::static_lock_class!();
    // SAFETY: `WORK` is static, so it never moves; it is initialised here, once, before
    // anything can queue it; `run` has the signature a work function needs.
    unsafe {
        bindings::init_work_with_key(
            WORK.0.get(),
            Some(run),
            false,
            c"rkdapl_handle_release".as_char_ptr(),
            key.as_ptr(),
        )
    };
}

/// The entry at `index`: NULL, or a slot's header that stays valid until `_g` ends. Any
/// context.
pub(super) fn load(index: usize, _g: &rcu::Guard) -> *mut Head {
    let a = ARRAY.load(Ordering::Acquire);
    if a.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: A published array is freed only a grace period after it was replaced, and the
    // caller is in an RCU read section (`_g`).
    let entries = unsafe { &(*a).entries };
    match entries.get(index) {
        Some(e) => e.load(Ordering::Acquire),
        None => ptr::null_mut(),
    }
}

/// Replaces the array (at least [`MIN_LEN`] entries) with one twice as long, under `st`.
fn grow(st: &mut State) -> Result {
    let old = ARRAY.load(Ordering::Relaxed);
    // SAFETY: Under `STATE`, which every replacement of the array holds: `old` is current.
    let old_entries = (!old.is_null()).then(|| unsafe { &(*old).entries });
    let len = old_entries.map_or(0, |e| e.len());
    let new_len = (len * 2).max(MIN_LEN);
    if new_len > MAX_LEN {
        return Err(EBUSY);
    }
    let mut entries = KVVec::with_capacity(new_len, GFP_KERNEL)?;
    for i in 0..new_len {
        let p = old_entries.map_or(ptr::null_mut(), |e| {
            e.get(i).map_or(ptr::null_mut(), |x| x.load(Ordering::Relaxed))
        });
        entries.push(AtomicPtr::new(p), GFP_KERNEL)?;
    }
    st.free.reserve(new_len - st.free.len(), GFP_KERNEL)?;
    st.gens.reserve(new_len - st.gens.len(), GFP_KERNEL)?;
    let new = KBox::new(
        Array {
            head: Head::new(release_array),
            entries,
        },
        GFP_KERNEL,
    )?;
    // Nothing can fail from here on.
    while st.gens.len() < new_len {
        let _ = st.gens.push_within_capacity(0);
    }
    // `rcu_assign_pointer()`: the entries are written before the array is seen.
    ARRAY.store(KBox::into_raw(new), Ordering::Release);
    if !old.is_null() {
        // SAFETY: `old` is an `Array`'s head (`Head` first, `repr(C)`), replaced above: only
        // lookups that loaded it before can still read it.
        unsafe { retire(old.cast()) };
    }
    Ok(())
}

/// Publishes the slot `p` under a new handle of kind `kind` and returns the handle. Process
/// context; may sleep.
///
/// # Errors
///
/// `-ENOMEM`, or `-EBUSY` if every index (2^32 - 1) is in use.
///
/// # Safety
///
/// `p` is the head of a slot that is not published, whose `release` frees it.
pub(super) unsafe fn publish(p: *mut Head, kind: Kind) -> Result<usize> {
    let mut st = STATE.lock();
    let index = match st.free.pop() {
        Some(i) => i as usize,
        None => {
            if st.next >= st.gens.len() {
                grow(&mut st)?;
            }
            st.next += 1;
            st.next - 1
        }
    };
    let h = super::encode(index as u32, st.gens[index], kind);
    // SAFETY: `p` is not published yet (the caller's guarantee): nothing else reads it.
    unsafe { (*p).handle = h };
    let a = ARRAY.load(Ordering::Relaxed);
    // SAFETY: Under `STATE`: `a` is the current array, which `grow` made at least as long as
    // `gens` (so longer than `index`).
    unsafe { (&(*a).entries)[index].store(p, Ordering::Release) };
    Ok(h)
}

/// Clears the entry of `handle` if it is at `index` and returns its slot, which is no longer
/// found by lookups that start after this; NULL if `handle` is not live. The index's
/// generation advances, so `handle` is never found again (up to the bound in the module
/// documentation of [`super`]). Process context; may sleep.
pub(super) fn take(index: usize, handle: usize) -> *mut Head {
    let mut st = STATE.lock();
    let g = rcu::read_lock();
    let p = load(index, &g);
    // SAFETY: A published slot is released only after it was taken, under `STATE`, which is
    // held; `handle` is a slot header's first field.
    if p.is_null() || unsafe { (*p).handle } != handle {
        return ptr::null_mut();
    }
    let a = ARRAY.load(Ordering::Relaxed);
    // SAFETY: Under `STATE`: `a` is the current array and holds `p` at `index`.
    unsafe { (&(*a).entries)[index].store(ptr::null_mut(), Ordering::Release) };
    st.gens[index] = st.gens[index].wrapping_add(1) & GEN_MASK;
    // Cannot fail: `grow` keeps the capacity at the array's length.
    let _ = st.free.push_within_capacity(index as u32);
    p
}

/// Calls `f` with every published slot's handle value, in an RCU read section (`f` must not
/// sleep). Any context.
pub(super) fn for_each(mut f: impl FnMut(usize)) {
    let g = rcu::read_lock();
    let a = ARRAY.load(Ordering::Acquire);
    if a.is_null() {
        return;
    }
    // SAFETY: As in `load`.
    for e in unsafe { (*a).entries.iter() } {
        let p = e.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: As in `load` (`g` is held); `handle` is constant once published.
            f(unsafe { (*p).handle });
        }
    }
    drop(g);
}

/// Releases `p` (calls its `release`) in process context after an RCU grace period, without
/// waiting for it: `call_rcu()`, then [`WORK`]. Any context.
///
/// # Safety
///
/// `p` is a valid [`Head`] of an object no longer reachable by lookups that start from now
/// on, and retired once.
pub(super) unsafe fn retire(p: *mut Head) {
    // SAFETY: `p` is valid (the caller's guarantee); its `rcu` field is ours until
    // `rcu_done` runs, which the kernel calls once, after a grace period.
    unsafe { bindings::call_rcu((*p).rcu.get(), Some(rcu_done)) };
}

/// The RCU callback of [`retire`]: hands the object to [`WORK`]. Softirq context: must not
/// sleep, so it only links the object onto [`PENDING`] and queues the work.
///
/// # Safety
///
/// Called by RCU with the `rcu` field of a [`Head`] given to `call_rcu()` by [`retire`].
unsafe extern "C" fn rcu_done(rcu: *mut bindings::callback_head) {
    // `container_of()`: `rcu` is a `Head`'s field.
    let p = rcu
        .cast::<u8>()
        .wrapping_sub(offset_of!(Head, rcu))
        .cast::<Head>();
    let mut old = PENDING.load(Ordering::Relaxed);
    loop {
        // SAFETY: `p` is valid and ours: its grace period ended and only `run` frees it,
        // after it was linked here.
        unsafe { (*p).next = old };
        // Release: `run` reads `next` after its acquire swap. A push-only list emptied whole
        // (`llist_add()` and `llist_del_all()`) has no ABA problem.
        match PENDING.compare_exchange_weak(old, p, Ordering::Release, Ordering::Relaxed) {
            Ok(_) => break,
            Err(cur) => old = cur,
        }
    }
    // SAFETY: `WORK` was initialised by `init`; `queue_work_on` may be called in any context;
    // queuing a work item already pending does nothing, and `run` takes the whole list.
    unsafe {
        bindings::queue_work_on(
            bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int,
            bindings::system_unbound_wq,
            WORK.0.get(),
        )
    };
}

/// [`WORK`]'s function: releases everything on [`PENDING`]. Process context.
///
/// # Safety
///
/// Called by the workqueue for [`WORK`].
unsafe extern "C" fn run(_work: *mut bindings::work_struct) {
    loop {
        let mut p = PENDING.swap(ptr::null_mut(), Ordering::Acquire);
        if p.is_null() {
            return;
        }
        while !p.is_null() {
            // SAFETY: Objects on `PENDING` are valid retired objects, each linked once and
            // owned by whoever empties the list (this function); their grace period ended.
            let (next, release) = unsafe { ((*p).next, (*p).release) };
            // SAFETY: As above; `release` frees `p` with its own type (type invariant).
            unsafe { release(p) };
            p = next;
        }
    }
}

/// Waits until everything retired before the call is released. Process context; sleeps (an
/// `rcu_barrier()`, then the release work); not from within a release.
pub(super) fn drain() {
    // Every `call_rcu()` made so far has run `rcu_done`, which queued `WORK`.
    rcu::rcu_barrier();
    // SAFETY: `WORK` was initialised by `init`; process context.
    unsafe { bindings::flush_work(WORK.0.get()) };
}

/// Releases what is pending and frees the array and the free indexes (module exit). Slots
/// still in the array (objects a consumer left open when rkdapl was forced out) are leaked on
/// purpose: they may still be in use.
pub(super) fn exit() {
    drain();
    {
        // A static is never dropped: its vectors are emptied here.
        let mut st = STATE.lock();
        st.free = KVVec::new();
        st.gens = KVVec::new();
        st.next = 1;
    }
    let a = ARRAY.swap(ptr::null_mut(), Ordering::AcqRel);
    if !a.is_null() {
        // SAFETY: Module exit: no C entry point runs any more, so no lookup reads `a`.
        drop(unsafe { KBox::from_raw(a) });
    }
}

/// The generation the next handle at `index` gets: for KUnit tests, which drive one index
/// through many generations.
#[cfg(CONFIG_KUNIT = "y")]
pub(super) fn generation(index: usize) -> Option<u32> {
    STATE.lock().gens.get(index).copied()
}

/// Sets the generation of the free `index`, as if it had been reused `gen` times: for KUnit
/// tests of the wrap. Returns whether `index` is free.
#[cfg(CONFIG_KUNIT = "y")]
pub(super) fn set_generation(index: usize, gen: u32) -> bool {
    let mut st = STATE.lock();
    let free = st.free.iter().any(|&i| i as usize == index);
    if free {
        st.gens[index] = gen & GEN_MASK;
    }
    free
}

/// The array's length (0 before the first handle): for KUnit tests of growth.
#[cfg(CONFIG_KUNIT = "y")]
pub(super) fn len() -> usize {
    let g = rcu::read_lock();
    let a = ARRAY.load(Ordering::Acquire);
    // SAFETY: As in `load`.
    let n = if a.is_null() { 0 } else { unsafe { (*a).entries.len() } };
    drop(g);
    n
}
