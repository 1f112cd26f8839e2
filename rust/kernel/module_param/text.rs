// SPDX-License-Identifier: GPL-2.0

//! Text module parameters: a string from the module's load line, copied into the module
//! (`param_ops_string`, what C's `module_param_string()` declares).
//!
//! C header: [`include/linux/moduleparam.h`](srctree/include/linux/moduleparam.h)
//!
//! The `module!` macro's parameters are integers and booleans; an address, a path or a list
//! is text. [`module_param_text!`] declares one such parameter of a loadable module, with its
//! `modinfo` lines (`parmtype` `string`); the module reads it with [`Text::value`]. A value
//! that does not fit fails the load with `-ENOSPC` ("string doesn't fit"). Like the `module!`
//! macro's, the parameter has no sysfs file, so it changes only at load.
//!
//! # Examples
//!
//! ```ignore
//! kernel::module_param_text!(server, 64, "the server's address");
//!
//! fn server() -> Option<&'static [u8]> {
//!     Some(server.value()).filter(|v| !v.is_empty())
//! }
//! ```

use crate::{bindings, ffi::c_char};
use core::cell::UnsafeCell;

/// The value of a text parameter of at most `N - 1` bytes, declared by [`module_param_text!`].
pub struct Text<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: the kernel writes the buffer only while it parses the module's parameters, before
// the module's code runs (the parameter has no sysfs file); after that it is only read.
unsafe impl<const N: usize> Sync for Text<N> {}

impl<const N: usize> Text<N> {
    /// An empty value: the parameter was not given.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Self(UnsafeCell::new([0; N]))
    }

    /// The buffer `param_ops_string` copies the value into, for [`module_param_text!`].
    #[doc(hidden)]
    pub const fn as_mut_ptr(&self) -> *mut c_char {
        self.0.get().cast()
    }

    /// The value the module was loaded with, without its NUL; empty if it was not given.
    pub fn value(&self) -> &[u8] {
        // SAFETY: see the `Sync` impl: no one writes the buffer once the module's code runs.
        let b = unsafe { &*self.0.get() };
        let n = b.iter().position(|&c| c == 0).unwrap_or(N);
        &b[..n]
    }
}

/// The `kparam_string` of a text parameter (its buffer and size), for [`module_param_text!`].
#[doc(hidden)]
#[repr(transparent)]
pub struct KparamString(pub bindings::kparam_string);

// SAFETY: the C side only reads it (the buffer it points to is a `Text`, see its `Sync` impl).
unsafe impl Sync for KparamString {}

/// A `modinfo` line's bytes, `s` (which ends with its NUL), for [`module_param_text!`].
#[doc(hidden)]
pub const fn modinfo<const L: usize>(s: &str) -> [u8; L] {
    let b = s.as_bytes();
    let mut a = [0u8; L];
    let mut i = 0;
    while i < L {
        a[i] = b[i];
        i += 1;
    }
    a
}

/// Declares the text parameter `$name` of a loadable module: at most `$size - 1` bytes, with
/// the description `$desc` (`modinfo`'s `parm`). The module reads it as
/// `$name.value()` ([`Text::value`]).
#[macro_export]
macro_rules! module_param_text {
    ($name:ident, $size:literal, $desc:literal) => {
        #[allow(non_upper_case_globals)]
        pub(crate) static $name: $crate::module_param::text::Text<$size> =
            $crate::module_param::text::Text::new();

        const _: () = {
            static KPS: $crate::module_param::text::KparamString =
                $crate::module_param::text::KparamString($crate::bindings::kparam_string {
                    maxlen: $size,
                    string: $name.as_mut_ptr(),
                });

            #[link_section = "__param"]
            #[used(compiler)]
            static KP: $crate::module_param::KernelParam =
                $crate::module_param::KernelParam::new($crate::bindings::kernel_param {
                    name: ::core::concat!(::core::stringify!($name), "\0")
                        .as_ptr()
                        .cast(),
                    // The module's own, made by the kernel at load time.
                    mod_: &raw mut $crate::bindings::__this_module,
                    ops: &raw const $crate::bindings::param_ops_string,
                    // No sysfs file: the value changes only at load.
                    perm: 0,
                    level: -1,
                    flags: 0,
                    __bindgen_anon_1: $crate::bindings::kernel_param__bindgen_ty_1 {
                        str_: &raw const KPS.0,
                    },
                });

            const PARMTYPE: &str =
                ::core::concat!("parmtype=", ::core::stringify!($name), ":string\0");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static MODINFO_PARMTYPE: [u8; PARMTYPE.len()] =
                $crate::module_param::text::modinfo(PARMTYPE);

            const PARM: &str =
                ::core::concat!("parm=", ::core::stringify!($name), ":", $desc, "\0");
            #[link_section = ".modinfo"]
            #[used(compiler)]
            static MODINFO_PARM: [u8; PARM.len()] = $crate::module_param::text::modinfo(PARM);
        };
    };
}
