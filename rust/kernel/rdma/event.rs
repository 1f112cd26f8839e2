// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events of RDMA devices (`struct ib_event`, IB spec 11.6.3), through an
//! `ib_event_handler` registration.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h), implementation in
//! [`drivers/infiniband/core/device.c`](srctree/drivers/infiniband/core/device.c) and
//! [`drivers/infiniband/core/cache.c`](srctree/drivers/infiniband/core/cache.c).
//!
//! A driver reports an event of the device or of one of its ports (a port going ACTIVE or
//! DOWN, a GID, LID or P_Key table change, the subnet manager asking clients to register again,
//! a fatal device error) with `ib_dispatch_event()`. ib_core copies it into a work item
//! (`GFP_ATOMIC`; the event is lost if that allocation fails) on its `ib_wq` workqueue; for port
//! state, LID, P_Key, GID and client-reregister events the work first updates ib_core's cache of
//! the port, so that a handler querying the port sees the new state. The work then calls every
//! handler registered on the device, in registration order, holding the device's
//! `event_handler_rwsem` for reading (`ib_dispatch_event_clients()`); GID table changes made in
//! process context by RoCE's address tracking are dispatched the same way, directly. So an
//! [`EventHandler`] runs:
//!
//! - in process context (the `ib_wq` workqueue, or the task that changed the GID table), and
//!   may sleep, but holds up the other handlers of the device while it does;
//! - never concurrently with [`Registration`]'s drop for the same registration (unregistering
//!   takes the rwsem for writing, so it waits for running handlers): a handler must not drop its
//!   own registration, or register or unregister any handler of the same device;
//! - in no guaranteed order across events: `ib_wq` is a per-CPU workqueue, not an ordered one.
//!   Events queued far enough apart (a link going down, then up) arrive in order in practice.
//!
//! Events of a QP, CQ, SRQ or WQ are not dispatched to device handlers: the driver calls the
//! object's own `event_handler`, in whatever context it detects the event (interrupt, softirq,
//! a driver thread). [`EventKind`] names them too, for those handlers.

use super::{
    bound::{Bound, BoundDevice, Rank, Release, Slot},
    device::Device,
};
use crate::{bindings, prelude::*, sync::Arc, types::Opaque};
use core::ptr::NonNull;

/// What an asynchronous event reports (`enum ib_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A CQ overran or failed (CQ event; IB spec 11.6.3.3).
    CqErr,
    /// A QP failed and went to the error state (QP event: local work queue catastrophic
    /// error).
    QpFatal,
    /// A QP received an invalid request (QP event: invalid request local work queue error).
    QpReqErr,
    /// A QP's peer violated an access right (QP event: local access violation work queue
    /// error).
    QpAccessErr,
    /// A QP in RTR received its first packet: the connection is established from the
    /// transport's view before the CM's RTU arrived (QP event; ULPs pass it on with
    /// `rdma_notify()`).
    CommEst,
    /// A QP's send queue drained after a move to SQD (QP event).
    SqDrained,
    /// A QP migrated to its alternate path (QP event).
    PathMig,
    /// A QP's path migration failed (QP event).
    PathMigErr,
    /// The device failed and must be reset (device event).
    DeviceFatal,
    /// A port became ACTIVE (port event).
    PortActive,
    /// A port left ACTIVE: link down, cable pulled, or a removed address (port event).
    PortErr,
    /// A port's LID changed (port event).
    LidChange,
    /// A port's P_Key table changed (port event).
    PkeyChange,
    /// The subnet manager of a port changed (port event).
    SmChange,
    /// An SRQ failed (SRQ event).
    SrqErr,
    /// An SRQ's receive count fell below its limit (SRQ event).
    SrqLimitReached,
    /// The last WQE of a QP on an SRQ was consumed (QP event).
    QpLastWqeReached,
    /// The subnet manager asks clients to register again (port event).
    ClientReregister,
    /// A port's GID table changed (port event; RoCE: an IP address was added or removed).
    GidChange,
    /// A work queue failed (WQ event).
    WqFatal,
    /// A port's link speed changed (port event).
    DeviceSpeedChange,
    /// A value this layer does not know, as ib_core gave it.
    Other(u32),
}

