// SPDX-License-Identifier: GPL-2.0

//! `/dev/rkdblk-ctl`: connects and disconnects rkdblk disks at run time, as
//! `/dev/nvme-fabrics` does for NVMe over Fabrics (`drivers/nvme/host/fabrics.c`).
//!
//! One write is one command, its words separated by blanks or commas. A connect takes
//! `/dev/nvme-fabrics`' option names (nvme-cli's `connect`), with or without the word
//! `connect` in front:
//!
//!   [connect] transport=rdma,traddr=<address>[,trsvcid=4421][,host_traddr=<address>]
//!             [,nr_io_queues=1][,queue_size=16][,timeout_ms=30000]
//!             [,reconnect_delay=10][,ctrl_loss_tmo=600][,fast_io_fail_tmo=-1][,nqn=<name>]
//!   disconnect <name>
//!   reconnect <name>
//!
//! `transport` may be left out (`rdma` is the only one); `traddr` is the server's address,
//! `trsvcid` its port, `host_traddr` this machine's address on the RDMA device and the
//! connections' source address (default `traddr`, a loopback), `nr_io_queues` the hardware queues (1..16), `queue_size` the commands
//! in flight per queue asked for (1..1024), `timeout_ms` the request timeout, `reconnect_delay`
//! the seconds between attempts to reconnect a failed disk (1..86400) and `ctrl_loss_tmo` the
//! seconds of attempts before its I/O fails (-1: forever, 0: at once), `fast_io_fail_tmo` the
//! seconds without a live path before its I/O fails while it goes on reconnecting (-1, the
//! default: never; the disk's, from its first connect, as `timeout_ms`). The names of
//! earlier versions, `server`, `port`, `local`, `queues` and `depth`, are still taken for the
//! same options. An option given twice takes the last value. `nqn` (1 to 64 bytes) names the
//! export: a connect with the `nqn` of a disk there is adds a path to that disk instead of a
//! new disk (multipath, `path.rs`); then the listing has a line per path, each with `nqn=`,
//! `path=` and the path's state before `state=`.
//!
//! Addresses are IPv4 (`10.77.0.1`) or IPv6 (`fd00::1`) text. `connect` connects one EP per
//! hardware queue and adds the disk under the lowest free name `rkdblkN`; it returns once the
//! disk is added (or with the error that stopped it, every queue then disconnected).
//! `disconnect` deletes the disk and disconnects it; it is refused with `-EBUSY` while the disk
//! is open (mounted, say). `reconnect` connects a failed or connecting disk now (a new IA, PZ
//! and queues, as its `connect` said), keeping the disk, its name and its mounts: after a
//! server restart, say, or `rdma link delete` and `add`; a disk also reconnects by itself
//! (`recover.rs`). A read gives a usage line ([`USAGE`]), then the
//! disks, one line each, in the connect's own option names:
//!
//!   rkdblk0 transport=rdma traddr=10.77.0.1 trsvcid=4421 nr_io_queues=2 queue_size=16 state=live
//!
//! (`host_traddr=` after `trsvcid` when the connect gave it; `reconnect_delay=` and
//! `ctrl_loss_tmo=` before `state=` when either is not the default, then `fast_io_fail_tmo=`
//! when it is set). `queue_size` is the depth
//! the server granted. `state=connecting` once a queue failed (a lost connection, a timeout)
//! while it reconnects, `state=failed` once it gave up: its requests end with `EIO` until it
//! is reconnected.
//! Commands on different disks run side by side; the listing shows a disk once it is added.
//! The device node is root's only (mode 0600).
//!
//! # Errors of a write
//!
//! `-EINVAL` for an unknown command or option, a malformed value, a transport other than
//! `rdma` or a `connect` without `traddr`; `-E2BIG` for a write longer than 512 bytes; `-EFAULT` if it cannot be read;
//! `-ENODEV` for a `disconnect` or `reconnect` of no such disk; `-EBUSY` if it is open;
//! `-EISCONN` for a `reconnect` of a live disk (every path live); `-EPROTO` if the server's
//! accept no longer fits the disk (another capacity, a smaller depth or request size; for a new
//! path, also another read-only flag); `-ENOSPC` with [`MAX_DISKS`] disks, or for a path beyond
//! the second; `-EALREADY` for a path the disk has (the same `traddr`, `trsvcid` and
//! `host_traddr`); `-EINVAL` for a path whose `nr_io_queues` is not the disk's; otherwise the error of the connection (`-ECONNREFUSED` if the server refused or is not there, `-ETIMEDOUT`,
//! `-EPROTO` for a peer that is not an rkdblk server, the errors of rkdapl's calls).

