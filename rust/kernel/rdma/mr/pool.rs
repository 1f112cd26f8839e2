// SPDX-License-Identifier: GPL-2.0

//! A pool of FRWR MRs on a QP (`ib_mr_pool_init`, `ib_mr_pool_get`, `ib_mr_pool_put`,
//! `ib_mr_pool_destroy`): registering memory for one I/O takes an MR from it and gives it back,
//! in any context, with no allocation and no sleep, as nvme-rdma and `rdma_rw` do.
//!
//! C header: [`include/rdma/mr_pool.h`](srctree/include/rdma/mr_pool.h).
//!
//! The MRs hang on a list of the pool's own under the QP's `mr_lock` (not `qp->rdma_mrs`, which
//! `rdma_rw` owns for a QP created with `max_rdma_ctxs`), and the QP counts those taken out
//! (`mrs_used`). So the pool belongs to the QP: it is created on a CM id's QP
//! (`CmId::create_mr_pool`) and destroyed by whatever destroys that QP, after the QP was drained
//! and before it is destroyed (the CM id's `Drop`, or the revocation of the id at its device's
//! removal), with the MRs taken out at that time: they are put back first, so the QP's count
//! is 0 when it goes. A [`PoolMr`] held past that point keeps its keys readable, refuses to map
//! with `-ENODEV` and is given back to nothing.

use super::{
    frmr::{MapLimits, MrKeys},
    DmaRegion, Sge,
};
use crate::{
    bindings,
    error::to_result,
    prelude::*,
    rdma::{bound::BoundDevice, pd::Pd},
    sync::{rcu, Arc, UniqueArc},
    types::Opaque,
};
use core::{
    ptr::NonNull,
    sync::atomic::{AtomicBool, Ordering},
};

/// The largest number of MRs a pool holds.
pub const MR_POOL_MAX: u32 = 4096;

/// A pool of FRWR MRs (`IB_MR_TYPE_MEM_REG`) of a QP, each able to hold `max_pages` pages.
///
/// Shared by the CM id whose QP it is on and by every [`PoolMr`] taken from it; the id destroys
/// it (deregisters its MRs) before its QP, whatever holds the pool then.
///
/// # Invariants
///
/// `list` is initialized, does not move (its own allocation) and, while `live`, holds the
/// pool's MRs that are not taken out, all of them allocated in `qp`'s PD, on `qp`'s `mr_lock`;
/// `qp` is live while `live` is set; `live` is cleared once, by [`MrPool::destroy`], which
/// waits for the RCU read-side critical sections that saw it set before it puts back and
/// deregisters the MRs. `mrs` lists every MR of the pool, sorted by address.
pub struct MrPool {
    list: KBox<Opaque<bindings::list_head>>,
    qp: NonNull<bindings::ib_qp>,
    mrs: KVec<NonNull<bindings::ib_mr>>,
    /// Scratch for [`MrPool::destroy`]: which of `mrs` are on `list`.
    on_list: KVec<AtomicBool>,
    live: AtomicBool,
    max_pages: u32,
    page_size_cap: u64,
    pd: Arc<Pd>,
}

// SAFETY: MR verbs and `ib_mr_pool_*` may be called from any thread; `list` is changed only
// under the QP's `mr_lock`.
unsafe impl Send for MrPool {}
// SAFETY: `&MrPool` only takes and gives back MRs under the QP's `mr_lock`, or reads.
unsafe impl Sync for MrPool {}

