// SPDX-License-Identifier: GPL-2.0

//! A disk and its connections ([`Connection`]; its paths: `path.rs`), and the module's list of
//! disks ([`DEVICES`]):
//! [`connect`] and [`disconnect`] for `/dev/rkdblk-ctl` (`ctl.rs`), the disk's files in sysfs
//! ([`ATTRIBUTES`]), [`Disks`] for the module (its parameters' disk, and every disk's end at
//! unload).

use crate::module_parameters as param;
use crate::{
    block::mq::owned::{AttrFile, Attribute, Disk, DiskParams},
    path::MAX_PATHS,
    proto,
    queue::{Queue, MAX_IO},
    recover::{self, Recovery},
    Device, OWNER,
};
use core::fmt::Write;
use core::{
    net::{IpAddr, Ipv4Addr},
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{fmt, prelude::*, str::CString, sync::Arc};
use rkdapl::api::{Ia, Pz, SockAddr};

/// What a disk connects to (`ctl.rs`'s `connect` options, or the module parameters).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Opts {
    pub(crate) server: IpAddr,
    /// This machine's address on the RDMA device (default: `server`, a loopback).
    pub(crate) local: Option<IpAddr>,
    pub(crate) port: u16,
    pub(crate) queues: u32,
    /// Commands in flight per queue asked for.
    pub(crate) depth: u32,
    pub(crate) timeout_ms: u32,
    /// Seconds between attempts to reconnect (`recover.rs`).
    pub(crate) reconnect_delay: u32,
    /// Seconds of attempts before the disk's I/O fails (-1: forever).
    pub(crate) ctrl_loss_tmo: i32,
    /// Seconds without a live path before the disk's I/O fails while it goes on reconnecting
    /// (-1: never). The disk's, from its first `connect`, as `timeout_ms`.
    pub(crate) fast_io_fail_tmo: i32,
    /// The export's name: connects with the same one are paths of one disk (`path.rs`).
    pub(crate) nqn: Nqn,
}

/// Bytes of an `nqn=` at most.
pub(crate) const NQN_MAX: usize = 64;

/// An `nqn=` (empty: none), kept in [`Opts`] without an allocation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Nqn {
    len: u8,
    bytes: [u8; NQN_MAX],
}

impl Nqn {
    pub(crate) const NONE: Nqn = Nqn {
        len: 0,
        bytes: [0; NQN_MAX],
    };

    /// `text` as an `nqn=`; `None` if it is empty or longer than [`NQN_MAX`] bytes.
    pub(crate) fn new(text: &str) -> Option<Nqn> {
        let b = text.as_bytes();
        if b.is_empty() || b.len() > NQN_MAX {
            return None;
        }
        let mut n = Nqn::NONE;
        n.bytes[..b.len()].copy_from_slice(b);
        n.len = b.len() as u8;
        Some(n)
    }

    pub(crate) fn is_none(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn as_str(&self) -> &str {
        // Made from a `&str` by `new`, whole.
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl fmt::Display for Nqn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::fmt::Display for Nqn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// nvme-fabrics' defaults.
pub(crate) const RECONNECT_DELAY: u32 = 10;
pub(crate) const CTRL_LOSS_TMO: i32 = 600;
/// nvme-fabrics' default: off.
pub(crate) const FAST_IO_FAIL_TMO: i32 = -1;

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            server: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            local: None,
            port: 4421,
            queues: 1,
            depth: 16,
            timeout_ms: 30_000,
            reconnect_delay: RECONNECT_DELAY,
            ctrl_loss_tmo: CTRL_LOSS_TMO,
            fast_io_fail_tmo: FAST_IO_FAIL_TMO,
            nqn: Nqn::NONE,
        }
    }
}

fn sockaddr(ip: IpAddr, at: u16) -> SockAddr {
    match ip {
        IpAddr::V4(a) => SockAddr::ipv4(u32::from(a), at),
        IpAddr::V6(a) => SockAddr::ipv6(a.octets(), at),
    }
}

