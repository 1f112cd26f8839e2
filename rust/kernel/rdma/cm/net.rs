// SPDX-License-Identifier: GPL-2.0

//! Network namespaces of CM ids (`struct net`), and the address-family option of listening ids.
//!
//! C header: [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h).
//!
//! An `rdma_cm_id` lives in one network namespace, fixed when it is created: its addresses are
//! resolved, bound and routed there, it only uses RDMA ports whose network devices are in that
//! namespace (RoCE, iWARP), and a listening id only hears connect requests that arrive on such
//! devices. rdma_cm holds a reference to the namespace for the id's lifetime.

use super::{CmHandler, CmId, CmIdRef};
use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::{
        aref::{ARef, AlwaysRefCounted},
        Arc,
    },
    types::Opaque,
};
use core::ptr::NonNull;

/// A network namespace (`struct net`), always reference-counted: held as an [`ARef<NetNs>`]
/// (`get_net`, `put_net`) or borrowed from one.
///
/// While a reference is held the namespace is not dismantled: its network devices and
/// addresses stay, even after the last process left it and its name was removed (`ip netns
/// del`); the namespace goes when the last reference is dropped.
///
/// # Examples
///
/// ```
/// use kernel::{rdma::cm::NetNs, sync::aref::ARef};
///
/// let init = NetNs::init();
/// assert!(init.is_init());
/// assert!(init.clone() == init);
/// // KUnit runs in a kernel thread, whose namespace is the initial one.
/// assert!(NetNs::current().unwrap() == init);
/// // SAFETY: NULL is refused before it is used.
/// assert!(unsafe { NetNs::from_raw(core::ptr::null_mut()) }.is_err());
/// // SAFETY: `init` holds a reference for the call.
/// let borrowed = unsafe { NetNs::from_raw(init.as_raw()) }.unwrap();
/// let held: ARef<NetNs> = borrowed.into();
/// assert!(held == init);
/// ```
///
/// # Invariants
///
/// A `&NetNs` is a network namespace with a reference held (`get_net`) for as long as the
/// borrow lasts.
#[repr(transparent)]
pub struct NetNs(Opaque<bindings::net>);

// SAFETY: A namespace reference may be taken and dropped from any task; `struct net` is
// refcounted and its users lock internally.
unsafe impl Send for NetNs {}
// SAFETY: See the `Send` impl; `&NetNs` only reads the address.
unsafe impl Sync for NetNs {}

