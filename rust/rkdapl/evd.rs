// SPDX-License-Identifier: GPL-2.0

//! EVD: event dispatcher (DAT 2.0 section 5.3), a bounded queue of events a consumer
//! dequeues or waits on.
//!
//! Completions of DTOs, connection events and connection requests are queued here by ib_core's
//! completion work and rdma_cm's event work. A full queue never drops an event silently: the
//! number lost is reported by an `RKDAPL_ASYNC_EVD_OVERFLOW` event, which the next dequeue
//! returns before anything else.
//!
//! Upcall mode (DAT 2.0 `dat_evd_modify_upcall`): with an upcall set, each new event is handed
//! to the consumer's function instead of being queued. Events are posted only from process
//! context (the CQs' completion work, rdma_cm's event handlers, device removal), with no
//! rkdapl lock held that anything an upcall may call takes (an EP's teardown delivers its
//! flushed completions holding that EP's `ending` mutex), so the upcall runs there too. `SINGLE_INSTANCE` serialises the calls
//! with a mutex; `MANY` lets calls for different sources (EPs, PSPs) run at once. Disabling
//! waits for calls in progress, so that the consumer may free the upcall's context after.

use crate::registry::{Child, Children, Rank};

mod event;
pub(crate) mod in_upcall;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
pub use event::{AsyncEvent, DtoEvent, Event, EventType, PrivateData, MAX_PRIVATE_DATA};
pub(crate) use in_upcall::refuse_in_upcall;
use kernel::{
    new_condvar, new_mutex, new_spinlock_irq, pr_warn_once,
    prelude::*,
    sync::{Arc, CondVar, CondVarTimeoutResult, Mutex, SpinLockIrq},
    time::{delay::fsleep, msecs_to_jiffies, Delta},
};

/// The consumer's upcall: the C ABI wraps the C function and its context (`abi::evd`).
pub(crate) trait UpcallFn: Send + Sync {
    /// Hands `ev` to the consumer; `more`: another event follows right away (see
    /// [`Evd::post_with`]). Process context; in parallel for `Many`.
    fn call(&self, ev: &Event, more: bool);
}

/// How an EVD delivers its events (`enum rkdapl_upcall_policy`, DAT's `DAT_UPCALL_POLICY`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpcallPolicy {
    /// Queue events for dequeue and wait (no upcall).
    Disable = 0,
    /// Call the upcall for each event, one call at a time.
    SingleInstance = 1,
    /// Call the upcall for each event; calls for different EPs or PSPs may run at the same
    /// time on different CPUs (events of one EP's send queue, receive queue or connection
    /// still come one at a time, in order).
    Many = 2,
}

impl UpcallPolicy {
    /// The policy of the C value `v` (`enum rkdapl_upcall_policy`).
    pub(crate) fn from_raw(v: u32) -> Option<UpcallPolicy> {
        [Self::Disable, Self::SingleInstance, Self::Many]
            .into_iter()
            .find(|p| *p as u32 == v)
    }
}

/// An enabled upcall.
#[derive(Clone)]
struct Upcall {
    f: Arc<dyn UpcallFn>,
    single: bool,
}

/// The upcall now, and its generation: each change starts a new one, and calls count in
/// `running[gen % 2]`, so a change waits only for the calls of the upcall it replaced.
struct UpcallState {
    up: Option<Upcall>,
    gen: usize,
}

/// A wait without a time limit (`RKDAPL_TIMEOUT_INFINITE`, DAT's `DAT_TIMEOUT_INFINITE`).
pub const TIMEOUT_INFINITE: u32 = u32::MAX;

struct Queue {
    ring: KVVec<Event>,
    head: usize,
    len: usize,
    lost: u64,
    /// Events lost to a full queue over the EVD's life.
    lost_total: u64,
    /// Tasks sleeping in [`Evd::wait`]: a post wakes the condition variable only if there is
    /// one, so a consumer that polls with `dequeue` (or is busy) costs no `__wake_up`.
    waiters: u32,
}

/// `i` reduced into a ring of `cap` entries, for `i < 2 * cap` (a head plus at most `cap`).
/// No division, and no panic path on the completion path.
fn wrap(i: usize, cap: usize) -> usize {
    if i >= cap {
        i - cap
    } else {
        i
    }
}

