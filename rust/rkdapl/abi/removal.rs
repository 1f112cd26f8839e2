// SPDX-License-Identifier: GPL-2.0

//! Consumer unload, the C ABI's part: the handles a departed C consumer left.
//!
//! [`crate::removal::owner_gone`] finds what the consumer left open through the IAs'
//! registries, revokes it and frees it; what is left here is to end the handles that still
//! name those objects (so that the references they own go, and with the last one the objects).
//! Which objects go is the registries' answer: the handle table is only searched for their
//! handles.

use crate::{
    abi::handle::{Handled, Handles, Kind},
    ep::Ep,
    evd::Evd,
    ia::Ia,
    lmr::Lmr,
    psp::{Cr, Psp},
    pz::Pz,
    removal::{self, Objects},
    rmr::Rmr,
};
use kernel::{prelude::*, sync::Arc};

/// Ends the handle `h` of a `T` if its object is one of `gone`. Process context; sleeps.
fn end_if<T: Handled>(h: usize, gone: &Objects) -> bool {
    let h = h as *const c_void;
    if Handles::with(h, |o: &Arc<T>| gone.holds::<T>(o)).unwrap_or(false) {
        return Handles::remove::<T>(h).is_ok();
    }
    false
}

/// Frees whatever the consumer module `name` left open. Process context (module notifier,
/// after the module's exit function); sleeps.
pub(crate) fn owner_gone(name: &CStr) {
    let Some(gone) = removal::owner_gone(name) else {
        return;
    };
    let left = gone.summary();
    // The objects go with their last reference: a handle's or `gone`'s.
    let mut ended = 0usize;
    match Handles::snapshot() {
        Ok(handles) => {
            for &(h, kind) in handles.iter() {
                let done = match kind {
                    Kind::Ep => end_if::<Ep>(h, &gone),
                    Kind::Cr => end_if::<Cr>(h, &gone),
                    Kind::Psp => end_if::<Psp>(h, &gone),
                    Kind::Rmr => end_if::<Rmr>(h, &gone),
                    Kind::Lmr => end_if::<Lmr>(h, &gone),
                    Kind::Evd => end_if::<Evd>(h, &gone),
                    Kind::Pz => end_if::<Pz>(h, &gone),
                    Kind::Ia => end_if::<Ia>(h, &gone),
                    Kind::Srq => end_if::<crate::srq::Srq>(h, &gone),
                };
                ended += usize::from(done);
            }
        }
        Err(_) => pr_err!(
            "{}: out of memory, the handles it left are kept (the objects are revoked)\n",
            name.to_str().unwrap_or("?")
        ),
    }
    drop(gone);
    // The references the ended handles owned go before the module notifier returns.
    Handles::drain();
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
    pr_debug!(
        "{}: {} handle(s) ended\n",
        name.to_str().unwrap_or("?"),
        ended
    );
}
