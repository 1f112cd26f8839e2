// SPDX-License-Identifier: GPL-2.0

//! rkdapl's Rust API, for Rust consumer modules: everything `include/rkdapl.h` offers C
//! modules, on the provider's objects directly.
//!
//! A Rust module that depends on rkdapl (built with `--extern rkdapl` against the crate
//! metadata rkdapl's build emits, the way `nova-drm` uses `nova-core`; see `Kbuild`) uses these
//! types instead of the C header. They are the same DAT 2.0 objects with the same rules,
//! errors and calling contexts as the C API, whose kernel-doc each method names; what Rust adds:
//!
//! - each object owns a reference to the provider's object and frees it when dropped (the
//!   same free call as the C API's: IA close, PZ/LMR/RMR/EVD/EP/PSP free); objects keep what
//!   they were made from alive, so there is no order to get wrong;
//! - a connection request is a [`Cr`] owned by its [`Event`]; dropped unanswered, it is
//!   rejected;
//! - LMRs own their memory ([`Lmr::alloc`], [`Lmr::from_kvec`], [`Lmr::from_pages`]), reached
//!   through [`Lmr::write`] and [`Lmr::read`], which copy and apply the DMA sync rules, so a
//!   Rust consumer needs no raw pointer; dropping an LMR a DTO still uses is safe (the DTO keeps
//!   it until it completes); for zero copy an LMR can map pages a value of the consumer keeps
//!   ([`Lmr::from_sg_owner`], an [`SgOwner`]), which it drops only once nothing can reach them;
//! - events, operations, statuses and states are enums; upcalls are closures;
//! - results are `Result`s with the C API's negative errnos as [`Error`]s.
//!
//! A consumer that keeps state per I/O uses a [`TypedEp`] instead of an [`Ep`]: each DTO carries
//! a value of the consumer's own type ([`EpHandler::Context`]) that comes back in its
//! [`Completion`], delivered to the consumer's [`EpHandler`] straight from the completion
//! context, without an EVD queue.
//!
//! Events carry no C handles: [`Event::ep_id`] names the EP (its [`Ep::id`]), and a connection
//! request's CR comes with its event ([`Event::take_cr`]).
//!
//! Objects of this API are not C handles, but device removal reaches them as it reaches the C
//! ABI's: it finds every object through its IA's registry of children (`crate::removal`). After
//! a removal a Rust consumer's objects stay valid; their calls return `-ENODEV` (posts
//! `-ENOTCONN`), EPs report [`EventType::Broken`] and posted DTOs complete FLUSHED, as in C
//! (`selftests/blockdev.sh`'s `rdma link delete` under `rkdblk.ko` shows it). A Rust consumer's
//! objects are freed when dropped, its module's exit included.
//!
//! # Linking
//!
//! A consumer compiles the generic parts of this API (and the drop code of the objects it
//! owns) itself; every Rust symbol of rkdapl is exported for it (`exports.c`).
//!
//! # Examples
//!
//! See `samples/rust/rkdapl_rust_sample.rs`: a loopback connection through a PSP, an RMR grant,
//! RDMA WRITE, READ and SEND/RECV with every byte checked, a chain with immediate data whose
//! completions go to an upcall, and an LMR over pages; `samples/rust/rkdapl_rust_typed.rs`: a
//! [`TypedEp`] whose DTOs carry boxed contexts, compared against what each moved.

mod ep;
mod evd;
mod event;
mod ia;
mod lmr;
// IAs in a given network namespace.
mod netns;
mod post;
mod psp;
mod pz;
mod rmr;
mod srq;
mod typed;

pub use crate::rdma::cm::NetNs;
pub use crate::rdma::cm::SockAddr;
pub use crate::rdma::mr::SgOwner;
pub use crate::{
    ep::{EpAttr, EpState},
    evd::{
        AsyncEvent, DtoEvent, EventType, PrivateData, UpcallPolicy, MAX_PRIVATE_DATA,
        TIMEOUT_INFINITE,
    },
    ia::{IaAttr, PortAttr, PortState},
    iov::{MAX_CHAIN, MAX_IOV},
    lmr::{MemPriv, MemPrivs, MAX_ALLOC},
};
// What an IA's transport is and can do (`IaAttr::transport`, `IaAttr::caps`).
pub use crate::dto::{Dto, DtoFlags, DtoOp, DtoStatus, Op, RemoteRegion, Segment};
pub use crate::ia::{Cap, Caps};
pub use crate::rdma::device::Transport;
pub use ep::{Ep, EpParam};
pub use evd::Evd;
pub use event::{Event, EventOf};
pub use ia::Ia;
pub use lmr::Lmr;
pub use psp::{Cr, CrParam, Psp};
pub use pz::Pz;
pub use rmr::Rmr;
pub use srq::{Srq, SrqParam};
pub use typed::{Completion, EpHandler, PostError, TypedDto, TypedEp};

/// Runs `free(&obj)` now, or, inside an upcall (where freeing waits for the context the upcall
/// holds up: `crate::evd::in_upcall`), on the RDMA layer's deferral workqueue once the upcall
/// returned. The drops of the API's objects, which cannot refuse. Process context.
fn free_outside_upcall<T: Send + Sync + 'static>(obj: &kernel::sync::Arc<T>, free: fn(&T)) {
    if crate::evd::in_upcall::in_upcall() {
        crate::rdma::defer::release_later(
            FreeLater {
                obj: obj.clone(),
                free,
            },
            None,
        );
    } else {
        free(obj);
    }
}

/// An object whose free runs when this is dropped (on the deferral workqueue).
struct FreeLater<T> {
    obj: kernel::sync::Arc<T>,
    free: fn(&T),
}

impl<T> Drop for FreeLater<T> {
    fn drop(&mut self) {
        (self.free)(&self.obj);
    }
}
