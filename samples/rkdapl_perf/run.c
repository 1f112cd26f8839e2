// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_perf: an in-kernel RDMA performance tool over the rkdapl C API (include/rkdapl.h),
 * in the spirit of krping. samples/raw_perf/ does the same work directly on ib_core and
 * rdma_cm (tool=raw), so the two result lines compare rkdapl with raw verbs.
 *
 *   insmod rkdapl_perf.ko
 *   A# echo "server port=7700" > /sys/kernel/debug/rkdapl_perf/ctl       (blocks; see below)
 *   B# echo "client addr=10.77.0.1 port=7700 op=write kind=bw size=65536 iters=200 \
 *            txdepth=16 mode=poll" > /sys/kernel/debug/rkdapl_perf/ctl
 *   B# cat /sys/kernel/debug/rkdapl_perf/result    (or dmesg | grep 'rkdapl_perf: result')
 *   B# echo "client addr=10.77.0.1 port=7700 op=stop" > /sys/kernel/debug/rkdapl_perf/ctl
 *   B# echo "ceiling" > /sys/kernel/debug/rkdapl_perf/ctl
 *
 * Commands, keys, the result line and the wire protocol: samples/perf_common.h.
 * scripts/bench.sh (make bench) runs it in the two guests.
 *
 * mode=poll takes events with rkdapl_evd_dequeue() in a spin loop, mode=event with
 * rkdapl_evd_wait(). rkdapl itself polls its CQs from a workqueue (IB_POLL_WORKQUEUE), so in
 * both modes a kworker moves each completion into the EVD; poll saves the wake-up of the
 * waiting task only. Servers always wait with rkdapl_evd_wait(): a spinning server would take
 * a CPU from rxe, which runs its send and receive paths on the same two guest CPUs.
 *
 * This file is the tool: the server's sessions, the client's runs and the ctl file. What one
 * side does with rkdapl (objects, buffers, events, waiting, control messages) is in side.c.
 */
#include "perf.h"

#include <linux/delay.h>
#include <linux/module.h>

#include "../perf_ctl.h"

/* ---- server ------------------------------------------------------------------------- */

