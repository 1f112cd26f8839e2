// SPDX-License-Identifier: GPL-2.0
/*
 * raw_perf: the "raw verbs" baseline of rkdapl_perf. The same control file, wire protocol,
 * tests and result line (tool=raw), written directly against ib_core and rdma_cm, with no
 * rkdapl in between: rdma_create_id/resolve_addr/resolve_route/connect, ib_alloc_pd,
 * ib_alloc_cq, rdma_create_qp, ib_dma_map_single with the PD's local_dma_lkey, and an FRWR
 * (ib_alloc_mr + ib_map_mr_sg + IB_WR_REG_MR) for the server's rkey. Kept as small as the job
 * allows; it is a measuring stick, not a library.
 *
 *   insmod raw_perf.ko
 *   A# echo "server port=7710" > /sys/kernel/debug/raw_perf/ctl         (blocks)
 *   B# echo "client addr=10.77.0.1 port=7710 op=read kind=lat size=64 iters=200 mode=poll" \
 *          > /sys/kernel/debug/raw_perf/ctl
 *   B# cat /sys/kernel/debug/raw_perf/result
 *
 * Commands, keys, the result line and the wire protocol: samples/perf_common.h (the two tools
 * interoperate). mode=poll: an IB_POLL_DIRECT CQ drained with ib_process_cq_direct() in a
 * spin loop; mode=event: an IB_POLL_SOFTIRQ CQ whose completion callbacks wake the waiting
 * task. Servers always wait for events (IB_POLL_SOFTIRQ), like rkdapl_perf's. Like RC
 * itself, completions of one queue arrive in posting order, so the Nth completion is the
 * Nth DTO.
 *
 * This file is the tool: the server's sessions, the client's runs and the ctl file. What one
 * side does with the verbs (resources, completions, CM events, posts) is in verbs.c.
 */
#include "raw.h"

#include <linux/delay.h>
#include <linux/module.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>

#include "../perf_ctl.h"

/* ---- server ------------------------------------------------------------------------- */

