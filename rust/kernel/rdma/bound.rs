// SPDX-License-Identifier: GPL-2.0

//! A device as one client sees it between `add` and `remove`, and the revocation of what the
//! client made on it.
//!
//! ib_core's rule for a client (`Documentation/infiniband/core_locking.rst`) is that
//! everything it made on a device is released before its `remove` callback returns: no verbs
//! object, DMA mapping or CM id may outlive it, and no device reference either, because
//! `ib_unregister_device()` waits for those. Safe Rust cannot leave that rule to the client:
//! a [`super::pd::Pd`] kept in an `Arc` somewhere outlives any callback. So the layer enforces
//! it, the way [`crate::devres::Devres`] does for a bus device's resources:
//!
//! - [`super::client::Registration`] makes a [`BoundDevice`] for each device in `add` and
//!   revokes it after the client's [`super::client::Client::remove`] returned;
//! - objects are made from a [`Bound`] token (the device, held bound for the call), and the
//!   device resource of each (a PD, CQ, SRQ, MR, DMA mapping, the QP and CM id of a
//!   [`super::cm::CmId`], an event handler) is tracked by its `BoundDevice`;
//! - revocation first makes the device unreachable (every later [`BoundDevice::access`] and
//!   RCU liveness check fails, and the calls in progress are waited for), then releases every
//!   resource still tracked, in ib_core's order (QPs and CM ids, SRQs, CQs, MRs, DMA mappings,
//!   PDs), and forgets the device;
//! - an object whose resource was revoked stays valid as a Rust value: its methods that would
//!   reach the device return `ENODEV` (posts: `ENOTCONN` where documented), and its `Drop`
//!   frees only its own memory.
//!
//! A resource is released exactly once, by its owner's `Drop` or by revocation, whichever
//! claims it first; the other waits for that release to end, so that revocation never releases
//! a PD while an owner is still deregistering one of its MRs, and an owner's `Drop` does not
//! return while revocation still releases its resource.
//!
//! Liveness checks on the data path are RCU reads ([`BoundDevice::live`]); calls that may sleep
//! hold a [`Bound`], an SRCU read-side section of the device's binding, not a lock.

use super::device::Device;
use crate::{
    alloc::Flags,
    bindings,
    interrupt::local_interrupt_disable,
    new_spinlock_irq, new_srcu,
    prelude::*,
    processor::cpu_relax,
    sync::{rcu, srcu, Arc, SpinLockIrq, Srcu},
    time::{delay::fsleep, Delta},
};
use core::{
    cell::UnsafeCell,
    ops::Deref,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering},
};

/// The order in which revocation releases the resources of a device: users before what they
/// use (a QP before its CQs, SRQ and PD; MRs and DMA mappings before their PD).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rank {
    /// An asynchronous event handler (`ib_register_event_handler`).
    EventHandler = 0,
    /// A CM id and its QP ([`super::cm::CmId`]).
    CmId = 1,
    /// A shared receive queue.
    Srq = 2,
    /// A completion queue.
    Cq = 3,
    /// A memory region (FRWR).
    Mr = 4,
    /// A DMA mapping ([`super::mr::DmaRegion`]).
    DmaRegion = 5,
    /// A protection domain.
    Pd = 6,
}

/// Number of [`Rank`]s.
const RANKS: usize = 7;

/// A device resource that is released once.
pub(crate) trait Release: Send + Unpin + 'static {
    /// Where revocation releases it.
    const RANK: Rank;

    /// Whether [`Release::release`] never sleeps and may run in any context (a DMA
    /// unmapping). Revocation then releases the resource with local interrupts disabled, and
    /// an owner whose `Drop` finds it being revoked spins until it is released instead of
    /// sleeping, so that the owner's `Drop` may run in any context too.
    const ATOMIC: bool = false;

    /// Releases the resource. Process context, may sleep; any context if
    /// [`Release::ATOMIC`].
    fn release(self);
}

/// A tracked resource, as revocation sees it.
trait Revoke: Send + Sync {
    /// Releases the resource unless its owner did. Process context; sleeps.
    fn revoke(&self);

    /// Its index in its rank's list of [`Tracked`], kept under the binding's lock.
    fn index(&self) -> &AtomicUsize;
}

/// The [`Revoke::index`] of a resource not in a list.
const UNTRACKED: usize = usize::MAX;

/// [`Slot`]'s states.
const LIVE: u8 = 0;
const RELEASING: u8 = 1;
const RELEASED: u8 = 2;

