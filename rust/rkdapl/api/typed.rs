// SPDX-License-Identifier: GPL-2.0

//! Typed EPs: each DTO carries a value of the consumer's own type from its post to its
//! completion, and the completion goes to the consumer's handler directly, without an EVD.
//!
//! A consumer implements [`EpHandler`] for a type of its own, names the value each DTO carries
//! ([`EpHandler::Context`]: a [`KBox`], an [`Arc`], `()`, or any other [`ForeignOwnable`]), and
//! makes a [`TypedEp`] with it. Posting hands the DTO's context to the EP; it comes back
//! exactly once: in the DTO's [`Completion`] (a flushed one too: a disconnect, the EP's drop,
//! a device removal), in the error of a post that did not post it, or dropped by the EP when
//! a DTO posted with [`DtoFlags::suppress`] succeeds (no completion is reported for it). So
//! there is no cookie to encode, and no table of outstanding I/Os to keep.
//!
//! The layer turns a context into the DTO's cookie with [`ForeignOwnable::into_foreign`] and
//! back with [`ForeignOwnable::from_foreign`], as `blk-mq`'s Rust `Operations` hand a request's
//! data through C; C consumers keep their cookies (`include/rkdapl.h`).
//!
//! Completions are delivered from the context that finishes the DTO: the CQs' completion
//! work (the CQs poll on a workqueue: process context), or, for flushed DTOs, the EP's
//! disconnect, drop, reset or device removal (process context), with no rkdapl lock held.
//! There is no event queue, no EVD lock and no event copy on the way. Connection events
//! (ESTABLISHED, DISCONNECTED, ...) still go to the EP's connection EVD, where a consumer
//! waits for them in process context as with an untyped [`super::Ep`]; asynchronous errors
//! go to the IA's async EVD.
//!
//! A typed EP takes no RMR bind and no SRQ: those report cookies of their own, not contexts.

use super::SockAddr;
use super::{Cr, DtoFlags, DtoOp, DtoStatus, EpAttr, EpParam, EpState, Evd, Op, Pz, Segment};
use crate::{
    dto::{Dto, DtoHandler},
    ep,
    evd::DtoEvent,
};
use core::ffi::c_void;
use kernel::{prelude::*, sync::Arc, types::ForeignOwnable};

/// A consumer's handler of the DTO completions of its [`TypedEp`]s.
pub trait EpHandler: Send + Sync + 'static {
    /// What each DTO carries from its post to its completion.
    type Context: ForeignOwnable + Send + 'static;

    /// A DTO posted on a [`TypedEp`] of this handler finished: `c` gives its context back with
    /// how it completed (flushed ones included). `more`: the same call goes on to deliver the
    /// next completion of the same queue (a consumer may batch its work until a call without
    /// it; DAT's "more events follow").
    ///
    /// Called from the CQs' completion work (process context), or for flushed DTOs from the
    /// EP's disconnect, drop, reset or device removal (process context), with no rkdapl lock
    /// held. As an EVD upcall, it must not sleep: it may post DTOs and drop contexts, and
    /// hands the rest to a work item; dropping a [`TypedEp`] or waiting on an [`Evd`] there is
    /// deferred or refused (`EDEADLK`) as in an upcall. Completions of one queue (the send queue,
    /// or the receive queue) come one call at a time, in posting order; those of the two
    /// queues may come at the same time.
    fn completion(&self, c: Completion<Self::Context>, more: bool);
}

/// A finished DTO of a [`TypedEp`], its context given back.
pub struct Completion<C> {
    /// The context the DTO was posted with.
    pub context: C,
    /// How it completed.
    pub status: DtoStatus,
    /// What completed.
    pub op: DtoOp,
    /// Bytes moved if it succeeded (a RECV: bytes received; an RDMA WRITE with immediate that
    /// consumed it: bytes written); 0 otherwise.
    pub len: u64,
    /// A RECV's immediate data, if the peer sent some.
    pub immediate: Option<u32>,
    /// An RDMA WRITE with immediate consumed the RECV: its data went to the grant the peer
    /// named, not to the RECV's buffer.
    pub by_rdma_write_imm: bool,
    /// The rkey a peer's SEND with invalidate ended, for the RECV it consumed.
    pub invalidated_rkey: Option<u32>,
}

/// One send-queue DTO to post on a [`TypedEp`]: a [`super::Dto`] with a context instead of
/// a cookie.
pub struct TypedDto<'a, C> {
    /// The operation and its operands.
    pub op: Op,
    /// The local segments (at most the EP's `max_request_iov`).
    pub segs: &'a [Segment<'a>],
    /// Completion flags. With [`DtoFlags::suppress`], a successful DTO reports no completion:
    /// its context is dropped when it finishes.
    pub flags: DtoFlags,
    /// Given back in the DTO's completion.
    pub context: C,
}

impl<'a, C> TypedDto<'a, C> {
    /// `op` over `segs`, carrying `context`, without flags. Any context.
    #[inline]
    pub fn new(op: Op, segs: &'a [Segment<'a>], context: C) -> TypedDto<'a, C> {
        TypedDto {
            op,
            segs,
            flags: DtoFlags::default(),
            context,
        }
    }
}

