// SPDX-License-Identifier: GPL-2.0

//! The RDMA connection manager (`struct rdma_cm_id`), with typed events.
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h), implementation in
//! [`drivers/infiniband/core/cma.c`](srctree/drivers/infiniband/core/cma.c).
//!
//! A [`CmId`] owns an `rdma_cm_id` of the TCP port space (reliable connected QPs), the
//! [`CmHandler`] that receives its events, and the QP created on it. Event handlers run in
//! process context (rdma_cm's work queues), serialized per id, and may sleep.
//!
//! Teardown order, as ib_core expects of a ULP: disconnect, then drop the [`CmId`]; dropping
//! drains the QP (every posted work request completes, flushed if need be), destroys the CM id
//! (after which no handler runs), then the QP, then lets the QP's context pools and CQs go.
//! A [`CmId`] may be dropped anywhere a sleep is allowed, its own handlers included. Where
//! releasing it would wait for the caller itself (inside one of the id's handlers, whose
//! handler lock `rdma_destroy_id` takes, or in the completion work of one of its QP's CQs,
//! which `ib_drain_qp` waits for), the layer moves it whole to its deferral workqueue and
//! releases it there, in the same order (`defer.rs`). Dropped inside the
//! [`CmHandler::connect_request`] callback that adopted it, it is given back to rdma_cm
//! instead (its QP goes at once, and rdma_cm destroys the id when the callback returns, as a C
//! handler that returns non-zero asks it to). Dropping *another* id inside a handler waits for
//! that id's handlers, as `rdma_destroy_id` does.
//!
//! rdma restrack (`rdma res show cm_id`) shows the owner's name given to [`CmId::new`]; ib_core
//! keeps the pointer, and names the ids a listening id's connect requests create after their
//! listener, so the layer keeps a copy of the name, shared by the listener and the ids adopted
//! from it, until the last of them is destroyed.

use super::{
    bound::{Rank, Release, Slot},
    cq::Cq,
    event::EventKind,
    mr::MrPool,
    pd::Pd,
    qp::Qp,
    wr::AttachedPool,
};
use crate::{
    bindings,
    error::from_err_ptr,
    prelude::*,
    str::CString,
    sync::{aref::ARef, rcu, Arc, ArcBorrow, Mutex, SetOnce},
    task::Task,
};
use core::{
    cell::Cell,
    mem::{ManuallyDrop, MaybeUninit},
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering},
};

mod access;
use access::{adoption_class, destroy_id_and_qp, Adoption, CmIdRes, Users};
pub use access::{CmIdAccess, QpAccess};
mod id_ref;
pub use id_ref::CmIdRef;
mod create_qp;
pub use create_qp::QpInit;
mod qp_events;
mod qp_state;
mod sockaddr;
pub use sockaddr::SockAddr;
mod event;
pub use event::{
    CmEvent, CmEventKind, ConnParam, MAX_ACCEPT_PRIVATE_DATA, MAX_CONNECT_PRIVATE_DATA,
    MAX_REJECT_PRIVATE_DATA,
};
mod net;
pub use net::NetNs;

