// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_perf: one side of a connection over rkdapl. Its IA, PZ and EVD, its control and data
 * buffers (kmalloc'd, or buf=sparse pages) and the session's EP and RMR; its events, taken by
 * spinning on rkdapl_evd_dequeue() or sleeping in rkdapl_evd_wait(); the control messages.
 */
#include "perf.h"

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

static void perf_fail(struct perf *p, int err)
{
	if (!p->err)
		p->err = err;
}

/* Expected bytes of a data DTO completion. */
static u64 perf_data_len(const struct perf *p)
{
	return p->a.size;
}

static void perf_dto_event(struct perf *p, const struct rkdapl_event *ev, u64 now)
{
	u32 kind = COOKIE_KIND(ev->cookie), idx = COOKIE_IDX(ev->cookie);

	if (ev->ep != p->ep) {
		/* a flushed DTO of a session's EP that is gone */
		return;
	}
	if (ev->status == RKDAPL_DTO_FLUSHED && p->disconnected) {
		/* the peer went first: what was still posted comes back flushed */
	} else if (ev->status != RKDAPL_DTO_SUCCESS) {
		pr_err("%s: DTO op %u cookie %#llx completed with status %d\n", p->who, ev->op,
		       ev->cookie, ev->status);
		perf_fail(p, ev->status == RKDAPL_DTO_FLUSHED ? -ECONNRESET : -EIO);
	}
	switch (kind) {
	case K_DATA:
		/* with signal=N one event completes every DTO up to its own */
		if (!ev->status)
			p->n.data_ok += idx + 1 - min(p->n.data_done, idx);
		p->n.data_done = max(p->n.data_done, idx + 1);
		if (!ev->status && ev->transferred_length != perf_data_len(p)) {
			pr_err("%s: data DTO %u moved %llu bytes, not %llu\n", p->who, idx,
			       ev->transferred_length, perf_data_len(p));
			perf_fail(p, -EIO);
		}
		perf_times_sample(&p->t, &p->a, idx, now);
		break;
	case K_CTL_SEND:
		p->n.ctl_sends_done++;
		break;
	case K_CTL_RECV:
		p->n.ctl_recvs_done++;
		if (!ev->status && ev->transferred_length != sizeof(struct perf_msg)) {
			pr_err("%s: control message of %llu bytes\n", p->who,
			       ev->transferred_length);
			perf_fail(p, -EPROTO);
		}
		break;
	case K_BIND:
		p->n.regs_done++;
		break;
	default:
		pr_err("%s: completion with unknown cookie %#llx\n", p->who, ev->cookie);
		perf_fail(p, -EPROTO);
	}
}

void perf_event(struct perf *p, const struct rkdapl_event *ev, u64 now)
{
	switch (ev->type) {
	case RKDAPL_DTO_COMPLETION_EVENT:
	case RKDAPL_RMR_BIND_COMPLETION_EVENT:
		perf_dto_event(p, ev, now);
		return;
	case RKDAPL_CONNECTION_REQUEST_EVENT:
		if (p->want_cr && !p->cr)
			p->cr = ev->cr;
		else
			CHECK(p, rkdapl_cr_reject(ev->cr, NULL, 0));
		return;
	case RKDAPL_ASYNC_EVD_OVERFLOW:
		pr_err("%s: EVD overflow, %llu events lost\n", p->who, ev->transferred_length);
		perf_fail(p, -EOVERFLOW);
		return;
	case RKDAPL_ASYNC_IA_CATASTROPHIC:
		perf_fail(p, -EIO);
		return;
	default:
		break;
	}
	if (!ev->ep || ev->ep != p->ep)
		return;		/* an earlier session's EP */
	switch (ev->type) {
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
		p->established = true;
		break;
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
		p->disconnected = true;
		break;
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		p->disconnected = true;
		perf_fail(p, -ECONNRESET);
		break;
	default:
		p->conn_failed = true;
		p->conn_fail_type = ev->type;
		break;
	}
}

/*
 * Takes one event (spinning on rkdapl_evd_dequeue() or sleeping in rkdapl_evd_wait(), by
 * p->mode) and handles it. Context: process context, may sleep.
 */
int perf_step(struct perf *p)
{
	struct rkdapl_event ev;
	u32 spins = 0;
	int ret;

	if (p->mode == PERF_POLL) {
		while ((ret = rkdapl_evd_dequeue(p->evd, &ev)) == -EAGAIN) {
			ret = perf_spin(p->deadline, &spins);
			if (ret)
				return ret;
		}
	} else {
		u32 ms = perf_ms_left(p->deadline);

		if (!ms)
			return -ETIMEDOUT;
		ret = rkdapl_evd_wait(p->evd, ms, &ev);
	}
	if (ret)
		return ret;
	perf_event(p, &ev, ktime_get_ns());
	return 0;
}

/* Discards what is queued on the EVD (flushed DTOs, late events) after an EP was freed. */
static void perf_drain(struct perf *p)
{
	struct rkdapl_event ev;

	while (!rkdapl_evd_dequeue(p->evd, &ev))
		if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT)
			rkdapl_cr_reject(ev.cr, NULL, 0);
}