/// Why [`TypedEp::post_chain`] stopped, and the contexts of the DTOs it did not post.
pub struct PostError<C, const N: usize> {
    /// The error of the DTO it stopped at.
    pub error: Error,
    /// How many DTOs were posted before it (their contexts come back in their completions).
    pub posted: usize,
    /// The contexts of the DTOs not posted (from `posted` on), `None` for the posted ones.
    pub unposted: [Option<C>; N],
}

/// A DTO's cookie: the pointer its context became.
#[inline]
fn cookie(p: *mut c_void) -> u64 {
    p as usize as u64
}

/// The pointer a DTO's cookie holds ([`cookie`]).
#[inline]
fn pointer(cookie: u64) -> *mut c_void {
    cookie as usize as *mut c_void
}

/// The handler of a typed EP, as its rings call it.
struct Deliver<H>(H);

impl<H: EpHandler> DtoHandler for Deliver<H> {
    #[inline]
    fn done(&self, ev: &DtoEvent, suppressed: bool, more: bool) {
        // SAFETY: `ev` is a DTO of a ring of a `TypedEp<H>` (only those report here), whose
        // cookies all came from `H::Context::into_foreign` (the type invariant of `TypedEp`);
        // the ring reports each DTO once, and never one whose post call failed (its caller
        // took the context back): this is the one `from_foreign` of this pointer.
        let context = unsafe { H::Context::from_foreign(pointer(ev.cookie)) };
        if suppressed {
            // A suppressed DTO that succeeded reports nothing: only its context goes.
            drop(context);
            return;
        }
        self.0.completion(
            Completion {
                context,
                status: ev.status,
                op: ev.op,
                len: ev.len,
                immediate: ev.immediate,
                by_rdma_write_imm: ev.by_rdma_write_imm,
                invalidated_rkey: ev.invalidated_rkey,
            },
            more,
        );
    }
}

/// An endpoint whose DTOs carry contexts of type `H::Context` and complete to the handler `H`
/// (see the module documentation). Otherwise as [`super::Ep`]: one reliable connection, freed
/// when dropped (every DTO still posted completes first, flushed, to the handler).
///
/// # Invariants
///
/// Every cookie of a DTO posted on `ep` came from `H::Context::into_foreign`: only this type
/// posts on `ep` (it is not handed out: it has no C handle, takes no RMR bind and no SRQ), and
/// it posts only contexts. Each such pointer is taken back once with `from_foreign`: by
/// `Deliver::done` when the DTO finishes, or by the post call that did not post it.
pub struct TypedEp<H: EpHandler> {
    ep: Arc<ep::Ep>,
    handler: Arc<Deliver<H>>,
}

impl<H: EpHandler> TypedEp<H> {
    /// An unconnected EP in `pz` whose DTOs complete to `handler`; its connection events go to
    /// `conn_evd`. Zero fields of `attr` take defaults ([`EpAttr::default`]: all of them).
    ///
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `EINVAL` for attributes beyond the device's limits, `ENODEV` after device removal,
    /// `ENOMEM`, or the driver's error.
    pub fn new(pz: &Pz, conn_evd: &Evd, attr: &EpAttr, handler: H) -> Result<Self> {
        let handler = Arc::new(Deliver(handler), GFP_KERNEL)?;
        let ep = Self::create(pz, conn_evd, attr, handler.clone())?;
        // INVARIANT: The EP is new and only this value holds it; nothing was posted on it.
        Ok(TypedEp { ep, handler })
    }

    /// The part of [`TypedEp::new`] that is not generic: compiled into rkdapl.
    #[inline(never)]
    fn create(
        pz: &Pz,
        conn_evd: &Evd,
        attr: &EpAttr,
        handler: Arc<dyn DtoHandler>,
    ) -> Result<Arc<ep::Ep>> {
        let (pz, conn) = (&pz.0, &conn_evd.evd);
        pz.ia
            .with_device(|dev| ep::Ep::with_handler(pz.clone(), dev, handler, conn.clone(), *attr))
    }

    /// The handler the EP's completions go to. Any context.
    pub fn handler(&self) -> &H {
        &self.handler.0
    }

    /// Posts one send-queue DTO (as [`super::Ep::post`] of one DTO): its context comes back
    /// in its completion, or with the error.
    ///
    /// Any context (does not sleep).
    ///
    /// # Errors
    ///
    /// As [`super::Ep::post`], with the DTO's context.
    pub fn post(
        &self,
        dto: TypedDto<'_, H::Context>,
    ) -> core::result::Result<(), (Error, H::Context)> {
        let p = dto.context.into_foreign();
        let raw = [Dto {
            op: dto.op,
            segs: dto.segs,
            cookie: cookie(p),
            flags: dto.flags,
        }];
        match self.ep.post_checked(&raw) {
            Ok(()) => Ok(()),
            // SAFETY: The pointer came from `into_foreign` above, and a single DTO whose post
            // failed was not posted (the ring does not report it): nothing else takes it back.
            Err((e, _)) => Err((e, unsafe { H::Context::from_foreign(p) })),
        }
    }