/// Receives the events of [`CmId`]s.
pub trait CmHandler: Send + Sync + Sized + 'static {
    /// An event on `id`, whose handler is `this`. Runs in process context, serialized with the
    /// id's other events; may sleep. It may drop the [`CmId`] that owns `id`: the id is then
    /// released on the layer's deferral workqueue once this returned (`defer.rs`).
    fn event(this: ArcBorrow<'_, Self>, id: &CmIdRef, ev: &CmEvent<'_>);

    /// A peer asks to connect to the listening id whose handler is `listener`. To keep the
    /// new connection, call [`ConnRequest::adopt`]; otherwise rdma_cm destroys it when this
    /// returns. The adopted [`CmId`] may be accepted ([`CmId::accept`]), rejected and dropped
    /// before this returns. May sleep. Calls for requests that arrive on different devices may
    /// run at the same time (rdma_cm listens on each device through an id of its own).
    fn connect_request(listener: ArcBorrow<'_, Self>, req: ConnRequest<'_, Self>, ev: &CmEvent<'_>);

    /// An asynchronous event of the QP created on an id whose handler is `this`
    /// ([`CmId::create_qp`]): [`EventKind::QpFatal`], [`EventKind::QpReqErr`],
    /// [`EventKind::QpAccessErr`], [`EventKind::CommEst`], [`EventKind::SqDrained`],
    /// [`EventKind::PathMigErr`],
    /// ... The layer takes it from the driver (any context) to the system workqueue: this runs
    /// in process context, may sleep, never after the [`CmId`] was dropped (unless it drops the
    /// `CmId` itself: then the events already taken from the driver in the same run still
    /// come); an event reported again before the call is delivered once. The default ignores
    /// it.
    fn qp_event(this: ArcBorrow<'_, Self>, ev: EventKind) {
        let _ = (this, ev);
    }
}

/// What the `context` of a [`CmId`]'s `rdma_cm_id` points to; `repr(C)` with the consumer's
/// QP first, which [`CmIdRef`] finds without knowing `T`.
///
/// # Invariants
///
/// `handlers` counts the calls of the id's handlers in progress (events, and for a listener its
/// connect requests), each from before the handler is called until it returned. It is not 0
/// whenever the caller runs inside one of them. rdma_cm serializes an id's events, but not a
/// wildcard listener's connect requests: those come from one internal listen id per device,
/// each under its own handler lock, so several may run at once.
#[repr(C)]
struct Ctx<T> {
    /// The QP its consumer moves ([`CmId::own_qp_transitions`]), if any.
    own_qp: qp_state::OwnQp,
    /// Receives the id's events.
    handler: Arc<T>,
    /// The owner's name the id's restrack entry shows: the one given to [`CmId::new`], or, for
    /// an id adopted from a connect request, its listener's (ib_core names such an id after its
    /// listener, `rdma_restrack_parent_name`). Shared, so that it outlives every id named
    /// after it.
    name: Arc<CString>,
    /// Handlers of the id in progress.
    handlers: AtomicUsize,
    /// The owner's calls in progress, which revocation waits for.
    users: Users,
    /// The pool of FRWR MRs on the id's QP ([`CmId::create_mr_pool`]), destroyed right before
    /// the QP (after its drain), by the owner's `Drop` or the revocation.
    mr_pool: SetOnce<Arc<MrPool>>,
}

impl<T> Ctx<T> {
    fn new(handler: Arc<T>, name: Arc<CString>) -> Self {
        Ctx {
            own_qp: qp_state::OwnQp::new(),
            handler,
            name,
            handlers: AtomicUsize::new(0),
            users: Users::new(),
            mr_pool: SetOnce::new(),
        }
    }

    /// Whether a handler of the id may be running: always when the caller runs inside one.
    /// Then releasing the id waits for that handler, so the release is deferred; a caller on
    /// another task that sees a handler about to end defers too, which is harmless (the
    /// deferred release waits for the handler as well).
    fn in_handler(&self) -> bool {
        // Acquire: pairs with the increments' ordering only to see them; the caller's own
        // increment is always visible to it.
        self.handlers.load(Ordering::Acquire) != 0
    }

    /// Runs `f` as a handler of the id: [`Ctx::in_handler`] holds meanwhile.
    fn run_handler<R>(&self, f: impl FnOnce() -> R) -> R {
        // INVARIANT: Counted for the duration of the handler.
        self.handlers.fetch_add(1, Ordering::AcqRel);
        let r = f();
        self.handlers.fetch_sub(1, Ordering::AcqRel);
        r
    }
}