int perf_post_ctl_recv(struct perf *p)
{
	struct rkdapl_lmr_triplet iov = { .lmr = p->rx_lmr, .length = PERF_MSG_BYTES };
	int ret;

	ret = CHECK(p, rkdapl_post_recv(p->ep, &iov, 1, COOKIE(K_CTL_RECV, p->n.ctl_recvs), 0));
	if (!ret)
		p->n.ctl_recvs++;
	return ret;
}

int perf_post_ctl_send(struct perf *p)
{
	struct rkdapl_lmr_triplet iov = { .lmr = p->tx_lmr, .length = sizeof(*p->tx) };
	int ret;

	p->tx->magic = cpu_to_le32(PERF_MAGIC);
	ret = CHECK(p, rkdapl_post_send(p->ep, &iov, 1, COOKIE(K_CTL_SEND, p->n.ctl_sends), 0));
	if (!ret)
		p->n.ctl_sends++;
	return ret;
}

/* Waits for the control RECV posted last (and every control SEND) and checks the magic. */
int perf_ctl_recv(struct perf *p, const char *what)
{
	int ret;

	ret = perf_wait_for(p, p->n.ctl_recvs_done == p->n.ctl_recvs &&
			    p->n.ctl_sends_done == p->n.ctl_sends, what);
	if (ret)
		return ret;
	if (le32_to_cpu(p->rx->magic) != PERF_MAGIC) {
		pr_err("%s: %s: bad magic %#x\n", p->who, what, le32_to_cpu(p->rx->magic));
		return -EPROTO;
	}
	return 0;
}

/*
 * buf=sparse: @len bytes of pages that are never physically adjacent (each the first page of
 * an order-1 block, whose second page is freed: two even page frames never meet), mapped
 * contiguously with vmap(), so that every page is an SGE of its own. Context: process
 * context, may sleep.
 */
static void *perf_sparse_alloc(struct perf *p, u32 len)
{
	u32 i, n = DIV_ROUND_UP(len, PAGE_SIZE);
	void *addr = NULL;

	p->sparse_pages = kcalloc(n, sizeof(*p->sparse_pages), GFP_KERNEL);
	if (!p->sparse_pages)
		return NULL;
	for (i = 0; i < n; i++) {
		struct page *pg = alloc_pages(GFP_KERNEL | __GFP_ZERO, 1);

		if (!pg)
			goto out;
		split_page(pg, 1);
		__free_page(pg + 1);
		p->sparse_pages[p->sparse_n++] = pg;
	}
	addr = vmap(p->sparse_pages, n, VM_MAP, PAGE_KERNEL);
out:
	return addr;
}

static void perf_sparse_free(struct perf *p, void *addr)
{
	u32 i;

	if (addr)
		vunmap(addr);
	for (i = 0; i < p->sparse_n; i++)
		__free_page(p->sparse_pages[i]);
	kfree(p->sparse_pages);
	p->sparse_pages = NULL;
	p->sparse_n = 0;
}

