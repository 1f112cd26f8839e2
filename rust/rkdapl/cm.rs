// SPDX-License-Identifier: GPL-2.0

//! CM dispatch: the context of every rkdapl rdma_cm id says which object (EP, PSP or CR) its
//! events go to. A CR's id is handed to an EP on accept by changing the target.

use crate::rdma::cm::{CmEvent, CmHandler, CmId, CmIdRef, ConnRequest};
use crate::rdma::event::EventKind;
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
};

/// An object that receives the rdma_cm events of an id.
pub(crate) trait CmTarget: Send + Sync {
    /// An event of the id. Process context, serialized per id; the id must not be dropped
    /// here (it is the handler's own).
    fn cm_event(&self, id: &CmIdRef, ev: &CmEvent<'_>);

    /// A connection request on a listening id (PSPs). The default refuses it: `req` dropped
    /// unadopted is left to rdma_cm to reject.
    fn connect_request(self: Arc<Self>, req: ConnRequest<'_, CmCtx>, ev: &CmEvent<'_>) {
        let _ = (req, ev);
    }

    /// An asynchronous event of the id's QP (process context, see
    /// [`CmHandler::qp_event`]); must not drop the id. The default ignores it.
    fn qp_event(&self, kind: EventKind) {
        let _ = kind;
    }
}

/// The context of every rkdapl CM id.
#[pin_data]
pub(crate) struct CmCtx {
    #[pin]
    target: Mutex<Option<Arc<dyn CmTarget>>>,
}

/// The CM ids of rkdapl's EPs, PSPs and CRs.
pub(crate) type EpCmId = CmId<CmCtx>;

impl CmCtx {
    /// A context whose events go to `t`. May sleep.
    ///
    /// # Errors
    ///
    /// `-ENOMEM`.
    pub(crate) fn new(t: Arc<dyn CmTarget>) -> Result<Arc<CmCtx>> {
        Arc::pin_init(
            pin_init!(CmCtx { target <- new_mutex!(Some(t), "rkdapl_cm_target") }),
            GFP_KERNEL,
        )
    }

    /// Sends the id's events to `t` from now on (`None`: nowhere). Process context.
    pub(crate) fn set(&self, t: Option<Arc<dyn CmTarget>>) {
        let old = core::mem::replace(&mut *self.target.lock(), t);
        drop(old);
    }

    fn target(&self) -> Option<Arc<dyn CmTarget>> {
        self.target.lock().clone()
    }
}

impl CmHandler for CmCtx {
    fn event(this: ArcBorrow<'_, Self>, id: &CmIdRef, ev: &CmEvent<'_>) {
        if let Some(t) = this.target() {
            t.cm_event(id, ev);
        }
    }

    fn connect_request(
        listener: ArcBorrow<'_, Self>,
        req: ConnRequest<'_, Self>,
        ev: &CmEvent<'_>,
    ) {
        if let Some(t) = listener.target() {
            t.connect_request(req, ev);
        }
    }

    fn qp_event(this: ArcBorrow<'_, Self>, kind: EventKind) {
        if let Some(t) = this.target() {
            t.qp_event(kind);
        }
    }
}