/// An owned CM id with its handler and QP.
///
/// # Invariants
///
/// `id` is an `rdma_cm_id` whose `context` is the address of `*ctx` and whose restrack entry
/// names `ctx.name`; it is destroyed (then its QP) only in `drop`, or, dropped inside the
/// connect-request callback that adopted it, given back to rdma_cm (see [`Adoption`]), or,
/// once it has a QP (`slot`), by the revocation of its device's binding ([`super::bound`]),
/// after which `ctx.users` is revoked: `id` is live while a [`CmIdAccess`] of it exists. `ctx`
/// is dropped only in `drop`, after the id is destroyed, or moved out there with the id.
///
/// The owner reaches the id through [`CmId::id`] and its QP through [`CmId::qp`], which fail
/// with `-ENODEV` once the device was removed; handlers get a [`CmIdRef`] that is live for the
/// call.
///
/// Dropping it destroys the id and its QP (`Drop::drop`), then the context (the handler, and
/// the share of the name, freed with the last id named after it), then drops the other fields
/// in declaration order: the QP's pools and CQs. Dropped inside one of the id's handlers, or in
/// the completion work of one of its QP's CQs, where destroying the id or draining the QP would
/// wait for the caller itself, it is moved whole to the layer's deferral workqueue and dropped
/// there (`defer.rs`).
pub struct CmId<T: CmHandler> {
    id: NonNull<bindings::rdma_cm_id>,
    /// In a box: rdma_cm keeps its address while the id exists.
    ctx: ManuallyDrop<KBox<Ctx<T>>>,
    /// What the id's QP uses, from [`Self::create_qp`] until the QP is destroyed.
    pub(super) qp_parts: SetOnce<QpParts>,
    /// The connect-request callback the id was adopted in (`None` for an id made by
    /// [`CmId::new`]).
    adoption: Option<Arc<Adoption>>,
    /// The events of the id's QP, from [`Self::create_qp`]; flushed once the QP is destroyed.
    qp_events: SetOnce<Arc<qp_events::QpEvents<T>>>,
    /// The id and its QP as the device's binding tracks them, from [`Self::create_qp`].
    slot: SetOnce<Arc<Slot<CmIdRes>>>,
}

/// The CQs, context pools and PD of a CM id's QP, kept until the QP is drained and destroyed.
///
/// Drop order: the QP is destroyed first (in `CmId::drop`), then these go: the pools (no
/// completion can reach them any more), the CQs (no QP uses them any more), and the PD (a
/// PD outlives what was created in it, also when the id's release was deferred).
pub(super) struct QpParts {
    pub(super) pools: [Arc<dyn AttachedPool>; 2],
    pub(super) cqs: [Arc<Cq>; 2],
    pub(super) _pd: Arc<Pd>,
}

// SAFETY: See `CmIdRef`; the handler is `Send + Sync`.
unsafe impl<T: CmHandler> Send for CmId<T> {}
// SAFETY: See `CmIdRef`.
unsafe impl<T: CmHandler> Sync for CmId<T> {}

