// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`struct ib_qp`, IB spec 10.2.4) and the work requests posted to them.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A QP is created and destroyed through its CM id ([`super::cm::CmId::create_qp`]), which
//! keeps it attached to the connection, together with its CQs and the
//! [`super::wr::WrPool`]s whose contexts its work requests complete to. Work requests are
//! posted through those pools ([`super::wr::WrPool::post_send`]), which is safe: see
//! [`super::wr`]. A QP may carry a pool of FRWR MRs ([`super::mr::MrPool`]), taken and given
//! back per I/O in any context.

use super::mr::Sge;
use crate::{bindings, prelude::*, types::Opaque};
use core::marker::PhantomData;

/// Capacities asked for when a QP is created (`struct ib_qp_cap`), all in entries.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpCap {
    /// Outstanding SEND-queue work requests.
    pub max_send_wr: u32,
    /// Outstanding RECV-queue work requests.
    pub max_recv_wr: u32,
    /// SGEs per SEND-queue work request.
    pub max_send_sge: u32,
    /// SGEs per RECV work request.
    pub max_recv_sge: u32,
    /// Bytes of inline data per SEND-queue work request (posted with [`SendFlag::Inline`]:
    /// the CPU copies them at post time, the SGE addresses are kernel virtual addresses).
    pub max_inline_data: u32,
    /// RDMA READ/WRITE contexts for `rdma_rw` (0 if unused).
    pub max_rdma_ctxs: u32,
}

impl QpCap {
    pub(crate) fn from_c(c: &bindings::ib_qp_cap) -> QpCap {
        QpCap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
            max_rdma_ctxs: c.max_rdma_ctxs,
        }
    }
}

crate::impl_flags!(
    /// Flags of a SEND-queue work request (`enum ib_send_flags`): a set of [`SendFlag`]s.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::qp::{SendFlag, SendFlags};
    ///
    /// let f = SendFlag::Signaled | SendFlag::Fence;
    /// assert!(f.contains(SendFlag::Signaled));
    /// assert!(!f.contains(SendFlag::Inline));
    /// assert!(SendFlags::empty().contains_all(SendFlags::empty()));
    /// ```
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SendFlags(u32);

    /// One flag of a SEND-queue work request (`enum ib_send_flags`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SendFlag {
        /// Generate a completion on success (errors always complete).
        Signaled = bindings::ib_send_flags_IB_SEND_SIGNALED as u32,
        /// Wait for earlier RDMA READs to complete before starting (IB spec 10.8.3.3).
        Fence = bindings::ib_send_flags_IB_SEND_FENCE as u32,
        /// Ask the peer for a solicited event on the matching RECV.
        Solicited = bindings::ib_send_flags_IB_SEND_SOLICITED as u32,
        /// Copy the payload into the work request (small SENDs; no lkey needed).
        Inline = bindings::ib_send_flags_IB_SEND_INLINE as u32,
    }
);

impl SendFlags {
    /// The flags as ib_core's `send_flags`.
    pub const fn bits(self) -> u32 {
        self.0
    }
}

/// The operation of a SEND-queue work request (`enum ib_wr_opcode`).
#[derive(Clone, Copy, Debug)]
pub enum SendOp {
    /// SEND: consumes a RECV at the peer.
    Send,
    /// SEND with immediate data delivered in the peer's RECV completion.
    SendImm {
        /// The immediate value (host order).
        imm: u32,
    },
    /// SEND that also invalidates `rkey` at the peer (IB spec 10.6.5).
    SendInv {
        /// The peer's rkey to invalidate.
        rkey: u32,
    },
    /// RDMA WRITE to `[remote_addr, remote_addr + len)` under `rkey`.
    Write {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
    /// RDMA WRITE with immediate: also consumes a RECV at the peer.
    WriteImm {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
        /// The immediate value (host order).
        imm: u32,
    },
    /// RDMA READ from `[remote_addr, remote_addr + len)` under `rkey`.
    Read {
        /// The peer's address.
        remote_addr: u64,
        /// The peer's rkey.
        rkey: u32,
    },
    /// Atomic fetch and add (IB spec 9.4.5): adds `add` to the 8-byte word at `remote_addr`
    /// (8-byte aligned) under `rkey`; the word's value before lands in the one 8-byte SGE.
    FetchAdd {
        /// The peer's address, 8-byte aligned.
        remote_addr: u64,
        /// The peer's rkey (with [`super::AccessFlag::RemoteAtomic`]).
        rkey: u32,
        /// What is added.
        add: u64,
    },
    /// Atomic compare and swap (IB spec 9.4.5): the 8-byte word at `remote_addr` becomes `swap`
    /// if it equals `compare`; its value before lands in the one 8-byte SGE.
    CmpSwap {
        /// The peer's address, 8-byte aligned.
        remote_addr: u64,
        /// The peer's rkey (with [`super::AccessFlag::RemoteAtomic`]).
        rkey: u32,
        /// The value expected.
        compare: u64,
        /// The value written if the word held `compare`.
        swap: u64,
    },
}

/// A SEND-queue work request as the driver reads it: `struct ib_rdma_wr` or, for atomics,
/// `struct ib_atomic_wr`, both starting with their `struct ib_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union WrStorage {
    rdma: bindings::ib_rdma_wr,
    atomic: bindings::ib_atomic_wr,
}

