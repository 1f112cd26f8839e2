// SPDX-License-Identifier: GPL-2.0

//! C entry points of the EVD: create, dequeue, wait, upcalls, free.

use super::{handle::Handles, publish, Object};
use crate::evd::refuse_in_upcall;
use crate::{
    evd::{Evd, Event, EventType, UpcallFn, UpcallPolicy, MAX_PRIVATE_DATA},
    ia::Ia,
};
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

impl From<&Event> for CEvent {
    fn from(ev: &Event) -> CEvent {
        let mut c = CEvent {
            kind: ev.kind(),
            status: 0,
            ep: 0,
            cr: 0,
            evd: 0,
            cookie: 0,
            transferred_length: 0,
            op: 0,
            immediate: 0,
            flags: 0,
            invalidated_rkey: 0,
            private_data_len: 0,
            private_data: [0; MAX_PRIVATE_DATA],
            port: 0,
        };
        let pdata = match *ev {
            Event::Dto(ref d) => {
                c.ep = d.ep;
                c.cookie = d.cookie;
                c.status = d.status as i32;
                c.op = d.op as u32;
                c.transferred_length = d.len;
                if let Some(imm) = d.immediate {
                    c.immediate = imm;
                    c.flags |= EVENT_WITH_IMM;
                }
                if d.by_rdma_write_imm {
                    c.flags |= EVENT_RDMA_WRITE_IMM;
                }
                if let Some(rkey) = d.invalidated_rkey {
                    c.invalidated_rkey = rkey;
                    c.flags |= EVENT_INVALIDATED;
                }
                if d.more {
                    c.flags |= EVENT_MORE;
                }
                None
            }
            Event::Conn {
                ep,
                status,
                ref private_data,
                ..
            } => {
                c.ep = ep;
                c.status = status;
                Some(private_data)
            }
            Event::Cr {
                cr,
                ref private_data,
            } => {
                c.cr = cr;
                Some(private_data)
            }
            Event::Overflow { evd, lost } => {
                c.evd = evd;
                c.transferred_length = lost;
                c.status = EOVERFLOW.to_errno();
                None
            }
            Event::Async(ref a) => {
                c.status = a.status;
                c.ep = a.ep;
                c.evd = a.evd;
                c.cookie = a.cookie;
                c.port = a.port;
                None
            }
        };
        if let Some(p) = pdata {
            let b = p.as_bytes();
            c.private_data[..b.len()].copy_from_slice(b);
            c.private_data_len = b.len() as u32;
        }
        c
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
        // SAFETY: `event` is not NULL (checked), so it is writable (this function's
        // `# Safety`); the conversion writes it in place, without sleeping.
        let write = |ev: &Event| unsafe { event.write(CEvent::from(ev)) };
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
        let e: Arc<Evd> = Handles::get::<Evd>(evd)?;
        refuse_in_upcall()?;
        // SAFETY: `event` is not NULL (checked), so it is writable (this function's
        // `# Safety`); the conversion writes it in place, without sleeping.
        let write = |ev: &Event| unsafe { event.write(CEvent::from(ev)) };
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
        let mut c = CEvent::from(ev);
        if more && matches!(ev, Event::Dto(_)) {
            c.flags |= EVENT_MORE;
        }
        let ev = c;
        // SAFETY: By the type invariant the call is allowed while the upcall is set, and the
        // EVD calls only a set upcall (disabling waits for calls in progress); `ev` is valid
        // for the call.
        unsafe { (self.f)(self.ctx, &ev) }
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
