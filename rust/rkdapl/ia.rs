// SPDX-License-Identifier: GPL-2.0

//! IA: interface adapter (DAT 2.0 section 6.1), an open RDMA device, and the list of devices
//! rkdapl knows through its ib_client.

use kernel::{
    prelude::*,
    rdma::device::{Device, DeviceAttrs},
    sync::{aref::ARef, Arc},
};

kernel::sync::global_lock! {
    // SAFETY: Initialized in `devices_init`, first thing in module init.
    unsafe(uninit) static DEVICES: Mutex<KVec<ARef<Device>>> = KVec::new();
}

/// Must be called once, from module init, before the ib_client is registered.
pub(crate) fn devices_init() {
    // SAFETY: Called exactly once, before anything uses `DEVICES`.
    unsafe { DEVICES.init() };
}

/// ib_client `add`: remember the device so an IA can be opened on it.
pub(crate) fn device_added(dev: &Device) -> Result {
    let mut list = DEVICES.lock();
    list.push(dev.into(), GFP_KERNEL)?;
    pr_info!(
        "rkdapl: device {} added\n",
        dev.name().to_str().unwrap_or("?")
    );
    Ok(())
}

/// ib_client `remove`: forget the device.
pub(crate) fn device_removed(dev: &Device) {
    let mut list = DEVICES.lock();
    list.retain(|d| d.as_raw() != dev.as_raw());
    if list.is_empty() {
        // The list is a static: give its memory back now, there is no destructor to do it
        // at module unload.
        *list = KVec::new();
    }
    pr_info!(
        "rkdapl: device {} removed\n",
        dev.name().to_str().unwrap_or("?")
    );
}

/// An open interface adapter.
pub(crate) struct Ia {
    pub(crate) dev: ARef<Device>,
}

impl Ia {
    /// Opens the RDMA device called `name` (for example `rxe0`). May sleep.
    ///
    /// # Errors
    ///
    /// `-ENODEV` if no such device is registered.
    pub(crate) fn open(name: &CStr) -> Result<Arc<Ia>> {
        let list = DEVICES.lock();
        let dev = list
            .iter()
            .find(|d| d.name() == name)
            .ok_or(ENODEV)?
            .clone();
        drop(list);
        Ok(Arc::new(Ia { dev }, GFP_KERNEL)?)
    }

    /// The device's limits.
    pub(crate) fn attrs(&self) -> DeviceAttrs {
        self.dev.attrs()
    }
}