impl WrStorage {
    /// The `struct ib_send_wr` both forms start with.
    pub(crate) fn send_wr(&mut self) -> &mut bindings::ib_send_wr {
        // SAFETY: Both members are `repr(C)` structs whose first field is a `ib_send_wr`, at
        // offset 0 of the union; the storage is always initialized (zeroed, then written).
        unsafe { &mut self.rdma.wr }
    }

    /// The address of [`WrStorage::send_wr`], for comparing with the driver's `bad_wr`.
    pub(crate) fn send_wr_ptr(&self) -> *const bindings::ib_send_wr {
        // SAFETY: As in `send_wr`; only the address is taken.
        unsafe { &raw const self.rdma.wr }
    }
}

/// A SEND-queue work request for SEND, RDMA WRITE or RDMA READ (`struct ib_rdma_wr`) of a
/// context of a [`super::wr::WrPool`], over SGEs that borrow their memory for `'a`. Posted
/// with [`super::wr::WrPool::post_send`].
pub struct SendWr<'a> {
    pub(crate) wr: WrStorage,
    pub(crate) ctx: u32,
    pub(crate) last: bool,
    _sges: PhantomData<&'a [Sge<'a>]>,
}

impl<'a> SendWr<'a> {
    /// Builds a work request of context `ctx`: its `last` one (the one a signalled request
    /// completes to; see [`super::wr::WrCompletion::done`]) or one before it.
    pub fn new(
        op: SendOp,
        ctx: u32,
        last: bool,
        sges: &'a [Sge<'a>],
        flags: SendFlags,
    ) -> SendWr<'a> {
        let mut w = bindings::ib_rdma_wr::default();
        w.wr.sg_list = Sge::slice_as_raw(sges);
        w.wr.num_sge = sges.len() as i32;
        w.wr.send_flags = flags.0 as i32;
        let atomic = |opcode, remote_addr, rkey, compare_add, swap| {
            let a = bindings::ib_atomic_wr {
                wr: bindings::ib_send_wr { opcode, ..w.wr },
                remote_addr,
                compare_add,
                swap,
                rkey,
                ..Default::default()
            };
            WrStorage { atomic: a }
        };
        let storage = match op {
            SendOp::FetchAdd {
                remote_addr,
                rkey,
                add,
            } => Some(atomic(
                bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
                remote_addr,
                rkey,
                add,
                0,
            )),
            SendOp::CmpSwap {
                remote_addr,
                rkey,
                compare,
                swap,
            } => Some(atomic(
                bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
                remote_addr,
                rkey,
                compare,
                swap,
            )),
            _ => None,
        };
        if let Some(wr) = storage {
            return SendWr {
                wr,
                ctx,
                last,
                _sges: PhantomData,
            };
        }
        w.wr.opcode = match op {
            SendOp::Send => bindings::ib_wr_opcode_IB_WR_SEND,
            SendOp::SendImm { imm } => {
                w.wr.ex.imm_data = imm.to_be();
                bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM
            }
            SendOp::SendInv { rkey } => {
                w.wr.ex.invalidate_rkey = rkey;
                bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV
            }
            SendOp::Write { remote_addr, rkey } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
            }
            SendOp::WriteImm {
                remote_addr,
                rkey,
                imm,
            } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.wr.ex.imm_data = imm.to_be();
                bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
            }
            SendOp::Read { remote_addr, rkey } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                bindings::ib_wr_opcode_IB_WR_RDMA_READ
            }
            // Built above.
            SendOp::FetchAdd { .. } | SendOp::CmpSwap { .. } => 0,
        };
        SendWr {
            wr: WrStorage { rdma: w },
            ctx,
            last,
            _sges: PhantomData,
        }
    }
}