static int server_session(struct raw *r, bool *stop)
{
	struct rdma_conn_param param = {};
	u32 op, size, iters;
	int ret;

	r->id = r->pending;
	WRITE_ONCE(r->pending, NULL);
	r->deadline = jiffies + msecs_to_jiffies(r->a.timeout_ms);
	ret = raw_setup(r, r->id, IB_POLL_SOFTIRQ, 8, PERF_RECV_DEPTH + 1, 0);
	if (ret) {
		rdma_reject(r->id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return ret;
	}
	ret = raw_ctl_post_recv(r);
	if (ret)
		return ret;
	param.responder_resources = min_t(u32, r->req_rd_out, r->dev->attrs.max_qp_rd_atom);
	param.initiator_depth = min_t(u32, r->req_rd_in, r->dev->attrs.max_qp_init_rd_atom);
	param.retry_count = 6;
	param.rnr_retry_count = 7;
	/* outside the event handler, rdma_accept() wants the id's handler mutex held */
	rdma_lock_handler(r->id);
	ret = rdma_accept(r->id, &param);
	rdma_unlock_handler(r->id);
	if (ret) {
		pr_err("server: rdma_accept: %d\n", ret);
		return ret;
	}
	ret = raw_wait_for(r, READ_ONCE(r->established), "ESTABLISHED");
	if (!ret)
		ret = raw_ctl_recv(r, "the hello");
	if (ret)
		return ret;
	ret = perf_check_hello(r->rx, r->buf_len, &op, &size, &iters);
	if (ret) {
		*stop = ret == 1;
		return ret == 1 ? 0 : ret;
	}
	r->data_len = size;
	ret = raw_register(r);
	if (ret)
		return ret;
	while (op == PERF_OP_SEND && r->n.data_posted < min(iters, PERF_RECV_DEPTH)) {
		ret = raw_post_recv(r, r->buf_dma, size, &r->data_cqe);
		if (ret)
			return ret;
		r->n.data_posted++;
	}
	perf_advert(r->tx, r->mr->iova, r->mr->rkey, r->buf_len);
	ret = raw_ctl_send(r);
	if (ret)
		return ret;
	for (;;) {
		u32 done = READ_ONCE(r->n.data_done);

		while (op == PERF_OP_SEND && r->n.data_posted < iters &&
		       r->n.data_posted - done < PERF_RECV_DEPTH) {
			ret = raw_post_recv(r, r->buf_dma, size, &r->data_cqe);
			if (ret)
				return ret;
			r->n.data_posted++;
		}
		r->deadline = jiffies + msecs_to_jiffies(r->a.timeout_ms);
		ret = raw_wait_for(r, READ_ONCE(r->n.data_done) != done ||
				   (op == PERF_OP_SEND && r->n.data_posted < iters &&
				    r->n.data_posted - READ_ONCE(r->n.data_done) < PERF_RECV_DEPTH),
				   "the client");
		if (ret == -ECONNRESET && !READ_ONCE(r->err))
			break;
		if (ret)
			return ret;
	}
	/* RECV completions and DISCONNECTED come by different paths: let the CQ catch up */
	ib_drain_qp(r->id->qp);
	if (op == PERF_OP_SEND && READ_ONCE(r->n.data_ok) != iters) {
		pr_err("server: %u of %u SENDs arrived\n", r->n.data_ok, iters);
		return -EIO;
	}
	pr_info("server: served op=%s size=%u iters=%u\n", PERF_NAME(perf_op_names, op), size,
		iters);
	return 0;
}

/*
 * Listens and serves sessions until r->a.sessions are done, a client sends op=stop or the
 * writer gets a signal. Context: process context, sleeps for as long as it serves.
 */
static int server_run(struct raw *r)
{
	struct sockaddr_in sin = r->a.sin;
	bool stop = false;
	u32 served = 0;
	int ret;

	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	r->buf_len = r->a.size;
	r->listen_id = rdma_create_id(&init_net, raw_cm_handler, r, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(r->listen_id)) {
		ret = PTR_ERR(r->listen_id);
		r->listen_id = NULL;
		return ret;
	}
	ret = rdma_bind_addr(r->listen_id, (struct sockaddr *)&sin);
	if (!ret)
		ret = rdma_listen(r->listen_id, 4);
	if (ret) {
		pr_err("server: bind/listen on port %u: %d\n", ntohs(sin.sin_port), ret);
		return ret;
	}
	pr_info("server: listening on port %u, buffer %u bytes\n", ntohs(sin.sin_port),
		r->buf_len);
	while (!stop && (!r->a.sessions || served < r->a.sessions)) {
		ret = wait_event_interruptible(r->wq, READ_ONCE(r->pending));
		if (ret) {
			pr_info("server: interrupted after %u sessions\n", served);
			return 0;
		}
		ret = server_session(r, &stop);
		if (r->id && !READ_ONCE(r->disconnected) && r->have_qp)
			rdma_disconnect(r->id);
		raw_teardown(r);
		if (ret)
			pr_err("server: session %u failed: %d\n", served + 1, ret);
		served++;
		if (ret == -ENOMEM)
			return ret;
	}
	pr_info("server: done after %u sessions\n", served);
	return 0;
}

/* ---- client ------------------------------------------------------------------------- */

static int client_connect(struct raw *r)
{
	struct rdma_conn_param param = {};
	u32 attempt;
	int ret;

	for (attempt = 1;; attempt++) {
		r->id = rdma_create_id(&init_net, raw_cm_handler, r, RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(r->id)) {
			ret = PTR_ERR(r->id);
			r->id = NULL;
			return ret;
		}
		ret = rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&r->a.sin, 5000);
		if (!ret)
			ret = raw_wait_for(r, r->addr_ok || r->conn_failed, "address resolution");
		if (!ret && r->addr_ok)
			ret = rdma_resolve_route(r->id, 5000);
		if (!ret && r->addr_ok)
			ret = raw_wait_for(r, r->route_ok || r->conn_failed, "route resolution");
		if (!ret && r->route_ok) {
			if (strcmp(dev_name(&r->id->device->dev), r->a.dev))
				pr_warn("client: the route is on %s, not dev=%s\n",
					dev_name(&r->id->device->dev), r->a.dev);
			ret = raw_setup(r, r->id, raw_poll_ctx(&r->a), r->a.txdepth + 4, 2,
					r->a.inline_max);
			if (!ret)
				ret = raw_ctl_post_recv(r);
			param.responder_resources = min_t(u32, 16, r->dev->attrs.max_qp_rd_atom);
			param.initiator_depth = min_t(u32, 16, r->dev->attrs.max_qp_init_rd_atom);
			param.retry_count = 6;
			param.rnr_retry_count = 7;
			if (!ret)
				ret = rdma_connect(r->id, &param);
			if (!ret)
				ret = raw_wait_for(r, r->established || r->conn_failed,
						   "the connection");
		}
		if (ret)
			return ret;
		if (r->established)
			return 0;
		if (r->cm_event != RDMA_CM_EVENT_REJECTED &&
		    r->cm_event != RDMA_CM_EVENT_UNREACHABLE) {
			pr_err("client: connect to %pI4:%u: %s\n", &r->a.sin.sin_addr,
			       ntohs(r->a.sin.sin_port), rdma_event_msg(r->cm_event));
			return -ECONNREFUSED;
		}
		raw_teardown(r);
		if (!perf_ms_left(r->deadline) || attempt >= 20)
			return -ETIMEDOUT;
		msleep(500);
	}
}