// SAFETY: `get_net` and `put_net` take and give back a reference to the namespace, which is not
// freed while one is held.
unsafe impl AlwaysRefCounted for NetNs {
    fn inc_ref(&self) {
        // SAFETY: The namespace is live (type invariant); `get_net` takes one more reference.
        unsafe { bindings::get_net(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<NetNs>) {
        // SAFETY: The caller gives back a reference it owns, once.
        unsafe { bindings::put_net(obj.cast().as_ptr()) };
    }
}

impl NetNs {
    /// Takes ownership of the reference `net` comes with.
    ///
    /// # Safety
    ///
    /// `net` is a network namespace the caller owns one reference to, which the result takes.
    unsafe fn owned(net: NonNull<bindings::net>) -> ARef<NetNs> {
        // SAFETY: `NetNs` is a transparent wrapper of `struct net`; the reference is the
        // caller's to give (this function's `# Safety`).
        unsafe { ARef::from_raw(net.cast()) }
    }

    /// The initial network namespace (`init_net`). Any context.
    pub fn init() -> ARef<NetNs> {
        // SAFETY: `init_net` lives forever; `get_net` takes a reference to it.
        let net = unsafe { bindings::get_net(&raw mut bindings::init_net) };
        // SAFETY: `get_net` returns its argument, the address of a static: not NULL.
        let net = unsafe { NonNull::new_unchecked(net) };
        // SAFETY: `get_net` took the reference the result owns.
        unsafe { NetNs::owned(net) }
    }

    /// The network namespace of the calling task (`current->nsproxy->net_ns`): for a module's
    /// init, that of the process that loads it (`ip netns exec NS insmod ...`); for a kernel
    /// thread, the initial one. Process context.
    ///
    /// # Errors
    ///
    /// `-ESRCH` if the task is exiting (it has no namespaces any more).
    pub fn current() -> Result<ARef<NetNs>> {
        // SAFETY: Reads the calling task's own nsproxy, which only the task itself changes;
        // the helper takes a reference, or returns NULL for an exiting task.
        let net = unsafe { bindings::rdma_current_net_get() };
        // SAFETY: A non-NULL `net` comes with the reference the helper took.
        Ok(unsafe { NetNs::owned(NonNull::new(net).ok_or(ESRCH)?) })
    }

    /// The network namespace of the process `pid` (in the caller's pid namespace, as
    /// `get_net_ns_by_pid`). Process context.
    ///
    /// # Errors
    ///
    /// `-ESRCH` if there is no such process or it is exiting.
    pub fn by_pid(pid: i32) -> Result<ARef<NetNs>> {
        // SAFETY: `get_net_ns_by_pid` takes any value and returns a referenced namespace or an
        // error pointer.
        let net = from_err_ptr(unsafe { bindings::get_net_ns_by_pid(pid) })?;
        // SAFETY: A namespace `get_net_ns_by_pid` returned comes with a reference.
        Ok(unsafe { NetNs::owned(NonNull::new(net).ok_or(ESRCH)?) })
    }

    /// The network namespace the network device `ndev` is in (`dev_net`), with a new
    /// reference. Any context.
    ///
    /// # Safety
    ///
    /// `ndev` points to a live `struct net_device` for the duration of the call.
    pub unsafe fn of_netdev(ndev: *mut bindings::net_device) -> ARef<NetNs> {
        // SAFETY: `ndev` is live for the call (the caller's guarantee); a live network device
        // is in a live namespace, of which the helper takes a reference.
        let net = unsafe { bindings::rdma_dev_net_get(ndev) };
        // SAFETY: `dev_net` of a live network device is never NULL.
        let net = unsafe { NonNull::new_unchecked(net) };
        // SAFETY: The helper took the reference the result owns.
        unsafe { NetNs::owned(net) }
    }

    /// Borrows the namespace `net` (a C caller's `struct net *`); [`ARef::from`] takes a
    /// reference of its own. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for NULL.
    ///
    /// # Safety
    ///
    /// A non-NULL `net` is a network namespace the caller holds a reference to for `'a`.
    pub unsafe fn from_raw<'a>(net: *mut bindings::net) -> Result<&'a NetNs> {
        let net = NonNull::new(net).ok_or(EINVAL)?;
        // INVARIANT: The caller holds a reference for `'a`.
        // SAFETY: `NetNs` is a transparent wrapper of `struct net`, which is live for `'a` (the
        // caller's guarantee).
        Ok(unsafe { net.cast::<NetNs>().as_ref() })
    }

    /// The namespace, for calls into C (valid while `self` is).
    pub fn as_raw(&self) -> *mut bindings::net {
        self.0.get()
    }

    /// Whether this is the initial network namespace. Any context.
    pub fn is_init(&self) -> bool {
        // SAFETY: The namespace is live (type invariant); `net_eq` compares addresses.
        unsafe { bindings::net_is_init(self.as_raw()) }
    }
}

/// Two namespaces are equal when they are the same one (`net_eq`).
impl PartialEq for NetNs {
    fn eq(&self, other: &NetNs) -> bool {
        core::ptr::eq(self, other)
    }
}

impl Eq for NetNs {}

impl core::fmt::Debug for NetNs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The address only: a namespace has no name the kernel knows.
        write!(f, "NetNs({:p})", self.as_raw())
    }
}

impl CmIdRef {
    /// Whether a listener bound to an IPv6 address hears IPv6 requests only (`true`) or IPv4
    /// ones too (`false`); without this call, the namespace's `net.ipv6.bindv6only` decides
    /// (0 by default). IPv4 listeners hear IPv4 only. Before [`CmIdRef::bind_addr`].
    /// Any context.
    ///
    /// On iWARP a dual-stack listener (`false`) is an IPv6 TCP socket, whose IPv4 peers appear
    /// as IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`): to see them as IPv4, listen on both
    /// families with two ids, the IPv6 one with `true`.
    ///
    /// # Errors
    ///
    /// `-EINVAL` once the id is bound.
    pub fn set_afonly(&self, afonly: bool) -> Result {
        // SAFETY: The id is live; `rdma_set_afonly` locks internally.
        to_result(unsafe { bindings::rdma_set_afonly(self.as_raw(), c_int::from(afonly)) })
    }
}

impl<T: CmHandler> CmId<T> {
    /// [`CmId::new`] in the network namespace `net`: the id binds, resolves and listens there,
    /// and uses only RDMA ports whose network devices are in it. rdma_cm holds its own
    /// reference to `net` until the id is destroyed. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub fn new_in(handler: Arc<T>, caller: &CStr, net: &NetNs) -> Result<Self> {
        Self::create(handler, caller, net.as_raw())
    }
}
