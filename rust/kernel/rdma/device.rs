// SPDX-License-Identifier: GPL-2.0

//! RDMA devices (`struct ib_device`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use crate::{
    bindings,
    error::to_result,
    prelude::*,
    str::CString,
    sync::aref::{ARef, AlwaysRefCounted},
    types::Opaque,
};
use core::ptr::NonNull;

/// A registered RDMA device.
///
/// # Invariants
///
/// The wrapped `ib_device` is registered with ib_core, or its reference count is held
/// (through [`crate::sync::aref::ARef`]), for as long as a `&Device` exists.
#[repr(transparent)]
pub struct Device(Opaque<bindings::ib_device>);

// SAFETY: ib_core protects an `ib_device`'s state with its own locks; verbs may be called on it
// from any thread.
unsafe impl Send for Device {}
// SAFETY: See the `Send` impl.
unsafe impl Sync for Device {}

/// Device limits a consumer sizes its objects by (`struct ib_device_attr`, IB spec 11.2.1.2).
#[derive(Clone, Copy, Debug)]
pub struct DeviceAttrs {
    /// Largest memory region, in bytes.
    pub max_mr_size: u64,
    /// Page sizes the device can register, as a bit mask of sizes in bytes.
    pub page_size_cap: u64,
    /// Work requests per queue pair, in entries.
    pub max_qp_wr: u32,
    /// Scatter/gather entries per SEND or RDMA WRITE work request.
    pub max_send_sge: u32,
    /// Scatter/gather entries per RECV work request.
    pub max_recv_sge: u32,
    /// Scatter/gather entries per RDMA READ work request.
    pub max_sge_rd: u32,
    /// Completion queue entries per CQ.
    pub max_cqe: u32,
    /// Outstanding RDMA READs a QP may serve as responder (responder resources).
    pub max_qp_rd_atom: u32,
    /// Outstanding RDMA READs a QP may issue as initiator (initiator depth).
    pub max_qp_init_rd_atom: u32,
    /// Pages in one fast registration (FRWR) page list.
    pub max_fast_reg_page_list_len: u32,
    /// Whether the device executes atomic operations (fetch and add, compare and swap) at
    /// least within one device (`atomic_cap` other than `IB_ATOMIC_NONE`, IB spec 11.2.1.2).
    pub atomics: bool,
}

/// The transport a port speaks ([`Device::transport`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// InfiniBand (and anything that is neither RoCE nor iWARP, such as OPA).
    Ib,
    /// RDMA over Converged Ethernet (`rdma_rxe`, RoCEv2).
    Roce,
    /// iWARP: RDMAP/DDP/MPA over TCP (`siw`).
    Iwarp,
}

/// The state of a port (`enum ib_port_state`, IB spec 14.2.5.6 PortState).
pub type PortState = u32;

/// What a port is now (`struct ib_port_attr`, IB spec 14.2.5.6 PortInfo).
#[derive(Clone, Copy, Debug)]
pub struct PortAttrs {
    /// `IB_PORT_DOWN` (1), `IB_PORT_INIT`, `IB_PORT_ARMED`, `IB_PORT_ACTIVE` (4), ...
    pub state: PortState,
    /// Physical state (`enum ib_port_phys_state`: 5 is LinkUp).
    pub phys_state: u8,
    /// Path MTU in use, in bytes (256..4096).
    pub active_mtu: u32,
    /// Largest path MTU the port supports, in bytes.
    pub max_mtu: u32,
    /// Largest message, in bytes.
    pub max_msg_sz: u32,
    /// `IB_LINK_LAYER_INFINIBAND` (1) or `IB_LINK_LAYER_ETHERNET` (2, RoCE and iWARP).
    pub link_layer: u32,
}

/// The `enum ib_mtu` value of a path MTU of `bytes` bytes (256, 512, 1024, 2048 or 4096;
/// `ib_mtu_int_to_enum` without its rounding down): 0, which is no `enum ib_mtu` value, for
/// any other number. Any context.
///
/// # Examples
///
/// ```
/// use kernel::rdma::device::mtu_enum;
///
/// assert_eq!(mtu_enum(256), kernel::bindings::ib_mtu_IB_MTU_256);
/// assert_eq!(mtu_enum(4096), kernel::bindings::ib_mtu_IB_MTU_4096);
/// assert_eq!(mtu_enum(1500), 0);
/// ```
pub fn mtu_enum(bytes: u32) -> bindings::ib_mtu {
    match bytes {
        256 => bindings::ib_mtu_IB_MTU_256,
        512 => bindings::ib_mtu_IB_MTU_512,
        1024 => bindings::ib_mtu_IB_MTU_1024,
        2048 => bindings::ib_mtu_IB_MTU_2048,
        4096 => bindings::ib_mtu_IB_MTU_4096,
        _ => 0,
    }
}

