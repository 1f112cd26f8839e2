// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_perf: an in-kernel RDMA performance tool over the rkdapl C API (include/rkdapl.h),
 * in the spirit of krping. samples/raw_perf.c does the same work directly on ib_core and
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
 */
#define pr_fmt(fmt) "rkdapl_perf: " fmt

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "perf_common.h"
#include "sample_common.h"

/* Cookies: kind in the top 16 bits, the DTO's index below. */
enum { K_DATA = 1, K_CTL_SEND, K_CTL_RECV, K_BIND };
#define COOKIE(kind, idx) (((u64)(kind) << 48) | (u64)(idx))
#define COOKIE_KIND(c) ((u32)((c) >> 48))
#define COOKIE_IDX(c) ((u32)(c))

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
	u32 ctl_sends, ctl_sends_done, ctl_recvs, ctl_recvs_done, binds, binds_done;
	u32 data_posted, data_done, data_ok;
	u64 *post_ns;			/* client: post time of each DTO */
	u64 *samples;			/* client: post-to-completion of each DTO */
	u64 *post_cost;			/* client: time inside each post call */
	u32 nsamples;			/* client: entries in samples (signalled DTOs) */
	struct rkdapl_dto dtos[PERF_MAX_BATCH];	/* client: the chain of one post call */
	struct page **sparse_pages;	/* buf=sparse: the buffer's pages */
	u32 sparse_n;
};

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
			p->data_ok += idx + 1 - min(p->data_done, idx);
		p->data_done = max(p->data_done, idx + 1);
		if (!ev->status && ev->transferred_length != perf_data_len(p)) {
			pr_err("%s: data DTO %u moved %llu bytes, not %llu\n", p->who, idx,
			       ev->transferred_length, perf_data_len(p));
			perf_fail(p, -EIO);
		}
		if (p->samples && idx < p->a.iters && p->nsamples < p->a.iters)
			p->samples[p->nsamples++] = now - p->post_ns[idx];
		break;
	case K_CTL_SEND:
		p->ctl_sends_done++;
		break;
	case K_CTL_RECV:
		p->ctl_recvs_done++;
		if (!ev->status && ev->transferred_length != sizeof(struct perf_msg)) {
			pr_err("%s: control message of %llu bytes\n", p->who,
			       ev->transferred_length);
			perf_fail(p, -EPROTO);
		}
		break;
	case K_BIND:
		p->binds_done++;
		break;
	default:
		pr_err("%s: completion with unknown cookie %#llx\n", p->who, ev->cookie);
		perf_fail(p, -EPROTO);
	}
}

static void perf_event(struct perf *p, const struct rkdapl_event *ev, u64 now)
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
static int perf_step(struct perf *p)
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

/* Discards what is queued on the EVD (flushed DTOs, late events) after an EP was freed. */
static void perf_drain(struct perf *p)
{
	struct rkdapl_event ev;

	while (!rkdapl_evd_dequeue(p->evd, &ev))
		if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT)
			rkdapl_cr_reject(ev.cr, NULL, 0);
}

static int perf_post_ctl_recv(struct perf *p)
{
	struct rkdapl_lmr_triplet iov = { .lmr = p->rx_lmr, .length = PERF_MSG_BYTES };
	int ret;

	ret = CHECK(p, rkdapl_post_recv(p->ep, &iov, 1, COOKIE(K_CTL_RECV, p->ctl_recvs), 0));
	if (!ret)
		p->ctl_recvs++;
	return ret;
}

static int perf_post_ctl_send(struct perf *p)
{
	struct rkdapl_lmr_triplet iov = { .lmr = p->tx_lmr, .length = sizeof(*p->tx) };
	int ret;

	p->tx->magic = cpu_to_le32(PERF_MAGIC);
	ret = CHECK(p, rkdapl_post_send(p->ep, &iov, 1, COOKIE(K_CTL_SEND, p->ctl_sends), 0));
	if (!ret)
		p->ctl_sends++;
	return ret;
}

/* Waits for the control RECV posted last (and every control SEND) and checks the magic. */
static int perf_ctl_recv(struct perf *p, const char *what)
{
	int ret;

	ret = perf_wait_for(p, p->ctl_recvs_done == p->ctl_recvs &&
			    p->ctl_sends_done == p->ctl_sends, what);
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
static int perf_open(struct perf *p, u32 evd_len, u32 buf_len)
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
static int perf_end_session(struct perf *p)
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
static void perf_close(struct perf *p)
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
	perf_free_times(p->post_ns, p->samples, p->post_cost);
}

