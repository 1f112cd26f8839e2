// SPDX-License-Identifier: GPL-2.0

//! Device removal: when ib_core unregisters a device (`rdma link delete`, driver unload, hot
//! unplug), rkdapl's ib_client `remove` callback revokes every rkdapl object on it before
//! returning, as ib_core requires of a client: no verbs object, DMA mapping, CM id or device
//! reference may outlive the callback.
//!
//! Revocation keeps the consumer's handles valid: frees still work and everything else returns
//! `-ENODEV` (or `-ENOTCONN` for posts). EPs that were connected or connecting report
//! `RKDAPL_CONNECTION_EVENT_BROKEN` with status `-ENODEV`, and every DTO still posted completes
//! with `RKDAPL_DTO_FLUSHED`. The order follows ib_core's dependencies: first each IA is made
//! dead (no more objects, see [`Ia::live`]); then EPs (drain, CM id and QP, CQs), CRs and
//! PSPs; then RMRs (their MRs), LMRs (their DMA mappings), PZs (their PDs) and at last the
//! IAs' device references.

use crate::{
    abi::handle::{Handles, Kind},
    ep::Ep,
    ia::Ia,
    lmr::Lmr,
    psp::{Cr, Psp},
    pz::Pz,
    rmr::Rmr,
};
use kernel::{prelude::*, rdma::device::Device, sync::Arc};

/// Adds `x` to `v` unless it is there already (by address). Allocation failures are ignored:
/// an object is then revoked through its handle only.
fn add_unique<T>(v: &mut KVec<Arc<T>>, x: &Arc<T>) {
    if !v.iter().any(|y| Arc::ptr_eq(x, y)) {
        let _ = v.push(x.clone(), GFP_KERNEL);
    }
}

fn get<T>(addr: usize, kind: Kind) -> Option<Arc<T>> {
    Handles::get::<T>(addr as *const c_void, kind).ok()
}

/// Revokes every object on `dev`. Process context (ib_client `remove`); sleeps.
pub(crate) fn revoke_device(dev: &Device) {
    let handles = match Handles::snapshot() {
        Ok(h) => h,
        Err(_) => {
            pr_err!("device removal: out of memory, objects on the device are not revoked\n");
            return;
        }
    };
    let mut ias: KVec<Arc<Ia>> = KVec::new();
    let mut pzs: KVec<Arc<Pz>> = KVec::new();
    let mut eps: KVec<Arc<Ep>> = KVec::new();
    let mut psps: KVec<Arc<Psp>> = KVec::new();
    let mut crs: KVec<Arc<Cr>> = KVec::new();
    let mut rmrs: KVec<Arc<Rmr>> = KVec::new();
    let mut lmrs: KVec<Arc<Lmr>> = KVec::new();
    for &(addr, kind) in handles.iter() {
        match kind {
            Kind::Ia => {
                if let Some(ia) = get::<Ia>(addr, kind) {
                    add_unique(&mut ias, &ia);
                }
            }
            Kind::Pz => {
                if let Some(pz) = get::<Pz>(addr, kind) {
                    add_unique(&mut pzs, &pz);
                }
            }
            Kind::Lmr => {
                if let Some(l) = get::<Lmr>(addr, kind) {
                    add_unique(&mut pzs, &l.pz);
                    add_unique(&mut lmrs, &l);
                }
            }
            Kind::Rmr => {
                if let Some(r) = get::<Rmr>(addr, kind) {
                    add_unique(&mut pzs, &r.pz);
                    add_unique(&mut rmrs, &r);
                }
            }
            Kind::Ep => {
                if let Some(e) = get::<Ep>(addr, kind) {
                    add_unique(&mut pzs, &e.pz);
                    add_unique(&mut eps, &e);
                }
            }
            Kind::Psp => {
                if let Some(p) = get::<Psp>(addr, kind) {
                    add_unique(&mut ias, &p.ia);
                    add_unique(&mut psps, &p);
                }
            }
            Kind::Cr => {
                if let Some(c) = get::<Cr>(addr, kind) {
                    add_unique(&mut ias, &c.psp.ia);
                    add_unique(&mut crs, &c);
                }
            }
            Kind::Evd => {}
        }
    }
    drop(handles);
    // IAs that were closed but still have objects are reached through their PZs.
    for pz in pzs.iter() {
        add_unique(&mut ias, &pz.ia);
    }
    // Only what lives on `dev`; an IA's identity is compared while it still holds the device.
    ias.retain(|ia| ia.is_on(dev));
    let on = |ia: &Arc<Ia>| ias.iter().any(|x| Arc::ptr_eq(x, ia));
    pzs.retain(|pz| on(&pz.ia));
    eps.retain(|e| on(&e.ia));
    psps.retain(|p| on(&p.ia));
    crs.retain(|c| on(&c.psp.ia));
    rmrs.retain(|r| on(&r.pz.ia));
    lmrs.retain(|l| on(&l.pz.ia));
    if ias.is_empty() {
        return;
    }

    // No new objects, connections or grants from here on; calls in progress have finished.
    let mut devs = KVec::new();
    for ia in ias.iter() {
        if let Some(d) = ia.revoke() {
            let _ = devs.push(d, GFP_KERNEL);
        }
    }
    for e in eps.iter() {
        e.mark_broken();
    }
    for e in eps.iter() {
        e.revoke();
    }
    for c in crs.iter() {
        c.revoke();
    }
    for p in psps.iter() {
        p.shutdown();
    }
    for r in rmrs.iter() {
        r.revoke();
    }
    for l in lmrs.iter() {
        l.revoke();
    }
    for pz in pzs.iter() {
        pz.revoke();
    }
    pr_info!(
        "device {}: revoked {} IA(s), {} EP(s), {} PSP(s), {} CR(s), {} RMR(s), {} LMR(s), {} PZ(s)\n",
        dev.name().to_str().unwrap_or("?"),
        ias.len(),
        eps.len(),
        psps.len(),
        crs.len(),
        rmrs.len(),
        lmrs.len(),
        pzs.len()
    );
    drop(devs);
}
