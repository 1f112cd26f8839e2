// SPDX-License-Identifier: GPL-2.0

//! The children of an IA: every PZ, LMR, RMR, EP, PSP, CR and EVD made on it, from its
//! constructor to its free. Device removal and consumer unload ([`crate::removal`]) walk the
//! IAs and these registries to find what to revoke, whatever the objects were made through
//! (the C ABI's handles or the Rust API).
//!
//! A registry holds a reference to each child. A child holds its IA (through its PZ, PSP, ...),
//! so an IA lives while it has children; the cycle ends when the child is freed (its
//! provider-level `free`, which the C ABI's free calls and the Rust API's drops call), which
//! takes it out. An object that was freed but is still used (a PZ kept by its LMRs) is reached
//! through its users ([`Child::parent`]).
//!
//! This module names no other provider module: objects see their IA's registry as
//! [`Children`] and are seen by it as [`Child`] trait objects, so the imports stay one way.

use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::{
    alloc::Flags,
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// The kinds of children, in the order removal revokes them (after the IA was made dead, before
/// the IA's device reference goes): EPs (their CM ids, QPs and CQs), SRQs, CRs, PSPs, RMRs (their
/// MRs), LMRs (their DMA mappings), PZs (their PDs); EVDs hold no device resource.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rank {
    Ep,
    /// After the EPs (whose QPs use the SRQ), before the PZs (whose PD it is in).
    Srq,
    Cr,
    Psp,
    Rmr,
    Lmr,
    Pz,
    Evd,
}

impl Rank {
    /// Every kind, in revocation order.
    pub(crate) const ORDER: [Rank; 8] = [
        Rank::Ep,
        Rank::Srq,
        Rank::Cr,
        Rank::Psp,
        Rank::Rmr,
        Rank::Lmr,
        Rank::Pz,
        Rank::Evd,
    ];
}

/// An object registered with its IA, as removal sees it.
pub(crate) trait Child: Send + Sync {
    /// Its kind.
    fn rank(&self) -> Rank;

    /// Device removal, first step, for every child before any is revoked: EPs end their
    /// connection with `RKDAPL_CONNECTION_EVENT_BROKEN`. Process context.
    fn mark_broken(&self) {}

    /// Consumer unload, first step: nothing calls into the consumer from now on (EVDs disable
    /// their upcalls). Process context; sleeps.
    fn silence(&self) {}

    /// Releases the object's device resources (device removal, consumer unload); the object
    /// stays registered until freed, and later uses of it fail. Process context; sleeps.
    fn revoke(&self) {}

    /// Consumer unload, after [`Child::revoke`]: the object's provider-level free, which
    /// cannot be refused here; it leaves the registry. Process context; sleeps.
    fn release(&self);

    /// An object this one keeps alive that has device resources of its own: removal revokes
    /// it too, even if the consumer freed it already (the PZ of an LMR, RMR or EP).
    fn parent(&self) -> Option<Arc<dyn Child>> {
        None
    }

    /// Where the child sits in its registry, for a removal without a search: the children
    /// made and freed per I/O (LMRs, RMRs) have one; the others are searched for.
    fn slot(&self) -> Option<&RegSlot> {
        None
    }
}

/// The place of a child in its IA's registry ([`Child::slot`]): its index there, which the
/// registry keeps up to date under its lock. A child is in one registry at most (its IA's).
pub(crate) struct RegSlot(AtomicUsize);

impl RegSlot {
    /// Not in a registry.
    const NONE: usize = usize::MAX;

    /// The slot of a child not yet registered.
    pub(crate) const fn new() -> RegSlot {
        RegSlot(AtomicUsize::new(Self::NONE))
    }

    /// Under the registry's lock (which orders every access: relaxed is enough).
    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Under the registry's lock.
    fn set(&self, i: usize) {
        self.0.store(i, Ordering::Relaxed)
    }
}

/// What a registry entry keeps besides the child (an EP's debugfs directory), dropped when the
/// child leaves.
pub(crate) type Attached = KBox<dyn Send + Sync>;

struct Entry {
    child: Arc<dyn Child>,
    _attached: Option<Attached>,
}

impl Entry {
    /// Tells the child it is at index `i` now, if it keeps its [`RegSlot`].
    fn placed(&self, i: usize) {
        if let Some(s) = self.child.slot() {
            s.set(i);
        }
    }
}

/// Called, after the registry's lock, with a registry that was closed and lost its last child:
/// the IA leaves the list of IAs; what it returns (that list's reference) is dropped then.
/// Process context; may sleep.
pub(crate) type Delist = fn(&Children) -> Option<Arc<dyn Send + Sync>>;

struct Set {
    v: KVec<Entry>,
    /// The device was removed (or the consumer is unloading): no more children with device
    /// resources.
    dead: bool,
    /// The IA was closed: once the last child leaves, it leaves the list of IAs.
    closed: bool,
    /// It left the list (closed, no child: nothing is added any more).
    delisted: bool,
}

/// The registry of one IA.
///
/// A spinlock (taken with interrupts off) guards it, so that children are added and removed
/// in any context: LMRs and RMRs made per I/O come and go where a block request does. Removal
/// is O(1) for a child with a [`RegSlot`] (the last entry fills its place), a search from the
/// end for the others (long-lived: PZs, EPs, EVDs, ...). Nothing that may sleep runs under
/// the lock: memory for a new entry is allocated before it, entries leave after it.
#[pin_data]
pub(crate) struct Children {
    #[pin]
    set: SpinLockIrq<Set>,
    delist: Delist,
}

