/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkdapl: a kDAPL-style RDMA provider for kernel consumers.
 *
 * The DAT 2.0 / kDAPL object model on Linux's RDMA stack (ib_core verbs, ib_cq completions,
 * rdma_cm connections):
 *
 *  IA   interface adapter: an open RDMA device           (DAT 2.0 6.1, dat_ia_open)
 *  PZ   protection zone: an IB protection domain          (6.6, dat_pz_create)
 *  LMR  local memory region: a DMA-mapped kernel buffer   (6.7, dat_lmr_create)
 *  RMR  remote memory region: a remote grant with an rkey (6.8, dat_rmr_bind)
 *  EVD  event dispatcher: a queue of events               (5.3, dat_evd_*)
 *  EP   endpoint: one reliable connection (RC QP)         (6.4, dat_ep_*)
 *  PSP  public service point: a listening port            (6.3, dat_psp_create)
 *  CR   connection request received on a PSP              (6.3, dat_cr_accept/reject)
 *  DTO  data transfer operation: send, recv, RDMA write/read, carrying a cookie (6.5)
 *
 * All functions return 0 or a negative errno. Handles are validated: NULL, a handle of
 * another kind or one already freed (unless its address was reused) gives -EINVAL and changes
 * nothing. Objects keep what they were created from alive (an EP keeps its PZ, ...), so free
 * order is free; an LMR cannot be freed while a DTO uses it (-EBUSY).
 *
 * Build a consumer against the kernel build directory rkdapl.ko was built for (the path in
 * <rkdapl>/out/kdir), with LLVM=-19 (that kernel is built with clang 19) and
 * KBUILD_EXTRA_SYMBOLS=<rkdapl>/Module.symvers; docs/guide.md has the make line. The module
 * must be GPL-compatible and import rkdapl's symbol namespace: the symbols are
 * EXPORT_SYMBOL_NS_GPL(sym, "RKDAPL"), so a consumer has MODULE_IMPORT_NS("RKDAPL"), or modpost
 * fails its build and the kernel refuses to load it.
 */
#ifndef _RKDAPL_H
#define _RKDAPL_H

#include <linux/types.h>
#include <linux/socket.h>

/*
 * RKDAPL_VERSION: the release of rkdapl these declarations come from; rkdapl.ko carries the
 * same string as its modinfo "version" (modinfo -F version rkdapl).
 *
 * RKDAPL_API_VERSION: the C API's version, an integer that grows by one with every release
 * that adds to or changes this header (a consumer can test for a feature with
 * "#if RKDAPL_API_VERSION >= N"). A change that breaks source compatibility also changes
 * RKDAPL_VERSION's major number.
 */
#define RKDAPL_VERSION "0.1.0"
#define RKDAPL_API_VERSION 1

struct rkdapl_ia;
struct rkdapl_pz;
struct rkdapl_lmr;
struct rkdapl_rmr;
struct rkdapl_evd;
struct rkdapl_ep;
struct rkdapl_psp;
struct rkdapl_cr;
struct rkdapl_srq;

/* Bytes of private data a connect, accept, reject or event carries at most. */
#define RKDAPL_MAX_PRIVATE_DATA 56
/* rkdapl_evd_wait(): no time limit (DAT's DAT_TIMEOUT_INFINITE). */
#define RKDAPL_TIMEOUT_INFINITE 0xffffffffU

/**
 * enum rkdapl_mem_priv - memory privileges of an LMR (DAT_MEM_PRIV_FLAGS)
 * @RKDAPL_MEM_LOCAL_WRITE: RECV and RDMA READ may place data in the LMR.
 * @RKDAPL_MEM_REMOTE_READ: RMRs over the LMR may grant remote RDMA READ.
 * @RKDAPL_MEM_REMOTE_WRITE: RMRs over the LMR may grant remote RDMA WRITE.
 * @RKDAPL_MEM_REMOTE_ATOMIC: RMRs over the LMR may grant remote atomics
 *	(rkdapl_post_fetch_add(), rkdapl_post_cmp_swap()) on its 8-byte aligned words.
 */
enum rkdapl_mem_priv {
	RKDAPL_MEM_LOCAL_WRITE = 1 << 0,
	RKDAPL_MEM_REMOTE_READ = 1 << 1,
	RKDAPL_MEM_REMOTE_WRITE = 1 << 2,
	RKDAPL_MEM_REMOTE_ATOMIC = 1 << 3,
};

/**
 * enum rkdapl_event_type - what an &struct rkdapl_event reports (DAT_EVENT_NUMBER)
 * @RKDAPL_DTO_COMPLETION_EVENT: a DTO completed; @cookie, @status, @op, @transferred_length.
 * @RKDAPL_RMR_BIND_COMPLETION_EVENT: an RMR bind (@op %RKDAPL_DTO_RMR_BIND) or unbind
 *	completed; the grant is usable (or revoked) from now on.
 * @RKDAPL_CONNECTION_REQUEST_EVENT: a peer asks to connect to a PSP; @cr, private data.
 * @RKDAPL_CONNECTION_EVENT_ESTABLISHED: the EP is connected; the peer's private data.
 * @RKDAPL_CONNECTION_EVENT_PEER_REJECTED: the peer rejected; @status is the IB CM reject
 *	reason (28: rejected by the consumer, 8: no listener on the port).
 * @RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED: the local side could not connect (@status).
 * @RKDAPL_CONNECTION_EVENT_UNREACHABLE: the peer cannot be reached (@status).
 * @RKDAPL_CONNECTION_EVENT_TIMED_OUT: the connect timeout passed.
 * @RKDAPL_CONNECTION_EVENT_DISCONNECTED: the connection ended (either side disconnected);
 *	@status -ECONNRESET on the passive side when it ended before this side saw it
 *	established (see rkdapl_cr_accept()), 0 otherwise.
 * @RKDAPL_CONNECTION_EVENT_BROKEN: the connection was lost, e.g. the device went away.
 * @RKDAPL_ASYNC_EVD_OVERFLOW: the EVD @evd was full; @transferred_length events were lost.
 *	Reported in @evd itself, before its next event, and, once per overflow, on the IA's
 *	async EVD (rkdapl_ia_set_async_evd()), with @transferred_length 1.
 * @RKDAPL_ASYNC_IA_CATASTROPHIC: on the IA's async EVD: the device went away (unregistered,
 *	e.g. `rdma link delete` or the driver unloaded), @status -ENODEV. Reported before the
 *	EPs' %RKDAPL_CONNECTION_EVENT_BROKEN; free everything on the IA. Also for a fatal
 *	device error (IB_EVENT_DEVICE_FATAL, DAT's DAT_ASYNC_ERROR_IA_CATASTROPHIC too), with
 *	@status -EIO: the device is still registered but failed; its driver usually removes it
 *	next (then -ENODEV follows).
 * @RKDAPL_ASYNC_SRQ_LIMIT_REACHED: on the IA's async EVD: fewer RECVs than the SRQ's low
 *	watermark are left in it (rkdapl_srq_set_lw()); @cookie is the SRQ's handle
 *	((__u64)(uintptr_t)srq). Reported once per rkdapl_srq_set_lw().
 * @RKDAPL_ASYNC_SRQ_ERROR: on the IA's async EVD: the SRQ whose handle is @cookie failed
 *	(IB_EVENT_SRQ_ERR); its EPs cannot receive any more.
 * @RKDAPL_ASYNC_PORT_ACTIVE: on the IA's async EVD: port @port of the IA's device became
 *	ACTIVE (IB_EVENT_PORT_ACTIVE; RoCE and iWARP: its network device's link came up).
 *	Connections can be made through it again. @status 0.
 * @RKDAPL_ASYNC_PORT_ERROR: on the IA's async EVD: port @port left ACTIVE
 *	(IB_EVENT_PORT_ERR; RoCE and iWARP: its network device went down or lost its carrier).
 *	Connections through it stay (nothing is torn down) but move no data until the port is
 *	ACTIVE again, or until their transport retries run out (%RKDAPL_DTO_TRANSPORT_ERROR). @status 0.
 * @RKDAPL_ASYNC_GID_CHANGE: on the IA's async EVD: port @port's GID table changed
 *	(IB_EVENT_GID_CHANGE; RoCE: an IP address of its network device was added or removed).
 * @RKDAPL_ASYNC_LID_CHANGE: on the IA's async EVD: port @port's LID changed (InfiniBand).
 * @RKDAPL_ASYNC_CLIENT_REREGISTER: on the IA's async EVD: the subnet manager of port @port
 *	asks clients to register again (InfiniBand).
 * @RKDAPL_ASYNC_PKEY_CHANGE: on the IA's async EVD: port @port's P_Key table changed.
 * @RKDAPL_ASYNC_SM_CHANGE: on the IA's async EVD: port @port's subnet manager changed.
 * @RKDAPL_ASYNC_EP_BROKEN: on the IA's async EVD (DAT's DAT_ASYNC_ERROR_EP_BROKEN): the QP
 *	of EP @ep failed: @status -EIO (IB_EVENT_QP_FATAL), -EPROTO (IB_EVENT_QP_REQ_ERR, the
 *	peer sent an invalid request), -EACCES (IB_EVENT_QP_ACCESS_ERR, an access violation)
 *	or -ENETUNREACH (IB_EVENT_PATH_MIG_ERR). @ep also gets
 *	%RKDAPL_CONNECTION_EVENT_BROKEN with the same @status on its connection EVD, unless it
 *	was already DISCONNECTED; its posted DTOs complete (flushed).
 * @RKDAPL_ASYNC_CQ_ERROR: on the IA's async EVD: a CQ of EP @ep failed (IB_EVENT_CQ_ERR,
 *	e.g. an overrun), @status -EIO; @evd is the EP's DTO EVD, whose completions may be lost.
 *
 * Port events (20..26) say which port in &struct rkdapl_event.port; they come from ib_core's
 * event handler (process context), one per change, in the order ib_core dispatches them.
 * See docs/guide.md ("Async events").
 */
enum rkdapl_event_type {
	RKDAPL_DTO_COMPLETION_EVENT = 1,
	RKDAPL_RMR_BIND_COMPLETION_EVENT = 2,
	RKDAPL_CONNECTION_REQUEST_EVENT = 3,
	RKDAPL_CONNECTION_EVENT_ESTABLISHED = 4,
	RKDAPL_CONNECTION_EVENT_PEER_REJECTED = 5,
	RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED = 6,
	RKDAPL_CONNECTION_EVENT_UNREACHABLE = 7,
	RKDAPL_CONNECTION_EVENT_TIMED_OUT = 8,
	RKDAPL_CONNECTION_EVENT_DISCONNECTED = 9,
	RKDAPL_CONNECTION_EVENT_BROKEN = 10,
	RKDAPL_ASYNC_EVD_OVERFLOW = 11,
	RKDAPL_ASYNC_IA_CATASTROPHIC = 12,
	RKDAPL_ASYNC_SRQ_LIMIT_REACHED = 13,
	RKDAPL_ASYNC_SRQ_ERROR = 14,
	RKDAPL_ASYNC_PORT_ACTIVE = 20,
	RKDAPL_ASYNC_PORT_ERROR = 21,
	RKDAPL_ASYNC_GID_CHANGE = 22,
	RKDAPL_ASYNC_LID_CHANGE = 23,
	RKDAPL_ASYNC_CLIENT_REREGISTER = 24,
	RKDAPL_ASYNC_PKEY_CHANGE = 25,
	RKDAPL_ASYNC_SM_CHANGE = 26,
	RKDAPL_ASYNC_EP_BROKEN = 27,
	RKDAPL_ASYNC_CQ_ERROR = 28,
};

/**
 * enum rkdapl_dto_op - operation of a DTO completion
 * @RKDAPL_DTO_SEND: rkdapl_post_send()
 * @RKDAPL_DTO_RECV: rkdapl_post_recv()
 * @RKDAPL_DTO_RDMA_WRITE: rkdapl_post_rdma_write()
 * @RKDAPL_DTO_RDMA_READ: rkdapl_post_rdma_read()
 * @RKDAPL_DTO_RMR_BIND: rkdapl_rmr_bind()
 * @RKDAPL_DTO_RMR_UNBIND: rkdapl_rmr_unbind()
 * @RKDAPL_DTO_RDMA_WRITE_IMM: rkdapl_post_rdma_write_imm()
 * @RKDAPL_DTO_SEND_INVALIDATE: rkdapl_post_send_with_invalidate()
 * @RKDAPL_DTO_FETCH_ADD: rkdapl_post_fetch_add()
 * @RKDAPL_DTO_CMP_SWAP: rkdapl_post_cmp_swap()
 * @RKDAPL_DTO_SEND_IMM: rkdapl_post_send_imm()
 *
 * The send-queue operations (SEND, RDMA_WRITE, RDMA_READ, RDMA_WRITE_IMM, SEND_INVALIDATE,
 * SEND_IMM) are also the &struct rkdapl_dto.op values of rkdapl_post_chain(); the atomics are
 * posted alone.
 */
enum rkdapl_dto_op {
	RKDAPL_DTO_SEND = 1,
	RKDAPL_DTO_RECV = 2,
	RKDAPL_DTO_RDMA_WRITE = 3,
	RKDAPL_DTO_RDMA_READ = 4,
	RKDAPL_DTO_RMR_BIND = 5,
	RKDAPL_DTO_RMR_UNBIND = 6,
	RKDAPL_DTO_RDMA_WRITE_IMM = 7,
	RKDAPL_DTO_SEND_INVALIDATE = 8,
	RKDAPL_DTO_FETCH_ADD = 9,
	RKDAPL_DTO_CMP_SWAP = 10,
	RKDAPL_DTO_SEND_IMM = 11,
};