static int server_session(struct perf *p, bool *stop)
{
	struct rkdapl_lmr_triplet iov = { .lmr = p->buf_lmr };
	const struct perf_msg *m = p->rx;
	struct rkdapl_ep_attr attr;
	u32 op, size, iters;
	u64 addr;
	u32 rkey;
	int ret;

	perf_reset_session(p);
	p->mode = PERF_EVENT;
	p->deadline = jiffies + msecs_to_jiffies(p->a.timeout_ms);
	perf_ep_attr(&attr, 4, PERF_RECV_DEPTH + 1);
	ret = CHECK(p, rkdapl_ep_create(p->pz, p->evd, p->evd, &attr, &p->ep));
	if (ret)
		return ret;
	/* before the accept: over iWARP a SEND that finds no RECV ends the connection */
	ret = perf_post_ctl_recv(p);
	if (ret)
		return ret;
	ret = sample_cr_accept(&p->cr, p->ep);
	if (ret)
		return ret;
	ret = perf_ctl_recv(p, "the hello");
	if (ret)
		return ret;
	/*
	 * The client may send as soon as it has the IB CM's REP, so its hello can complete
	 * here before ESTABLISHED does; until then the EP refuses SENDs with -ENOTCONN (seen in
	 * make bench, 3 sessions out of 31).
	 */
	ret = perf_wait_for(p, p->established, "ESTABLISHED");
	if (ret)
		return ret;
	ret = perf_check_hello(m, p->buf_len, &op, &size, &iters);
	if (ret) {
		*stop = ret == 1;
		return ret == 1 ? 0 : ret;
	}
	p->a.op = op;
	p->a.size = size;
	p->a.iters = iters;

	ret = CHECK(p, rkdapl_rmr_create(p->pz, &p->rmr));
	if (ret)
		return ret;
	ret = CHECK(p, rkdapl_rmr_bind(p->rmr, p->buf_lmr, 0, p->buf_len,
				       RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, p->ep,
				       COOKIE(K_BIND, 0), &rkey, &addr));
	if (ret)
		return ret;
	p->n.regs++;
	ret = perf_wait_for(p, p->n.regs_done == p->n.regs, "the RMR bind");
	if (ret)
		return ret;
	iov.length = size;
	if (op == PERF_OP_SEND) {
		while (p->n.data_posted < min(iters, PERF_RECV_DEPTH)) {
			ret = CHECK(p, rkdapl_post_recv(p->ep, &iov, 1,
							COOKIE(K_DATA, p->n.data_posted), 0));
			if (ret)
				return ret;
			p->n.data_posted++;
		}
	}
	perf_advert(p->tx, addr, rkey, p->buf_len);
	ret = perf_post_ctl_send(p);
	if (ret)
		return ret;

	/*
	 * Serve until the client disconnects and every DTO of this side is back (RECV
	 * completions and the DISCONNECTED event come by different paths); op=send: keep
	 * RECVs posted.
	 */
	for (;;) {
		while (op == PERF_OP_SEND && p->n.data_posted < iters &&
		       p->n.data_posted - p->n.data_done < PERF_RECV_DEPTH) {
			ret = CHECK(p, rkdapl_post_recv(p->ep, &iov, 1,
							COOKIE(K_DATA, p->n.data_posted), 0));
			if (ret)
				return ret;
			p->n.data_posted++;
		}
		if (p->err)
			return p->err;
		if (p->disconnected && p->n.data_done == p->n.data_posted &&
		    p->n.ctl_sends_done == p->n.ctl_sends)
			break;
		p->deadline = jiffies + msecs_to_jiffies(p->a.timeout_ms);
		ret = perf_step(p);
		if (ret) {
			pr_err("server: waiting for the client: %d\n", ret);
			return ret;
		}
	}
	if (op == PERF_OP_SEND && p->n.data_ok != iters) {
		pr_err("server: %u of %u SENDs arrived\n", p->n.data_ok, iters);
		return -EIO;
	}
	pr_info("server: served op=%s size=%u iters=%u mode=%s\n",
		PERF_NAME(perf_op_names, op), size, iters, PERF_NAME(perf_mode_names, p->mode));
	return 0;
}

/*
 * Listens and serves sessions until p->a.sessions are done, a client sends op=stop or the
 * writer gets a signal. Context: process context, sleeps for as long as it serves.
 */
static int server_run(struct perf *p)
{
	bool stop = false;
	u32 served = 0;
	int ret;

	ret = perf_open(p, 4 * PERF_RECV_DEPTH + 64, p->a.size);
	if (ret)
		return ret;
	ret = CHECK(p, rkdapl_psp_create(p->ia, ntohs(p->a.sin.sin_port), 4, p->evd, &p->psp));
	if (ret)
		return ret;
	pr_info("server: listening on %s port %u, buffer %u bytes\n", p->a.dev,
		ntohs(p->a.sin.sin_port), p->a.size);
	while (!stop && (!p->a.sessions || served < p->a.sessions)) {
		p->want_cr = true;
		p->mode = PERF_EVENT;
		while (!p->cr) {
			struct rkdapl_event ev;

			/* wait for a client as long as it takes (a signal ends the server) */
			ret = rkdapl_evd_wait(p->evd, 60000, &ev);
			if (ret == -ETIMEDOUT)
				continue;
			if (ret == -EINTR) {
				pr_info("server: interrupted after %u sessions\n", served);
				return 0;
			}
			if (ret)
				return ret;
			perf_event(p, &ev, 0);
		}
		p->want_cr = false;
		ret = server_session(p, &stop);
		if (CHECK(p, perf_end_session(p)) && !ret)
			ret = -EIO;
		/* a session that failed before its accept took the CR: the next waits for another */
		if (p->cr) {
			CHECK(p, rkdapl_cr_reject(p->cr, NULL, 0));
			p->cr = NULL;
		}
		if (ret)
			pr_err("server: session %u failed: %d\n", served + 1, ret);
		served++;
		/* a failed session (the client's problem) does not stop the server */
		if (ret == -ENOMEM || ret == -ENODEV)
			return ret;
	}
	pr_info("server: done after %u sessions\n", served);
	return 0;
}

/* ---- client ------------------------------------------------------------------------- */

