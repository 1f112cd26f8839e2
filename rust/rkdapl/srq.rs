// SPDX-License-Identifier: GPL-2.0

//! SRQ: shared receive queue (DAT 2.0 `dat_srq_*`), an IB SRQ in a PZ whose RECVs the EPs
//! created on it ([`Srq::attach_ep`], `rkdapl_ep_create_with_srq`) consume.
//!
//! - A RECV posted to the SRQ ([`Srq::post_recv`]) takes a context of the RDMA layer's SRQ
//!   ([`crate::rdma::srq::Srq`]), which comes back with its completion in whatever order the
//!   EPs consume them. Its completion is reported on the DTO EVD of the EP whose QP consumed it
//!   (`ev.ep` that EP), with the RECV's cookie, as a RECV posted to that EP would be.
//! - A RECV still in the SRQ when the SRQ is freed (or its device removed) is reported once,
//!   `RKDAPL_DTO_FLUSHED`, on the EVD given at creation, with `ev.ep` 0: an IB SRQ has no CQ,
//!   and a QP leaving it flushes none of its RECVs.
//! - The low watermark ([`Srq::set_lw`], `ib_modify_srq` with `IB_SRQ_LIMIT`) fires once, as
//!   `RKDAPL_ASYNC_SRQ_LIMIT_REACHED` on the IA's async EVD, and is re-armed by setting it
//!   again; an SRQ error is `RKDAPL_ASYNC_SRQ_ERROR`. Both carry the SRQ's handle in `cookie`.
//! - Freeing an SRQ with EPs on it is refused (`-EBUSY`); an EP on an SRQ refuses its own
//!   RECVs (`-EINVAL`).

use crate::rdma::{
    bound::BoundDevice,
    cq::{Wc, WcOpcode},
    mr::DmaRegion,
    srq::{self as layer, SrqAttr as LayerAttr, SrqEvent, SrqOwner},
    wr::Sge,
};
use crate::{
    dto::{DtoOp, DtoStatus, OneOrMore, Segment},
    evd::{AsyncEvent, AsyncSlot, DtoEvent, Evd, Event, EventType},
    ia::Ia,
    lmr::Lmr,
    pz::Pz,
    registry::{Child, Rank},
};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{rcu, Arc, SpinLockIrq},
};

/// Most RECVs one SRQ holds (as an EP's receive queue).
pub(crate) const MAX_SRQ_DTOS: u32 = 4096;

/// Default RECV segments of an SRQ.
const DEFAULT_IOV: u32 = 4;

/// What an SRQ is created with (the first three fields) and what [`Srq::query`] reports
/// (DAT's `DAT_SRQ_ATTR` and `DAT_SRQ_PARAM`; the Rust API's [`crate::api::SrqParam`]); C passes and reads it as `struct rkdapl_srq_attr` (`abi/srq.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// RECVs the SRQ holds (1..=4096 and the device's limit).
    pub max_recv_dtos: u32,
    /// Local segments per RECV (0: 4).
    pub max_recv_iov: u32,
    /// The low watermark (below `max_recv_dtos`; 0: none).
    pub low_watermark: u32,
    /// Query: RECVs posted and not reported yet.
    pub outstanding: u32,
    /// Query: the device's limit of RECVs per SRQ.
    pub max_srq_dtos: u32,
    /// Query: the device's limit of segments per SRQ RECV.
    pub max_srq_iov: u32,
}

/// Most local segments of one RECV (as `iov::MAX_IOV`, which this module does not name: the
/// EPs' modules name it).
const MAX_IOV: u32 = 256;

/// An EP on the SRQ, as the SRQ sees it (the EP implements it: `ep/srq.rs`; this module names
/// no EP type, so that imports stay one way).
pub(crate) trait SrqEp: Send + Sync {
    /// The EVD the RECVs it consumes complete on (its DTO EVD).
    fn dto_evd(&self) -> &Arc<Evd>;
    /// What its events carry as their EP (`Event::ep`).
    fn event_ep(&self) -> usize;
}

/// A RECV of the SRQ, from its post to its report.
struct Slot {
    cookie: u64,
    len: u64,
    lmrs: OneOrMore<Arc<Lmr>>,
}