/**
 * enum rkdapl_event_flags - what consumed a RECV; the upcall's hint (&rkdapl_event.flags)
 * @RKDAPL_EVENT_WITH_IMM: &struct rkdapl_event.immediate holds the peer's immediate data (a SEND
 *	or an RDMA WRITE with immediate consumed the RECV).
 * @RKDAPL_EVENT_RDMA_WRITE_IMM: an RDMA WRITE with immediate consumed the RECV: its data
 *	went to the peer-named grant, not to the RECV's buffer (left untouched), and
 *	&struct rkdapl_event.transferred_length is the bytes it wrote.
 * @RKDAPL_EVENT_INVALIDATED: a SEND with invalidate consumed the RECV: the device invalidated
 *	&struct rkdapl_event.invalidated_rkey before completing it. If that rkey was the grant of
 *	an RMR of the EP's PZ, that RMR is unbound when the event is dequeued: its LMR is free to
 *	reuse or free, rkdapl_rmr_unbind() returns -EINVAL and rkdapl_rmr_bind() grants anew.
 * @RKDAPL_EVENT_MORE: any DTO completion handed to an upcall (&rkdapl_upcall_fn): another
 *	DTO completion of the same EP queue follows right after this call (the CQ completion
 *	being processed finished several DTOs), so the upcall may coalesce its work (one
 *	doorbell, one wakeup) until an event without it: kDAPL's "more events follow" hint.
 *	Never set when no event follows; set only where the provider knows it, never on
 *	events taken with rkdapl_evd_dequeue() or rkdapl_evd_wait().
 */
enum rkdapl_event_flags {
	RKDAPL_EVENT_WITH_IMM = 1 << 0,
	RKDAPL_EVENT_RDMA_WRITE_IMM = 1 << 1,
	RKDAPL_EVENT_INVALIDATED = 1 << 2,
	RKDAPL_EVENT_MORE = 1 << 3,
};

/**
 * enum rkdapl_dto_status - completion status of a DTO (DAT_DTO_COMPLETION_STATUS)
 * @RKDAPL_DTO_SUCCESS: completed.
 * @RKDAPL_DTO_FLUSHED: not executed: the EP was disconnected or freed first.
 * @RKDAPL_DTO_LOCAL_LENGTH_ERROR: a received message did not fit the RECV's buffer (rdma_rxe
 *	reports that RECV as %RKDAPL_DTO_LOCAL_EP_ERROR; the sender's SEND completes
 *	%RKDAPL_DTO_REMOTE_RESPONDER_ERROR, and the connection breaks).
 * @RKDAPL_DTO_LOCAL_EP_ERROR: the local QP could not process the request.
 * @RKDAPL_DTO_LOCAL_PROTECTION_ERROR: local memory failed its key or privileges.
 * @RKDAPL_DTO_BAD_RESPONSE: the peer answered with a malformed response.
 * @RKDAPL_DTO_REMOTE_ACCESS_ERROR: the peer refused the rkey, range or rights.
 * @RKDAPL_DTO_REMOTE_RESPONDER_ERROR: the peer failed the request (e.g. no RECV buffer fit).
 * @RKDAPL_DTO_TRANSPORT_ERROR: retries exhausted: the peer is gone.
 * @RKDAPL_DTO_RECEIVER_NOT_READY: the peer had no RECV posted and RNR retries ran out.
 * @RKDAPL_DTO_RMR_OPERATION_FAILED: a bind or unbind failed.
 * @RKDAPL_DTO_GENERIC_ERROR: anything else.
 */
enum rkdapl_dto_status {
	RKDAPL_DTO_SUCCESS = 0,
	RKDAPL_DTO_FLUSHED = 1,
	RKDAPL_DTO_LOCAL_LENGTH_ERROR = 2,
	RKDAPL_DTO_LOCAL_EP_ERROR = 3,
	RKDAPL_DTO_LOCAL_PROTECTION_ERROR = 4,
	RKDAPL_DTO_BAD_RESPONSE = 5,
	RKDAPL_DTO_REMOTE_ACCESS_ERROR = 6,
	RKDAPL_DTO_REMOTE_RESPONDER_ERROR = 7,
	RKDAPL_DTO_TRANSPORT_ERROR = 8,
	RKDAPL_DTO_RECEIVER_NOT_READY = 9,
	RKDAPL_DTO_RMR_OPERATION_FAILED = 10,
	RKDAPL_DTO_GENERIC_ERROR = 11,
};

/**
 * enum rkdapl_ep_state - DAT endpoint states (DAT_EP_STATE)
 * @RKDAPL_EP_STATE_UNCONNECTED: created, never connected.
 * @RKDAPL_EP_STATE_ACTIVE_CONNECTION_PENDING: rkdapl_ep_connect() in progress.
 * @RKDAPL_EP_STATE_PASSIVE_CONNECTION_PENDING: rkdapl_cr_accept() in progress.
 * @RKDAPL_EP_STATE_CONNECTED: DTOs may be posted.
 * @RKDAPL_EP_STATE_DISCONNECT_PENDING: rkdapl_ep_disconnect() in progress.
 * @RKDAPL_EP_STATE_DISCONNECTED: the connection ended or failed; the EP can be freed, or
 *	reset to UNCONNECTED with rkdapl_ep_reset() and connected again.
 */
enum rkdapl_ep_state {
	RKDAPL_EP_STATE_UNCONNECTED = 0,
	RKDAPL_EP_STATE_ACTIVE_CONNECTION_PENDING = 1,
	RKDAPL_EP_STATE_PASSIVE_CONNECTION_PENDING = 2,
	RKDAPL_EP_STATE_CONNECTED = 3,
	RKDAPL_EP_STATE_DISCONNECT_PENDING = 4,
	RKDAPL_EP_STATE_DISCONNECTED = 5,
};

/**
 * struct rkdapl_event - one event taken from an EVD
 * @type: &enum rkdapl_event_type.
 * @status: DTO and RMR bind events: &enum rkdapl_dto_status. Connection events: 0, a
 *	negative errno, or the reject reason. Overflow: -EOVERFLOW. IA catastrophic: -ENODEV.
 *	docs/guide.md ("What ev.status means") has a table of its meaning for every event type.
 * @ep: the EP the event is about (DTO and connection events).
 * @cr: the connection request (%RKDAPL_CONNECTION_REQUEST_EVENT); pass it to
 *	rkdapl_cr_accept() or rkdapl_cr_reject().
 * @evd: the EVD that overflowed (%RKDAPL_ASYNC_EVD_OVERFLOW).
 * @cookie: the consumer's cookie of the DTO, bind or unbind.
 * @transferred_length: bytes moved by a successful DTO (RECV: bytes received); for
 *	%RKDAPL_ASYNC_EVD_OVERFLOW, the number of events lost.
 * @op: &enum rkdapl_dto_op of a DTO or bind completion.
 * @immediate: immediate data of a RECV completed by a SEND or RDMA WRITE with immediate
 *	(with %RKDAPL_EVENT_WITH_IMM in @flags), in host order.
 * @flags: DTO completions: &enum rkdapl_event_flags (what consumed a RECV; the upcall's
 *	%RKDAPL_EVENT_MORE); 0 otherwise.
 * @invalidated_rkey: with %RKDAPL_EVENT_INVALIDATED in @flags, the rkey the peer invalidated.
 * @private_data_len: bytes valid in @private_data; the bytes past them are undefined (the
 *	events without private data, DTO completions among them, do not write them).
 * @private_data: the peer's private data of a connection request, accept or reject.
 * @port: the port (1-based) of an asynchronous port event (%RKDAPL_ASYNC_PORT_ACTIVE ..
 *	%RKDAPL_ASYNC_SM_CHANGE); 0 for other events.
 */
struct rkdapl_event {
	__u32 type;
	__s32 status;
	struct rkdapl_ep *ep;
	struct rkdapl_cr *cr;
	struct rkdapl_evd *evd;
	__u64 cookie;
	__u64 transferred_length;
	__u32 op;
	__u32 immediate;
	__u32 flags;
	__u32 invalidated_rkey;
	__u32 private_data_len;
	__u8 private_data[RKDAPL_MAX_PRIVATE_DATA];
	__u32 port;
};

/**
 * struct rkdapl_lmr_triplet - a local segment of a DTO (DAT_LMR_TRIPLET)
 * @lmr: the LMR, in the EP's PZ.
 * @offset: bytes from the start of the LMR.
 * @length: bytes; may be 0.
 */
struct rkdapl_lmr_triplet {
	struct rkdapl_lmr *lmr;
	__u64 offset;
	__u64 length;
};

/**
 * struct rkdapl_rmr_triplet - the peer's memory of an RDMA DTO (DAT_RMR_TRIPLET)
 * @address: the peer's address, as returned by its rkdapl_rmr_bind().
 * @rkey: the peer's rkey, as returned by its rkdapl_rmr_bind().
 * @reserved: must be 0.
 * @length: bytes; 0 or the sum of the local segments' lengths.
 */
struct rkdapl_rmr_triplet {
	__u64 address;
	__u32 rkey;
	__u32 reserved;
	__u64 length;
};

/**
 * struct rkdapl_ia_attr - limits of an IA's device (DAT_IA_ATTR)
 * @name: the RDMA device's name.
 * @max_mr_size: largest region, in bytes.
 * @max_dtos: work requests per queue, in entries (the device's QP and CQ limits, at most
 *	4096): what rkdapl_ep_create() accepts for both of an EP's queues.
 * @max_iov: SGEs per work request (send, receive and RDMA READ alike).
 * @max_rdma_read_in: RDMA READs a peer may have in flight against one EP.
 * @max_rdma_read_out: RDMA READs one EP may have in flight.
 * @max_rmr_pages: pages one RMR binding covers (the page size is the largest the LMR's
 *	memory layout allows, at least PAGE_SIZE).
 * @max_evd_qlen: largest EVD, in entries.
 * @max_private_data: bytes of private data (%RKDAPL_MAX_PRIVATE_DATA).
 * @reserved: 0.
 * @transport: the transport of the device's port 1, &enum rkdapl_transport: what decides the
 *	rules below (docs/guide.md, "iWARP (siw) differences").
 * @caps: what the transport can do, a mask of &enum rkdapl_caps. A DTO whose capability is
 *	missing is refused at post time with -EOPNOTSUPP; an attribute whose capability is
 *	missing is accepted and has no effect.
 * @max_read_iov: SGEs the device takes per RDMA READ work request (its max_sge_rd: 1 with
 *	siw, 32 with rdma_rxe). @max_iov is never more. An RDMA READ whose sinks need more DMA
 *	segments is split into work requests of @max_iov SGEs, at most 8 of them, and refused
 *	with -EMSGSIZE beyond; on iWARP a READ into one segment goes through one registered
 *	sink instead (rkdapl_post_rdma_read()).
 * @reserved2: 0.
 */
struct rkdapl_ia_attr {
	char name[64];
	__u64 max_mr_size;
	__u32 max_dtos;
	__u32 max_iov;
	__u32 max_rdma_read_in;
	__u32 max_rdma_read_out;
	__u32 max_rmr_pages;
	__u32 max_evd_qlen;
	__u32 max_private_data;
	__u32 reserved;
	__u32 transport;
	__u32 caps;
	__u32 max_read_iov;
	__u32 reserved2;
};

/**
 * enum rkdapl_transport - the transport of an IA (&rkdapl_ia_attr.transport)
 * @RKDAPL_TRANSPORT_IB: InfiniBand.
 * @RKDAPL_TRANSPORT_ROCE: RDMA over Converged Ethernet (rdma_rxe: RoCEv2).
 * @RKDAPL_TRANSPORT_IWARP: iWARP, RDMAP/DDP/MPA over TCP (siw). Connections go through
 *	rdma_cm's iw_cm: the TCP connection and the MPA exchange carry the private data
 *	(%RKDAPL_MAX_PRIVATE_DATA bytes, as on IB); iw_cm moves the QP through its states.
 */
enum rkdapl_transport {
	RKDAPL_TRANSPORT_IB = 1,
	RKDAPL_TRANSPORT_ROCE = 2,
	RKDAPL_TRANSPORT_IWARP = 3,
};

/**
 * enum rkdapl_caps - what an IA's transport can do (&rkdapl_ia_attr.caps)
 * @RKDAPL_CAP_RDMA_WRITE_IMM: immediate data: RDMA WRITE and SEND with immediate
 *	(rkdapl_post_rdma_write_imm(), rkdapl_post_send_imm(), %RKDAPL_DTO_RDMA_WRITE_IMM and
 *	%RKDAPL_DTO_SEND_IMM in rkdapl_post_chain()). iWARP has no immediate data: there all
 *	are refused with -EOPNOTSUPP, before anything is posted.
 * @RKDAPL_CAP_RNR_RETRY: a SEND that finds no RECV posted at the peer is retried
 *	(&rkdapl_ep_attr.rnr_retry_count) and, after the last retry, fails alone with
 *	%RKDAPL_DTO_RECEIVER_NOT_READY. Without it (iWARP) there is no RNR: such a SEND is a
 *	protocol error at the peer, which terminates the connection (both sides' outstanding
 *	DTOs flush, the EPs get %RKDAPL_CONNECTION_EVENT_BROKEN or DISCONNECTED);
 *	&rkdapl_ep_attr.rnr_retry_count is accepted and has no effect. Post RECVs first.
 * @RKDAPL_CAP_RETRY_COUNT: &rkdapl_ep_attr.retry_count bounds the transport's retries. On
 *	iWARP, TCP retransmits until it gives up by its own timers (minutes); the attribute is
 *	accepted and has no effect, and a dead peer is noticed later.
 * @RKDAPL_CAP_SEND_INVALIDATE: SEND with invalidate (rkdapl_post_send_with_invalidate());
 *	every transport rkdapl runs on has it.
 * @RKDAPL_CAP_ATOMICS: the device runs atomics (rkdapl_post_fetch_add(),
 *	rkdapl_post_cmp_swap()); rdma_rxe does, siw does not (there they return -EOPNOTSUPP).
 */