/// Where an IA's asynchronous events go (`rkdapl_ia_set_async_evd`): shared by the IA and its
/// EVDs, which report their overflows there.
///
/// # Invariants
///
/// `evd`, if set, is an EVD of the same IA; the reference cycle it makes (that EVD holds this
/// slot) is broken when the EVD is closed ([`Evd::close`]) or the slot reset.
#[pin_data]
pub(crate) struct AsyncSlot {
    #[pin]
    evd: SpinLockIrq<Option<Arc<Evd>>>,
}

impl AsyncSlot {
    pub(crate) fn new() -> Result<Arc<AsyncSlot>> {
        Arc::pin_init(
            pin_init!(AsyncSlot { evd <- new_spinlock_irq!(None, "rkdapl_ia_async_evd") }),
            GFP_KERNEL,
        )
    }

    /// Sets (or clears) the async EVD; returns the old one for the caller to drop. Any
    /// context.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for an EVD already closed (its handle freed meanwhile): it could never be
    /// taken out of the slot again.
    pub(crate) fn set(&self, evd: Option<Arc<Evd>>) -> Result<Option<Arc<Evd>>> {
        let mut g = self.evd.lock();
        // `Evd::close` sets `closed` before it looks at the slot under this lock.
        if evd
            .as_ref()
            .is_some_and(|e| e.closed.load(Ordering::Acquire))
        {
            return Err(EINVAL);
        }
        Ok(core::mem::replace(&mut *g, evd))
    }

    /// Posts `ev` on the async EVD, if one is set. Process context, no rkdapl lock held.
    pub(crate) fn post(&self, ev: Event) {
        let evd = self.evd.lock().clone();
        if let Some(evd) = evd {
            evd.post(ev);
        }
    }
}

/// An event dispatcher. Registered with its IA from [`Evd::new`] to [`Evd::free`]; EPs using
/// it keep it after that, as a queue. It holds no device resource: dropping it frees the ring
/// and lets go of the upcall, the IA's async slot and registry.
///
/// # Invariants
///
/// `q.ring` has a fixed length (the EVD's size in entries); `head < ring.len()`, `len <=
/// ring.len()`.
#[pin_data]
pub(crate) struct Evd {
    /// The registry of the EVD's IA, which it leaves when freed.
    children: Arc<Children>,
    #[pin]
    q: SpinLockIrq<Queue>,
    #[pin]
    cv: CondVar,
    /// The upcall, if enabled; read and `running` raised under this lock.
    #[pin]
    upcall: SpinLockIrq<UpcallState>,
    /// Whether `upcall` holds one: set and cleared under its lock, read without it by
    /// [`Evd::post_with`], which takes the lock only when it is set (see there).
    upcall_set: AtomicBool,
    /// Upcalls in progress, per generation parity.
    running: [AtomicU32; 2],
    /// Serialises changes of the upcall.
    #[pin]
    modify: Mutex<()>,
    /// Set by [`Evd::close`]: no upcall and no async-EVD role from then on.
    closed: AtomicBool,
    /// Serialises `SINGLE_INSTANCE` upcalls.
    #[pin]
    single: Mutex<()>,
    /// The async-event slot of the EVD's IA: overflows are reported there too.
    ia_slot: Arc<AsyncSlot>,
    /// The C handle, reported in overflow events.
    handle: AtomicUsize,
}

/// Largest EVD, in entries.
pub(crate) const MAX_EVD_QLEN: u32 = 1 << 16;

