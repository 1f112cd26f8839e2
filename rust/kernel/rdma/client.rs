// SPDX-License-Identifier: GPL-2.0

//! Registration as an ib_core client (`struct ib_client`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A client is told about every RDMA device: [`Client::add`] runs for each device registered at
//! the time of [`Registration::new`] and for each one registered later; [`Client::remove`] runs
//! when a device is unregistered (for example `rdma link delete rxe0` or `rmmod rdma_rxe`) and
//! when the registration is dropped, for every device whose `add` succeeded.
//!
//! ib_core requires a client to release everything it made on a device before `remove`
//! returns. The layer makes that hold whatever the client does: `add` gets a [`Bound`] token
//! from which the client makes its objects (directly, or later through the
//! [`BoundDevice`] it keeps, [`BoundDevice::access`]), and once the client's `remove` returned,
//! the layer revokes whatever of them is still alive (see [`super::bound`]).

use super::{
    bound::{Bound, BoundDevice},
    defer::DeferQueue,
    device::Device,
};
use crate::{bindings, error::to_result, prelude::*, sync::Arc, types::Opaque};
use core::{
    any::TypeId,
    marker::PhantomData,
    ptr,
    sync::atomic::{AtomicPtr, Ordering},
};

/// The callbacks of an ib_core client.
///
/// Both run in process context and may sleep. ib_core serializes `add` and `remove` for one
/// device; calls for different devices may run concurrently.
pub trait Client: Send + Sync + 'static {
    /// What the client keeps per device, from `add` to `remove`.
    type Data: Send + Sync + 'static;

    /// A device appeared. The client makes its objects from `dev` (and may keep
    /// [`Bound::binding`] to make more later). Returning an error means the client ignores
    /// this device: `remove` is not called for it, and what it made from `dev` is revoked.
    fn add(dev: &Bound<'_>) -> Result<Self::Data>;

    /// The device is going away, or the client is being unregistered: `data` is what `add`
    /// returned. Objects made on `dev` that are still alive when this returns are revoked
    /// (their methods return `-ENODEV` from then on; dropping them frees only memory).
    fn remove(dev: &Device, data: Self::Data);
}

/// What ib_core keeps for one device of a client ([`Registration`]'s `add`, `ib_set_client_data`).
struct PerDevice<D> {
    bound: Arc<BoundDevice>,
    data: D,
}

/// The registrations live now: `add_callback` finds its `ib_client` here (ib_core does not
/// pass it), by the client type's `TypeId`.
const MAX_CLIENTS: usize = 8;
static CLIENTS: [AtomicPtr<Head>; MAX_CLIENTS] =
    [const { AtomicPtr::new(ptr::null_mut()) }; MAX_CLIENTS];

/// The `ib_client` and the type of the client it belongs to.
#[repr(C)]
struct Head {
    client: bindings::ib_client,
    ty: TypeId,
}

/// An `ib_client` registered with ib_core for as long as this object lives.
///
/// It also owns the layer's deferral workqueue (`defer.rs`), on which objects dropped inside
/// their own handler or completion work (a [`super::cm::CmId`], a [`super::cq::Cq`]) are
/// released: dropping the registration waits for those releases, after ib_core's `remove`
/// calls.
///
/// # Invariants
///
/// `client` has been registered with `ib_register_client` and is unregistered in `drop`.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Client> {
    #[pin]
    client: Opaque<Head>,
    /// Dropped after `client` is unregistered (`PinnedDrop::drop` runs before the fields go).
    _defer: DeferQueue,
    _p: PhantomData<T>,
}

// SAFETY: After registration ib_core only reads the `ib_client` under its own locks; the
// callbacks are `Send + Sync` functions.
unsafe impl<T: Client> Send for Registration<T> {}
// SAFETY: See the `Send` impl; `&Registration` gives no access to the C struct.
unsafe impl<T: Client> Sync for Registration<T> {}

