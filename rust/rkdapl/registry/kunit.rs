// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rkdapl_registry`: an IA's registry of children ([`Children`]) without a
//! device. Children with a [`RegSlot`] (as LMRs and RMRs have) are added and removed under a
//! spinlock with interrupts off, so that a sleep there splats on a kernel with
//! `CONFIG_DEBUG_ATOMIC_SLEEP`; every removal keeps the others findable at the index their slot
//! says; a snapshot finds every child; a dead registry refuses all but EVDs; a closed one
//! delists its IA once, when the last child leaves, and refuses children from then on.

use kernel::prelude::kunit_tests;

#[kunit_tests(rkdapl_registry)]
mod tests {
    use super::super::{Child, Children, Rank, RegSlot};
    use core::sync::atomic::{AtomicU32, Ordering};
    use kernel::{
        new_spinlock_irq,
        prelude::*,
        sync::{Arc, SpinLockIrq},
    };

    /// A child of kind `rank`, with a slot or not.
    struct Kid {
        rank: Rank,
        reg: Option<RegSlot>,
    }

    impl Child for Kid {
        fn rank(&self) -> Rank {
            self.rank
        }

        fn release(&self) {}

        fn slot(&self) -> Option<&RegSlot> {
            self.reg.as_ref()
        }
    }

    fn kid(rank: Rank, slotted: bool) -> Result<Arc<Kid>> {
        Ok(Arc::new(
            Kid {
                rank,
                reg: slotted.then(RegSlot::new),
            },
            GFP_KERNEL,
        )?)
    }

    /// How often `delist` ran (each case uses its own registry, and cases run one at a
    /// time).
    static DELISTED: AtomicU32 = AtomicU32::new(0);

    fn delist(_: &Children) -> Option<Arc<dyn Send + Sync>> {
        DELISTED.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// Whether every child with a slot sits where its slot says.
    fn placed_right(c: &Children) -> bool {
        let s = c.set.lock();
        s.v.iter().enumerate().all(|(i, e)| {
            e.child.slot().is_none_or(|r| r.get() == i)
        })
    }

    fn count(c: &Children) -> Result<usize> {
        let mut v = KVec::new();
        c.snapshot(&mut v)?;
        Ok(v.len())
    }

    #[test]
    fn slotted_children_come_and_go_in_atomic_context() -> Result {
        let c = Children::new(delist)?;
        let lock: Pin<KBox<SpinLockIrq<()>>> =
            KBox::pin_init(new_spinlock_irq!((), "rkdapl_registry_test"), GFP_KERNEL)?;
        // Long-lived ones without a slot first, as an IA's PZ and EP are.
        let old = [kid(Rank::Pz, false)?, kid(Rank::Ep, false)?];
        for k in old.iter() {
            c.add(k.clone(), None)?;
        }
        let mut kids = KVec::new();
        for i in 0..100 {
            let rank = if i % 2 == 0 { Rank::Lmr } else { Rank::Rmr };
            kids.push(kid(rank, true)?, GFP_KERNEL)?;
        }
        {
            // Per I/O: interrupts off, nothing may sleep (the registry grows with GFP_ATOMIC).
            let _g = lock.lock();
            for k in kids.iter() {
                c.add_gfp(k.clone(), None, GFP_ATOMIC)?;
            }
        }
        assert!(placed_right(&c));
        assert_eq!(count(&c)?, 102);
        {
            let _g = lock.lock();
            // Every third, from the front: each removal moves the last entry into the hole.
            for k in kids.iter().step_by(3) {
                c.remove(&**k);
            }
            // Gone already: nothing happens.
            c.remove(&*kids[0]);
        }
        assert!(placed_right(&c));
        assert_eq!(count(&c)?, 102 - 34);
        for k in kids.iter().step_by(3) {
            assert_eq!(k.reg.as_ref().map(|r| r.get()), Some(RegSlot::NONE));
        }
        // The others are still found: removing all of them empties the registry but for the
        // long-lived two, which a search finds.
        {
            let _g = lock.lock();
            for (i, k) in kids.iter().enumerate() {
                if i % 3 != 0 {
                    c.remove(&**k);
                }
            }
        }
        assert_eq!(count(&c)?, 2);
        for k in old.iter() {
            c.remove(&**k);
        }
        assert_eq!(count(&c)?, 0);
        Ok(())
    }

    #[test]
    fn a_dead_registry_takes_only_evds() -> Result {
        let c = Children::new(delist)?;
        c.kill();
        assert_eq!(c.add(kid(Rank::Lmr, true)?, None), Err(ENODEV));
        assert_eq!(c.add(kid(Rank::Pz, false)?, None), Err(ENODEV));
        let e = kid(Rank::Evd, false)?;
        c.add(e.clone(), None)?;
        assert_eq!(count(&c)?, 1);
        c.remove(&*e);
        assert_eq!(count(&c)?, 0);
        Ok(())
    }

    #[test]
    fn a_closed_registry_delists_once_with_its_last_child() -> Result {
        DELISTED.store(0, Ordering::Relaxed);
        let c = Children::new(delist)?;
        let (a, b) = (kid(Rank::Lmr, true)?, kid(Rank::Pz, false)?);
        c.add(a.clone(), None)?;
        c.add(b.clone(), None)?;
        c.close();
        assert_eq!(DELISTED.load(Ordering::Relaxed), 0);
        c.remove(&*a);
        assert_eq!(DELISTED.load(Ordering::Relaxed), 0);
        c.remove(&*b);
        assert_eq!(DELISTED.load(Ordering::Relaxed), 1);
        // Closed and delisted: no child any more, and no second delisting.
        assert_eq!(c.add(kid(Rank::Lmr, true)?, None), Err(EINVAL));
        c.close();
        c.remove(&*b);
        assert_eq!(DELISTED.load(Ordering::Relaxed), 1);
        // Closed while empty: delisted at once.
        let c = Children::new(delist)?;
        c.close();
        assert_eq!(DELISTED.load(Ordering::Relaxed), 2);
        Ok(())
    }
}