/// Bytes of an `enum ib_mtu` (`ib_mtu_enum_to_int`): 0 for an unknown value.
fn mtu_bytes(mtu: bindings::ib_mtu) -> u32 {
    match mtu {
        1..=5 => 128 << mtu,
        _ => 0,
    }
}

impl Device {
    /// The RDMA device of which `ndev` is a port's network device (RoCE, iWARP), with a
    /// reference (`ib_device_get_by_netdev`). Any context.
    ///
    /// # Safety
    ///
    /// `ndev` points to a live `struct net_device` for the duration of the call.
    pub unsafe fn get_by_netdev(ndev: *mut bindings::net_device) -> Option<ARef<Device>> {
        // SAFETY: The caller guarantees `ndev`; ib_core only compares the pointer.
        let dev = unsafe {
            bindings::ib_device_get_by_netdev(ndev, bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN)
        };
        // SAFETY: A non-NULL result carries a registration reference, which the `ARef` owns
        // and drops with `ib_device_put` (`dec_ref`).
        NonNull::new(dev.cast::<Device>()).map(|d| unsafe { ARef::from_raw(d) })
    }

    /// The RDMA device of which the network device called `name`, in the initial network
    /// namespace, is a port's network device (RoCE: the netdev given to `rdma link add`,
    /// iWARP: the NIC), with a reference (`dev_get_by_name_rcu`, then
    /// `ib_device_get_by_netdev`). `None` if there is no such network device or no RDMA device
    /// uses it. Any context (an RCU read-side section).
    pub fn get_by_netdev_name(name: &CStr) -> Option<ARef<Device>> {
        let _rcu = crate::sync::rcu::read_lock();
        // SAFETY: `init_net` lives forever; `name` is NUL-terminated and readable for the call.
        let ndev = unsafe {
            bindings::dev_get_by_name_rcu(&raw mut bindings::init_net, name.as_char_ptr())
        };
        if ndev.is_null() {
            return None;
        }
        // SAFETY: A network device found under RCU stays allocated until the read-side section
        // `_rcu` ends, after this call.
        unsafe { Self::get_by_netdev(ndev) }
    }

