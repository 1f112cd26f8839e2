// SPDX-License-Identifier: GPL-2.0

//! The event dispatcher, its upcalls as closures, and the connection requests its events
//! carry.

use super::{Cr, Event, Ia, UpcallPolicy};
use crate::{
    evd::{self, Event as RawEvent, UpcallFn},
    psp::{self, CrPublisher},
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{Arc, SpinLockIrq},
};

/// An event dispatcher: a bounded queue of events (`rkdapl_evd_create`, DAT's
/// `dat_evd_create`), or with an upcall set, a closure that receives them. Freed when dropped
/// (`rkdapl_evd_free`): its upcall is cleared first; EPs still using it keep it, as a queue.
pub struct Evd {
    pub(super) evd: Arc<evd::Evd>,
    /// The connection requests of PSPs whose events go here, until their events are taken.
    pub(super) crs: Arc<CrTable>,
}

impl Evd {
    /// An EVD of `qlen` entries (1..=65536) on `ia`. A full EVD counts the events it loses
    /// and reports them with an [`EventType::AsyncEvdOverflow`] event before anything else.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for a length out of range, `ENOMEM`.
    #[inline(never)]
    pub fn new(ia: &Ia, qlen: u32) -> Result<Evd> {
        let ia = &ia.0;
        Ok(Evd {
            evd: evd::Evd::new(qlen, ia.async_slot.clone(), &ia.children)?,
            crs: CrTable::new()?,
        })
    }

    /// Waits up to `timeout_ms` ms ([`super::TIMEOUT_INFINITE`]: without a limit) for the next
    /// event (`rkdapl_evd_wait`).
    ///
    /// Process context; sleeps interruptibly.
    ///
    /// # Errors
    ///
    /// `ETIMEDOUT` if none came in time (never without a limit), `EINTR` on a signal,
    /// `EDEADLK` inside an upcall (of any EVD: the wait would hold up the context that
    /// delivers events).
    #[inline(never)]
    pub fn wait(&self, timeout_ms: u32) -> Result<Event> {
        crate::evd::refuse_in_upcall()?;
        Ok(self.event(self.evd.wait(timeout_ms)?))
    }

    /// Takes the next event without waiting (`rkdapl_evd_dequeue`).
    ///
    /// Any context (a connection request's event owns its [`Cr`], whose drop needs process
    /// context).
    ///
    /// # Errors
    ///
    /// `EAGAIN` if the queue is empty.
    #[inline(never)]
    pub fn dequeue(&self) -> Result<Event> {
        Ok(self.event(self.evd.dequeue()?))
    }

    /// The event `raw` of this EVD, owning its connection request if it has one.
    fn event(&self, raw: RawEvent) -> Event {
        self.crs.event(raw)
    }