impl EventKind {
    /// The kind of the C value `v`.
    pub fn from_raw(v: bindings::ib_event_type) -> EventKind {
        use EventKind::*;
        match v {
            bindings::ib_event_type_IB_EVENT_CQ_ERR => CqErr,
            bindings::ib_event_type_IB_EVENT_QP_FATAL => QpFatal,
            bindings::ib_event_type_IB_EVENT_QP_REQ_ERR => QpReqErr,
            bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR => QpAccessErr,
            bindings::ib_event_type_IB_EVENT_COMM_EST => CommEst,
            bindings::ib_event_type_IB_EVENT_SQ_DRAINED => SqDrained,
            bindings::ib_event_type_IB_EVENT_PATH_MIG => PathMig,
            bindings::ib_event_type_IB_EVENT_PATH_MIG_ERR => PathMigErr,
            bindings::ib_event_type_IB_EVENT_DEVICE_FATAL => DeviceFatal,
            bindings::ib_event_type_IB_EVENT_PORT_ACTIVE => PortActive,
            bindings::ib_event_type_IB_EVENT_PORT_ERR => PortErr,
            bindings::ib_event_type_IB_EVENT_LID_CHANGE => LidChange,
            bindings::ib_event_type_IB_EVENT_PKEY_CHANGE => PkeyChange,
            bindings::ib_event_type_IB_EVENT_SM_CHANGE => SmChange,
            bindings::ib_event_type_IB_EVENT_SRQ_ERR => SrqErr,
            bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED => SrqLimitReached,
            bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED => QpLastWqeReached,
            bindings::ib_event_type_IB_EVENT_CLIENT_REREGISTER => ClientReregister,
            bindings::ib_event_type_IB_EVENT_GID_CHANGE => GidChange,
            bindings::ib_event_type_IB_EVENT_WQ_FATAL => WqFatal,
            bindings::ib_event_type_IB_EVENT_DEVICE_SPEED_CHANGE => DeviceSpeedChange,
            other => Other(other),
        }
    }

    /// Whether the event is about a port (then [`Event::port`] names it).
    pub fn is_port_event(self) -> bool {
        use EventKind::*;
        matches!(
            self,
            PortActive
                | PortErr
                | LidChange
                | PkeyChange
                | SmChange
                | ClientReregister
                | GidChange
                | DeviceSpeedChange
        )
    }
}

/// An asynchronous event of a device or one of its ports, as an [`EventHandler`] gets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    kind: EventKind,
    port: u32,
}

impl Event {
    /// The event `ev` (its kind and, for a port event, the port).
    pub fn from_c(ev: &bindings::ib_event) -> Event {
        let kind = EventKind::from_raw(ev.event);
        let port = if kind.is_port_event() {
            // SAFETY: For port events `element.port_num` is the member ib_core and the
            // drivers set; reading a plain integer.
            unsafe { ev.element.port_num }
        } else {
            0
        };
        Event { kind, port }
    }

    /// An event of `kind` on port `port` (0 for none), for tests and callers that build one.
    pub fn new(kind: EventKind, port: u32) -> Event {
        Event { kind, port }
    }

    /// What the event reports.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The port (1-based) of a port event; 0 for other events.
    pub fn port(&self) -> u32 {
        self.port
    }
}

/// Receives the asynchronous events of one device (see the module documentation for the
/// context).
pub trait EventHandler: Send + Sync + 'static {
    /// An event of `dev` or one of its ports. Process context (ib_core's `ib_wq`, or the task
    /// that changed a GID table), with the device's event-handler lock held for reading: may
    /// sleep, but must not register or unregister an event handler of `dev` (including
    /// dropping the [`Registration`] this handler belongs to).
    fn event(&self, dev: &Device, ev: &Event);
}

/// An `ib_event_handler` registered on a device for as long as this object lives
/// (`INIT_IB_EVENT_HANDLER` + `ib_register_event_handler`, `ib_unregister_event_handler` when
/// dropped), or until the device's client registration revokes it if the device goes first
/// ([`super::bound`]).
///
/// # Invariants
///
/// `raw` was initialised for `dev` and this type's callback, and is registered with ib_core
/// from the end of its initialisation until `slot` is released (in `drop`, or by revocation),
/// after `handler` and `dev` were initialised.
#[pin_data(PinnedDrop)]
pub struct Registration<T: EventHandler> {
    handler: T,
    dev: NonNull<bindings::ib_device>,
    #[pin]
    raw: Opaque<bindings::ib_event_handler>,
    slot: Arc<Slot<EventRes>>,
}

