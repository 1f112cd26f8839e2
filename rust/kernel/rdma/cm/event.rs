// SPDX-License-Identifier: GPL-2.0

//! rdma_cm's events (`struct rdma_cm_event`) and connection parameters
//! (`struct rdma_conn_param`), as [`super::CmHandler`]s see and give them.

use crate::{bindings, prelude::*};

/// Private data bytes a connect request may carry over rdma_cm (IB CM REQ: 92 bytes less
/// rdma_cm's 36-byte header).
pub const MAX_CONNECT_PRIVATE_DATA: usize = 56;
/// Private data bytes an accept may carry (IB CM REP: 196 bytes).
pub const MAX_ACCEPT_PRIVATE_DATA: usize = 196;
/// Private data bytes a reject may carry (IB CM REJ: 148 bytes).
pub const MAX_REJECT_PRIVATE_DATA: usize = 148;

/// What an event on a CM id is (`enum rdma_cm_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmEventKind {
    /// `rdma_resolve_addr` finished.
    AddrResolved,
    /// `rdma_resolve_addr` failed.
    AddrError,
    /// `rdma_resolve_route` finished.
    RouteResolved,
    /// `rdma_resolve_route` failed.
    RouteError,
    /// A peer asks to connect (delivered through [`super::CmHandler::connect_request`]).
    ConnectRequest,
    /// The peer's reply (REP) to a connect on an id whose QP its consumer moves
    /// ([`super::CmId::own_qp_transitions`]), which the handler answers with
    /// [`super::CmIdRef::establish`]. Ids whose QP rdma_cm moves get
    /// [`CmEventKind::Established`] instead.
    ConnectResponse,
    /// The connection could not be made (protocol error).
    ConnectError,
    /// The peer did not answer (timeout) or cannot be reached.
    Unreachable,
    /// The peer rejected the connection ([`CmEvent::status`] is the reason).
    Rejected,
    /// The connection is up.
    Established,
    /// The connection is down (peer or local disconnect).
    Disconnected,
    /// The device under the id is going away: release the id soon, from process context.
    DeviceRemoval,
    /// The local address changed.
    AddrChange,
    /// The QP has left timewait and may be reused.
    TimewaitExit,
    /// Any other event (multicast, ...), by its C value.
    Other(u32),
}

/// An event delivered to a [`super::CmHandler`].
pub struct CmEvent<'a>(pub(super) &'a bindings::rdma_cm_event);

impl CmEvent<'_> {
    /// The event's kind.
    pub fn kind(&self) -> CmEventKind {
        use CmEventKind::*;
        match self.0.event {
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => AddrResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR => AddrError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => RouteResolved,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => RouteError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => ConnectRequest,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_RESPONSE => ConnectResponse,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => ConnectError,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => Unreachable,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => Rejected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => Established,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => Disconnected,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => DeviceRemoval,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_CHANGE => AddrChange,
            bindings::rdma_cm_event_type_RDMA_CM_EVENT_TIMEWAIT_EXIT => TimewaitExit,
            other => Other(other),
        }
    }

    /// The event's status: 0, a negative errno, or for [`CmEventKind::Rejected`] the reject
    /// reason (IB CM reason code, e.g. 28 for "consumer reject", 8 for "no listener").
    pub fn status(&self) -> i32 {
        self.0.status
    }

    /// The event's name, from `rdma_event_msg`.
    pub fn name(&self) -> &'static CStr {
        // SAFETY: `rdma_event_msg` returns a static string for any value.
        unsafe { CStr::from_char_ptr(bindings::rdma_event_msg(self.0.event)) }
    }

    /// Private data the peer sent with a connect request, accept or reject (may be longer than
    /// what the peer gave: the transport pads it).
    pub fn private_data(&self) -> &[u8] {
        // SAFETY: For the connection events that carry it, `param.conn` is the active member;
        // rdma_cm keeps the buffer alive for the duration of the handler.
        let c = unsafe { &self.0.param.conn };
        if c.private_data.is_null() {
            return &[];
        }
        // SAFETY: As above: `private_data_len` bytes are readable.
        unsafe {
            core::slice::from_raw_parts(
                c.private_data.cast::<u8>(),
                usize::from(c.private_data_len),
            )
        }
    }

    /// The connection parameters the peer offered (connect request) or settled (established).
    pub fn conn_param(&self) -> (u8, u8) {
        // SAFETY: `param.conn` is the member for connection events; reading plain integers.
        let c = unsafe { &self.0.param.conn };
        (c.responder_resources, c.initiator_depth)
    }
}

/// Connection parameters (`struct rdma_conn_param`).
///
/// Private data longer than the transport carries, or retry counts above 7, are refused with
/// `EINVAL` when the parameters are used.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConnParam<'a> {
    /// Private data for the peer.
    pub private_data: &'a [u8],
    /// RDMA READs this side accepts in flight from the peer.
    pub responder_resources: u8,
    /// RDMA READs this side issues in flight to the peer.
    pub initiator_depth: u8,
    /// Transport retries on timeout (0..=7).
    pub retry_count: u8,
    /// Retries when the peer has no RECV posted (0..=7; 7 means forever).
    pub rnr_retry_count: u8,
}

impl ConnParam<'_> {
    pub(super) fn to_c(self, max_pdata: usize) -> Result<bindings::rdma_conn_param> {
        if self.private_data.len() > max_pdata || self.retry_count > 7 || self.rnr_retry_count > 7 {
            return Err(EINVAL);
        }
        let mut p = bindings::rdma_conn_param::default();
        if !self.private_data.is_empty() {
            p.private_data = self.private_data.as_ptr().cast();
            p.private_data_len = self.private_data.len() as u8;
        }
        p.responder_resources = self.responder_resources;
        p.initiator_depth = self.initiator_depth;
        p.flow_control = 1;
        p.retry_count = self.retry_count;
        p.rnr_retry_count = self.rnr_retry_count;
        Ok(p)
    }
}
