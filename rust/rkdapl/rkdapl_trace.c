// SPDX-License-Identifier: GPL-2.0
/*
 * The C half of rkdapl's observability: the trace events of rkdapl_trace.h (with the
 * rust_do_trace_*() entry points Rust calls behind the tracepoints' static keys), and the
 * rate-limited kernel log line for a failed DTO, which uses the kernel's own ratelimit.
 */
#include <linux/printk.h>
#include <rdma/ib_verbs.h>

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "rkdapl_trace.h"

/* Declared in Rust (trace.rs); not part of the consumer API. */
void rkdapl_log_dto_error(u32 ep, u32 op, u64 cookie, int status, u32 wc_status);

/**
 * rkdapl_log_dto_error() - log a DTO that completed in error, rate limited
 * @ep: the EP's number (its debugfs directory)
 * @op: enum rkdapl_dto_op
 * @cookie: the consumer's cookie
 * @status: enum rkdapl_dto_status
 * @wc_status: the work completion's enum ib_wc_status
 *
 * Context: any (called from CQ completion work).
 */
void rkdapl_log_dto_error(u32 ep, u32 op, u64 cookie, int status, u32 wc_status)
{
	pr_warn_ratelimited("rkdapl: ep%u: DTO op %u cookie 0x%llx failed: status %d (%s)\n",
			    ep, op, cookie, status, ib_wc_status_msg(wc_status));
}
