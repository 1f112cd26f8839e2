// SPDX-License-Identifier: GPL-2.0

//! The rkdblk wire protocol (docs/blockdev.md), the same layouts as the server's
//! `samples/rkdblk_srv/proto.h`: little-endian fields at fixed offsets, encoded and decoded
//! byte by byte.

/// "RKDB".
pub(crate) const MAGIC: u32 = 0x4244_4b52;
/// The protocol version both sides speak.
pub(crate) const VERSION: u16 = 1;

/// Command operations.
pub(crate) const OP_READ: u8 = 1;
pub(crate) const OP_WRITE: u8 = 2;
pub(crate) const OP_FLUSH: u8 = 3;
/// Command flag: the write is durable before it completes.
pub(crate) const FLAG_FUA: u8 = 1;
/// Command flag: in-capsule data (NVMe over Fabrics' term); the command has no grant (`rkey`
/// and `address` 0). A WRITE's data follows the command in the same SEND; a READ's comes back
/// in the response's SEND with immediate data (the `cid`), into the client's RECV buffer.
pub(crate) const FLAG_INLINE: u8 = 2;
/// Command flag: the client has other commands waiting for their completions, so this one's
/// may wait for the completions the server has ready right after it, to go out in one SEND
/// with them (only with [`ACCEPT_COALESCE`]; a hint).
pub(crate) const FLAG_COALESCE: u8 = 4;

/// Sizes of the messages.
pub(crate) const CONNECT_LEN: usize = 16;
pub(crate) const ACCEPT_LEN: usize = 32;
pub(crate) const CMD_LEN: usize = 32;
pub(crate) const RESP_LEN: usize = 16;
pub(crate) const REJECT_LEN: usize = 16;

/// Accept flag: the export is read-only (the server refuses WRITEs with `-EROFS`).
pub(crate) const ACCEPT_READ_ONLY: u32 = 1;
/// Accept flag: READs of at most `inline_max` bytes with [`FLAG_INLINE`] are answered
/// in-capsule (only if the connect asked for it with [`CONNECT_INLINE_READ`]).
pub(crate) const ACCEPT_INLINE_READ: u32 = 2;
/// Connect flag: this client's RECV buffers take `inline_max` bytes of READ data, if the
/// server offers in-capsule READs.
pub(crate) const CONNECT_INLINE_READ: u16 = 1;
/// Connect flag: this client's RECV buffers take [`COALESCE_MAX`] completions, and it reads
/// every one a plain SEND carries.
pub(crate) const CONNECT_COALESCE: u16 = 2;
/// Accept flag: a plain SEND of the server may carry several completions, 1 to
/// [`COALESCE_MAX`] of [`RESP_LEN`] bytes one after the other (only if the connect asked for
/// it with [`CONNECT_COALESCE`]).
pub(crate) const ACCEPT_COALESCE: u32 = 8;
/// Completions one SEND carries at most.
pub(crate) const COALESCE_MAX: usize = 16;
/// Accept flag: the server names its export (`nqn=`) and the connect's [`nqn_hash`] is its
/// name's.
pub(crate) const ACCEPT_NQN: u32 = 4;

