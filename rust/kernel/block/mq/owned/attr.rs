// SPDX-License-Identifier: GPL-2.0

//! A [`Disk`]'s own files in sysfs: an attribute group of its driver's, in the disk's
//! directory (`/sys/block/<disk>/<file>`), as nvme has `state`, `address`, `transport` and
//! `delete_controller` on its controllers.
//!
//! The group has no name (no directory of its own): `device_remove_file_self()`, which a file
//! that deletes its disk needs, finds only files in the device's own directory.
//!
//! C header: [`include/linux/sysfs.h`](srctree/include/linux/sysfs.h)
//!
//! [`Disk`]: super::Disk

use super::Driver;
use crate::{
    bindings,
    prelude::*,
    str::Formatter,
    sync::{Arc, ArcBorrow},
};
use core::{marker::PhantomData, mem::offset_of};

/// Files of one driver's attribute group at most.
pub const MAX_ATTRIBUTES: usize = 8;

/// One file of a driver's attribute group ([`Driver::ATTRIBUTES`]).
#[derive(Clone, Copy, Debug)]
pub struct Attribute {
    /// The file's name.
    pub name: &'static CStr,
    /// `false`: the file is read (mode 0444) and [`Driver::show`] fills it; `true`: it is
    /// written (mode 0200, root's) and [`Driver::store`] takes what was written.
    pub write: bool,
}

/// The file a [`Driver::store`] call is writing.
///
/// A store that deletes the disk (a `delete` file, as nvme's `delete_controller`) removes the
/// file first ([`AttrFile::remove_self`]): deleting the disk removes its sysfs directory, and
/// that waits for every call on its files to end, this one too.
pub struct AttrFile<'a> {
    dev: *mut bindings::device,
    attr: *const bindings::device_attribute,
    _call: PhantomData<&'a ()>,
}

impl AttrFile<'_> {
    /// Removes the file from sysfs (`device_remove_file_self()`), so that the driver may delete
    /// the disk before the store returns. Process context.
    ///
    /// Returns `false` if the file was being removed by someone else already (the disk is being
    /// deleted): the store must then not delete the disk itself.
    pub fn remove_self(self) -> bool {
        // SAFETY: `dev` and `attr` are the device and attribute of the store call in progress
        // (`store`), which holds them for as long as this token, which it lends to the call,
        // lives.
        unsafe { bindings::device_remove_file_self(self.dev, self.attr) }
    }
}

/// The attribute group of one disk, made from its driver's [`Driver::ATTRIBUTES`]: the
/// attributes, the list of them, the group and the list of groups `device_add_disk()` takes.
///
/// # Invariants
///
/// Boxed and never moved: `ptrs` points into `attrs`, `group.attrs` to `ptrs`, `groups[0]` to
/// `group`. It outlives the disk's sysfs directory (`Disk` drops it after `del_gendisk()`).
pub(super) struct Table {
    attrs: [bindings::device_attribute; MAX_ATTRIBUTES],
    ptrs: [*mut bindings::attribute; MAX_ATTRIBUTES + 1],
    group: bindings::attribute_group,
    groups: [*const bindings::attribute_group; 2],
}

impl Table {
    /// The group of `D`'s attributes; `None` if it has none. Process context.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(super) fn new<D: Driver>() -> Result<Option<KBox<Table>>> {
        const { assert!(D::ATTRIBUTES.len() <= MAX_ATTRIBUTES) };
        if D::ATTRIBUTES.is_empty() {
            return Ok(None);
        }
        // SAFETY: all-zero is a valid value of each part: no attribute, null pointers.
        let zeroed = unsafe { core::mem::zeroed::<Table>() };
        let mut t = KBox::new(zeroed, GFP_KERNEL)?;
        let t_ref = &mut *t;
        for (i, a) in D::ATTRIBUTES.iter().enumerate() {
            let da = &mut t_ref.attrs[i];
            da.attr.name = a.name.as_char_ptr();
            if a.write {
                da.attr.mode = 0o200;
                da.__bindgen_anon_2.store = Some(store::<D>);
            } else {
                da.attr.mode = 0o444;
                da.__bindgen_anon_1.show = Some(show::<D>);
            }
            // What `sysfs_attr_init()` does for an attribute outside static memory: one class
            // for every such file.
            #[cfg(CONFIG_DEBUG_LOCK_ALLOC)]
            {
                da.attr.key = crate::static_lock_class!().as_ptr();
            }
            t_ref.ptrs[i] = &raw mut da.attr;
        }
        // No name: the files are in the disk's directory (see the module's documentation).
        t_ref.group.__bindgen_anon_2.attrs = t_ref.ptrs.as_mut_ptr();
        t_ref.groups[0] = &raw const t_ref.group;
        Ok(Some(t))
    }

    /// The null-terminated list of groups for `device_add_disk()`.
    pub(super) fn groups(&mut self) -> *mut *const bindings::attribute_group {
        self.groups.as_mut_ptr()
    }
}

