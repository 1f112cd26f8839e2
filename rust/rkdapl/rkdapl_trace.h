/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkdapl trace events: every DTO post, every DTO completion and every rdma_cm event an EP or
 * PSP handles. Enable with
 *
 *   echo 1 > /sys/kernel/tracing/events/rkdapl/enable; cat /sys/kernel/tracing/trace_pipe
 *
 * @ep is the EP's number, the name of its directory under /sys/kernel/debug/rkdapl/ (0 for a
 * PSP's events), @qpn the number of the EP's QP (0 before it has one, and for a PSP's events):
 * the lqpn of `rdma res show qp`, the qpn of the EP's debugfs file "qp" and of rkdapl's log
 * line for a failed DTO. @op is an enum rkdapl_dto_op, @status an enum
 * rkdapl_dto_status, @cookie the consumer's DTO cookie, @event an rdma_cm event name
 * (rdma_event_msg()). The events are raised from Rust through the rust_do_trace_*() helpers
 * made by CREATE_RUST_TRACE_POINTS (see rkdapl_trace.c and trace.rs).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rkdapl
#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE rkdapl_trace

#if !defined(_RKDAPL_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RKDAPL_TRACE_H

#include <linux/tracepoint.h>

#define rkdapl_show_op(op)						\
	__print_symbolic(op, { 1, "SEND" }, { 2, "RECV" },		\
			 { 3, "RDMA_WRITE" }, { 4, "RDMA_READ" },	\
			 { 5, "RMR_BIND" }, { 6, "RMR_UNBIND" },	\
			 { 7, "RDMA_WRITE_IMM" }, { 8, "SEND_INV" },	\
			 { 9, "FETCH_ADD" }, { 10, "CMP_SWAP" },	\
			 { 11, "SEND_IMM" })

#define rkdapl_show_status(s)						\
	__print_symbolic(s, { 0, "SUCCESS" }, { 1, "FLUSHED" },	\
			 { 2, "LOCAL_LENGTH" }, { 3, "LOCAL_EP" },	\
			 { 4, "LOCAL_PROTECTION" }, { 5, "BAD_RESPONSE" },	\
			 { 6, "REMOTE_ACCESS" }, { 7, "REMOTE_RESPONDER" },	\
			 { 8, "TRANSPORT" }, { 9, "RECEIVER_NOT_READY" },	\
			 { 10, "RMR_OPERATION_FAILED" }, { 11, "GENERIC" })

TRACE_EVENT(rkdapl_post,
	TP_PROTO(u32 ep, u32 qpn, u32 op, u64 cookie, u64 len, u32 nwr, int ret),
	TP_ARGS(ep, qpn, op, cookie, len, nwr, ret),
	TP_STRUCT__entry(
		__field(u32, ep)
		__field(u32, qpn)
		__field(u32, op)
		__field(u64, cookie)
		__field(u64, len)
		__field(u32, nwr)
		__field(int, ret)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->qpn = qpn;
		__entry->op = op;
		__entry->cookie = cookie;
		__entry->len = len;
		__entry->nwr = nwr;
		__entry->ret = ret;
	),
	TP_printk("ep%u qpn=%u %s cookie=0x%llx len=%llu wrs=%u ret=%d", __entry->ep,
		  __entry->qpn, rkdapl_show_op(__entry->op), __entry->cookie, __entry->len,
		  __entry->nwr, __entry->ret)
);

TRACE_EVENT(rkdapl_completion,
	TP_PROTO(u32 ep, u32 qpn, u32 op, u64 cookie, int status, u64 len),
	TP_ARGS(ep, qpn, op, cookie, status, len),
	TP_STRUCT__entry(
		__field(u32, ep)
		__field(u32, qpn)
		__field(u32, op)
		__field(u64, cookie)
		__field(int, status)
		__field(u64, len)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->qpn = qpn;
		__entry->op = op;
		__entry->cookie = cookie;
		__entry->status = status;
		__entry->len = len;
	),
	TP_printk("ep%u qpn=%u %s cookie=0x%llx %s len=%llu", __entry->ep, __entry->qpn,
		  rkdapl_show_op(__entry->op), __entry->cookie,
		  rkdapl_show_status(__entry->status), __entry->len)
);

TRACE_EVENT(rkdapl_cm_event,
	TP_PROTO(u32 ep, u32 qpn, const char *event, int status),
	TP_ARGS(ep, qpn, event, status),
	TP_STRUCT__entry(
		__field(u32, ep)
		__field(u32, qpn)
		__string(event, event)
		__field(int, status)
	),
	TP_fast_assign(
		__entry->ep = ep;
		__entry->qpn = qpn;
		__assign_str(event);
		__entry->status = status;
	),
	TP_printk("ep%u qpn=%u %s status=%d", __entry->ep, __entry->qpn, __get_str(event),
		  __entry->status)
);

#endif /* _RKDAPL_TRACE_H */

#include <trace/define_trace.h>
