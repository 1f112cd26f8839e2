// SPDX-License-Identifier: GPL-2.0

//! How a [`super::CmId`]'s owner reaches its `rdma_cm_id` and QP ([`CmIdAccess`],
//! [`QpAccess`]), and how its device's removal destroys them if the owner keeps the CM id
//! ([`CmIdRes`], tracked by the device's binding from the QP's creation, see
//! [`super::super::bound`]; or, without a QP, released on rdma_cm's device removal event).
//!
//! The revocation waits for the owner's calls in progress ([`Users`]) and, for an id adopted
//! in a connect-request callback, for that callback ([`Adoption`]); after it, the owner's
//! calls fail with `-ENODEV` and the [`super::CmId`]'s `Drop` frees only memory.

use super::super::{
    mr::MrPool,
    qp::Qp,
    wr::AttachedPool,
};
use super::CmIdRef;
use crate::{
    bindings,
    prelude::*,
    sync::{rcu, Arc, LockClassKey, Mutex, SetOnce},
    task::Task,
    time::{delay::fsleep, Delta},
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering},
};

/// The calls in progress on a CM id through [`super::CmId::id`] and [`super::CmId::qp`] (counted)
/// and [`super::CmId::qp_with_guard`] (RCU), which the revocation of the id at its device's
/// removal waits for before it destroys the id.
///
/// # Invariants
///
/// `n` counts the [`CmIdAccess`]es that exist; once `revoked` is set, no new one is made.
pub(super) struct Users {
    n: AtomicUsize,
    revoked: AtomicBool,
    /// Set by whoever destroys the id: the owner's `Drop`, or the release queued on
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL` ([`Users::device_removal`]).
    claimed: AtomicBool,
    /// Set once that release destroyed the id.
    destroyed: AtomicBool,
}

impl Users {
    pub(super) fn new() -> Users {
        Users {
            n: AtomicUsize::new(0),
            revoked: AtomicBool::new(false),
            claimed: AtomicBool::new(false),
            destroyed: AtomicBool::new(false),
        }
    }

    /// Claims the destruction of the id for the caller: false if another did. Any context.
    pub(super) fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }

    /// Waits until the release queued by [`Users::device_removal`] destroyed the id. For an
    /// owner's `Drop` that lost the claim to it. Process context; sleeps.
    pub(super) fn wait_destroyed(&self) {
        while !self.destroyed.load(Ordering::Acquire) {
            fsleep(Delta::from_millis(1));
        }
    }

    /// `RDMA_CM_EVENT_DEVICE_REMOVAL` on the id `id` (one without a QP: the device's binding
    /// revoked those already): the owner's calls fail from now on, and the id is destroyed on
    /// the layer's deferral workqueue once the calls in progress ended (rdma_cm's removal of
    /// the device waits for that), unless the owner's `Drop` destroys it first. Called by the
    /// id's event handler, after the consumer's.
    ///
    /// # Safety
    ///
    /// `id` is live and `self` is its context's, and both stay so until `destroyed` is set or
    /// the owner's `Drop` claimed the destruction.
    pub(super) unsafe fn device_removal(&self, id: *mut bindings::rdma_cm_id) {
        self.revoked.store(true, Ordering::SeqCst);
        if !self.claim() {
            return;
        }
        /// The release: waits for the owner's calls, destroys the id.
        struct Destroy(*mut bindings::rdma_cm_id, *const Users);
        // SAFETY: rdma_cm ids may be destroyed from any thread; `Users` is atomics.
        unsafe impl Send for Destroy {}
        impl Drop for Destroy {
            fn drop(&mut self) {
                // SAFETY: Both stay live until `destroyed` is set (`device_removal`'s caller).
                let users = unsafe { &*self.1 };
                // `revoked` is set: no RCU reader finds the id live any more once those that
                // did have ended.
                rcu::synchronize_rcu();
                while users.n.load(Ordering::SeqCst) != 0 {
                    fsleep(Delta::from_millis(1));
                }
                // SAFETY: The id is live, claimed here, and this is not one of its handlers (the
                // deferral workqueue).
                unsafe { bindings::rdma_destroy_id(self.0) };
                users.destroyed.store(true, Ordering::Release);
            }
        }
        super::super::defer::release_later(Destroy(id, self), None);
    }

    /// Counts a call in, unless the id was revoked. Any context.
    pub(super) fn enter(&self) -> Result {
        // SeqCst: orders with `revoke`'s store of `revoked` and load of `n` (either this sees
        // `revoked`, or `revoke` sees the count).
        self.n.fetch_add(1, Ordering::SeqCst);
        if self.revoked.load(Ordering::SeqCst) {
            self.n.fetch_sub(1, Ordering::SeqCst);
            return Err(ENODEV);
        }
        Ok(())
    }

    /// Whether the id's device's removal has not begun: inside an RCU read-side critical
    /// section, the id is then live until that section ends ([`Users::revoke`] and the release
    /// of [`Users::device_removal`] wait for it). Any context.
    pub(super) fn live(&self) -> bool {
        !self.revoked.load(Ordering::Acquire)
    }

    /// No new call from now on; waits for the calls in progress, counted ones and RCU
    /// read-side critical sections that saw the id [`Users::live`]. Process context; sleeps.
    pub(super) fn revoke(&self) {
        self.revoked.store(true, Ordering::SeqCst);
        rcu::synchronize_rcu();
        while self.n.load(Ordering::SeqCst) != 0 {
            fsleep(Delta::from_millis(1));
        }
    }
}

/// A CM id's `rdma_cm_id` held live for a call ([`super::CmId::id`]): its device's removal waits
/// for it before it destroys the id. Dereferences to the id.
///
/// # Invariants
///
/// `users` counts it; `id` is live while it does.
pub struct CmIdAccess<'a> {
    pub(super) id: &'a CmIdRef,
    pub(super) users: &'a Users,
}

impl core::ops::Deref for CmIdAccess<'_> {
    type Target = CmIdRef;
    fn deref(&self) -> &CmIdRef {
        self.id
    }
}

impl Drop for CmIdAccess<'_> {
    fn drop(&mut self) {
        self.users.n.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The QP of a CM id, held live for a call ([`super::CmId::qp`]). Dereferences to the QP.
pub struct QpAccess<'a> {
    pub(super) qp: &'a Qp,
    pub(super) _id: CmIdAccess<'a>,
}

impl core::ops::Deref for QpAccess<'_> {
    type Target = Qp;
    fn deref(&self) -> &Qp {
        self.qp
    }
}

/// The name and lock class of every [`Adoption`]'s lock. Not generic and never inlined,
/// so that `CmId::event_callback` instantiated in another crate (a consumer of the
/// layer, compiled with `-Zshare-generics=n`) registers the same name with the same
/// key: lockdep warns when one key has two names.
#[inline(never)]
pub(super) fn adoption_class() -> (&'static CStr, Pin<&'static LockClassKey>) {
    (c"rdma_cm_adoption", crate::static_lock_class!())
}

/// A connect-request callback, shared with the [`CmId`](super::CmId) adopted in it.
///
/// rdma_cm runs the callback holding the new id's handler lock (and the listener's):
/// `rdma_accept` must then be called without taking the lock, and `rdma_destroy_id`, which
/// takes it, not at all; a C handler that wants the id gone returns non-zero instead.
///
/// # Invariants
///
/// `task` is the task running the callback, from before
/// [`CmHandler::connect_request`](super::CmHandler::connect_request) is called until it returned,
/// then NULL. So `task == current` holds exactly on the task that is inside the callback, while it
/// is (a task runs one callback at a time, and only that task writes `task`).
#[pin_data]
pub(super) struct Adoption {
    pub(super) task: AtomicPtr<bindings::task_struct>,
    /// Set when the adopted id was dropped inside the callback: the callback then returns
    /// non-zero, and rdma_cm destroys the id.
    pub(super) given_back: AtomicBool,
    /// Held for the duration of the callback: the revocation of the id waits for it.
    #[pin]
    pub(super) callback: Mutex<()>,
}

impl Adoption {
    /// Whether the caller runs inside the callback (on its task, before it returned).
    pub(super) fn inside(&self) -> bool {
        // Relaxed: only the callback's own task stores a value equal to its `current`.
        self.task.load(Ordering::Relaxed) == Task::current_raw()
    }
}

/// A CM id's `rdma_cm_id` and QP, as its device's binding tracks them once the QP exists.
///
/// # Invariants
///
/// `id` is a live `rdma_cm_id` whose context's `users` is `*users` and `mr_pool` is
/// `*mr_pool`, and `qp` its live QP, unless the id was given back to rdma_cm inside the
/// connect-request callback `adoption` (`given_back`), which the owner's `Drop` sets before it
/// lets `users` go.
pub(super) struct CmIdRes {
    pub(super) id: NonNull<bindings::rdma_cm_id>,
    pub(super) qp: NonNull<bindings::ib_qp>,
    pub(super) users: NonNull<Users>,
    pub(super) pools: [Arc<dyn AttachedPool>; 2],
    /// The pool of FRWR MRs on the QP, once there is one.
    pub(super) mr_pool: NonNull<SetOnce<Arc<MrPool>>>,
    pub(super) adoption: Option<Arc<Adoption>>,
}

impl CmIdRes {
    /// The pool of FRWR MRs on the QP, if there is one.
    pub(super) fn mr_pool(&self) -> Option<&Arc<MrPool>> {
        // SAFETY: The context `mr_pool` points into is live while the id is (type invariant),
        // which its holder's caller ensures (not given back).
        unsafe { self.mr_pool.as_ref() }.as_ref()
    }
}

// SAFETY: rdma_cm and QP verbs may be called from any thread; `users` is atomics.
unsafe impl Send for CmIdRes {}

/// Drains the QP of a CM id if anything was posted to it, destroys the pool of FRWR MRs on it
/// (if any), then the id (after which no handler runs), then the QP (if any): for
/// [`CmIdRes`]'s release and the owner's `Drop`.
///
/// # Safety
///
/// `id` and `qp` are live and owned by the caller, which is not inside a handler of the id.
pub(super) unsafe fn destroy_id_and_qp(
    id: *mut bindings::rdma_cm_id,
    qp: *mut bindings::ib_qp,
    pools: &[Arc<dyn AttachedPool>],
    mr_pool: Option<&Arc<MrPool>>,
) {
    if !qp.is_null() && pools.iter().any(|p| p.used()) {
        // Every posted work request completes (flushed if need be) before the pools its
        // contexts live in can go. A QP nothing was posted to has no completion to wait
        // for.
        // SAFETY: `qp` is the id's live QP.
        unsafe { bindings::ib_drain_qp(qp) };
    }
    // No work request uses the pool's MRs any more; they are on the QP's lists, so they go
    // before it (the MRs taken out are put back first: the QP then counts none in use).
    if let Some(p) = mr_pool {
        p.destroy();
    }
    // SAFETY: `id` is live and owned by the caller, which is not inside its handler.
    // rdma_destroy_id waits for a running handler and no handler runs after it; only then
    // is the QP (if any) destroyed.
    unsafe {
        bindings::rdma_destroy_id(id);
        if !qp.is_null() {
            bindings::ib_destroy_qp(qp);
        }
    }
}
