// SPDX-License-Identifier: GPL-2.0

//! Registration as an ib_core client (`struct ib_client`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A client is told about every RDMA device: [`Client::add`] runs for each device registered at
//! the time of [`Registration::new`] and for each one registered later; [`Client::remove`] runs
//! when a device is unregistered (for example `rdma link delete rxe0` or `rmmod rdma_rxe`) and
//! when the registration is dropped. `remove` must release everything the client created on the
//! device before it returns: ib_core waits for that before it lets the driver go.

use super::{defer::DeferQueue, device::Device};
use crate::{bindings, error::to_result, prelude::*, types::Opaque};
use core::marker::PhantomData;

/// The callbacks of an ib_core client.
///
/// Both run in process context and may sleep. ib_core serializes `add` and `remove` for one
/// device; calls for different devices may run concurrently.
pub trait Client: Send + Sync + 'static {
    /// A device appeared. Returning an error means the client ignores this device
    /// (`remove` is still called for it).
    fn add(dev: &Device) -> Result;

    /// The device is going away, or the client is being unregistered. Everything the client
    /// holds on `dev` must be released before this returns.
    fn remove(dev: &Device);
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
    client: Opaque<bindings::ib_client>,
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
    /// `-ENOMEM`, or whatever `ib_register_client` returns.
    pub fn new(name: &'static CStr) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            // Before the client: `add` may already create objects whose release is deferred.
            _defer: DeferQueue::new()?,
            client <- Opaque::try_ffi_init(|slot: *mut bindings::ib_client| {
                // SAFETY: `slot` is valid for writes; an all-zero `ib_client` is its C initial
                // state (ib_core initializes the refcount and completion itself).
                unsafe {
                    core::ptr::write_bytes(slot, 0, 1);
                    (*slot).name = name.as_char_ptr();
                    (*slot).add = Some(Self::add_callback);
                    (*slot).remove = Some(Self::remove_callback);
                }
                // SAFETY: `slot` is pinned and lives until `drop`, which unregisters it.
                to_result(unsafe { bindings::ib_register_client(slot) })
            }),
            _p: PhantomData,
        })
    }

    /// `ib_client.add`: a device was registered (or was there when the client registered).
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a device that stays valid until `remove_callback` returns
    /// for it.
    unsafe extern "C" fn add_callback(dev: *mut bindings::ib_device) -> c_int {
        // SAFETY: ib_core passes a device in the middle of registration that stays valid until
        // `remove_callback` returns for it.
        let dev = unsafe { Device::from_raw(dev) };
        match T::add(dev) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// `ib_client.remove`: the device is being unregistered (or the client is).
    ///
    /// # Safety
    ///
    /// Called by ib_core only, with a device that stays valid until this callback returns.
    unsafe extern "C" fn remove_callback(dev: *mut bindings::ib_device, _data: *mut c_void) {
        // SAFETY: ib_core passes a device that stays valid until this callback returns.
        let dev = unsafe { Device::from_raw(dev) };
        T::remove(dev);
    }
}

#[pinned_drop]
impl<T: Client> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The type invariant says `client` is registered; this calls `remove` for
        // every device and waits for running callbacks.
        unsafe { bindings::ib_unregister_client(self.client.get()) };
    }
}