static void perf_reset_session(struct perf *p)
{
	p->err = 0;
	p->established = false;
	p->disconnected = false;
	p->conn_failed = false;
	p->ctl_sends = 0;
	p->ctl_sends_done = 0;
	p->ctl_recvs = 0;
	p->ctl_recvs_done = 0;
	p->binds = 0;
	p->binds_done = 0;
	p->data_posted = 0;
	p->data_done = 0;
	p->data_ok = 0;
}

/* EP sizes: the server does not know the test when it accepts, so it is sized for any. */
static void perf_ep_attr(struct rkdapl_ep_attr *attr, u32 txdepth, u32 recvs)
{
	memset(attr, 0, sizeof(*attr));
	attr->max_request_dtos = txdepth + 4;
	attr->max_recv_dtos = recvs;
	attr->max_request_iov = 1;
	attr->max_recv_iov = 1;
	attr->max_rdma_read_in = 16;
	attr->max_rdma_read_out = 16;
	attr->retry_count = 6;
	attr->rnr_retry_count = 7;
}

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
	ret = rkdapl_cr_accept(p->cr, p->ep, NULL, 0);
	if (ret) {
		pr_err("server: rkdapl_cr_accept() failed: %d\n", ret);
		if (!cr_still_pending(ret))
			p->cr = NULL;
		return ret;
	}
	p->cr = NULL;
	ret = perf_post_ctl_recv(p);
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
	p->binds++;
	ret = perf_wait_for(p, p->binds_done == p->binds, "the RMR bind");
	if (ret)
		return ret;
	iov.length = size;
	if (op == PERF_OP_SEND) {
		while (p->data_posted < min(iters, PERF_RECV_DEPTH)) {
			ret = CHECK(p, rkdapl_post_recv(p->ep, &iov, 1,
							COOKIE(K_DATA, p->data_posted), 0));
			if (ret)
				return ret;
			p->data_posted++;
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
		while (op == PERF_OP_SEND && p->data_posted < iters &&
		       p->data_posted - p->data_done < PERF_RECV_DEPTH) {
			ret = CHECK(p, rkdapl_post_recv(p->ep, &iov, 1,
							COOKIE(K_DATA, p->data_posted), 0));
			if (ret)
				return ret;
			p->data_posted++;
		}
		if (p->err)
			return p->err;
		if (p->disconnected && p->data_done == p->data_posted &&
		    p->ctl_sends_done == p->ctl_sends)
			break;
		p->deadline = jiffies + msecs_to_jiffies(p->a.timeout_ms);
		ret = perf_step(p);
		if (ret) {
			pr_err("server: waiting for the client: %d\n", ret);
			return ret;
		}
	}
	if (op == PERF_OP_SEND && p->data_ok != iters) {
		pr_err("server: %u of %u SENDs arrived\n", p->data_ok, iters);
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
			       ntohs(p->a.sin.sin_port), event_name(p->conn_fail_type));
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
	u32 i0 = p->data_posted, k, posted = 0;
	u64 cookie = COOKIE(K_DATA, i0), t0, cost;
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
	/*
	 * Interrupts are off across the call (rkdapl_post_*() may be called from any context)
	 * so that post_ns is the call's own CPU time: otherwise the rxe work the post wakes may
	 * preempt the poster, and the NIC's interrupt with rxe's receive softirq may run inside
	 * the call.
	 */
	local_irq_save(flags);
	t0 = ktime_get_ns();
	for (k = 0; k < n; k++)
		p->post_ns[i0 + k] = t0;
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
	cost = div_u64(ktime_get_ns() - t0, n);
	local_irq_restore(flags);
	for (k = 0; k < n; k++)
		p->post_cost[i0 + k] = cost;
	p->data_posted += posted;
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
	ret = perf_alloc_times(&p->a, &p->post_ns, &p->samples, &p->post_cost);
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
		ret = perf_wait_for(p, p->ctl_sends_done == p->ctl_sends, "the stop SEND");
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
	while (p->data_done < p->a.iters) {
		while (perf_may_post(&p->a, p->data_posted, p->data_done, depth, batch)) {
			u32 room = depth - (p->data_posted - p->data_done);

			ret = client_post(p, &rem, min3(room, p->a.iters - p->data_posted, batch));
			if (ret)
				return ret;
		}
		/* for room to post while there is more to post, then for the last completion */
		ret = perf_wait_for(p, p->data_posted < p->a.iters ?
				    perf_may_post(&p->a, p->data_posted, p->data_done, depth,
						  batch) :
				    p->data_done == p->a.iters, "completions");
		if (ret)
			return ret;
	}
	t1 = ktime_get_ns();
	perf_report("rkdapl", &p->a, t1 - t0, p->samples, p->nsamples, p->post_cost);

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
MODULE_DESCRIPTION("rkdapl perf: RDMA WRITE/READ/SEND bandwidth and latency over the rkdapl API");
