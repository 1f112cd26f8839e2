// SPDX-License-Identifier: GPL-2.0

//! A list with room for `N` items in place and a vector for more: the per-DTO lists of a
//! chain (its segment lists, DTOs, prepared contexts and work requests), so that a chain of up
//! to [`CHAIN_IN_PLACE`] DTOs posts without an allocation, as `ib_post_send()` with a caller's
//! list does. A longer chain moves its items to a vector allocated with the caller's flags
//! (`GFP_ATOMIC` on the post path).
//!
//! The items live on the caller's stack: for `CHAIN_IN_PLACE` DTOs the lists of one post call
//! take about 2.5 KiB there (`make bench`'s `batch=8`).

use core::mem::MaybeUninit;
use kernel::{alloc::Flags, prelude::*};

/// DTOs of a chain whose lists stay in place: `batch=8` of `make bench`, and the chains of
/// a storage server (data and response).
pub(crate) const CHAIN_IN_PLACE: usize = 8;

/// Up to `N` items in place, more in a vector.
///
/// # Invariants
///
/// If `more` has no capacity, the items are `inline[..len]`, initialised, and `len <= N`;
/// otherwise they are `more`'s and `len` is 0.
pub(crate) struct InlineVec<T, const N: usize> {
    len: usize,
    inline: [MaybeUninit<T>; N],
    more: KVec<T>,
}

impl<T, const N: usize> InlineVec<T, N> {
    /// An empty list; allocates nothing.
    pub(crate) fn new() -> Self {
        // INVARIANT: No capacity and no item in place.
        InlineVec {
            len: 0,
            inline: [const { MaybeUninit::uninit() }; N],
            more: KVec::new(),
        }
    }

    fn spilled(&self) -> bool {
        self.more.capacity() > 0
    }

    /// Makes room for `n` items in all, so that pushing them into the empty list does not
    /// allocate nor fail: in place for `n <= N`.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`; the list is then unchanged.
    pub(crate) fn reserve(&mut self, n: usize, flags: Flags) -> Result {
        if n > N && !self.spilled() && self.len == 0 {
            // INVARIANT: Capacity from now on, no item in place.
            self.more = KVec::with_capacity(n, flags)?;
        }
        Ok(())
    }

    /// Appends `v`; allocates only when the items no longer fit in place.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`: the list keeps what it held and `v` is dropped.
    #[inline(always)]
    pub(crate) fn push(&mut self, v: T, flags: Flags) -> Result {
        if self.spilled() {
            return Ok(self.more.push(v, flags)?);
        }
        if let Some(slot) = self.inline.get_mut(self.len) {
            slot.write(v);
            // INVARIANT: `inline[..len + 1]` is initialised now.
            self.len += 1;
            return Ok(());
        }
        self.spill(v, flags)
    }

    /// Moves the `N` items in place and `v` to a new vector.
    #[cold]
    fn spill(&mut self, v: T, flags: Flags) -> Result {
        let mut more = KVec::with_capacity(2 * N.max(1), flags)?;
        let n = core::mem::replace(&mut self.len, 0);
        for slot in self.inline.iter().take(n) {
            // SAFETY: `inline[..n]` was initialised (type invariant) and `len` is 0 now, so
            // each item is read out once and never dropped in place.
            let item = unsafe { slot.assume_init_read() };
            // Cannot fail: the capacity is `2 * N` and at most `N` items are pushed here.
            let _ = more.push_within_capacity(item);
        }
        let _ = more.push_within_capacity(v);
        // INVARIANT: The items are `more`'s, which has capacity, and `len` is 0.
        self.more = more;
        Ok(())
    }

    /// Number of items.
    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub(crate) fn as_slice(&self) -> &[T] {
        if self.spilled() {
            return &self.more;
        }
        let init = self.inline.get(..self.len).unwrap_or(&[]);
        // SAFETY: `inline[..len]` is initialised (type invariant), and `MaybeUninit<T>` has
        // the layout of `T`.
        unsafe { &*(init as *const [MaybeUninit<T>] as *const [T]) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        if self.spilled() {
            return &mut self.more;
        }
        let len = self.len;
        let init = self.inline.get_mut(..len).unwrap_or(&mut []);
        // SAFETY: As in `as_slice`, and the borrow of `self` is unique.
        unsafe { &mut *(init as *mut [MaybeUninit<T>] as *mut [T]) }
    }
}

impl<T, const N: usize> Drop for InlineVec<T, N> {
    fn drop(&mut self) {
        let items: *mut [T] = self.as_mut_slice();
        if !self.spilled() {
            // SAFETY: The items in place are initialised (type invariant) and dropped once,
            // here; `more` drops its own.
            unsafe { core::ptr::drop_in_place(items) };
        }
    }
}

#[kunit_tests(rkdapl_inline_vec)]
mod tests {
    use super::*;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use kernel::sync::Arc;

    #[test]
    fn items_stay_in_place_up_to_n_then_move_in_order() -> Result {
        let mut v = InlineVec::<u32, 3>::new();
        for i in 0..3 {
            v.push(i, GFP_KERNEL)?;
        }
        assert!(!v.spilled());
        assert_eq!(v.as_slice(), &[0, 1, 2]);
        v.push(3, GFP_KERNEL)?;
        assert!(v.spilled());
        assert_eq!(v.as_slice(), &[0, 1, 2, 3]);
        v.as_mut_slice()[0] = 9;
        assert_eq!(v.len(), 4);
        assert_eq!(v.as_slice(), &[9, 1, 2, 3]);
        Ok(())
    }

    #[test]
    fn reserve_beyond_n_allocates_once_up_front() -> Result {
        let mut v = InlineVec::<u32, 2>::new();
        v.reserve(2, GFP_KERNEL)?;
        assert!(!v.spilled());
        v.reserve(5, GFP_KERNEL)?;
        assert!(v.spilled());
        for i in 0..5 {
            v.push(i, GFP_KERNEL)?;
        }
        assert_eq!(v.as_slice(), &[0, 1, 2, 3, 4]);
        Ok(())
    }

    #[test]
    fn every_item_is_dropped_once_in_place_or_moved() -> Result {
        let drops = Arc::new(AtomicUsize::new(0), GFP_KERNEL)?;
        struct D(Arc<AtomicUsize>);
        impl Drop for D {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        {
            let mut v = InlineVec::<D, 2>::new();
            v.push(D(drops.clone()), GFP_KERNEL)?;
            v.push(D(drops.clone()), GFP_KERNEL)?;
        }
        assert_eq!(drops.load(Ordering::Relaxed), 2);
        {
            let mut v = InlineVec::<D, 2>::new();
            for _ in 0..5 {
                v.push(D(drops.clone()), GFP_KERNEL)?;
            }
        }
        assert_eq!(drops.load(Ordering::Relaxed), 7);
        Ok(())
    }
}