/// The 32-bit FNV-1a hash of an export's name (`nqn=`) that a connect carries, never 0; 0 for
/// no name (a connect without `nqn=`, and earlier clients). Not a secret: it only tells a
/// server that names its export that the client means another one.
pub(crate) fn nqn_hash(name: &[u8]) -> u32 {
    if name.is_empty() {
        return 0;
    }
    let h = name.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    h.max(1)
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn get64(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

/// The connect private data of hardware queue `queue` asking for `depth` credits, with
/// `flags` (`CONNECT_*`), for the export whose [`nqn_hash`] is `nqn` (0: any).
pub(crate) fn connect(queue: u16, depth: u16, flags: u16, nqn: u32) -> [u8; CONNECT_LEN] {
    let mut b = [0u8; CONNECT_LEN];
    put32(&mut b, 0, MAGIC);
    put16(&mut b, 4, VERSION);
    put16(&mut b, 6, queue);
    put16(&mut b, 8, depth);
    put16(&mut b, 10, flags);
    put32(&mut b, 12, nqn);
    b
}

/// What the server's accept says.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Accept {
    /// Credits: commands in flight at most.
    pub(crate) depth: u16,
    /// Bytes per command at most.
    pub(crate) max_io: u32,
    /// The device's size in 512-byte sectors.
    pub(crate) capacity: u64,
    /// Bytes of write data a command may carry in-capsule (0: none).
    pub(crate) inline_max: u32,
    /// The export is read-only.
    pub(crate) read_only: bool,
    /// READs of at most `inline_max` bytes may ask for their data in-capsule.
    pub(crate) inline_read: bool,
    /// The server names its export, and it is the one the connect named ([`ACCEPT_NQN`]).
    pub(crate) nqn_checked: bool,
    /// A plain SEND may carry several completions ([`ACCEPT_COALESCE`]).
    pub(crate) coalesce: bool,
}

/// Decodes the server's accept private data; `None` if it is not an rkdblk accept.
pub(crate) fn accept(b: &[u8]) -> Option<Accept> {
    if b.len() < ACCEPT_LEN || get32(b, 0) != MAGIC || get16(b, 4) != VERSION {
        return None;
    }
    let a = Accept {
        depth: get16(b, 6),
        max_io: get32(b, 8),
        capacity: get64(b, 16),
        inline_max: get32(b, 24),
        read_only: get32(b, 28) & ACCEPT_READ_ONLY != 0,
        inline_read: get32(b, 28) & ACCEPT_INLINE_READ != 0,
        nqn_checked: get32(b, 28) & ACCEPT_NQN != 0,
        coalesce: get32(b, 28) & ACCEPT_COALESCE != 0,
    };
    (a.depth > 0 && a.max_io >= 4096 && get32(b, 12) == 512).then_some(a)
}

/// Why a server refused a connection: the reason of its reject's private data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Reject {
    /// This machine's address is not on the server's allow-list.
    NotAllowed,
    /// The server did not take the connect's private data (another protocol version).
    BadRequest,
    /// The server could not set the connection up.
    NoResources,
    /// The server names its export, and it is not the one the connect named (`nqn=`).
    OtherExport,
    /// A reason this client does not know.
    Other(u16),
}

impl Reject {
    /// What the reason says, for a log line.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Reject::NotAllowed => "this address is not on its allow-list",
            Reject::BadRequest => "it does not take this client's connect (protocol version?)",
            Reject::NoResources => "it could not set the connection up",
            Reject::OtherExport => "it exports another nqn= than this connect names",
            Reject::Other(_) => "a reason this client does not know",
        }
    }

    /// The errno a refused connect returns.
    pub(crate) fn errno(self) -> kernel::error::Error {
        use kernel::error::code::*;
        match self {
            Reject::NotAllowed => EACCES,
            Reject::BadRequest => EPROTO,
            Reject::OtherExport => ENXIO,
            Reject::NoResources | Reject::Other(_) => ECONNREFUSED,
        }
    }
}

/// Decodes the private data of a server's reject; `None` if it carries no rkdblk reason.
pub(crate) fn reject(b: &[u8]) -> Option<Reject> {
    if b.len() < REJECT_LEN || get32(b, 0) != MAGIC || get16(b, 4) != VERSION {
        return None;
    }
    Some(match get16(b, 6) {
        1 => Reject::NotAllowed,
        2 => Reject::BadRequest,
        3 => Reject::NoResources,
        4 => Reject::OtherExport,
        n => Reject::Other(n),
    })
}

/// One command.
pub(crate) struct Cmd {
    pub(crate) op: u8,
    pub(crate) flags: u8,
    pub(crate) cid: u32,
    pub(crate) sector: u64,
    pub(crate) length: u32,
    pub(crate) rkey: u32,
    pub(crate) address: u64,
}

