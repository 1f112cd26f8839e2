/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rkdapl_perf's two files: run.c, the tool (the server's sessions, the client's runs, the ctl
 * file; see there), and side.c, what one side of a connection does with rkdapl (its objects
 * and buffers, its events and how it waits for them, the control messages).
 */
#ifndef _RKDAPL_PERF_H
#define _RKDAPL_PERF_H

#define pr_fmt(fmt) "rkdapl_perf: " fmt

#include "../perf_common.h"
#include "../sample_common.h"

/* The kinds of the cookies (COOKIE()): the DTO's index below. */
enum { K_DATA = 1, K_CTL_SEND, K_CTL_RECV, K_BIND };

/* One side of one connection (and, for the server, what outlives it). */
struct perf {
	const char *who;
	struct perf_args a;		/* the command; a server's session copies the hello in */
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;
	struct rkdapl_psp *psp;
	struct rkdapl_cr *cr;
	struct rkdapl_ep *ep;
	struct rkdapl_rmr *rmr;
	struct perf_msg *tx, *rx;
	struct rkdapl_lmr *tx_lmr, *rx_lmr;
	void *buf;
	u32 buf_len;
	struct rkdapl_lmr *buf_lmr;
	u32 mode;			/* how events are taken now */
	unsigned long deadline;

	/* event state */
	int err;
	bool want_cr, established, disconnected, conn_failed;
	u32 conn_fail_type;
	struct perf_counts n;		/* regs: RMR binds */
	struct perf_times t;		/* client */
	struct rkdapl_dto dtos[PERF_MAX_BATCH];	/* client: the chain of one post call */
	struct page **sparse_pages;	/* buf=sparse: the buffer's pages */
	u32 sparse_n;
};

/* Handles events until cond holds, an event failed or the connection went away. */
#define perf_wait_for(p, cond, what)						\
({										\
	int __ret;								\
	for (;;) {								\
		__ret = (p)->err;						\
		if (__ret || (cond))						\
			break;							\
		if ((p)->disconnected) {					\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		__ret = perf_step(p);						\
		if (__ret)							\
			break;							\
	}									\
	if (__ret)								\
		pr_err("%s: waiting for %s: %d\n", (p)->who, (what), __ret);	\
	__ret;									\
})

/* side.c */
void perf_event(struct perf *p, const struct rkdapl_event *ev, u64 now);
int perf_step(struct perf *p);
int perf_post_ctl_recv(struct perf *p);
int perf_post_ctl_send(struct perf *p);
int perf_ctl_recv(struct perf *p, const char *what);
int perf_open(struct perf *p, u32 evd_len, u32 buf_len);
int perf_end_session(struct perf *p);
void perf_close(struct perf *p);
void perf_reset_session(struct perf *p);
void perf_ep_attr(struct rkdapl_ep_attr *attr, u32 txdepth, u32 recvs);

#endif /* _RKDAPL_PERF_H */