impl MrPool {
    /// Allocates `nr` FRWR MRs of `max_pages` pages each in `pd` on the list of a new pool of
    /// `qp`. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for `nr` of 0 or over [`MR_POOL_MAX`], or a page count the device refuses,
    /// `-ENODEV` once the device was removed, `-ENOMEM`, or the driver's error.
    ///
    /// # Safety
    ///
    /// `qp` is a live QP of `pd` that stays live until [`MrPool::destroy`] was called, which
    /// its owner calls before destroying it.
    pub(crate) unsafe fn create_on(
        qp: *mut bindings::ib_qp,
        pd: &Arc<Pd>,
        nr: u32,
        max_pages: u32,
    ) -> Result<Arc<MrPool>> {
        if nr == 0 || nr > MR_POOL_MAX || max_pages == 0 {
            return Err(EINVAL);
        }
        let qp = NonNull::new(qp).ok_or(EINVAL)?;
        let page_size_cap = BoundDevice::access(pd.binding())?.attrs().page_size_cap;
        let list = KBox::new(Opaque::<bindings::list_head>::uninit(), GFP_KERNEL)?;
        let head = list.get();
        // SAFETY: `list` is allocated and not shared yet: an empty list points to itself.
        unsafe {
            head.write(bindings::list_head {
                next: head,
                prev: head,
            })
        };
        let mut on_list = KVec::with_capacity(nr as usize, GFP_KERNEL)?;
        for _ in 0..nr {
            on_list.push(AtomicBool::new(false), GFP_KERNEL)?;
        }
        // Everything allocated before the MRs are: from here on nothing fails but the driver.
        let mut pool = UniqueArc::new(
            MrPool {
                list,
                qp,
                mrs: KVec::with_capacity(nr as usize, GFP_KERNEL)?,
                on_list,
                live: AtomicBool::new(false),
                max_pages,
                page_size_cap,
                pd: pd.clone(),
            },
            GFP_KERNEL,
        )?;
        // SAFETY: `qp` is live (the caller's promise); `head` is an initialized list head that
        // outlives the MRs on it (freed only after `destroy`). On failure it destroyed the MRs
        // it allocated.
        to_result(unsafe {
            bindings::ib_mr_pool_init(
                qp.as_ptr(),
                head,
                nr as i32,
                bindings::ib_mr_type_IB_MR_TYPE_MEM_REG,
                max_pages,
                0,
            )
        })?;
        // Nothing takes from the list before the pool is returned: no lock needed to walk it.
        // SAFETY: `head` holds `nr` MRs linked through `qp_entry` (`ib_mr_pool_init`).
        unsafe {
            let mut pos = (*head).next;
            while pos != head && pool.mrs.len() < nr as usize {
                let mr = mr_of(pos);
                // Within the capacity reserved above: does not allocate.
                if pool
                    .mrs
                    .push(NonNull::new_unchecked(mr), GFP_NOWAIT)
                    .is_err()
                {
                    break;
                }
                pos = (*pos).next;
            }
        }
        pool.mrs.sort_unstable_by_key(|p| p.as_ptr() as usize);
        // INVARIANT: `list` is initialized and holds the MRs of `mrs`, none taken out; `qp` is
        // live until `destroy` (the caller's promise).
        pool.live.store(true, Ordering::Release);
        Ok(pool.into())
    }

    /// The number of MRs in the pool (taken out or not).
    pub fn len(&self) -> u32 {
        self.mrs.len() as u32
    }

    /// Whether the pool has no MR (never true of a pool that was created).
    pub fn is_empty(&self) -> bool {
        self.mrs.is_empty()
    }

    /// Whether the pool is on the QP `qp`. Any context.
    pub fn is_of(&self, qp: *mut bindings::ib_qp) -> bool {
        self.qp.as_ptr() == qp
    }

    /// Whether the pool was not destroyed yet. Any context.
    pub fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// The number of pages each of the pool's MRs holds.
    pub fn max_pages(&self) -> u32 {
        self.max_pages
    }