/// An address in a log line, in `core::net`'s text form.
pub(crate) struct Ip(pub(crate) IpAddr);

impl fmt::Display for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        core::fmt::Display::fmt(&self.0, f)
    }
}

/// One disk and its connections: made by [`Connection::new`], deleted and disconnected when
/// dropped.
pub(crate) struct Connection {
    /// `N` of `rkdblkN`.
    pub(crate) index: u32,
    name: CString,
    opts: Opts,
    /// The disk's size, depth (as granted: the server's may be smaller than `opts`') and
    /// request size, which a reconnect must offer again.
    params: DiskParams,
    disk: Option<Disk<Device>>,
}

/// Disks at most, over every server (`N` of `rkdblkN` is below it).
pub(crate) const MAX_DISKS: u32 = 64;

/// The module's disks, under [`DEVICES`].
pub(crate) struct List {
    pub(crate) disks: KVec<Connection>,
    /// Bit `N`: the number of `rkdblkN` is taken, by a disk of `disks` or by one being
    /// connected or deleted with the lock released.
    taken: u64,
    /// By number: the `nqn=` of a disk being connected, or out of `disks` for a `reconnect`
    /// (else [`Nqn::NONE`]), so that a connect with that `nqn=` meanwhile neither makes a
    /// second disk of the export nor misses the one there is: it is refused with `-EBUSY`.
    pending: [Nqn; MAX_DISKS as usize],
    /// The module is going: no disk leaves the list any more but by [`Disks`]' drop.
    closing: bool,
}

impl List {
    /// Where the disk `name` is in the list.
    ///
    /// # Errors
    ///
    /// `-ENODEV` if it is not there.
    fn position(&self, name: &str) -> Result<usize> {
        self.disks
            .iter()
            .position(|c| c.name() == name.as_bytes())
            .ok_or(ENODEV)
    }
}

kernel::sync::global_lock! {
    // SAFETY: Initialised in the module's init, before the control device exists.
    pub(crate) unsafe(uninit) static DEVICES: Mutex<List> = List {
        disks: KVec::new(),
        taken: 0,
        pending: [Nqn::NONE; MAX_DISKS as usize],
        closing: false,
    };
}

/// Connects a disk as `o` says under the lowest free number `N`, adds `/dev/rkdblkN` and
/// returns `N`; or, if `o` has the `nqn=` of a disk `rkdblkN` there is, adds `o`'s path to that
/// disk and returns `N` ([`Device::add_path`]). The list's lock is held only to take the
/// number and to add the disk, so the listing and commands on other disks go on meanwhile.
/// Process context; sleeps (see [`Connection::new`]).
///
/// # Errors
///
/// `-ENOSPC` with [`MAX_DISKS`] disks, `-ENOMEM`, or the error of [`Connection::new`]; the
/// number is free again then. `-EBUSY` if the disk of `o`'s `nqn=` is being connected or
/// reconnected (`reconnect`) right now. For a path, the errors of [`Device::add_path`].
pub(crate) fn connect(o: &Opts) -> Result<u32> {
    let index = {
        let mut l = DEVICES.lock();
        if !o.nqn.is_none() {
            // Under the same lock as the number's reservation below: two connects with one
            // `nqn=` make one disk, and the other joins it or is refused.
            if l.pending.contains(&o.nqn) {
                return Err(EBUSY);
            }
            let found = l
                .disks
                .iter()
                .find(|c| c.opts.nqn == o.nqn)
                .and_then(|c| Some((c.index, c.disk.as_ref()?.driver().clone())));
            if let Some((index, dev)) = found {
                drop(l);
                return dev.add_path(o).map(|_| index);
            }
        }
        let index = (0..MAX_DISKS)
            .find(|i| l.taken & (1 << i) == 0)
            .ok_or(ENOSPC)?;
        l.taken |= 1 << index;
        l.pending[index as usize] = o.nqn;
        index
    };
    let c = Connection::new(index, o);
    let mut l = DEVICES.lock();
    l.pending[index as usize] = Nqn::NONE;
    // Cannot fail: the list holds `MAX_DISKS` ([`Disks::init`]) and every disk in it took a
    // number.
    let r = c.and_then(|c| l.disks.push_within_capacity(c).map_err(|_| ENOMEM));
    if r.is_err() {
        l.taken &= !(1 << index);
    }
    r.map(|()| index)
}

