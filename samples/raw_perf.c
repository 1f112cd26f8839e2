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
 */
#define pr_fmt(fmt) "raw_perf: " fmt

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "perf_common.h"

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
	u32 ctl_sends, ctl_sends_done, ctl_recvs, ctl_recvs_done, regs, regs_done;
	u32 data_posted, data_done, data_ok;
	u32 data_len;			/* expected bytes of each data completion */
	u64 *post_ns, *samples;
	u64 *post_cost;			/* client: time inside each ib_post_send() */
	u32 nsamples;			/* client: entries in samples (signalled DTOs) */
	struct ib_cqe data_cqe, ctl_send_cqe, ctl_recv_cqe, reg_cqe;
	struct ib_rdma_wr wrs[PERF_MAX_BATCH];	/* client: the list of one post call */
};

static void raw_fail(struct raw *r, int err)
{
	if (!READ_ONCE(r->err))
		WRITE_ONCE(r->err, err);
	wake_up(&r->wq);
}

/*
 * ---- completions --------------------------------------------------------------------
 * The ib_cqe callbacks. Context: softirq (IB_POLL_SOFTIRQ, event mode) or the polling task
 * inside ib_process_cq_direct() (IB_POLL_DIRECT, poll mode); they do not sleep.
 */

static bool raw_wc_ok(struct raw *r, struct ib_wc *wc)
{
	if (wc->status == IB_WC_SUCCESS)
		return true;
	if (wc->status != IB_WC_WR_FLUSH_ERR || !READ_ONCE(r->disconnected)) {
		pr_err("%s: work completion %s (opcode %d)\n", r->who,
		       ib_wc_status_msg(wc->status), wc->opcode);
		raw_fail(r, wc->status == IB_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO);
	}
	return false;
}

static void raw_data_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;
	/* with signal=N a completion reports every work request up to the signalled one */
	u32 i = perf_next_signalled(&r->a, r->data_done);

	if (raw_wc_ok(r, wc)) {
		r->data_ok += i + 1 - r->data_done;
		/* an RDMA WRITE's or SEND's wc carries no byte count; a READ's and a RECV's do */
		if ((wc->opcode == IB_WC_RDMA_READ || wc->opcode == IB_WC_RECV) &&
		    wc->byte_len != r->data_len) {
			pr_err("%s: data DTO %u moved %u bytes, not %u\n", r->who, i,
			       wc->byte_len, r->data_len);
			raw_fail(r, -EIO);
		}
	}
	if (r->samples && i < r->a.iters && r->nsamples < r->a.iters)
		r->samples[r->nsamples++] = ktime_get_ns() - r->post_ns[i];
	WRITE_ONCE(r->data_done, i + 1);
	wake_up(&r->wq);
}

static void raw_ctl_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;

	raw_wc_ok(r, wc);
	WRITE_ONCE(r->ctl_sends_done, r->ctl_sends_done + 1);
	wake_up(&r->wq);
}

static void raw_ctl_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;

	if (raw_wc_ok(r, wc) && wc->byte_len != sizeof(struct perf_msg)) {
		pr_err("%s: control message of %u bytes\n", r->who, wc->byte_len);
		raw_fail(r, -EPROTO);
	}
	WRITE_ONCE(r->ctl_recvs_done, r->ctl_recvs_done + 1);
	wake_up(&r->wq);
}

static void raw_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;

	raw_wc_ok(r, wc);
	WRITE_ONCE(r->regs_done, r->regs_done + 1);
	wake_up(&r->wq);
}

/*
 * ---- connection events --------------------------------------------------------------
 * rdma_cm's event handler. Context: process context (rdma_cm's workers), may sleep; it runs
 * under the id's handler mutex, so it must not destroy its own id (it returns non-zero
 * instead, for a connection request it does not want).
 */

static int raw_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct raw *r = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		WRITE_ONCE(r->addr_ok, true);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		WRITE_ONCE(r->route_ok, true);
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (READ_ONCE(r->pending) || r->id)
			return -EBUSY;	/* rdma_cm rejects it and destroys the new id */
		r->req_rd_in = ev->param.conn.responder_resources;
		r->req_rd_out = ev->param.conn.initiator_depth;
		WRITE_ONCE(r->pending, id);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (id == r->id)
			WRITE_ONCE(r->established, true);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (id == r->id)
			WRITE_ONCE(r->disconnected, true);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (id == r->id) {
			r->cm_event = ev->event;
			WRITE_ONCE(r->conn_failed, true);
		}
		break;
	default:
		break;
	}
	wake_up(&r->wq);
	return 0;
}

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

