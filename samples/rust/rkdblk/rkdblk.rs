// SPDX-License-Identifier: GPL-2.0

//! rkdblk: a remote block device over rkdapl's Rust API ([`rkdapl::api`]), the client of
//! `rkdblk_srv.ko` (docs/blockdev.md).
//!
//!   insmod rkdblk.ko
//!   echo connect server=10.77.0.1 queues=2 > /dev/rkdblk-ctl     # adds /dev/rkdblk0
//!   cat /dev/rkdblk-ctl                                          # lists the disks
//!   echo disconnect rkdblk0 > /dev/rkdblk-ctl
//!
//! (`ctl.rs` has the commands.) A disk connects one EP per blk-mq hardware queue to the
//! server's PSP; its size and depth are the server's accept's. The module parameters connect
//! one disk, `rkdblk0`, at load, for scripts (`server` and `local` are IPv4 or IPv6 text, as
//! the control device's `traddr` and `host_traddr`):
//!
//!   insmod rkdblk.ko server=<address> [local=<address>] [port=4421] [queues=1]
//!                    [depth=16] [timeout_ms=30000] [reconnect_delay=10] [ctrl_loss_tmo=600]
//!
//! Each request is one command SENT to the server,
//! which moves the data by RDMA WRITE or READ to or from a grant of the request's own pages
//! (an LMR over them, [`Lmr::from_sg_owner_gfp`], and an FRWR grant made for that request alone:
//! no copy), and SENDs the completion with invalidate of the grant. I/O no longer than the
//! server's in-capsule limit (its accept's `inline_max`) needs no grant, as in NVMe over
//! Fabrics: a write's data goes in the command's SEND, from the request's own pages; a read's
//! comes back in the response's SEND, copied once from the RECV buffer. `rmmod`
//! deletes the disks and disconnects; it is refused while a disk is open. A lost connection, a
//! failed DTO, a protocol error or a timed-out request fails its queue: the connection is cut
//! and the grants freed, and the requests in flight are requeued as soon as their pages are
//! unmapped, without waiting for the peer; the disk then reconnects by itself every
//! `reconnect_delay` seconds until `ctrl_loss_tmo`, as nvme-rdma does, and fails its I/O with
//! `EIO` only after that (`recover.rs`). A disk may have two paths, each its own queues,
//! connections and reconnects: a `connect` with the `nqn=` of a disk there is adds its path to
//! that disk, requests go to the live paths in turn, and a failed path's requests run on the
//! other at once (`path.rs`).
//!
//! The disk is a `kernel::block::mq::owned` disk ([`block::mq::owned`]): the requests are
//! tokens the driver ends with a status, whose pages it lends to an LMR without a copy.
//! `queue_rq` does not sleep (the disk is not `BLK_MQ_F_BLOCKING`).

mod ctl;
mod disk;
mod path;
mod proto;
mod queue;
mod recover;

/// The owned-request blk-mq binding (`kernel::block::mq::owned` upstream), compiled into this
/// module.
///
/// Its source is `rust/kernel/block/mq/owned.rs` and `rust/kernel/block/mq/owned/`, written
/// as part of the kernel crate, which `make patches` adds to Linux as a patch of its own. The
/// kernel of this module has no such module, so rkdblk.ko carries it, as rkdapl.ko carries
/// `kernel::rdma`; what it reaches through `crate::` in the kernel crate is re-exported at this
/// crate's root (below), so its files need no change.
#[path = "../../../rust/kernel/block"]
pub mod block {
    /// `kernel::block::mq`'s part this module carries.
    pub mod mq {
        pub mod owned;
        // Declared by `owned.rs` under `CONFIG_INFINIBAND = "y"` in the kernel crate; this
        // module has `kernel::rdma` as `rkdapl::rdma` whatever the kernel's configuration.
        #[path = "owned/rdma.rs"]
        mod owned_rdma;
    }
}

