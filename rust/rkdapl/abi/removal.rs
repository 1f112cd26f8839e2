// SPDX-License-Identifier: GPL-2.0

//! Revocation: taking rkdapl objects away from a consumer that still holds their handles.
//!
//! **Device removal.** When ib_core unregisters a device (`rdma link delete`, driver unload, hot
//! unplug), rkdapl's ib_client `remove` callback revokes every rkdapl object on it before
//! returning, as ib_core requires of a client: no verbs object, DMA mapping, CM id or device
//! reference may outlive the callback. The consumer's handles stay valid: frees still work and
//! everything else returns `-ENODEV` (or `-ENOTCONN` for posts). EPs that were connected or
//! connecting report `RKDAPL_CONNECTION_EVENT_BROKEN` with status `-ENODEV`, and every DTO still
//! posted completes with `RKDAPL_DTO_FLUSHED`.
//!
//! **Consumer unload.** When a module goes away (module notifier, `rkdapl_notify.c`), whatever
//! it left open under its name (the owner `rkdapl_ia_open` recorded) is revoked the same way
//! and then freed, handles included: nobody can use them any more.
//!
//! The order follows ib_core's dependencies: first each IA is made dead (no more objects, see
//! [`Ia::live`]); then EPs (drain, CM id and QP, CQs), CRs and PSPs; then RMRs (their MRs),
//! LMRs (their DMA mappings), PZs (their PDs) and at last the IAs' device references.
//!
//! Both walk the C handle table ([`Handles::snapshot`]), which is why this file lives in `abi`.
//! The Rust API's objects are not handles, so neither walk reaches them: a per-IA registry of
//! children, which both walks would use instead of the handle table, closes that (issue 14,
//! part 2).

use crate::{
    abi::handle::{Handled, Handles, Kind},
    ep::Ep,
    evd::Evd,
    ia::Ia,
    lmr::Lmr,
    psp::{Cr, Psp},
    pz::Pz,
    rmr::Rmr,
};
use kernel::{prelude::*, rdma::device::Device, sync::Arc};

/// An object and its C handle (0: reached through a child, no handle left).
type Obj<T> = (usize, Arc<T>);

/// Adds `x` to `v` unless it is there already (by address); a handle given later replaces a 0.
/// Allocation failures are ignored: such an object is then not revoked (logged by the caller's
/// count).
fn add<T>(v: &mut KVec<Obj<T>>, h: usize, x: &Arc<T>) {
    match v.iter_mut().find(|(_, y)| Arc::ptr_eq(x, y)) {
        Some(e) => {
            if e.0 == 0 {
                e.0 = h;
            }
        }
        None => {
            let _ = v.push((h, x.clone()), GFP_KERNEL);
        }
    }
}

fn get<T: Handled>(addr: usize) -> Option<Arc<T>> {
    Handles::get::<T>(addr as *const c_void).ok()
}

/// The objects of some IAs.
#[derive(Default)]
struct Objects {
    ias: KVec<Obj<Ia>>,
    pzs: KVec<Obj<Pz>>,
    eps: KVec<Obj<Ep>>,
    psps: KVec<Obj<Psp>>,
    crs: KVec<Obj<Cr>>,
    rmrs: KVec<Obj<Rmr>>,
    lmrs: KVec<Obj<Lmr>>,
    evds: KVec<Obj<Evd>>,
}

impl Objects {
    /// Every object reachable from a live handle whose IA satisfies `pick` (EVDs: whose owner
    /// satisfies `pick_evd`). May sleep.
    fn collect(pick: impl Fn(&Ia) -> bool, pick_evd: impl Fn(&Evd) -> bool) -> Result<Objects> {
        let handles = Handles::snapshot()?;
        let mut o = Objects::default();
        for &(h, kind) in handles.iter() {
            match kind {
                Kind::Ia => {
                    if let Some(ia) = get::<Ia>(h) {
                        add(&mut o.ias, h, &ia);
                    }
                }
                Kind::Pz => {
                    if let Some(pz) = get::<Pz>(h) {
                        add(&mut o.pzs, h, &pz);
                    }
                }
                Kind::Lmr => {
                    if let Some(l) = get::<Lmr>(h) {
                        add(&mut o.pzs, 0, &l.pz);
                        add(&mut o.lmrs, h, &l);
                    }
                }
                Kind::Rmr => {
                    if let Some(r) = get::<Rmr>(h) {
                        add(&mut o.pzs, 0, &r.pz);
                        add(&mut o.rmrs, h, &r);
                    }
                }
                Kind::Ep => {
                    if let Some(e) = get::<Ep>(h) {
                        add(&mut o.pzs, 0, &e.pz);
                        add(&mut o.eps, h, &e);
                    }
                }
                Kind::Psp => {
                    if let Some(p) = get::<Psp>(h) {
                        add(&mut o.ias, 0, &p.ia);
                        add(&mut o.psps, h, &p);
                    }
                }
                Kind::Cr => {
                    if let Some(c) = get::<Cr>(h) {
                        add(&mut o.ias, 0, &c.psp.ia);
                        add(&mut o.crs, h, &c);
                    }
                }
                Kind::Evd => {
                    if let Some(e) = get::<Evd>(h) {
                        if pick_evd(&e) {
                            add(&mut o.evds, h, &e);
                        }
                    }
                }
            }
        }
        drop(handles);
        // IAs that were closed but still have objects are reached through their PZs.
        for i in 0..o.pzs.len() {
            let ia = o.pzs[i].1.ia.clone();
            add(&mut o.ias, 0, &ia);
        }
        o.ias.retain(|(_, ia)| pick(ia));
        let ias = &o.ias;
        let on = |ia: &Arc<Ia>| ias.iter().any(|(_, x)| Arc::ptr_eq(x, ia));
        o.pzs.retain(|(_, pz)| on(&pz.ia));
        o.eps.retain(|(_, e)| on(&e.ia));
        o.psps.retain(|(_, p)| on(&p.ia));
        o.crs.retain(|(_, c)| on(&c.psp.ia));
        o.rmrs.retain(|(_, r)| on(&r.pz.ia));
        o.lmrs.retain(|(_, l)| on(&l.pz.ia));
        Ok(o)
    }

