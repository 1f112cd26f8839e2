// SPDX-License-Identifier: GPL-2.0

//! C entry points of the EVD: create, dequeue, wait, upcalls, free.

use super::{handle::Handles, publish, Object};
use crate::dto::DtoOp;
use crate::evd::refuse_in_upcall;
use crate::{
    evd::{Evd, Event, EventType, UpcallFn, UpcallPolicy, MAX_PRIVATE_DATA},
    ia::Ia,
};
use core::{mem::MaybeUninit, ptr::addr_of_mut};
use kernel::{error::from_result, prelude::*, sync::Arc};

/// `RKDAPL_EVENT_WITH_IMM`: the RECV's completion carries immediate data.
const EVENT_WITH_IMM: u32 = 1 << 0;
/// `RKDAPL_EVENT_RDMA_WRITE_IMM`: an RDMA WRITE with immediate consumed the RECV.
const EVENT_RDMA_WRITE_IMM: u32 = 1 << 1;
/// `RKDAPL_EVENT_INVALIDATED`: a SEND with invalidate consumed the RECV.
const EVENT_INVALIDATED: u32 = 1 << 2;
/// `RKDAPL_EVENT_MORE`: another DTO completion follows right away (upcalls only).
const EVENT_MORE: u32 = 1 << 3;

/// An event as C consumers see it: `struct rkdapl_event` in `include/rkdapl.h`. Made from an
/// [`Event`] where the C API hands one over (dequeue, wait, upcall); fields an event does not
/// have are 0.
#[repr(C)]
pub(crate) struct CEvent {
    /// Always one of [`EventType`] (rkdapl makes every event; C only reads them).
    pub(crate) kind: EventType,
    pub(crate) status: i32,
    pub(crate) ep: usize,
    /// A connection request: its C handle.
    pub(crate) cr: usize,
    pub(crate) evd: usize,
    pub(crate) cookie: u64,
    pub(crate) transferred_length: u64,
    pub(crate) op: u32,
    pub(crate) immediate: u32,
    pub(crate) flags: u32,
    pub(crate) invalidated_rkey: u32,
    pub(crate) private_data_len: u32,
    pub(crate) private_data: [u8; MAX_PRIVATE_DATA],
    /// The port (1-based) of an asynchronous port event; 0 otherwise. In what was the
    /// struct's tail padding: size and the other offsets are unchanged.
    pub(crate) port: u32,
}

// The C side checks the same size and offsets (`exports.c`).
const _: () = {
    assert!(core::mem::size_of::<CEvent>() == 128);
    assert!(core::mem::offset_of!(CEvent, flags) == 56);
    assert!(core::mem::offset_of!(CEvent, private_data) == 68);
    assert!(core::mem::offset_of!(CEvent, port) == 124);
};