/// Text module parameters (`kernel::module_param::text` in the kernel crate's form), compiled
/// into this module: the `module!` macro's parameters are numbers, and `server` and `local`
/// are addresses as text. What the file reaches as `crate::module_param` of the kernel crate
/// is re-exported here.
#[path = "../../../rust/kernel/module_param"]
pub mod module_param {
    pub use kernel::module_param::KernelParam;
    pub mod text;
}

// The kernel crate's modules and macros the binding uses as `crate::...`, and `kernel::rdma`.
#[allow(unused_imports)]
use kernel::{bindings, error, ffi, module, prelude, static_lock_class, str, sync, types};
#[allow(unused_imports)]
use rkdapl::rdma;

use block::mq::owned::{AttrFile, Attribute, DiskWork, Driver, RequestQueue, TimeoutReturn};
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use disk::Disks;
use kernel::{
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
};
use queue::{Queue, Rq};

module! {
    type: RkdBlk,
    name: "rkdblk",
    authors: ["rkdapl developers"],
    description: "rkdblk: a remote block device over rkdapl (client)",
    license: "GPL",
    imports_ns: ["RKDAPL"],
    params: {
        port: u16 {
            default: 4421,
            description: "the server's PSP port (default 4421)",
        },
        queues: u32 {
            default: 1,
            description: "hardware queues, one connection each (1..16, default 1)",
        },
        depth: u32 {
            default: 16,
            description: "commands in flight per queue asked for (1..1024, default 16)",
        },
        timeout_ms: u32 {
            default: 30000,
            description: "request timeout in ms (default 30000)",
        },
        reconnect_delay: u32 {
            default: 10,
            description: "seconds between attempts to reconnect a failed disk (1..86400, default 10)",
        },
        ctrl_loss_tmo: i32 {
            default: 600,
            description: "seconds a failed disk tries to reconnect before its I/O fails (-1: forever, 0: at once; default 600)",
        },
    },
}

crate::module_param_text!(
    server,
    64,
    "connect rkdblk0 at load to the server at this IPv4 or IPv6 address (default: none; see /dev/rkdblk-ctl)"
);
crate::module_param_text!(
    local,
    64,
    "this machine's IPv4 or IPv6 address on the RDMA device (default: server, a loopback)"
);

const OWNER: &CStr = c"rkdblk";
/// The disk's driver: its paths' queues, one per hardware queue each, a path's all replaced at
/// once by its reconnect (`disk.rs`, `recover.rs`), and what its sysfs files show.
#[pin_data]
struct Device {
    /// `N` of `rkdblkN`.
    index: u32,
    /// What the disk's first path connects to (`nr_io_queues` and `queue_size`: the disk's).
    opts: disk::Opts,
    /// Each path's queues (`path.rs`); empty for a path the disk does not have.
    #[pin]
    queues: SpinLock<[KVec<Arc<Queue>>; path::MAX_PATHS]>,
    /// Each path's options, `None` for a path the disk does not have.
    #[pin]
    path_opts: SpinLock<[Option<disk::Opts>; path::MAX_PATHS]>,
    /// Each path's state and counters.
    paths: [path::PathState; path::MAX_PATHS],
    /// The round-robin's next path (`Device::pick`).
    next: AtomicU32,
    /// `recover::LIVE` (a path is live, or one of its queues failed a moment ago),
    /// `CONNECTING` (no path live), `FAILED` or `DELETING`.
    state: AtomicU8,
    /// The disk's work (`recover.rs`), once the disk is added.
    #[pin]
    work: SpinLock<Option<Arc<DiskWork>>>,
    /// The connection's IA, PZ and what the disk needs of a new one: taken by the work and by
    /// a `reconnect` (which it serialises). `None` until the disk is added.
    #[pin]
    link: Mutex<Option<recover::Recovery>>,
}