use crate::disk::{self, Opts, DEVICES, MAX_DISKS};
use core::{fmt::Write, net::IpAddr};
use kernel::{
    fs::{File, Kiocb},
    iov::{IovIterDest, IovIterSource},
    miscdevice::{MiscDevice, MiscDeviceRegistration},
    prelude::*,
};

/// Bytes of one command at most.
const MAX_WRITE: usize = 512;
/// Bytes of one line of the listing at most (about 300 with two IPv6 addresses of 39
/// characters, an `nqn=` of 64 bytes and every option).
const MAX_LINE: usize = 320;

/// The first line a read gives.
pub(crate) const USAGE: &str = "usage: [connect] transport=rdma,traddr=ADDR[,trsvcid=4421][,host_traddr=ADDR][,nr_io_queues=1][,queue_size=16][,timeout_ms=30000][,reconnect_delay=10][,ctrl_loss_tmo=600][,fast_io_fail_tmo=-1][,nqn=NAME] | disconnect rkdblkN | reconnect rkdblkN\n";

/// An open `/dev/rkdblk-ctl`: nothing of its own, every command acts on the module's list.
pub(crate) struct Ctl;

/// A command written to the device.
#[derive(Debug, PartialEq)]
pub(crate) enum Command<'a> {
    Connect(Opts),
    Disconnect(&'a str),
    Reconnect(&'a str),
}

/// Parses `value` as an unsigned number in `range`.
fn number<T>(key: &str, value: &str, range: core::ops::RangeInclusive<T>) -> Result<T>
where
    T: core::str::FromStr + PartialOrd,
{
    match value.parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => {
            pr_warn!("rkdblk-ctl: {}={}: not a number in range\n", key, value);
            Err(EINVAL)
        }
    }
}

fn address(key: &str, value: &str) -> Result<IpAddr> {
    value.parse::<IpAddr>().map_err(|_| {
        pr_warn!(
            "rkdblk-ctl: {}={}: not an IPv4 or IPv6 address\n",
            key,
            value
        );
        EINVAL
    })
}

/// Parses one command (see the module documentation).
///
/// # Errors
///
/// `-EINVAL` for anything but a well-formed command.
pub(crate) fn parse(text: &str) -> Result<Command<'_>> {
    let mut words = text
        .split(|c: char| c.is_ascii_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .peekable();
    // `/dev/nvme-fabrics`' form: the options alone are a connect.
    if words.peek().is_some_and(|w| w.contains('=')) {
        return connect(words);
    }
    match words.next() {
        Some("connect") => connect(words),
        Some(verb @ ("disconnect" | "reconnect")) => match (words.next(), words.next()) {
            (Some(name), None) if verb == "disconnect" => Ok(Command::Disconnect(name)),
            (Some(name), None) => Ok(Command::Reconnect(name)),
            _ => {
                pr_warn!("rkdblk-ctl: {} takes one disk name\n", verb);
                Err(EINVAL)
            }
        },
        _ => {
            pr_warn!("rkdblk-ctl: commands are connect, disconnect and reconnect\n");
            Err(EINVAL)
        }
    }
}

