// SPDX-License-Identifier: GPL-2.0

//! EP reuse (`rkdapl_ep_reset`, DAT 2.0 `dat_ep_reset`): a DISCONNECTED EP becomes UNCONNECTED
//! again and can connect, or accept a CR, once more.
//!
//! An rdma_cm id cannot connect twice, so the reset releases the old connection in ib_core's
//! order (the QP drained, the CM id destroyed, then the QP) and the next connect or accept
//! makes a fresh CM id and QP, with the EP's attributes, its CQs (which outlive the old QP) and
//! its DTO contexts (detached from the old QP once it is drained). The EVDs, the EP's number,
//! its C handle and its counters stay.

use super::{Ep, EpState};
use kernel::prelude::*;

impl Ep {
    /// `rkdapl_ep_reset`: DISCONNECTED -> UNCONNECTED. Every DTO of the old connection has
    /// reported its completion before (or, for suppressed ones, while) this runs. Process
    /// context; sleeps (drains the old QP); not from an upcall.
    ///
    /// # Errors
    ///
    /// - `-EINVAL` unless the EP is DISCONNECTED (UNCONNECTED, connecting, CONNECTED and
    ///   DISCONNECT_PENDING are refused; the EP is unchanged);
    /// - `-EBUSY` while DTOs posted on the EP have not all reported their completion (flushed
    ///   ones included, see [`crate::dto::DtoRing::in_flight`]): take their events, then reset;
    /// - `-ENODEV` once the device was removed (a BROKEN EP of a removed device can only be
    ///   freed).
    pub(crate) fn reset(&self) -> Result {
        // A device removal waits for the reset; after it, nothing is left to reuse.
        let _live = self.ia.live()?;
        if self.cqs.lock().is_none() {
            return Err(ENODEV);
        }
        if self.state() != EpState::Disconnected {
            return Err(EINVAL);
        }
        // No DTO can be posted in DISCONNECTED (the rings have no QP), so this only falls.
        if self.sq.in_flight() != 0 || self.rq.in_flight() != 0 {
            return Err(EBUSY);
        }
        // Drains the QP (suppressed DTOs that were flushed report now, the others are
        // finished), destroys the CM id, then the QP; the CQs and context pools stay.
        self.end_connection();
        {
            let mut c = self.conn_mut();
            if c.state != EpState::Disconnected || c.id.is_some() {
                return Err(EINVAL);
            }
            c.state = EpState::Unconnected;
            c.was_connected = false;
            c.rd = None;
            c.max_inline = 0;
        }
        let pending = self.pending.lock().take();
        drop(pending);
        Ok(())
    }
}