impl<T: CmHandler> CmId<T> {
    /// Creates an id in the initial network namespace for reliable connections, whose events
    /// go to `handler`. `caller` names the owner in `rdma res show cm_id` (and of the ids
    /// adopted from its connect requests); the id keeps a copy of it, since ib_core keeps the
    /// pointer.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub fn new(handler: Arc<T>, caller: &CStr) -> Result<Self> {
        Self::create(handler, caller, &raw mut bindings::init_net)
    }

    /// [`CmId::new`] in the network namespace `net` (`init_net` or one the caller holds a
    /// reference to; rdma_cm takes its own for the id's lifetime).
    fn create(handler: Arc<T>, caller: &CStr, net: *mut bindings::net) -> Result<Self> {
        let name = Arc::new(CString::try_from(caller)?, GFP_KERNEL)?;
        let ctx = KBox::new(Ctx::new(handler, name), GFP_KERNEL)?;
        let ptr = core::ptr::from_ref::<Ctx<T>>(&ctx)
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: `net` is `init_net`, which lives forever, or a namespace the caller holds a
        // reference to for the call (rdma_cm takes its own); the context stays valid while the
        // id exists (the box is owned by the `CmId`, which destroys the id before dropping it);
        // the name is a NUL-terminated string that does not move (its own allocation) and
        // outlives the id (type invariant).
        let id = from_err_ptr(unsafe {
            bindings::__rdma_create_kernel_id(
                net,
                Some(Self::event_callback),
                ptr,
                bindings::rdma_ucm_port_space_RDMA_PS_TCP,
                bindings::ib_qp_type_IB_QPT_RC,
                ctx.name.as_char_ptr(),
            )
        })?;
        // INVARIANT: The id's context is `*ctx` and its restrack entry names `ctx.name`.
        Ok(CmId {
            id: NonNull::new(id).ok_or(ENOMEM)?,
            ctx: ManuallyDrop::new(ctx),
            qp_parts: SetOnce::new(),
            adoption: None,
            qp_events: SetOnce::new(),
            slot: SetOnce::new(),
        })
    }

    /// Accepts the connect request received on this (child) id. Call it from the
    /// [`CmHandler::connect_request`] callback that adopted the id (rdma_cm holds the id's
    /// handler lock there), or from outside any event handler of the id (the lock is taken
    /// here: called from another handler of the id, it would deadlock). May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for private data longer than [`MAX_ACCEPT_PRIVATE_DATA`], or rdma_cm's errors
    /// (rdma_cm then rejects the request itself).
    pub fn accept(&self, param: &ConnParam<'_>) -> Result {
        self.accept_with_path_mtu(param, 0)
    }

    /// [`CmId::accept`], where a QP its consumer moves ([`CmId::own_qp_transitions`]) gets a
    /// path MTU of at most `max_path_mtu` bytes (256 to 4096; any other value, or a QP rdma_cm
    /// moves, keeps the one the peer's REQ carries). Before the REP is sent, the QP goes to
    /// RTR and RTS with rdma_cm's attributes and `param`'s RDMA READ limits. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for private data longer than [`MAX_ACCEPT_PRIVATE_DATA`], the errors of the
    /// QP's transitions, or rdma_cm's errors; the request is then rejected (and the QP in the
    /// error state).
    pub fn accept_with_path_mtu(&self, param: &ConnParam<'_>, max_path_mtu: u32) -> Result {
        let mut p = param.to_c(MAX_ACCEPT_PRIVATE_DATA)?;
        let g = self.id()?;
        let id = g.as_raw();
        if self.in_request_callback() {
            // rdma_cm holds the id's handler lock for the callback this runs in (`Adoption`'s
            // invariant), as rdma_accept requires.
            return g.accept_locked(&mut p, max_path_mtu);
        }
        // SAFETY: The id is live; rdma_accept requires the handler lock, taken here (not held
        // by this task: it is outside the id's handlers, as documented).
        unsafe { bindings::rdma_lock_handler(id) };
        let r = g.accept_locked(&mut p, max_path_mtu);
        // SAFETY: Taken above.
        unsafe { bindings::rdma_unlock_handler(id) };
        r
    }

    /// Whether the caller runs inside the [`CmHandler::connect_request`] callback that adopted
    /// this id: there [`CmId::accept`] does not take rdma_cm's handler lock, and dropping the
    /// id gives it back to rdma_cm. Any context.
    pub fn in_request_callback(&self) -> bool {
        self.adoption.as_ref().is_some_and(|a| a.inside())
    }

    /// The id's handler.
    pub fn handler(&self) -> &Arc<T> {
        &self.ctx.handler
    }

    /// The owner's name the id's restrack entry shows (its listener's for an adopted id).
    pub fn name(&self) -> &CStr {
        &self.ctx.name
    }

    /// rdma_cm's event handler of every id this type makes: dispatches a connect request to the
    /// listener's [`CmHandler::connect_request`], other events to [`CmHandler::event`].
    ///
    /// # Safety
    ///
    /// Called by rdma_cm only: `id` is a live id whose `context` is NULL (a child nobody
    /// adopted), the address of the `Ctx<T>` of the [`CmId`] that owns it, or for a connect
    /// request the listener's; `ev` is a live event, both for the duration of the call.
    unsafe extern "C" fn event_callback(
        id: *mut bindings::rdma_cm_id,
        ev: *mut bindings::rdma_cm_event,
    ) -> c_int {
        // SAFETY: rdma_cm passes a live id and event for the duration of the callback.
        let (ev, ctx) = unsafe { (CmEvent(&*ev), (*id).context.cast::<Ctx<T>>().cast_const()) };
        if ev.kind() == CmEventKind::ConnectRequest {
            // `id` is a new child id whose context is still the listener's.
            // SAFETY: The child is live; nothing else uses its context yet.
            unsafe { (*id).context = core::ptr::null_mut() };
            // The context an adopting handler gets, allocated here so that `adopt` cannot
            // fail; without it the request is refused (rdma_cm destroys the child).
            let Ok(slot) = KBox::<Ctx<T>>::new_uninit(GFP_KERNEL) else {
                return 1;
            };
            // INVARIANT: `task` is this task until the callback returned.
            let adoption = Arc::pin_init(
                pin_init!(Adoption {
                    task: AtomicPtr::new(Task::current_raw()),
                    given_back: AtomicBool::new(false),
                    callback <- {
                        let (name, key) = adoption_class();
                        Mutex::new((), name, key)
                    },
                }),
                GFP_KERNEL,
            );
            let Ok(adoption) = adoption else {
                return 1;
            };
            let cb = adoption.callback.lock();
            // SAFETY: The listener's `CmId` owns its context and waits for this callback before
            // it releases it.
            let listener = unsafe { &*ctx };
            let adopted = Cell::new(false);
            let req = ConnRequest {
                id,
                adopted: &adopted,
                name: &listener.name,
                slot,
                adoption: &adoption,
            };
            listener.run_handler(|| T::connect_request(listener.handler.as_arc_borrow(), req, &ev));
            // INVARIANT: The callback is over for the adopted `CmId`.
            adoption
                .task
                .store(core::ptr::null_mut(), Ordering::Relaxed);
            // A non-zero return makes rdma_cm destroy an id nobody adopted, or one given back.
            let kept = adopted.get() && !adoption.given_back.load(Ordering::Relaxed);
            drop(cb);
            return if kept { 0 } else { 1 };
        }
        if ctx.is_null() {
            // A child id that was not adopted (rdma_cm is about to destroy it).
            return 0;
        }
        // SAFETY: The owning `CmId` keeps its context alive until the id is destroyed, which
        // waits for this callback; the id is live during the callback.
        let (ctx, id) = unsafe { (&*ctx, CmIdRef::from_raw(id)) };
        // A REJ moves a QP its consumer moves to ERR, as rdma_cm's own (`qp_state`).
        qp_state::before_event(id, &ev);
        // A drop of the owning `CmId` inside the handler defers its release (`Ctx::in_handler`),
        // so `ctx` and its handler stay alive until this returned.
        ctx.run_handler(|| T::event(ctx.handler.as_arc_borrow(), id, &ev));
        if ev.kind() == CmEventKind::DeviceRemoval {
            // SAFETY: The id is live; its owner destroys it only after claiming it, and waits
            // for the release otherwise (`Drop`).
            unsafe { ctx.users.device_removal(id.as_raw()) };
        }
        0
    }
}