impl Evd {
    /// An EVD holding `qlen` events (1..=65536) for the IA whose async slot is `ia_slot` and
    /// registry `children`, registered there. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a `qlen` out of range, `-ENOMEM`.
    pub(crate) fn new(
        qlen: u32,
        ia_slot: Arc<AsyncSlot>,
        children: &Arc<Children>,
    ) -> Result<Arc<Evd>> {
        if qlen == 0 || qlen > MAX_EVD_QLEN {
            return Err(EINVAL);
        }
        let mut ring = KVVec::with_capacity(qlen as usize, GFP_KERNEL)?;
        for _ in 0..qlen {
            ring.push(Event::Overflow { evd: 0, lost: 0 }, GFP_KERNEL)?;
        }
        let evd = Arc::pin_init(
            pin_init!(Evd {
                children: children.clone(),
                q <- new_spinlock_irq!(Queue { ring, head: 0, len: 0, lost: 0, lost_total: 0, waiters: 0 }, "rkdapl_evd"),
                cv <- new_condvar!("rkdapl_evd_wait"),
                upcall <- new_spinlock_irq!(UpcallState { up: None, gen: 0 }, "rkdapl_evd_upcall"),
                upcall_set: AtomicBool::new(false),
                running: [AtomicU32::new(0), AtomicU32::new(0)],
                modify <- new_mutex!((), "rkdapl_evd_upcall_modify"),
                closed: AtomicBool::new(false),
                single <- new_mutex!((), "rkdapl_evd_upcall_single"),
                ia_slot,
                handle: AtomicUsize::new(0),
            }),
            GFP_KERNEL,
        )?;
        children.add(evd.clone(), None)?;
        Ok(evd)
    }

    /// `rkdapl_evd_free`: the consumer lets go of the EVD ([`Evd::close`]), and it leaves its
    /// IA's registry. Never refused. Process context; sleeps.
    pub(crate) fn free(&self) {
        self.close();
        self.children.remove(self);
    }

    /// Sets (or with `Disable`, clears) the upcall. Clearing waits until calls in progress
    /// have returned. Process context; may sleep; not from the upcall itself.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for a policy other than `Disable` without a function.
    pub(crate) fn modify_upcall(
        &self,
        policy: UpcallPolicy,
        f: Option<Arc<dyn UpcallFn>>,
    ) -> Result {
        let up = match (policy, f) {
            (UpcallPolicy::Disable, _) => None,
            (_, None) => return Err(EINVAL),
            (p, Some(f)) => Some(Upcall {
                f,
                single: p == UpcallPolicy::SingleInstance,
            }),
        };
        let _serial = self.modify.lock();
        let (old, replaced) = {
            let mut st = self.upcall.lock();
            // A call that found the handle before `rkdapl_evd_free` must not enable an upcall
            // after it (the consumer may free the context or unload).
            if up.is_some() && self.closed.load(Ordering::Acquire) {
                return Err(EINVAL);
            }
            let old = st.gen;
            // A poster that sees it set takes this lock and reads `up` under it; Release: one
            // ordered after this call sees it set (see `post_with`).
            self.upcall_set.store(up.is_some(), Ordering::Release);
            let replaced = core::mem::replace(&mut st.up, up);
            st.gen = old.wrapping_add(1);
            (old, replaced)
        };
        // Calls of the old upcall raised their counter under the lock: wait for them (calls of
        // the new one count in the other counter, so steady traffic cannot hold this up).
        while self.running[old & 1].load(Ordering::Acquire) != 0 {
            fsleep(Delta::from_millis(1));
        }
        // The replaced upcall goes last, outside the `modify` lock: a Rust closure may own
        // rkdapl objects whose drop comes back here.
        drop(_serial);
        drop(replaced);
        Ok(())
    }

    /// The consumer lets go of the EVD (`rkdapl_evd_free`, consumer unload): no upcalls from
    /// now on (waits for calls in progress), and it is no longer its IA's async EVD. EPs
    /// still using it keep it, as a queue. Process context; sleeps.
    pub(crate) fn close(&self) {
        // Under the upcall lock, so that `modify_upcall` sees it before enabling anything.
        {
            let _g = self.upcall.lock();
            self.closed.store(true, Ordering::Release);
        }
        let _ = self.modify_upcall(UpcallPolicy::Disable, None);
        let mut g = self.ia_slot.evd.lock();
        if g.as_ref().is_some_and(|e| core::ptr::eq(&**e, self)) {
            let old = g.take();
            drop(g);
            drop(old);
        }
    }

    /// Records the C handle, reported in overflow events.
    pub(crate) fn set_handle(&self, h: usize) {
        self.handle.store(h, Ordering::Relaxed);
    }

    /// The C handle (0 for an EVD of the Rust API), as events naming the EVD report it.
    pub(crate) fn handle(&self) -> usize {
        self.handle.load(Ordering::Relaxed)
    }

