// SPDX-License-Identifier: GPL-2.0

//! Revocation: taking rkdapl objects away from a consumer that still holds them.
//!
//! **Device removal.** When ib_core unregisters a device (`rdma link delete`, driver unload, hot
//! unplug), rkdapl's ib_client `remove` callback revokes every rkdapl object on it before
//! returning, as ib_core requires of a client: no verbs object, DMA mapping, CM id or device
//! reference may outlive the callback. The consumer's objects stay valid: frees still work and
//! everything else returns `-ENODEV` (or `-ENOTCONN` for posts). EPs that were connected or
//! connecting report `RKDAPL_CONNECTION_EVENT_BROKEN` with status `-ENODEV`, and every DTO still
//! posted completes with `RKDAPL_DTO_FLUSHED`.
//!
//! **Consumer unload.** When a module goes away (module notifier, `rkdapl_notify.c`), whatever
//! it left open under its name (the owner its IAs were opened for) is revoked the same way and
//! then freed ([`owner_gone`]); the C ABI then drops the handles it left
//! (`abi::removal`).
//!
//! Both find the objects through the list of IAs ([`crate::adapters::all`]) and each IA's registry
//! of children ([`crate::registry`]), whatever made them: C handles or the Rust API. The order
//! follows ib_core's dependencies: first each IA is made dead (no more objects, see
//! [`Ia::live`] and [`Ia::revoke`]); then EPs (drain, CM id and QP, CQs), CRs and PSPs; then
//! RMRs (their MRs), LMRs (their DMA mappings), PZs (their PDs) and at last the IAs' device
//! references.

use crate::rdma::device::Device;
use crate::{
    adapters,
    ia::Ia,
    registry::{Child, Rank},
};
use kernel::{prelude::*, sync::Arc};

/// Objects of some IAs, children in [`Rank::ORDER`].
pub(crate) struct Objects {
    pub(crate) ias: KVec<Arc<Ia>>,
    children: KVec<Arc<dyn Child>>,
}

/// Whether `v` holds `x` (the same object).
fn has(v: &[Arc<dyn Child>], x: &Arc<dyn Child>) -> bool {
    v.iter()
        .any(|y| core::ptr::addr_eq(Arc::as_ptr(x), Arc::as_ptr(y)))
}

impl Objects {
    /// The IAs for which `pick` is true. May sleep.
    fn ias(pick: impl Fn(&Ia) -> bool) -> Result<KVec<Arc<Ia>>> {
        let mut ias = adapters::all()?;
        ias.retain(|ia| pick(ia));
        Ok(ias)
    }

    /// The children of `ias`, which were made dead ([`Ia::revoke`]) so that no child with
    /// device resources can be added, and the objects they keep alive that were freed
    /// already. May sleep.
    fn collect(ias: KVec<Arc<Ia>>) -> Result<Objects> {
        let mut children = KVec::new();
        for ia in ias.iter() {
            ia.children.snapshot(&mut children)?;
        }
        // Objects freed by the consumer but kept by others (a PZ by its LMRs) still hold device
        // resources. Parents are added at the end, so they are looked at too.
        let mut i = 0;
        while i < children.len() {
            if let Some(p) = children[i].parent() {
                if !has(&children, &p) {
                    children.push(p, GFP_KERNEL)?;
                }
            }
            i += 1;
        }
        // In revocation order (no slice sort: core's pulls in panicking paths).
        let mut sorted = KVec::with_capacity(children.len(), GFP_KERNEL)?;
        for r in Rank::ORDER {
            for c in children.iter().filter(|c| c.rank() == r) {
                sorted.push(c.clone(), GFP_KERNEL)?;
            }
        }
        Ok(Objects {
            ias,
            children: sorted,
        })
    }

    /// Revokes every child, in ib_core's order (their IAs are dead already); `broken`: EPs
    /// report BROKEN first. Process context; sleeps.
    fn revoke(&self, broken: bool) {
        if broken {
            // All first, so that no EP sees its peer's disconnect instead.
            for c in self.children.iter() {
                c.mark_broken();
            }
        }
        for c in self.children.iter() {
            c.revoke();
        }
    }