enum rkdapl_caps {
	RKDAPL_CAP_RDMA_WRITE_IMM = 1 << 0,
	RKDAPL_CAP_RNR_RETRY = 1 << 1,
	RKDAPL_CAP_RETRY_COUNT = 1 << 2,
	RKDAPL_CAP_SEND_INVALIDATE = 1 << 3,
	RKDAPL_CAP_ATOMICS = 1 << 4,
};

/**
 * struct rkdapl_ep_attr - endpoint attributes (DAT_EP_ATTR); 0 selects the default
 * @max_request_dtos: send-queue DTOs outstanding (default 64, at most 4096).
 * @max_recv_dtos: RECVs outstanding (default 64, at most 4096 and the device's limit).
 * @max_request_iov: LMR triplets per send-queue DTO (default 4, at most 256).
 * @max_recv_iov: LMR triplets per RECV (default 4).
 * @max_rdma_read_in: RDMA READs the peer may have in flight (default 4, clamped to the
 *	device).
 * @max_rdma_read_out: RDMA READs this EP may have in flight (default 4, clamped).
 *	On the passive side both are further clamped to the connecting peer's request
 *	(rkdapl_cr_accept()); the active side gets the passive side's answer through the IB CM.
 * @retry_count: transport retries, 1..7 (default 7). After the last one the DTO in flight
 *	completes with %RKDAPL_DTO_TRANSPORT_ERROR: that is how a dead peer is noticed. The IB CM
 *	takes it from the connecting (active) side's EP for both ends of the connection; the
 *	accepting side's value is not used. rdma_rxe treats 7 as "retry forever" (the IB spec
 *	gives that meaning only to @rnr_retry_count), so on rxe use 6 or less where a dead peer
 *	must be detected. No effect on iWARP, where TCP retransmits (%RKDAPL_CAP_RETRY_COUNT).
 * @rnr_retry_count: how often the peer retries a SEND (or RDMA WRITE with immediate) that
 *	finds no RECV posted on this EP, 1..7, 7 = forever (default 7); after the last retry the
 *	peer's DTO completes with %RKDAPL_DTO_RECEIVER_NOT_READY. The IB CM carries each side's
 *	value to the other side's QP (REQ and REP), so it is set by the receiving EP. No effect
 *	on iWARP, which has no RNR (%RKDAPL_CAP_RNR_RETRY).
 * @max_pooled_rmrs: RMRs in the EP's pool (default 0: none, at most 4096): FRWR MRs
 *	allocated with the EP's QP (at rkdapl_ep_connect() or rkdapl_cr_accept(), each able to
 *	grant up to the device's FRWR page list length), which rkdapl_ep_pooled_rmr_bind() takes
 *	one of per I/O in any context, and which go with the QP.
 * @remote_addr: rkdapl_ep_query() only (rkdapl_ep_create() ignores it): the peer's address
 *	and port (network order, as in a &struct sockaddr_in or, for an IPv6 peer, a &struct
 *	sockaddr_in6) once the EP connects or accepted a CR; %AF_UNSPEC (zeroes) before. DAT's
 *	remote_ia_address and remote_port_qual.
 * @path_mtu: rkdapl_ep_query() only: the path MTU in bytes (256..4096) the EP's QP sends and
 *	receives with, once the connection is ESTABLISHED (0 before). rdma_cm takes it from
 *	the connecting side's route (on RoCE, from its netdev's MTU); on RoCE, between rkdapl
 *	peers, both QPs use the smaller of the two ports' MTUs, whichever side connects (the
 *	accepting side announces its MTU in the REP), unless rkdapl.ko is loaded with
 *	mtu_agreement=0. See docs/guide.md ("Path MTU") for peers that are not rkdapl.
 */
struct rkdapl_ep_attr {
	__u32 max_request_dtos;
	__u32 max_recv_dtos;
	__u32 max_request_iov;
	__u32 max_recv_iov;
	__u32 max_rdma_read_in;
	__u32 max_rdma_read_out;
	__u32 retry_count;
	__u32 rnr_retry_count;
	__u32 max_pooled_rmrs;
	struct __kernel_sockaddr_storage remote_addr;
	__u32 path_mtu;
};

/**
 * __rkdapl_ia_open() - open an interface adapter on an RDMA device
 * @name: the device's name, e.g. "rxe0" (see `rdma link`).
 * @ia: the new IA.
 * @owner: the consumer's module name, copied. Objects made on the IA are listed under it
 *         by `rdma res show` (like ib_alloc_pd() and rdma_create_id() do with KBUILD_MODNAME)
 *         and in /sys/kernel/debug/rkdapl/ia<N>/info.
 *
 * Call it through rkdapl_ia_open(), which passes KBUILD_MODNAME as @owner.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for NULL arguments or an empty @owner; -ENODEV if no such device is
 * registered; -ENOMEM.
 */
int __rkdapl_ia_open(const char *name, struct rkdapl_ia **ia, const char *owner);

/**
 * rkdapl_ia_open() - open an interface adapter on an RDMA device, owned by this module
 * @name: the device's name, e.g. "rxe0".
 * @ia: the new IA.
 *
 * See __rkdapl_ia_open(); the owner is the calling module (KBUILD_MODNAME).
 */
#define rkdapl_ia_open(name, ia) __rkdapl_ia_open(name, ia, KBUILD_MODNAME)

/**
 * __rkdapl_ia_open_addr() - open an IA on the RDMA device that has a local IP address
 * @addr: a local &struct sockaddr_in or &struct sockaddr_in6 (its port is ignored).
 * @ia: the new IA.
 * @owner: as for __rkdapl_ia_open().
 *
 * The device is the one rdma_cm binds @addr to (rdma_bind_addr(): the GID table of a RoCE
 * port, the netdev of an iWARP one): the device connections from or to that address use.
 * Call it through rkdapl_ia_open_addr().
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for NULL arguments or an empty @owner; -EAFNOSUPPORT for another address
 * family; -EADDRNOTAVAIL if no RDMA device has @addr; -ENOMEM.
 */
int __rkdapl_ia_open_addr(const struct sockaddr *addr, struct rkdapl_ia **ia, const char *owner);

/**
 * rkdapl_ia_open_addr() - open an IA by local IP address, owned by this module
 * @addr: a local IPv4 or IPv6 address.
 * @ia: the new IA.
 *
 * See __rkdapl_ia_open_addr().
 */
#define rkdapl_ia_open_addr(addr, ia) __rkdapl_ia_open_addr(addr, ia, KBUILD_MODNAME)

struct net_device;

/**
 * __rkdapl_ia_open_netdev() - open an IA on the RDMA device of a network device
 * @ndev: a network device one of whose ports is an RDMA port (RoCE: the netdev given to
 *	`rdma link add`, iWARP: the NIC); the caller holds a reference for the call.
 * @ia: the new IA.
 * @owner: as for __rkdapl_ia_open().
 *
 * The device is ib_device_get_by_netdev()'s. The IA belongs to @ndev's network namespace
 * (dev_net()): its PSPs listen and its EPs connect there, as rkdapl_ia_open_net() does. Call
 * it through rkdapl_ia_open_netdev().
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for NULL arguments or an empty @owner; -ENODEV if no RDMA device uses
 * @ndev; -ENOMEM.
 */
int __rkdapl_ia_open_netdev(struct net_device *ndev, struct rkdapl_ia **ia, const char *owner);

/**
 * rkdapl_ia_open_netdev() - open an IA by network device, owned by this module
 * @ndev: the network device.
 * @ia: the new IA.
 *
 * See __rkdapl_ia_open_netdev().
 */
#define rkdapl_ia_open_netdev(ndev, ia) __rkdapl_ia_open_netdev(ndev, ia, KBUILD_MODNAME)

/*
 * Network namespaces. An rdma_cm id lives in one network namespace: its addresses are
 * resolved, bound and routed there, and it only uses RDMA ports whose network devices are in
 * that namespace (RoCE, iWARP). The IA decides for all its PSPs and EPs: rkdapl_ia_open(),
 * rkdapl_ia_open_addr() and rkdapl_ia_open_netdev() open it in the initial namespace
 * (init_net, whatever the caller's), the two calls below in the namespace given. A PSP then
 * hears only requests that arrive on its IA's device through a network device of that
 * namespace (a peer connecting to an address of another namespace where nobody listens on
 * the port gets %RKDAPL_CONNECTION_EVENT_PEER_REJECTED, status 28: rdma_cm finds no
 * listener there and the IB CM rejects with IB_CM_REJ_CONSUMER_DEFINED), and an EP connects
 * only to addresses routed in it. RDMA devices themselves are shared by every
 * namespace (`rdma system` netns mode "shared", the default); in "exclusive" mode a device is
 * usable only from the namespace it was moved to.
 */
struct net;

/**
 * __rkdapl_ia_open_net() - open an IA on an RDMA device, in a network namespace
 * @net: the namespace its PSPs and EPs make their CM ids in, for example
 *	get_net_ns_by_pid() or get_net_ns_by_fd()'s of a process in it, or
 *	current->nsproxy->net_ns of the calling process; the caller holds a reference for the
 *	call.
 * @name: the RDMA device's name, as for __rkdapl_ia_open().
 * @ia: the new IA.
 * @owner: as for __rkdapl_ia_open().
 *
 * The IA takes its own reference to @net (get_net()) and drops it when the IA goes, after
 * rkdapl_ia_close() and the free of its last object; each CM id holds one more (rdma_cm's).
 * So the namespace outlives the IA: when its last process leaves and its name is removed
 * (`ip netns del`), it is not dismantled while the IA holds it, its network devices and
 * addresses stay, and connections keep working; deleting the network device (or the address)
 * under an EP breaks its connection as it would in any namespace. A kernel thread runs in
 * the initial namespace whoever started it (also under `ip netns exec`): pass the namespace
 * explicitly. Call it through rkdapl_ia_open_net().
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for NULL arguments or an empty @owner; -ENODEV if no such device is
 * registered; -ENOMEM.
 */
int __rkdapl_ia_open_net(struct net *net, const char *name, struct rkdapl_ia **ia,
			 const char *owner);

/**
 * rkdapl_ia_open_net() - open an IA in a network namespace, owned by this module
 * @net: the namespace.
 * @name: the RDMA device's name.
 * @ia: the new IA.
 *
 * See __rkdapl_ia_open_net().
 */
#define rkdapl_ia_open_net(net, name, ia) __rkdapl_ia_open_net(net, name, ia, KBUILD_MODNAME)

/**
 * __rkdapl_ia_open_addr_net() - open an IA by a local IP address of a network namespace
 * @net: the namespace, as for __rkdapl_ia_open_net().
 * @addr: a &struct sockaddr_in or &struct sockaddr_in6 of @net (its port is ignored).
 * @ia: the new IA.
 * @owner: as for __rkdapl_ia_open().
 *
 * __rkdapl_ia_open_addr() in @net: the device rdma_cm binds @addr to there. The IA holds
 * @net as __rkdapl_ia_open_net() says. Call it through rkdapl_ia_open_addr_net().
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for NULL arguments or an empty @owner; -EAFNOSUPPORT for another address
 * family; -EADDRNOTAVAIL if @addr is not a local address of an RDMA device in @net (an
 * address of another namespace included); -ENOMEM.
 */
int __rkdapl_ia_open_addr_net(struct net *net, const struct sockaddr *addr,
			      struct rkdapl_ia **ia, const char *owner);

/**
 * rkdapl_ia_open_addr_net() - open an IA by address in a network namespace, owned by this
 * module
 * @net: the namespace.
 * @addr: a local IPv4 or IPv6 address of @net.
 * @ia: the new IA.
 *
 * See __rkdapl_ia_open_addr_net().
 */
#define rkdapl_ia_open_addr_net(net, addr, ia) \
	__rkdapl_ia_open_addr_net(net, addr, ia, KBUILD_MODNAME)

/**
 * rkdapl_ia_close() - close an IA handle
 * @ia: the IA.
 *
 * Objects created on the IA keep working and keep the device open until they are freed.
 * Waits until the handles freed before, and the IA's own, are released (one RCU grace
 * period or so): what the consumer freed holds nothing on the device on return. From an
 * upcall it does not wait (the releases end shortly after).
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle.
 */
int rkdapl_ia_close(struct rkdapl_ia *ia);

/**
 * rkdapl_ia_query() - the device's limits
 * @ia: the IA.
 * @attr: filled in.
 *
 * The limits are read when the IA is opened (DAT 2.0 dat_ia_query(); port state, MTU and
 * message size are per port: rkdapl_ia_query_port()).
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle or NULL @attr; -ENODEV once the device was removed.
 */
int rkdapl_ia_query(struct rkdapl_ia *ia, struct rkdapl_ia_attr *attr);

/**
 * enum rkdapl_port_state - state of a port (IB spec 14.2.5.6, enum ib_port_state)
 * @RKDAPL_PORT_DOWN: no link.
 * @RKDAPL_PORT_INIT: link up, not configured (InfiniBand: no SM yet).
 * @RKDAPL_PORT_ARMED: configured, not yet active.
 * @RKDAPL_PORT_ACTIVE: connections can be made.
 * @RKDAPL_PORT_ACTIVE_DEFER: active, going down soon.
 */
