// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rust_kernel_rdma`: the layer's value types, without a device (access and send
//! flags, socket addresses, the owner a lent region keeps). It runs where the layer is built:
//! at boot when the layer is part of the kernel crate, when the module is loaded when a module
//! carries it.

use crate::prelude::kunit_tests;

#[kunit_tests(rust_kernel_rdma)]
mod tests {
    use super::super::{
        cm::SockAddr,
        qp::{SendFlag, SendFlags},
        Access, AccessFlag,
    };

    #[test]
    fn access_flags_combine() {
        let a = AccessFlag::RemoteRead | AccessFlag::RemoteWrite;
        assert!(a.contains(AccessFlag::RemoteRead));
        assert!(a.contains(AccessFlag::RemoteWrite));
        assert!(!a.contains(AccessFlag::LocalWrite));
        assert!(!Access::empty().contains(AccessFlag::RemoteWrite));
        assert_eq!(Access::empty().bits(), 0);
        assert_ne!(
            Access::from(AccessFlag::LocalWrite).bits(),
            Access::from(AccessFlag::RemoteWrite).bits()
        );
    }

    #[test]
    fn send_flags_combine() {
        let f = SendFlag::Signaled | SendFlag::Fence;
        assert!(f.contains(SendFlag::Signaled));
        assert!(f.contains(SendFlag::Fence));
        assert!(!f.contains(SendFlag::Inline));
        assert!(SendFlags::empty().contains_all(SendFlags::empty()));
        assert_eq!(SendFlags::empty().bits(), 0);
    }

    #[test]
    fn sockaddr_round_trip() {
        let a = SockAddr::ipv4(0x0a4d_0001, 7471); // 10.77.0.1:7471
        assert_eq!(a.port(), 7471);
        // SAFETY: `as_ptr` points at the valid `sockaddr_in` in `a`.
        let b = unsafe { SockAddr::from_raw(a.as_ptr()) }.unwrap();
        assert_eq!(b.port(), 7471);
        // SAFETY: NULL is refused before anything is read.
        assert!(unsafe { SockAddr::from_raw(core::ptr::null()) }.is_err());
    }

    // IPv6 and network namespaces.
    #[test]
    fn sockaddr_ipv6() {
        let mut ip = [0u8; 16];
        ip[..4].copy_from_slice(&[0xfd, 0, 0, 0x77]);
        ip[15] = 1;
        let a = SockAddr::ipv6(ip, 7471); // [fd00:77::1]:7471
        assert!(a.is_ipv6());
        assert_eq!(a.port(), 7471);
        assert!(!SockAddr::ipv4(0, 1).is_ipv6());
        // SAFETY: `as_ptr` points at the valid `sockaddr_in6` in `a`.
        let b = unsafe { SockAddr::from_raw(a.as_ptr()) }.unwrap();
        assert!(b.is_ipv6());
        assert_eq!(b.port(), 7471);
        use crate::str::CString;
        let mut s = CString::try_from_fmt(format_args!("{b}")).unwrap();
        assert_eq!(s.to_bytes(), b"[fd00:77:0:0:0:0:0:1]:7471");
        s = CString::try_from_fmt(format_args!("{}", SockAddr::ipv6([0; 16], 1))).unwrap();
        assert_eq!(s.to_bytes(), b"[0:0:0:0:0:0:0:0]:1");
    }

    #[test]
    fn netns_references() {
        use super::super::cm::NetNs;
        let init = NetNs::init();
        assert!(init.is_init());
        let c = init.clone();
        assert!(c == init);
        // KUnit cases run in a kernel thread: the initial namespace.
        assert!(NetNs::current().unwrap() == init);
        assert!(NetNs::by_pid(1).unwrap() == init);
        assert!(NetNs::by_pid(-1).is_err());
        // SAFETY: NULL is refused before it is used.
        assert!(unsafe { NetNs::from_raw(core::ptr::null_mut()) }.is_err());
        // SAFETY: `init` holds a reference to the namespace while `d` is used.
        let d = unsafe { NetNs::from_raw(init.as_raw()) }.unwrap();
        assert!(init == d);
        let held: crate::sync::aref::ARef<NetNs> = d.into();
        assert!(held == init);
    }

    #[test]
    fn lender_keeps_its_owner_and_drops_it_once() -> crate::error::Result {
        use super::super::mr::{Lender, SgOwner};
        use crate::{alloc::flags::GFP_KERNEL, sync::Arc};
        use core::sync::atomic::{AtomicU32, Ordering};

        /// An owner of `N + 1` words that counts its drops.
        struct Owner<const N: usize>(Arc<AtomicU32>, [usize; N]);
        impl<const N: usize> Drop for Owner<N> {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        // SAFETY: Its list (none) is never mapped: the test only asks for it and drops it.
        unsafe impl<const N: usize> SgOwner for Owner<N> {
            fn sg(&self) -> (*mut crate::bindings::scatterlist, usize) {
                (core::ptr::null_mut(), N + 10 + self.1.iter().sum::<usize>())
            }
        }
        let drops = Arc::new(AtomicU32::new(0), GFP_KERNEL)?;
        // In place (one word, two words), and boxed (three).
        let one = Lender::new(Owner::<0>(drops.clone(), []), GFP_KERNEL)?;
        let two = Lender::new(Owner::<1>(drops.clone(), [100]), GFP_KERNEL)?;
        let three = Lender::new(Owner::<2>(drops.clone(), [200, 300]), GFP_KERNEL)?;
        assert_eq!(one.sg().1, 10);
        assert_eq!(two.sg().1, 111);
        assert_eq!(three.sg().1, 512);
        assert_eq!(drops.load(Ordering::Relaxed), 0);
        drop(two);
        assert_eq!(drops.load(Ordering::Relaxed), 1);
        drop(one);
        drop(three);
        assert_eq!(drops.load(Ordering::Relaxed), 3);
        Ok(())
    }
}