impl<T: Client> Registration<T> {
    /// Registers a client named `name` (shown by the kernel's RDMA netlink as the client name).
    ///
    /// Calls [`Client::add`] for every device already registered before returning. May sleep.
    ///
    /// # Errors
    ///
    /// `-EBUSY` if a registration of the same client type exists or there are too many
    /// registrations, `-ENOMEM`, or whatever `ib_register_client` returns.
    pub fn new(name: &'static CStr) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Before the client: `add` may already create objects whose release is deferred.
            _defer: DeferQueue::new()?,
            client <- Opaque::try_ffi_init(|slot: *mut Head| {
                // SAFETY: `slot` is valid for writes; an all-zero `ib_client` is its C initial
                // state (ib_core initializes the refcount and completion itself).
                unsafe {
                    core::ptr::write_bytes(slot, 0, 1);
                    (&raw mut (*slot).ty).write(TypeId::of::<T>());
                    let c = &raw mut (*slot).client;
                    (*c).name = name.as_char_ptr();
                    (*c).add = Some(Self::add_callback);
                    (*c).remove = Some(Self::remove_callback);
                }
                // `add_callback` finds the client from here on.
                Self::publish(slot)?;
                // SAFETY: `slot` is pinned and lives until `drop`, which unregisters it.
                let r = to_result(unsafe { bindings::ib_register_client(&raw mut (*slot).client) });
                if r.is_err() {
                    Self::unpublish(slot);
                }
                r
            }),
            _p: PhantomData,
        })
    }

    /// Publishes `head` in a free entry of `CLIENTS`, unless a registration of `T` is there.
    fn publish(head: *mut Head) -> Result {
        if !Self::client().is_null() {
            return Err(EBUSY);
        }
        CLIENTS
            .iter()
            .find(|c| {
                c.compare_exchange(ptr::null_mut(), head, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            })
            .map(|_| ())
            .ok_or(EBUSY)
    }

    /// Takes `head` out of `CLIENTS`.
    fn unpublish(head: *mut Head) {
        for c in CLIENTS.iter() {
            let _ = c.compare_exchange(head, ptr::null_mut(), Ordering::AcqRel, Ordering::Acquire);
        }
    }

    /// The `ib_client` of the live registration of `T`.
    fn client() -> *mut bindings::ib_client {
        for c in CLIENTS.iter() {
            let p = c.load(Ordering::Acquire);
            // SAFETY: A non-NULL entry is a `Head` whose registration is live: the
            // registration's drop takes it out before the `Head` goes.
            if !p.is_null() && unsafe { (*p).ty } == TypeId::of::<T>() {
                // SAFETY: `p` is a live `Head`.
                return unsafe { &raw mut (*p).client };
            }
        }
        ptr::null_mut()
    }

    /// `ib_client.add`: a device was registered (or was there when the client registered).
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a device that stays valid until `remove_callback` returns
    /// for it.
    unsafe extern "C" fn add_callback(raw: *mut bindings::ib_device) -> c_int {
        // SAFETY: ib_core passes a device in the middle of registration that stays valid until
        // `remove_callback` returns for it.
        let dev = unsafe { Device::from_raw(raw) };
        let client = Self::client();
        if client.is_null() {
            return EINVAL.to_errno();
        }
        let bound = match BoundDevice::new(dev) {
            Ok(b) => b,
            Err(e) => return e.to_errno(),
        };
        let data = match BoundDevice::access(&bound) {
            Ok(token) => T::add(&token),
            Err(e) => Err(e),
        };
        let per = data.and_then(|data| {
            KBox::new(
                PerDevice {
                    bound: bound.clone(),
                    data,
                },
                GFP_KERNEL,
            )
            .map_err(Into::into)
        });
        match per {
            Ok(per) => {
                // SAFETY: `client` is this registration's, registered; `raw` is being added to
                // it. ib_core gives the pointer back to `remove_callback`, which frees it.
                unsafe { bindings::ib_set_client_data(raw, client, KBox::into_raw(per).cast()) };
                0
            }
            Err(e) => {
                // ib_core calls no `remove` for this device: what `add` made goes now.
                bound.revoke();
                e.to_errno()
            }
        }
    }

    /// `ib_client.remove`: the device is being unregistered (or the client is).
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a device that stays valid until this callback returns.
    unsafe extern "C" fn remove_callback(dev: *mut bindings::ib_device, data: *mut c_void) {
        // SAFETY: ib_core passes a device that stays valid until this callback returns.
        let dev = unsafe { Device::from_raw(dev) };
        if data.is_null() {
            return;
        }
        // SAFETY: `data` is the box `add_callback` gave `ib_set_client_data` for this device;
        // ib_core passes it once, here.
        let per = unsafe { KBox::from_raw(data.cast::<PerDevice<T::Data>>()) };
        let PerDevice { bound, data } = KBox::into_inner(per);
        T::remove(dev, data);
        let n = bound.revoke();
        if n != 0 {
            pr_warn!(
                "rdma: {}: revoked {} object(s) the client left on {}\n",
                // SAFETY: The name is the `'static` string given to `new`.
                unsafe { CStr::from_char_ptr((*Self::client()).name) },
                n,
                dev.name()
            );
        }
    }
}

#[pinned_drop]
impl<T: Client> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The type invariant says `client` is registered; this calls `remove` for
        // every device and waits for running callbacks.
        unsafe { bindings::ib_unregister_client(&raw mut (*self.client.get()).client) };
        Self::unpublish(self.client.get());
    }
}