impl Cmd {
    /// The command's bytes on the wire.
    pub(crate) fn encode(&self) -> [u8; CMD_LEN] {
        let mut b = [0u8; CMD_LEN];
        b[0] = self.op;
        b[1] = self.flags;
        put32(&mut b, 4, self.cid);
        put64(&mut b, 8, self.sector);
        put32(&mut b, 16, self.length);
        put32(&mut b, 20, self.rkey);
        put64(&mut b, 24, self.address);
        b
    }
}

/// Decodes the completions a SEND of `b.len()` bytes carries, in order: `(cid, status)` each,
/// the status 0 or a negative errno. `None` unless it is one completion, or (with `coalesce`:
/// [`ACCEPT_COALESCE`], a plain SEND) 2 to [`COALESCE_MAX`] of them, each with a status of 0
/// or an errno (-4095..=-1).
pub(crate) fn resps(b: &[u8], coalesce: bool) -> Option<impl Iterator<Item = (u32, i32)> + '_> {
    let n = b.len() / RESP_LEN;
    let max = if coalesce { COALESCE_MAX } else { 1 };
    let errnos = b
        .chunks_exact(RESP_LEN)
        .all(|r| (-4095..=0).contains(&(get32(r, 4) as i32)));
    (b.len() % RESP_LEN == 0 && (1..=max).contains(&n) && errnos).then(|| {
        b.chunks_exact(RESP_LEN)
            .map(|r| (get32(r, 0), get32(r, 4) as i32))
    })
}

/// The command id of `tag` in its `generation`.
pub(crate) fn cid(tag: u32, generation: u16) -> u32 {
    (tag & 0xffff) | (u32::from(generation) << 16)
}

#[cfg(CONFIG_KUNIT = "y")]
#[kernel::prelude::kunit_tests(rkdblk_proto)]
mod tests {
    use super::*;

    /// `n` completions on the wire, the `i`-th of cid `i + 1` and status `-i`.
    fn wire(n: usize) -> [u8; RESP_LEN * (COALESCE_MAX + 1)] {
        let mut b = [0u8; RESP_LEN * (COALESCE_MAX + 1)];
        for (i, r) in b.chunks_exact_mut(RESP_LEN).take(n).enumerate() {
            put32(r, 0, i as u32 + 1);
            put32(r, 4, (-(i as i32)) as u32);
        }
        b
    }

    #[test]
    fn one_completion_is_taken_either_way() {
        let b = wire(1);
        for coalesce in [false, true] {
            let mut it = resps(&b[..RESP_LEN], coalesce).expect("one completion");
            assert_eq!(it.next(), Some((1, 0)));
            assert_eq!(it.next(), None);
        }
    }

    #[test]
    fn coalesced_completions_are_taken_in_order() {
        let b = wire(COALESCE_MAX);
        for n in [2, 3, COALESCE_MAX] {
            let it = resps(&b[..n * RESP_LEN], true).expect("coalesced completions");
            let mut count = 0;
            for (i, (cid, status)) in it.enumerate() {
                assert_eq!((cid, status), (i as u32 + 1, -(i as i32)));
                count += 1;
            }
            assert_eq!(count, n);
        }
    }

    #[test]
    fn malformed_completions_are_refused() {
        let b = wire(COALESCE_MAX + 1);
        // Several where the accept did not say so.
        assert!(resps(&b[..2 * RESP_LEN], false).is_none());
        // None, a piece of one, more than a SEND carries.
        for len in [0, 1, RESP_LEN - 1, RESP_LEN + 1, 2 * RESP_LEN - 1] {
            assert!(resps(&b[..len], true).is_none());
        }
        assert!(resps(&b[..(COALESCE_MAX + 1) * RESP_LEN], true).is_none());
        // A status that is no errno, alone or among others.
        let mut bad = wire(3);
        put32(&mut bad[RESP_LEN..], 4, 1);
        assert!(resps(&bad[..RESP_LEN], true).is_some());
        assert!(resps(&bad[RESP_LEN..2 * RESP_LEN], true).is_none());
        assert!(resps(&bad[..3 * RESP_LEN], true).is_none());
        put32(&mut bad[RESP_LEN..], 4, (-4096i32) as u32);
        assert!(resps(&bad[..3 * RESP_LEN], true).is_none());
    }
}