    /// Whether the EVD belongs to the IA whose async slot is `slot`.
    pub(crate) fn same_ia(&self, slot: &Arc<AsyncSlot>) -> bool {
        Arc::ptr_eq(&self.ia_slot, slot)
    }

    /// Hands `ev` to the upcall if one is set (`true`). Process context.
    fn try_upcall(&self, ev: &Event, more: bool) -> bool {
        let (up, idx) = {
            let g = self.upcall.lock();
            let Some(up) = g.up.clone() else {
                return false;
            };
            let idx = g.gen & 1;
            self.running[idx].fetch_add(1, Ordering::AcqRel);
            (up, idx)
        };
        let serial = up.single.then(|| self.single.lock());
        // Disabling the upcall waits for this call (`running`). The calls the upcall must not
        // make are refused meanwhile (`in_upcall`).
        let mark = in_upcall::Mark::enter();
        up.f.call(ev, more);
        drop(mark);
        drop(serial);
        // Our reference goes before the call counts as done: the one that replaced or cleared
        // the upcall then holds the last one, and drops it in process context once every call
        // returned (not here, in a CQ's work or a CM handler, after it returned).
        drop(up);
        self.running[idx].fetch_sub(1, Ordering::AcqRel);
        true
    }

    /// Queues `ev`, or hands it to the upcall; process context (see the module
    /// documentation), with no rkdapl lock held. A full queue counts the loss (reported as an
    /// overflow event).
    pub(crate) fn post(&self, ev: Event) {
        self.post_with(false, || ev)
    }

    /// [`Evd::post`] of the event `make` returns, made where it goes: without an upcall,
    /// right in its entry of the queue, under the queue's lock (a DTO completion's event is
    /// written once, and only its own fields: `make` must be cheap and must not sleep or
    /// take a lock); with one, on the stack for the call. Without an upcall, not called if the
    /// event is lost to a full queue. `more`: the caller posts another event right after this
    /// one (a DTO completion that finishes the next DTO of its queue too), which an upcall
    /// learns as kDAPL's "more events follow" hint; a queued event does not keep it. Process
    /// context, no rkdapl lock held.
    #[inline(always)]
    pub(crate) fn post_with(&self, more: bool, make: impl FnOnce() -> Event) {
        // Without an upcall (the common case) no upcall lock round trip: `upcall_set` is
        // stored under the `upcall` lock by `modify_upcall`. A post that sees it clear while
        // an upcall is being set raced with the setting, and queues the event as if it came
        // first; a post ordered after `modify_upcall` returned (through a lock or an atomic,
        // as a DTO posted after it and completed by the ring, whose lock is taken on both
        // sides) sees it set (Release/Acquire). A post that sees it set takes the lock, and
        // from there on is ordered as before: it finds the upcall, or none if it was cleared
        // meanwhile (then it queues), and a clearing waits for the calls counted under it.
        if self.upcall_set.load(Ordering::Acquire) {
            let ev = make();
            if self.try_upcall(&ev, more) {
                return;
            }
            self.enqueue(|| ev);
        } else {
            self.enqueue(make);
        }
    }

    /// Queues the event `make` returns, made in its entry of the queue under the queue's lock,
    /// and wakes a waiter; or counts it lost if the queue is full.
    #[inline(always)]
    fn enqueue(&self, make: impl FnOnce() -> Event) {
        let mut q = self.q.lock();
        // Read under the lock that `wait` holds from counting itself in until it is on the
        // condition variable's wait queue: a waiter is either counted here or sees the event.
        let wake = q.waiters > 0;
        let cap = q.ring.len();
        if q.len == cap {
            q.lost += 1;
            q.lost_total += 1;
            let first = q.lost == 1;
            drop(q);
            self.overflowed(cap, first);
        } else {
            let tail = wrap(q.head + q.len, cap);
            if let Some(slot) = q.ring.get_mut(tail) {
                *slot = make();
                q.len += 1;
            }
            drop(q);
        }
        if wake {
            self.cv.notify_all();
        }
    }

