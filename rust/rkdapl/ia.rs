// SPDX-License-Identifier: GPL-2.0

//! IA: interface adapter (DAT 2.0 section 6.1), an open RDMA device, with the registry of its
//! children (which device removal and consumer unload walk, see [`crate::removal`]). The list
//! of devices and IAs, and opening an IA, are [`crate::adapters`]'.

use crate::rdma::{
    bound::{Bound, BoundDevice},
    cm::NetNs,
    device::{Device, DeviceAttrs, PortAttrs, Transport},
};
use crate::{
    debugfs::{self, IaInfo},
    evd::{AsyncSlot, Evd, Event, EventType, MAX_EVD_QLEN, MAX_PRIVATE_DATA},
    registry::Children,
};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use kernel::{
    bits::bit_u32,
    debugfs::{Dir, File},
    new_mutex,
    prelude::*,
    str::CString,
    sync::{aref::ARef, lock::mutex::MutexGuard, rcu, Arc, Mutex},
};

/// Numbers of EPs, for debugfs names, trace events and log lines.
static NEXT_EP: AtomicU32 = AtomicU32::new(1);

/// A new EP number.
pub(crate) fn next_ep_id() -> u32 {
    NEXT_EP.fetch_add(1, Ordering::Relaxed)
}

/// A live IA. Holding it keeps the IA live: device removal waits for the lock before it
/// revokes anything (see [`Ia::live`]).
pub(crate) type LiveDev<'a> = MutexGuard<'a, bool>;

/// Limits of an IA's device (DAT's `DAT_IA_ATTR`), read when the IA was opened.
#[derive(Clone, Copy, Debug)]
pub struct IaAttr {
    /// The RDMA device's name, NUL-terminated (see [`IaAttr::name`]).
    pub name: [u8; 64],
    /// Largest region, in bytes.
    pub max_mr_size: u64,
    /// Work requests per queue, in entries.
    pub max_dtos: u32,
    /// SGEs per work request.
    pub max_iov: u32,
    /// RDMA READs a peer may have in flight against one EP.
    pub max_rdma_read_in: u32,
    /// RDMA READs one EP may have in flight.
    pub max_rdma_read_out: u32,
    /// Pages one RMR binding covers.
    pub max_rmr_pages: u32,
    /// Largest EVD, in entries.
    pub max_evd_qlen: u32,
    /// Bytes of private data ([`MAX_PRIVATE_DATA`]).
    pub max_private_data: u32,
    /// The transport of the device's port 1.
    pub transport: Transport,
    /// What the transport can do.
    pub caps: Caps,
    /// SGEs the device takes per RDMA READ work request (`max_sge_rd`; siw: 1). An RDMA READ
    /// whose sinks need more DMA segments is split into work requests of at most
    /// [`IaAttr::max_iov`] SGEs each, up to 8 of them.
    pub max_read_iov: u32,
}

kernel::impl_flags!(
    /// What an IA's transport can do (DAT's provider attributes): a set of [`Cap`]s.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Caps(u32);

    /// One thing an IA's transport can do.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Cap {
        /// Immediate data: RDMA WRITE and SEND with immediate (not on iWARP, where they are
        /// refused with `-EOPNOTSUPP`).
        RdmaWriteImm = bit_u32(0),
        /// A SEND that finds no RECV posted is retried (`rnr_retry_count`) and fails alone
        /// with `RECEIVER_NOT_READY`; on iWARP there is no such retry, the connection breaks
        /// instead.
        RnrRetry = bit_u32(1),
        /// The EP's `retry_count` bounds transport retries (IB, RoCE); on iWARP TCP
        /// retransmits, and the attribute has no effect.
        RetryCount = bit_u32(2),
        /// SEND with invalidate (every transport rkdapl runs on).
        SendInvalidate = bit_u32(3),
        /// The device runs atomics (fetch and add, compare and swap): rxe does, siw does not.
        Atomics = bit_u32(4),
    }
);

impl IaAttr {
    /// The caps of a transport.
    pub(crate) fn caps_of(t: Transport) -> Caps {
        match t {
            Transport::Ib | Transport::Roce => {
                Cap::RdmaWriteImm | Cap::RnrRetry | Cap::RetryCount | Cap::SendInvalidate
            }
            Transport::Iwarp => Cap::SendInvalidate.into(),
        }
    }
}