/// A queue pair, borrowed from the CM id that owns it.
///
/// # Invariants
///
/// The `ib_qp` is live for as long as the `&Qp` exists.
#[repr(transparent)]
pub struct Qp(Opaque<bindings::ib_qp>);

// SAFETY: Posting and draining are thread-safe verbs.
unsafe impl Send for Qp {}
// SAFETY: See the `Send` impl.
unsafe impl Sync for Qp {}

impl Qp {
    /// Borrows a `Qp` from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live QP that is not destroyed during `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ib_qp) -> &'a Qp {
        // SAFETY: `Qp` is transparent over `ib_qp`; the caller guarantees liveness.
        unsafe { &*ptr.cast::<Qp>() }
    }

    /// The raw pointer, for calls into C.
    pub fn as_raw(&self) -> *mut bindings::ib_qp {
        self.0.get()
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: Set at creation; the QP is live (type invariant).
        unsafe { (*self.as_raw()).qp_num }
    }

    /// Posts `wrs` to the SEND queue as one chain, in order (for
    /// [`super::wr::WrPool::post_send`]). Any context.
    ///
    /// # Errors
    ///
    /// The error and how many requests, from the start of `wrs`, were posted before it.
    ///
    /// # Safety
    ///
    /// Every request's `wr_cqe` is an entry that stays valid until the request's completion
    /// (success, error or flush) has been delivered.
    pub(crate) unsafe fn post_send_raw(
        &self,
        wrs: &mut [SendWr<'_>],
    ) -> core::result::Result<(), (Error, usize)> {
        let n = wrs.len();
        if n == 0 {
            return Ok(());
        }
        for i in 0..n - 1 {
            let next: *mut bindings::ib_send_wr = wrs[i + 1].wr.send_wr();
            wrs[i].wr.send_wr().next = next;
        }
        wrs[n - 1].wr.send_wr().next = core::ptr::null_mut();
        let mut bad: *const bindings::ib_send_wr = core::ptr::null();
        // SAFETY: The chain is well formed; the SGE arrays are borrowed for the call
        // (`SendWr`'s lifetime); the caller guarantees the entries.
        let r = unsafe { bindings::ib_post_send(self.as_raw(), wrs[0].wr.send_wr(), &mut bad) };
        if r == 0 {
            return Ok(());
        }
        let posted = wrs
            .iter()
            .position(|w| core::ptr::eq(w.wr.send_wr_ptr(), bad))
            .unwrap_or(0);
        Err((Error::from_errno(r), posted))
    }

    /// The path MTU the QP sends and receives with, in bytes (256..4096), from `ib_query_qp`;
    /// 0 before the QP has one (it gets it on its way to RTR: from the route on the active
    /// side, from the peer's REQ on the passive side). Process context (drivers may sleep).
    ///
    /// # Errors
    ///
    /// The driver's error.
    pub fn path_mtu(&self) -> Result<u32> {
        let mut attr = bindings::ib_qp_attr::default();
        let mut init = bindings::ib_qp_init_attr::default();
        // SAFETY: The QP is live (type invariant); both structs are writable for the call.
        crate::error::to_result(unsafe {
            bindings::ib_query_qp(
                self.as_raw(),
                &mut attr,
                bindings::ib_qp_attr_mask_IB_QP_PATH_MTU as c_int,
                &mut init,
            )
        })?;
        Ok(match attr.path_mtu {
            m @ 1..=5 => 128 << m,
            _ => 0,
        })
    }

    /// Moves the QP to the error state and waits until every posted work request has
    /// completed (flushed ones included), with `ib_drain_qp`. Process context; sleeps.
    pub fn drain(&self) {
        // SAFETY: The QP is live (type invariant).
        unsafe { bindings::ib_drain_qp(self.as_raw()) };
    }
}
