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
 * must be GPL-compatible (symbols are EXPORT_SYMBOL_GPL).
 */
#ifndef _RKDAPL_H
#define _RKDAPL_H

#include <linux/types.h>
#include <linux/socket.h>

struct rkdapl_ia;
struct rkdapl_pz;
struct rkdapl_lmr;
struct rkdapl_rmr;
struct rkdapl_evd;
struct rkdapl_ep;
struct rkdapl_psp;
struct rkdapl_cr;

/* Bytes of private data a connect, accept, reject or event carries at most. */
#define RKDAPL_MAX_PRIVATE_DATA 56
/* rkdapl_evd_wait(): no time limit (DAT's DAT_TIMEOUT_INFINITE). */
#define RKDAPL_TIMEOUT_INFINITE 0xffffffffU

/**
 * enum rkdapl_mem_priv - memory privileges of an LMR (DAT_MEM_PRIV_FLAGS)
 * @RKDAPL_MEM_LOCAL_WRITE: RECV and RDMA READ may place data in the LMR.
 * @RKDAPL_MEM_REMOTE_READ: RMRs over the LMR may grant remote RDMA READ.
 * @RKDAPL_MEM_REMOTE_WRITE: RMRs over the LMR may grant remote RDMA WRITE.
 */
enum rkdapl_mem_priv {
	RKDAPL_MEM_LOCAL_WRITE = 1 << 0,
	RKDAPL_MEM_REMOTE_READ = 1 << 1,
	RKDAPL_MEM_REMOTE_WRITE = 1 << 2,
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
 *	EPs' %RKDAPL_CONNECTION_EVENT_BROKEN; free everything on the IA.
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
 *
 * The send-queue operations (SEND, RDMA_WRITE, RDMA_READ, RDMA_WRITE_IMM, SEND_INVALIDATE)
 * are also the &struct rkdapl_dto.op values of rkdapl_post_chain().
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
};

/**
 * enum rkdapl_event_flags - what consumed a RECV (&struct rkdapl_event.flags)
 * @RKDAPL_EVENT_WITH_IMM: &struct rkdapl_event.immediate holds the peer's immediate data.
 * @RKDAPL_EVENT_RDMA_WRITE_IMM: an RDMA WRITE with immediate consumed the RECV: its data
 *	went to the peer-named grant, not to the RECV's buffer (left untouched), and
 *	&struct rkdapl_event.transferred_length is the bytes it wrote.
 * @RKDAPL_EVENT_INVALIDATED: a SEND with invalidate consumed the RECV: the device invalidated
 *	&struct rkdapl_event.invalidated_rkey before completing it. If that rkey was the grant of
 *	an RMR of the EP's PZ, that RMR is unbound when the event is dequeued: its LMR is free to
 *	reuse or free, rkdapl_rmr_unbind() returns -EINVAL and rkdapl_rmr_bind() grants anew.
 */
enum rkdapl_event_flags {
	RKDAPL_EVENT_WITH_IMM = 1 << 0,
	RKDAPL_EVENT_RDMA_WRITE_IMM = 1 << 1,
	RKDAPL_EVENT_INVALIDATED = 1 << 2,
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
 * @RKDAPL_EP_STATE_DISCONNECTED: the connection ended or failed; the EP can only be freed.
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
 * @immediate: immediate data of a RECV completed by an RDMA WRITE with immediate (with
 *	%RKDAPL_EVENT_WITH_IMM in @flags), in host order.
 * @flags: RECV completions: &enum rkdapl_event_flags; 0 otherwise.
 * @invalidated_rkey: with %RKDAPL_EVENT_INVALIDATED in @flags, the rkey the peer invalidated.
 * @private_data_len: bytes valid in @private_data.
 * @private_data: the peer's private data of a connection request, accept or reject.
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
 *	must be detected.
 * @rnr_retry_count: how often the peer retries a SEND (or RDMA WRITE with immediate) that
 *	finds no RECV posted on this EP, 1..7, 7 = forever (default 7); after the last retry the
 *	peer's DTO completes with %RKDAPL_DTO_RECEIVER_NOT_READY. The IB CM carries each side's
 *	value to the other side's QP (REQ and REP), so it is set by the receiving EP.
 * @remote_addr: rkdapl_ep_query() only (rkdapl_ep_create() ignores it): the peer's address
 *	and port (network order, as in a &struct sockaddr_in) once the EP connects or accepted a
 *	CR; %AF_UNSPEC (zeroes) before. DAT's remote_ia_address and remote_port_qual.
 * @path_mtu: rkdapl_ep_query() only: the path MTU in bytes (256..4096) the EP's QP sends and
 *	receives with, once the connection is ESTABLISHED (0 before). rdma_cm takes it from
 *	the connecting side's route (on RoCE, from its netdev's MTU) for both QPs; see
 *	docs/guide.md ("Path MTU") for peers whose MTUs differ.
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
 * The device is ib_device_get_by_netdev()'s. Call it through rkdapl_ia_open_netdev().
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