impl IaAttr {
    /// The limits `rkdapl_ia_query` reports for a device of limits `a` named `name` (cut at 63
    /// bytes): at most 4096 DTOs per queue, segments that both a send work request and an RDMA
    /// READ take, the device's RDMA READ and fast-registration limits, rkdapl's EVD and
    /// private-data sizes. Pure: KUnit-tested (`rkdapl_ia`).
    pub(crate) fn of_device(a: &DeviceAttrs, name: &[u8], t: Transport) -> IaAttr {
        let mut caps = Self::caps_of(t);
        if a.atomics {
            caps |= Cap::Atomics;
        }
        let mut out = IaAttr {
            name: [0; 64],
            max_mr_size: a.max_mr_size,
            // What an EP may ask for (`EpAttr::resolve`): a queue needs as many CQ entries as
            // work requests, and a RECV's segments are receive SGEs.
            max_dtos: a.max_qp_wr.min(a.max_cqe).min(4096),
            max_iov: a.max_send_sge.min(a.max_sge_rd).min(a.max_recv_sge),
            max_rdma_read_in: a.max_qp_rd_atom,
            max_rdma_read_out: a.max_qp_init_rd_atom,
            max_rmr_pages: a.max_fast_reg_page_list_len,
            max_evd_qlen: MAX_EVD_QLEN,
            max_private_data: MAX_PRIVATE_DATA as u32,
            transport: t,
            caps,
            max_read_iov: a.max_sge_rd,
        };
        let n = &name[..name.len().min(63)];
        out.name[..n.len()].copy_from_slice(n);
        out
    }

    /// Whether the transport can do all of `caps`.
    pub fn has_caps(&self, caps: Caps) -> bool {
        self.caps.contains_all(caps)
    }

    /// The device's name (the bytes of `name` before its NUL).
    pub fn name(&self) -> &[u8] {
        let n = self
            .name
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(self.name.len());
        &self.name[..n]
    }
}

/// The state of a port (`enum rkdapl_port_state`, IB spec 14.2.5.6, `enum ib_port_state`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortState {
    /// No link.
    Down = 1,
    /// Link up, not configured (InfiniBand: no SM yet).
    Init = 2,
    /// Configured, not yet active.
    Armed = 3,
    /// Connections can be made.
    Active = 4,
    /// Active, going down soon.
    ActiveDefer = 5,
}

/// A port of an IA's device, now (`rkdapl_ia_query_port`; the C ABI's
/// `struct rkdapl_port_attr`, from `struct ib_port_attr`).
#[derive(Clone, Copy, Debug)]
pub struct PortAttr {
    /// The port number queried (1-based).
    pub port: u32,
    /// Ports of the device.
    pub port_count: u32,
    /// The port's state (`None` for a value IB does not define, such as `IB_PORT_NOP`).
    pub state: Option<PortState>,
    /// Physical state (IB spec 14.2.5.6: 5 is LinkUp, 3 Disabled).
    pub phys_state: u8,
    /// Path MTU in use, in bytes.
    pub active_mtu: u32,
    /// Largest path MTU the port supports, in bytes.
    pub max_mtu: u32,
    /// Largest message a DTO may move, in bytes.
    pub max_msg_size: u32,
    /// 1 InfiniBand, 2 Ethernet (RoCE, iWARP): `IB_LINK_LAYER_*`.
    pub link_layer: u32,
}

impl PortState {
    /// The state of `enum ib_port_state` value `state` (`None` for a value IB does not define).
    fn of(state: u32) -> Option<PortState> {
        use PortState::*;
        [Down, Init, Armed, Active, ActiveDefer]
            .into_iter()
            .find(|s| *s as u32 == state)
    }
}

/// An open interface adapter.
///
/// # Invariants
///
/// `live` is true until the device is removed ([`Ia::revoke`]); objects of the IA are
/// created, and their device resources used from process context, only while holding it
/// true, with a token of `bound` ([`Ia::with_device`]), except those made and used per I/O
/// (LMRs, RMR binds), which check `removed` instead: RMR binds in an RCU read-side section
/// that saw it false ([`Ia::live_rcu`]), which [`Ia::revoke`] waits for; LMRs with a token of
/// `bound` ([`Ia::with_binding`]), their registry refusing them once `removed` is set.
#[pin_data]
pub(crate) struct Ia {
    #[pin]
    live: Mutex<bool>,
    /// The device as rkdapl's ib_client sees it: its objects are made from it, and the layer
    /// revokes what is left of them when the device goes.
    bound: Arc<BoundDevice>,
    /// Set once the device was removed (`live` false), for callers that cannot sleep: the
    /// per-I/O paths' liveness check ([`Ia::live_rcu`]).
    removed: AtomicBool,
    /// The device's name and limits, kept for after its removal.
    pub(crate) dev_name: CString,
    attrs: DeviceAttrs,
    /// The transport of the device's port 1, decided once at open: the rules its EPs follow
    /// (iWARP: no RDMA WRITE with immediate, `max_sge_rd` SGEs per RDMA READ).
    transport: Transport,
    /// The consumer module that opened the IA (C: `KBUILD_MODNAME`): the owner rdma restrack
    /// shows for the IA's PDs, CQs, MRs and CM ids (the layer's objects keep copies).
    pub(crate) owner: CString,
    /// The IA's debugfs directory, parent of its EPs' directories.
    pub(crate) dir: Dir,
    _info: Pin<KBox<File<IaInfo>>>,
    /// Where the IA's asynchronous events go (`rkdapl_ia_set_async_evd`).
    pub(crate) async_slot: Arc<AsyncSlot>,
    /// The objects made on the IA, from their creation to their free.
    pub(crate) children: Arc<Children>,
    /// The handler of the device's asynchronous events (`ia/events.rs`), while the device is
    /// there.
    #[pin]
    events: Mutex<Option<events::IaEventsReg>>,
    /// The network namespace its PSPs and EPs make their CM ids in (`init_net` unless opened
    /// with `rkdapl_ia_open_net` or `rkdapl_ia_open_addr_net`); held until the IA goes, after
    /// its last object.
    pub(crate) net: ARef<NetNs>,
}

