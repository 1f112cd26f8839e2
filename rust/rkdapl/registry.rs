// SPDX-License-Identifier: GPL-2.0

//! The children of an IA: every PZ, LMR, RMR, EP, PSP, CR and EVD made on it, from its
//! constructor to its free. Device removal and consumer unload ([`crate::removal`]) walk the
//! IAs and these registries to find what to revoke, whatever the objects were made through
//! (the C ABI's handles or the Rust API).
//!
//! A registry holds a reference to each child. A child holds its IA (through its PZ, PSP, ...),
//! so an IA lives while it has children; the cycle ends when the child is freed (its
//! provider-level `free`, which the C ABI's free calls and the Rust API's drops call), which
//! takes it out. An object that was freed but is still used (a PZ kept by its LMRs) is reached
//! through its users ([`Child::parent`]).
//!
//! This module names no other provider module: objects see their IA's registry as
//! [`Children`] and are seen by it as [`Child`] trait objects, so the imports stay one way.

use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

/// The kinds of children, in the order removal revokes them (after the IA was made dead, before
/// the IA's device reference goes): EPs (their CM ids, QPs and CQs), SRQs, CRs, PSPs, RMRs (their
/// MRs), LMRs (their DMA mappings), PZs (their PDs); EVDs hold no device resource.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Rank {
    Ep,
    /// After the EPs (whose QPs use the SRQ), before the PZs (whose PD it is in).
    Srq,
    Cr,
    Psp,
    Rmr,
    Lmr,
    Pz,
    Evd,
}

impl Rank {
    /// Every kind, in revocation order.
    pub(crate) const ORDER: [Rank; 8] = [
        Rank::Ep,
        Rank::Srq,
        Rank::Cr,
        Rank::Psp,
        Rank::Rmr,
        Rank::Lmr,
        Rank::Pz,
        Rank::Evd,
    ];
}

/// An object registered with its IA, as removal sees it.
pub(crate) trait Child: Send + Sync {
    /// Its kind.
    fn rank(&self) -> Rank;

    /// Device removal, first step, for every child before any is revoked: EPs end their
    /// connection with `RKDAPL_CONNECTION_EVENT_BROKEN`. Process context.
    fn mark_broken(&self) {}

    /// Consumer unload, first step: nothing calls into the consumer from now on (EVDs disable
    /// their upcalls). Process context; sleeps.
    fn silence(&self) {}

    /// Releases the object's device resources (device removal, consumer unload); the object
    /// stays registered until freed, and later uses of it fail. Process context; sleeps.
    fn revoke(&self) {}

    /// Consumer unload, after [`Child::revoke`]: the object's provider-level free, which
    /// cannot be refused here; it leaves the registry. Process context; sleeps.
    fn release(&self);

    /// An object this one keeps alive that has device resources of its own: removal revokes
    /// it too, even if the consumer freed it already (the PZ of an LMR, RMR or EP).
    fn parent(&self) -> Option<Arc<dyn Child>> {
        None
    }
}

/// What a registry entry keeps besides the child (an EP's debugfs directory), dropped when the
/// child leaves.
pub(crate) type Attached = KBox<dyn Send + Sync>;

struct Entry {
    child: Arc<dyn Child>,
    _attached: Option<Attached>,
}

/// Called with a registry that was closed and lost its last child: the IA leaves the list of
/// IAs; what it returns (that list's reference) is dropped after the registry's lock.
pub(crate) type Delist = fn(&Children) -> Option<Arc<dyn Send + Sync>>;

struct Set {
    v: KVec<Entry>,
    /// The device was removed (or the consumer is unloading): no more children with device
    /// resources.
    dead: bool,
    /// The IA was closed: once the last child leaves, it leaves the list of IAs.
    closed: bool,
}

/// The registry of one IA.
#[pin_data]
pub(crate) struct Children {
    #[pin]
    set: Mutex<Set>,
    delist: Delist,
}

impl Children {
    /// An empty registry; `delist` is called once it is closed and empty. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn new(delist: Delist) -> Result<Arc<Children>> {
        Arc::pin_init(
            pin_init!(Children {
                set <- new_mutex!(Set { v: KVec::new(), dead: false, closed: false }, "rkdapl_ia_children"),
                delist,
            }),
            GFP_KERNEL,
        )
    }

    /// Registers `child`, with `attached` to drop when it leaves. Process context; may sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` once the device was removed (EVDs, which hold no device resource, are still
    /// taken), `-EINVAL` if the IA was closed and has no child left (a parent's free raced
    /// this creation), `-ENOMEM`.
    pub(crate) fn add(&self, child: Arc<dyn Child>, attached: Option<Attached>) -> Result {
        let mut s = self.set.lock();
        if s.dead && child.rank() != Rank::Evd {
            return Err(ENODEV);
        }
        if s.closed && s.v.is_empty() {
            return Err(EINVAL);
        }
        s.v.push(
            Entry {
                child,
                _attached: attached,
            },
            GFP_KERNEL,
        )?;
        Ok(())
    }

    /// Takes `child` out (nothing if it is not registered: freed already). Process context;
    /// may sleep (the entry is dropped after the lock: an EP's debugfs directory waits for its
    /// readers).
    pub(crate) fn remove<T: ?Sized>(&self, child: &T) {
        let (entry, gone) = {
            let mut s = self.set.lock();
            // From the end: the children that come and go often (an LMR per I/O over a block
            // request's pages) are the newest, while long-lived ones sit at the front; the
            // last entry fills the hole (the order of the entries means nothing).
            let entry =
                s.v.iter()
                    .rposition(|e| core::ptr::addr_eq(Arc::as_ptr(&e.child), child))
                    .and_then(|i| {
                        let last = s.v.len() - 1;
                        s.v.swap(i, last);
                        s.v.pop()
                    });
            let gone = if entry.is_some() {
                self.delist_if_done(&mut s)
            } else {
                None
            };
            (entry, gone)
        };
        drop(entry);
        drop(gone);
    }

    /// The IA was closed (`rkdapl_ia_close`): it leaves the list of IAs now if it has no
    /// child, otherwise with its last child. Process context; sleeps.
    pub(crate) fn close(&self) {
        let gone = {
            let mut s = self.set.lock();
            if s.closed {
                return;
            }
            s.closed = true;
            self.delist_if_done(&mut s)
        };
        drop(gone);
    }

    fn delist_if_done(&self, s: &mut Set) -> Option<Arc<dyn Send + Sync>> {
        if s.closed && s.v.is_empty() {
            // Whatever the list held goes; its memory too (the registry may live on in EVDs).
            s.v = KVec::new();
            (self.delist)(self)
        } else {
            None
        }
    }

    /// No more children with device resources (device removal, consumer unload). Process
    /// context; sleeps.
    pub(crate) fn kill(&self) {
        self.set.lock().dead = true;
    }

    /// Appends a reference to every child to `out`. Process context; sleeps.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`; `out` then holds some of them.
    pub(crate) fn snapshot(&self, out: &mut KVec<Arc<dyn Child>>) -> Result {
        let s = self.set.lock();
        out.reserve(s.v.len(), GFP_KERNEL)?;
        for e in s.v.iter() {
            out.push(e.child.clone(), GFP_KERNEL)?;
        }
        Ok(())
    }
}
