// SPDX-License-Identifier: GPL-2.0

//! Consumer unload: the module notifier of `rkdapl_notify.c` calls [`rkdapl_owner_gone`] when
//! a module goes away, to free what a consumer of that name left open. Not part of the
//! consumer API.

use kernel::prelude::*;

/// A module is going away (`MODULE_STATE_GOING`): frees whatever a consumer of that name left
/// open. Process context; sleeps.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string readable for the call (the going module's name,
/// as the module notifier passes it).
#[no_mangle]
pub(crate) unsafe extern "C" fn rkdapl_owner_gone(name: *const c_char) {
    if name.is_null() {
        return;
    }
    // SAFETY: `name` is not NULL (checked), so it is a NUL-terminated string readable for the
    // call (this function's `# Safety`).
    let name = unsafe { CStr::from_char_ptr(name) };
    super::removal::owner_gone(name);
}

extern "C" {
    fn rkdapl_module_notifier_register() -> c_int;
    fn rkdapl_module_notifier_unregister();
}

/// While it exists, consumer modules going away are noticed (`rkdapl_owner_gone`).
pub(crate) struct ConsumerWatch(());

impl ConsumerWatch {
    /// Registers the module notifier (module init).
    ///
    /// # Errors
    ///
    /// The error of `register_module_notifier`.
    pub(crate) fn new() -> Result<ConsumerWatch> {
        // SAFETY: Called once from module init; the notifier block is static in
        // rkdapl_notify.c and unregistered by `drop`.
        kernel::error::to_result(unsafe { rkdapl_module_notifier_register() })?;
        Ok(ConsumerWatch(()))
    }
}

impl Drop for ConsumerWatch {
    fn drop(&mut self) {
        // SAFETY: Registered by `new`.
        unsafe { rkdapl_module_notifier_unregister() }
    }
}