/*
 * Posts @n data DTOs (1..batch) as one list of work requests in one ib_post_send() call.
 * Context: process context (interrupts are turned off around the call).
 */
static int client_post(struct raw *r, u64 raddr, u32 rkey, u32 n)
{
	struct ib_sge sge = { .addr = r->buf_dma, .length = r->a.size,
			      .lkey = r->pd->local_dma_lkey };
	struct ib_rdma_wr *wrs = r->wrs;
	const struct ib_send_wr *bad = NULL;
	u32 i0 = r->n.data_posted, k;
	unsigned long flags;
	u64 t0;
	int ret;

	for (k = 0; k < n; k++) {
		struct ib_rdma_wr *wr = &wrs[k];

		memset(wr, 0, sizeof(*wr));
		wr->wr.wr_cqe = &r->data_cqe;
		wr->wr.sg_list = &sge;
		wr->wr.num_sge = 1;
		wr->wr.next = k + 1 < n ? &wrs[k + 1].wr : NULL;
		wr->remote_addr = raddr;
		wr->rkey = rkey;
		wr->wr.send_flags = perf_signalled(&r->a, i0 + k) ? IB_SEND_SIGNALED : 0;
		wr->wr.opcode = r->a.op == PERF_OP_WRITE ? IB_WR_RDMA_WRITE :
				r->a.op == PERF_OP_READ ? IB_WR_RDMA_READ : IB_WR_SEND;
		if (r->a.op != PERF_OP_READ && r->a.size <= r->inline_max)
			wr->wr.send_flags |= IB_SEND_INLINE;
	}
	/* as in rkdapl_perf: post_ns is the call's own CPU time (interrupts off) */
	t0 = perf_post_begin(&r->t, i0, n, &flags);
	ret = ib_post_send(r->id->qp, &wrs[0].wr, &bad);
	perf_post_end(&r->t, i0, n, t0, flags);
	if (ret) {
		pr_err("%s: ib_post_send(opcode %d): %d\n", r->who, wrs[0].wr.opcode, ret);
		return ret;
	}
	r->n.data_posted += n;
	return 0;
}