/// Deletes the disk `name` (`rkdblkN`) and disconnects it, once its requests ended. Process
/// context; sleeps (for the requests in flight: at most their timeout).
///
/// # Errors
///
/// `-ENODEV` if there is no such disk (or it is being deleted), `-EBUSY` if it is open. The
/// check is a snapshot: a process opening the disk right after it sees the disk go away (its
/// I/O fails), as with `nvme disconnect`.
pub(crate) fn disconnect(name: &str) -> Result {
    let c = {
        let mut l = DEVICES.lock();
        let at = l.position(name)?;
        if l.disks[at].is_open() {
            return Err(EBUSY);
        }
        // Its number stays taken until the disk is gone: a connect meanwhile cannot reuse
        // the name.
        l.disks.remove(at).map_err(|_| ENODEV)?
    };
    let index = c.index;
    drop(c);
    DEVICES.lock().taken &= !(1 << index);
    Ok(())
}

/// A disk's connections: an IA, a PZ and one queue per hardware queue, and what the
/// server's accepts allow. Dropped in declaration order.
pub(crate) struct Link {
    pub(crate) queues: KVec<Arc<Queue>>,
    pub(crate) params: DiskParams,
    pub(crate) ia: Ia,
    pub(crate) pz: Arc<Pz>,
}

impl Link {
    /// Opens the IA and connects `o.queues` queues of disk number `index` to the server.
    /// Process context; sleeps (for the server, up to 15 s per queue).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for queues or depth out of range; the errors of the connection (see
    /// `ctl.rs`), every queue connected so far then disconnected.
    pub(crate) fn connect(index: u32, o: &Opts) -> Result<Link> {
        let (nq, want) = (o.queues, o.depth);
        if !(1..=16).contains(&nq) || !(1..=1024).contains(&want) {
            return Err(EINVAL);
        }
        let here = sockaddr(o.local.unwrap_or(o.server), 0);
        let to = sockaddr(o.server, o.port);
        // `host_traddr`: the source of every queue's connection, not only the IA's device.
        let from = o.local.map(|l| sockaddr(l, 0));
        let ia = Ia::open_addr(&here, OWNER).inspect_err(|e| {
            pr_err!(
                "rkdblk{}: no RDMA device has the address {} (local=, default server=): {:?}\n",
                index,
                Ip(o.local.unwrap_or(o.server)),
                e
            );
        })?;
        let pz = Arc::new(Pz::new(&ia)?, GFP_KERNEL)?;
        let mut queues = KVec::with_capacity(nq as usize, GFP_KERNEL)?;
        let nqn = proto::nqn_hash(o.nqn.as_str().as_bytes());
        let mut nqn_checked = false;
        let mut params = DiskParams {
            queues: nq,
            depth: want,
            capacity: 0,
            max_io: MAX_IO,
            timeout_ms: o.timeout_ms,
            // `Queue::submit` sleeps nowhere.
            blocking: false,
            write_cache: true,
            read_only: false,
        };
        for i in 0..nq {
            let r = Queue::connect(&ia, &pz, (from.as_ref(), &to), (index, i), want, nqn).and_then(
                |(q, acc)| {
                    params.depth = params.depth.min(acc.depth.into());
                    params.max_io = params.max_io.min(acc.max_io);
                    params.capacity = acc.capacity;
                    // The server's one export: its queues all say the same.
                    params.read_only |= acc.read_only;
                    nqn_checked = acc.nqn_checked;
                    // Cannot fail: the capacity is `nq`.
                    queues.push_within_capacity(q).map_err(|_| ENOMEM)
                },
            );
            if let Err(e) = r {
                teardown(&queues);
                return Err(e);
            }
        }
        if !o.nqn.is_none() && !nqn_checked {
            pr_info!(
                "rkdblk{}: server {} port {} does not name its export: nqn={} taken on trust\n",
                index,
                Ip(o.server),
                o.port,
                o.nqn
            );
        }
        Ok(Link {
            queues,
            params,
            ia,
            pz,
        })
    }
}

