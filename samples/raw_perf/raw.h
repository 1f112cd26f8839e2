/* SPDX-License-Identifier: GPL-2.0 */
/*
 * raw_perf's two files: run.c, the tool (the server's sessions, the client's runs, the ctl
 * file; see there), and verbs.c, what one side of a connection does with ib_core and rdma_cm
 * (its PD, CQ, QP, buffers and MR, its completions and CM events, its posts).
 */
#ifndef _RAW_PERF_H
#define _RAW_PERF_H

#define pr_fmt(fmt) "raw_perf: " fmt

#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "../perf_common.h"

struct raw {
	const char *who;
	struct perf_args a;
	wait_queue_head_t wq;
	struct rdma_cm_id *listen_id, *id;
	struct rdma_cm_id *pending;	/* server: a connection request not yet taken */
	u8 req_rd_in, req_rd_out;	/* its responder_resources and initiator_depth */
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	bool have_qp;
	bool direct;			/* the CQ is IB_POLL_DIRECT */
	bool spin;			/* wait by spinning on the counters (mode=poll) */
	u32 inline_max;			/* the QP's max_inline_data */
	struct perf_msg *tx, *rx;
	void *buf;
	u32 buf_len;
	u64 tx_dma, rx_dma, buf_dma;
	unsigned long deadline;

	/* CM state, written by raw_cm_handler() */
	bool addr_ok, route_ok, established, disconnected, conn_failed;
	int cm_event;			/* the failing event */
	/* completions, written by the ib_cqe callbacks */
	int err;
	struct perf_counts n;		/* regs: FRWRs */
	u32 data_len;			/* expected bytes of each data completion */
	struct perf_times t;		/* client; post_cost: time inside each ib_post_send() */
	struct ib_cqe data_cqe, ctl_send_cqe, ctl_recv_cqe, reg_cqe;
	struct ib_rdma_wr wrs[PERF_MAX_BATCH];	/* client: the list of one post call */
};

/*
 * Waits until cond holds (0), a completion failed (its errno), the connection went away
 * (-ECONNRESET, printed only if a completion failed too) or the deadline passed
 * (-ETIMEDOUT); -EINTR on a signal. With mode=poll the task spins (draining a direct CQ
 * itself, or watching the counters the softirq or workqueue callbacks advance); otherwise it
 * waits on r->wq.
 */
#define raw_wait_for(r, cond, what)						\
({										\
	u32 __spins = 0;							\
	int __ret;								\
	for (;;) {								\
		__ret = READ_ONCE((r)->err);					\
		if (__ret || (cond))						\
			break;							\
		if (READ_ONCE((r)->disconnected)) {				\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		if ((r)->spin) {						\
			if ((r)->direct)					\
				ib_process_cq_direct((r)->cq, 16);		\
			__ret = perf_spin((r)->deadline, &__spins);		\
		} else {							\
			long __t = wait_event_interruptible_timeout((r)->wq,	\
				(cond) || READ_ONCE((r)->err) ||		\
				READ_ONCE((r)->disconnected),			\
				max_t(long, (long)((r)->deadline - jiffies), 0));\
			__ret = __t < 0 ? -EINTR : __t == 0 && !(cond) ? -ETIMEDOUT : 0; \
		}							\
		if (__ret)							\
			break;							\
	}									\
	if (__ret && (__ret != -ECONNRESET || READ_ONCE((r)->err)))		\
		pr_err("%s: waiting for %s: %d\n", (r)->who, (what), __ret);	\
	__ret;									\
})

/* verbs.c */
int raw_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
enum ib_poll_context raw_poll_ctx(const struct perf_args *a);
int raw_setup(struct raw *r, struct rdma_cm_id *id, enum ib_poll_context poll_ctx, u32 sq,
	      u32 rq, u32 inline_max);
void raw_teardown(struct raw *r);
int raw_post_recv(struct raw *r, u64 dma, u32 len, struct ib_cqe *cqe);
int raw_ctl_send(struct raw *r);
int raw_ctl_post_recv(struct raw *r);
int raw_ctl_recv(struct raw *r, const char *what);
int raw_register(struct raw *r);
void raw_init(struct raw *r);

#endif /* _RAW_PERF_H */