impl CEvent {
    /// Writes `ev` into `*dst` as C consumers see it, with [`EVENT_MORE`] in a DTO event's
    /// flags if `more`. Every field is written but the private data bytes past
    /// `private_data_len` (`include/rkdapl.h`: "bytes valid in @private_data"), which it
    /// leaves as they were: a DTO completion's event is written once, straight into the
    /// caller's struct, without filling 56 bytes it does not have. Any context; no allocation.
    ///
    /// # Safety
    ///
    /// `dst` is valid for writes of a `CEvent` and aligned; it need not be initialised.
    #[inline(always)]
    pub(crate) unsafe fn write(dst: *mut CEvent, ev: &Event, more: bool) {
        // (kind, status, ep, cr, evd, cookie, transferred_length, op, immediate, flags,
        // invalidated_rkey, port), and the private data of the events that have it.
        let (kind, status, ep, cr, evd, cookie, len, op, imm, flags, inv, port, pdata) = match *ev {
            Event::Dto(ref d) => {
                let kind = match d.op {
                    DtoOp::RmrBind | DtoOp::RmrUnbind => EventType::RmrBindCompletion,
                    _ => EventType::DtoCompletion,
                };
                let mut flags = 0;
                if d.immediate.is_some() {
                    flags |= EVENT_WITH_IMM;
                }
                if d.by_rdma_write_imm {
                    flags |= EVENT_RDMA_WRITE_IMM;
                }
                if d.invalidated_rkey.is_some() {
                    flags |= EVENT_INVALIDATED;
                }
                if d.more || more {
                    flags |= EVENT_MORE;
                }
                let (imm, inv) = (d.immediate.unwrap_or(0), d.invalidated_rkey.unwrap_or(0));
                let (status, op) = (d.status as i32, d.op as u32);
                (
                    kind, status, d.ep, 0, 0, d.cookie, d.len, op, imm, flags, inv, 0, None,
                )
            }
            Event::Conn {
                kind,
                ep,
                status,
                ref private_data,
            } => (
                kind,
                status,
                ep,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                Some(private_data),
            ),
            Event::Cr {
                cr,
                ref private_data,
            } => {
                let kind = EventType::ConnectionRequest;
                (kind, 0, 0, cr, 0, 0, 0, 0, 0, 0, 0, 0, Some(private_data))
            }
            Event::Overflow { evd, lost } => {
                let (kind, status) = (EventType::AsyncEvdOverflow, EOVERFLOW.to_errno());
                (kind, status, 0, 0, evd, 0, lost, 0, 0, 0, 0, 0, None)
            }
            Event::Async(ref a) => {
                let (kind, status) = (a.kind, a.status);
                (
                    kind, status, a.ep, 0, a.evd, a.cookie, 0, 0, 0, 0, 0, a.port, None,
                )
            }
        };
        let pdata = pdata.map_or(&[][..], |p| p.as_bytes());
        // SAFETY: `dst` is valid for writes of a `CEvent` and aligned (this function's
        // `# Safety`), so each of its fields is; `pdata` has at most `MAX_PRIVATE_DATA` bytes
        // (`PrivateData::as_bytes`), the length of `private_data`.
        unsafe {
            addr_of_mut!((*dst).kind).write(kind);
            addr_of_mut!((*dst).status).write(status);
            addr_of_mut!((*dst).ep).write(ep);
            addr_of_mut!((*dst).cr).write(cr);
            addr_of_mut!((*dst).evd).write(evd);
            addr_of_mut!((*dst).cookie).write(cookie);
            addr_of_mut!((*dst).transferred_length).write(len);
            addr_of_mut!((*dst).op).write(op);
            addr_of_mut!((*dst).immediate).write(imm);
            addr_of_mut!((*dst).flags).write(flags);
            addr_of_mut!((*dst).invalidated_rkey).write(inv);
            addr_of_mut!((*dst).private_data_len).write(pdata.len() as u32);
            addr_of_mut!((*dst).port).write(port);
            if !pdata.is_empty() {
                let to = addr_of_mut!((*dst).private_data).cast::<u8>();
                core::ptr::copy_nonoverlapping(pdata.as_ptr(), to, pdata.len());
            }
        }
    }
}

impl From<&Event> for CEvent {
    /// The C form of `ev`, with the private data past its length zeroed.
    fn from(ev: &Event) -> CEvent {
        let mut c = MaybeUninit::<CEvent>::zeroed();
        // SAFETY: `c` is valid for writes of a `CEvent` and aligned; `write` initialises every
        // field but the private data's bytes past its length, which are zeroed (an `u8`
        // array: any value is valid).
        unsafe {
            CEvent::write(c.as_mut_ptr(), ev, false);
            c.assume_init()
        }
    }
}

impl Object for Evd {
    /// The handle is reported in the EVD's overflow events.
    fn published(&self, handle: usize) {
        self.set_handle(handle);
    }

    fn unpublished(&self) {
        self.free();
    }
}

/// See `rkdapl_evd_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `evd` is NULL or valid for a write of a pointer. `ia` may be any value: one that is not a
/// live IA handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_create(
    ia: *mut c_void,
    qlen: u32,
    evd: *mut *mut c_void,
) -> c_int {
    from_result(|| {
        if evd.is_null() {
            return Err(EINVAL);
        }
        let ia: Arc<Ia> = Handles::get::<Ia>(ia)?;
        let e = Evd::new(qlen, ia.async_slot.clone(), &ia.children)?;
        // SAFETY: `evd` is not NULL (checked), so it is writable (this function's `# Safety`).
        unsafe { publish(e, evd) }?;
        Ok(0)
    })
}

/// See `rkdapl_evd_dequeue` in `include/rkdapl.h`.
///
/// # Safety
///
/// `event` is NULL or valid for a write of a `struct rkdapl_event`. `evd` may be any value:
/// one that is not a live EVD handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_dequeue(evd: *mut c_void, event: *mut CEvent) -> c_int {
    from_result(|| {
        if event.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `event` is not NULL (checked), so it is writable and aligned (this
        // function's `# Safety`); the conversion writes it in place, without sleeping.
        let write = |ev: &Event| unsafe { CEvent::write(event, ev, false) };
        Handles::with(evd, |e: &Arc<Evd>| e.dequeue_with(write))??;
        Ok(0)
    })
}