/// Connects the failed disk `name` again ([`Connection::reconnect`]). It leaves the list
/// meanwhile (its number stays taken), so the listing and commands on other disks go on.
/// Process context; sleeps.
///
/// # Errors
///
/// `-ENODEV` if there is no such disk (or a command on it is in progress); the errors of
/// [`Connection::reconnect`].
pub(crate) fn reconnect(name: &str) -> Result {
    let mut c = {
        let mut l = DEVICES.lock();
        let at = l.position(name)?;
        let c = l.disks.remove(at).map_err(|_| ENODEV)?;
        // Out of the list: a connect with its `nqn=` meanwhile is refused, not a new disk.
        l.pending[c.index as usize] = c.opts.nqn;
        c
    };
    let r = c.reconnect();
    let mut l = DEVICES.lock();
    l.pending[c.index as usize] = Nqn::NONE;
    // Cannot fail: the list holds `MAX_DISKS` ([`Disks::init`]) and its number is still taken.
    let back = l.disks.push_within_capacity(c);
    drop(l);
    if let Err(kernel::alloc::kvec::PushError(c)) = back {
        pr_err!("{}: no room in the list of disks\n", name);
        // The disk goes, and its number with it (the module's unload waits for the numbers).
        let index = c.index;
        drop(c);
        DEVICES.lock().taken &= !(1 << index);
    }
    r
}

impl Connection {
    /// Connects `o.queues` queues to the server and adds the disk `rkdblk<index>`. Process
    /// context; sleeps (for the server, up to 15 s per queue).
    ///
    /// # Errors
    ///
    /// `-EINVAL` for queues or depth out of range; the errors of the connection (see `ctl.rs`),
    /// every queue connected so far then disconnected.
    pub(crate) fn new(index: u32, o: &Opts) -> Result<Connection> {
        let name = CString::try_from_fmt(fmt!("rkdblk{index}"))?;
        let dev = Device::new(index, *o)?;
        let Link {
            queues,
            params,
            ia,
            pz,
        } = Link::connect(index, o)?;
        drop(dev.replace(0, queues));
        dev.set_path_state(0, recover::LIVE);
        let disk = match Disk::new(&name, &params, dev.clone()) {
            Ok(d) => d,
            Err(e) => {
                teardown(&dev.replace(0, KVec::new()));
                return Err(e);
            }
        };
        // From here on a failed queue requeues its requests and the disk reconnects.
        *dev.link.lock() = Some(Recovery::new(params, ia, pz));
        *dev.work.lock() = Some(disk.work().clone());
        dev.arm_all();
        if !dev.path_live(0) {
            // A queue failed before it was armed: the work recovers it.
            disk.work().schedule_now();
        }
        pr_info!(
            "rkdblk{}: {} sectors{}, {} queue(s) of depth {}, {} KiB per request at most, server {} port {}\n",
            index,
            params.capacity,
            if params.read_only { " (read-only)" } else { "" },
            params.queues,
            params.depth,
            params.max_io / 1024,
            Ip(o.server),
            o.port
        );
        Ok(Connection {
            index,
            name,
            opts: *o,
            params,
            disk: Some(disk),
        })
    }