/* One client session and its result line. Context: process context, may sleep. */
static int client_run(struct raw *r)
{
	u32 depth = r->a.kind == PERF_LAT ? 1 : r->a.txdepth, rkey;
	u32 batch = r->a.kind == PERF_LAT ? 1 : r->a.batch;
	u64 t0, t1, raddr;
	int ret;

	r->deadline = jiffies + msecs_to_jiffies(r->a.timeout_ms);
	r->buf_len = r->a.op == PERF_OP_STOP ? 64 : r->a.size;
	r->data_len = r->a.size;
	ret = perf_times_alloc(&r->a, &r->t);
	if (ret)
		return ret;
	ret = client_connect(r);
	if (ret)
		return ret;
	perf_hello(r->tx, &r->a);
	ret = raw_ctl_send(r);
	if (ret)
		return ret;
	if (r->a.op == PERF_OP_STOP) {
		/* the server may go (and flush this SEND) as soon as it has the request */
		ret = raw_wait_for(r, READ_ONCE(r->n.ctl_sends_done) == r->n.ctl_sends,
				   "the stop SEND");
		return ret == -ECONNRESET ? 0 : ret;
	}
	ret = raw_ctl_recv(r, "the advert");
	if (ret)
		return ret;
	ret = perf_check_advert(r->rx, &r->a, &raddr, &rkey);
	if (ret)
		return ret;

	t0 = ktime_get_ns();
	while (READ_ONCE(r->n.data_done) < r->a.iters) {
		while (perf_may_post(&r->a, r->n.data_posted, READ_ONCE(r->n.data_done), depth,
				     batch)) {
			u32 room = depth - (r->n.data_posted - READ_ONCE(r->n.data_done));

			ret = client_post(r, raddr, rkey,
					  min3(room, r->a.iters - r->n.data_posted, batch));
			if (ret)
				return ret;
		}
		/* for a free slot while there is more to post, then for the last completion */
		ret = raw_wait_for(r, r->n.data_posted < r->a.iters ?
				   perf_may_post(&r->a, r->n.data_posted, READ_ONCE(r->n.data_done),
						 depth, batch) :
				   READ_ONCE(r->n.data_done) == r->a.iters, "completions");
		if (ret)
			return ret;
	}
	t1 = ktime_get_ns();
	perf_report("raw", &r->a, t1 - t0, &r->t);
	ret = rdma_disconnect(r->id);
	if (!ret)
		ret = raw_wait_for(r, READ_ONCE(r->disconnected), "DISCONNECTED");
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
	struct raw *r;
	int ret;

	r = kzalloc_obj(*r, GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	ret = perf_command(ubuf, len, &r->a);
	if (ret)
		pr_err("bad command (%d); see the header of samples/perf_common.h\n", ret);
	/* a direct CQ is drained by the waiting task: it must spin */
	if (!ret && ((r->a.cq == PERF_CQ_DIRECT && r->a.mode != PERF_POLL) || r->a.sparse))
		ret = -EINVAL;
	if (ret) {
		kfree(r);
		return ret;
	}
	raw_init(r);
	switch (r->a.cmd) {
	case PERF_CMD_CEILING:
		ret = perf_ceiling(&r->a);
		break;
	case PERF_CMD_SERVER:
		r->who = "server";
		ret = server_run(r);
		if (r->pending)
			rdma_destroy_id(r->pending);
		if (r->listen_id)
			rdma_destroy_id(r->listen_id);
		break;
	default:
		r->who = "client";
		ret = client_run(r);
		break;
	}
	raw_teardown(r);
	perf_times_free(&r->t);
	if (ret)
		pr_err("%s: failed: %d\n", r->who ?: "ceiling", ret);
	kfree(r);
	return ret ?: len;
}

static int __init raw_perf_init(void)
{
	return perf_debugfs_init("raw_perf");
}

static void __exit raw_perf_exit(void)
{
	perf_debugfs_exit();
}

module_init(raw_perf_init);
module_exit(raw_perf_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("raw verbs perf: the rkdapl_perf tests directly on ib_core + rdma_cm");