impl<T: CmHandler> CmId<T> {
    /// The id, live for as long as the returned value exists (its device's removal waits for
    /// it), for rdma_cm calls ([`CmIdRef`]'s methods). Any context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the id's device was removed (the id and its QP are destroyed then).
    pub fn id(&self) -> Result<CmIdAccess<'_>> {
        self.ctx.users.enter()?;
        // INVARIANT: Counted in `users`; the id is live until revocation, which waits for it.
        Ok(CmIdAccess {
            // SAFETY: `id` is live while counted in `users` (type invariant).
            id: unsafe { CmIdRef::from_raw(self.id.as_ptr()) },
            users: &self.ctx.users,
        })
    }

    /// The id's QP, if it has one and its device was not removed, live for as long as the
    /// returned value exists (its device's removal waits for it), for calls that may sleep
    /// (`ib_drain_qp`, `ib_query_qp`). Any context.
    ///
    /// To post work requests, [`CmId::qp_with_guard`] costs less.
    pub fn qp(&self) -> Option<QpAccess<'_>> {
        let id = self.id().ok()?;
        let qp: *const Qp = id.qp()?;
        // SAFETY: The QP is destroyed only after the id, which `id` holds live.
        let qp = unsafe { &*qp };
        Some(QpAccess { qp, _id: id })
    }

    /// The id's QP, if it has one and its device's removal has not begun, live while the RCU
    /// read-side critical section `_guard` lasts (the removal waits for one in progress with
    /// `synchronize_rcu()`): for posting work requests, which do not sleep. Any context; does
    /// not sleep. As [`crate::revocable::Revocable::try_access_with_guard`].
    pub fn qp_with_guard<'a>(&'a self, _guard: &'a rcu::Guard) -> Option<&'a Qp> {
        if !self.ctx.users.live() {
            return None;
        }
        // SAFETY: The id is live until its revocation, which waits for the RCU read-side
        // critical section `_guard` after it made `live` false; the QP outlives the id.
        unsafe { CmIdRef::from_raw(self.id.as_ptr()) }.qp()
    }

    /// The raw pointer, to compare with a [`CmIdRef`]'s (using it needs [`CmId::id`]).
    pub fn as_raw(&self) -> *mut bindings::rdma_cm_id {
        self.id.as_ptr()
    }
}