    /// Connects the paths of a disk that are not live again: a new IA, PZ and queues, with the
    /// options of the path's `connect`, take the place of the old ones, whose requests in
    /// flight are requeued and run on the new ones (or had ended with `EIO` if the disk had
    /// given up); the disk, its name and its mounts stay. A path that is connecting by itself
    /// (`recover.rs`) is connected now; a live path one of whose queues just failed is first
    /// failed whole, with dispatch stopped if no other path is live (as the work would), so
    /// that its requeued requests wait instead of coming back to a dead queue while this
    /// connects. Process context; sleeps (for the server, up to 15 s per queue).
    ///
    /// # Errors
    ///
    /// `-EISCONN` if every path is live; `-EPROTO` if the server's accepts no longer fit the
    /// disk (another capacity, a smaller depth or request size); the errors of the connection
    /// (see `ctl.rs`), of the first path that failed. A path that failed stays as it was (a
    /// connecting one goes on trying).
    pub(crate) fn reconnect(&mut self) -> Result {
        let disk = self.disk.as_ref().ok_or(ENODEV)?;
        let dev = disk.driver().clone();
        let rq = disk.request_queue();
        // Serialises with the work.
        let mut g = dev.link.lock();
        let r = (*g).as_mut().ok_or(ENODEV)?;
        let (mut tried, mut err) = (0, None);
        for p in 0..MAX_PATHS {
            let Some(o) = dev.path_opts(p) else {
                continue;
            };
            match dev.path_state(p) {
                recover::LIVE if dev.path_live(p) => continue,
                recover::LIVE => dev.begin(p, r, &rq, &o),
                _ => {}
            }
            tried += 1;
            let now = match dev.connect_again(p, r, &rq, &o) {
                Ok(now) => now,
                Err(e) => {
                    err.get_or_insert(e);
                    continue;
                }
            };
            dev.set_path_state(p, recover::LIVE);
            r.paths[p] = core::mem::take(&mut r.paths[p]).reset();
            // The server's export may have become read-only, or writable again, meanwhile.
            if now.read_only != r.params.read_only {
                disk.set_read_only(now.read_only);
                r.params.read_only = now.read_only;
                self.params.read_only = now.read_only;
                pr_info!(
                    "rkdblk{}: the server exports it {} now\n",
                    self.index,
                    if now.read_only {
                        "read-only"
                    } else {
                        "writable"
                    }
                );
            }
            pr_info!(
                "rkdblk{}: reconnected {} queue(s) to server {} port {} (path {})\n",
                self.index,
                now.queues,
                Ip(o.server),
                o.port,
                p
            );
        }
        if tried == 0 {
            return Err(EISCONN);
        }
        if let Some(ms) = dev.settle(r, &rq) {
            dev.schedule(ms.clamp(1, i64::from(u32::MAX)) as u32);
        }
        err.map_or(Ok(()), Err)
    }

    /// The disk's name, `rkdblkN`.
    pub(crate) fn name(&self) -> &[u8] {
        self.name.to_bytes()
    }

    /// Whether the disk is open (mounted, say). Any context.
    pub(crate) fn is_open(&self) -> bool {
        self.disk.as_ref().is_some_and(|d| d.is_open())
    }

    /// Writes its line of `/dev/rkdblk-ctl`'s listing; a disk with `nqn=`, a line per path.
    pub(crate) fn describe(&self, f: &mut impl core::fmt::Write) -> core::fmt::Result {
        let Some(dev) = self.disk.as_ref().map(|d| d.driver()) else {
            return crate::ctl::describe_line(
                f,
                self.name(),
                &self.opts,
                self.params.depth,
                None,
                "deleting",
            );
        };
        if self.opts.nqn.is_none() {
            let state = dev.state_name();
            return crate::ctl::describe_line(
                f,
                self.name(),
                &self.opts,
                self.params.depth,
                None,
                state,
            );
        }
        for p in 0..MAX_PATHS {
            if let Some(o) = dev.path_opts(p) {
                let state = dev.path_state_name(p);
                crate::ctl::describe_line(f, self.name(), &o, self.params.depth, Some(p), state)?;
            }
        }
        Ok(())
    }
}