enum rkdapl_port_state {
	RKDAPL_PORT_DOWN = 1,
	RKDAPL_PORT_INIT = 2,
	RKDAPL_PORT_ARMED = 3,
	RKDAPL_PORT_ACTIVE = 4,
	RKDAPL_PORT_ACTIVE_DEFER = 5,
};

/**
 * struct rkdapl_port_attr - a port of an IA's device, now (struct ib_port_attr)
 * @port: the port number queried (1-based).
 * @port_count: ports of the device.
 * @state: &enum rkdapl_port_state.
 * @phys_state: physical state (IB spec 14.2.5.6: 5 is LinkUp, 3 Disabled).
 * @active_mtu: path MTU in use, in bytes (256..4096; RoCE derives it from the netdev's MTU).
 * @max_mtu: largest path MTU the port supports, in bytes.
 * @max_msg_size: largest message a DTO may move, in bytes.
 * @link_layer: 1 InfiniBand, 2 Ethernet (RoCE, iWARP).
 */
struct rkdapl_port_attr {
	__u32 port;
	__u32 port_count;
	__u32 state;
	__u32 phys_state;
	__u32 active_mtu;
	__u32 max_mtu;
	__u32 max_msg_size;
	__u32 link_layer;
};

/**
 * rkdapl_ia_query_port() - the state of a port of the IA's device
 * @ia: the IA.
 * @port: the port number, 1..&rkdapl_port_attr.port_count (rdma_rxe has one port).
 * @attr: filled in.
 *
 * Asks the driver now (ib_query_port()): a port goes DOWN when its link does.
 * Context: process context, may sleep (Ethernet drivers take the RTNL lock).
 * Return: 0; -EINVAL for a bad handle, NULL @attr or a port out of range; -ENODEV once the
 * device was removed; or the driver's error.
 */
int rkdapl_ia_query_port(struct rkdapl_ia *ia, __u32 port, struct rkdapl_port_attr *attr);

/**
 * rkdapl_pz_create() - create a protection zone (an IB PD)
 * @ia: the IA.
 * @pz: the new PZ.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle or NULL @pz; -ENOMEM.
 */
int rkdapl_pz_create(struct rkdapl_ia *ia, struct rkdapl_pz **pz);

/**
 * rkdapl_pz_free() - free a PZ handle (the PD goes when its last user is freed)
 * @pz: the PZ.
 *
 * Waits until the EPs, EVDs and other handles freed before are released (their hold on the
 * PZ too; one RCU grace period or so), so that the PD is gone on return unless an LMR, RMR,
 * SRQ or EP still open uses it. From an upcall it does not wait (the releases end shortly
 * after).
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle.
 */
int rkdapl_pz_free(struct rkdapl_pz *pz);

/**
 * rkdapl_lmr_create() - register kernel memory as a local memory region
 * @pz: the PZ.
 * @addr: start of the buffer: linear-map memory (kmalloc, alloc_pages) or vmalloc memory,
 *	any alignment. It must stay allocated until rkdapl_lmr_free() returns.
 * @length: bytes, at least 1.
 * @privileges: &enum rkdapl_mem_priv mask.
 * @lmr: the new LMR.
 *
 * The buffer is DMA-mapped once, bidirectionally. With a DMA-incoherent device, call
 * rkdapl_lmr_sync_rdma_write() before the CPU reads what the device wrote and
 * rkdapl_lmr_sync_rdma_read() before the device reads what the CPU wrote (no-ops on
 * coherent machines and for rxe).
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @addr/@lmr, zero @length or unknown
 * privileges; -EFAULT if @addr is neither linear-map nor vmalloc memory; -ENOMEM; -EIO if
 * the DMA mapping fails.
 */
int rkdapl_lmr_create(struct rkdapl_pz *pz, void *addr, __u64 length, __u32 privileges,
		      struct rkdapl_lmr **lmr);

struct page;
struct scatterlist;

/**
 * rkdapl_lmr_create_pages() - register an array of pages as a local memory region
 * @pz: the PZ.
 * @pages: @npages pages, in region order; they need not be contiguous, in low memory or
 *	mapped in the kernel (alloc_pages(), pin_user_pages(), a page cache folio's pages).
 *	They must stay allocated until rkdapl_lmr_free() returns; rkdapl takes no reference.
 * @npages: entries in @pages, at least 1.
 * @offset: where the region starts in the first page, in bytes, below PAGE_SIZE.
 * @length: bytes, at least 1, within the pages from @offset.
 * @privileges: &enum rkdapl_mem_priv mask.
 * @lmr: the new LMR.
 *
 * DAT 2.0's physical memory kinds (DAT_MEM_TYPE_PHYSICAL) in Linux terms. DTOs name the
 * region by offset as usual; the CPU reaches the memory through the pages (kmap_local_page()),
 * with the DMA sync rules of rkdapl_lmr_create().
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @pages/@lmr, @npages 0, @offset of a page or more,
 * zero @length or one beyond the pages, unknown privileges; -EFAULT for a NULL page within the
 * range; -ENODEV after device removal; -ENOMEM; -EIO if the DMA mapping fails.
 */
int rkdapl_lmr_create_pages(struct rkdapl_pz *pz, struct page **pages, __u32 npages,
			    __u32 offset, __u64 length, __u32 privileges, struct rkdapl_lmr **lmr);

/**
 * rkdapl_lmr_create_sg() - register a scatterlist the caller built as a local memory region
 * @pz: the PZ.
 * @sgl: @nents entries set with sg_set_page() (a page, an offset and a length each; chained
 *	lists work), not DMA-mapped. rkdapl maps a copy: the list itself may be freed when this
 *	returns, its pages must stay allocated until rkdapl_lmr_free() returns.
 * @nents: entries, at least 1.
 * @privileges: &enum rkdapl_mem_priv mask.
 * @lmr: the new LMR.
 *
 * The region is the entries one after the other (offset 0 is the first entry's first byte).
 * Any entry layout works for local DTOs; an RMR grant over part of it needs the entries it
 * covers to meet at page boundaries (-E2BIG from rkdapl_rmr_bind() otherwise), as for any
 * FRWR registration.
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @sgl/@lmr, @nents 0, a list shorter than @nents,
 * an entry without a page or of zero length, unknown privileges; -ENODEV after device removal;
 * -ENOMEM; -EIO if the DMA mapping fails.
 */
int rkdapl_lmr_create_sg(struct rkdapl_pz *pz, struct scatterlist *sgl, __u32 nents,
			 __u32 privileges, struct rkdapl_lmr **lmr);

/**
 * rkdapl_lmr_alloc() - allocate zeroed memory and register it as a local memory region
 * @pz: the PZ.
 * @length: bytes, 1..1 GiB.
 * @privileges: &enum rkdapl_mem_priv mask.
 * @addr: set to the memory's kernel address (kvmalloc(): physically contiguous when it can
 *	be, vmalloc otherwise; page aligned from PAGE_SIZE up).
 * @lmr: the new LMR.
 *
 * The memory belongs to the LMR: rkdapl_lmr_free() unmaps and frees it (and so does the
 * consumer's unload, for an LMR left open). Use it through @addr with the DMA sync rules of
 * rkdapl_lmr_create(), until rkdapl_lmr_free() returns 0.
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @addr/@lmr, @length 0 or above 1 GiB, unknown
 * privileges; -ENODEV after device removal; -ENOMEM; -EIO if the DMA mapping fails.
 */
int rkdapl_lmr_alloc(struct rkdapl_pz *pz, __u64 length, __u32 privileges, void **addr,
		     struct rkdapl_lmr **lmr);

/**
 * rkdapl_lmr_free() - free an LMR and unmap its buffer
 * @lmr: the LMR.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle; -EBUSY while a DTO or RMR binding uses it (not after
 * the device's removal, which unmapped the buffer: no DTO reaches it any more).
 */
int rkdapl_lmr_free(struct rkdapl_lmr *lmr);

/**
 * rkdapl_lmr_sync_rdma_read() - make CPU writes visible to the device (dat_lmr_sync_rdma_read)
 * @lmr: the LMR.
 * @offset: bytes from its start.
 * @length: bytes.
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle; -ERANGE if the range leaves the LMR.
 */
int rkdapl_lmr_sync_rdma_read(struct rkdapl_lmr *lmr, __u64 offset, __u64 length);

/**
 * rkdapl_lmr_sync_rdma_write() - make device writes visible to the CPU (dat_lmr_sync_rdma_write)
 * @lmr: the LMR.
 * @offset: bytes from its start.
 * @length: bytes.
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle; -ERANGE if the range leaves the LMR.
 */
int rkdapl_lmr_sync_rdma_write(struct rkdapl_lmr *lmr, __u64 offset, __u64 length);

/**
 * rkdapl_rmr_create() - create an unbound remote memory region
 * @pz: the PZ.
 * @rmr: the new RMR.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle or NULL @rmr; -ENOMEM.
 */
int rkdapl_rmr_create(struct rkdapl_pz *pz, struct rkdapl_rmr **rmr);

/**
 * rkdapl_rmr_bind() - grant a peer access to part of an LMR
 * @rmr: an unbound RMR of the same PZ.
 * @lmr: the LMR; it must have the privileges granted.
 * @offset: bytes from the LMR's start.
 * @length: bytes, at least 1; at most &rkdapl_ia_attr.max_rmr_pages pages.
 * @privileges: %RKDAPL_MEM_REMOTE_READ, %RKDAPL_MEM_REMOTE_WRITE and/or
 *	%RKDAPL_MEM_REMOTE_ATOMIC.
 * @ep: the EP (connected or connecting, same PZ) that posts the registration.
 * @cookie: reported with the %RKDAPL_RMR_BIND_COMPLETION_EVENT on @ep's DTO EVD.
 * @rkey: the key to give the peer.
 * @address: the address to give the peer.
 *
 * Posts an FRWR registration with a fresh key bounded to exactly the range and rights; the
 * grant is valid once the bind completion arrives (or for any DTO posted after this call on
 * the same EP). A peer outside the range or rights gets %RKDAPL_DTO_REMOTE_ACCESS_ERROR.
 * Nothing sleeps: the RMR's MR was allocated by rkdapl_rmr_create(), and a range over more
 * than a few DMA segments of the LMR has its page list built with %GFP_ATOMIC.
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle, NULL @rkey/@address, zero @length or other privilege
 * bits; -ERANGE if the range leaves the LMR; -EACCES if the LMR lacks a privilege; -EXDEV for
 * objects of different PZs; -EBUSY if already bound; -E2BIG if the range needs too many pages;
 * -ENODEV after device removal; -ENOMEM; -ENOTCONN if @ep has no connection; -ENOSPC if @ep's
 * send queue is full.
 */
int rkdapl_rmr_bind(struct rkdapl_rmr *rmr, struct rkdapl_lmr *lmr, __u64 offset, __u64 length,
		    __u32 privileges, struct rkdapl_ep *ep, __u64 cookie, __u32 *rkey,
		    __u64 *address);

/**
 * rkdapl_rmr_unbind() - revoke a grant (LOCAL_INV posted on @ep)
 * @rmr: a bound RMR.
 * @ep: the EP that posts the invalidation.
 * @cookie: reported with the %RKDAPL_RMR_BIND_COMPLETION_EVENT (op %RKDAPL_DTO_RMR_UNBIND).
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle or an unbound RMR; -ENOTCONN; -ENOSPC.
 */
int rkdapl_rmr_unbind(struct rkdapl_rmr *rmr, struct rkdapl_ep *ep, __u64 cookie);

/**
 * rkdapl_rmr_free() - free an RMR; a bound grant is revoked with it
 * @rmr: the RMR.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle.
 */
int rkdapl_rmr_free(struct rkdapl_rmr *rmr);

/**
 * rkdapl_ep_pooled_rmr_bind() - grant a peer access to part of an LMR with a pooled RMR
 * @ep: an EP created with &rkdapl_ep_attr.max_pooled_rmrs, with a QP (connected or
 *	connecting); it posts the registration.
 * @lmr: the LMR, of @ep's PZ; it must have the privileges granted.
 * @offset: bytes from the LMR's start.
 * @length: bytes, at least 1; at most &rkdapl_ia_attr.max_rmr_pages pages.
 * @privileges: %RKDAPL_MEM_REMOTE_READ, %RKDAPL_MEM_REMOTE_WRITE and/or
 *	%RKDAPL_MEM_REMOTE_ATOMIC.
 * @cookie: reported with the %RKDAPL_RMR_BIND_COMPLETION_EVENT on @ep's DTO EVD.
 * @rkey: the key to give the peer; it names the grant for rkdapl_ep_pooled_rmr_unbind().
 * @address: the address to give the peer.
 *
 * rkdapl_rmr_bind() without an RMR object: the FRWR MR is taken from @ep's pool
 * (ib_mr_pool_get() on its QP), allocated with the QP, so a grant per I/O allocates and
 * sleeps nowhere. The grant is valid once the bind completion arrives (or for any DTO posted
 * after this call on @ep) and ends with rkdapl_ep_pooled_rmr_unbind(), or with @ep's
 * connection (disconnect, rkdapl_ep_free(), device removal), after which its rkey is refused.
 * The LMR is busy (rkdapl_lmr_free() returns -EBUSY) while the grant lasts. A peer's SEND
 * with invalidate does not end a pooled grant (unlike an RMR's): unbind it here.
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle, NULL @rkey/@address, zero @length or other privilege
 * bits; -ERANGE if the range leaves the LMR; -EACCES if the LMR lacks a privilege; -EXDEV for
 * an LMR of another PZ; -E2BIG if the range needs too many pages; -EAGAIN if every pooled RMR
 * of @ep is bound (or its unbind not completed yet); -ENOTCONN if @ep has no pool (no QP yet
 * or any more, or created without pooled RMRs); -ENODEV after device removal; -ENOSPC if @ep's
 * send queue is full; -ENOMEM.
 */
