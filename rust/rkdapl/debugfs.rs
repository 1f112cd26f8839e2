// SPDX-License-Identifier: GPL-2.0

//! debugfs: what rkdapl's objects are doing, under `/sys/kernel/debug/rkdapl/`.
//!
//! ```text
//! rkdapl/
//!   ia<N>/               one per open IA (N counts from 1 over the module's life)
//!     info               device, owning module, ports, device limits
//!     ep<M>/             one per EP of the IA, from rkdapl_ep_create to rkdapl_ep_free
//!       state            DAT state (UNCONNECTED, CONNECTED, ...)
//!       peer             the peer's address and port, once connecting
//!       counters         per DTO kind posted, completed, bytes; in flight, errors, flushed
//!       evd              entries queued, size and overflows of the EP's DTO and connection EVDs
//! ```
//!
//! The numbers `N` and `M` are also the `ep` field of rkdapl's trace events and log lines.
//! The files use the kernel's Rust debugfs abstraction: a file's data (an `Arc` of its object)
//! lives as long as the file, and removing a directory waits for readers to finish.

use crate::ep::Ep;
use core::fmt;
use kernel::{
    debugfs::{Dir, File, Scope},
    prelude::*,
    rdma::device::DeviceAttrs,
    str::CString,
    sync::Arc,
};

/// The debugfs directory of one EP; dropping it removes the directory.
pub(crate) type EpDir = Pin<KBox<Scope<Arc<Ep>>>>;

/// What an IA's `info` file shows: copies, so that the file holds no device reference (a
/// device must be able to go while its IAs' directories exist).
pub(crate) struct IaInfo {
    pub(crate) dev_name: CString,
    pub(crate) ports: u32,
    pub(crate) attrs: DeviceAttrs,
    pub(crate) owner: &'static CStr,
}

/// Creates `ia<N>` in `root` with its `info` file. The returned `Dir` is the parent of the
/// IA's EP directories; the file is removed when its handle is dropped.
pub(crate) fn ia_dir(root: &Dir, id: u32, info: IaInfo) -> Result<(Dir, Pin<KBox<File<IaInfo>>>)> {
    let name = CString::try_from_fmt(fmt!("ia{id}"))?;
    let dir = root.subdir(&name);
    let file = KBox::pin_init(dir.read_callback_file(c"info", info, &show_ia), GFP_KERNEL)?;
    Ok((dir, file))
}

fn show_ia(ia: &IaInfo, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let a = &ia.attrs;
    writeln!(f, "device {}", ia.dev_name.to_str().unwrap_or("?"))?;
    writeln!(f, "owner {}", ia.owner.to_str().unwrap_or("?"))?;
    writeln!(f, "ports {}", ia.ports)?;
    writeln!(
        f,
        "max_qp_wr {} max_send_sge {} max_recv_sge {} max_cqe {}",
        a.max_qp_wr, a.max_send_sge, a.max_recv_sge, a.max_cqe
    )?;
    writeln!(
        f,
        "max_rdma_read_in {} max_rdma_read_out {} max_mr_size {}",
        a.max_qp_rd_atom, a.max_qp_init_rd_atom, a.max_mr_size
    )
}

/// Creates `ep<M>` under the EP's IA directory.
pub(crate) fn ep_dir(ep: &Arc<Ep>) -> Result<EpDir> {
    let name = CString::try_from_fmt(fmt!("ep{}", ep.id))?;
    KBox::pin_init(
        ep.ia.dir.scope(ep.clone(), &name, |ep, d| {
            d.read_callback_file(c"state", ep, &ep_state);
            d.read_callback_file(c"peer", ep, &ep_peer);
            d.read_callback_file(c"counters", ep, &ep_counters);
            d.read_callback_file(c"evd", ep, &ep_evds);
        }),
        GFP_KERNEL,
    )
}

fn ep_state(ep: &Arc<Ep>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    writeln!(f, "{}", ep.state().name())
}

fn ep_peer(ep: &Arc<Ep>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match ep.peer() {
        Some(a) => {
            crate::abi::inet::fmt_sockaddr(&a, f)?;
            writeln!(f)
        }
        None => writeln!(f, "none"),
    }
}

fn ep_counters(ep: &Arc<Ep>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    ep.sq.stats().show(f)?;
    ep.rq.stats().show(f)?;
    write!(f, "send queue: ")?;
    ep.sq.stats().show_totals(f)?;
    write!(f, "recv queue: ")?;
    ep.rq.stats().show_totals(f)
}

fn ep_evds(ep: &Arc<Ep>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "dto_evd: ")?;
    ep.dto_evd.show(f)?;
    write!(f, "conn_evd: ")?;
    ep.conn_evd.show(f)
}