/// The driver of the disk whose device is `dev`, and the index in [`Driver::ATTRIBUTES`] of
/// the file `attr`; `None` if `attr` is none of them.
///
/// # Safety
///
/// `dev` is the device of a [`super::Disk`] of `D` (its `part0`'s), with a sysfs call on it in
/// progress (which keeps the disk and its driver during the call), and `attr` one of its
/// group's attributes.
unsafe fn lookup<D: Driver>(
    dev: *mut bindings::device,
    attr: *const bindings::device_attribute,
) -> Option<(Arc<D>, usize)> {
    // SAFETY: by the function's safety requirements `dev` is the `bd_device` of the disk's
    // `part0`, a `block_device`, whose disk's queue has the `D` as `queuedata`; `attr` is ours,
    // named by a `CStr` of `D::ATTRIBUTES`.
    let (data, name) = unsafe {
        let bdev = dev
            .byte_sub(offset_of!(bindings::block_device, bd_device))
            .cast::<bindings::block_device>();
        let disk = (*bdev).bd_disk;
        (
            (*(*disk).queue).queuedata.cast::<D>().cast_const(),
            CStr::from_char_ptr((*attr).attr.name),
        )
    };
    let index = D::ATTRIBUTES
        .iter()
        .position(|a| a.name.to_bytes() == name.to_bytes())?;
    // SAFETY: `queuedata` is the data pointer of the `Arc<D>` the `Disk` holds until the disk
    // is deleted, which waits for this call; the new reference keeps `D` after that, should
    // the call delete the disk (`AttrFile::remove_self`).
    let driver = Arc::from(unsafe { ArcBorrow::from_raw(data) });
    Some((driver, index))
}

/// `show` of a read file of a disk of `D`.
///
/// # Safety
///
/// Called by sysfs for a file of a [`Table`] of `D` on a disk's device, with a buffer of
/// `PAGE_SIZE` bytes.
unsafe extern "C" fn show<D: Driver>(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *mut crate::ffi::c_char,
) -> isize {
    // SAFETY: by the function's safety requirements.
    let Some((driver, index)) = (unsafe { lookup::<D>(dev, attr) }) else {
        return EINVAL.to_errno() as isize;
    };
    let size = bindings::PAGE_SIZE as usize;
    // SAFETY: sysfs hands `show` a buffer of `PAGE_SIZE` bytes, ours for the call.
    let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), size) };
    let mut f = Formatter::new(page);
    match driver.show(index, &mut f) {
        Ok(()) => f.bytes_written().min(size) as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// `store` of a written file of a disk of `D`.
///
/// # Safety
///
/// Called by sysfs for a file of a [`Table`] of `D` on a disk's device, with `count` bytes at
/// `buf`.
unsafe extern "C" fn store<D: Driver>(
    dev: *mut bindings::device,
    attr: *mut bindings::device_attribute,
    buf: *const crate::ffi::c_char,
    count: usize,
) -> isize {
    // SAFETY: by the function's safety requirements.
    let Some((driver, index)) = (unsafe { lookup::<D>(dev, attr) }) else {
        return EINVAL.to_errno() as isize;
    };
    // SAFETY: sysfs hands `store` `count` bytes at `buf`, valid for the call.
    let input = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), count) };
    let file = AttrFile {
        dev,
        attr,
        _call: PhantomData,
    };
    // Neither `dev` nor `attr` is used after this: the call may have deleted the disk.
    match driver.store(index, input, file) {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}