int rkdapl_ep_pooled_rmr_bind(struct rkdapl_ep *ep, struct rkdapl_lmr *lmr, __u64 offset,
			      __u64 length, __u32 privileges, __u64 cookie, __u32 *rkey,
			      __u64 *address);

/**
 * rkdapl_ep_pooled_rmr_unbind() - revoke a pooled grant (LOCAL_INV posted on @ep)
 * @ep: the EP that bound it.
 * @rkey: the grant's rkey, as rkdapl_ep_pooled_rmr_bind() returned it.
 * @cookie: reported with the %RKDAPL_RMR_BIND_COMPLETION_EVENT (op %RKDAPL_DTO_RMR_UNBIND).
 *
 * The pooled RMR goes back to @ep's pool when the invalidation completes. Linear in the
 * number of @ep's bound pooled grants.
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle or an @rkey no bound pooled grant of @ep has; -ENOTCONN
 * if @ep has no QP any more; -ENOSPC if @ep's send queue is full (the grant stays bound).
 */
int rkdapl_ep_pooled_rmr_unbind(struct rkdapl_ep *ep, __u32 rkey, __u64 cookie);

/**
 * rkdapl_evd_create() - create an event dispatcher
 * @ia: the IA.
 * @qlen: events it holds, 1..65536. A full EVD counts lost events and reports them with a
 *	%RKDAPL_ASYNC_EVD_OVERFLOW event before anything else.
 * @evd: the new EVD.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @evd or @qlen out of range; -ENOMEM.
 */
int rkdapl_evd_create(struct rkdapl_ia *ia, __u32 qlen, struct rkdapl_evd **evd);

/**
 * rkdapl_ia_set_async_evd() - choose the EVD that receives an IA's asynchronous events
 * @ia: the IA.
 * @evd: an EVD created on @ia, or NULL for none (the default).
 *
 * DAT 2.0's async EVD (dat_ia_open()'s async_evd_handle): it receives
 * %RKDAPL_ASYNC_IA_CATASTROPHIC when the device goes away or fails,
 * %RKDAPL_ASYNC_EVD_OVERFLOW when another EVD of the IA overflows, the device's port events
 * (%RKDAPL_ASYNC_PORT_ACTIVE, %RKDAPL_ASYNC_PORT_ERROR, GID, LID, P_Key, SM and
 * client-reregister changes) and the QP and CQ errors of its EPs (%RKDAPL_ASYNC_EP_BROKEN,
 * %RKDAPL_ASYNC_CQ_ERROR). Without one, those events are not reported there (the EPs still
 * report BROKEN, the EVD its own overflow). rkdapl_evd_free() of the async EVD unsets it.
 * Context: process context.
 * Return: 0; -EINVAL for a bad handle; -EXDEV for an EVD of another IA.
 */
int rkdapl_ia_set_async_evd(struct rkdapl_ia *ia, struct rkdapl_evd *evd);

/**
 * rkdapl_evd_dequeue() - take the oldest event without waiting
 * @evd: the EVD.
 * @event: filled in.
 *
 * Context: any context.
 * Return: 0; -EAGAIN if the EVD is empty; -EINVAL for a bad handle or NULL @event.
 */
int rkdapl_evd_dequeue(struct rkdapl_evd *evd, struct rkdapl_event *event);

/**
 * rkdapl_evd_wait() - wait for an event
 * @evd: the EVD.
 * @timeout_ms: milliseconds to wait at most; %RKDAPL_TIMEOUT_INFINITE waits until an event
 *	comes or a signal arrives (DAT's %DAT_TIMEOUT_INFINITE).
 * @event: filled in.
 *
 * Context: process context, sleeps interruptibly; not from an upcall.
 * Return: 0; -ETIMEDOUT (never with %RKDAPL_TIMEOUT_INFINITE); -EINTR on a signal; -EINVAL for
 * a bad handle or NULL @event; -EDEADLK from an upcall (of any EVD: see &rkdapl_upcall_fn).
 */
int rkdapl_evd_wait(struct rkdapl_evd *evd, __u32 timeout_ms, struct rkdapl_event *event);

/**
 * rkdapl_evd_free() - free an EVD handle (EPs using it keep it until they are freed)
 * @evd: the EVD.
 *
 * An upcall set on the EVD is disabled first, as by rkdapl_evd_modify_upcall(); events that
 * come afterwards for EPs still using the EVD are queued and dropped with it.
 * Context: process context, may sleep; not from an upcall.
 * Return: 0; -EINVAL for a bad handle; -EDEADLK from an upcall (the handle stays valid).
 */
int rkdapl_evd_free(struct rkdapl_evd *evd);

/**
 * typedef rkdapl_upcall_fn - an EVD's upcall (DAT 2.0 DAT_UPCALL_FUNC)
 * @ctx: the pointer given to rkdapl_evd_modify_upcall().
 * @event: the event, valid during the call only.
 *
 * Called in process context: from ib_core's completion work (IB_POLL_WORKQUEUE) for DTO
 * and RMR bind completions, from rdma_cm's event handler for connection events and
 * requests, or from device removal; never in interrupt or softirq context, and with no
 * rkdapl lock held that the calls below take (an EP's teardown delivers its flushed
 * completions holding that EP's teardown mutex). It must not sleep (it holds up the
 * completions of its CQ or the events of its CM id meanwhile) and must not call rkdapl
 * functions that may sleep (freeing an EP, connecting, ...): post DTOs, dequeue, and hand the
 * rest to a work item. The calls that would wait for the context the upcall holds up, and so
 * hang, are refused there with -EDEADLK, leaving every object as it was:
 * rkdapl_ep_free(), rkdapl_ep_reset(), rkdapl_psp_free(), rkdapl_srq_free(),
 * rkdapl_evd_free(), rkdapl_evd_modify_upcall() and rkdapl_evd_wait(), whichever EVD's
 * upcall it is. rkdapl_ep_free() from another thread never waits for an upcall in progress:
 * an upcall may wait for a thread that frees EPs.
 *
 * One exception, for event-driven servers: the upcall of a %RKDAPL_CONNECTION_REQUEST_EVENT
 * runs in rdma_cm's handler of that request, which lets it sleep (as rdma_cm lets
 * rdma_accept() run there), and may call rkdapl_cr_query(), rkdapl_cr_accept() and
 * rkdapl_cr_reject() on @event->cr, the CR of that event (not on another CR: its CM id
 * has a handler lock of its own, and taking it there could deadlock). A failed accept or
 * a reject there hands the request's CM id back to rdma_cm, which destroys it when the
 * upcall returns. A CR left unanswered stays pending as from rkdapl_evd_dequeue().
 */
typedef void (*rkdapl_upcall_fn)(void *ctx, const struct rkdapl_event *event);

/**
 * enum rkdapl_upcall_policy - how an EVD delivers events (DAT 2.0 DAT_UPCALL_POLICY)
 * @RKDAPL_UPCALL_DISABLE: queue events for rkdapl_evd_dequeue() and rkdapl_evd_wait().
 * @RKDAPL_UPCALL_SINGLE_INSTANCE: call the upcall for each event, one call at a time: a
 *	call for one EP waits for a call for another EP to return.
 * @RKDAPL_UPCALL_MANY: call the upcall for each event; calls for different EPs or PSPs may
 *	run at the same time on different CPUs. Events of one EP's send queue (or receive queue,
 *	or connection) still come one at a time, in order.
 */
enum rkdapl_upcall_policy {
	RKDAPL_UPCALL_DISABLE = 0,
	RKDAPL_UPCALL_SINGLE_INSTANCE = 1,
	RKDAPL_UPCALL_MANY = 2,
};

/**
 * rkdapl_evd_modify_upcall() - deliver an EVD's events by upcall, or queue them again
 * @evd: the EVD.
 * @policy: &enum rkdapl_upcall_policy.
 * @upcall: the function (NULL with %RKDAPL_UPCALL_DISABLE).
 * @ctx: passed to @upcall.
 *
 * DAT 2.0 dat_evd_modify_upcall(). While an upcall is set, each new event goes to it and is
 * not queued (so nothing can overflow); events queued before stay queued for
 * rkdapl_evd_dequeue(). Changing or disabling the upcall waits until calls of the old one
 * have returned, so @ctx of the old one may be freed when this returns. Module unload
 * disables the upcalls of the EVDs the module left open.
 * Context: process context, may sleep; not from an upcall.
 * Return: 0; -EINVAL for a bad handle, an unknown @policy or a NULL @upcall with a policy
 * other than %RKDAPL_UPCALL_DISABLE; -EDEADLK from an upcall (the upcall is unchanged).
 */
int rkdapl_evd_modify_upcall(struct rkdapl_evd *evd, __u32 policy, rkdapl_upcall_fn upcall,
			     void *ctx);

/**
 * rkdapl_ep_create() - create an unconnected endpoint
 * @pz: the PZ of its QP.
 * @dto_evd: where its DTO and RMR bind completions go.
 * @conn_evd: where its connection events go (may be @dto_evd).
 * @attr: sizes; NULL or 0 fields take defaults (see &struct rkdapl_ep_attr).
 * @ep: the new EP.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @ep or attributes beyond the device's limits;
 * -ENOMEM.
 */
int rkdapl_ep_create(struct rkdapl_pz *pz, struct rkdapl_evd *dto_evd,
		     struct rkdapl_evd *conn_evd, const struct rkdapl_ep_attr *attr,
		     struct rkdapl_ep **ep);

/**
 * rkdapl_ep_connect() - connect to a PSP of a peer
 * @ep: an UNCONNECTED EP.
 * @remote: the peer's &struct sockaddr_in or &struct sockaddr_in6, with the PSP's port in
 *	network byte order like any sockaddr (sin_port = htons(7471)), while
 *	rkdapl_psp_create() takes the port in host byte order.
 * @timeout_ms: milliseconds for address and route resolution, at least 1.
 * @private_data: bytes for the peer's connection request event, or NULL.
 * @private_data_len: up to %RKDAPL_MAX_PRIVATE_DATA.
 *
 * The outcome arrives on the EP's connection EVD: ESTABLISHED, PEER_REJECTED,
 * UNREACHABLE, TIMED_OUT or NON_PEER_REJECTED. @remote is resolved and routed in the IA's
 * network namespace (see rkdapl_ia_open_net()); an IPv6 @remote needs an IPv6 address on the
 * local RDMA port's network device (a RoCE GID made from it).
 *
 * Context: process context, may sleep.
 * Return: 0 if the attempt started; -EINVAL for a bad handle, NULL @remote, zero timeout or
 * too much private data; -EAFNOSUPPORT for another address family; -EISCONN unless the EP
 * is UNCONNECTED; rdma_cm's errors (e.g. -ENETUNREACH, -EADDRNOTAVAIL).
 */
int rkdapl_ep_connect(struct rkdapl_ep *ep, const struct sockaddr *remote, __u32 timeout_ms,
		      const void *private_data, __u32 private_data_len);

/**
 * rkdapl_ep_connect_from() - connect to a PSP of a peer from a given local address
 * @ep: an UNCONNECTED EP.
 * @local: the connection's source: a &struct sockaddr_in or &struct sockaddr_in6 of the same
 *	family as @remote, an address of the EP's IA's RDMA device; its port (network byte
 *	order) 0 for any, or the port to leave from. NULL: as rkdapl_ep_connect().
 * @remote: as for rkdapl_ep_connect().
 * @timeout_ms: as for rkdapl_ep_connect().
 * @private_data: as for rkdapl_ep_connect().
 * @private_data_len: as for rkdapl_ep_connect().
 *
 * rkdapl_ep_connect() with a source address, as rdma_resolve_addr() takes one: it picks the
 * path when this machine has several addresses or RDMA devices towards @remote (nvme-rdma's
 * host_traddr, a multipath consumer's second path). The peer's CR reports @local as its
 * remote address. A @local on another RDMA device than the IA's ends in UNREACHABLE on the
 * connection EVD, as a @remote routed there does.
 *
 * Context: process context, may sleep.
 * Return: 0 if the attempt started; rkdapl_ep_connect()'s errors; -EINVAL also for a @local
 * of another family than @remote; -EAFNOSUPPORT for a @local that is neither IPv4 nor
 * IPv6; -EADDRNOTAVAIL for a @local that is no address of this machine (in the IA's
 * network namespace); -EADDRINUSE for a @local port in use.
 */
int rkdapl_ep_connect_from(struct rkdapl_ep *ep, const struct sockaddr *local,
			   const struct sockaddr *remote, __u32 timeout_ms,
			   const void *private_data, __u32 private_data_len);

/**
 * rkdapl_ep_disconnect() - start a graceful disconnect
 * @ep: a CONNECTED EP.
 *
 * %RKDAPL_CONNECTION_EVENT_DISCONNECTED follows; DTOs still queued complete with
 * %RKDAPL_DTO_FLUSHED. Exception: if the IB CM cannot allocate the DREQ (out of memory)
 * it goes to timewait silently and rdma_cm reports nothing (it passes TIMEWAIT_EXIT on only
 * after a DISCONNECTED), so no event follows; the peer hears of it only when its own
 * traffic fails or it disconnects. Wait for the event with a timeout; rkdapl_ep_free() is
 * always safe.
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle; -ENOTCONN unless CONNECTED.
 */
int rkdapl_ep_disconnect(struct rkdapl_ep *ep);

/**
 * rkdapl_ep_get_state() - the EP's &enum rkdapl_ep_state
 * @ep: the EP.
 * @state: filled in.
 *
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle or NULL @state.
 */
int rkdapl_ep_get_state(struct rkdapl_ep *ep, __u32 *state);

