// SPDX-License-Identifier: GPL-2.0

//! RDMA verbs and the RDMA connection manager, for kernel consumers (ULPs).
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h).
//!
//! This is the consumer side of ib_core: the objects a kernel service such as NVMe-oF,
//! SRP or NFS/RDMA creates on an RDMA device that some driver registered. The layout follows
//! the IB specification's verbs (chapter 11) as Linux implements them:
//!
//! - [`client`]: an `ib_client` registration, told when RDMA devices appear and go away.
//! - [`bound`]: a device as one client sees it between `add` and `remove`
//!   ([`bound::BoundDevice`]), the token objects are made from ([`bound::Bound`]), and the
//!   revocation, at `remove`, of the objects the client left on the device.
//! - `defer`: the workqueue on which objects dropped inside their own handler or completion
//!   work are released (a [`cm::CmId`] in its CM event handler, a [`cq::Cq`] in its completion
//!   work), owned by the client registration.
//! - [`device::Device`]: a registered `ib_device` and its attributes.
//! - [`event::Registration`]: an `ib_event_handler` registered on a device, whose
//!   [`event::EventHandler`] gets the device's and its ports' asynchronous events, typed
//!   ([`event::Event`]: port ACTIVE/DOWN, GID/LID changes, device fatal, ...).
//! - [`pd::Pd`]: a protection domain (`ib_alloc_pd`), with its local DMA lkey.
//! - [`cq::Cq`]: a completion queue polled by ib_core (`ib_alloc_cq`), whose completions are
//!   delivered to [`cq::Cqe`] done callbacks instead of `wr_id` values.
//! - [`cm::CmId`]: an RDMA CM identifier (`rdma_create_id`) with typed events, which also owns
//!   the queue pair it creates (`rdma_create_qp`).
//! - [`qp::Qp`]: a queue pair and its work requests (SEND, RDMA WRITE, RDMA READ).
//! - [`srq::Srq`]: a shared receive queue (`ib_create_srq`) whose RECVs any QP created on it
//!   consumes, in any order, with per-RECV contexts on a free list and its events
//!   (`IB_EVENT_SRQ_LIMIT_REACHED`, `IB_EVENT_SRQ_ERR`) delivered in process context.
//! - [`wr::WrPool`]: the per-work-request contexts of one queue of a QP, owned by the layer,
//!   through which work requests are posted safely (SEND, RECV, RDMA WRITE, RDMA READ, REG_MR,
//!   LOCAL_INV), and [`wr::Sge`], an SGE borrowing the memory it names.
//! - [`mr::DmaRegion`] and [`mr::FrMr`]: DMA mapping of kernel buffers for the local DMA lkey
//!   (a region may own its memory, which the CPU then reaches through [`mr::CpuAccess`]), and
//!   fast registration memory regions (FRWR) for remote access.
//!
//! Lifetimes follow ib_core's rules, and the types enforce them: the CM id owns its QP, the QP's
//! CQs and its context pools, and its `Drop` drains the QP, destroys the CM id, then the QP,
//! then releases the pools and CQs (so a completion never reaches a freed context and a CQ
//! outlives the QPs that use it): a drained connection is released in the order CM id, QP, CQs,
//! MRs, PD; a PD outlives everything created in it (MRs hold it). Objects
//! hold their C pointer and release it in `Drop`.
//!
//! An object may outlive its device: objects are made from a [`bound::Bound`] token of the
//! device (given to [`client::Client::add`], or taken later from the [`bound::BoundDevice`]
//! the client keeps), and when the device goes, what the client left on it is revoked after
//! its [`client::Client::remove`] returned, in the same order. A revoked object's calls that
//! would reach the device fail with `-ENODEV` and its `Drop` frees only memory; the device's
//! unregistration never waits for it. Posting needs no `unsafe`: SGEs borrow the
//! memory they name for the post call, and what a device does with a DMA address afterwards is
//! outside the CPU's memory model, as for [`crate::dma`] (see [`wr`]).

pub mod bound;
pub mod client;
pub mod cm;
pub mod cq;
pub(crate) mod defer;
pub mod device;
pub mod event;
pub mod mr;
pub mod pd;
pub mod qp;
pub mod srq;
pub mod wr;

mod kunit;

crate::impl_flags!(
    /// Access rights of a memory registration (`enum ib_access_flags`, IB spec 10.6.3.2): a set
    /// of [`AccessFlag`]s.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::{Access, AccessFlag};
    ///
    /// let a = AccessFlag::RemoteRead | AccessFlag::RemoteWrite;
    /// assert!(a.contains(AccessFlag::RemoteRead));
    /// assert!(!a.contains(AccessFlag::LocalWrite));
    /// assert!(!Access::empty().contains(AccessFlag::RemoteWrite));
    /// assert_eq!(Access::empty().bits(), 0);
    /// ```
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
    pub struct Access(u32);

    /// One access right of a memory registration (`enum ib_access_flags`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum AccessFlag {
        /// The local HCA may write the memory (needed by RECV and RDMA READ targets).
        LocalWrite = crate::bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
        /// A remote peer may RDMA WRITE the memory.
        RemoteWrite = crate::bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
        /// A remote peer may RDMA READ the memory.
        RemoteRead = crate::bindings::ib_access_flags_IB_ACCESS_REMOTE_READ,
        /// A remote peer may run atomic operations (fetch and add, compare and swap) on 8-byte
        /// aligned words of the memory.
        RemoteAtomic = crate::bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
    }
);

impl Access {
    /// The rights as the C `int` ib_core expects.
    pub const fn bits(self) -> i32 {
        self.0 as i32
    }
}