/// Parses a connect's options, `words`.
fn connect<'a>(words: impl Iterator<Item = &'a str>) -> Result<Command<'a>> {
    let mut server = None;
    let mut o = Opts::default();
    for w in words {
        let Some((key, value)) = w.split_once('=') else {
            pr_warn!("rkdblk-ctl: {}: not key=value\n", w);
            return Err(EINVAL);
        };
        match key {
            "transport" if value == "rdma" => {}
            "transport" => {
                pr_warn!(
                    "rkdblk-ctl: transport={}: rkdblk has transport=rdma only\n",
                    value
                );
                return Err(EINVAL);
            }
            "traddr" | "server" => server = Some(address(key, value)?),
            "host_traddr" | "local" => o.local = Some(address(key, value)?),
            "trsvcid" | "port" => o.port = number(key, value, 1..=u16::MAX)?,
            "nr_io_queues" | "queues" => o.queues = number(key, value, 1..=16)?,
            "queue_size" | "depth" => o.depth = number(key, value, 1..=1024)?,
            "timeout_ms" => o.timeout_ms = number(key, value, 1..=3_600_000)?,
            "reconnect_delay" => o.reconnect_delay = number(key, value, 1..=86_400)?,
            // nvme-fabrics takes any negative value for "forever"; -1 is the one it documents.
            "ctrl_loss_tmo" => o.ctrl_loss_tmo = number(key, value, -1..=i32::MAX)?,
            "fast_io_fail_tmo" => o.fast_io_fail_tmo = number(key, value, -1..=i32::MAX)?,
            "nqn" => {
                o.nqn = disk::Nqn::new(value).ok_or_else(|| {
                    pr_warn!("rkdblk-ctl: nqn={}: 1 to {} bytes\n", value, disk::NQN_MAX);
                    EINVAL
                })?
            }
            _ => {
                pr_warn!("rkdblk-ctl: unknown option {}\n", key);
                return Err(EINVAL);
            }
        }
    }
    let Some(server) = server else {
        pr_warn!("rkdblk-ctl: connect needs traddr=<address>\n");
        return Err(EINVAL);
    };
    o.server = server;
    Ok(Command::Connect(o))
}

#[vtable]
impl MiscDevice for Ctl {
    type Ptr = KBox<Self>;

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        Ok(KBox::new(Ctl, GFP_KERNEL)?)
    }

    fn write_iter(_kiocb: Kiocb<'_, Self::Ptr>, iov: &mut IovIterSource<'_>) -> Result<usize> {
        let len = iov.len();
        if len > MAX_WRITE {
            return Err(E2BIG);
        }
        let mut buf = [0u8; MAX_WRITE];
        if iov.copy_from_iter(&mut buf[..len]) != len {
            return Err(EFAULT);
        }
        let text = core::str::from_utf8(&buf[..len]).map_err(|_| EINVAL)?;
        match parse(text)? {
            Command::Connect(o) => disk::connect(&o).map(|_| ())?,
            Command::Disconnect(name) => disk::disconnect(name)?,
            Command::Reconnect(name) => disk::reconnect(name)?,
        }
        Ok(len)
    }

    fn read_iter(mut kiocb: Kiocb<'_, Self::Ptr>, iov: &mut IovIterDest<'_>) -> Result<usize> {
        let mut page = KVec::from_elem(
            0u8,
            USAGE.len() + MAX_DISKS as usize * crate::path::MAX_PATHS * MAX_LINE,
            GFP_KERNEL,
        )?;
        let mut f = kernel::str::Formatter::new(&mut page);
        // Cannot fail: the page has room for it.
        let _ = f.write_str(USAGE);
        for c in DEVICES.lock().disks.iter() {
            // Cannot fail: every disk's line fits.
            if c.describe(&mut f).is_err() {
                break;
            }
        }
        // `Formatter` counts what did not fit as well.
        let n = f.bytes_written().min(page.len());
        iov.simple_read_from_buffer(kiocb.ki_pos_mut(), &page[..n])
    }
}