    /// Revokes everything, in ib_core's order; `broken`: EPs report BROKEN first. Returns the
    /// IAs' device references, to drop last. Process context; sleeps.
    fn revoke(&self, broken: bool) -> KVec<kernel::sync::aref::ARef<Device>> {
        // No new objects, connections or grants from here on; calls in progress have finished.
        let mut devs = KVec::new();
        if broken {
            // The consumer hears of the removal first on its IA's async EVD.
            for (_, ia) in self.ias.iter() {
                ia.report_catastrophic();
            }
        }
        for (_, ia) in self.ias.iter() {
            if let Some(d) = ia.revoke() {
                let _ = devs.push(d, GFP_KERNEL);
            }
        }
        if broken {
            // All first, so that no EP sees its peer's disconnect instead.
            for (_, e) in self.eps.iter() {
                e.mark_broken();
            }
        }
        for (_, e) in self.eps.iter() {
            e.revoke();
        }
        for (_, c) in self.crs.iter() {
            c.revoke();
        }
        for (_, p) in self.psps.iter() {
            p.shutdown();
        }
        for (_, r) in self.rmrs.iter() {
            r.revoke();
        }
        for (_, l) in self.lmrs.iter() {
            l.revoke();
        }
        for (_, pz) in self.pzs.iter() {
            pz.revoke();
        }
        devs
    }

    fn summary(&self) -> [usize; 8] {
        [
            self.ias.len(),
            self.eps.len(),
            self.psps.len(),
            self.crs.len(),
            self.rmrs.len(),
            self.lmrs.len(),
            self.pzs.len(),
            self.evds.len(),
        ]
    }
}

/// ib_client `remove`: forgets the device, then revokes every object on it; ib_core waits for
/// this before it lets the device go. Process context; sleeps.
pub(crate) fn device_removed(dev: &Device) {
    crate::ia::forget_device(dev);
    revoke_device(dev);
    pr_info!("device {} removed\n", dev.name().to_str().unwrap_or("?"));
}

/// Revokes every object on `dev`. Process context (ib_client `remove`); sleeps.
fn revoke_device(dev: &Device) {
    let Ok(o) = Objects::collect(|ia| ia.is_on(dev), |_| false) else {
        pr_err!("device removal: out of memory, objects on the device are not revoked\n");
        return;
    };
    if o.ias.is_empty() {
        return;
    }
    let devs = o.revoke(true);
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
    drop(devs);
}

/// Frees whatever the consumer module `name` left open. Process context (module notifier,
/// after the module's exit function); sleeps.
pub(crate) fn owner_gone(name: &CStr) {
    let Ok(o) = Objects::collect(|ia| ia.owner == name, |e| e.owner == name) else {
        pr_err!("{}: out of memory, the objects it left open are kept\n", name.to_str().unwrap_or("?"));
        return;
    };
    let left = o.summary();
    if left.iter().all(|n| *n == 0) {
        return;
    }
    // The module's code and the upcalls' contexts are going: no upcall from here on.
    for (_, e) in o.evds.iter() {
        e.close();
    }
    let devs = o.revoke(false);
    drop(devs);
    // The handles' references, children first; the objects go with the last reference.
    fn free<T: Handled>(v: &KVec<Obj<T>>) {
        for (h, _) in v.iter() {
            if *h != 0 {
                let _ = Handles::remove::<T>(*h as *const c_void);
            }
        }
    }
    for (_, e) in o.eps.iter() {
        e.teardown();
    }
    free(&o.eps);
    free(&o.crs);
    free(&o.psps);
    free(&o.rmrs);
    free(&o.lmrs);
    free(&o.pzs);
    free(&o.evds);
    free(&o.ias);
    let [ias, eps, psps, crs, rmrs, lmrs, pzs, evds] = left;
    pr_warn!(
        "{} went away with objects open; freed {} IA(s), {} EP(s), {} PSP(s), {} CR(s), {} RMR(s), {} LMR(s), {} PZ(s), {} EVD(s)\n",
        name.to_str().unwrap_or("?"),
        ias,
        eps,
        psps,
        crs,
        rmrs,
        lmrs,
        pzs,
        evds
    );
}
