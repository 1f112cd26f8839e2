// SPDX-License-Identifier: GPL-2.0

//! Socket addresses as rdma_cm takes them (`struct sockaddr_in`, `struct sockaddr_in6`).

use crate::{bindings, prelude::*};

/// An IPv4 or IPv6 socket address as rdma_cm takes it.
///
/// # Examples
///
/// ```
/// use kernel::rdma::cm::SockAddr;
///
/// let a = SockAddr::ipv4(0x0a4d0001, 7471); // 10.77.0.1:7471
/// assert_eq!(a.port(), 7471);
/// // SAFETY: `as_ptr` points at a valid `sockaddr_in`.
/// let b = unsafe { SockAddr::from_raw(a.as_ptr()) }.unwrap();
/// assert_eq!(b.port(), 7471);
/// // SAFETY: NULL is refused before it is read.
/// assert!(unsafe { SockAddr::from_raw(core::ptr::null()) }.is_err());
/// ```
#[derive(Clone, Copy)]
pub struct SockAddr(pub(super) bindings::__kernel_sockaddr_storage);

impl SockAddr {
    /// Copies a C socket address.
    ///
    /// # Errors
    ///
    /// `-EINVAL` for NULL, `-EAFNOSUPPORT` for a family other than `AF_INET`/`AF_INET6`.
    ///
    /// # Safety
    ///
    /// A non-NULL `addr` points to a `sockaddr_in` or `sockaddr_in6` (as its family says).
    pub unsafe fn from_raw(addr: *const bindings::sockaddr) -> Result<SockAddr> {
        if addr.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `addr` is readable for at least the family field (caller's guarantee).
        let family = u32::from(unsafe { (*addr).sa_family });
        let len = match family {
            bindings::AF_INET => size_of::<bindings::sockaddr_in>(),
            bindings::AF_INET6 => size_of::<bindings::sockaddr_in6>(),
            _ => return Err(EAFNOSUPPORT),
        };
        let mut s = SockAddr(bindings::__kernel_sockaddr_storage::default());
        // SAFETY: The source holds `len` bytes for its family; the storage is larger.
        unsafe {
            core::ptr::copy_nonoverlapping(addr.cast::<u8>(), (&raw mut s.0).cast::<u8>(), len)
        };
        Ok(s)
    }

    /// An IPv4 address (host-order `addr`, host-order `port`).
    pub fn ipv4(addr: u32, port: u16) -> SockAddr {
        let mut s = SockAddr(bindings::__kernel_sockaddr_storage::default());
        let sin = (&raw mut s.0).cast::<bindings::sockaddr_in>();
        // SAFETY: The storage is large enough and suitably aligned for a `sockaddr_in`.
        unsafe {
            (*sin).sin_family = bindings::AF_INET as u16;
            (*sin).sin_port = port.to_be();
            (*sin).sin_addr.s_addr = addr.to_be();
        }
        s
    }

    /// An IPv6 address (`addr` in network order, as written: `[0xfd, 0, 0, 0x77, ..]` for
    /// `fd00:77::`; all zeros is the wildcard `::`), host-order `port`.
    pub fn ipv6(addr: [u8; 16], port: u16) -> SockAddr {
        let mut s = SockAddr(bindings::__kernel_sockaddr_storage::default());
        let sin6 = (&raw mut s.0).cast::<bindings::sockaddr_in6>();
        // SAFETY: The storage is large enough and suitably aligned for a `sockaddr_in6`.
        unsafe {
            (*sin6).sin6_family = bindings::AF_INET6 as u16;
            (*sin6).sin6_port = port.to_be();
            (*sin6).sin6_addr.in6_u.u6_addr8 = addr;
        }
        s
    }

    /// The address family (`AF_INET`, `AF_INET6`; `AF_UNSPEC`, 0, for an empty address).
    pub fn family(&self) -> u32 {
        // SAFETY: Every `sockaddr` starts with its family; the storage always holds one.
        u32::from(unsafe { (*(&raw const self.0).cast::<bindings::sockaddr>()).sa_family })
    }

    /// Whether the address is an IPv6 one (`AF_INET6`).
    pub fn is_ipv6(&self) -> bool {
        self.family() == bindings::AF_INET6
    }

    /// The port, host order.
    pub fn port(&self) -> u16 {
        // SAFETY: Both `sockaddr_in` and `sockaddr_in6` keep the port at the same offset.
        u16::from_be(unsafe { (*(&raw const self.0).cast::<bindings::sockaddr_in>()).sin_port })
    }

    /// Sets the port (host order).
    pub fn set_port(&mut self, port: u16) {
        // SAFETY: Both `sockaddr_in` and `sockaddr_in6` keep the port at the same offset, inside
        // the storage.
        unsafe { (*(&raw mut self.0).cast::<bindings::sockaddr_in>()).sin_port = port.to_be() };
    }

    /// The address as a `sockaddr` pointer for C.
    pub fn as_ptr(&self) -> *mut bindings::sockaddr {
        (&raw const self.0).cast_mut().cast()
    }
}

/// `address:port`, like printk's `%pISpc`: `10.0.0.1:7471` or `[fe80:0:0:0:0:0:0:1]:7471` (IPv6
/// in brackets, not compressed); `family <n>` for another family.
impl core::fmt::Display for SockAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // SAFETY: Every `sockaddr` starts with its family; the storage always holds one.
        let family =
            u32::from(unsafe { (*(&raw const self.0).cast::<bindings::sockaddr>()).sa_family });
        match family {
            bindings::AF_INET => {
                // SAFETY: The family says the storage holds a `sockaddr_in`; the storage is
                // large and aligned enough for any family.
                let ip = u32::from_be(unsafe {
                    (*(&raw const self.0).cast::<bindings::sockaddr_in>())
                        .sin_addr
                        .s_addr
                });
                let [a0, a1, a2, a3] = ip.to_be_bytes();
                write!(f, "{a0}.{a1}.{a2}.{a3}:{}", self.port())
            }
            bindings::AF_INET6 => {
                // SAFETY: The family says the storage holds a `sockaddr_in6` (as above).
                let b = unsafe {
                    (*(&raw const self.0).cast::<bindings::sockaddr_in6>())
                        .sin6_addr
                        .in6_u
                        .u6_addr8
                };
                write!(f, "[")?;
                for i in 0..8 {
                    if i > 0 {
                        write!(f, ":")?;
                    }
                    write!(f, "{:x}", u16::from_be_bytes([b[2 * i], b[2 * i + 1]]))?;
                }
                write!(f, "]:{}", self.port())
            }
            _ => write!(f, "family {family}"),
        }
    }
}