/* ---- resources ---------------------------------------------------------------------- */

static int raw_map(struct raw *r, void *p, u32 len, u64 *dma)
{
	*dma = ib_dma_map_single(r->dev, p, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(r->dev, *dma)) {
		*dma = 0;
		return -EIO;
	}
	return 0;
}

/* PD, CQ, QP on @id, the buffers and their DMA mappings. Context: may sleep. */
/* The client CQ's polling context: cq=, else direct for mode=poll and softirq for event. */
static enum ib_poll_context raw_poll_ctx(const struct perf_args *a)
{
	switch (a->cq) {
	case PERF_CQ_DIRECT:
		return IB_POLL_DIRECT;
	case PERF_CQ_SOFTIRQ:
		return IB_POLL_SOFTIRQ;
	case PERF_CQ_WQ:
		return IB_POLL_WORKQUEUE;
	case PERF_CQ_UNBOUND:
		return IB_POLL_UNBOUND_WORKQUEUE;
	default:
		return a->mode == PERF_POLL ? IB_POLL_DIRECT : IB_POLL_SOFTIRQ;
	}
}

/*
 * Allocates the PD, the CQ (polled in @poll_ctx), the QP and the buffers of a connection.
 * @inline_max: the QP's max_inline_data (0: none).
 */
static int raw_setup(struct raw *r, struct rdma_cm_id *id, enum ib_poll_context poll_ctx,
		     u32 sq, u32 rq, u32 inline_max)
{
	struct ib_qp_init_attr qp = {};
	int ret;

	r->dev = id->device;
	r->pd = ib_alloc_pd(r->dev, 0);
	if (IS_ERR(r->pd)) {
		ret = PTR_ERR(r->pd);
		r->pd = NULL;
		return ret;
	}
	r->cq = ib_alloc_cq(r->dev, r, sq + rq + 2, 0, poll_ctx);
	if (IS_ERR(r->cq)) {
		ret = PTR_ERR(r->cq);
		r->cq = NULL;
		return ret;
	}
	r->direct = poll_ctx == IB_POLL_DIRECT;
	r->spin = r->direct || (r->a.cmd == PERF_CMD_CLIENT && r->a.mode == PERF_POLL);
	qp.qp_context = r;
	qp.send_cq = r->cq;
	qp.recv_cq = r->cq;
	qp.cap.max_send_wr = sq + 1;		/* + ib_drain_qp()'s marker */
	qp.cap.max_recv_wr = rq + 1;
	qp.cap.max_send_sge = 1;
	qp.cap.max_recv_sge = 1;
	qp.cap.max_inline_data = inline_max;
	qp.sq_sig_type = IB_SIGNAL_REQ_WR;	/* signal=N leaves the others unsignalled */
	qp.qp_type = IB_QPT_RC;
	ret = rdma_create_qp(id, r->pd, &qp);
	if (ret)
		return ret;
	r->have_qp = true;
	r->inline_max = qp.cap.max_inline_data;
	r->tx = kzalloc(PERF_MSG_BYTES, GFP_KERNEL);
	r->rx = kzalloc(PERF_MSG_BYTES, GFP_KERNEL);
	r->buf = kzalloc(r->buf_len, GFP_KERNEL | __GFP_NOWARN);
	if (!r->tx || !r->rx || !r->buf)
		return -ENOMEM;
	ret = raw_map(r, r->tx, PERF_MSG_BYTES, &r->tx_dma);
	if (!ret)
		ret = raw_map(r, r->rx, PERF_MSG_BYTES, &r->rx_dma);
	if (!ret)
		ret = raw_map(r, r->buf, r->buf_len, &r->buf_dma);
	return ret;
}

/*
 * Undoes raw_setup() and destroys the connection's id; every WR is back first
 * (ib_drain_qp()). Context: process context, sleeps.
 */
