/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the C samples over rkdapl (rkdapl_sample/, rkdapl_rping.c, rkdapl_perf/) share for
 * their messages and error paths: DTO cookies, CHECK(), accepting a CR (and what a failed
 * accept leaves), and reading a failed connect. Everything is static inline. The one-shot
 * samples' connection itself is in sample_conn.h. The names of event types, DTO statuses and
 * DTO ops in their messages are rkdapl's own: rkdapl_event_msg(), rkdapl_status_msg() and
 * rkdapl_op_msg().
 */
#ifndef _SAMPLE_COMMON_H
#define _SAMPLE_COMMON_H

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/printk.h>

#include "../include/rkdapl.h"

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
