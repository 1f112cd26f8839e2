// SPDX-License-Identifier: GPL-2.0

//! Remote memory regions: grants of part of an LMR to the peer.

use super::{Ep, Lmr, MemPrivs, Pz, RemoteRegion};
use crate::{dto::Completion, rmr};
use kernel::{prelude::*, sync::Arc};

/// A remote memory region: a grant of part of an LMR to the peer (`rkdapl_rmr_create`, DAT's
/// `dat_rmr_create`). Freed when dropped (`rkdapl_rmr_free`): binding it is refused from then
/// on, and the grant ends when its MR goes.
pub struct Rmr(Arc<rmr::Rmr>);

impl Rmr {
    /// An unbound RMR in `pz`.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENODEV` after device removal, `ENOMEM`, or the driver's error.
    #[inline(never)]
    pub fn new(pz: &Pz) -> Result<Rmr> {
        let pz = &pz.0;
        pz.ia.with_device(|_| rmr::Rmr::new(pz.clone())).map(Rmr)
    }

    /// Grants `privileges` (remote read, write, atomics: [`super::MemPriv`]) on
    /// `[off, off + len)` of `lmr` through `ep` (`rkdapl_rmr_bind`): an FRWR registration with
    /// a fresh key is posted on `ep`, valid once the [`super::EventType::RmrBindCompletion`]
    /// with `cookie` arrives on its DTO EVD (or for any DTO posted on `ep` after this call).
    ///
    /// Any context: nothing sleeps (per I/O, under a spinlock or in a block request's
    /// `queue_rq` without `BLK_MQ_F_BLOCKING`).
    ///
    /// # Errors
    ///
    /// `EINVAL` for a zero length, no privilege or [`super::MemPriv::LocalWrite`], `ERANGE` if
    /// the range leaves the LMR, `EACCES` if the LMR lacks a privilege, `EXDEV` for objects of
    /// different PZs, `EBUSY` if already bound, `E2BIG` if the range needs too many pages,
    /// `ENODEV` after device removal, `ENOMEM`, `ENOTCONN` if `ep` has no connection, `ENOSPC`
    /// if its send queue is full.
    #[inline(never)]
    pub fn bind(
        &self,
        lmr: &Lmr,
        off: u64,
        len: u64,
        privileges: impl Into<MemPrivs>,
        ep: &Ep,
        cookie: u64,
    ) -> Result<RemoteRegion> {
        self.bind_reported(
            lmr,
            off,
            len,
            privileges.into(),
            ep,
            Completion::reported(cookie),
        )
    }

    /// [`Rmr::bind`] with DAT's `DAT_COMPLETION_SUPPRESS_FLAG`: a bind that succeeds reports
    /// no event; one that fails reports its [`super::EventType::RmrBindCompletion`] with
    /// `cookie` and the error, as ever. For a grant made per I/O and sent to the peer in a
    /// SEND posted right after it on the same `ep`, which the grant is valid for: the SEND's
    /// completion is the only event the consumer needs (as nvme-rdma waits for no REG_MR
    /// completion; the REG_MR stays signalled here, so its completion still lets go of the MR).
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// As [`Rmr::bind`].
    #[inline(never)]
    pub fn bind_suppressed(
        &self,
        lmr: &Lmr,
        off: u64,
        len: u64,
        privileges: impl Into<MemPrivs>,
        ep: &Ep,
        cookie: u64,
    ) -> Result<RemoteRegion> {
        let done = Completion {
            cookie,
            suppress: true,
        };
        self.bind_reported(lmr, off, len, privileges.into(), ep, done)
    }

    fn bind_reported(
        &self,
        lmr: &Lmr,
        off: u64,
        len: u64,
        privileges: MemPrivs,
        ep: &Ep,
        done: Completion,
    ) -> Result<RemoteRegion> {
        let (rkey, address) = self
            .0
            .bind(&ep.0, lmr.0.lmr(), off, len, privileges, done)?;
        Ok(RemoteRegion {
            address,
            rkey,
            length: len,
        })
    }

    /// Revokes the grant with a LOCAL_INV posted on `ep` (`rkdapl_rmr_unbind`); an
    /// [`super::EventType::RmrBindCompletion`] of op [`super::DtoOp::RmrUnbind`] with `cookie`
    /// follows.
    ///
    /// Any context.
    ///
    /// # Errors
    ///
    /// `EINVAL` if not bound, `ENOTCONN` if `ep` has no connection, `ENOSPC` if its send queue
    /// is full.
    #[inline(never)]
    pub fn unbind(&self, ep: &Ep, cookie: u64) -> Result {
        self.0.unbind(&ep.0, cookie)
    }
}

impl Drop for Rmr {
    /// `rkdapl_rmr_free`. Process context.
    #[inline(never)]
    fn drop(&mut self) {
        self.0.free();
    }
}