    /// Hands each new event to `f` instead of queueing it (`rkdapl_evd_modify_upcall`), one
    /// call at a time or several at once as `policy` says (`Disable`: clears the upcall, as
    /// [`Evd::clear_upcall`]). Events queued before stay queued.
    ///
    /// `f` runs in process context (the CQs' completion work, rdma_cm's handlers), and as for C
    /// upcalls (`rkdapl_upcall_fn`) it must not sleep: it may post DTOs and dequeue, and hands
    /// the rest to a work item. The one exception is a [`EventType::ConnectionRequest`] event,
    /// which owns its [`Cr`] here as it does from [`Evd::wait`]: `f` may answer it at once
    /// ([`Event::take_cr`], then [`Cr::accept`] or [`Cr::reject`], which may sleep: rdma_cm's
    /// handler of the request runs `f` and lets it, as it lets `rdma_accept()` run there), or
    /// take it to answer later from process context; a CR left in the event is rejected when
    /// `f` returns. Replacing or clearing the upcall waits for calls in progress, and the
    /// replaced closure is dropped by that call.
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENOMEM`; `EDEADLK` inside an upcall (of any EVD).
    pub fn set_upcall<F: Fn(&mut Event) + Send + Sync + 'static>(
        &self,
        policy: UpcallPolicy,
        f: F,
    ) -> Result {
        let crs = self.crs.clone();
        let f: Arc<dyn UpcallFn> = Arc::new(Closure { f, crs }, GFP_KERNEL)?;
        self.modify_upcall(policy, Some(f))
    }

    /// The part of [`Evd::set_upcall`] that is not generic: compiled into rkdapl (a consumer
    /// compiles the generic part).
    #[inline(never)]
    fn modify_upcall(&self, policy: UpcallPolicy, f: Option<Arc<dyn UpcallFn>>) -> Result {
        crate::evd::refuse_in_upcall()?;
        self.evd.modify_upcall(policy, f)
    }

    /// Queues events again; waits for upcalls in progress (`rkdapl_evd_modify_upcall` with
    /// `RKDAPL_UPCALL_DISABLE`).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EDEADLK` inside an upcall (of any EVD: it would wait for the upcall's own return).
    #[inline(never)]
    pub fn clear_upcall(&self) -> Result {
        self.modify_upcall(UpcallPolicy::Disable, None)
    }
}

impl Drop for Evd {
    /// `rkdapl_evd_free`. Process context; waits for upcalls in progress (inside an upcall, on
    /// the RDMA layer's deferral workqueue once the upcall returned).
    #[inline(never)]
    fn drop(&mut self) {
        super::free_outside_upcall(&self.evd, evd::Evd::free);
    }
}

/// A closure as an EVD's upcall, and the EVD's connection requests, which its events own.
struct Closure<F> {
    f: F,
    crs: Arc<CrTable>,
}

impl<F: Fn(&mut Event) + Send + Sync> UpcallFn for Closure<F> {
    fn call(&self, ev: &RawEvent, more: bool) {
        let mut ev = self.crs.event(*ev);
        if let Event::Dto(d) = &mut ev {
            d.more = more;
        }
        (self.f)(&mut ev);
        // A CR the closure left in the event is rejected as the event goes (see
        // `Evd::set_upcall`).
        drop(ev);
    }
}

/// Tokens handed out so far, and the connection requests not yet taken.
struct CrSlots {
    last: usize,
    crs: KVec<(usize, Arc<psp::Cr>)>,
}

/// The connection requests of the PSPs that report to one [`Evd`]: a PSP publishes each here
/// before its event goes to the EVD, whose [`Evd::wait`] or [`Evd::dequeue`] takes it back
/// into the event.
#[pin_data]
pub(super) struct CrTable {
    #[pin]
    slots: SpinLockIrq<CrSlots>,
}

impl CrTable {
    fn new() -> Result<Arc<CrTable>> {
        Arc::pin_init(
            pin_init!(CrTable {
                slots <- new_spinlock_irq!(CrSlots { last: 0, crs: KVec::new() }, "rkdapl_api_crs"),
            }),
            GFP_KERNEL,
        )
    }

    /// The event `raw`, owning its connection request if it has one (taken from the table).
    /// Any context.
    #[inline(never)]
    fn event(&self, raw: RawEvent) -> Event {
        raw.map_cr(|token| {
            if token == 0 {
                return None;
            }
            self.take(token).map(|cr| Cr::new(cr, token))
        })
    }

    /// Takes the CR published as `token`, unless it was retracted. Any context.
    fn take(&self, token: usize) -> Option<Arc<psp::Cr>> {
        let mut s = self.slots.lock();
        let i = s.crs.iter().position(|(t, _)| *t == token)?;
        s.crs.remove(i).ok().map(|(_, cr)| cr)
    }
}

impl CrPublisher for CrTable {
    fn publish(&self, cr: Arc<psp::Cr>) -> Result<usize> {
        let mut s = self.slots.lock();
        // Never 0 (no CR), and never one still in use after a wrap.
        let mut token = s.last;
        loop {
            token = token.wrapping_add(1);
            if token != 0 && !s.crs.iter().any(|(t, _)| *t == token) {
                break;
            }
        }
        s.crs.push((token, cr), GFP_ATOMIC)?;
        s.last = token;
        Ok(token)
    }

    fn retract(&self, token: usize) -> Option<Arc<psp::Cr>> {
        self.take(token)
    }
}