/// See `rkdapl_evd_wait` in `include/rkdapl.h`.
///
/// # Safety
///
/// `event` is NULL or valid for a write of a `struct rkdapl_event`. `evd` may be any value:
/// one that is not a live EVD handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_wait(
    evd: *mut c_void,
    timeout_ms: u32,
    event: *mut CEvent,
) -> c_int {
    from_result(|| {
        if event.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `event` is not NULL (checked), so it is writable and aligned (this
        // function's `# Safety`); the conversion writes it in place, without sleeping.
        let write = |ev: &Event| unsafe { CEvent::write(event, ev, false) };
        // An event already queued is taken within the handle's RCU read section, without a
        // reference to the EVD (no atomic on its count): what `wait_with` would do first.
        let first = Handles::with(evd, |e: &Arc<Evd>| {
            refuse_in_upcall()?;
            e.dequeue_with(write)
        })?;
        if first != Err(EAGAIN) {
            return first.map(|()| 0);
        }
        // Nothing queued: wait, holding a reference (the handle may be freed meanwhile).
        let e: Arc<Evd> = Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        e.wait_with(timeout_ms, write)?;
        Ok(0)
    })
}

/// See `rkdapl_evd_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `evd` may be any value; one that is not a live EVD handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_free(evd: *mut c_void) -> c_int {
    from_result(|| {
        Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        // EPs may keep the EVD alive: its upcall, into the consumer, ends here.
        Handles::remove::<Evd>(evd)?.free();
        Ok(0)
    })
}

/// A C consumer's upcall (`rkdapl_upcall_fn`) and its context pointer.
///
/// # Invariants
///
/// `f` may be called with `ctx` and an event from any CPU, in parallel, until the upcall is
/// changed or disabled (the contract of `rkdapl_evd_modify_upcall`, see its `# Safety`).
struct CUpcall {
    f: unsafe extern "C" fn(ctx: *mut c_void, ev: *const CEvent),
    ctx: *mut c_void,
}

// SAFETY: `ctx` is the consumer's opaque pointer, only passed back to its own function, which
// the consumer made callable from any thread (the type invariant).
unsafe impl Send for CUpcall {}
// SAFETY: As for `Send`: `CUpcall` is never changed after it is made.
unsafe impl Sync for CUpcall {}

impl UpcallFn for CUpcall {
    fn call(&self, ev: &Event, more: bool) {
        let mut c = MaybeUninit::<CEvent>::uninit();
        // SAFETY: `c` is valid for writes of a `CEvent` and aligned. The private data bytes past
        // its length stay uninitialised: C reads only those valid (`include/rkdapl.h`), and
        // Rust never reads `c`.
        unsafe { CEvent::write(c.as_mut_ptr(), ev, more) };
        // SAFETY: By the type invariant the call is allowed while the upcall is set, and the
        // EVD calls only a set upcall (disabling waits for calls in progress); `c` is valid
        // for the call (written above but for the bytes C does not read).
        unsafe { (self.f)(self.ctx, c.as_ptr()) }
    }
}

/// See `rkdapl_evd_modify_upcall` in `include/rkdapl.h`.
///
/// # Safety
///
/// With a policy other than `RKDAPL_UPCALL_DISABLE`, a non-NULL `upcall` is a function that
/// may be called with `ctx` and an event as `rkdapl_upcall_fn` says (process context, from
/// any CPU, and in parallel for `RKDAPL_UPCALL_MANY`) until this EVD's upcall is changed or
/// disabled, the EVD is freed or the calling module is unloaded. `evd` may be any value: one
/// that is not a live EVD handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_evd_modify_upcall(
    evd: *mut c_void,
    policy: u32,
    upcall: Option<unsafe extern "C" fn(ctx: *mut c_void, ev: *const CEvent)>,
    ctx: *mut c_void,
) -> c_int {
    from_result(|| {
        let policy = UpcallPolicy::from_raw(policy).ok_or(EINVAL)?;
        let e: Arc<Evd> = Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        let f = match upcall {
            Some(f) => Some(Arc::new(CUpcall { f, ctx }, GFP_KERNEL)? as Arc<dyn UpcallFn>),
            None => None,
        };
        e.modify_upcall(policy, f)?;
        Ok(0)
    })
}

#[kunit_tests(rkdapl_abi_evd)]
mod tests {
    use super::*;
    use crate::dto::{DtoOp, DtoStatus};
    use crate::evd::DtoEvent;