    /// Posts `dtos` in order as one chain (one doorbell), as [`super::Ep::post`]: every DTO up
    /// to the first refused one is posted, and each completes as if posted alone.
    ///
    /// Any context (does not sleep; a chain of more than two DTOs allocates with `GFP_ATOMIC`).
    ///
    /// # Errors
    ///
    /// As [`super::Ep::post`] (`EINVAL` for no DTOs or more than [`super::MAX_CHAIN`]), with how many
    /// DTOs were posted and the contexts of those that were not.
    pub fn post_chain<const N: usize>(
        &self,
        dtos: [TypedDto<'_, H::Context>; N],
    ) -> core::result::Result<(), PostError<H::Context, N>> {
        let raw = dtos.map(|d| Dto {
            op: d.op,
            segs: d.segs,
            cookie: cookie(d.context.into_foreign()),
            flags: d.flags,
        });
        let Err((error, posted)) = self.ep.post_checked(&raw) else {
            return Ok(());
        };
        let unposted = core::array::from_fn(|i| {
            let d = raw.get(i).filter(|_| i >= posted)?;
            // SAFETY: The pointer came from `into_foreign` above, and the post did not post
            // this DTO (the rings report only the DTOs before `posted`): nothing else takes it
            // back.
            Some(unsafe { H::Context::from_foreign(pointer(d.cookie)) })
        });
        Err(PostError {
            error,
            posted,
            unposted,
        })
    }

    /// Posts a RECV into `segs` carrying `context` (as [`super::Ep::post_recv`]: from the
    /// EP's creation until its disconnect starts).
    ///
    /// Any context (does not sleep).
    ///
    /// # Errors
    ///
    /// As [`super::Ep::post_recv`], with the context.
    pub fn post_recv(
        &self,
        segs: &[Segment<'_>],
        context: H::Context,
    ) -> core::result::Result<(), (Error, H::Context)> {
        let p = context.into_foreign();
        match self.recv(segs, cookie(p)) {
            Ok(()) => Ok(()),
            // SAFETY: The pointer came from `into_foreign` above, and a RECV whose post
            // failed is not in the ring: nothing else takes it back.
            Err(e) => Err((e, unsafe { H::Context::from_foreign(p) })),
        }
    }

    /// The part of [`TypedEp::post_recv`] that is not generic.
    #[inline(never)]
    fn recv(&self, segs: &[Segment<'_>], cookie: u64) -> Result {
        self.ep.check_segments(segs)?;
        self.ep.post_recv(segs, cookie)
    }

    /// The EP's number (its debugfs directory, `ep<id>`; its connection events' `ep_id`). Any
    /// context.
    pub fn id(&self) -> u32 {
        self.ep.id
    }

    /// As [`super::Ep::connect`]. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`super::Ep::connect`].
    pub fn connect(&self, remote: &SockAddr, timeout_ms: u32, private_data: &[u8]) -> Result {
        self.ep.connect(None, remote, timeout_ms, private_data)
    }

    /// As [`super::Ep::connect_from`]. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// As [`super::Ep::connect_from`].
    pub fn connect_from(
        &self,
        local: &SockAddr,
        remote: &SockAddr,
        timeout_ms: u32,
        private_data: &[u8],
    ) -> Result {
        self.ep
            .connect(Some(local), remote, timeout_ms, private_data)
    }

    /// As [`super::Ep::disconnect`]; the DTOs still queued complete flushed, to the handler.
    /// Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `ENOTCONN` unless CONNECTED.
    pub fn disconnect(&self) -> Result {
        self.ep.disconnect()
    }

    /// The EP's state. Any context.
    pub fn state(&self) -> EpState {
        self.ep.state()
    }

    /// As [`super::Ep::reset`]. Process context; sleeps; not from the handler.
    ///
    /// # Errors
    ///
    /// As [`super::Ep::reset`].
    pub fn reset(&self) -> Result {
        self.ep.reset()
    }

    /// As [`super::Ep::query`]. Any context.
    pub fn query(&self) -> EpParam {
        EpParam {
            attr: self.ep.query(),
            remote_addr: self.ep.peer(),
            path_mtu: self.ep.path_mtu(),
        }
    }
}

impl<H: EpHandler> Drop for TypedEp<H> {
    /// As [`super::Ep`]'s drop (`rkdapl_ep_free`): every DTO still posted completes flushed to
    /// the handler first. Process context; sleeps until the QP is drained (inside the
    /// handler or an upcall, on the RDMA layer's deferral workqueue once it returned).
    fn drop(&mut self) {
        super::free_outside_upcall(&self.ep, ep::Ep::free);
    }
}

impl Cr {
    /// Accepts on the unconnected typed EP `ep`, as [`Cr::accept`] on an untyped one.
    ///
    /// Process context, or the upcall of this CR's event; may sleep.
    ///
    /// # Errors
    ///
    /// As [`Cr::accept`].
    pub fn accept_typed<H: EpHandler>(
        self,
        ep: &TypedEp<H>,
        private_data: &[u8],
    ) -> core::result::Result<(), (Error, Option<Cr>)> {
        self.accept_on(&ep.ep, private_data)
    }
}
