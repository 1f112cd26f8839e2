// SPDX-License-Identifier: GPL-2.0
/*
 * raw_perf: one side of a connection over ib_core and rdma_cm. Its PD, CQ (polled in the
 * context cq= and mode= choose), QP and DMA-mapped buffers; the FRWR that grants the server's
 * buffer; the ib_cqe callbacks and rdma_cm's event handler, which advance the counters
 * raw_wait_for() watches; the control messages.
 */
#include "raw.h"

#include <linux/scatterlist.h>

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

/* Sets a completion counter raw_wait_for() watches to @n and wakes the waiting task. */
static void raw_count(struct raw *r, u32 *counter, u32 n)
{
	WRITE_ONCE(*counter, n);
	wake_up(&r->wq);
}

static void raw_data_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;
	/* with signal=N a completion reports every work request up to the signalled one */
	u32 i = perf_next_signalled(&r->a, r->n.data_done);

	if (raw_wc_ok(r, wc)) {
		r->n.data_ok += i + 1 - r->n.data_done;
		/* an RDMA WRITE's or SEND's wc carries no byte count; a READ's and a RECV's do */
		if ((wc->opcode == IB_WC_RDMA_READ || wc->opcode == IB_WC_RECV) &&
		    wc->byte_len != r->data_len) {
			pr_err("%s: data DTO %u moved %u bytes, not %u\n", r->who, i,
			       wc->byte_len, r->data_len);
			raw_fail(r, -EIO);
		}
	}
	if (r->t.samples)	/* a client's run */
		perf_times_sample(&r->t, &r->a, i, ktime_get_ns());
	raw_count(r, &r->n.data_done, i + 1);
}

static void raw_ctl_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;

	raw_wc_ok(r, wc);
	raw_count(r, &r->n.ctl_sends_done, r->n.ctl_sends_done + 1);
}

static void raw_ctl_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;

	if (raw_wc_ok(r, wc) && wc->byte_len != sizeof(struct perf_msg)) {
		pr_err("%s: control message of %u bytes\n", r->who, wc->byte_len);
		raw_fail(r, -EPROTO);
	}
	raw_count(r, &r->n.ctl_recvs_done, r->n.ctl_recvs_done + 1);
}

static void raw_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct raw *r = cq->cq_context;

	raw_wc_ok(r, wc);
	raw_count(r, &r->n.regs_done, r->n.regs_done + 1);
}

/* What every command's struct raw starts with: its wait queue and the ib_cqe callbacks. */
void raw_init(struct raw *r)
{
	init_waitqueue_head(&r->wq);
	r->data_cqe.done = raw_data_done;
	r->ctl_send_cqe.done = raw_ctl_send_done;
	r->ctl_recv_cqe.done = raw_ctl_recv_done;
	r->reg_cqe.done = raw_reg_done;
}

/*
 * ---- connection events --------------------------------------------------------------
 * rdma_cm's event handler. Context: process context (rdma_cm's workers), may sleep; it runs
 * under the id's handler mutex, so it must not destroy its own id (it returns non-zero
 * instead, for a connection request it does not want).
 */

int raw_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
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

/* The client CQ's polling context: cq=, else direct for mode=poll and softirq for event. */
enum ib_poll_context raw_poll_ctx(const struct perf_args *a)
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
int raw_setup(struct raw *r, struct rdma_cm_id *id, enum ib_poll_context poll_ctx, u32 sq,
	      u32 rq, u32 inline_max)
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
void raw_teardown(struct raw *r)
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
	memset(&r->n, 0, sizeof(r->n));
}

static int raw_post_send(struct raw *r, struct ib_send_wr *wr)
{
	int ret = ib_post_send(r->id->qp, wr, NULL);

	if (ret)
		pr_err("%s: ib_post_send(opcode %d): %d\n", r->who, wr->opcode, ret);
	return ret;
}

int raw_post_recv(struct raw *r, u64 dma, u32 len, struct ib_cqe *cqe)
{
	struct ib_sge sge = { .addr = dma, .length = len, .lkey = r->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_cqe = cqe, .sg_list = &sge, .num_sge = 1 };
	int ret = ib_post_recv(r->id->qp, &wr, NULL);

	if (ret)
		pr_err("%s: ib_post_recv: %d\n", r->who, ret);
	return ret;
}

int raw_ctl_send(struct raw *r)
{
	struct ib_sge sge = { .addr = r->tx_dma, .length = sizeof(*r->tx),
			      .lkey = r->pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_cqe = &r->ctl_send_cqe, .sg_list = &sge, .num_sge = 1,
				 .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	int ret;

	r->tx->magic = cpu_to_le32(PERF_MAGIC);
	ret = raw_post_send(r, &wr);
	if (!ret)
		r->n.ctl_sends++;
	return ret;
}

int raw_ctl_post_recv(struct raw *r)
{
	int ret = raw_post_recv(r, r->rx_dma, PERF_MSG_BYTES, &r->ctl_recv_cqe);

	if (!ret)
		r->n.ctl_recvs++;
	return ret;
}

int raw_ctl_recv(struct raw *r, const char *what)
{
	int ret = raw_wait_for(r, READ_ONCE(r->n.ctl_recvs_done) == r->n.ctl_recvs &&
			       READ_ONCE(r->n.ctl_sends_done) == r->n.ctl_sends, what);

	if (!ret && le32_to_cpu(r->rx->magic) != PERF_MAGIC) {
		pr_err("%s: %s: bad magic\n", r->who, what);
		ret = -EPROTO;
	}
	return ret;
}

/* ---- the server's grant ------------------------------------------------------------- */

/*
 * Registers the whole buffer with a fresh rkey for remote read and write (FRWR) and waits
 * for the registration to complete. Context: process context, may sleep.
 */
int raw_register(struct raw *r)
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
	r->n.regs++;
	return raw_wait_for(r, READ_ONCE(r->n.regs_done) == r->n.regs, "the registration");
}