/// Writes one line about a disk (see the module documentation) to `f`: `depth` is the one the
/// server granted.
pub(crate) fn describe_line(
    f: &mut impl Write,
    name: &[u8],
    o: &Opts,
    depth: u32,
    path: Option<usize>,
    state: &str,
) -> core::fmt::Result {
    write!(
        f,
        "{} transport=rdma traddr={} trsvcid={}",
        core::str::from_utf8(name).map_err(|_| core::fmt::Error)?,
        o.server,
        o.port
    )?;
    if let Some(local) = o.local {
        write!(f, " host_traddr={}", local)?;
    }
    write!(f, " nr_io_queues={} queue_size={}", o.queues, depth)?;
    // Shown when the connect gave other values than nvme-fabrics' defaults.
    if o.reconnect_delay != disk::RECONNECT_DELAY || o.ctrl_loss_tmo != disk::CTRL_LOSS_TMO {
        write!(
            f,
            " reconnect_delay={} ctrl_loss_tmo={}",
            o.reconnect_delay, o.ctrl_loss_tmo
        )?;
    }
    if o.fast_io_fail_tmo != disk::FAST_IO_FAIL_TMO {
        write!(f, " fast_io_fail_tmo={}", o.fast_io_fail_tmo)?;
    }
    if !o.nqn.is_none() {
        write!(f, " nqn={}", o.nqn)?;
    }
    if let Some(p) = path {
        write!(f, " path={}", p)?;
    }
    writeln!(f, " state={}", state)
}

#[cfg(CONFIG_KUNIT = "y")]
#[kunit_tests(rkdblk_ctl)]
mod tests {
    use super::*;
    use core::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn connect_with_defaults() -> Result {
        let Command::Connect(o) = parse("connect server=10.77.0.1\n")? else {
            return Err(EINVAL);
        };
        assert_eq!(o.server, IpAddr::V4(Ipv4Addr::new(10, 77, 0, 1)));
        assert_eq!((o.local, o.port, o.queues, o.depth), (None, 4421, 1, 16));
        assert_eq!(o.timeout_ms, 30_000);
        Ok(())
    }