static void raw_teardown(struct raw *r)
{
	if (r->have_qp) {
		ib_drain_qp(r->id->qp);
		rdma_destroy_qp(r->id);
		r->have_qp = false;
	}
	if (r->mr) {
		ib_dereg_mr(r->mr);
		r->mr = NULL;
	}
	if (r->cq) {
		ib_free_cq(r->cq);
		r->cq = NULL;
	}
	if (r->buf_dma)
		ib_dma_unmap_single(r->dev, r->buf_dma, r->buf_len, DMA_BIDIRECTIONAL);
	if (r->rx_dma)
		ib_dma_unmap_single(r->dev, r->rx_dma, PERF_MSG_BYTES, DMA_BIDIRECTIONAL);
	if (r->tx_dma)
		ib_dma_unmap_single(r->dev, r->tx_dma, PERF_MSG_BYTES, DMA_BIDIRECTIONAL);
	r->buf_dma = 0;
	r->rx_dma = 0;
	r->tx_dma = 0;
	kfree(r->buf);
	kfree(r->rx);
	kfree(r->tx);
	r->buf = NULL;
	r->rx = NULL;
	r->tx = NULL;
	if (r->pd) {
		ib_dealloc_pd(r->pd);
		r->pd = NULL;
	}
	if (r->id) {
		rdma_destroy_id(r->id);
		r->id = NULL;
	}
	r->direct = false;
	r->spin = false;
	r->inline_max = 0;
	r->addr_ok = false;
	r->route_ok = false;
	r->established = false;
	r->disconnected = false;
	r->conn_failed = false;
	r->err = 0;
	r->ctl_sends = 0;
	r->ctl_sends_done = 0;
	r->ctl_recvs = 0;
	r->ctl_recvs_done = 0;
	r->regs = 0;
	r->regs_done = 0;
	r->data_posted = 0;
	r->data_done = 0;
	r->data_ok = 0;
}

static int raw_post_send(struct raw *r, struct ib_send_wr *wr)
{
	int ret = ib_post_send(r->id->qp, wr, NULL);

	if (ret)
		pr_err("%s: ib_post_send(opcode %d): %d\n", r->who, wr->opcode, ret);
	return ret;
}

static int raw_post_recv(struct raw *r, u64 dma, u32 len, struct ib_cqe *cqe)
{
	struct ib_sge sge = { .addr = dma, .length = len, .lkey = r->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_cqe = cqe, .sg_list = &sge, .num_sge = 1 };
	int ret = ib_post_recv(r->id->qp, &wr, NULL);

	if (ret)
		pr_err("%s: ib_post_recv: %d\n", r->who, ret);
	return ret;
}