/**
 * rkdapl_ep_query() - the EP's attributes, and what connecting settled
 * @ep: the EP.
 * @attr: filled in: the attributes the EP was created with, defaults and device limits
 *	applied; once the connection got as far as the IB CM's REQ/REP (accepted, or
 *	established on the connecting side), &rkdapl_ep_attr.max_rdma_read_in and
 *	&rkdapl_ep_attr.max_rdma_read_out are the values settled with the peer: this EP serves
 *	at most max_rdma_read_in of the peer's RDMA READs at once and issues at most
 *	max_rdma_read_out, each no more than the peer's opposite number.
 *
 * DAT 2.0 dat_ep_query().
 * Context: any context.
 * Return: 0; -EINVAL for a bad handle or NULL @attr.
 */
int rkdapl_ep_query(struct rkdapl_ep *ep, struct rkdapl_ep_attr *attr);

/**
 * rkdapl_ep_free() - disconnect (abruptly) and free an EP
 * @ep: the EP.
 *
 * Every DTO still posted completes first (flushed), then the CM id and the QP are destroyed;
 * also when the device's removal is tearing the EP down at the same time (this call waits for
 * it), so that on return no DTO of @ep keeps an LMR busy. If a connection event of @ep is
 * being delivered at that moment (its upcall running on another thread), this does not wait
 * for it: the CM id and the QP (drained) are then destroyed once the delivery is over, and no
 * event of @ep follows the one in delivery.
 * Context: process context, sleeps until the QP is drained; not from an upcall.
 * Return: 0; -EINVAL for a bad handle; -EDEADLK from an upcall (the EP is left as it was).
 */
int rkdapl_ep_free(struct rkdapl_ep *ep);

/**
 * rkdapl_ep_reset() - make a disconnected EP unconnected again, to reuse it
 * @ep: a DISCONNECTED EP: disconnected by either side, or after its connect failed
 *	(PEER_REJECTED, NON_PEER_REJECTED, UNREACHABLE, TIMED_OUT) or broke
 *	(%RKDAPL_CONNECTION_EVENT_BROKEN other than by device removal).
 *
 * DAT 2.0 dat_ep_reset(). rdma_cm ids cannot connect twice: the reset drains the old QP and
 * destroys the old CM id and QP; the next rkdapl_ep_connect() or rkdapl_cr_accept() creates
 * new ones with the EP's attributes. The EP keeps its handle, PZ, EVDs and attributes; it is
 * UNCONNECTED when this returns 0. Every DTO of the old connection must have reported its
 * completion first (flushed ones included: after the DISCONNECTED event, take the flushed
 * completions from the DTO EVD, then reset). DTOs posted with %RKDAPL_COMPLETION_SUPPRESS do
 * not count: those that succeeded are finished here, and those flushed report their event
 * before this returns. Events of the old connection still queued on the EVDs stay there.
 * Context: process context, sleeps (drains the old QP); not from an upcall.
 * Return: 0; -EDEADLK from an upcall; -EINVAL for a bad handle or unless @ep is DISCONNECTED (UNCONNECTED,
 * ACTIVE_CONNECTION_PENDING, PASSIVE_CONNECTION_PENDING, CONNECTED and DISCONNECT_PENDING are
 * refused and leave @ep unchanged); -EBUSY while a DTO posted on @ep (other than a suppressed
 * one) has not reported its completion; -ENODEV once the device was removed.
 */
int rkdapl_ep_reset(struct rkdapl_ep *ep);

/**
 * rkdapl_psp_create() - listen for connections on a port
 * @ia: the IA; requests arriving on other devices are refused.
 * @port: TCP-port-space port in host byte order (7471, not htons(7471)), not 0. The PSP
 *	listens on that port of the IPv4 and of the IPv6 wildcard address (0.0.0.0 and ::,
 *	two rdma_cm ids, the IPv6 one IPv6-only) of the IA's network namespace: IPv4 peers
 *	appear as &struct sockaddr_in, IPv6 ones as &struct sockaddr_in6 (rkdapl_cr_query(),
 *	rkdapl_ep_query()), on iWARP too; a kernel without IPv6 listens on IPv4 only. The
 *	connecting side's &struct sockaddr_in or &struct sockaddr_in6 for rkdapl_ep_connect()
 *	carries the same port in network byte order.
 * @backlog: requests pending at most.
 * @evd: where %RKDAPL_CONNECTION_REQUEST_EVENT goes.
 * @psp: the new PSP.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @psp, port 0 or backlog 0; -EADDRINUSE if
 * another listener of the namespace has the port (of either family).
 */
int rkdapl_psp_create(struct rkdapl_ia *ia, __u16 port, __u32 backlog, struct rkdapl_evd *evd,
		      struct rkdapl_psp **psp);

/**
 * rkdapl_psp_free() - stop listening; pending CRs are rejected
 * @psp: the PSP.
 *
 * Context: process context, may sleep; not from an upcall.
 * Return: 0; -EINVAL for a bad handle; -EDEADLK from an upcall (the PSP keeps listening).
 */
int rkdapl_psp_free(struct rkdapl_psp *psp);

/**
 * rkdapl_cr_accept() - accept a connection request on an unconnected EP
 * @cr: from a %RKDAPL_CONNECTION_REQUEST_EVENT; consumed on success.
 * @ep: an UNCONNECTED EP of the PSP's IA.
 * @private_data: bytes for the peer's ESTABLISHED event, or NULL.
 * @private_data_len: up to %RKDAPL_MAX_PRIVATE_DATA.
 *
 * RECVs may be posted as soon as this returns; ESTABLISHED arrives on the EP's connection
 * EVD. Send-queue DTOs need ESTABLISHED: the active side may send as soon as it has its
 * own ESTABLISHED, so one of your RECVs can complete (on the DTO EVD) before ESTABLISHED
 * reaches this side (on the connection EVD), and a SEND posted in reply at that moment gets
 * -ENOTCONN. Wait for ESTABLISHED before answering.
 *
 * After a successful accept @ep's connection EVD gets exactly one outcome: ESTABLISHED
 * (DISCONNECTED follows when the connection ends), or one failure event: DISCONNECTED with
 * status -ECONNRESET when the peer disconnected before this side saw the connection
 * established (the peer's DREQ overtook its RTU, which happens with fast connect/disconnect
 * cycles and on lossy links), PEER_REJECTED, or UNREACHABLE/TIMED_OUT when the peer never
 * confirmed (the IB CM repeats its reply 15 times, about 4 s apart, then gives up: about a
 * minute), or BROKEN on device removal. docs/guide.md ("Connection set-up") has the sequence.
 * Context: process context, may sleep: from a thread or work item, or from the upcall of
 * @cr's own %RKDAPL_CONNECTION_REQUEST_EVENT (see &rkdapl_upcall_fn), not from other upcalls.
 * Return: 0; -EINVAL for a bad handle or too much private data; -EISCONN unless @ep is
 * UNCONNECTED or -EXDEV if @ep is on another device (in these cases a valid CR stays
 * pending: accept it on another EP or reject it); -ECONNABORTED if the peer gave up on the
 * request (its connect timed out or its EP was freed) before or during the accept, as far as
 * rkdapl learnt it (inside the CR's upcall the peer's reject waits for the upcall to return:
 * rdma_accept's -EINVAL then); QP creation and rdma_accept errors (the CR is consumed and the
 * request refused; @ep is UNCONNECTED again, with no event).
 */
int rkdapl_cr_accept(struct rkdapl_cr *cr, struct rkdapl_ep *ep, const void *private_data,
		     __u32 private_data_len);

/**
 * struct rkdapl_cr_param - who is asking to connect (DAT's DAT_CR_PARAM)
 * @remote_addr: the connecting peer's address and port (network order, as in a &struct
 *	sockaddr_in or &struct sockaddr_in6).
 * @local_port: the PSP's port, in host order as rkdapl_psp_create() took it.
 * @reserved: zero.
 */
struct rkdapl_cr_param {
	struct __kernel_sockaddr_storage remote_addr;
	__u16 local_port;
	__u16 reserved[3];
};

/**
 * rkdapl_cr_query() - who a connection request comes from
 * @cr: from a %RKDAPL_CONNECTION_REQUEST_EVENT, not yet accepted or rejected.
 * @param: filled in.
 *
 * DAT 2.0 dat_cr_query(). Lets a server decide before rkdapl_cr_accept() or rkdapl_cr_reject().
 * Context: process context, may sleep; also from the upcall of @cr's own
 * %RKDAPL_CONNECTION_REQUEST_EVENT.
 * Return: 0; -EINVAL for a bad handle (an accepted or rejected CR included) or NULL @param.
 */
int rkdapl_cr_query(struct rkdapl_cr *cr, struct rkdapl_cr_param *param);

/**
 * rkdapl_cr_reject() - reject a connection request
 * @cr: from a %RKDAPL_CONNECTION_REQUEST_EVENT; consumed.
 * @private_data: bytes for the peer's PEER_REJECTED event, or NULL.
 * @private_data_len: up to %RKDAPL_MAX_PRIVATE_DATA.
 *
 * Context: process context, may sleep: from a thread or work item, or from the upcall of
 * @cr's own %RKDAPL_CONNECTION_REQUEST_EVENT (see &rkdapl_upcall_fn), not from other upcalls.
 * Return: 0; -EINVAL for a bad handle or too much private data (the CR then stays pending).
 */
int rkdapl_cr_reject(struct rkdapl_cr *cr, const void *private_data, __u32 private_data_len);

/**
 * enum rkdapl_completion_flags - flags of the send-queue post calls (DAT_COMPLETION_FLAGS)
 * @RKDAPL_COMPLETION_SOLICITED_WAIT: set the solicited-event bit (DAT 2.0
 *	DAT_COMPLETION_SOLICITED_WAIT_FLAG, IB spec 10.8.3.2) on a SEND, SEND with invalidate or
 *	RDMA WRITE with immediate, so that a peer whose CQ is armed for solicited completions
 *	only (ib_req_notify_cq(IB_CQ_SOLICITED)) is woken by the matching RECV. rkdapl's own
 *	EVDs report every completion, solicited or not. -EINVAL on RDMA WRITE and READ.
 * @RKDAPL_COMPLETION_BARRIER_FENCE: the DTO starts only after every earlier RDMA READ of the
 *	EP has completed (DAT 2.0 DAT_COMPLETION_BARRIER_FENCE_FLAG, IB_SEND_FENCE): for example a
 *	SEND telling the peer "done" after READs from its memory, or a WRITE into memory a
 *	preceding READ fetches from.
 * @RKDAPL_COMPLETION_SUPPRESS: no completion event if the DTO succeeds (DAT 2.0
 *	DAT_COMPLETION_SUPPRESS_FLAG; selective signalling, IB spec 10.8.3): a failed or
 *	flushed DTO still reports its event. A DTO of one work request is posted unsignalled:
 *	it makes no CQ entry, and its resources (the DTO's slot, the LMRs it keeps busy) come
 *	back when a later DTO on the same EP completes successfully, or when the EP is freed
 *	or its device removed (not at disconnect: work flushed then reports nothing for
 *	them). So that suppressed DTOs do not keep every slot, rkdapl signals one anyway (still
 *	without an event) once half of &rkdapl_ep_attr.max_request_dtos in a row went
 *	unsignalled, or when only a quarter of the EP's DTO slots or send-queue work requests is
 *	left; until its completion is polled, the slots stay taken, so a consumer posting faster
 *	than that (each post answering a peer's message) can still fill the queue (-ENOSPC).
 *	Such a silent completion reports nothing, so a consumer that waits for an event to post
 *	again after -ENOSPC must keep a DTO with an event outstanding: post one often enough. A
 *	consumer reusing the memory of suppressed DTOs needs a later signalled DTO's event, or a
 *	peer's reply that means the data arrived, to know they are done. Not for
 *	rkdapl_post_recv().
 */
enum rkdapl_completion_flags {
	RKDAPL_COMPLETION_SUPPRESS = 1 << 0,
	RKDAPL_COMPLETION_SOLICITED_WAIT = 1 << 1,
	RKDAPL_COMPLETION_BARRIER_FENCE = 1 << 2,
};

/**
 * rkdapl_post_send() - post a SEND of the concatenated local segments
 * @ep: a CONNECTED EP.
 * @iov: local segments (LMRs of the EP's PZ).
 * @num_iov: entries in @iov, 0..256; the segments must fit one work request's SGEs
 *	(&rkdapl_ia_attr.max_iov DMA segments).
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags.
 *
 * The peer must have a RECV posted that is large enough (else it retries while
 * &rkdapl_ep_attr.rnr_retry_count allows, then %RKDAPL_DTO_RECEIVER_NOT_READY).
 * A SEND or RDMA WRITE (also with immediate, and in rkdapl_post_chain()) whose segments all
 * lie in LMRs over virtually contiguous memory (rkdapl_lmr_create() and rkdapl_lmr_alloc()
 * LMRs) and fit the QP's inline capacity (what the device grants: 512 bytes with rxe) is
 * posted inline (IB_SEND_INLINE): the driver copies the bytes during the call, after rkdapl
 * has synced them for the CPU. Nothing else changes for the consumer: the LMRs stay busy
 * until the completion event, as for any DTO.
 * Context: any context (does not sleep).
 * Return: 0; -EINVAL for a bad handle, NULL @iov with @num_iov > 0, more than 256 segments
 * or unknown flags; -EXDEV for an LMR of another PZ; -ERANGE for a segment outside its LMR;
 * -EMSGSIZE if the segments need more SGEs than one SEND holds; -ENOTCONN unless CONNECTED;
 * -ENOSPC if &rkdapl_ep_attr.max_request_dtos are outstanding; -ENOMEM.
 */