impl<T: CmHandler> CmId<T> {
    /// The id's QP, NULL if it has none. Only while the id is live and not revoked.
    fn raw_qp(&self) -> *mut bindings::ib_qp {
        // SAFETY: The caller guarantees the id is live.
        unsafe { CmIdRef::from_raw(self.id.as_ptr()) }
            .qp()
            .map_or(core::ptr::null_mut(), |q| q.as_raw())
    }

    /// Whether releasing the id here could wait for the caller itself: while one of the id's
    /// handlers runs (`rdma_destroy_id` waits for it; for a listener, for the per-device
    /// listen ids whose handler locks its connect requests hold), or in the completion work of
    /// one of its QP's CQs (`ib_drain_qp` waits for that work to deliver the drain's
    /// completions). Not inside the connect-request callback that adopted the id, where it is
    /// given back to rdma_cm.
    fn must_defer(&self) -> bool {
        if self.adoption.as_ref().is_some_and(|a| a.inside()) {
            return false;
        }
        self.ctx.in_handler()
            || self
                .qp_parts
                .as_ref()
                .is_some_and(|p| p.cqs.iter().any(|c| c.in_completion_work()))
    }

    /// Moves the id, its context and its QP's parts out of `self`, into a `CmId` that owns them
    /// (`self` is left owning nothing: its `drop` must not touch the id again).
    ///
    /// # Safety
    ///
    /// Only from `drop`, which returns right after without using `self.id` or `self.ctx`.
    unsafe fn move_out(&mut self) -> CmId<T> {
        CmId {
            id: self.id,
            // SAFETY: `self.ctx` is not used or dropped again (the caller's promise).
            ctx: ManuallyDrop::new(unsafe { ManuallyDrop::take(&mut self.ctx) }),
            qp_parts: core::mem::replace(&mut self.qp_parts, SetOnce::new()),
            adoption: self.adoption.take(),
            qp_events: core::mem::replace(&mut self.qp_events, SetOnce::new()),
            slot: core::mem::replace(&mut self.slot, SetOnce::new()),
        }
    }
}