/// The SRQ's side of the RDMA layer's SRQ: its RECVs, its EPs and where events go.
#[pin_data]
pub(crate) struct Recvs {
    #[pin]
    slots: SpinLockIrq<KVec<Slot>>,
    /// The EPs on the SRQ, with their QP number once they have a QP (`u32::MAX` before).
    #[pin]
    eps: SpinLockIrq<KVec<(u32, Arc<dyn SrqEp>)>>,
    flush_evd: Arc<Evd>,
    ia_slot: Arc<AsyncSlot>,
    pz: Arc<Pz>,
    /// The C handle (or the SRQ's number), reported in async events.
    handle: AtomicUsize,
}

impl Recvs {
    fn take(&self, idx: u32) -> Option<(u64, u64, OneOrMore<Arc<Lmr>>)> {
        let mut s = self.slots.lock();
        let slot = s.get_mut(idx as usize)?;
        let lmrs = core::mem::replace(&mut slot.lmrs, OneOrMore::Empty);
        Some((slot.cookie, slot.len, lmrs))
    }

    /// A RECV that finished gives its LMRs back. Process context.
    fn release(lmrs: OneOrMore<Arc<Lmr>>) {
        for l in lmrs.as_slice() {
            l.put();
        }
        drop(lmrs);
    }
}

impl SrqOwner for Recvs {
    type Claimed = Option<(u64, u64, OneOrMore<Arc<Lmr>>)>;

    fn claim(&self, idx: u32) -> Self::Claimed {
        self.take(idx)
    }

    /// Process context (the EPs' CQs poll on a workqueue).
    fn done(&self, claimed: Self::Claimed, wc: &Wc) {
        let Some((cookie, len, lmrs)) = claimed else {
            return;
        };
        Self::release(lmrs);
        let mut ev = recv_event(cookie, DtoStatus::from_wc(wc));
        let _ = len;
        if wc.is_ok() {
            if let Event::Dto(DtoEvent {
                len,
                immediate,
                by_rdma_write_imm,
                invalidated_rkey,
                ..
            }) = &mut ev
            {
                *len = u64::from(wc.byte_len());
                *immediate = wc.imm_data();
                *by_rdma_write_imm = wc.opcode() == WcOpcode::RecvRdmaWithImm;
                *invalidated_rkey = wc.invalidated_rkey();
            }
            if let Some(rkey) = wc.invalidated_rkey() {
                if let Some(rmr) = self.pz.take_grant(rkey) {
                    rmr.remote_invalidated(rkey);
                }
            }
        }
        let qpn = wc.qp_num();
        let ep = self
            .eps
            .lock()
            .iter()
            .find(|(n, _)| *n == qpn)
            .map(|(_, e)| e.clone());
        match ep {
            Some(ep) => {
                if let Event::Dto(DtoEvent { ep: e, .. }) = &mut ev {
                    *e = ep.event_ep();
                }
                ep.dto_evd().post(ev);
            }
            None => self.flush_evd.post(ev),
        }
    }

    fn unconsumed(&self, idx: u32) {
        let Some((cookie, _, lmrs)) = self.take(idx) else {
            return;
        };
        Self::release(lmrs);
        self.flush_evd.post(recv_event(cookie, DtoStatus::Flushed));
    }

    fn event(&self, e: SrqEvent) {
        let kind = match e {
            SrqEvent::LimitReached => EventType::AsyncSrqLimitReached,
            SrqEvent::Error => EventType::AsyncSrqError,
        };
        let mut ev = Event::asynchronous(kind, 0);
        if let Event::Async(AsyncEvent { cookie, .. }) = &mut ev {
            *cookie = self.handle.load(Ordering::Relaxed) as u64;
        }
        self.ia_slot.post(ev);
    }
}

/// The completion of a RECV of the SRQ with `cookie` and `status`, of no EP yet.
fn recv_event(cookie: u64, status: DtoStatus) -> Event {
    Event::Dto(DtoEvent {
        ep: 0,
        cookie,
        status,
        op: DtoOp::Recv,
        len: 0,
        immediate: None,
        by_rdma_write_imm: false,
        invalidated_rkey: None,
        more: false,
    })
}