    /// The name of the network device of port `port` (`1..=phys_port_cnt`), for example
    /// `eth0`, as `rdma link show` prints it (`ib_device_get_netdev`): the name
    /// [`Device::get_by_netdev_name`] finds this device by. Does not sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a port number out of range, `-ENODEV` if the port has no network device
    /// (InfiniBand), `-ENOMEM`.
    pub fn port_netdev_name(&self, port: u32) -> Result<CString> {
        if port == 0 || port > self.phys_port_cnt() {
            return Err(EINVAL);
        }
        // SAFETY: The device is live (type invariant) and `port` is in range.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        if ndev.is_null() {
            return Err(ENODEV);
        }
        let mut buf = [0 as c_char; bindings::IFNAMSIZ as usize];
        // SAFETY: `ndev` is live: `ib_device_get_netdev` took a reference, which `dev_put`
        // drops after the copy. `name` is a NUL-terminated array of `IFNAMSIZ` bytes; `strscpy`
        // copies at most `buf.len()` bytes and always NUL-terminates (a concurrent rename is
        // the race every C reader of `name` has: the copy is one name or a mix, never longer).
        unsafe {
            bindings::sized_strscpy(buf.as_mut_ptr(), bindings::netdev_name(ndev), buf.len());
            bindings::dev_put(ndev);
        }
        // SAFETY: `strscpy` left `buf` NUL-terminated; it lives until the copy below.
        Ok(CString::try_from(unsafe {
            CStr::from_char_ptr(buf.as_ptr())
        })?)
    }

    /// The path MTU in bytes (256..4096) that rdma_cm gives a RoCE route over port `port`'s
    /// network device (`iboe_get_mtu` of its MTU now), the one a connect from this port
    /// would offer. Any context; does not sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a port number out of range, `-ENODEV` if the port has no network device
    /// (InfiniBand).
    pub fn port_roce_mtu(&self, port: u32) -> Result<u32> {
        if port == 0 || port > self.phys_port_cnt() {
            return Err(EINVAL);
        }
        // SAFETY: The device is live (type invariant) and `port` is in range.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        if ndev.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: `ndev` is live: `ib_device_get_netdev` took a reference, which `dev_put`
        // drops after the read.
        let mtu = unsafe {
            let m = bindings::iboe_netdev_mtu(ndev);
            bindings::dev_put(ndev);
            m
        };
        Ok(match mtu {
            m @ 1..=5 => 128 << m,
            _ => 0,
        })
    }

    /// The attributes of port `port` (`1..=phys_port_cnt`), queried now (`ib_query_port`).
    /// Process context; may sleep (drivers of Ethernet ports take the RTNL lock).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a port number out of range, or the driver's error.
    pub fn query_port(&self, port: u32) -> Result<PortAttrs> {
        if port == 0 || port > self.phys_port_cnt() {
            return Err(EINVAL);
        }
        let mut a = bindings::ib_port_attr::default();
        // SAFETY: The device is live (type invariant), `port` is in range, `a` is writable.
        to_result(unsafe { bindings::ib_query_port(self.as_raw(), port, &mut a) })?;
        // SAFETY: As above.
        let link_layer = unsafe { bindings::rdma_port_get_link_layer(self.as_raw(), port) };
        Ok(PortAttrs {
            state: a.state,
            phys_state: a.phys_state,
            active_mtu: mtu_bytes(a.active_mtu),
            max_mtu: mtu_bytes(a.max_mtu),
            max_msg_sz: a.max_msg_sz,
            link_layer,
        })
    }

    /// The transport of port `port` (`rdma_protocol_iwarp()`, `rdma_protocol_roce()`), which
    /// decides the rules a ULP must follow: on iWARP an RDMA READ's sink takes `max_sge_rd`
    /// SGEs and there is no immediate data on RDMA WRITEs, as `drivers/infiniband/core/rw.c`
    /// knows. Any context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a port number out of range.
    pub fn transport(&self, port: u32) -> Result<Transport> {
        if port == 0 || port > self.phys_port_cnt() {
            return Err(EINVAL);
        }
        // SAFETY: The device is live (type invariant) and `port` is in range; both helpers
        // only read the port's immutable capability flags.
        let (iwarp, roce) = unsafe {
            (
                bindings::rdma_protocol_iwarp(self.as_raw(), port),
                bindings::rdma_protocol_roce(self.as_raw(), port),
            )
        };
        Ok(if iwarp {
            Transport::Iwarp
        } else if roce {
            Transport::Roce
        } else {
            Transport::Ib
        })
    }

    /// Borrows a `Device` from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to a registered `ib_device` that stays registered (or referenced) for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Device {
        // SAFETY: `Device` is `repr(transparent)` over the C struct; the caller guarantees the
        // pointee is valid for `'a`.
        unsafe { &*ptr.cast::<Device>() }
    }

    /// The raw `ib_device` pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device's name, for example `rxe0`.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the device, which the type
        // invariant keeps alive for the lifetime of `&self`.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// The device's limits.
    pub fn attrs(&self) -> DeviceAttrs {
        // SAFETY: `attrs` is filled in before the device is registered and not changed after;
        // the type invariant keeps the device alive.
        let a = unsafe { &(*self.as_raw()).attrs };
        DeviceAttrs {
            max_mr_size: a.max_mr_size,
            page_size_cap: a.page_size_cap,
            max_qp_wr: a.max_qp_wr,
            max_send_sge: a.max_send_sge,
            max_recv_sge: a.max_recv_sge,
            max_sge_rd: a.max_sge_rd,
            max_cqe: a.max_cqe,
            max_qp_rd_atom: a.max_qp_rd_atom,
            max_qp_init_rd_atom: a.max_qp_init_rd_atom,
            max_fast_reg_page_list_len: a.max_fast_reg_page_list_len,
            atomics: a.atomic_cap != bindings::ib_atomic_cap_IB_ATOMIC_NONE,
        }
    }

    /// Number of physical ports (port numbers are `1..=phys_port_cnt`).
    pub fn phys_port_cnt(&self) -> u32 {
        // SAFETY: The field is set at registration; the type invariant keeps `self` alive.
        unsafe { (*self.as_raw()).phys_port_cnt }
    }
}

// SAFETY: `ib_device_try_get` and `ib_device_put` manage the registration reference count; a
// `&Device` only exists while the count is non-zero (type invariant), so the increment in
// `inc_ref` cannot fail.
unsafe impl AlwaysRefCounted for Device {
    fn inc_ref(&self) {
        // SAFETY: The type invariant guarantees the count is non-zero here.
        let got = unsafe { bindings::ib_device_try_get(self.as_raw()) };
        crate::warn_on!(!got);
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns one reference, taken by `inc_ref`.
        unsafe { bindings::ib_device_put(obj.cast::<bindings::ib_device>().as_ptr()) };
    }
}