impl<T: CmHandler> Drop for CmId<T> {
    fn drop(&mut self) {
        if self.must_defer() {
            // The device reference makes its unregistration wait for the deferred release;
            // none is needed (or can be taken) once the id was revoked.
            let dev = self.id().ok().and_then(|id| id.device().map(ARef::from));
            // SAFETY: Called from `drop`, which returns right after.
            let moved = unsafe { self.move_out() };
            // INVARIANT: The moved `CmId` owns the id and its context; its `drop`, on the
            // deferral workqueue, destroys them.
            super::defer::release_later(moved, dev);
            return;
        }
        let id = self.id.as_ptr();
        let slot = self.slot.as_ref();
        match self.adoption.as_ref().filter(|a| a.inside()) {
            // Inside the connect-request callback that adopted the id, whose handler lock
            // rdma_destroy_id would wait for: give the id back to rdma_cm, which destroys it
            // when the callback returns. The QP goes now (rdma_destroy_qp takes the id's QP
            // lock, not the handler lock); no handler of the id runs after the callback. A
            // revocation meanwhile waits for the callback (`Adoption::callback`), then finds
            // the id given back.
            Some(a) => {
                // The binding no longer releases the id (unless a revocation holds the slot:
                // it sees `given_back`).
                if let Some(s) = slot {
                    s.try_take();
                }
                let qp = self.raw_qp();
                let posted = self
                    .qp_parts
                    .as_ref()
                    .is_some_and(|p| p.pools.iter().any(|p| p.used()));
                // SAFETY: `id` is live (the callback holds its handler lock, so no revocation
                // destroyed it); no event handler reads `context` meanwhile; cleared, no later
                // one can reach `ctx`, which goes with `self`.
                unsafe {
                    if !qp.is_null() && posted {
                        bindings::ib_drain_qp(qp);
                    }
                    // Its MRs before the QP, whose lists they are on.
                    if let Some(p) = self.ctx.mr_pool.as_ref() {
                        p.destroy();
                    }
                    let rdma_cm_qp = !(*id).qp.is_null();
                    (*id).context = core::ptr::null_mut();
                    match (qp.is_null(), rdma_cm_qp) {
                        (true, _) => {}
                        (false, true) => bindings::rdma_destroy_qp(id),
                        // The consumer's QP (`qp_state`), which rdma_cm does not know.
                        (false, false) => bindings::ib_destroy_qp(qp),
                    }
                }
                a.given_back.store(true, Ordering::Release);
            }
            None => match slot {
                // Revocation releases the id and its QP unless this does: whichever claims
                // them first; the other waits for the release to end.
                Some(s) => match s.claim() {
                    Some(r) => {
                        // SAFETY: `r` holds the live id and QP, owned by `self`; this is not
                        // inside the id's handler (`must_defer`).
                        unsafe { destroy_id_and_qp(id, r.qp.as_ptr(), &r.pools, r.mr_pool()) };
                        s.released();
                    }
                    None => s.wait_released(),
                },
                // Destroyed here, unless its device's removal queued its release first: that
                // release must have ended before `ctx` goes.
                None if self.ctx.users.claim() => {
                    let qp = self.raw_qp();
                    let pools: &[Arc<dyn AttachedPool>] =
                        self.qp_parts.as_ref().map_or(&[], |p| &p.pools);
                    // SAFETY: `id` is live and owned by `self` (never tracked, and the claim
                    // above keeps the device removal's release off), and this is not inside
                    // its handler.
                    unsafe { destroy_id_and_qp(id, qp, pools, self.ctx.mr_pool.as_ref()) };
                }
                None => self.ctx.users.wait_destroyed(),
            },
        }
        if let Some(s) = slot {
            Slot::forget(s);
        }
        if let Some(parts) = self.qp_parts.as_ref() {
            for p in &parts.pools {
                p.detach();
            }
        }
        // The QP is gone: no event is recorded any more; a queued run of the handler ends here.
        if let Some(ev) = self.qp_events.as_ref() {
            ev.flush();
        }
        // SAFETY: The id is destroyed or given back (no handler reaches `ctx` any more); `ctx`
        // is dropped once, here.
        unsafe { ManuallyDrop::drop(&mut self.ctx) };
        // `qp_parts` (the pools, then the CQs) go after this.
    }
}