/// One device resource of a layer object, shared between the object and its device's
/// [`BoundDevice`], which revokes it if the object outlives the device.
///
/// No lock: whoever moves `state` from `LIVE` to `RELEASING` takes the resource and releases
/// it (which may wait for rdma_cm's handlers or a CQ's completion work, where the owner of
/// another resource may be dropped: a lock held across releases would chain them all in one
/// lockdep class), then sets `RELEASED`; the other side waits for that.
///
/// # Invariants
///
/// `res` is `Some` while `state` is `LIVE` (once filled by [`BoundDevice::try_track`]); only
/// the caller that moved `state` away from `LIVE` touches it afterwards.
pub(crate) struct Slot<R: Release> {
    state: AtomicU8,
    /// Where it is in its binding's list (see [`Revoke::index`]).
    index: AtomicUsize,
    res: UnsafeCell<Option<R>>,
    bound: Arc<BoundDevice>,
}

// SAFETY: `res` is reached by one thread at a time (type invariant); `R` is `Send`.
unsafe impl<R: Release> Sync for Slot<R> {}
// SAFETY: As above.
unsafe impl<R: Release> Send for Slot<R> {}

impl<R: Release> Slot<R> {
    /// The device the resource was made on.
    pub(crate) fn bound(&self) -> &Arc<BoundDevice> {
        &self.bound
    }

    /// Takes the resource, if no one else did: the caller releases it, then calls
    /// [`Slot::released`]. Any context.
    pub(crate) fn claim(&self) -> Option<R> {
        self.state
            .compare_exchange(LIVE, RELEASING, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        // SAFETY: The state moved from `LIVE` here: `res` is this caller's (type invariant).
        unsafe { (*self.res.get()).take() }
    }

    /// The resource [`Slot::claim`] gave is released. Any context.
    pub(crate) fn released(&self) {
        self.state.store(RELEASED, Ordering::Release);
    }

    /// Waits until whoever claimed the resource released it. Process context; sleeps.
    pub(crate) fn wait_released(&self) {
        while self.state.load(Ordering::Acquire) != RELEASED {
            fsleep(Delta::from_millis(1));
        }
    }

    /// Takes the resource out without releasing it, unless someone claimed it already (a
    /// revocation releasing it). For an owner that released it by other means. Any context.
    pub(crate) fn try_take(&self) {
        if let Some(r) = self.claim() {
            drop(r);
            self.released();
        }
    }

    /// Stops tracking the resource (its owner released it, or is about to drop it after a
    /// revocation). Any context.
    pub(crate) fn forget(this: &Arc<Self>) {
        this.bound.untrack(R::RANK, &**this);
    }

    /// Releases the resource now (an owner's `Drop`) unless revocation did (then waits for it
    /// to have finished), and stops tracking it. Process context, may sleep; any context if
    /// [`Release::ATOMIC`]: the wait for revocation's release then spins, which ends because
    /// revocation releases such a resource with local interrupts disabled (it cannot be
    /// halfway on this CPU) and without sleeping.
    pub(crate) fn release_now(this: &Arc<Self>) {
        match this.claim() {
            Some(r) => {
                r.release();
                this.released();
            }
            None if R::ATOMIC => {
                while this.state.load(Ordering::Acquire) != RELEASED {
                    cpu_relax();
                }
            }
            None => this.wait_released(),
        }
        this.bound.untrack(R::RANK, &**this);
    }
}

impl<R: Release> Revoke for Slot<R> {
    fn revoke(&self) {
        // An atomic release is not interrupted or preempted between the claim and
        // `released()`: an owner's `Drop` spinning for it on this CPU (from an interrupt, or
        // under a spinlock) would otherwise wait for a release that cannot go on.
        let irq = R::ATOMIC.then(local_interrupt_disable);
        if let Some(r) = self.claim() {
            r.release();
            self.released();
            return;
        }
        drop(irq);
        // The owner's `Drop` releases it.
        self.wait_released();
    }

