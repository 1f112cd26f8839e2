/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the C samples over rkdapl (rkdapl_sample/, rkdapl_rping.c, rkdapl_perf/) share for
 * their messages and error paths: the names of events, DTO statuses and ops, DTO cookies,
 * CHECK(), accepting a CR (and what a failed accept leaves), and reading a failed connect.
 * Everything is static inline. The one-shot samples' connection itself is in sample_conn.h.
 */
#ifndef _SAMPLE_COMMON_H
#define _SAMPLE_COMMON_H

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/printk.h>

#include "../include/rkdapl.h"

/* The name of an &enum rkdapl_event_type, for messages. */
static inline const char *event_name(u32 type)
{
	static const char *const names[] = {
		[RKDAPL_DTO_COMPLETION_EVENT] = "DTO_COMPLETION",
		[RKDAPL_RMR_BIND_COMPLETION_EVENT] = "RMR_BIND_COMPLETION",
		[RKDAPL_CONNECTION_REQUEST_EVENT] = "CONNECTION_REQUEST",
		[RKDAPL_CONNECTION_EVENT_ESTABLISHED] = "ESTABLISHED",
		[RKDAPL_CONNECTION_EVENT_PEER_REJECTED] = "PEER_REJECTED",
		[RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED] = "NON_PEER_REJECTED",
		[RKDAPL_CONNECTION_EVENT_UNREACHABLE] = "UNREACHABLE",
		[RKDAPL_CONNECTION_EVENT_TIMED_OUT] = "TIMED_OUT",
		[RKDAPL_CONNECTION_EVENT_DISCONNECTED] = "DISCONNECTED",
		[RKDAPL_CONNECTION_EVENT_BROKEN] = "BROKEN",
		[RKDAPL_ASYNC_EVD_OVERFLOW] = "EVD_OVERFLOW",
		[RKDAPL_ASYNC_IA_CATASTROPHIC] = "IA_CATASTROPHIC",
	};

	return type < ARRAY_SIZE(names) && names[type] ? names[type] : "?";
}

/* The name of a DTO completion status (&enum rkdapl_dto_status), for messages. */
static inline const char *status_name(s32 status)
{
	static const char *const names[] = {
		[RKDAPL_DTO_SUCCESS] = "SUCCESS",
		[RKDAPL_DTO_FLUSHED] = "FLUSHED",
		[RKDAPL_DTO_LOCAL_LENGTH_ERROR] = "LOCAL_LENGTH_ERROR",
		[RKDAPL_DTO_LOCAL_EP_ERROR] = "LOCAL_EP_ERROR",
		[RKDAPL_DTO_LOCAL_PROTECTION_ERROR] = "LOCAL_PROTECTION_ERROR",
		[RKDAPL_DTO_BAD_RESPONSE] = "BAD_RESPONSE",
		[RKDAPL_DTO_REMOTE_ACCESS_ERROR] = "REMOTE_ACCESS_ERROR",
		[RKDAPL_DTO_REMOTE_RESPONDER_ERROR] = "REMOTE_RESPONDER_ERROR",
		[RKDAPL_DTO_TRANSPORT_ERROR] = "TRANSPORT_ERROR",
		[RKDAPL_DTO_RECEIVER_NOT_READY] = "RECEIVER_NOT_READY",
		[RKDAPL_DTO_RMR_OPERATION_FAILED] = "RMR_OPERATION_FAILED",
		[RKDAPL_DTO_GENERIC_ERROR] = "GENERIC_ERROR",
	};

	return (u32)status < ARRAY_SIZE(names) && names[status] ? names[status] : "?";
}

/* The name of a DTO op (&enum rkdapl_dto_op), for messages. */
static inline const char *op_name(u32 op)
{
	static const char *const names[] = {
		[RKDAPL_DTO_SEND] = "SEND",
		[RKDAPL_DTO_RECV] = "RECV",
		[RKDAPL_DTO_RDMA_WRITE] = "RDMA_WRITE",
		[RKDAPL_DTO_RDMA_READ] = "RDMA_READ",
		[RKDAPL_DTO_RMR_BIND] = "RMR_BIND",
		[RKDAPL_DTO_RMR_UNBIND] = "RMR_UNBIND",
		[RKDAPL_DTO_RDMA_WRITE_IMM] = "RDMA_WRITE_IMM",
		[RKDAPL_DTO_SEND_INVALIDATE] = "SEND_INVALIDATE",
		[RKDAPL_DTO_FETCH_ADD] = "FETCH_ADD",
		[RKDAPL_DTO_CMP_SWAP] = "CMP_SWAP",
		[RKDAPL_DTO_SEND_IMM] = "SEND_IMM",
	};

	return op < ARRAY_SIZE(names) && names[op] ? names[op] : "?";
}

/*
 * A DTO cookie of the C samples: the kind of work request (each sample's own enum) in the top
 * 16 bits, an index below, of which COOKIE_IDX() gives the low 32 bits.
 */
#define COOKIE(kind, idx) (((u64)(kind) << 48) | (u64)(idx))
#define COOKIE_KIND(c) ((u32)((c) >> 48))
#define COOKIE_IDX(c) ((u32)(c))

/* Runs one rkdapl call; on failure prints @x->who, the call as written and its errno. */
#define CHECK(x, call)								\
({										\
	int __c = (call);							\
	if (__c)								\
		pr_err("%s: %s failed: %d\n", (x)->who, #call, __c);		\
	__c;									\
})

/*
 * Whether a CR whose rkdapl_cr_accept() failed with @ret is still pending, for the caller to
 * reject: after -EISCONN and -EXDEV it is (include/rkdapl.h), as after -EINVAL (a refused
 * call); QP creation and rdma_accept errors consume it.
 */
static inline bool cr_still_pending(int ret)
{
	return ret == -EINVAL || ret == -EISCONN || ret == -EXDEV;
}

/*
 * Server: accepts the CR *@cr on @ep, without private data. A CR that rkdapl_cr_accept()
 * consumed (it succeeded, or failed in a way that consumes it) is cleared from *@cr; one still
 * pending stays there for the caller to reject. Returns rkdapl_cr_accept()'s result.
 */
static inline int sample_cr_accept(struct rkdapl_cr **cr, struct rkdapl_ep *ep)
{
	int ret = rkdapl_cr_accept(*cr, ep, NULL, 0);

	if (ret)
		pr_err("server: rkdapl_cr_accept() failed: %d\n", ret);
	if (!ret || !cr_still_pending(ret))
		*cr = NULL;
	return ret;
}

/* Whether a connect that failed with event @type is worth retrying: the server may come up. */
static inline bool connect_retryable(u32 type)
{
	return type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED ||
	       type == RKDAPL_CONNECTION_EVENT_UNREACHABLE ||
	       type == RKDAPL_CONNECTION_EVENT_TIMED_OUT;
}

#endif /* _SAMPLE_COMMON_H */