static int perf_alloc_lmr(struct perf *p, void **buf, u32 len, u32 priv,
			  struct rkdapl_lmr **lmr, bool sparse)
{
	*buf = sparse ? perf_sparse_alloc(p, len) : kzalloc(len, GFP_KERNEL | __GFP_NOWARN);
	if (!*buf) {
		pr_err("%s: out of memory for %u bytes\n", p->who, len);
		return -ENOMEM;
	}
	return CHECK(p, rkdapl_lmr_create(p->pz, *buf, len, priv, lmr));
}

static void perf_free_lmr(struct perf *p, struct rkdapl_lmr **lmr, void *bufp)
{
	void **buf = bufp;

	if (*lmr && CHECK(p, rkdapl_lmr_free(*lmr)))
		*buf = NULL;	/* still in use: leak rather than free under the device */
	*lmr = NULL;
	if (*buf && is_vmalloc_addr(*buf))
		perf_sparse_free(p, *buf);
	else
		kfree(*buf);
	*buf = NULL;
}

/* IA, PZ, EVD, control buffers and a data buffer of buf_len bytes. Context: may sleep. */
int perf_open(struct perf *p, u32 evd_len, u32 buf_len)
{
	int ret;

	ret = CHECK(p, rkdapl_ia_open(p->a.dev, &p->ia));
	if (!ret)
		ret = CHECK(p, rkdapl_pz_create(p->ia, &p->pz));
	if (!ret)
		ret = CHECK(p, rkdapl_evd_create(p->ia, evd_len, &p->evd));
	if (!ret)
		ret = perf_alloc_lmr(p, (void **)&p->tx, PERF_MSG_BYTES, 0, &p->tx_lmr, false);
	if (!ret)
		ret = perf_alloc_lmr(p, (void **)&p->rx, PERF_MSG_BYTES, RKDAPL_MEM_LOCAL_WRITE,
				     &p->rx_lmr, false);
	if (!ret)
		ret = perf_alloc_lmr(p, &p->buf, buf_len,
				     RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
				     RKDAPL_MEM_REMOTE_WRITE, &p->buf_lmr,
				     p->a.cmd == PERF_CMD_CLIENT && p->a.sparse);
	p->buf_len = buf_len;
	return ret;
}

/* Frees the session's EP and RMR and whatever their events left on the EVD. */
int perf_end_session(struct perf *p)
{
	int ret = 0;

	if (p->ep) {
		ret = CHECK(p, rkdapl_ep_free(p->ep));
		p->ep = NULL;
	}
	if (p->rmr) {
		if (CHECK(p, rkdapl_rmr_free(p->rmr)) && !ret)
			ret = -EIO;
		p->rmr = NULL;
	}
	if (p->evd)
		perf_drain(p);
	return ret;
}

/* Frees everything perf_open() and the sessions made. Context: may sleep. */
void perf_close(struct perf *p)
{
	perf_end_session(p);
	if (p->cr)
		rkdapl_cr_reject(p->cr, NULL, 0);
	if (p->psp)
		CHECK(p, rkdapl_psp_free(p->psp));
	perf_free_lmr(p, &p->buf_lmr, &p->buf);
	perf_free_lmr(p, &p->rx_lmr, &p->rx);
	perf_free_lmr(p, &p->tx_lmr, &p->tx);
	if (p->evd)
		CHECK(p, rkdapl_evd_free(p->evd));
	if (p->pz)
		CHECK(p, rkdapl_pz_free(p->pz));
	if (p->ia)
		CHECK(p, rkdapl_ia_close(p->ia));
	perf_times_free(&p->t);
}

void perf_reset_session(struct perf *p)
{
	p->err = 0;
	p->established = false;
	p->disconnected = false;
	p->conn_failed = false;
	memset(&p->n, 0, sizeof(p->n));
}

/* EP sizes: the server does not know the test when it accepts, so it is sized for any. */
void perf_ep_attr(struct rkdapl_ep_attr *attr, u32 txdepth, u32 recvs)
{
	*attr = (struct rkdapl_ep_attr){
		.max_request_dtos = txdepth + 4, .max_recv_dtos = recvs,
		.max_request_iov = 1, .max_recv_iov = 1,
		.max_rdma_read_in = 16, .max_rdma_read_out = 16,
		.retry_count = 6, .rnr_retry_count = 7,
	};
}
