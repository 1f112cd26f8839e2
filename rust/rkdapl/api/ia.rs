// SPDX-License-Identifier: GPL-2.0

//! The interface adapter: an open RDMA device.

use super::{Evd, IaAttr, NetNs, PortAttr, SockAddr};
use crate::rdma::device::Device;
use crate::{adapters, ia};
use kernel::{prelude::*, str::CString, sync::Arc};

/// An interface adapter: an open RDMA device (`rkdapl_ia_open`, DAT's `dat_ia_open`). Closed
/// when dropped (`rkdapl_ia_close`); the objects made on it keep it, and its device, until they
/// are dropped too.
pub struct Ia(pub(super) Arc<ia::Ia>);

impl Ia {
    /// Opens the RDMA device `device` (for example `c"rxe0"`, see `rdma link`) for the module
    /// `owner` (its name: `rdma res show` lists the IA's objects under it).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` if no such device is registered, `EINVAL` for an empty `owner`, `ENOMEM`.
    #[inline(never)]
    pub fn open(device: &CStr, owner: &CStr) -> Result<Ia> {
        adapters::open(device, owner).map(Ia)
    }

    /// Opens the RDMA device that has the local address `addr` (`rkdapl_ia_open_addr`: the
    /// device rdma_cm binds the address to; the port is ignored) for the module `owner`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EADDRNOTAVAIL` if no RDMA device has the address, `EINVAL` for an empty `owner`,
    /// `ENOMEM`, or rdma_cm's error.
    #[inline(never)]
    pub fn open_addr(addr: &SockAddr, owner: &CStr) -> Result<Ia> {
        adapters::open_by_addr(addr, owner).map(Ia)
    }

    /// Opens the RDMA device one of whose ports uses the network device called `netdev`, in
    /// the initial network namespace (for example `c"eth0"`: for RoCE the netdev given to
    /// `rdma link add`, for iWARP the NIC; `rdma link` shows it), for the module `owner`
    /// (`rkdapl_ia_open_netdev`, which takes the `struct net_device` itself).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` if there is no such network device or no RDMA device uses it (as
    /// `rkdapl_ia_open_netdev` for a netdev without RDMA device), `EINVAL` for an empty
    /// `owner`, `ENOMEM`.
    #[inline(never)]
    pub fn open_netdev(netdev: &CStr, owner: &CStr) -> Result<Ia> {
        adapters::open_netdev(Device::get_by_netdev_name(netdev), &NetNs::init(), owner).map(Ia)
    }

    /// The name of the network device of port `port` (1-based) of the IA's device, for
    /// example `eth0`: the name [`Ia::open_netdev`] finds the device by.
    ///
    /// Process context.
    ///
    /// # Errors
    ///
    /// `ENODEV` once the device was removed or for a port without a network device
    /// (InfiniBand), `EINVAL` for a port out of range, `ENOMEM`.
    #[inline(never)]
    pub fn port_netdev(&self, port: u32) -> Result<CString> {
        self.0.port_netdev_name(port)
    }

    /// The device's limits, as read when the IA was opened (`rkdapl_ia_query`).
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// `ENODEV` once the device was removed (free everything on the IA).
    #[inline(never)]
    pub fn query(&self) -> Result<IaAttr> {
        self.0.query()
    }

    /// The state of port `port` (1-based) of the device now (`rkdapl_ia_query_port`).
    ///
    /// Process context; may sleep (Ethernet drivers take the RTNL lock).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a port out of range, `ENODEV` once the device was removed, or the
    /// driver's error.
    #[inline(never)]
    pub fn query_port(&self, port: u32) -> Result<PortAttr> {
        self.0.query_port(port)
    }

    /// Makes `evd` (an EVD of this IA) the IA's async EVD, or with `None` unsets it
    /// (`rkdapl_ia_set_async_evd`, DAT's async EVD): it receives
    /// [`super::EventType::AsyncIaCatastrophic`] when the device goes away and
    /// [`super::EventType::AsyncEvdOverflow`] when another EVD of the IA overflows. Dropping the
    /// async EVD unsets it.
    ///
    /// Process context.
    ///
    /// # Errors
    ///
    /// `EXDEV` for an EVD of another IA.
    #[inline(never)]
    pub fn set_async_evd(&self, evd: Option<&Evd>) -> Result {
        self.0.set_async_evd(evd.map(|e| e.evd.clone()))
    }
}

impl Drop for Ia {
    /// `rkdapl_ia_close`. Process context.
    #[inline(never)]
    fn drop(&mut self) {
        self.0.close();
    }
}