impl Ia {
    /// The IA number `id` on `dev` for the module `owner`, with its debugfs directory in
    /// `root`, the registry `children` (not listed: [`crate::adapters`] lists it) and the
    /// network namespace `net`. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn new(
        binding: Arc<BoundDevice>,
        root: &Dir,
        id: u32,
        owner: &CStr,
        children: Arc<Children>,
        net: ARef<NetNs>,
    ) -> Result<Arc<Ia>> {
        let dev = BoundDevice::access(&binding)?;
        let info = IaInfo {
            dev_name: CString::try_from(dev.name())?,
            ports: dev.phys_port_cnt(),
            attrs: dev.attrs(),
            owner: CString::try_from(owner)?,
        };
        let (dir, info) = debugfs::ia_dir(root, id, info)?;
        let dev_name = CString::try_from(dev.name())?;
        let attrs = dev.attrs();
        // Every device rkdapl runs on has one port; a device mixing transports across ports
        // does not exist in Linux.
        let transport = dev.transport(1).unwrap_or(Transport::Ib);
        let async_slot = AsyncSlot::new()?;
        let bound = binding.clone();
        let ia = Arc::pin_init(
            try_pin_init!(Ia {
                live <- new_mutex!(true, "rkdapl_ia_live"),
                bound,
                removed: AtomicBool::new(false),
                dev_name,
                attrs,
                transport,
                owner: CString::try_from(owner)?,
                dir,
                _info: info,
                async_slot,
                children,
                events <- new_mutex!(None, "rkdapl_ia_events"),
                net,
            }),
            GFP_KERNEL,
        )?;
        ia.listen_events(&dev)?;
        Ok(ia)
    }

    /// `rkdapl_ia_close`: the consumer lets go of the IA. Its children keep it (and the device)
    /// until they are freed; then it leaves the list of IAs. Process context; sleeps.
    pub(crate) fn close(&self) {
        self.children.close();
    }

    /// The device's limits (kept after a removal).
    pub(crate) fn attrs(&self) -> DeviceAttrs {
        self.attrs
    }

    /// The transport of the device's port 1 (kept after a removal). Any context.
    pub(crate) fn transport(&self) -> Transport {
        self.transport
    }

    /// The device's limits as DAT states them (`rkdapl_ia_query`). Any context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed: the consumer should free its objects.
    pub(crate) fn query(&self) -> Result<IaAttr> {
        if self.is_removed() {
            return Err(ENODEV);
        }
        Ok(IaAttr::of_device(
            &self.attrs,
            self.dev_name.to_bytes(),
            self.transport,
        ))
    }

    /// The state of port `port` of the IA's device now (`rkdapl_ia_query_port`). Process
    /// context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed, `-EINVAL` for a port out of range, or the
    /// driver's error.
    pub(crate) fn query_port(&self, port: u32) -> Result<PortAttr> {
        let _live = self.live()?;
        let dev = BoundDevice::access(&self.bound)?;
        let a: PortAttrs = dev.query_port(port)?;
        Ok(PortAttr {
            port,
            port_count: dev.phys_port_cnt(),
            state: PortState::of(a.state),
            phys_state: a.phys_state,
            active_mtu: a.active_mtu,
            max_mtu: a.max_mtu,
            max_msg_size: a.max_msg_sz,
            link_layer: a.link_layer,
        })
    }

    /// The name of the network device of port `port` of the IA's device (RoCE, iWARP): the
    /// name the Rust API's `Ia::open_netdev` finds the device by. Process context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed or for a port without a network device
    /// (InfiniBand), `-EINVAL` for a port out of range, `-ENOMEM`.
    pub(crate) fn port_netdev_name(&self, port: u32) -> Result<CString> {
        self.with_device(|dev| dev.port_netdev_name(port))
    }

    /// Makes `evd` (an EVD of this IA) the IA's async EVD, or with `None` unsets it
    /// (`rkdapl_ia_set_async_evd`). Process context.
    ///
    /// # Errors
    ///
    /// `-EXDEV` for an EVD of another IA, `-EINVAL` for an EVD already freed.
    pub(crate) fn set_async_evd(&self, evd: Option<Arc<Evd>>) -> Result {
        if evd.as_ref().is_some_and(|e| !e.same_ia(&self.async_slot)) {
            return Err(EXDEV);
        }
        drop(self.async_slot.set(evd)?);
        Ok(())
    }

    /// Runs `make` with the IA's device while holding the IA live ([`Ia::live`]): a device
    /// removal waits for it, and afterwards finds what it made. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed, or `make`'s error.
    pub(crate) fn with_device<T>(&self, make: impl FnOnce(&Bound<'_>) -> Result<T>) -> Result<T> {
        let _live = self.live()?;
        let dev = BoundDevice::access(&self.bound)?;
        make(&dev)
    }

    /// Runs `make` with the IA's device held bound (an SRCU read-side section of its binding,
    /// which the device's removal waits for), without the IA's `live` mutex: for objects
    /// that are found by a removal through the IA's registry, which refuses them once the IA
    /// was made dead ([`Ia::revoke`]; an LMR, made per I/O). Any context (`make` decides).
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed, or `make`'s error.
    pub(crate) fn with_binding<T>(
        &self,
        make: impl FnOnce(&Bound<'_>) -> Result<T>,
    ) -> Result<T> {
        if self.is_removed() {
            return Err(ENODEV);
        }
        let dev = BoundDevice::access(&self.bound)?;
        make(&dev)
    }

    /// Whether the IA is live, for a caller inside the RCU read-side section `_rcu` that uses
    /// the IA's objects (an RMR bind): the device's removal ([`Ia::revoke`]) waits for every
    /// section that saw it live before it revokes anything. The per-I/O paths' check, instead
    /// of [`Ia::live`]'s mutex. Any context.
    pub(crate) fn live_rcu(&self, _rcu: &rcu::Guard) -> bool {
        !self.removed.load(Ordering::Acquire)
    }

    /// Locks the IA live: while the guard is held the device stays registered and no object of
    /// the IA is revoked. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed.
    pub(crate) fn live(&self) -> Result<LiveDev<'_>> {
        let g = self.live.lock();
        if !*g {
            return Err(ENODEV);
        }
        Ok(g)
    }

    /// Whether the IA is open on `dev` (false once revoked).
    pub(crate) fn is_on(&self, dev: &Device) -> bool {
        self.bound.is(dev) && *self.live.lock()
    }

    /// Whether the IA's device is `dev`, compared without locking (for callers in atomic
    /// context or holding [`Ia::live`]).
    pub(crate) fn same_device(&self, dev: &Device) -> bool {
        self.bound.is(dev)
    }

    /// Whether `b` is the binding of the IA's device. Any context.
    pub(crate) fn same_binding(&self, b: &Arc<BoundDevice>) -> bool {
        Arc::ptr_eq(&self.bound, b)
    }

    /// Device removal, consumer unload: no more objects or device resources for this IA
    /// (calls in progress that hold it [`Ia::live`] or saw it [`Ia::live_rcu`] have finished,
    /// later ones fail, and its registry takes no new child with device resources). Process
    /// context; sleeps (a grace period).
    pub(crate) fn revoke(&self) {
        // Port events of the going device are not reported any more (the removal reports
        // IA_CATASTROPHIC itself).
        self.stop_events();
        {
            let mut live = self.live.lock();
            self.removed.store(true, Ordering::Release);
            *live = false;
        }
        // The per-I/O paths that saw the IA live in an RCU read-side section are done.
        rcu::synchronize_rcu();
        self.children.kill();
    }

    /// Reports the device's removal on the async EVD: `RKDAPL_ASYNC_IA_CATASTROPHIC`, status
    /// `-ENODEV`. Process context.
    pub(crate) fn report_catastrophic(&self) {
        let ev = Event::asynchronous(EventType::AsyncIaCatastrophic, ENODEV.to_errno());
        self.async_slot.post(ev);
    }

    /// Whether the device was removed. Any context.
    pub(crate) fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }
}

mod events;

#[cfg(CONFIG_KUNIT = "y")]
mod kunit;