    #[test]
    fn connect_with_every_option() -> Result {
        // The nvme-fabrics names, rkdblk's own (aliases), separators mixed, a later repeat
        // winning.
        for text in [
            "transport=rdma,traddr=fd00::1,trsvcid=4420,host_traddr=fd00::2,nr_io_queues=4,queue_size=64,timeout_ms=5\n",
            "connect transport=rdma traddr=fd00::1 trsvcid=4420 host_traddr=fd00::2 nr_io_queues=4 queue_size=64 timeout_ms=5",
            "connect server=fd00::1 port=4420 local=fd00::2 queues=4 depth=64 timeout_ms=5",
            "connect,server=fd00::1,local=fd00::2 port=4420,queues=4 depth=64 timeout_ms=5",
            "traddr=fd00::9,trsvcid=4420,host_traddr=fd00::2,nr_io_queues=4,queue_size=64,timeout_ms=5,traddr=fd00::1",
        ] {
            let Command::Connect(o) = parse(text)? else {
                return Err(EINVAL);
            };
            assert_eq!(
                o.server,
                IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1))
            );
            assert_eq!(
                o.local,
                Some(IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2)))
            );
            assert_eq!((o.port, o.queues, o.depth, o.timeout_ms), (4420, 4, 64, 5));
        }
        Ok(())
    }

    #[test]
    fn listing_line_uses_the_option_names() -> Result {
        let Command::Connect(o) = parse("traddr=10.77.0.1,nr_io_queues=2")? else {
            return Err(EINVAL);
        };
        let mut buf = [0u8; MAX_LINE];
        let mut f = kernel::str::Formatter::new(&mut buf);
        describe_line(&mut f, b"rkdblk3", &o, 8, None, "failed").map_err(|_| EINVAL)?;
        let n = f.bytes_written();
        assert_eq!(
            &buf[..n],
            b"rkdblk3 transport=rdma traddr=10.77.0.1 trsvcid=4421 nr_io_queues=2 queue_size=8 state=failed\n"
        );
        Ok(())
    }

    #[test]
    fn reconnect_options() -> Result {
        let Command::Connect(o) = parse("traddr=10.77.0.1")? else {
            return Err(EINVAL);
        };
        assert_eq!(
            (o.reconnect_delay, o.ctrl_loss_tmo, o.fast_io_fail_tmo),
            (10, 600, -1)
        );
        let Command::Connect(o) = parse("traddr=10.77.0.1,reconnect_delay=2,ctrl_loss_tmo=-1")?
        else {
            return Err(EINVAL);
        };
        assert_eq!((o.reconnect_delay, o.ctrl_loss_tmo), (2, -1));
        let mut buf = [0u8; MAX_LINE];
        let mut f = kernel::str::Formatter::new(&mut buf);
        describe_line(&mut f, b"rkdblk0", &o, 16, None, "connecting").map_err(|_| EINVAL)?;
        let n = f.bytes_written();
        assert_eq!(
            &buf[..n],
            b"rkdblk0 transport=rdma traddr=10.77.0.1 trsvcid=4421 nr_io_queues=1 queue_size=16 reconnect_delay=2 ctrl_loss_tmo=-1 state=connecting\n"
        );
        let Command::Connect(o) = parse("traddr=10.77.0.1,fast_io_fail_tmo=5")? else {
            return Err(EINVAL);
        };
        assert_eq!(o.fast_io_fail_tmo, 5);
        let mut f = kernel::str::Formatter::new(&mut buf);
        describe_line(&mut f, b"rkdblk1", &o, 16, None, "live").map_err(|_| EINVAL)?;
        let n = f.bytes_written();
        assert_eq!(
            &buf[..n],
            b"rkdblk1 transport=rdma traddr=10.77.0.1 trsvcid=4421 nr_io_queues=1 queue_size=16 fast_io_fail_tmo=5 state=live\n"
        );
        for bad in [
            "traddr=10.77.0.1,reconnect_delay=0",
            "traddr=10.77.0.1,ctrl_loss_tmo=-2",
            "traddr=10.77.0.1,ctrl_loss_tmo=x",
            "traddr=10.77.0.1,fast_io_fail_tmo=-2",
        ] {
            assert_eq!(parse(bad), Err(EINVAL));
        }
        Ok(())
    }

    #[test]
    fn nqn_hash_is_fnv1a() {
        // The connect's `nqn_hash`: 32-bit FNV-1a, as the server's `rkdblk_nqn_hash()`.
        assert_eq!(crate::proto::nqn_hash(b""), 0);
        assert_eq!(crate::proto::nqn_hash(b"a"), 0xe40c_292c);
        assert_eq!(
            crate::proto::nqn_hash(b"nqn.2026-12.org.rkdapl:a"),
            0x1b95_17e1
        );
    }

    #[test]
    fn disconnect_and_reconnect_take_one_name() -> Result {
        assert_eq!(
            parse(" disconnect rkdblk3 \n")?,
            Command::Disconnect("rkdblk3")
        );
        assert_eq!(parse("disconnect"), Err(EINVAL));
        assert_eq!(parse("disconnect rkdblk0 rkdblk1"), Err(EINVAL));
        assert_eq!(parse("reconnect,rkdblk12")?, Command::Reconnect("rkdblk12"));
        assert_eq!(parse("reconnect"), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn bad_commands_are_refused() {
        for bad in [
            "",
            "\n",
            "connect",
            "connect port=4421",
            "connect server=10.77.0",
            "connect server=10.77.0.1 port=0",
            "connect server=10.77.0.1 port=65536",
            "connect server=10.77.0.1 queues=0",
            "connect server=10.77.0.1 queues=17",
            "connect server=10.77.0.1 depth=1025",
            "connect server=10.77.0.1 depth=-1",
            "connect server=10.77.0.1 speed=9",
            "connect server=10.77.0.1 queues",
            "connect server=host.example",
            "transport=tcp,traddr=10.77.0.1",
            "transport=rdma",
            "transport=rdma,traddr=10.77.0.1,hostnqn=nqn.2014-08.org.example:host",
            "transport=rdma,traddr=10.77.0.1,nqn=",
            "traddr=10.77.0.1,nr_io_queues=17",
            "traddr=10.77.0.1,queue_size=0",
            "traddr=10.77.0.1,trsvcid=http",
            "frobnicate rkdblk0",
            "Connect server=10.77.0.1",
        ] {
            let r = parse(bad);
            if r != Err(EINVAL) {
                pr_err!("rkdblk_ctl: \"{}\" gave {:?}\n", bad, r);
            }
            assert_eq!(r, Err(EINVAL));
        }
    }
}