    /// How many IAs, EPs, PSPs, CRs, RMRs, LMRs, PZs and EVDs.
    pub(crate) fn summary(&self) -> [usize; 8] {
        let n = |r: Rank| self.children.iter().filter(|c| c.rank() == r).count();
        [
            self.ias.len(),
            n(Rank::Ep),
            n(Rank::Psp),
            n(Rank::Cr),
            n(Rank::Rmr),
            n(Rank::Lmr),
            n(Rank::Pz),
            n(Rank::Evd),
        ]
    }

    /// Whether `x` is one of these objects (an IA or a child).
    pub(crate) fn holds<T>(&self, x: &T) -> bool {
        self.ias
            .iter()
            .any(|ia| core::ptr::addr_eq(Arc::as_ptr(ia), x))
            || self
                .children
                .iter()
                .any(|c| core::ptr::addr_eq(Arc::as_ptr(c), x))
    }
}

/// Makes `ias` dead. Process context; sleeps.
fn kill(ias: &[Arc<Ia>]) {
    for ia in ias.iter() {
        ia.revoke();
    }
}

/// ib_client `remove`: forgets the device, then revokes every object on it; ib_core waits for
/// this before it lets the device go. Process context; sleeps.
pub(crate) fn device_removed(dev: &Device) {
    adapters::forget_device(dev);
    revoke_device(dev);
    pr_info!("device {} removed\n", dev.name().to_str().unwrap_or("?"));
}

/// Revokes every object on `dev`. Process context (ib_client `remove`); sleeps.
fn revoke_device(dev: &Device) {
    let ias = match Objects::ias(|ia| ia.is_on(dev)) {
        Ok(ias) => ias,
        Err(_) => {
            pr_err!(
                "device {}: removal: out of memory, objects on the device are not revoked\n",
                dev.name().to_str().unwrap_or("?")
            );
            return;
        }
    };
    if ias.is_empty() {
        return;
    }
    // The consumer hears of the removal first, on its IA's async EVD.
    for ia in ias.iter() {
        ia.report_catastrophic();
    }
    // No new objects, connections or grants from here on; calls in progress have finished.
    kill(&ias);
    let o = match Objects::collect(ias) {
        Ok(o) => o,
        Err(_) => {
            pr_err!(
                "device {}: removal: out of memory, objects on the device are not revoked\n",
                dev.name().to_str().unwrap_or("?")
            );
            return;
        }
    };
    o.revoke(true);
    let [ias, eps, psps, crs, rmrs, lmrs, pzs, _] = o.summary();
    pr_info!(
        "device {}: revoked {} IA(s), {} EP(s), {} PSP(s), {} CR(s), {} RMR(s), {} LMR(s), {} PZ(s)\n",
        dev.name().to_str().unwrap_or("?"),
        ias,
        eps,
        psps,
        crs,
        rmrs,
        lmrs,
        pzs
    );
    drop(o);
}

/// The consumer module `name` went away: revokes and frees every object it left open (its IAs
/// are closed, their children freed), and returns them so that the caller can drop the
/// consumer's handles to them (`abi::removal`); `None` if it left nothing. Process context
/// (module notifier, after the module's exit function); sleeps.
pub(crate) fn owner_gone(name: &CStr) -> Option<Objects> {
    let gone = Objects::ias(|ia| *ia.owner == *name).and_then(|ias| {
        kill(&ias);
        Objects::collect(ias)
    });
    let Ok(o) = gone else {
        pr_err!(
            "{}: out of memory, the objects it left open are kept\n",
            name.to_str().unwrap_or("?")
        );
        return None;
    };
    if o.ias.is_empty() {
        return None;
    }
    // The module's code and the upcalls' contexts are going: no upcall from here on.
    for c in o.children.iter() {
        c.silence();
    }
    o.revoke(false);
    // Children first (in rank order), then the IAs, which leave the list with their last child.
    for c in o.children.iter() {
        c.release();
    }
    for ia in o.ias.iter() {
        ia.close();
    }
    Some(o)
}