int rkdapl_post_send(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov, __u32 num_iov,
		     __u64 cookie, __u32 flags);

struct scatterlist;

/**
 * rkdapl_post_send_sg() - post a SEND of local segments followed by pages lent without an LMR
 * @ep: a CONNECTED EP.
 * @iov: local segments sent first (LMRs of the EP's PZ: a command, say); may be NULL if
 *	@num_iov is 0.
 * @num_iov: entries in @iov, 0..256.
 * @sgl: the caller's pages, sent after the segments: a scatterlist of sg_set_page() entries,
 *	not DMA-mapped (a block request's, as blk_rq_map_sg() makes it).
 * @nents: entries in @sgl, 1 or more; the segments and @sgl's DMA segments together must fit
 *	one work request's SGEs (&rkdapl_ep_attr.max_request_iov).
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags but %RKDAPL_COMPLETION_SUPPRESS.
 *
 * The zero-copy SEND of in-capsule data (nvme-rdma's inline data): rkdapl maps @sgl for the
 * EP's device to read (ib_dma_map_sg(), DMA_TO_DEVICE) and sends it with the PZ's local DMA
 * lkey, for this SEND only: no LMR, no registration, nothing the peer could reach (the lkey
 * grants local access only, and the pages are only read). The mapping is undone when the
 * SEND finishes, before its completion event is reported (flushed or not): until that event
 * the caller keeps @sgl and its pages unchanged; after it, or after an error return (nothing
 * is then mapped), they are the caller's again. Hence no %RKDAPL_COMPLETION_SUPPRESS: the
 * event is what gives the pages back. The peer needs a RECV as for rkdapl_post_send().
 * Context: any context (does not sleep; allocates with GFP_ATOMIC).
 * Return: 0; -EINVAL for a bad handle, unknown flags or %RKDAPL_COMPLETION_SUPPRESS, a NULL
 * @sgl, @nents 0, NULL @iov with @num_iov > 0, more than 256 segments, or an @sgl entry
 * without a page or length; -EXDEV for an LMR of another PZ; -ERANGE for a segment outside
 * its LMR; -ENOMEM; -ENODEV after device removal; -EIO if the mapping fails; -ENOTCONN
 * unless CONNECTED; -EMSGSIZE if the segments and pages need more SGEs than one SEND holds,
 * or more than 4 GiB in all; -ENOSPC if &rkdapl_ep_attr.max_request_dtos are outstanding.
 * The arguments are checked before the EP's state: a bad argument is -EINVAL (or -EXDEV,
 * -ERANGE) on any EP, but for an @sgl entry without a page or length, which the mapping
 * finds, after the device: -ENODEV after device removal.
 */
int rkdapl_post_send_sg(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
			__u32 num_iov, struct scatterlist *sgl, __u32 nents, __u64 cookie,
			__u32 flags);

/**
 * rkdapl_post_recv() - post a RECV buffer made of local segments
 * @ep: an EP that is UNCONNECTED, connecting or CONNECTED.
 * @iov: local segments, in LMRs with %RKDAPL_MEM_LOCAL_WRITE.
 * @num_iov: entries in @iov.
 * @cookie: reported in the completion event, whose transferred_length is the bytes received.
 * @flags: 0 (every RECV reports its completion).
 *
 * The RECV is consumed by the peer's next SEND, SEND with immediate, SEND with invalidate or
 * RDMA WRITE with immediate; &struct rkdapl_event.flags tells which (&enum rkdapl_event_flags).
 * As in DAT, RECVs may be posted before rkdapl_ep_connect() or rkdapl_cr_accept(): they wait
 * in the EP (checked, counted and holding their LMRs busy) until its QP exists and are given
 * to it, in order, before the connection is set up. A consumer whose peer may SEND as soon as
 * the connection is established posts its first RECVs so; on iWARP it must (no RNR retry:
 * docs/guide.md, "iWARP (siw) differences"). If the connection attempt fails before the QP
 * exists, or the EP is freed, they complete %RKDAPL_DTO_FLUSHED.
 * Context: any context (does not sleep).
 * Return: 0; as rkdapl_post_send() (-ENOTCONN from the disconnect on: DISCONNECT_PENDING or
 * DISCONNECTED), plus -EACCES for an LMR without local write and -EINVAL for any @flags or an
 * EP created on an SRQ (rkdapl_srq_post_recv()).
 */
int rkdapl_post_recv(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov, __u32 num_iov,
		     __u64 cookie, __u32 flags);

/**
 * rkdapl_post_rdma_write() - RDMA WRITE local segments to the peer's memory
 * @ep: a CONNECTED EP.
 * @iov: local segments.
 * @num_iov: entries in @iov.
 * @remote: the peer's address and rkey (from its rkdapl_rmr_bind()).
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags but %RKDAPL_COMPLETION_SOLICITED_WAIT.
 *
 * Large writes are split into several work requests (at most 8 x &rkdapl_ia_attr.max_iov
 * DMA segments); only the last is signalled (as rdma_rw does), and one completion event
 * reports the whole DTO with the first error, if one failed. Small ones may go inline, as
 * rkdapl_post_send() says.
 * Context: any context (does not sleep).
 * Return: 0; as rkdapl_post_send(), plus -EINVAL for NULL @remote or a remote length that is
 * neither 0 nor the local total.
 */
int rkdapl_post_rdma_write(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
			   __u32 num_iov, const struct rkdapl_rmr_triplet *remote, __u64 cookie,
			   __u32 flags);

/**
 * rkdapl_post_rdma_read() - RDMA READ the peer's memory into local segments
 * @ep: a CONNECTED EP.
 * @iov: local segments, in LMRs with %RKDAPL_MEM_LOCAL_WRITE.
 * @num_iov: entries in @iov.
 * @remote: the peer's address and rkey.
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags but %RKDAPL_COMPLETION_SOLICITED_WAIT.
 *
 * A READ is split as a write is, into work requests of &rkdapl_ia_attr.max_iov SGEs (never
 * more than the device's &rkdapl_ia_attr.max_read_iov), at most 8 of them. On iWARP
 * (&rkdapl_ia_attr.transport %RKDAPL_TRANSPORT_IWARP) the peer's READ responses are tagged
 * writes into the sink, so a READ into one segment registers it through FRWR for local and
 * remote write, as the kernel's rw.c does: IB_WR_REG_MR of one of the EP's 32 sink MRs, then
 * IB_WR_RDMA_READ_WITH_INV, which ends the registration when the READ completes. Such a sink
 * holds up to 256 pages of separate memory (1 MiB; more where the memory is physically
 * contiguous), and at most 32 of these READs may be outstanding per EP. A READ into several
 * segments on iWARP is split by DMA segment and names them by their local key (what siw
 * accepts). A zero-length READ on iWARP carries one empty SGE.
 * Context: any context (does not sleep; on iWARP allocates the sink's scatterlist with
 * GFP_ATOMIC).
 * Return: as rkdapl_post_rdma_write(), plus -EACCES for an LMR without local write; on
 * iWARP also -EMSGSIZE for a one-segment sink larger than a sink MR maps and -ENOSPC while
 * 32 such READs are outstanding.
 */
int rkdapl_post_rdma_read(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
			  __u32 num_iov, const struct rkdapl_rmr_triplet *remote, __u64 cookie,
			  __u32 flags);

/**
 * rkdapl_post_rdma_write_imm() - RDMA WRITE, then consume a RECV at the peer with immediate data
 * @ep: a CONNECTED EP.
 * @iov: local segments.
 * @num_iov: entries in @iov.
 * @remote: the peer's address and rkey; its length may be 0 (with an empty @iov too: then
 *	only the immediate data travels).
 * @immediate: 32 bits the peer finds in its RECV's event (&struct rkdapl_event.immediate).
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags.
 *
 * As rkdapl_post_rdma_write() (IB's RDMA WRITE with immediate; a DAT 2.0 IB extension,
 * dat_ib_post_rdma_write_immed()), and the peer learns that the data is there: the write
 * consumes one RECV posted on the peer's EP, whose event has %RKDAPL_EVENT_RDMA_WRITE_IMM and
 * %RKDAPL_EVENT_WITH_IMM set and the written length as transferred_length. The RECV's buffer is
 * not written. Without a RECV posted the peer answers as for a SEND
 * (%RKDAPL_DTO_RECEIVER_NOT_READY once &rkdapl_ep_attr.rnr_retry_count is exhausted).
 * A write split into several work requests carries the immediate data on its last one.
 * Only where &rkdapl_ia_attr.caps has %RKDAPL_CAP_RDMA_WRITE_IMM: not on iWARP (siw).
 * Context: any context (does not sleep).
 * Return: as rkdapl_post_rdma_write(), plus -EOPNOTSUPP on an iWARP EP (nothing posted).
 */
int rkdapl_post_rdma_write_imm(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
			       __u32 num_iov, const struct rkdapl_rmr_triplet *remote,
			       __u32 immediate, __u64 cookie, __u32 flags);

/**
 * rkdapl_post_send_imm() - SEND with immediate data
 * @ep: a CONNECTED EP.
 * @iov: local segments, as for rkdapl_post_send().
 * @num_iov: entries in @iov.
 * @immediate: 32 bits the peer finds in its RECV's event (&struct rkdapl_event.immediate).
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags.
 *
 * As rkdapl_post_send() (IB's SEND with immediate, IB_WR_SEND_WITH_IMM): the SEND consumes
 * one RECV posted on the peer's EP, which receives the bytes; that RECV's event has
 * %RKDAPL_EVENT_WITH_IMM set, @immediate and the bytes received as transferred_length, but
 * not %RKDAPL_EVENT_RDMA_WRITE_IMM (which tells an RDMA WRITE with immediate apart). An empty
 * @iov sends only the immediate data. Only where &rkdapl_ia_attr.caps has
 * %RKDAPL_CAP_RDMA_WRITE_IMM (immediate data): not on iWARP (siw).
 * Context: any context (does not sleep).
 * Return: as rkdapl_post_send(), plus -EOPNOTSUPP on an iWARP EP (nothing posted).
 */
int rkdapl_post_send_imm(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
			 __u32 num_iov, __u32 immediate, __u64 cookie, __u32 flags);

/**
 * rkdapl_post_send_with_invalidate() - SEND, and end one of the peer's grants
 * @ep: a CONNECTED EP.
 * @iov: local segments, as for rkdapl_post_send().
 * @num_iov: entries in @iov.
 * @rkey: an rkey the peer granted to this side (its rkdapl_rmr_bind() result).
 * @cookie: reported in the completion event.
 * @flags: &enum rkdapl_completion_flags.
 *
 * DAT 2.0 dat_ep_post_send_with_invalidate(), IB's SEND with invalidate (IB spec 10.6.5,
 * as NFS/RDMA and iSER use it): the peer's device invalidates @rkey before it completes the
 * RECV the SEND consumes, so the peer need not post its own unbind. The peer's event has
 * %RKDAPL_EVENT_INVALIDATED and @rkey; its RMR is unbound by then. An @rkey the peer's device
 * cannot invalidate (not one of its rkeys, or already invalid) fails the peer's RECV and
 * breaks the connection (IB spec class J error); depending on the device this side's SEND
 * completes in error or, as on rdma_rxe, successfully before the disconnect.
 * Context: any context (does not sleep).
 * Return: as rkdapl_post_send().
 */
int rkdapl_post_send_with_invalidate(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
				     __u32 num_iov, __u32 rkey, __u64 cookie, __u32 flags);

/**
 * rkdapl_post_fetch_add() - atomically add to a 64-bit word of the peer's memory
 * @ep: a CONNECTED EP.
 * @local: one segment of exactly 8 bytes, in an LMR with %RKDAPL_MEM_LOCAL_WRITE: the
 *	word's value before the add lands there, in the peer's byte order as the device keeps it
 *	(host order on the same architecture).
 * @remote: the peer's address, 8-byte aligned, and rkey, granted with
 *	%RKDAPL_MEM_REMOTE_ATOMIC; its length is 0 or 8.
 * @add: added to the word (modulo 2^64).
 * @cookie: reported in the completion event (@op %RKDAPL_DTO_FETCH_ADD, 8 bytes).
 * @flags: &enum rkdapl_completion_flags but %RKDAPL_COMPLETION_SOLICITED_WAIT.
 *
 * IB's atomic fetch and add (IB spec 9.4.5; a DAT 2.0 IB extension,
 * dat_ib_post_fetch_and_add()). The peer's device reads, adds and writes the word as one
 * operation with respect to the other atomics of that device; the CPUs of the peer are not
 * part of it (IB_ATOMIC_HCA). An atomic counts against the RDMA READ limits
 * (&rkdapl_ep_attr.max_rdma_read_out). A word outside the grant or a grant without
 * %RKDAPL_MEM_REMOTE_ATOMIC completes with %RKDAPL_DTO_REMOTE_ACCESS_ERROR and leaves the word
 * unchanged (the connection then breaks, as for any remote access error).
 * Only where &rkdapl_ia_attr.caps has %RKDAPL_CAP_ATOMICS: not on siw.
 * Context: any context (does not sleep).
 * Return: 0; -EINVAL for a bad handle, NULL @local or @remote, a @local segment that is not
 * 8 bytes, an unaligned @remote address, a remote length other than 0 or 8, or a bad flag;
 * -EOPNOTSUPP on a device without atomics (nothing posted); -EACCES for an LMR without local
 * write; otherwise as rkdapl_post_send().
 */
int rkdapl_post_fetch_add(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *local,
			  const struct rkdapl_rmr_triplet *remote, __u64 add, __u64 cookie,
			  __u32 flags);