/// A registered event handler, as its device's binding tracks it.
///
/// # Invariants
///
/// `raw` is a registered `ib_event_handler`.
struct EventRes {
    raw: NonNull<bindings::ib_event_handler>,
}

// SAFETY: Unregistering may be done from any thread.
unsafe impl Send for EventRes {}

impl Release for EventRes {
    const RANK: Rank = Rank::EventHandler;

    fn release(self) {
        // SAFETY: `raw` is registered (type invariant); unregistering waits for a running
        // callback (the rwsem), after which ib_core no longer reaches it or its owner.
        unsafe { bindings::ib_unregister_event_handler(self.raw.as_ptr()) };
    }
}

// SAFETY: After registration ib_core reads `raw` under the device's rwsem only; `handler` is
// `Send + Sync`; `dev` is only used by the callback, while the device is registered.
unsafe impl<T: EventHandler> Send for Registration<T> {}
// SAFETY: See the `Send` impl; `&Registration` gives shared access to `handler` (`Sync`) only.
unsafe impl<T: EventHandler> Sync for Registration<T> {}

impl<T: EventHandler> Registration<T> {
    /// Registers `handler` for the events of the device `bound`; events dispatched from now on
    /// reach it.
    /// Process context; may sleep (takes the device's event-handler lock for writing).
    ///
    /// # Errors
    ///
    /// `-ENOMEM` (nothing is registered then).
    pub fn new<'a>(bound: &'a Bound<'_>, handler: T) -> impl PinInit<Self, Error> + 'a {
        let raw_dev = bound.as_raw();
        try_pin_init!(&this in Self {
            handler,
            dev: NonNull::new(raw_dev).ok_or(EINVAL)?,
            // Initialised after the fields the callback reads: once registered, it may run
            // at once.
            raw <- Opaque::ffi_init(move |slot: *mut bindings::ib_event_handler| {
                // SAFETY: `slot` is valid for writes and pinned until `drop`, which unregisters
                // it (or revocation did); this is INIT_IB_EVENT_HANDLER (the list head points
                // at itself). The device is registered: the token holds it bound.
                unsafe {
                    (*slot).device = raw_dev;
                    (*slot).handler = Some(Self::callback);
                    let list = &raw mut (*slot).list;
                    (*list).next = list;
                    (*list).prev = list;
                    bindings::ib_register_event_handler(slot);
                }
            }),
            // On an error `track` unregisters the handler before the fields go.
            slot: BoundDevice::track(
                bound.binding(),
                EventRes {
                    // SAFETY: `this` is the object being initialised; `raw` is initialised.
                    raw: NonNull::new(unsafe { (*this.as_ptr()).raw.get() }).ok_or(EINVAL)?,
                },
            )?,
        })
    }

    /// The handler.
    pub fn handler(&self) -> &T {
        &self.handler
    }

    /// `ib_event_handler.handler`.
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with `h` the `raw` field of a registered `Registration<T>` and
    /// `ev` a live event, both for the duration of the call.
    unsafe extern "C" fn callback(h: *mut bindings::ib_event_handler, ev: *mut bindings::ib_event) {
        let off = core::mem::offset_of!(Self, raw);
        // SAFETY: `h` is the `raw` field (an `Opaque`, transparent over the C struct) of a
        // `Registration<T>`, which stays valid while registered: `drop` unregisters it, and that
        // waits for this callback (ib_core holds the device's rwsem for reading around it).
        let this = unsafe { &*h.cast::<u8>().sub(off).cast::<Self>() };
        // SAFETY: ib_core passes a live event for the duration of the call.
        let ev = Event::from_c(unsafe { &*ev });
        // SAFETY: The handler is registered on `dev`, which stays registered while it is.
        let dev = unsafe { Device::from_raw(this.dev.as_ptr()) };
        this.handler.event(dev, &ev);
    }
}

#[pinned_drop]
impl<T: EventHandler> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // Unregisters the handler unless its device's removal did.
        Slot::release_now(&self.slot);
    }
}
