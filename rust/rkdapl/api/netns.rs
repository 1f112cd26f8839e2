// SPDX-License-Identifier: GPL-2.0

//! IAs in a given network namespace (`rkdapl_ia_open_net`, `rkdapl_ia_open_addr_net`).

use super::{Ia, NetNs, SockAddr};
use crate::adapters;
use kernel::prelude::*;

impl Ia {
    /// [`Ia::open`] in the network namespace `net`: the IA's PSPs and EPs make their CM ids
    /// there (see `rkdapl_ia_open_net` in `include/rkdapl.h`), so they listen on and connect
    /// to addresses of that namespace. The IA holds its own reference to `net` until it and its
    /// last object are dropped. [`NetNs::current`] is the calling process's namespace (for a
    /// module's init, the one `insmod` runs in), [`NetNs::by_pid`] another process's; a kernel
    /// thread's is the initial one ([`NetNs::init`], what [`Ia::open`] uses).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Ia::open`].
    #[inline(never)]
    pub fn open_in(net: &NetNs, device: &CStr, owner: &CStr) -> Result<Ia> {
        adapters::open_in(net, device, owner).map(Ia)
    }

    /// [`Ia::open_addr`] with `addr` a local address of the network namespace `net`, where the
    /// IA's PSPs and EPs then make their CM ids (`rkdapl_ia_open_addr_net`).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Ia::open_addr`]: `EADDRNOTAVAIL` also for an address of another namespace.
    #[inline(never)]
    pub fn open_addr_in(net: &NetNs, addr: &SockAddr, owner: &CStr) -> Result<Ia> {
        adapters::open_by_addr_in(net, addr, owner).map(Ia)
    }

    /// The network namespace of the IA's PSPs and EPs. Any context.
    pub fn net(&self) -> &NetNs {
        &self.0.net
    }
}