    #[test]
    fn c_events_carry_what_the_typed_event_has() {
        let c = CEvent::from(&Event::Dto(DtoEvent {
            ep: 7,
            cookie: 5,
            status: DtoStatus::Success,
            op: DtoOp::Recv,
            len: 50,
            immediate: Some(0xabcd),
            by_rdma_write_imm: false,
            invalidated_rkey: Some(0x1234),
            more: false,
        }));
        assert_eq!(c.kind, EventType::DtoCompletion);
        assert_eq!(
            (c.ep, c.cookie, c.status, c.op),
            (7, 5, 0, DtoOp::Recv as u32)
        );
        assert_eq!(
            (c.transferred_length, c.immediate, c.flags),
            (50, 0xabcd, 5)
        );
        assert_eq!((c.invalidated_rkey, c.private_data_len), (0x1234, 0));
        assert_eq!(c.private_data, [0; MAX_PRIVATE_DATA]);
        // The upcall hint, and a SEND with immediate: WITH_IMM without RDMA_WRITE_IMM.
        let c = CEvent::from(&Event::Dto(DtoEvent {
            ep: 7,
            cookie: 6,
            status: DtoStatus::Success,
            op: DtoOp::Recv,
            len: 3,
            immediate: Some(0x5e),
            by_rdma_write_imm: false,
            invalidated_rkey: None,
            more: true,
        }));
        assert_eq!((c.flags, c.immediate), (EVENT_WITH_IMM | EVENT_MORE, 0x5e));
        // Written in place over an earlier event: every field but the private data past its
        // length (here all of it) is the new event's; the upcall's `more` sets the hint too.
        let mut c = CEvent::from(&Event::conn(EventType::Established, 1, -5, &[0xee; 9]));
        let bind = Event::Dto(DtoEvent {
            ep: 8,
            cookie: 4,
            status: DtoStatus::Flushed,
            op: DtoOp::RmrBind,
            len: 0,
            immediate: None,
            by_rdma_write_imm: true,
            invalidated_rkey: None,
            more: false,
        });
        // SAFETY: `c` is a `CEvent`, valid for writes and aligned.
        unsafe { CEvent::write(&mut c, &bind, true) };
        assert_eq!(c.kind, EventType::RmrBindCompletion);
        assert_eq!(
            (c.ep, c.cookie, c.status, c.op, c.cr, c.evd),
            (8, 4, DtoStatus::Flushed as i32, DtoOp::RmrBind as u32, 0, 0)
        );
        assert_eq!(
            (c.flags, c.immediate, c.invalidated_rkey, c.port),
            (EVENT_RDMA_WRITE_IMM | EVENT_MORE, 0, 0, 0)
        );
        assert_eq!((c.private_data_len, c.private_data[8]), (0, 0xee));
        // A connection event's `more` is not a hint.
        let mut c = CEvent::from(&bind);
        // SAFETY: As above.
        unsafe { CEvent::write(&mut c, &Event::conn(EventType::Broken, 2, -19, &[]), true) };
        assert_eq!(
            (c.kind, c.status, c.ep, c.flags),
            (EventType::Broken, -19, 2, 0)
        );
        assert_eq!((c.cookie, c.op, c.private_data_len), (0, 0, 0));
        // Private data is cut at 56 bytes, the rest zeroed.
        let src = [0xa5u8; MAX_PRIVATE_DATA + 8];
        let c = CEvent::from(&Event::conn(EventType::Established, 1, 0, &src));
        assert_eq!(c.private_data_len, 56);
        assert_eq!(c.private_data, [0xa5u8; MAX_PRIVATE_DATA]);
        let c = CEvent::from(&Event::conn(EventType::Established, 1, 0, &src[..3]));
        assert_eq!(c.private_data_len, 3);
        assert_eq!(c.private_data[..4], [0xa5, 0xa5, 0xa5, 0]);
        assert_eq!(c.kind, EventType::Established);
        let c = CEvent::from(&Event::Overflow { evd: 0x77, lost: 3 });
        assert_eq!(c.kind, EventType::AsyncEvdOverflow);
        assert_eq!((c.evd, c.transferred_length), (0x77, 3));
        assert_eq!(c.status, EOVERFLOW.to_errno());
        let c = CEvent::from(&Event::Cr {
            cr: 9,
            private_data: crate::evd::PrivateData::new(&[1]),
        });
        assert_eq!(
            (c.kind, c.cr, c.private_data_len),
            (EventType::ConnectionRequest, 9, 1)
        );
    }
}