    /// An event was lost to a full queue of `cap` entries: the first of an episode (`first`)
    /// is reported on the IA's async EVD. No rkdapl lock held.
    #[cold]
    #[inline(never)]
    fn overflowed(&self, cap: usize, first: bool) {
        pr_warn_once!(
            "an EVD of {} entries overflowed; losses are reported as overflow events\n",
            cap
        );
        // The IA's async EVD learns of each overflow episode (not of its own: that one is
        // reported in its queue only).
        let is_async = self
            .ia_slot
            .evd
            .lock()
            .as_ref()
            .is_some_and(|e| core::ptr::eq(&**e, self));
        if first && !is_async {
            self.ia_slot.post(Event::Overflow {
                evd: self.handle.load(Ordering::Relaxed),
                lost: 1,
            });
        }
    }

    /// Takes the oldest event and hands it to `f` where it lies in the queue, under the
    /// queue's lock: the C ABI converts it into the caller's `struct rkdapl_event` from there,
    /// so the event is not copied out first (`make profile`: about 55 instructions per DTO).
    #[inline(always)]
    fn pop_with<R>(&self, q: &mut Queue, f: impl FnOnce(&Event) -> R) -> Option<R> {
        if q.lost > 0 {
            let ev = Event::Overflow {
                evd: self.handle.load(Ordering::Relaxed),
                lost: q.lost,
            };
            q.lost = 0;
            return Some(f(&ev));
        }
        if q.len == 0 {
            return None;
        }
        let r = f(q.ring.get(q.head)?);
        q.head = wrap(q.head + 1, q.ring.len());
        q.len -= 1;
        Some(r)
    }

    /// "queued <entries> size <entries> overflows <events lost>", for debugfs. Any context.
    pub(crate) fn show(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (len, cap, lost) = {
            let q = self.q.lock();
            (q.len, q.ring.len(), q.lost_total)
        };
        writeln!(f, "queued {len} size {cap} overflows {lost}")
    }

    /// Takes the oldest event without waiting; any context.
    ///
    /// # Errors
    ///
    /// `-EAGAIN` if the queue is empty.
    pub(crate) fn dequeue(&self) -> Result<Event> {
        self.dequeue_with(|ev| *ev)
    }

    /// [`Evd::dequeue`], handing the event to `f` in place (under the queue's IRQ-safe lock:
    /// `f` must not sleep). Any context.
    ///
    /// # Errors
    ///
    /// `-EAGAIN` if the queue is empty.
    pub(crate) fn dequeue_with<R>(&self, f: impl FnOnce(&Event) -> R) -> Result<R> {
        self.pop_with(&mut self.q.lock(), f).ok_or(EAGAIN)
    }

    /// Waits up to `timeout_ms` milliseconds ([`TIMEOUT_INFINITE`]: without a limit) for an
    /// event; process context, sleeps interruptibly.
    ///
    /// # Errors
    ///
    /// `-ETIMEDOUT` if none came in time, `-EINTR` if a signal arrived.
    pub(crate) fn wait(&self, timeout_ms: u32) -> Result<Event> {
        self.wait_with(timeout_ms, |ev| *ev)
    }

    /// [`Evd::wait`], handing the event to `f` in place (under the queue's IRQ-safe lock: `f`
    /// must not sleep). Process context, sleeps interruptibly.
    ///
    /// # Errors
    ///
    /// As [`Evd::wait`].
    pub(crate) fn wait_with<R>(&self, timeout_ms: u32, f: impl FnOnce(&Event) -> R) -> Result<R> {
        let mut left = msecs_to_jiffies(timeout_ms);
        let mut q = self.q.lock();
        let mut f = Some(f);
        loop {
            if q.len > 0 || q.lost > 0 {
                if let Some(r) = f.take().and_then(|f| self.pop_with(&mut q, f)) {
                    return Ok(r);
                }
            }
            // `CondVar` puts the task on its wait queue before it releases `q`.
            q.waiters += 1;
            if timeout_ms == TIMEOUT_INFINITE {
                let signal = self.cv.wait_interruptible(&mut q);
                q.waiters -= 1;
                if signal {
                    return Err(EINTR);
                }
                continue;
            }
            let r = self.cv.wait_interruptible_timeout(&mut q, left);
            q.waiters -= 1;
            match r {
                CondVarTimeoutResult::Timeout => {
                    return f
                        .take()
                        .and_then(|f| self.pop_with(&mut q, f))
                        .ok_or(ETIMEDOUT)
                }
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
                CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
            }
        }
    }
}