impl Children {
    /// An empty registry; `delist` is called once it is closed and empty. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn new(delist: Delist) -> Result<Arc<Children>> {
        Arc::pin_init(
            pin_init!(Children {
                set <- new_spinlock_irq!(
                    Set { v: KVec::new(), dead: false, closed: false, delisted: false },
                    "rkdapl_ia_children"
                ),
                delist,
            }),
            GFP_KERNEL,
        )
    }

    /// Registers `child`, with `attached` to drop when it leaves; memory for the registry's
    /// growth (amortised: it doubles) is allocated with `gfp`. Any context with `GFP_ATOMIC`
    /// or `GFP_NOWAIT`; may sleep with `GFP_KERNEL`.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed (EVDs, which hold no device resource, are still
    /// taken), `-EINVAL` if the IA was closed and has no child left (a parent's free raced
    /// this creation), `-ENOMEM`.
    pub(crate) fn add_gfp(
        &self,
        child: Arc<dyn Child>,
        attached: Option<Attached>,
        gfp: Flags,
    ) -> Result {
        let mut entry = Entry {
            child,
            _attached: attached,
        };
        loop {
            let want = {
                let mut s = self.set.lock();
                if s.dead && entry.child.rank() != Rank::Evd {
                    return Err(ENODEV);
                }
                if s.delisted {
                    return Err(EINVAL);
                }
                let i = s.v.len();
                match s.v.push_within_capacity(entry) {
                    Ok(()) => {
                        s.v[i].placed(i);
                        return Ok(());
                    }
                    Err(e) => entry = e.0,
                }
                (2 * s.v.capacity()).max(8)
            };
            // Outside the lock: a larger list, moved in unless another caller grew it
            // meanwhile (then this one is dropped, after the lock, and the push retried).
            let mut bigger = KVec::with_capacity(want, gfp)?;
            let mut s = self.set.lock();
            if s.v.capacity() < want {
                for (i, e) in s.v.drain_all().enumerate() {
                    e.placed(i);
                    // Cannot fail: `want` exceeds the old capacity.
                    let _ = bigger.push_within_capacity(e);
                }
                core::mem::swap(&mut s.v, &mut bigger);
            }
        }
    }

    /// [`Children::add_gfp`] with `GFP_KERNEL`: process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Children::add_gfp`].
    pub(crate) fn add(&self, child: Arc<dyn Child>, attached: Option<Attached>) -> Result {
        self.add_gfp(child, attached, GFP_KERNEL)
    }

    /// Takes `child` out (nothing if it is not registered: freed already). Any context,
    /// unless `child` is the last child of a closed IA (the IA then leaves the list of IAs:
    /// process context, may sleep); the entry (an EP's debugfs directory, which waits for its
    /// readers, but no LMR's or RMR's) is dropped after the lock.
    pub(crate) fn remove<T: Child + ?Sized>(&self, child: &T) {
        let (entry, gone) = {
            let mut s = self.set.lock();
            let at = match child.slot() {
                Some(slot) => Some(slot.get()).filter(|i| {
                    s.v.get(*i)
                        .is_some_and(|e| core::ptr::addr_eq(Arc::as_ptr(&e.child), child))
                }),
                // From the end: the newest children are the likeliest to go.
                None =>
                    s.v.iter()
                        .rposition(|e| core::ptr::addr_eq(Arc::as_ptr(&e.child), child)),
            };
            let entry = at.and_then(|i| {
                let last = s.v.len() - 1;
                s.v.swap(i, last);
                let e = s.v.pop();
                if let Some(moved) = s.v.get(i) {
                    moved.placed(i);
                }
                e
            });
            if let Some(e) = &entry {
                e.placed(RegSlot::NONE);
            }
            let gone = entry.is_some() && Self::done(&mut s);
            (entry, gone)
        };
        drop(entry);
        self.delist_if(gone);
    }

    /// The IA was closed (`rkdapl_ia_close`): it leaves the list of IAs now if it has no
    /// child, otherwise with its last child. Process context; sleeps.
    pub(crate) fn close(&self) {
        let gone = {
            let mut s = self.set.lock();
            if s.closed {
                return;
            }
            s.closed = true;
            Self::done(&mut s)
        };
        self.delist_if(gone);
    }

    /// Whether the registry is closed and empty now, for the first time: nothing is added to
    /// it from now on, and the caller delists the IA ([`Children::delist_if`]).
    fn done(s: &mut Set) -> bool {
        if s.closed && s.v.is_empty() && !s.delisted {
            s.delisted = true;
            true
        } else {
            false
        }
    }

    /// After the lock, if [`Children::done`] said so: the IA leaves the list of IAs; the
    /// registry's memory goes (it may live on in EVDs). Process context; may sleep.
    fn delist_if(&self, gone: bool) {
        if !gone {
            return;
        }
        let v = core::mem::take(&mut self.set.lock().v);
        drop(v);
        drop((self.delist)(self));
    }

    /// No more children with device resources (device removal, consumer unload). Any
    /// context.
    pub(crate) fn kill(&self) {
        self.set.lock().dead = true;
    }

    /// Appends a reference to every child to `out`. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`; `out` then holds some of them.
    pub(crate) fn snapshot(&self, out: &mut KVec<Arc<dyn Child>>) -> Result {
        loop {
            let n = self.set.lock().v.len();
            out.reserve(n, GFP_KERNEL)?;
            let s = self.set.lock();
            if s.v.len() > out.capacity() - out.len() {
                // More children meanwhile: room for them first.
                continue;
            }
            for e in s.v.iter() {
                // Cannot fail: room was reserved.
                let _ = out.push_within_capacity(e.child.clone());
            }
            return Ok(());
        }
    }
}


#[cfg(CONFIG_KUNIT = "y")]
mod kunit;
