// SPDX-License-Identifier: GPL-2.0
/*
 * The C half of rkdapl's observability: the trace events of rkdapl_trace.h (with the
 * rust_do_trace_*() entry points Rust calls behind the tracepoints' static keys), and the
 * rate-limited kernel log line for a failed DTO, which uses the kernel's own ratelimit.
 */
#include <linux/printk.h>
#include <rdma/ib_verbs.h>
#include "../../include/rkdapl.h"

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include "rkdapl_trace.h"

/* Declared in Rust (trace.rs); not part of the consumer API. */
void rkdapl_log_dto_error(const struct ib_wc *wc, u32 ep, u32 op, u64 cookie, int status);

/**
 * rkdapl_log_dto_error() - log a DTO that completed in error, rate limited
 * @wc: the failed work completion (its QP names the device and the QP number)
 * @ep: the EP's number (its debugfs directory)
 * @op: enum rkdapl_dto_op
 * @cookie: the consumer's cookie
 * @status: enum rkdapl_dto_status
 *
 * For example "rkdapl: rxe0 ep7 qpn 17: RDMA_WRITE cookie 0x2a failed: REMOTE_ACCESS_ERROR
 * (remote access error)": the device and QP number as `rdma res show qp` shows them, the
 * names of rkdapl_op_msg() and rkdapl_status_msg(), and ib_core's name of the work
 * completion's status.
 *
 * Context: any (called from CQ completion work).
 */
void rkdapl_log_dto_error(const struct ib_wc *wc, u32 ep, u32 op, u64 cookie, int status)
{
	pr_warn_ratelimited("rkdapl: %s ep%u qpn %u: %s cookie 0x%llx failed: %s (%s)\n",
			    dev_name(&wc->qp->device->dev), ep, wc->qp->qp_num,
			    rkdapl_op_msg(op), cookie, rkdapl_status_msg(status),
			    ib_wc_status_msg(wc->status));
}