static int client_connect(struct perf *p)
{
	struct rkdapl_ep_attr attr;
	u32 attempt;
	int ret;

	perf_ep_attr(&attr, p->a.txdepth, 2);
	for (attempt = 1;; attempt++) {
		perf_reset_session(p);
		ret = CHECK(p, rkdapl_ep_create(p->pz, p->evd, p->evd, &attr, &p->ep));
		if (ret)
			return ret;
		ret = rkdapl_ep_connect(p->ep, (struct sockaddr *)&p->a.sin, 5000, NULL, 0);
		if (!ret)
			ret = perf_wait_for(p, p->established || p->conn_failed, "the connection");
		if (ret)
			return ret;
		if (p->established)
			return 0;
		if (!connect_retryable(p->conn_fail_type)) {
			pr_err("client: connect to %pI4:%u: %s\n", &p->a.sin.sin_addr,
			       ntohs(p->a.sin.sin_port), rkdapl_event_msg(p->conn_fail_type));
			return -ECONNREFUSED;
		}
		ret = perf_end_session(p);
		if (ret)
			return ret;
		if (!perf_ms_left(p->deadline) || attempt >= 20) {
			pr_err("client: no connection to %pI4:%u after %u attempts\n",
			       &p->a.sin.sin_addr, ntohs(p->a.sin.sin_port), attempt);
			return -ETIMEDOUT;
		}
		msleep(500);
	}
}

/*
 * Posts @n data DTOs: one rkdapl_post_*() call, or for @n > 1 (batch=) one
 * rkdapl_post_chain() call. Context: process context (interrupts are turned off around the
 * call).
 */
static int client_post(struct perf *p, const struct rkdapl_rmr_triplet *rem, u32 n)
{
	struct rkdapl_lmr_triplet iov = { .lmr = p->buf_lmr, .length = p->a.size };
	struct rkdapl_dto *dtos = p->dtos;
	u32 i0 = p->n.data_posted, k, posted = 0;
	u64 cookie = COOKIE(K_DATA, i0), t0;
	u32 dto_flags = perf_signalled(&p->a, i0) ? 0 : RKDAPL_COMPLETION_SUPPRESS;
	unsigned long flags;
	int ret;

	for (k = 0; n > 1 && k < n; k++) {
		dtos[k] = (struct rkdapl_dto) {
			.op = p->a.op == PERF_OP_WRITE ? RKDAPL_DTO_RDMA_WRITE :
			      p->a.op == PERF_OP_READ ? RKDAPL_DTO_RDMA_READ : RKDAPL_DTO_SEND,
			.flags = perf_signalled(&p->a, i0 + k) ? 0 : RKDAPL_COMPLETION_SUPPRESS,
			.iov = &iov,
			.num_iov = 1,
			.remote = *rem,
			.cookie = COOKIE(K_DATA, i0 + k),
		};
	}
	/* rkdapl_post_*() may be called from any context: timed with interrupts off */
	t0 = perf_post_begin(&p->t, i0, n, &flags);
	if (n > 1) {
		ret = rkdapl_post_chain(p->ep, dtos, n, &posted);
	} else {
		switch (p->a.op) {
		case PERF_OP_WRITE:
			ret = rkdapl_post_rdma_write(p->ep, &iov, 1, rem, cookie, dto_flags);
			break;
		case PERF_OP_READ:
			ret = rkdapl_post_rdma_read(p->ep, &iov, 1, rem, cookie, dto_flags);
			break;
		default:
			ret = rkdapl_post_send(p->ep, &iov, 1, cookie, dto_flags);
			break;
		}
		posted = ret ? 0 : 1;
	}
	perf_post_end(&p->t, i0, n, t0, flags);
	p->n.data_posted += posted;
	if (ret) {
		pr_err("client: posting DTO %u: %d\n", i0 + posted, ret);
		return ret;
	}
	return 0;
}