impl Child for Evd {
    fn rank(&self) -> Rank {
        Rank::Evd
    }

    fn silence(&self) {
        self.close()
    }

    fn release(&self) {
        self.free()
    }
}

/// An EVD of no IA, for the KUnit suites: made in a registry of its own, which then lets it go
/// (so the caller holds the only reference).
#[cfg(CONFIG_KUNIT = "y")]
impl Evd {
    pub(crate) fn unlisted(qlen: u32, slot: Arc<AsyncSlot>) -> Result<Arc<Evd>> {
        let ch = Children::new(|_| None)?;
        let e = Evd::new(qlen, slot, &ch)?;
        ch.remove(&*e);
        Ok(e)
    }
}

#[kunit_tests(rkdapl_evd)]
mod tests {
    use super::*;
    use crate::dto_op::{DtoOp, DtoStatus};

    fn evd_on(qlen: u32, slot: Arc<AsyncSlot>) -> Result<Arc<Evd>> {
        Evd::unlisted(qlen, slot)
    }

    fn evd(qlen: u32) -> Result<Arc<Evd>> {
        evd_on(qlen, AsyncSlot::new()?)
    }

    fn ev(cookie: u64) -> Event {
        Event::Dto(DtoEvent {
            ep: 0,
            cookie,
            status: DtoStatus::Success,
            op: DtoOp::Send,
            len: 0,
            immediate: None,
            by_rdma_write_imm: false,
            invalidated_rkey: None,
            more: false,
        })
    }

    /// The cookie of a DTO event, `u64::MAX` for others.
    fn cookie(e: &Event) -> u64 {
        match e {
            Event::Dto(DtoEvent { cookie, .. }) => *cookie,
            _ => u64::MAX,
        }
    }

    /// The EVD and count of an overflow event.
    fn overflow(e: &Event) -> Option<(usize, u64)> {
        match e {
            Event::Overflow { evd, lost } => Some((*evd, *lost)),
            _ => None,
        }
    }

    /// The next event's kind and cookie, or the errno.
    fn next(e: &Evd) -> core::result::Result<(u32, u64), Error> {
        e.dequeue().map(|x| (x.kind() as u32, cookie(&x)))
    }

    const DTO: u32 = EventType::DtoCompletion as u32;
    const OVERFLOW: u32 = EventType::AsyncEvdOverflow as u32;

    #[test]
    fn wrap_reduces_once() {
        assert_eq!(wrap(0, 4), 0);
        assert_eq!(wrap(3, 4), 3);
        assert_eq!(wrap(4, 4), 0);
        assert_eq!(wrap(7, 4), 3);
        assert_eq!(wrap(1, 1), 0);
        assert_eq!(wrap(usize::MAX - 1, usize::MAX), usize::MAX - 1);
    }

    #[test]
    fn size_limits() {
        assert_eq!(evd(0).err(), Some(EINVAL));
        assert_eq!(evd(MAX_EVD_QLEN + 1).err(), Some(EINVAL));
        assert_eq!(evd(u32::MAX).err(), Some(EINVAL));
        assert!(evd(1).is_ok());
    }

    #[test]
    fn events_come_out_in_order_across_the_wrap() -> Result {
        let e = evd(3)?;
        assert_eq!(next(&e), Err(EAGAIN));
        for c in 1..=3 {
            e.post(ev(c));
        }
        assert_eq!(next(&e), Ok((DTO, 1)));
        // The tail wraps to slot 0.
        e.post(ev(4));
        assert_eq!(next(&e), Ok((DTO, 2)));
        assert_eq!(next(&e), Ok((DTO, 3)));
        assert_eq!(next(&e), Ok((DTO, 4)));
        assert_eq!(next(&e), Err(EAGAIN));
        let q = e.q.lock();
        assert_eq!((q.head, q.len, q.lost, q.lost_total), (1, 0, 0, 0));
        Ok(())
    }