    /// Takes an MR out of the pool (`ib_mr_pool_get`), until the returned [`PoolMr`] is
    /// dropped. Any context: does not sleep or allocate (takes the QP's `mr_lock`, interrupts
    /// off).
    ///
    /// # Errors
    ///
    /// `-EAGAIN` if every MR is taken out, `-ENODEV` once the pool was destroyed (its QP's CM
    /// id was dropped, or its device removed).
    pub fn get(self: &Arc<Self>) -> Result<PoolMr> {
        let rcu = rcu::read_lock();
        if !self.live.load(Ordering::Acquire) {
            return Err(ENODEV);
        }
        // SAFETY: `qp` is live and `list` the pool's while `live` is set, which `destroy` waits
        // for this RCU section to see cleared.
        let mr = unsafe { bindings::ib_mr_pool_get(self.qp.as_ptr(), self.list.get()) };
        let mr = NonNull::new(mr).ok_or(EAGAIN)?;
        // SAFETY: `mr` is a live MR of the pool (taken out above, deregistered only by
        // `destroy`, which waits for this section).
        let keys = unsafe { MrKeys::of(mr.as_ptr()) };
        drop(rcu);
        // INVARIANT: `mr` was taken out of the pool.
        Ok(PoolMr {
            pool: self.clone(),
            mr,
            keys,
        })
    }

    /// Destroys the pool: no MR is taken out or mapped from now on, the MRs taken out are put
    /// back, and every MR is deregistered (`ib_mr_pool_destroy`). Called by the owner of the QP
    /// once, after the QP was drained (no work request uses an MR of the pool any more) and
    /// before it destroys the QP; a second call does nothing. Process context; sleeps (waits
    /// for an RCU grace period).
    pub(crate) fn destroy(&self) {
        if !self.live.swap(false, Ordering::AcqRel) {
            return;
        }
        // Gets, gives back and mappings that saw the pool live end; none begins any more, so
        // the list and the QP's count of MRs taken out do not change.
        rcu::synchronize_rcu();
        let head = self.list.get();
        // SAFETY: `head` is the pool's list, which nothing else changes any more (above); the
        // QP is live (the caller's promise); the MRs of `mrs` are live until
        // `ib_mr_pool_destroy` below.
        unsafe {
            let mut pos = (*head).next;
            while pos != head {
                let mr = mr_of(pos);
                if let Ok(i) = self
                    .mrs
                    .binary_search_by_key(&(mr as usize), |p| p.as_ptr() as usize)
                {
                    self.on_list[i].store(true, Ordering::Relaxed);
                }
                pos = (*pos).next;
            }
            for (mr, on) in self.mrs.iter().zip(self.on_list.iter()) {
                if !on.load(Ordering::Relaxed) {
                    // Taken out: back on the list, so that the QP counts none taken out.
                    bindings::ib_mr_pool_put(self.qp.as_ptr(), head, mr.as_ptr());
                }
            }
            bindings::ib_mr_pool_destroy(self.qp.as_ptr(), head);
        }
    }
}

impl Drop for MrPool {
    /// Drop order: the pool's MRs go in [`MrPool::destroy`], which the owner of its QP calls
    /// before destroying the QP (a [`super::super::cm::CmId`] after draining it, on drop or at
    /// its device's removal), so the last reference to a pool (its CM id's, or that of a
    /// [`PoolMr`] held past it) finds it destroyed and frees only memory: the list head, the
    /// MR table and a reference to the PD, which thus outlives the pool's MRs. A pool still
    /// live here (never the case for one [`super::super::cm::CmId::create_mr_pool`] made: the
    /// id holds a reference until it destroyed it) is destroyed now, its QP being live while it
    /// is (type invariant).
    fn drop(&mut self) {
        self.destroy();
    }
}

/// The MR whose `qp_entry` is `entry` (the entry of an MR on an `ib_mr_pool` list).
fn mr_of(entry: *mut bindings::list_head) -> *mut bindings::ib_mr {
    // `qp_entry` is a member of the union `__bindgen_anon_1`: at its offset.
    let union = entry.cast::<bindings::ib_mr__bindgen_ty_1>();
    // SAFETY: The caller's `entry` is the `qp_entry` of an MR, so `union` is the MR's union.
    unsafe { crate::container_of!(union, bindings::ib_mr, __bindgen_anon_1) }
}