    fn index(&self) -> &AtomicUsize {
        &self.index
    }
}

/// What a [`BoundDevice`]'s lock protects: a spinlock (interrupts off), so that resources
/// made and dropped per I/O (DMA mappings) are tracked and untracked in any context, in O(1):
/// each keeps its index in its list ([`Revoke::index`]), and the last entry fills the place of
/// one that leaves. Nothing that may sleep runs under it: lists grow before it is taken, and
/// revocation takes them out before it releases anything.
struct Tracked {
    /// The resources to revoke, by [`Rank`].
    ranks: [KVec<Arc<dyn Revoke>>; RANKS],
    /// Revocation has run: nothing is tracked any more.
    revoked: bool,
}

/// An RDMA device as one client sees it, from the client's `add` until its `remove`.
///
/// # Invariants
///
/// `dev` is a registered device while `gone` is false, and while SRCU read-side sections of
/// `srcu` ([`Bound`] tokens) or RCU read-side sections that saw `gone` false exist: revocation
/// sets `gone`, waits for both grace periods, and only then lets the device go.
#[pin_data]
pub struct BoundDevice {
    dev: NonNull<bindings::ib_device>,
    gone: AtomicBool,
    #[pin]
    srcu: Srcu,
    #[pin]
    tracked: SpinLockIrq<Tracked>,
}

// SAFETY: The device pointer is only used while the device is registered (type invariant);
// everything else is atomics or locked.
unsafe impl Send for BoundDevice {}
// SAFETY: See the `Send` impl.
unsafe impl Sync for BoundDevice {}

impl BoundDevice {
    /// A binding of `dev`. Called by the client registration's `add` callback.
    pub(super) fn new(dev: &Device) -> Result<Arc<BoundDevice>> {
        Arc::pin_init(
            try_pin_init!(BoundDevice {
                dev: NonNull::from(dev).cast(),
                gone: AtomicBool::new(false),
                srcu <- new_srcu!("rdma_bound"),
                tracked <- new_spinlock_irq!(Tracked {
                    ranks: [const { KVec::new() }; RANKS],
                    revoked: false,
                }, "rdma_bound_tracked"),
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Holds the device bound for as long as the token lives (revocation waits for it), for a
    /// call that may sleep: creating objects, control verbs. Any context (an SRCU read-side
    /// section); do not keep the token across a wait for the device's removal.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device is being removed.
    pub fn access(this: &Arc<BoundDevice>) -> Result<Bound<'_>> {
        let srcu = this.srcu.read_lock();
        if this.gone.load(Ordering::Acquire) {
            return Err(ENODEV);
        }
        // INVARIANT: `revoke` waits for the section `srcu`, which saw `gone` false.
        Ok(Bound {
            b: this,
            _srcu: srcu,
        })
    }

    /// Whether the device is still bound, for a call inside the RCU read-side section `_rcu`
    /// that uses it: revocation waits for that section to end before it releases anything. The
    /// data path's check. Any context.
    pub fn live(&self, _rcu: &rcu::Guard) -> bool {
        !self.gone.load(Ordering::Acquire)
    }

    /// Whether this is a binding of `dev` (compares addresses only). Any context.
    pub fn is(&self, dev: &Device) -> bool {
        core::ptr::eq(self.dev.as_ptr(), dev.as_raw())
    }

    /// Starts tracking `res`, for revocation. Called with a [`Bound`] of this device held, so
    /// revocation has not begun. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` if revocation ran already, `-ENOMEM`; `res` is released then.
    pub(crate) fn track<R: Release>(this: &Arc<BoundDevice>, res: R) -> Result<Arc<Slot<R>>> {
        Self::track_gfp(this, res, GFP_KERNEL)
    }

    /// [`BoundDevice::track`], allocating with `flags`: any context with `GFP_ATOMIC` (the
    /// list's lock is an IRQ-safe spinlock).
    ///
    /// # Errors
    ///
    /// As [`BoundDevice::track`].
    pub(crate) fn track_gfp<R: Release>(
        this: &Arc<BoundDevice>,
        res: R,
        flags: Flags,
    ) -> Result<Arc<Slot<R>>> {
        Self::try_track_gfp(this, res, flags).map_err(|(e, res)| {
            res.release();
            e
        })
    }

    /// [`BoundDevice::track`], giving `res` back on an error instead of releasing it.
    pub(crate) fn try_track<R: Release>(
        this: &Arc<BoundDevice>,
        res: R,
    ) -> core::result::Result<Arc<Slot<R>>, (Error, R)> {
        Self::try_track_gfp(this, res, GFP_KERNEL)
    }

    /// [`BoundDevice::try_track`], allocating with `flags`.
    fn try_track_gfp<R: Release>(
        this: &Arc<BoundDevice>,
        res: R,
        flags: Flags,
    ) -> core::result::Result<Arc<Slot<R>>, (Error, R)> {
        let slot = Arc::new(
            Slot {
                state: AtomicU8::new(LIVE),
                index: AtomicUsize::new(UNTRACKED),
                res: UnsafeCell::new(None),
                bound: this.clone(),
            },
            flags,
        );
        let slot = match slot {
            Ok(s) => s,
            Err(e) => return Err((e.into(), res)),
        };
        let mut entry: Arc<dyn Revoke> = slot.clone();
        let list = R::RANK as usize;
        loop {
            let want = {
                let mut t = this.tracked.lock();
                if t.revoked {
                    return Err((ENODEV, res));
                }
                let v = &mut t.ranks[list];
                let i = v.len();
                match v.push_within_capacity(entry) {
                    Ok(()) => {
                        v[i].index().store(i, Ordering::Relaxed);
                        break;
                    }
                    Err(e) => entry = e.0,
                }
                (2 * v.capacity()).max(16)
            };
            // A larger list, allocated outside the lock and moved in (same order, same
            // indices) unless another caller grew it meanwhile; the old one goes after the
            // lock.
            let mut bigger = match KVec::with_capacity(want, flags) {
                Ok(v) => v,
                Err(e) => return Err((e.into(), res)),
            };
            let mut t = this.tracked.lock();
            let v = &mut t.ranks[list];
            if v.capacity() < want {
                for e in v.drain_all() {
                    // Cannot fail: `want` exceeds the old capacity.
                    let _ = bigger.push_within_capacity(e);
                }
                core::mem::swap(v, &mut bigger);
            }
        }
        // SAFETY: No one else reaches `res` yet: the slot is `LIVE` and revocation, the only
        // other user of the list, is held off by the caller's token.
        unsafe { *slot.res.get() = Some(res) };
        Ok(slot)
    }

    /// Stops tracking `r` (its owner released it), if it is tracked. Any context.
    fn untrack(&self, rank: Rank, r: &dyn Revoke) {
        let gone = {
            let mut t = self.tracked.lock();
            let v = &mut t.ranks[rank as usize];
            let i = r.index().load(Ordering::Relaxed);
            let ours = v
                .get(i)
                .is_some_and(|e| core::ptr::addr_eq(Arc::as_ptr(e), r as *const dyn Revoke));
            if ours {
                let last = v.len() - 1;
                v.swap(i, last);
                let gone = v.pop();
                if let Some(moved) = v.get(i) {
                    moved.index().store(i, Ordering::Relaxed);
                }
                r.index().store(UNTRACKED, Ordering::Relaxed);
                gone
            } else {
                None
            }
        };
        // The list's reference goes after the lock.
        drop(gone);
    }

    /// The device. Only while it is bound: through a [`Bound`], or while [`BoundDevice::live`]
    /// holds in an RCU read-side section.
    fn device(&self) -> &Device {
        // SAFETY: Callers hold a token or an RCU section that keeps the device registered
        // (type invariant).
        unsafe { Device::from_raw(self.dev.as_ptr()) }
    }

    /// Revokes the binding: no new [`Bound`] or [`BoundDevice::live`] succeeds, the ones in
    /// progress are waited for, then every resource still tracked is released, in [`Rank`]
    /// order. Called by the client registration's `remove` callback after the client's own
    /// `remove` returned, with the device still registered. Process context; sleeps.
    ///
    /// Returns how many resources it released (the client left them behind).
    pub(super) fn revoke(&self) -> usize {
        self.gone.store(true, Ordering::Release);
        // Every RCU section and every token that saw `gone` false has ended.
        rcu::synchronize_rcu();
        self.srcu.synchronize();
        let ranks = {
            let mut t = self.tracked.lock();
            t.revoked = true;
            core::mem::replace(&mut t.ranks, [const { KVec::new() }; RANKS])
        };
        let mut n = 0;
        for v in ranks.iter() {
            for r in v.iter() {
                r.revoke();
            }
            n += v.len();
        }
        n
    }
}

/// A token that the device is bound, given by [`BoundDevice::access`] and by the client's
/// `add` callback: objects are made from it. Dereferences to the device.
///
/// # Invariants
///
/// `_srcu` is a read-side section of `b.srcu` that saw `b.gone` false.
pub struct Bound<'a> {
    b: &'a Arc<BoundDevice>,
    _srcu: srcu::Guard<'a>,
}

impl Bound<'_> {
    /// The binding, which objects made from this token keep.
    pub fn binding(&self) -> &Arc<BoundDevice> {
        self.b
    }
}

impl Deref for Bound<'_> {
    type Target = Device;
    fn deref(&self) -> &Device {
        self.b.device()
    }
}
