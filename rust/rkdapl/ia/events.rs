// SPDX-License-Identifier: GPL-2.0

//! The asynchronous events of an IA's device and its ports, from ib_core's event handler
//! ([`crate::rdma::event`]) to the IA's async EVD (`rkdapl_ia_set_async_evd`).
//!
//! Each IA registers one handler on its device from [`Ia::listen_events`] (at open) until the
//! device goes away or the IA is dropped. ib_core calls it in process context, on its `ib_wq`
//! workqueue (or in the task that changed a GID table), so the event is posted to the async
//! EVD there, as any other event: queued, or handed to the EVD's upcall in process context.

use super::Ia;
use crate::evd::{AsyncEvent, AsyncSlot, Event, EventType};
use crate::rdma::{
    bound::Bound,
    device::Device,
    event::{Event as IbEvent, EventHandler, EventKind, Registration},
};
use kernel::{prelude::*, sync::Arc};

/// The handler an IA registers on its device: posts to the IA's async slot.
pub(crate) struct IaEvents {
    slot: Arc<AsyncSlot>,
}

/// The registration an IA holds while its device is there.
pub(crate) type IaEventsReg = Pin<KBox<Registration<IaEvents>>>;

/// The async event rkdapl reports for the device event `kind` and its status, or `None` for
/// events it does not report (those of QPs, CQs and SRQs come through their own handlers; link
/// speed changes are not reported). Pure: KUnit-tested (`rkdapl_ia`).
pub(crate) fn async_event_of(kind: EventKind) -> Option<(EventType, i32)> {
    Some(match kind {
        EventKind::PortActive => (EventType::AsyncPortActive, 0),
        EventKind::PortErr => (EventType::AsyncPortError, 0),
        EventKind::GidChange => (EventType::AsyncGidChange, 0),
        EventKind::LidChange => (EventType::AsyncLidChange, 0),
        EventKind::ClientReregister => (EventType::AsyncClientReregister, 0),
        EventKind::PkeyChange => (EventType::AsyncPkeyChange, 0),
        EventKind::SmChange => (EventType::AsyncSmChange, 0),
        // DAT's DAT_ASYNC_ERROR_IA_CATASTROPHIC, as for a removed device (-ENODEV), but the
        // device is still registered: -EIO says it failed. Its driver usually unregisters it
        // next, and the removal follows with its own report.
        EventKind::DeviceFatal => (EventType::AsyncIaCatastrophic, EIO.to_errno()),
        _ => return None,
    })
}

impl EventHandler for IaEvents {
    fn event(&self, _dev: &Device, ev: &IbEvent) {
        let Some((kind, status)) = async_event_of(ev.kind()) else {
            return;
        };
        self.slot.post(Event::Async(AsyncEvent {
            kind,
            status,
            ep: 0,
            evd: 0,
            cookie: 0,
            port: ev.port(),
        }));
    }
}

impl Ia {
    /// Registers the IA's handler of `dev`'s asynchronous events (at open). Process context;
    /// may sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn listen_events(&self, dev: &Bound<'_>) -> Result {
        let reg = KBox::pin_init(
            Registration::new(
                dev,
                IaEvents {
                    slot: self.async_slot.clone(),
                },
            ),
            GFP_KERNEL,
        )?;
        let old = self.events.lock().replace(reg);
        drop(old);
        Ok(())
    }

    /// Unregisters the handler (device removal, consumer unload): no event of the device is
    /// reported after this returns. Process context; sleeps (waits for a running handler).
    pub(crate) fn stop_events(&self) {
        let reg = self.events.lock().take();
        drop(reg);
    }
}

#[kunit_tests(rkdapl_ia_events)]
mod tests {
    use super::*;

    #[test]
    fn port_events_map_to_dat_async_events() {
        let map = |k| async_event_of(k).map(|(t, s)| (t as u32, s));
        assert_eq!(map(EventKind::PortActive), Some((20, 0)));
        assert_eq!(map(EventKind::PortErr), Some((21, 0)));
        assert_eq!(map(EventKind::GidChange), Some((22, 0)));
        assert_eq!(map(EventKind::LidChange), Some((23, 0)));
        assert_eq!(map(EventKind::ClientReregister), Some((24, 0)));
        assert_eq!(map(EventKind::PkeyChange), Some((25, 0)));
        assert_eq!(map(EventKind::SmChange), Some((26, 0)));
        assert_eq!(map(EventKind::DeviceFatal), Some((12, EIO.to_errno())));
        // Object events come through the objects' handlers; speed changes are not reported.
        assert_eq!(map(EventKind::QpFatal), None);
        assert_eq!(map(EventKind::CqErr), None);
        assert_eq!(map(EventKind::DeviceSpeedChange), None);
        assert_eq!(map(EventKind::Other(99)), None);
    }

    #[test]
    fn only_port_events_carry_a_port() {
        assert!(EventKind::PortErr.is_port_event());
        assert!(EventKind::GidChange.is_port_event());
        assert!(!EventKind::DeviceFatal.is_port_event());
        assert!(!EventKind::QpFatal.is_port_event());
        assert_eq!(IbEvent::new(EventKind::PortActive, 1).port(), 1);
    }
}