/**
 * rkdapl_ia_close() - close an IA handle
 * @ia: the IA.
 *
 * Objects created on the IA keep working and keep the device open until they are freed.
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
 * Return: 0; -EINVAL for a bad handle; -EBUSY while a DTO or RMR binding uses it.
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
 * @privileges: %RKDAPL_MEM_REMOTE_READ and/or %RKDAPL_MEM_REMOTE_WRITE.
 * @ep: the EP (connected or connecting, same PZ) that posts the registration.
 * @cookie: reported with the %RKDAPL_RMR_BIND_COMPLETION_EVENT on @ep's DTO EVD.
 * @rkey: the key to give the peer.
 * @address: the address to give the peer.
 *
 * Posts an FRWR registration with a fresh key bounded to exactly the range and rights; the
 * grant is valid once the bind completion arrives (or for any DTO posted after this call on
 * the same EP). A peer outside the range or rights gets %RKDAPL_DTO_REMOTE_ACCESS_ERROR.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @rkey/@address, zero @length or other privilege
 * bits; -ERANGE if the range leaves the LMR; -EACCES if the LMR lacks a privilege; -EXDEV for
 * objects of different PZs; -EBUSY if already bound; -E2BIG if the range needs too many pages;
 * -ENOTCONN if @ep has no connection; -ENOSPC if @ep's send queue is full.
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
 * Context: process context, may sleep.
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
 * %RKDAPL_ASYNC_IA_CATASTROPHIC when the device goes away and %RKDAPL_ASYNC_EVD_OVERFLOW
 * when another EVD of the IA overflows. Without one, those events are not reported there
 * (the EPs still report BROKEN, the EVD its own overflow). rkdapl_evd_free() of the async
 * EVD unsets it.
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
 * Context: process context, sleeps interruptibly.
 * Return: 0; -ETIMEDOUT (never with %RKDAPL_TIMEOUT_INFINITE); -EINTR on a signal; -EINVAL for
 * a bad handle or NULL @event.
 */
int rkdapl_evd_wait(struct rkdapl_evd *evd, __u32 timeout_ms, struct rkdapl_event *event);

/**
 * rkdapl_evd_free() - free an EVD handle (EPs using it keep it until they are freed)
 * @evd: the EVD.
 *
 * An upcall set on the EVD is disabled first, as by rkdapl_evd_modify_upcall(); events that
 * come afterwards for EPs still using the EVD are queued and dropped with it.
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle.
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
 * rkdapl lock held. It must not sleep (it holds up the completions of its CQ or the events
 * of its CM id meanwhile) and must not call rkdapl functions that may sleep (freeing an EP,
 * connecting, ...): post DTOs, dequeue, and hand the rest to a work item.
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
 * Context: process context, may sleep; not from the upcall itself.
 * Return: 0; -EINVAL for a bad handle, an unknown @policy or a NULL @upcall with a policy
 * other than %RKDAPL_UPCALL_DISABLE.
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
 * UNREACHABLE, TIMED_OUT or NON_PEER_REJECTED.
 *
 * Context: process context, may sleep.
 * Return: 0 if the attempt started; -EINVAL for a bad handle, NULL @remote, zero timeout or
 * too much private data; -EAFNOSUPPORT for another address family; -EISCONN unless the EP
 * is UNCONNECTED; rdma_cm's errors (e.g. -ENETUNREACH, -EADDRNOTAVAIL).
 */