/// The disk's own files in its sysfs directory, `/sys/block/rkdblkN/` (nvme's controllers
/// have the same, and `delete_controller` for `delete`): `state` (`live`, `connecting`,
/// `failed` or `deleting`, as the listing of `/dev/rkdblk-ctl`), `address` (`traddr=<address>,trsvcid=<port>`, and
/// `,host_traddr=<address>` if the connect gave one: the first path's), `transport` (`rdma`),
/// `paths` (a line per path, [`Device::show_paths`]); a write to `delete` deletes and
/// disconnects the disk, as `disconnect rkdblkN` does ([`store`]).
pub(crate) const ATTRIBUTES: [Attribute; 5] = [
    Attribute {
        name: c"state",
        write: false,
    },
    Attribute {
        name: c"address",
        write: false,
    },
    Attribute {
        name: c"transport",
        write: false,
    },
    Attribute {
        name: c"paths",
        write: false,
    },
    Attribute {
        name: c"delete",
        write: true,
    },
];
const ATTR_DELETE: usize = 4;

/// Fills the file `ATTRIBUTES[index]` of the disk of `dev`. Process context.
///
/// # Errors
///
/// `-EINVAL` for no such file (or a line that does not fit a page).
pub(crate) fn show(dev: &Device, index: usize, f: &mut impl Write) -> Result {
    let o = &dev.opts;
    match index {
        0 => writeln!(f, "{}", dev.state_name()),
        1 => write!(f, "traddr={},trsvcid={}", o.server, o.port)
            .and_then(|()| match o.local {
                Some(local) => write!(f, ",host_traddr={}", local),
                None => Ok(()),
            })
            .and_then(|()| writeln!(f)),
        2 => writeln!(f, "rdma"),
        3 => dev.show_paths(f),
        _ => return Err(EINVAL),
    }
    .map_err(|_| EINVAL)
}

/// A write to the file `ATTRIBUTES[index]` of the disk number `disk`: `delete` deletes and
/// disconnects it (whatever was written), as [`disconnect`] does; the file is removed first
/// (`file`), since deleting the disk waits for every call on its files but this one. Process
/// context; sleeps (for the requests in flight: at most their timeout).
///
/// # Errors
///
/// `-EINVAL` for a file that is not written; `-EBUSY` if the disk is open; `-ENODEV` if it is
/// being deleted or reconnected, or the module is going.
pub(crate) fn store(disk: u32, index: usize, file: AttrFile<'_>) -> Result {
    if index != ATTR_DELETE {
        return Err(EINVAL);
    }
    let c = {
        let mut l = DEVICES.lock();
        if l.closing {
            return Err(ENODEV);
        }
        let at = l.disks.iter().position(|c| c.index == disk).ok_or(ENODEV)?;
        if l.disks[at].is_open() {
            return Err(EBUSY);
        }
        // Its number stays taken until the disk is gone; the module's unload waits for that.
        l.disks.remove(at).map_err(|_| ENODEV)?
    };
    if !file.remove_self() {
        // Someone else is removing the file: deleting the disk here would wait for this call.
        // Cannot fail: the list holds `MAX_DISKS` ([`Disks::init`]) and its number is taken.
        let _ = DEVICES.lock().disks.push_within_capacity(c);
        return Err(ENODEV);
    }
    drop(c);
    DEVICES.lock().taken &= !(1 << disk);
    Ok(())
}

/// Stops the queues' upcalls (each holds its queue) and disconnects them. Process context.
pub(crate) fn teardown(qs: &[Arc<Queue>]) {
    for q in qs {
        q.stop();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(disk) = self.disk.take() {
            let dev = disk.driver().clone();
            // No reconnecting any more: the work stopped, what waits for it fails.
            dev.state.store(recover::DELETING, Ordering::Release);
            disk.stop_work();
            if let Some(r) = &mut *dev.link.lock() {
                dev.fail_waiting(r, &disk.request_queue());
            }
            // Deleting the disk waits for its requests: they complete, or fail with the
            // queue.
            drop(disk);
            let (mut done, mut granted, mut full) = (0, 0, 0);
            for p in 0..MAX_PATHS {
                let qs = dev.replace(p, KVec::new());
                let sum = |f: fn(&Queue) -> &AtomicU64| -> u64 {
                    qs.iter().map(|q| f(q).load(Ordering::Relaxed)).sum()
                };
                done += sum(|q| &q.completed);
                granted += sum(|q| &q.granted);
                full += sum(|q| &q.send_queue_full);
                teardown(&qs);
            }
            pr_info!(
                "rkdblk{} removed after {} completions; {} requests granted their own pages; {} requeued for a full send queue\n",
                self.index,
                done,
                granted,
                full
            );
        }
    }
}

