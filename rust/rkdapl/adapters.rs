// SPDX-License-Identifier: GPL-2.0

//! What rkdapl knows at module level: the RDMA devices its ib_client was given, the IAs open
//! on them (whose registries of children device removal and consumer unload walk, see
//! [`crate::removal`]) and the debugfs root; opening an IA. The state is the registry of
//! [`crate::statics`], the module's one global lock.

use crate::rdma::{
    bound::{Bound, BoundDevice},
    cm::{CmEvent, CmHandler, CmId, CmIdRef, ConnRequest, NetNs, SockAddr},
    device::Device,
};
use crate::{ia::Ia, registry::Children, statics::registry};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    debugfs::Dir,
    prelude::*,
    sync::{aref::ARef, Arc, ArcBorrow},
};

/// The handler of the CM id [`open_by_addr`] binds to find an address's device: binding makes
/// no events, and the id never listens.
struct AddrProbe;

impl CmHandler for AddrProbe {
    fn event(_this: ArcBorrow<'_, Self>, _id: &CmIdRef, _ev: &CmEvent<'_>) {}
    fn connect_request(_l: ArcBorrow<'_, Self>, _req: ConnRequest<'_, Self>, _ev: &CmEvent<'_>) {}
}

/// Numbers of IAs, for debugfs names, trace events and log lines.
static NEXT_IA: AtomicU32 = AtomicU32::new(1);

/// Module init, after [`crate::statics::init`] and before the ib_client is registered:
/// creates the debugfs root. Process context.
pub(crate) fn init() {
    registry().debugfs = Some(Dir::new(c"rkdapl"));
}

/// Module exit, before the ib_client's unregistration (whose device removal still walks the
/// list of IAs): the debugfs root goes once the last IA directory below it is gone. IAs still
/// listed then (a forced unload) stay, with the list. Process context.
pub(crate) fn exit() {
    let mut reg = registry();
    let root = reg.debugfs.take();
    let listed = reg.ias.len();
    drop(reg);
    drop(root);
    if listed != 0 {
        pr_warn!("{} IA(s) still listed at unload\n", listed);
    }
}

/// Every IA not yet closed, or closed with children left. Process context; sleeps.
///
/// # Errors
///
/// `-ENOMEM`.
pub(crate) fn all() -> Result<KVec<Arc<Ia>>> {
    let reg = registry();
    let mut v = KVec::with_capacity(reg.ias.len(), GFP_KERNEL)?;
    for ia in reg.ias.iter() {
        v.push(ia.clone(), GFP_KERNEL)?;
    }
    Ok(v)
}

/// [`Children`]'s `delist`: the IA whose registry `c` is leaves the list of IAs (it was
/// closed and its last child left); returns the list's reference, which the registry drops
/// after its lock.
fn delist(c: &Children) -> Option<Arc<dyn Send + Sync>> {
    let mut reg = registry();
    let i = reg
        .ias
        .iter()
        .position(|ia| core::ptr::eq(&*ia.children, c))?;
    let ia = reg.ias.remove(i).ok()?;
    if reg.ias.is_empty() {
        // The list is in a static: give its memory back now.
        reg.ias = KVec::new();
    }
    Some(ia)
}

/// ib_client `add`: remember the device so an IA can be opened on it. Process context.
///
/// # Errors
///
/// `-ENOMEM`.
pub(crate) fn device_added(dev: &Bound<'_>) -> Result {
    registry().devices.push(dev.binding().clone(), GFP_KERNEL)?;
    pr_info!("device {} added\n", dev.name().to_str().unwrap_or("?"));
    Ok(())
}

/// ib_client `remove`, first step: forget the device, so that no IA is opened on it any more
/// ([`crate::removal::device_removed`] then revokes every object on it). Process context.
pub(crate) fn forget_device(dev: &Device) {
    let mut reg = registry();
    reg.devices.retain(|d| !d.is(dev));
    if reg.devices.is_empty() {
        // The list is in a static: give its memory back now, there is no destructor to do it
        // at module unload.
        reg.devices = KVec::new();
    }
}

/// Opens the RDMA device called `name` (for example `rxe0`) for the module `owner`. Process
/// context; may sleep.
///
/// # Errors
///
/// `-ENODEV` if no such device is registered, `-EINVAL` for an empty owner name, `-ENOMEM`.
pub(crate) fn open(name: &CStr, owner: &CStr) -> Result<Arc<Ia>> {
    open_in(&NetNs::init(), name, owner)
}

/// [`open`] for the network namespace `net`: the IA's PSPs and EPs make their CM ids there.
/// Process context; may sleep.
///
/// # Errors
///
/// As [`open`].
pub(crate) fn open_in(net: &NetNs, name: &CStr, owner: &CStr) -> Result<Arc<Ia>> {
    open_where(|d| d.name() == name, net, owner)
}

/// Opens the RDMA device the local IP address `addr` is on, as rdma_cm finds it for a bind
/// (`rdma_bind_addr`: the GID table of RoCE ports, the netdev of iWARP ones); the port in
/// `addr` is ignored. Process context; may sleep.
///
/// # Errors
///
/// `-EADDRNOTAVAIL` if no RDMA device has that address, `-EINVAL` for an empty owner name,
/// `-ENODEV`, `-ENOMEM`, or rdma_cm's error.
pub(crate) fn open_by_addr(addr: &SockAddr, owner: &CStr) -> Result<Arc<Ia>> {
    open_by_addr_in(&NetNs::init(), addr, owner)
}

/// [`open_by_addr`] with `addr` a local address of the network namespace `net`, where the
/// IA's PSPs and EPs then make their CM ids. Process context; may sleep.
///
/// # Errors
///
/// As [`open_by_addr`] (`-EADDRNOTAVAIL` for an address of another namespace only).
pub(crate) fn open_by_addr_in(net: &NetNs, addr: &SockAddr, owner: &CStr) -> Result<Arc<Ia>> {
    if owner.is_empty() {
        return Err(EINVAL);
    }
    let mut addr = *addr;
    addr.set_port(0);
    let id = CmId::new_in(Arc::new(AddrProbe, GFP_KERNEL)?, owner, net)?;
    let id = id.id()?;
    id.bind_addr(&addr)
        .map_err(|e| if e == ENODEV { EADDRNOTAVAIL } else { e })?;
    let dev = id.device().ok_or(EADDRNOTAVAIL)?.as_raw();
    // The id holds the device until it is dropped, after the lookup.
    open_where(|d| d.as_raw() == dev, net, owner)
}

/// Opens, for the module `owner`, the RDMA device `found` by a network device (`None`: no RDMA
/// device uses it), for the network namespace `net` that device is in, where the IA's PSPs and
/// EPs then make their CM ids: the C ABI looks it up by `struct net_device`, the Rust API by
/// the network device's name (in the initial namespace). Process context; may sleep.
///
/// # Errors
///
/// `-ENODEV` for `None` or a device the ib_client does not know (yet, or any more), `-EINVAL`
/// for an empty owner name, `-ENOMEM`.
pub(crate) fn open_netdev(
    found: Option<ARef<Device>>,
    net: &NetNs,
    owner: &CStr,
) -> Result<Arc<Ia>> {
    let dev = found.ok_or(ENODEV)?;
    open_where(|d| d.as_raw() == dev.as_raw(), net, owner)
}

/// Opens the first device of the ib_client's list for which `pick` is true, for the network
/// namespace `net`, and lists the IA. Process context; may sleep.
fn open_where(pick: impl Fn(&Device) -> bool, net: &NetNs, owner: &CStr) -> Result<Arc<Ia>> {
    if owner.is_empty() {
        return Err(EINVAL);
    }
    let (bound, root) = {
        let reg = registry();
        let bound = reg
            .devices
            .iter()
            .find(|b| BoundDevice::access(b).is_ok_and(|dev| pick(&dev)))
            .ok_or(ENODEV)?
            .clone();
        let root = reg.debugfs.clone().ok_or(ENODEV)?;
        (bound, root)
    };
    let id = NEXT_IA.fetch_add(1, Ordering::Relaxed);
    let ia = Ia::new(bound.clone(), &root, id, owner, Children::new(delist)?, net.into())?;
    let mut reg = registry();
    // Not listed yet, a device removal cannot find it: check the device is still there.
    if !reg.devices.iter().any(|b| Arc::ptr_eq(b, &bound)) {
        return Err(ENODEV);
    }
    reg.ias.push(ia.clone(), GFP_KERNEL)?;
    Ok(ia)
}