/// An MR taken out of a [`MrPool`], given back when dropped (`ib_mr_pool_put`).
///
/// # Invariants
///
/// `mr` was taken out of `pool` and is not on its list; it is live while the pool is.
/// `keys` are its keys as taken out or last mapped.
pub struct PoolMr {
    pool: Arc<MrPool>,
    mr: NonNull<bindings::ib_mr>,
    keys: MrKeys,
}

// SAFETY: The MR is changed only through `&mut PoolMr`; verbs are thread-safe.
unsafe impl Send for PoolMr {}
// SAFETY: `&PoolMr` only reads.
unsafe impl Sync for PoolMr {}

impl PoolMr {
    /// Maps `[off, off + len)` of `region` into the MR's page list with a fresh key, as
    /// [`crate::rdma::mr::FrMr::map_gfp`]: valid once an `IB_WR_REG_MR` of it
    /// (`WrPool::post_reg_pool_mr`) has been executed. Any context with
    /// `GFP_ATOMIC` (a span of more than a few DMA segments allocates its scatterlist with
    /// `gfp`); the MR must not be registered (valid) at the time.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an empty or out-of-range span or a region of another device, `-E2BIG` if
    /// the span needs more pages than the MR holds, `-ENODEV` once the pool was destroyed,
    /// `-ENOMEM`, or the driver's error.
    pub fn map_gfp(
        &mut self,
        region: &DmaRegion,
        off: u64,
        len: u64,
        gfp: crate::alloc::Flags,
    ) -> Result {
        if !core::ptr::eq(
            Arc::as_ptr(region.binding()),
            Arc::as_ptr(self.pool.pd.binding()),
        ) {
            return Err(EINVAL);
        }
        let lim = MapLimits {
            max_pages: self.pool.max_pages,
            page_size_cap: self.pool.page_size_cap,
            gfp,
        };
        let pool = &self.pool;
        // SAFETY: `mr` is an FRWR MR of the PD's device (the region's, checked above) of
        // `max_pages` pages, taken out of the pool, so changed only through `&mut self`; it is
        // live while the pool is, which `live` checks inside the RCU section that `destroy`
        // waits for.
        unsafe {
            region.map_mr(
                self.mr.as_ptr(),
                lim,
                off,
                len,
                |_| pool.live.load(Ordering::Acquire),
                &mut self.keys,
            )
        }
    }

    /// The raw pointer, for calls into C while the pool is live.
    pub fn as_raw(&self) -> *mut bindings::ib_mr {
        self.mr.as_ptr()
    }

    /// The pool the MR was taken from.
    pub fn pool(&self) -> &Arc<MrPool> {
        &self.pool
    }

    /// The MR's current lkey.
    pub fn lkey(&self) -> u32 {
        self.keys.lkey
    }

    /// The MR's current rkey, the key a peer names in RDMA READ/WRITE.
    pub fn rkey(&self) -> u32 {
        self.keys.rkey
    }

    /// The I/O virtual address of the mapped range's first byte (what a peer names).
    pub fn iova(&self) -> u64 {
        self.keys.iova
    }

    /// Length of the mapped range in bytes.
    pub fn length(&self) -> u64 {
        self.keys.length
    }

    /// The SGE of the whole mapped range under the MR's lkey.
    pub fn sge(&self) -> Sge<'_> {
        Sge::new(self.iova(), self.length() as u32, self.lkey())
    }
}

impl Drop for PoolMr {
    /// Gives the MR back to its pool, unless the pool was destroyed (which put it back
    /// itself). Any context; does not sleep.
    fn drop(&mut self) {
        let _rcu = rcu::read_lock();
        if self.pool.live.load(Ordering::Acquire) {
            // SAFETY: The pool is live during this RCU section (`destroy` waits for it), so
            // its QP and list are; `mr` was taken out of it (type invariant) and is given
            // back once, here.
            unsafe {
                bindings::ib_mr_pool_put(
                    self.pool.qp.as_ptr(),
                    self.pool.list.get(),
                    self.mr.as_ptr(),
                )
            };
        }
    }
}