impl Device {
    fn new(index: u32, opts: disk::Opts) -> Result<Arc<Device>> {
        let first = [Some(opts), None];
        Ok(Arc::pin_init(
            pin_init!(Device {
                index,
                opts,
                queues <- new_spinlock!([KVec::new(), KVec::new()], "rkdblk_queues"),
                path_opts <- new_spinlock!(first, "rkdblk_paths"),
                paths: [path::PathState::new(), path::PathState::new()],
                next: AtomicU32::new(0),
                state: AtomicU8::new(recover::LIVE),
                work <- new_spinlock!(None, "rkdblk_work"),
                link <- new_mutex!(None, "rkdblk_link"),
            }),
            GFP_KERNEL,
        )?)
    }
}

impl Driver for Device {
    type Module = LocalModule;
    type RequestData = ();

    /// `/sys/block/rkdblkN/`: `state`, `address`, `transport`, `paths` (read) and `delete`
    /// (written), as nvme's controllers have them (`disk.rs`).
    const ATTRIBUTES: &'static [Attribute] = &disk::ATTRIBUTES;

    fn show(&self, index: usize, f: &mut kernel::str::Formatter<'_>) -> Result {
        disk::show(self, index, f)
    }

    fn store(&self, index: usize, _input: &[u8], file: AttrFile<'_>) -> Result {
        disk::store(self.index, index, file)
    }

    /// Recovers from a failed queue: reconnects, or gives up (`recover.rs`).
    fn work(&self, queue: &RequestQueue<'_>) {
        self.recover(queue)
    }

    /// Any context (the disk is not `blocking`).
    fn queue_rq(&self, hctx: u32, rq: Rq) {
        match self.pick(hctx) {
            // Not the queue's last reference: the disk's own goes only with the disk quiesced
            // (a reconnect) or deleted (`disk.rs`), so no `queue_rq` drops a queue (which
            // sleeps).
            Some((p, q)) => {
                self.paths[p].requests.fetch_add(1, Ordering::Relaxed);
                q.submit(rq)
            }
            None => rq.end(Err(EIO)),
        }
    }

    /// Fails the request's queue: every request in flight on it is requeued (or ends with `EIO`
    /// once the disk gave up), the timed-out one among them (or it completed meanwhile), the
    /// connection is disconnected and the disk reconnects (`recover.rs`).
    fn timeout(&self, hctx: u32, tag: u32, _data: &()) -> TimeoutReturn {
        let qs = self.queues_of(hctx);
        if qs.iter().all(|q| q.is_none()) {
            return TimeoutReturn::ResetTimer;
        }
        for q in qs.iter().flatten() {
            if q.dead.load(Ordering::Acquire) {
                // Marked failed by `queue_rq` or the upcall (`mark_failed`), which could not
                // sleep, and not failed since by the disk's work (not armed yet): the rest
                // of the failure runs here. The request ends with it (or ended already, and
                // the grant `fail` frees kept its pages).
                q.fail("marked failed");
            } else if q.holds(tag) {
                pr_err!(
                    "rkdblk{} queue {}: request of tag {} timed out\n",
                    q.disk,
                    hctx,
                    tag
                );
                // Process context (blk-mq's timeout work): the connection goes too (`fail`).
                q.fail("request timeout");
            }
            // Else not a request of this queue: one of another path's, of a queue a reconnect
            // replaced, which ended it or ends it as it fails (`fail`), or one that ended.
        }
        TimeoutReturn::Done
    }
}

#[pin_data]
struct RkdBlk {
    /// Deregistered first: no command runs while the disks go.
    #[pin]
    _ctl: MiscDeviceRegistration<ctl::Ctl>,
    _disks: Disks,
}

impl kernel::InPlaceModule for RkdBlk {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(RkdBlk {
            // First: if the control device cannot be registered, `Disks` is dropped and the
            // disk of the module parameters goes again.
            _disks: Disks::init()?,
            _ctl <- MiscDeviceRegistration::register(MiscDeviceOptions {
                name: c"rkdblk-ctl",
            }),
        })
    }
}