    #[test]
    fn a_full_queue_counts_losses_and_reports_them_first() -> Result {
        let e = evd(2)?;
        e.set_handle(0x1234_5675);
        for c in 1..=5 {
            e.post(ev(c));
        }
        // Three lost: reported once, before the two queued events.
        let o = e.dequeue()?;
        assert_eq!(o.kind() as u32, OVERFLOW);
        assert_eq!(overflow(&o), Some((0x1234_5675, 3)));
        assert_eq!(next(&e), Ok((DTO, 1)));
        assert_eq!(next(&e), Ok((DTO, 2)));
        assert_eq!(next(&e), Err(EAGAIN));
        // A second episode counts from zero; the total keeps both.
        for c in 6..=8 {
            e.post(ev(c));
        }
        let o = e.dequeue()?;
        assert_eq!(overflow(&o).map(|o| o.1), Some(1));
        assert_eq!(next(&e), Ok((DTO, 6)));
        assert_eq!(e.q.lock().lost_total, 4);
        Ok(())
    }

    #[test]
    fn the_async_evd_hears_of_each_overflow_episode() -> Result {
        let slot = AsyncSlot::new()?;
        let a = evd_on(4, slot.clone())?;
        let e = evd_on(1, slot.clone())?;
        e.set_handle(0x77);
        assert!(slot.set(Some(a.clone()))?.is_none());
        for c in 1..=3 {
            e.post(ev(c));
        }
        let n = a.dequeue()?;
        assert_eq!(n.kind() as u32, OVERFLOW);
        assert_eq!(overflow(&n), Some((0x77, 1)));
        // One report per episode, not per lost event.
        assert_eq!(next(&a), Err(EAGAIN));
        // The async EVD's own overflow is in its own queue only.
        for c in 1..=6 {
            a.post(ev(c));
        }
        assert_eq!(overflow(&a.dequeue()?).map(|o| o.1), Some(2));
        // A closed EVD cannot become the async EVD; closing the async EVD clears the slot
        // (and the reference cycle through it).
        e.close();
        assert_eq!(slot.set(Some(e.clone())).err(), Some(EINVAL));
        a.close();
        assert!(slot.set(None)?.is_none());
        Ok(())
    }

    #[test]
    fn wait_without_time_takes_what_is_queued() -> Result {
        let e = evd(2)?;
        assert_eq!(e.wait(0).err(), Some(ETIMEDOUT));
        e.post(ev(9));
        assert_eq!(cookie(&e.wait(0)?), 9);
        assert_eq!(e.q.lock().waiters, 0);
        Ok(())
    }

    struct Count(AtomicU32);

    impl UpcallFn for Count {
        fn call(&self, ev: &Event, _more: bool) {
            self.0.fetch_add(cookie(ev) as u32, Ordering::Relaxed);
        }
    }

    #[test]
    fn an_upcall_takes_events_instead_of_the_queue() -> Result {
        let e = evd(2)?;
        let n = Arc::new(Count(AtomicU32::new(0)), GFP_KERNEL)?;
        let f: Arc<dyn UpcallFn> = n.clone();
        assert_eq!(e.modify_upcall(UpcallPolicy::Many, None), Err(EINVAL));
        e.modify_upcall(UpcallPolicy::SingleInstance, Some(f.clone()))?;
        e.post(ev(5));
        e.post(ev(6));
        assert_eq!(n.0.load(Ordering::Relaxed), 11);
        assert_eq!(next(&e), Err(EAGAIN));
        e.modify_upcall(UpcallPolicy::Disable, Some(f.clone()))?;
        e.post(ev(7));
        assert_eq!(next(&e), Ok((DTO, 7)));
        assert_eq!(n.0.load(Ordering::Relaxed), 11);
        // Once closed, no upcall can be set again.
        e.close();
        assert_eq!(e.modify_upcall(UpcallPolicy::Many, Some(f)), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn private_data_is_cut_at_56_bytes() {
        let src = [0xa5u8; MAX_PRIVATE_DATA + 8];
        let p = PrivateData::new(&src);
        assert_eq!(p.as_bytes(), &[0xa5u8; MAX_PRIVATE_DATA][..]);
        let p = PrivateData::new(&src[..3]);
        assert_eq!(p.as_bytes(), &[0xa5u8; 3][..]);
        assert_eq!(PrivateData::new(&[]).as_bytes().len(), 0);
        let e: Event = Event::conn(EventType::Established, 1, 0, &src);
        assert_eq!(e.kind(), EventType::Established);
    }
}
