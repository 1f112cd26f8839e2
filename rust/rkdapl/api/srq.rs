// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues, and EPs created on one.

use super::{Ep, EpAttr, Evd, Pz, Segment};
use crate::{ep, srq};
use kernel::{prelude::*, sync::Arc};

/// What [`Srq::query`] tells (`struct rkdapl_srq_attr`, DAT's `DAT_SRQ_PARAM`): the provider's
/// own SRQ attributes.
pub use crate::srq::SrqAttr as SrqParam;

/// A shared receive queue (`rkdapl_srq_create`, DAT's `dat_srq_create`): RECVs that every EP
/// made with [`Srq::ep`] consumes, each completion reported on the DTO EVD of the EP that
/// consumed it. Freed when dropped (`rkdapl_srq_free`): each RECV still in it is reported
/// flushed on the EVD given at creation. Its EPs keep it until they are dropped.
pub struct Srq(Arc<srq::Srq>);

impl Srq {
    /// An SRQ in `pz` of `max_recv_dtos` RECVs (1..=4096) of `max_recv_iov` segments each (0:
    /// 4), with the low watermark `low_watermark` armed (0: none); RECVs still in it when it
    /// goes are reported on `evd`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for an EVD of another IA or sizes out of range, `EOPNOTSUPP` if the device has
    /// no SRQs, `ENODEV` after device removal, `ENOMEM`.
    #[inline(never)]
    pub fn new(
        pz: &Pz,
        evd: &Evd,
        max_recv_dtos: u32,
        max_recv_iov: u32,
        low_watermark: u32,
    ) -> Result<Srq> {
        let (pz, evd) = (&pz.0, &evd.evd);
        let attr = srq::SrqAttr {
            max_recv_dtos,
            max_recv_iov,
            low_watermark,
            ..Default::default()
        };
        pz.ia
            .with_device(|dev| srq::Srq::new(pz.clone(), dev, evd.clone(), attr))
            .map(Srq)
    }

    /// The SRQ's number: the cookie of its asynchronous events
    /// ([`super::EventType::AsyncSrqLimitReached`], [`super::EventType::AsyncSrqError`]).
    /// Any context.
    #[inline(never)]
    pub fn id(&self) -> u32 {
        self.0.id
    }

    /// Posts a RECV into `segs` (LMRs of the SRQ's PZ with [`super::MemPriv::LocalWrite`]), reported with
    /// `cookie` on the DTO EVD of the EP that consumes it (`rkdapl_srq_post_recv`).
    ///
    /// Any context (does not sleep).
    ///
    /// # Errors
    ///
    /// `EINVAL` for more than [`super::MAX_IOV`] segments, `EXDEV`, `ERANGE`, `EACCES`,
    /// `EMSGSIZE`, `ENOSPC` when the SRQ is full, `ENODEV` after device removal, `ENOMEM`.
    #[inline(never)]
    pub fn post_recv(&self, segs: &[Segment<'_>], cookie: u64) -> Result {
        self.0.check_segments(segs)?;
        self.0.post_recv(segs, cookie)
    }

    /// Arms the low watermark (`rkdapl_srq_set_lw`): one
    /// [`super::EventType::AsyncSrqLimitReached`] on the IA's async EVD once fewer RECVs are
    /// left; call again to re-arm.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a watermark not below the size, `ENODEV` after device removal.
    #[inline(never)]
    pub fn set_lw(&self, low_watermark: u32) -> Result {
        self.0.set_lw(low_watermark)
    }

    /// The SRQ's size, watermark, RECVs outstanding and the device's limits
    /// (`rkdapl_srq_query`).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` after device removal.
    #[inline(never)]
    pub fn query(&self) -> Result<SrqParam> {
        self.0.query()
    }

    /// An unconnected EP in `pz` (the SRQ's) taking its RECVs from this SRQ
    /// (`rkdapl_ep_create_with_srq`); otherwise as [`Ep::with_attr`]. Its own
    /// [`Ep::post_recv`] is refused with `EINVAL`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a PZ other than the SRQ's, as [`Ep::with_attr`] otherwise.
    #[inline(never)]
    pub fn ep(&self, pz: &Pz, dto_evd: &Evd, conn_evd: &Evd, attr: &EpAttr) -> Result<Ep> {
        let (pz, dto, conn) = (&pz.0, &dto_evd.evd, &conn_evd.evd);
        pz.ia
            .with_device(|dev| {
                ep::Ep::new_with_srq(
                    pz.clone(),
                    dev,
                    dto.clone(),
                    conn.clone(),
                    self.0.clone(),
                    *attr,
                )
            })
            .map(Ep)
    }
}

impl Drop for Srq {
    /// `rkdapl_srq_free`; with EPs still on it (they hold the SRQ), it is freed with the last
    /// of them. Process context.
    #[inline(never)]
    fn drop(&mut self) {
        super::free_outside_upcall(&self.0, srq::Srq::free_when_unused);
    }
}
