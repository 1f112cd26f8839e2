// SPDX-License-Identifier: GPL-2.0

//! C entry points of the PZ: create and free.

use super::{handle::Handles, publish_live, Object};
use crate::{ia::Ia, pz::Pz};
use kernel::{error::from_result, prelude::*, sync::Arc};

impl Object for Pz {
    fn unpublished(&self) {
        self.free();
    }
}

/// See `rkdapl_pz_create` in `include/rkdapl.h`.
///
/// # Safety
///
/// `pz` is NULL or valid for a write of a pointer. `ia` may be any value: one that is not a
/// live IA handle is refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_pz_create(ia: *mut c_void, pz: *mut *mut c_void) -> c_int {
    from_result(|| {
        let ia: Arc<Ia> = Handles::get::<Ia>(ia)?;
        // SAFETY: `pz` is NULL or writable (this function's `# Safety`).
        unsafe { publish_live(&ia, pz, |dev| Pz::new(ia.clone(), dev)) }?;
        Ok(0)
    })
}

/// See `rkdapl_pz_free` in `include/rkdapl.h`.
///
/// # Safety
///
/// None beyond the C prototype: `pz` may be any value; one that is not a live PZ handle is
/// refused with `-EINVAL`.
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_pz_free(pz: *mut c_void) -> c_int {
    from_result(|| {
        Handles::remove::<Pz>(pz)?.free();
        // The PD goes before this returns, unless an LMR, RMR or EP still open holds the PZ
        // (the EPs freed before held it until their handles' release).
        Handles::drain_unless_in_upcall();
        Ok(0)
    })
}