type LayerSrq = layer::Srq<Recvs>;

/// A shared receive queue. Registered with its IA from [`Srq::new`] to [`Srq::free`]; its EPs
/// keep it after that (they cannot be freed then: see [`Srq::free`]).
#[pin_data]
pub(crate) struct Srq {
    /// The SRQ's number (the Rust API's async events carry it).
    pub(crate) id: u32,
    pub(crate) ia: Arc<Ia>,
    pub(crate) pz: Arc<Pz>,
    /// The RDMA layer's SRQ, until freed or its device removed. Posts hold the lock for the
    /// call, so the last reference never goes in a post.
    #[pin]
    q: SpinLockIrq<Option<Arc<LayerSrq>>>,
    /// As created (the size the RECV contexts have).
    attr: SrqAttr,
    /// Its owner let go of it with EPs still on it (the Rust API's drop): the last EP's free
    /// frees it.
    orphaned: AtomicBool,
}

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

impl Srq {
    /// Creates an SRQ in `pz` (on `dev`, its IA's device, held live by the caller) whose
    /// unconsumed RECVs are reported on `evd` when it goes, and registers it. May sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an EVD of another IA, a size of 0 or over 4096 or the device's limits,
    /// or a low watermark not below the size; `-EOPNOTSUPP` if the device has no SRQs;
    /// `-ENOMEM`; the registry's (`-ENODEV` after device removal).
    pub(crate) fn new(
        pz: Arc<Pz>,
        dev: &crate::rdma::bound::Bound<'_>,
        evd: Arc<Evd>,
        attr: SrqAttr,
    ) -> Result<Arc<Srq>> {
        let ia = pz.ia.clone();
        if !evd.same_ia(&ia.async_slot) {
            return Err(EINVAL);
        }
        let _ = dev;
        let n = attr.max_recv_dtos;
        let iov = if attr.max_recv_iov == 0 {
            DEFAULT_IOV
        } else {
            attr.max_recv_iov
        };
        if n == 0 || n > MAX_SRQ_DTOS || iov > MAX_IOV {
            return Err(EINVAL);
        }
        let mut slots = KVec::with_capacity(n as usize, GFP_KERNEL)?;
        for _ in 0..n {
            slots.push(
                Slot {
                    cookie: 0,
                    len: 0,
                    lmrs: OneOrMore::Empty,
                },
                GFP_KERNEL,
            )?;
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let pd = pz.pd()?;
        let ia_slot = ia.async_slot.clone();
        let owner_pz = pz.clone();
        let owner = try_pin_init!(Recvs {
            slots <- new_spinlock_irq!(slots, "rkdapl_srq_slots"),
            eps <- new_spinlock_irq!(KVec::new(), "rkdapl_srq_eps"),
            flush_evd: evd,
            ia_slot,
            pz: owner_pz,
            handle: AtomicUsize::new(id as usize),
        });
        let l = LayerSrq::new(
            &pd,
            owner,
            LayerAttr {
                max_wr: n,
                max_sge: iov,
                limit: attr.low_watermark,
            },
        )?;
        let srq = Arc::pin_init(
            pin_init!(Srq {
                id,
                ia,
                pz,
                q <- new_spinlock_irq!(Some(l), "rkdapl_srq"),
                attr: SrqAttr {
                    max_recv_dtos: n,
                    max_recv_iov: iov,
                    ..attr
                },
                orphaned: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )?;
        srq.ia.children.add(srq.clone(), None)?;
        Ok(srq)
    }

    fn layer(&self) -> Result<Arc<LayerSrq>> {
        self.q.lock().clone().ok_or(ENODEV)
    }

    /// Records the C handle reported in the SRQ's async events.
    pub(crate) fn set_handle(&self, h: usize) {
        if let Ok(l) = self.layer() {
            l.owner().handle.store(h, Ordering::Relaxed);
        }
    }

    /// The RDMA layer's SRQ, for an EP's QP. Process context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` after the SRQ's free or its device's removal.
    pub(crate) fn for_qp(&self) -> Result<Arc<LayerSrq>> {
        self.layer()
    }

    /// Most segments per RECV of the SRQ.
    pub(crate) fn max_recv_dtos(&self) -> u32 {
        self.attr.max_recv_dtos
    }

    /// Counts `ep` as an EP on the SRQ (`rkdapl_srq_free` is refused until it is freed).
    ///
    /// # Errors
    ///
    /// `-ENODEV` after the SRQ's free or its device's removal, `-ENOMEM`.
    pub(crate) fn attach_ep(&self, ep: Arc<dyn SrqEp>) -> Result {
        let l = self.layer()?;
        l.owner().eps.lock().push((u32::MAX, ep), GFP_ATOMIC)?;
        Ok(())
    }

    /// `ep`'s QP on the SRQ has number `qpn`: its completions report on `ep`'s DTO EVD.
    pub(crate) fn set_qp(&self, ep: &dyn SrqEp, qpn: u32) {
        if let Ok(l) = self.layer() {
            for e in l.owner().eps.lock().iter_mut() {
                if core::ptr::addr_eq(&*e.1, ep) {
                    e.0 = qpn;
                }
            }
        }
    }

    /// `ep` was freed: it no longer counts. Process context.
    pub(crate) fn detach_ep(&self, ep: &dyn SrqEp) {
        let Ok(l) = self.layer() else { return };
        let gone = {
            let mut v = l.owner().eps.lock();
            v.iter()
                .position(|e| core::ptr::addr_eq(&*e.1, ep))
                .and_then(|i| v.remove(i).ok())
        };
        // The reference goes outside the lock (not the last: the caller's EP is alive).
        drop(gone);
        if self.orphaned.load(Ordering::Acquire) {
            let _ = self.free();
        }
    }

    /// Frees the SRQ now, or, with EPs on it, once the last of them is freed (the Rust API's
    /// drop). Process context; sleeps.
    pub(crate) fn free_when_unused(&self) {
        self.orphaned.store(true, Ordering::Release);
        let _ = self.free();
    }

    /// Checks the segments of one RECV for this SRQ. Any context.
    ///
    /// # Errors
    ///
    /// As an EP's segments (`Ep::check_segments`).
    pub(crate) fn check_segments(&self, segs: &[Segment<'_>]) -> Result {
        Segment::check_all(segs, &self.pz, MAX_IOV)
    }

    /// The segments of one RECV: `n` LMR triplets, the `i`-th given by `triplet(i)`, as
    /// an EP's segments (`Ep::segments`). Any context.
    ///
    /// # Errors
    ///
    /// As an EP's segments (`Ep::segments`).
    pub(crate) fn segments<'a>(
        &self,
        n: usize,
        mut triplet: impl FnMut(usize) -> Result<(&'a Arc<Lmr>, u64, u64)>,
    ) -> Result<OneOrMore<Segment<'a>>> {
        if n > MAX_IOV as usize {
            return Err(EINVAL);
        }
        let mut v = OneOrMore::Empty;
        for i in 0..n {
            let (lmr, offset, length) = triplet(i)?;
            v.push(Segment::new(lmr, offset, length, &self.pz)?, GFP_ATOMIC)?;
        }
        Ok(v)
    }

    /// Posts a RECV of `segs` (in the SRQ's PZ) with `cookie`. Any context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` after the SRQ's free or its device's removal, `-EMSGSIZE` for more segments
    /// than the SRQ takes, `-EACCES` for an LMR without local write, `-ENOSPC` if the SRQ
    /// holds `max_recv_dtos` RECVs already, `-ENOMEM`, or the driver's error.
    pub(crate) fn post_recv(&self, segs: &[Segment<'_>], cookie: u64) -> Result {
        let q = self.q.lock();
        let l = q.as_ref().ok_or(ENODEV)?;
        let g = rcu::read_lock();
        let mut sges: OneOrMore<Sge<'_>> = OneOrMore::Empty;
        let mut total = 0u64;
        for s in segs {
            if !s.lmr.privileges.contains(crate::lmr::MemPriv::LocalWrite) {
                return Err(EACCES);
            }
            let region: &Arc<DmaRegion> = s.lmr.region.try_access_with_guard(&g).ok_or(ENODEV)?;
            region.for_each_sge(s.offset, s.length, s.lmr.lkey(), |sge| {
                sges.push(sge, GFP_ATOMIC)
            })?;
            total = total.checked_add(s.length).ok_or(EINVAL)?;
        }
        if total > u64::from(u32::MAX) {
            return Err(EMSGSIZE);
        }
        if sges.as_slice().len() > self.attr.max_recv_iov as usize {
            return Err(EMSGSIZE);
        }
        let mut lmrs = OneOrMore::Empty;
        for s in segs {
            lmrs.push(s.lmr.clone(), GFP_ATOMIC)?;
        }
        let recvs = l.owner();
        let r = l.post_recv(
            sges.as_slice(),
            |idx| {
                for m in lmrs.as_slice() {
                    m.get();
                }
                if let Some(s) = recvs.slots.lock().get_mut(idx as usize) {
                    s.cookie = cookie;
                    s.len = total;
                    s.lmrs = core::mem::replace(&mut lmrs, OneOrMore::Empty);
                }
            },
            |idx| {
                if let Some((_, _, m)) = recvs.take(idx) {
                    // Not posted; the caller holds the LMRs (and `m` references to them).
                    for l in m.as_slice() {
                        l.put();
                    }
                }
            },
        );
        r.map(|_| ())
            .map_err(|e| if e == ENOMEM { ENOSPC } else { e })
    }

    /// Sets the low watermark (`rkdapl_srq_set_lw`): one `RKDAPL_ASYNC_SRQ_LIMIT_REACHED` once
    /// fewer RECVs than `lw` are left; setting it again re-arms it. Process context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for `lw` not below the SRQ's size, `-ENODEV` after device removal, or the
    /// driver's error.
    pub(crate) fn set_lw(&self, lw: u32) -> Result {
        self.layer()?.set_limit(lw)
    }

    /// The SRQ's attributes, RECVs outstanding and the device's limits (`rkdapl_srq_query`).
    /// Process context.
    ///
    /// # Errors
    ///
    /// `-ENODEV` after device removal, or the driver's error.
    pub(crate) fn query(&self) -> Result<SrqAttr> {
        let l = self.layer()?;
        let q = l.query()?;
        let (_, max_wr, max_sge) = layer::device_limits(&*BoundDevice::access(l.pd().binding())?);
        Ok(SrqAttr {
            max_recv_dtos: self.attr.max_recv_dtos,
            max_recv_iov: self.attr.max_recv_iov,
            low_watermark: q.limit,
            outstanding: l.outstanding(),
            max_srq_dtos: max_wr.min(MAX_SRQ_DTOS),
            max_srq_iov: max_sge,
        })
    }

    /// EPs on the SRQ that were not freed.
    pub(crate) fn ep_count(&self) -> usize {
        self.layer().map_or(0, |l| l.owner().eps.lock().len())
    }

    /// `rkdapl_srq_free`: destroys the SRQ; each RECV still in it is reported
    /// `RKDAPL_DTO_FLUSHED` on the EVD given at creation before this returns. Process context;
    /// sleeps.
    ///
    /// # Errors
    ///
    /// `-EBUSY` while EPs created on it are not freed.
    pub(crate) fn free(&self) -> Result {
        if self.ep_count() != 0 {
            return Err(EBUSY);
        }
        self.revoke();
        self.ia.children.remove(self);
        Ok(())
    }

    /// Device removal (after the EPs' QPs are gone) and consumer unload: destroys the SRQ,
    /// reporting the RECVs still in it as flushed. Process context; sleeps.
    pub(crate) fn revoke(&self) {
        let l = self.q.lock().take();
        // The last reference, once every QP on the SRQ is destroyed: `ib_destroy_srq`, then
        // the unconsumed RECVs are reported.
        drop(l);
    }
}

impl Child for Srq {
    fn rank(&self) -> Rank {
        Rank::Srq
    }

    fn revoke(&self) {
        Srq::revoke(self)
    }

    fn release(&self) {
        // Consumer unload: the EPs were released first.
        self.revoke();
        self.ia.children.remove(self);
    }

    fn parent(&self) -> Option<Arc<dyn Child>> {
        Some(self.pz.clone())
    }
}