/// At its device's removal, the binding revokes a CM id that has a QP: it waits for the
/// connect-request callback the id was adopted in, stops new calls and waits for those in
/// progress (`Users::revoke`), then destroys the MR pool, the id and the QP; the owner's
/// `Drop` then frees only memory.
impl Release for CmIdRes {
    const RANK: Rank = Rank::CmId;

    fn release(self) {
        if let Some(a) = self.adoption.as_ref() {
            // Waits for the connect-request callback the id was adopted in, if it still runs:
            // dropped there, the id was given back to rdma_cm, which destroyed it.
            let _cb = a.callback.lock();
            if a.given_back.load(Ordering::Acquire) {
                return;
            }
        }
        // SAFETY: Not given back: `users` is the live context's (`CmIdRes`'s invariant).
        unsafe { self.users.as_ref() }.revoke();
        // SAFETY: The id and its QP are live (`CmIdRes`'s invariant); revocation runs in the
        // client's `remove` callback, not in a handler of the id.
        unsafe {
            destroy_id_and_qp(
                self.id.as_ptr(),
                self.qp.as_ptr(),
                &self.pools,
                self.mr_pool(),
            )
        };
    }
}

/// A connect request on a child id, offered to [`CmHandler::connect_request`].
pub struct ConnRequest<'a, T: CmHandler> {
    id: *mut bindings::rdma_cm_id,
    adopted: &'a Cell<bool>,
    /// The listener's name, which ib_core gave the child id's restrack entry.
    name: &'a Arc<CString>,
    /// The child's context if it is adopted.
    slot: KBox<MaybeUninit<Ctx<T>>>,
    /// The callback, shared with the child's `CmId` if it is adopted.
    adoption: &'a Arc<Adoption>,
}

impl<T: CmHandler> ConnRequest<'_, T> {
    /// The child id, for example to create its QP before accepting.
    pub fn id(&self) -> &CmIdRef {
        // SAFETY: The child id is live during the connect-request callback.
        unsafe { CmIdRef::from_raw(self.id) }
    }

    /// Takes ownership of the child id; its later events go to `handler`. The caller then
    /// accepts or rejects it, inside this callback or later from outside the id's handlers,
    /// and drops it when done (inside this callback too: see [`CmId`]'s `Drop`).
    pub fn adopt(self, handler: Arc<T>) -> CmId<T> {
        let ctx = KBox::write(self.slot, Ctx::new(handler, self.name.clone()));
        let ptr = core::ptr::from_ref::<Ctx<T>>(&ctx)
            .cast_mut()
            .cast::<c_void>();
        // SAFETY: The child is live; rdma_cm serializes this with the child's other events
        // (the connect-request callback holds its handler lock).
        unsafe { (*self.id).context = ptr };
        self.adopted.set(true);
        // SAFETY: `id` is non-NULL: rdma_cm passed it to the callback.
        let id = unsafe { NonNull::new_unchecked(self.id) };
        // INVARIANT: The context now points at `*ctx`, which the `CmId` owns; the child's
        // restrack entry names the listener's name, a share of which `ctx` holds.
        CmId {
            id,
            ctx: ManuallyDrop::new(ctx),
            qp_parts: SetOnce::new(),
            adoption: Some(self.adoption.clone()),
            qp_events: SetOnce::new(),
            slot: SetOnce::new(),
        }
    }
}