/// Parses the module parameter `name`'s `text` as an address.
///
/// # Errors
///
/// `-EINVAL` (logged) if it is not IPv4 or IPv6 text.
fn param_address(name: &str, text: &[u8]) -> Result<IpAddr> {
    core::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<IpAddr>().ok())
        .ok_or_else(|| {
            pr_err!(
                "{}={}: not an IPv4 or IPv6 address (text, as 10.77.0.1 or fd00::1)\n",
                name,
                kernel::str::BStr::from_bytes(text)
            );
            EINVAL
        })
}

/// The module's list of disks ([`DEVICES`]), emptied (every disk deleted and disconnected)
/// when the module goes.
pub(crate) struct Disks;

impl Disks {
    /// Initialises the list and connects `rkdblk0` if the module parameters name a server.
    /// Called once, from the module's init. Process context; sleeps.
    pub(crate) fn init() -> Result<Disks> {
        // SAFETY: Called once, from the module's init, before anything else uses `DEVICES`
        // (the control device is registered after this returns).
        unsafe { DEVICES.init() };
        // Room for every disk there may be, so that adding one never allocates with the list
        // locked, nor fails after its disk was added.
        DEVICES
            .lock()
            .disks
            .reserve(MAX_DISKS as usize, GFP_KERNEL)?;
        // From here on a failed init drops it, which frees the list's buffer.
        let disks = Disks;
        if crate::server.value().is_empty() {
            return Ok(disks);
        }
        let o = Opts {
            server: param_address("server", crate::server.value())?,
            local: match crate::local.value() {
                [] => None,
                text => Some(param_address("local", text)?),
            },
            port: param::port.value(),
            queues: param::queues.value(),
            depth: param::depth.value(),
            timeout_ms: param::timeout_ms.value(),
            reconnect_delay: param::reconnect_delay.value(),
            ctrl_loss_tmo: param::ctrl_loss_tmo.value(),
            fast_io_fail_tmo: FAST_IO_FAIL_TMO,
            nqn: Nqn::NONE,
        };
        if !(1..=86_400).contains(&o.reconnect_delay) || o.ctrl_loss_tmo < -1 {
            pr_err!("reconnect_delay is 1..86400 and ctrl_loss_tmo -1 or more\n");
            return Err(EINVAL);
        }
        let c = Connection::new(0, &o)?;
        let mut l = DEVICES.lock();
        l.taken |= 1;
        // Cannot fail: reserved above.
        l.disks.push_within_capacity(c).map_err(|_| ENOMEM)?;
        drop(l);
        Ok(disks)
    }
}

impl Drop for Disks {
    fn drop(&mut self) {
        // The vector's buffer too: nothing else would free it.
        let mut list = {
            let mut l = DEVICES.lock();
            l.closing = true;
            core::mem::replace(&mut l.disks, KVec::new())
        };
        // The last disk first. No disk is open: each holds the module while it is.
        while let Some(c) = list.pop() {
            let index = c.index;
            drop(c);
            DEVICES.lock().taken &= !(1 << index);
        }
        // A delete through sysfs in progress ([`store`]) holds no reference to the module:
        // wait until it let go of its disk's number, its last step.
        while DEVICES.lock().taken != 0 {
            kernel::time::delay::fsleep(kernel::time::Delta::from_millis(10));
        }
    }
}