/**
 * rkdapl_post_cmp_swap() - atomically compare and swap a 64-bit word of the peer's memory
 * @ep: a CONNECTED EP.
 * @local: as for rkdapl_post_fetch_add(): the word's value before lands there.
 * @remote: as for rkdapl_post_fetch_add().
 * @compare: the value expected in the word.
 * @swap: written to the word if it held @compare.
 * @cookie: reported in the completion event (@op %RKDAPL_DTO_CMP_SWAP, 8 bytes).
 * @flags: &enum rkdapl_completion_flags but %RKDAPL_COMPLETION_SOLICITED_WAIT.
 *
 * IB's atomic compare and swap (IB spec 9.4.5; dat_ib_post_cmp_and_swap()): the swap
 * happened if and only if the value returned in @local equals @compare. Otherwise as
 * rkdapl_post_fetch_add().
 * Context: any context (does not sleep).
 * Return: as rkdapl_post_fetch_add().
 */
int rkdapl_post_cmp_swap(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *local,
			 const struct rkdapl_rmr_triplet *remote, __u64 compare, __u64 swap,
			 __u64 cookie, __u32 flags);

/**
 * struct rkdapl_dto - one send-queue DTO of rkdapl_post_chain()
 * @op: %RKDAPL_DTO_SEND, %RKDAPL_DTO_RDMA_WRITE, %RKDAPL_DTO_RDMA_READ,
 *	%RKDAPL_DTO_RDMA_WRITE_IMM, %RKDAPL_DTO_SEND_INVALIDATE or %RKDAPL_DTO_SEND_IMM.
 * @flags: &enum rkdapl_completion_flags, as for the single post call of @op.
 * @iov: local segments (LMRs of the EP's PZ).
 * @num_iov: entries in @iov, 0..256.
 * @immediate: %RKDAPL_DTO_RDMA_WRITE_IMM and %RKDAPL_DTO_SEND_IMM: the immediate data.
 * @remote: the RDMA operations' peer memory; ignored for SENDs.
 * @invalidate_rkey: %RKDAPL_DTO_SEND_INVALIDATE: the peer's rkey to invalidate.
 * @reserved: must be 0.
 * @cookie: reported in the DTO's completion event.
 */
struct rkdapl_dto {
	__u32 op;
	__u32 flags;
	const struct rkdapl_lmr_triplet *iov;
	__u32 num_iov;
	__u32 immediate;
	struct rkdapl_rmr_triplet remote;
	__u32 invalidate_rkey;
	__u32 reserved;
	__u64 cookie;
};

/**
 * rkdapl_post_chain() - post several send-queue DTOs in one call
 * @ep: a CONNECTED EP.
 * @dtos: the DTOs, in the order the peer sees them.
 * @n: entries in @dtos, 1..4096.
 * @posted: if not NULL, set to the number of DTOs posted, from the start of @dtos.
 *
 * The DTOs go to the device as one chain of work requests (one ib_post_send() call, one
 * doorbell), which costs less per DTO than one post call each. Each DTO is checked and
 * completes as if posted alone: one event per DTO (none for a successful one with
 * %RKDAPL_COMPLETION_SUPPRESS). As with ib_post_send()'s bad_wr, the chain stops at the first
 * DTO that cannot be posted: the ones before it are posted and report their completions, it
 * and the ones after it are not posted and never report. This is not DAT 2.0 (which posts
 * one DTO per call); it is the ib_post_send() list of Linux ULPs.
 * Context: any context (does not sleep). A chain of up to 8 DTOs allocates nothing; a longer
 * one allocates its lists of @n entries with GFP_ATOMIC.
 * Return: 0 if all @n were posted; otherwise the error of the DTO at index *@posted, as its
 * single post call would return it: -EINVAL (bad handle, NULL @dtos, @n out of range, unknown
 * @op or flags, nonzero @reserved, %RKDAPL_COMPLETION_SOLICITED_WAIT on an RDMA WRITE or READ,
 * a remote length that is neither 0 nor the local total), -EXDEV, -ERANGE, -EACCES,
 * -EMSGSIZE, -ENOTCONN, -ENOSPC (fewer free DTO slots than the chain needs), -ENOMEM,
 * -EOPNOTSUPP (%RKDAPL_DTO_RDMA_WRITE_IMM or %RKDAPL_DTO_SEND_IMM on an iWARP EP:
 * &enum rkdapl_caps).
 */
int rkdapl_post_chain(struct rkdapl_ep *ep, const struct rkdapl_dto *dtos, __u32 n,
		      __u32 *posted);

/*
 * Shared receive queues (DAT 2.0 dat_srq_*). An SRQ holds RECVs that every EP created on it
 * (rkdapl_ep_create_with_srq()) consumes, in whatever order their peers' SENDs arrive: one pool
 * of receive buffers for many connections, as a server with many clients wants. docs/guide.md
 * ("Shared receive queues") shows a consumer.
 */

/**
 * struct rkdapl_srq_attr - size of an SRQ (DAT_SRQ_ATTR), and what rkdapl_srq_query() reports
 * @max_recv_dtos: RECVs the SRQ holds, 1..4096 and at most @max_srq_dtos.
 * @max_recv_iov: local segments per RECV (0: 4), at most @max_srq_iov.
 * @low_watermark: rkdapl_srq_create(): the low watermark armed at once (0: none; below
 *	@max_recv_dtos). rkdapl_srq_query(): the watermark armed now, 0 once it fired.
 * @outstanding: rkdapl_srq_query(): RECVs posted and not reported yet.
 * @max_srq_dtos: rkdapl_srq_query(): the device's limit of RECVs per SRQ (at most 4096).
 * @max_srq_iov: rkdapl_srq_query(): the device's limit of segments per SRQ RECV.
 *
 * rkdapl_srq_create() reads the first three fields only.
 */
struct rkdapl_srq_attr {
	__u32 max_recv_dtos;
	__u32 max_recv_iov;
	__u32 low_watermark;
	__u32 outstanding;
	__u32 max_srq_dtos;
	__u32 max_srq_iov;
};

/**
 * rkdapl_srq_create() - create a shared receive queue
 * @pz: the PZ of the SRQ; its EPs and the LMRs of its RECVs are in the same PZ.
 * @evd: an EVD of the same IA, where RECVs still in the SRQ when it is freed are reported.
 * @attr: its size (&struct rkdapl_srq_attr: the first three fields).
 * @srq: the new SRQ.
 *
 * DAT 2.0 dat_srq_create(). A RECV posted to the SRQ (rkdapl_srq_post_recv()) is consumed by
 * whichever EP on it receives a SEND (or RDMA WRITE with immediate) first; its completion is
 * reported on that EP's DTO EVD, with that EP in &rkdapl_event.ep and the RECV's cookie. A
 * RECV still in the SRQ when it is freed (or its device removed) is reported once, with
 * %RKDAPL_DTO_FLUSHED and &rkdapl_event.ep NULL, on @evd: an EP leaving the SRQ flushes none
 * of its RECVs. So each RECV is reported exactly once.
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @attr or @srq, an EVD of another IA, a size of 0,
 * over 4096 or the device's limits, or @low_watermark not below @max_recv_dtos;
 * -EOPNOTSUPP if the device has no SRQs; -ENODEV after device removal; -ENOMEM.
 */
int rkdapl_srq_create(struct rkdapl_pz *pz, struct rkdapl_evd *evd,
		      const struct rkdapl_srq_attr *attr, struct rkdapl_srq **srq);

/**
 * rkdapl_srq_post_recv() - post a RECV buffer to an SRQ
 * @srq: the SRQ.
 * @iov: local segments, in LMRs of the SRQ's PZ with %RKDAPL_MEM_LOCAL_WRITE.
 * @num_iov: entries in @iov.
 * @cookie: reported in the completion event (on the DTO EVD of the EP that consumed it).
 *
 * DAT 2.0 dat_srq_post_recv(). The LMRs stay busy (rkdapl_lmr_free() refuses) until the
 * RECV is reported.
 * Context: any context (does not sleep).
 * Return: 0; -EINVAL for a bad handle or NULL @iov with @num_iov; -EXDEV for an LMR of
 * another PZ; -ERANGE for a segment outside its LMR; -EACCES for an LMR without local write;
 * -EMSGSIZE for more SGEs than &rkdapl_srq_attr.max_recv_iov; -ENOSPC if
 * &rkdapl_srq_attr.max_recv_dtos RECVs are outstanding; -ENODEV after device removal;
 * -ENOMEM.
 */
int rkdapl_srq_post_recv(struct rkdapl_srq *srq, const struct rkdapl_lmr_triplet *iov,
			 __u32 num_iov, __u64 cookie);

/**
 * rkdapl_srq_set_lw() - arm the SRQ's low watermark
 * @srq: the SRQ.
 * @low_watermark: below &rkdapl_srq_attr.max_recv_dtos; 0 disarms it.
 *
 * DAT 2.0 dat_srq_set_lw(). Once fewer than @low_watermark RECVs are left in the SRQ,
 * %RKDAPL_ASYNC_SRQ_LIMIT_REACHED is reported on the IA's async EVD, once: the watermark is
 * then disarmed (as IB_SRQ_LIMIT is) until this is called again.
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle or a watermark not below the SRQ's size; -ENODEV after
 * device removal; the driver's error.
 */
int rkdapl_srq_set_lw(struct rkdapl_srq *srq, __u32 low_watermark);

/**
 * rkdapl_srq_query() - the SRQ's size, armed watermark, RECVs outstanding, device limits
 * @srq: the SRQ.
 * @attr: filled in (&struct rkdapl_srq_attr).
 *
 * DAT 2.0 dat_srq_query(). The SRQ limits of the device are reported here (not in
 * &struct rkdapl_ia_attr).
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle or NULL @attr; -ENODEV after device removal.
 */
int rkdapl_srq_query(struct rkdapl_srq *srq, struct rkdapl_srq_attr *attr);

/**
 * rkdapl_srq_free() - free an SRQ that no EP uses
 * @srq: the SRQ.
 *
 * DAT 2.0 dat_srq_free(). Each RECV still in the SRQ is reported %RKDAPL_DTO_FLUSHED on the
 * EVD given to rkdapl_srq_create() before this returns.
 * Context: process context, may sleep; not from an upcall.
 * Return: 0; -EINVAL for a bad handle; -EDEADLK from an upcall; -EBUSY while EPs created on it
 * are not freed (rkdapl_ep_free() them first; the SRQ stays usable). After the device's
 * removal, which destroyed the SRQ and reported its RECVs, it is freed whatever EPs are left.
 */
int rkdapl_srq_free(struct rkdapl_srq *srq);

/**
 * rkdapl_ep_create_with_srq() - create an unconnected endpoint that receives from an SRQ
 * @pz: the PZ of its QP, the SRQ's PZ.
 * @dto_evd: where its DTO completions go, those of the SRQ RECVs it consumes included.
 * @conn_evd: where its connection events go (may be @dto_evd).
 * @srq: the SRQ its QP takes its RECVs from.
 * @attr: as for rkdapl_ep_create(); &rkdapl_ep_attr.max_recv_dtos and max_recv_iov are
 *	ignored (its receive completion queue is sized for every RECV of the SRQ).
 * @ep: the new EP.
 *
 * DAT 2.0 dat_ep_create_with_srq(). rkdapl_post_recv() on the EP is refused with -EINVAL:
 * post to the SRQ. rkdapl_srq_free() is refused until the EP is freed.
 * Context: process context, may sleep.
 * Return: 0; as rkdapl_ep_create(), plus -EINVAL for a bad @srq handle or an SRQ of another
 * PZ, -ENODEV after the device's removal.
 */
int rkdapl_ep_create_with_srq(struct rkdapl_pz *pz, struct rkdapl_evd *dto_evd,
			      struct rkdapl_evd *conn_evd, struct rkdapl_srq *srq,
			      const struct rkdapl_ep_attr *attr, struct rkdapl_ep **ep);

/**
 * rkdapl_status_msg() - the name of a DTO completion status, for messages
 * @status: an &enum rkdapl_dto_status (&struct rkdapl_event.status of a DTO or RMR bind
 *	completion; a connection event's status is an errno or a reject reason instead).
 *
 * The enumerator's name without "RKDAPL_DTO_": rkdapl_status_msg(RKDAPL_DTO_REMOTE_ACCESS_ERROR)
 * is "REMOTE_ACCESS_ERROR". rkdapl's own log lines use the same names.
 * Context: any.
 * Return: a static string; "UNKNOWN_DTO_STATUS" for a value the enum does not have.
 */
const char *rkdapl_status_msg(int status);

/**
 * rkdapl_event_msg() - the name of an event type, for messages
 * @type: an &enum rkdapl_event_type (&struct rkdapl_event.type).
 *
 * The enumerator's name without "RKDAPL_CONNECTION_EVENT_" or "RKDAPL_ASYNC_", and the first
 * three without "RKDAPL_" and "_EVENT": "DTO_COMPLETION", "CONNECTION_REQUEST", "ESTABLISHED",
 * "PEER_REJECTED", "EVD_OVERFLOW", "PORT_ACTIVE", ...
 * Context: any.
 * Return: a static string; "UNKNOWN_EVENT" for a value the enum does not have.
 */
const char *rkdapl_event_msg(__u32 type);

/**
 * rkdapl_op_msg() - the name of a DTO operation, for messages
 * @op: an &enum rkdapl_dto_op (&struct rkdapl_event.op).
 *
 * The enumerator's name without "RKDAPL_DTO_": "SEND", "RDMA_WRITE", "RMR_BIND", ...
 * Context: any.
 * Return: a static string; "UNKNOWN_DTO_OP" for a value the enum does not have.
 */
const char *rkdapl_op_msg(__u32 op);

#endif /* _RKDAPL_H */