static int raw_ctl_send(struct raw *r)
{
	struct ib_sge sge = { .addr = r->tx_dma, .length = sizeof(*r->tx),
			      .lkey = r->pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_cqe = &r->ctl_send_cqe, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	int ret;

	r->tx->magic = cpu_to_le32(PERF_MAGIC);
	ret = raw_post_send(r, &wr);
	if (!ret)
		r->ctl_sends++;
	return ret;
}

static int raw_ctl_post_recv(struct raw *r)
{
	int ret = raw_post_recv(r, r->rx_dma, PERF_MSG_BYTES, &r->ctl_recv_cqe);

	if (!ret)
		r->ctl_recvs++;
	return ret;
}

static int raw_ctl_recv(struct raw *r, const char *what)
{
	int ret = raw_wait_for(r, READ_ONCE(r->ctl_recvs_done) == r->ctl_recvs &&
			       READ_ONCE(r->ctl_sends_done) == r->ctl_sends, what);

	if (!ret && le32_to_cpu(r->rx->magic) != PERF_MAGIC) {
		pr_err("%s: %s: bad magic\n", r->who, what);
		ret = -EPROTO;
	}
	return ret;
}

/* ---- server ------------------------------------------------------------------------- */

/*
 * Registers the whole buffer with a fresh rkey for remote read and write (FRWR) and waits
 * for the registration to complete. Context: process context, may sleep.
 */
static int raw_register(struct raw *r)
{
	struct ib_reg_wr wr = {};
	struct scatterlist sg;
	int n;

	r->mr = ib_alloc_mr(r->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(r->mr)) {
		n = PTR_ERR(r->mr);
		r->mr = NULL;
		return n;
	}
	sg_init_table(&sg, 1);
	sg_dma_address(&sg) = r->buf_dma;
	sg_dma_len(&sg) = r->buf_len;
	/* kmalloc's large buffers are naturally aligned: one MR page covers the buffer */
	n = ib_map_mr_sg(r->mr, &sg, 1, NULL, PAGE_SIZE << get_order(r->buf_len));
	if (n != 1) {
		pr_err("server: ib_map_mr_sg: %d\n", n);
		return n < 0 ? n : -EINVAL;
	}
	ib_update_fast_reg_key(r->mr, ib_inc_rkey(r->mr->rkey));
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_cqe = &r->reg_cqe;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = r->mr;
	wr.key = r->mr->rkey;
	wr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE;
	n = raw_post_send(r, &wr.wr);
	if (n)
		return n;
	r->regs++;
	return raw_wait_for(r, READ_ONCE(r->regs_done) == r->regs, "the registration");
}

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
	while (op == PERF_OP_SEND && r->data_posted < min(iters, PERF_RECV_DEPTH)) {
		ret = raw_post_recv(r, r->buf_dma, size, &r->data_cqe);
		if (ret)
			return ret;
		r->data_posted++;
	}
	perf_advert(r->tx, r->mr->iova, r->mr->rkey, r->buf_len);
	ret = raw_ctl_send(r);
	if (ret)
		return ret;
	for (;;) {
		u32 done = READ_ONCE(r->data_done);

		while (op == PERF_OP_SEND && r->data_posted < iters &&
		       r->data_posted - done < PERF_RECV_DEPTH) {
			ret = raw_post_recv(r, r->buf_dma, size, &r->data_cqe);
			if (ret)
				return ret;
			r->data_posted++;
		}
		r->deadline = jiffies + msecs_to_jiffies(r->a.timeout_ms);
		ret = raw_wait_for(r, READ_ONCE(r->data_done) != done ||
				   (op == PERF_OP_SEND && r->data_posted < iters &&
				    r->data_posted - READ_ONCE(r->data_done) < PERF_RECV_DEPTH),
				   "the client");
		if (ret == -ECONNRESET && !READ_ONCE(r->err))
			break;
		if (ret)
			return ret;
	}
	/* RECV completions and DISCONNECTED come by different paths: let the CQ catch up */
	ib_drain_qp(r->id->qp);
	if (op == PERF_OP_SEND && READ_ONCE(r->data_ok) != iters) {
		pr_err("server: %u of %u SENDs arrived\n", r->data_ok, iters);
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
	u32 i0 = r->data_posted, k;
	unsigned long flags;
	u64 t0, cost;
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
	local_irq_save(flags);
	t0 = ktime_get_ns();
	for (k = 0; k < n; k++)
		r->post_ns[i0 + k] = t0;
	ret = ib_post_send(r->id->qp, &wrs[0].wr, &bad);
	cost = div_u64(ktime_get_ns() - t0, n);
	local_irq_restore(flags);
	for (k = 0; k < n; k++)
		r->post_cost[i0 + k] = cost;
	if (ret) {
		pr_err("%s: ib_post_send(opcode %d): %d\n", r->who, wrs[0].wr.opcode, ret);
		return ret;
	}
	r->data_posted += n;
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
	ret = perf_alloc_times(&r->a, &r->post_ns, &r->samples, &r->post_cost);
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
		ret = raw_wait_for(r, READ_ONCE(r->ctl_sends_done) == r->ctl_sends,
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
	while (READ_ONCE(r->data_done) < r->a.iters) {
		while (perf_may_post(&r->a, r->data_posted, READ_ONCE(r->data_done), depth,
				     batch)) {
			u32 room = depth - (r->data_posted - READ_ONCE(r->data_done));

			ret = client_post(r, raddr, rkey,
					  min3(room, r->a.iters - r->data_posted, batch));
			if (ret)
				return ret;
		}
		/* for a free slot while there is more to post, then for the last completion */
		ret = raw_wait_for(r, r->data_posted < r->a.iters ?
				   perf_may_post(&r->a, r->data_posted, READ_ONCE(r->data_done),
						 depth, batch) :
				   READ_ONCE(r->data_done) == r->a.iters, "completions");
		if (ret)
			return ret;
	}
	t1 = ktime_get_ns();
	perf_report("raw", &r->a, t1 - t0, r->samples, r->nsamples, r->post_cost);
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
	init_waitqueue_head(&r->wq);
	r->data_cqe.done = raw_data_done;
	r->ctl_send_cqe.done = raw_ctl_send_done;
	r->ctl_recv_cqe.done = raw_ctl_recv_done;
	r->reg_cqe.done = raw_reg_done;
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
	perf_free_times(r->post_ns, r->samples, r->post_cost);
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
