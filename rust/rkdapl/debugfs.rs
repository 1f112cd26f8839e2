// SPDX-License-Identifier: GPL-2.0

//! debugfs: what rkdapl's objects are doing, under `/sys/kernel/debug/rkdapl/`.
//!
//! ```text
//! rkdapl/
//!   ia<N>/               one per open IA (N counts from 1 over the module's life)
//!     info               device, owning module, ports, device limits
//!     ep<M>/             one per EP of the IA, from rkdapl_ep_create to rkdapl_ep_free
//!       state            DAT state (UNCONNECTED, CONNECTED, ...)
//!       qp               device and QP number ("device rxe0 qpn 17"; qpn 0: no QP yet)
//!       peer             the peer's address and port, once connecting
//!       counters         per DTO kind posted, completed, bytes; in flight, errors, flushed
//!       evd              entries queued, size and overflows of the EP's DTO and connection EVDs
//! ```
//!
//! The numbers `N` and `M` are also the `ep` field of rkdapl's trace events and log lines; the
//! QP number is their `qpn`, and the `lqpn` of `rdma res show qp`.
//! The files use the kernel's Rust debugfs abstraction: a file's data (an `Arc` of its object)
//! lives as long as the file, and removing a directory waits for readers to finish.

use crate::rdma::device::DeviceAttrs;
use core::fmt;
use kernel::{
    debugfs::{Dir, File, Scope},
    prelude::*,
    str::CString,
    sync::Arc,
};

/// The debugfs directory of one EP; dropping it removes the directory.
pub(crate) type EpDir<T> = Pin<KBox<Scope<Arc<T>>>>;

/// What the files of an EP's directory show (implemented by the EP).
pub(crate) trait EpView: Send + Sync + 'static {
    /// `state`: the DAT state.
    fn show_state(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// `qp`: the device and the number of the EP's QP.
    fn show_qp(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// `peer`: the peer's address, once connecting.
    fn peer(&self) -> Option<crate::rdma::cm::SockAddr>;
    /// `counters`: the DTO counters of both queues.
    fn show_counters(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    /// `evd`: the EP's EVDs.
    fn show_evds(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

/// What an IA's `info` file shows: copies, so that the file holds no device reference (a
/// device must be able to go while its IAs' directories exist).
pub(crate) struct IaInfo {
    pub(crate) dev_name: CString,
    pub(crate) ports: u32,
    pub(crate) attrs: DeviceAttrs,
    pub(crate) owner: CString,
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

/// Creates `ep<id>` in `parent` (the EP's IA directory) for `ep`.
pub(crate) fn ep_dir<T: EpView>(parent: &Dir, id: u32, ep: Arc<T>) -> Result<EpDir<T>> {
    let name = CString::try_from_fmt(fmt!("ep{id}"))?;
    KBox::pin_init(
        parent.scope(ep, &name, |ep, d| {
            d.read_callback_file(c"state", ep, &|ep: &Arc<T>, f: &mut fmt::Formatter<'_>| {
                ep.show_state(f)
            });
            d.read_callback_file(c"qp", ep, &|ep: &Arc<T>, f: &mut fmt::Formatter<'_>| {
                ep.show_qp(f)
            });
            d.read_callback_file(c"peer", ep, &ep_peer::<T>);
            d.read_callback_file(
                c"counters",
                ep,
                &|ep: &Arc<T>, f: &mut fmt::Formatter<'_>| ep.show_counters(f),
            );
            d.read_callback_file(c"evd", ep, &|ep: &Arc<T>, f: &mut fmt::Formatter<'_>| {
                ep.show_evds(f)
            });
        }),
        GFP_KERNEL,
    )
}

fn ep_peer<T: EpView>(ep: &Arc<T>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match ep.peer() {
        Some(a) => writeln!(f, "{a}"),
        None => writeln!(f, "none"),
    }
}
