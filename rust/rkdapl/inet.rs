// SPDX-License-Identifier: GPL-2.0

//! Socket addresses as text, like printk's `%pISpc`: `10.0.0.1:7471` or `[fe80::1]:7471`.

use core::fmt;
use kernel::{bindings, rdma::cm::SockAddr};

/// Writes `a` as `address:port` (IPv6 in brackets, not compressed).
pub(crate) fn fmt_sockaddr(a: &SockAddr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let sa = a.as_ptr();
    // SAFETY: `sa` points at `a`'s `sockaddr_storage`, borrowed for this call: large enough
    // and aligned for any family, so the family field is always readable.
    let family = u32::from(unsafe { (*sa).sa_family });
    match family {
        bindings::AF_INET => {
            // SAFETY: As above; the family says the storage holds a `sockaddr_in`.
            let ip = u32::from_be(unsafe { (*sa.cast::<bindings::sockaddr_in>()).sin_addr.s_addr });
            let [a0, a1, a2, a3] = ip.to_be_bytes();
            write!(f, "{a0}.{a1}.{a2}.{a3}:{}", a.port())
        }
        bindings::AF_INET6 => {
            // SAFETY: As above; the family says the storage holds a `sockaddr_in6`.
            let b = unsafe { (*sa.cast::<bindings::sockaddr_in6>()).sin6_addr.in6_u.u6_addr8 };
            write!(f, "[")?;
            for i in 0..8 {
                if i > 0 {
                    write!(f, ":")?;
                }
                write!(f, "{:x}", u16::from_be_bytes([b[2 * i], b[2 * i + 1]]))?;
            }
            write!(f, "]:{}", a.port())
        }
        _ => write!(f, "family {family}"),
    }
}
