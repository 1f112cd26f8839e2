// SPDX-License-Identifier: GPL-2.0

//! [`Lender`]: the [`SgOwner`] a region over lent pages keeps ([`DmaRegion::from_sg_owner`]),
//! in place when it is small, so that lending a block request's pages allocates nothing for
//! their owner.
//!
//! [`DmaRegion::from_sg_owner`]: super::DmaRegion::from_sg_owner

use super::SgOwner;
use crate::{bindings, prelude::*};
use core::{marker::PhantomData, mem::MaybeUninit};

/// The bytes an [`SgOwner`] may take to be kept in place by a [`Lender`]: two pointers' worth
/// (a block request's token is one, a caller's list and its length two).
type Inline = [MaybeUninit<usize>; 2];

/// An [`SgOwner`] a region keeps until it has unmapped the owner's pages
/// ([`super::DmaRegion::from_sg_owner`]). An owner no larger than two pointers, and no more
/// aligned than one, is kept in place, so that lending a block request's pages to one work
/// request allocates nothing for the owner; a larger one is boxed.
///
/// Dropping it drops the owner, which gives the pages back to their user.
pub struct Lender(Kept);

enum Kept {
    /// # Invariants
    ///
    /// `value` holds a valid value of the type `O` that `vtable` is [`VTableOf<O>::VTABLE`]
    /// of, not dropped yet.
    Inline {
        value: Inline,
        vtable: &'static LenderVTable,
    },
    Boxed(KBox<dyn SgOwner>),
}

// `Lender` is `Send` and `Sync` by its fields: that is right for the owner kept in `value`
// too, as every `SgOwner` is `Send + Sync + 'static`.

/// What a [`Lender`] needs of the owner type it keeps in place.
struct LenderVTable {
    /// Calls the owner's [`SgOwner::sg`].
    sg: unsafe fn(*const Inline) -> (*mut bindings::scatterlist, usize),
    /// Drops the owner in place.
    drop: unsafe fn(*mut Inline),
}

/// The [`LenderVTable`] of owner type `O`.
struct VTableOf<O>(PhantomData<O>);

impl<O: SgOwner> VTableOf<O> {
    const VTABLE: LenderVTable = LenderVTable {
        sg: Self::sg,
        drop: Self::drop,
    };

    /// # Safety
    ///
    /// `p` points to a valid `O`.
    unsafe fn sg(p: *const Inline) -> (*mut bindings::scatterlist, usize) {
        // SAFETY: The caller's guarantee.
        unsafe { &*p.cast::<O>() }.sg()
    }

    /// # Safety
    ///
    /// `p` points to a valid `O`, not used after this.
    unsafe fn drop(p: *mut Inline) {
        // SAFETY: The caller's guarantee.
        unsafe { core::ptr::drop_in_place(p.cast::<O>()) }
    }
}

impl Lender {
    /// Keeps `owner` for a region to lend its pages from, allocating (with `flags`) only if
    /// it does not fit in place. Any context with `GFP_ATOMIC`.
    ///
    /// # Errors
    ///
    /// `-ENOMEM` if it needs a box and there is no memory; `owner` is dropped then.
    pub fn new<O: SgOwner>(owner: O, flags: crate::alloc::Flags) -> Result<Lender> {
        if size_of::<O>() > size_of::<Inline>() || align_of::<O>() > align_of::<Inline>() {
            return Ok(Lender(Kept::Boxed(KBox::new(owner, flags)?)));
        }
        let mut value: Inline = [MaybeUninit::uninit(); 2];
        // SAFETY: `value` is valid for a write of an `O`, which is no larger and no more
        // aligned (checked above).
        unsafe { (&raw mut value).cast::<O>().write(owner) };
        // INVARIANT: `value` holds the `O` just written; `vtable` is `O`'s.
        Ok(Lender(Kept::Inline {
            value,
            vtable: &VTableOf::<O>::VTABLE,
        }))
    }

    /// The owner's scatterlist and its number of entries ([`SgOwner::sg`]).
    pub(crate) fn sg(&self) -> (*mut bindings::scatterlist, usize) {
        match &self.0 {
            // SAFETY: `value` holds a valid owner of the type `vtable` is for (type invariant).
            Kept::Inline { value, vtable } => unsafe { (vtable.sg)(value) },
            Kept::Boxed(owner) => owner.sg(),
        }
    }
}

impl Drop for Lender {
    fn drop(&mut self) {
        if let Kept::Inline { value, vtable } = &mut self.0 {
            // SAFETY: `value` holds a valid owner of the type `vtable` is for, not dropped yet
            // (type invariant), and not used after this: the `Lender` is going.
            unsafe { (vtable.drop)(value) };
        }
    }
}