/* One client session and its result line. Context: process context, may sleep. */
static int client_run(struct perf *p)
{
	struct rkdapl_rmr_triplet rem = {};
	u32 depth = p->a.kind == PERF_LAT ? 1 : p->a.txdepth;
	u32 batch = p->a.kind == PERF_LAT ? 1 : p->a.batch;
	u64 t0, t1;
	int ret;

	p->deadline = jiffies + msecs_to_jiffies(p->a.timeout_ms);
	p->mode = p->a.mode;
	ret = perf_times_alloc(&p->a, &p->t);
	if (ret)
		return ret;
	ret = perf_open(p, 2 * p->a.txdepth + 64, p->a.op == PERF_OP_STOP ? 64 : p->a.size);
	if (ret)
		return ret;
	ret = client_connect(p);
	if (ret)
		return ret;
	ret = perf_post_ctl_recv(p);
	if (ret)
		return ret;
	perf_hello(p->tx, &p->a);
	ret = perf_post_ctl_send(p);
	if (ret)
		return ret;
	if (p->a.op == PERF_OP_STOP) {
		/* the server may go (and flush this SEND) as soon as it has the request */
		ret = perf_wait_for(p, p->n.ctl_sends_done == p->n.ctl_sends, "the stop SEND");
		if (ret == -ECONNRESET)
			ret = 0;
		if (!ret)
			pr_info("client: asked the server to stop\n");
		return ret;
	}
	ret = perf_ctl_recv(p, "the advert");
	if (ret)
		return ret;
	ret = perf_check_advert(p->rx, &p->a, &rem.address, &rem.rkey);
	if (ret)
		return ret;
	rem.length = p->a.size;

	t0 = ktime_get_ns();
	while (p->n.data_done < p->a.iters) {
		while (perf_may_post(&p->a, p->n.data_posted, p->n.data_done, depth, batch)) {
			u32 room = depth - (p->n.data_posted - p->n.data_done);

			ret = client_post(p, &rem, min3(room, p->a.iters - p->n.data_posted, batch));
			if (ret)
				return ret;
		}
		/* for room to post while there is more to post, then for the last completion */
		ret = perf_wait_for(p, p->n.data_posted < p->a.iters ?
				    perf_may_post(&p->a, p->n.data_posted, p->n.data_done, depth,
						  batch) :
				    p->n.data_done == p->a.iters, "completions");
		if (ret)
			return ret;
	}
	t1 = ktime_get_ns();
	perf_report("rkdapl", &p->a, t1 - t0, &p->t);

	ret = CHECK(p, rkdapl_ep_disconnect(p->ep));
	if (ret)
		return ret;
	ret = perf_wait_for(p, p->disconnected, "DISCONNECTED");
	return ret == -ECONNRESET ? 0 : ret;
}

/* ---- control file ------------------------------------------------------------------- */

/*
 * The ctl file: parses one command and runs it in the writing task.
 * Context: process context, sleeps until the command is done.
 * Return: @len, or the command's negative errno.
 */
static ssize_t perf_ctl_write(struct file *file, const char __user *ubuf, size_t len,
			      loff_t *ppos)
{
	struct perf *p;
	int ret;

	p = kzalloc_obj(*p, GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	ret = perf_command(ubuf, len, &p->a);
	/* rkdapl chooses its own completion context and inline use */
	if (!ret && (p->a.cq != PERF_CQ_DEFAULT || p->a.inline_max))
		ret = -EINVAL;
	if (ret) {
		pr_err("bad command (%d); see the header of samples/perf_common.h\n", ret);
		kfree(p);
		return ret;
	}
	switch (p->a.cmd) {
	case PERF_CMD_CEILING:
		ret = perf_ceiling(&p->a);
		kfree(p);
		return ret ?: len;
	case PERF_CMD_SERVER:
		p->who = "server";
		ret = server_run(p);
		break;
	default:
		p->who = "client";
		ret = client_run(p);
		break;
	}
	perf_close(p);
	if (ret)
		pr_err("%s: failed: %d\n", p->who, ret);
	kfree(p);
	return ret ?: len;
}

static int __init rkdapl_perf_init(void)
{
	return perf_debugfs_init("rkdapl_perf");
}

static void __exit rkdapl_perf_exit(void)
{
	perf_debugfs_exit();
}

module_init(rkdapl_perf_init);
module_exit(rkdapl_perf_exit);

MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl perf: RDMA WRITE/READ/SEND bandwidth and latency over the rkdapl API");