int rkdapl_ep_connect(struct rkdapl_ep *ep, const struct sockaddr *remote, __u32 timeout_ms,
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
 * Every DTO still posted completes first (flushed), then the CM id and the QP are destroyed.
 * Context: process context, sleeps until the QP is drained.
 * Return: 0; -EINVAL for a bad handle.
 */
int rkdapl_ep_free(struct rkdapl_ep *ep);

/**
 * rkdapl_psp_create() - listen for connections on a port
 * @ia: the IA; requests arriving on other devices are refused.
 * @port: TCP-port-space port in host byte order (7471, not htons(7471)), not 0. The PSP
 *	listens on that port of the IPv4 wildcard address (0.0.0.0). The connecting side's
 *	&struct sockaddr_in for rkdapl_ep_connect() carries the same port in network byte order.
 * @backlog: requests pending at most.
 * @evd: where %RKDAPL_CONNECTION_REQUEST_EVENT goes.
 * @psp: the new PSP.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle, NULL @psp, port 0 or backlog 0; -EADDRINUSE.
 */
int rkdapl_psp_create(struct rkdapl_ia *ia, __u16 port, __u32 backlog, struct rkdapl_evd *evd,
		      struct rkdapl_psp **psp);

/**
 * rkdapl_psp_free() - stop listening; pending CRs are rejected
 * @psp: the PSP.
 *
 * Context: process context, may sleep.
 * Return: 0; -EINVAL for a bad handle.
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
 *	them). So that suppressed DTOs cannot take every slot, rkdapl signals one anyway (still
 *	without an event) once half of &rkdapl_ep_attr.max_request_dtos wait unsignalled. A
 *	consumer reusing the memory of suppressed DTOs needs a later signalled DTO's event to
 *	know they are done. Not for rkdapl_post_recv().
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

/**
 * rkdapl_post_recv() - post a RECV buffer made of local segments
 * @ep: an EP with a QP (connecting or CONNECTED).
 * @iov: local segments, in LMRs with %RKDAPL_MEM_LOCAL_WRITE.
 * @num_iov: entries in @iov.
 * @cookie: reported in the completion event, whose transferred_length is the bytes received.
 * @flags: 0 (every RECV reports its completion).
 *
 * The RECV is consumed by the peer's next SEND, SEND with invalidate or RDMA WRITE with
 * immediate; &struct rkdapl_event.flags tells which (&enum rkdapl_event_flags).
 * Context: any context (does not sleep).
 * Return: 0; as rkdapl_post_send(), plus -EACCES for an LMR without local write and
 * -EINVAL for any @flags.
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
 * Context: any context (does not sleep).
 * Return: as rkdapl_post_rdma_write(), plus -EACCES for an LMR without local write.
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
 * Context: any context (does not sleep).
 * Return: as rkdapl_post_rdma_write().
 */
int rkdapl_post_rdma_write_imm(struct rkdapl_ep *ep, const struct rkdapl_lmr_triplet *iov,
			       __u32 num_iov, const struct rkdapl_rmr_triplet *remote,
			       __u32 immediate, __u64 cookie, __u32 flags);

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
 * struct rkdapl_dto - one send-queue DTO of rkdapl_post_chain()
 * @op: %RKDAPL_DTO_SEND, %RKDAPL_DTO_RDMA_WRITE, %RKDAPL_DTO_RDMA_READ,
 *	%RKDAPL_DTO_RDMA_WRITE_IMM or %RKDAPL_DTO_SEND_INVALIDATE.
 * @flags: &enum rkdapl_completion_flags, as for the single post call of @op.
 * @iov: local segments (LMRs of the EP's PZ).
 * @num_iov: entries in @iov, 0..256.
 * @immediate: %RKDAPL_DTO_RDMA_WRITE_IMM: the immediate data.
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
 * Context: any context (does not sleep). Allocates two arrays of @n entries with GFP_ATOMIC.
 * Return: 0 if all @n were posted; otherwise the error of the DTO at index *@posted, as its
 * single post call would return it: -EINVAL (bad handle, NULL @dtos, @n out of range, unknown
 * @op or flags, nonzero @reserved, %RKDAPL_COMPLETION_SOLICITED_WAIT on an RDMA WRITE or READ,
 * a remote length that is neither 0 nor the local total), -EXDEV, -ERANGE, -EACCES,
 * -EMSGSIZE, -ENOTCONN, -ENOSPC (fewer free DTO slots than the chain needs), -ENOMEM.
 */
int rkdapl_post_chain(struct rkdapl_ep *ep, const struct rkdapl_dto *dtos, __u32 n,
		      __u32 *posted);

#endif /* _RKDAPL_H */
