// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_observe: a consumer that stays loaded with a live connection, so that a script can
 * look at it with the tools people already use (selftests/observe.sh):
 *
 *   insmod rkdapl_observe.ko peer=<own IPv4> [dev=rxe0] [port=7520] [writes=640]
 *   ... rdma res show qp|cq|pd|mr; cat /sys/kernel/debug/rkdapl/ia* /ep* /...; trace ...
 *   rmmod rkdapl_observe
 *
 * module_init opens one IA, connects a loopback pair of EPs (client -> PSP -> server), then:
 *   - posts one RECV on the server and one SEND of SEND_BYTES from the client;
 *   - grants a page of the server's buffer with a pooled RMR of the server's EP (left bound:
 *     the EP's end ends it);
 *   - grants the server's buffer with an RMR and RDMA WRITEs WRITE_BYTES into it @writes
 *     times from the client, OBS_BATCH DTOs in flight at a time (more DTOs than the EP's
 *     send queue has slots: the slots of completed DTOs must come back);
 *   - checks every completion and the written bytes,
 * prints "rkdapl_observe: ready ..." and returns 0, or a negative errno (insmod fails) after
 * freeing everything. The objects live until rmmod; module_exit frees them in order and logs
 * "rkdapl_observe: freed, N errors".
 *
 * With leak=1 module_exit frees nothing: rkdapl must (selftests/removal.sh).
 *
 * Writing 1 to /sys/module/rkdapl_observe/parameters/free_psp frees the PSP while both EPs stay
 * connected (selftests/observe.sh: ib_core names the accepted EP's CM id after the listener's,
 * so that name must outlive the PSP).
 *
 * With traffic=1 (selftests/removal.sh) it then keeps RECV_POSTED RECVs posted on both EPs
 * and a kthread running RDMA WRITEs and READs until they fail. That is what the device sees
 * when `rdma link delete` removes it: the kthread then checks what a consumer must get
 * (BROKEN on both EPs, every posted RECV back FLUSHED, -ENODEV/-ENOTCONN from later calls)
 * and logs one line "rkdapl_observe: removal: ... ok" (or "... FAILED").
 */
#define pr_fmt(fmt) "rkdapl_observe: " fmt

#include <linux/in.h>
#include <linux/inet.h>
#include <linux/kmemleak.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../../include/rkdapl.h"

static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "the guest's own IPv4 address (the pair connects over it)");
static ushort port = 7520;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7520)");
static uint writes = 640;
module_param(writes, uint, 0444);
MODULE_PARM_DESC(writes, "RDMA WRITEs to post (default 640, more than one EP's 512 slots)");
static bool leak;
module_param(leak, bool, 0444);
MODULE_PARM_DESC(leak, "leave every object open at unload (rkdapl must free them)");
static bool traffic;
module_param(traffic, bool, 0444);
MODULE_PARM_DESC(traffic, "keep RECVs posted and RDMA traffic running until the device goes");

#define OBS_TIMEOUT_MS 30000
#define OBS_BATCH 32
#define SEND_BYTES 1000
#define WRITE_BYTES 64
#define BUF_BYTES (2 * PAGE_SIZE)
#define ALL_PRIV (RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE)
#define RECV_POSTED 8
#define C_RECV_COOKIE 3000
#define S_RECV_COOKIE 2000

static struct obs {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *c_dto, *c_conn, *s_dto, *s_conn, *psp_evd, *async;
	struct rkdapl_psp *psp;
	struct rkdapl_ep *c_ep, *s_ep;
	u8 *c_buf, *s_buf;
	struct rkdapl_lmr *c_lmr, *s_lmr;
	struct rkdapl_rmr *rmr;
	struct rkdapl_rmr_triplet grant;
	struct task_struct *traffic;
} o;

/* Serialises free_psp with module init's and exit's frees. */
static DEFINE_MUTEX(obs_lock);

static int free_psp_set(const char *val, const struct kernel_param *kp)
{
	bool v;
	int r = kstrtobool(val, &v);

	if (r || !v)
		return r;
	mutex_lock(&obs_lock);
	if (o.psp) {
		r = rkdapl_psp_free(o.psp);
		if (!r)
			o.psp = NULL;
	}
	mutex_unlock(&obs_lock);
	if (!r)
		pr_info("PSP freed\n");
	return r;
}

static const struct kernel_param_ops free_psp_ops = { .set = free_psp_set };
module_param_cb(free_psp, &free_psp_ops, NULL, 0200);
MODULE_PARM_DESC(free_psp, "write 1: free the PSP, the connected EPs stay");

/* Waits for the next event on @evd and checks its type (and, for DTOs, cookie and status). */
static int expect(struct rkdapl_evd *evd, u32 type, u64 cookie, const char *what)
{
	struct rkdapl_event ev;
	int r = rkdapl_evd_wait(evd, OBS_TIMEOUT_MS, &ev);

	if (r) {
		pr_err("%s: no event: %d\n", what, r);
		return r;
	}
	if (ev.type != type || ev.status ||
	    ((type == RKDAPL_DTO_COMPLETION_EVENT || type == RKDAPL_RMR_BIND_COMPLETION_EVENT) &&
	     ev.cookie != cookie)) {
		pr_err("%s: event %u status %d cookie %llu, expected event %u cookie %llu\n", what,
		       ev.type, ev.status, ev.cookie, type, cookie);
		return -EIO;
	}
	return 0;
}

/* Frees everything; returns the number of frees that did not return 0. */
static int obs_free(void)
{
	int bad = 0;

	mutex_lock(&obs_lock);
#define FREE(fn, h) do { if ((h) && fn(h)) bad++; } while (0)
	FREE(rkdapl_ep_free, o.c_ep);
	FREE(rkdapl_ep_free, o.s_ep);
	FREE(rkdapl_psp_free, o.psp);
	FREE(rkdapl_rmr_free, o.rmr);
	FREE(rkdapl_lmr_free, o.c_lmr);
	FREE(rkdapl_lmr_free, o.s_lmr);
	FREE(rkdapl_evd_free, o.c_dto);
	FREE(rkdapl_evd_free, o.c_conn);
	FREE(rkdapl_evd_free, o.s_dto);
	FREE(rkdapl_evd_free, o.s_conn);
	FREE(rkdapl_evd_free, o.psp_evd);
	FREE(rkdapl_evd_free, o.async);
	FREE(rkdapl_pz_free, o.pz);
	FREE(rkdapl_ia_close, o.ia);
#undef FREE
	/* A buffer whose LMR could not be freed may still be mapped: leak it rather. */
	if (!bad) {
		kfree(o.c_buf);
		kfree(o.s_buf);
	}
	memset(&o, 0, sizeof(o));
	mutex_unlock(&obs_lock);
	return bad;
}

static int obs_connect(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	/* The server's EP has a pool of 2 RMRs, one of them left bound (obs_transfer()). */
	struct rkdapl_ep_attr s_attr = { .max_pooled_rmrs = 2 };
	struct rkdapl_event ev;
	int r;

	if (!in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("peer=%s is not an IPv4 address\n", peer);
		return -EINVAL;
	}
	r = rkdapl_psp_create(o.ia, port, 4, o.psp_evd, &o.psp);
	if (!r)
		r = rkdapl_ep_create(o.pz, o.c_dto, o.c_conn, NULL, &o.c_ep);
	if (!r)
		r = rkdapl_ep_create(o.pz, o.s_dto, o.s_conn, &s_attr, &o.s_ep);
	if (!r)
		r = rkdapl_ep_connect(o.c_ep, (struct sockaddr *)&sin, OBS_TIMEOUT_MS, NULL, 0);
	if (r) {
		pr_err("psp_create/ep_create/ep_connect: %d\n", r);
		return r;
	}
	r = rkdapl_evd_wait(o.psp_evd, OBS_TIMEOUT_MS, &ev);
	if (r || ev.type != RKDAPL_CONNECTION_REQUEST_EVENT) {
		pr_err("no connection request: %d, event %u\n", r, r ? 0 : ev.type);
		return r ?: -EIO;
	}
	r = rkdapl_cr_accept(ev.cr, o.s_ep, NULL, 0);
	if (r) {
		pr_err("cr_accept: %d\n", r);
		return r;
	}
	r = expect(o.s_conn, RKDAPL_CONNECTION_EVENT_ESTABLISHED, 0, "server established");
	return r ?: expect(o.c_conn, RKDAPL_CONNECTION_EVENT_ESTABLISHED, 0,
			   "client established");
}

static int obs_transfer(void)
{
	struct rkdapl_lmr_triplet t;
	struct rkdapl_rmr_triplet rt = { .length = WRITE_BYTES };
	u64 cookie = 1, first, pooled_addr;
	u32 done = 0, n, i, pooled_rkey;
	int r;

	/* One SEND into one RECV. */
	t = (struct rkdapl_lmr_triplet){ o.s_lmr, 0, BUF_BYTES };
	r = rkdapl_post_recv(o.s_ep, &t, 1, 100, 0);
	memset(o.c_buf, 0x5a, SEND_BYTES);
	t = (struct rkdapl_lmr_triplet){ o.c_lmr, 0, SEND_BYTES };
	if (!r)
		r = rkdapl_post_send(o.c_ep, &t, 1, 101, 0);
	if (!r)
		r = expect(o.c_dto, RKDAPL_DTO_COMPLETION_EVENT, 101, "send");
	if (!r)
		r = expect(o.s_dto, RKDAPL_DTO_COMPLETION_EVENT, 100, "recv");
	if (r)
		return r;
	if (o.s_buf[0] != 0x5a || o.s_buf[SEND_BYTES - 1] != 0x5a) {
		pr_err("recv: data differs from what was sent\n");
		return -EIO;
	}

	/* A grant of the server's buffer, then @writes RDMA WRITEs of WRITE_BYTES each. */
	r = rkdapl_rmr_bind(o.rmr, o.s_lmr, 0, BUF_BYTES,
			    RKDAPL_MEM_REMOTE_WRITE | RKDAPL_MEM_REMOTE_READ, o.s_ep, 102,
			    &rt.rkey, &rt.address);
	if (!r)
		r = expect(o.s_dto, RKDAPL_RMR_BIND_COMPLETION_EVENT, 102, "rmr bind");
	if (r)
		return r;
	/*
	 * A pooled grant too, left bound: the EP's free, the device's removal (traffic=1) or
	 * rkdapl's cleanup at unload (leak=1) ends it with the QP, its MR taken out of the pool.
	 */
	r = rkdapl_ep_pooled_rmr_bind(o.s_ep, o.s_lmr, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, 103,
				      &pooled_rkey, &pooled_addr);
	if (!r)
		r = expect(o.s_dto, RKDAPL_RMR_BIND_COMPLETION_EVENT, 103, "pooled rmr bind");
	if (r)
		return r;
	t = (struct rkdapl_lmr_triplet){ o.c_lmr, 0, WRITE_BYTES };
	while (done < writes) {
		n = min_t(u32, OBS_BATCH, writes - done);
		memset(o.c_buf, (u8)done, WRITE_BYTES);
		first = cookie;
		for (i = 0; i < n; i++) {
			r = rkdapl_post_rdma_write(o.c_ep, &t, 1, &rt, 1000 + cookie++, 0);
			if (r) {
				pr_err("rdma_write %u: post = %d\n", done + i, r);
				return r;
			}
		}
		for (i = 0; i < n; i++) {
			r = expect(o.c_dto, RKDAPL_DTO_COMPLETION_EVENT, 1000 + first + i,
				   "rdma_write");
			if (r)
				return r;
		}
		rkdapl_lmr_sync_rdma_write(o.s_lmr, 0, WRITE_BYTES);
		if (memcmp(o.s_buf, o.c_buf, WRITE_BYTES)) {
			pr_err("rdma_write batch at %u: target differs\n", done);
			return -EIO;
		}
		done += n;
	}
	o.grant = rt;
	return 0;
}

/* --- traffic=1: what a consumer sees when its device is removed ----------------------------- */

static struct {
	u32 dtos;			/* DTOs completed successfully */
	int stop_post;			/* the post error that stopped the traffic, or 0 */
	s32 stop_status;		/* the completion status that stopped it, or 0 */
	u32 flushed_recv[2];		/* client, server */
} tr;

/* Counts a DTO event; returns its status. */
static s32 tr_note(const struct rkdapl_event *ev, int side)
{
	if (ev->type == RKDAPL_DTO_COMPLETION_EVENT && ev->op == RKDAPL_DTO_RECV &&
	    ev->status == RKDAPL_DTO_FLUSHED)
		tr.flushed_recv[side]++;
	return ev->status;
}

/* Waits up to @ms for a connection event of @type on @evd; returns its status or -ETIMEDOUT. */
static int tr_conn(struct rkdapl_evd *evd, u32 type, u32 ms)
{
	struct rkdapl_event ev;

	while (!rkdapl_evd_wait(evd, ms, &ev))
		if (ev.type == type)
			return ev.status;
	return -ETIMEDOUT;
}

/* Takes every DTO event left on @evd (waiting @ms for each). */
static void tr_drain(struct rkdapl_evd *evd, int side, u32 ms)
{
	struct rkdapl_event ev;

	while (!rkdapl_evd_wait(evd, ms, &ev))
		tr_note(&ev, side);
}

static int traffic_fn(void *arg)
{
	struct rkdapl_lmr_triplet t = { o.c_lmr, 0, WRITE_BYTES };
	struct rkdapl_rmr_triplet rt = o.grant;
	struct rkdapl_ia_attr attr;
	struct rkdapl_pz *pz = NULL;
	struct rkdapl_event ev;
	int c_broken, s_broken, cat, pz_r, query_r, sync_r, send_r, i;
	u64 cookie = 10000;
	bool ok;

	while (!kthread_should_stop() && !tr.stop_post && !tr.stop_status) {
		for (i = 0; i < 8 && !tr.stop_post; i++)
			tr.stop_post = i & 1 ?
				rkdapl_post_rdma_read(o.c_ep, &t, 1, &rt, cookie++, 0) :
				rkdapl_post_rdma_write(o.c_ep, &t, 1, &rt, cookie++, 0);
		for (; i > 0 && !tr.stop_status; i--) {
			if (rkdapl_evd_wait(o.c_dto, OBS_TIMEOUT_MS, &ev)) {
				tr.stop_status = -ETIMEDOUT;
				break;
			}
			tr.stop_status = tr_note(&ev, 0);
			if (!tr.stop_status)
				tr.dtos++;
		}
	}
	if (kthread_should_stop())
		return 0;

	/* The device is going: what the consumer gets. */
	cat = tr_conn(o.async, RKDAPL_ASYNC_IA_CATASTROPHIC, 20000);
	c_broken = tr_conn(o.c_conn, RKDAPL_CONNECTION_EVENT_BROKEN, 20000);
	s_broken = tr_conn(o.s_conn, RKDAPL_CONNECTION_EVENT_BROKEN, 20000);
	tr_drain(o.c_dto, 0, 2000);
	tr_drain(o.s_dto, 1, 2000);
	pz_r = rkdapl_pz_create(o.ia, &pz);
	if (!pz_r)
		rkdapl_pz_free(pz);
	query_r = rkdapl_ia_query(o.ia, &attr);
	sync_r = rkdapl_lmr_sync_rdma_write(o.s_lmr, 0, 8);
	send_r = rkdapl_post_send(o.c_ep, &t, 1, 1, 0);
	ok = cat == -ENODEV && c_broken == -ENODEV && s_broken == -ENODEV &&
	     tr.flushed_recv[0] == RECV_POSTED && tr.flushed_recv[1] == RECV_POSTED &&
	     pz_r == -ENODEV && query_r == -ENODEV && sync_r == -ENODEV && send_r == -ENOTCONN;
	pr_info("removal: traffic stopped after %u DTOs (post %d, status %d); IA_CATASTROPHIC %d; BROKEN client %d server %d; RECVs flushed client %u/%u server %u/%u; pz_create %d ia_query %d lmr_sync %d post_send %d: %s\n",
		tr.dtos, tr.stop_post, tr.stop_status, cat, c_broken, s_broken, tr.flushed_recv[0],
		RECV_POSTED, tr.flushed_recv[1], RECV_POSTED, pz_r, query_r, sync_r, send_r,
		ok ? "ok" : "FAILED");
	while (!kthread_should_stop())
		schedule_timeout_interruptible(HZ / 10);
	return 0;
}

static int traffic_start(void)
{
	struct rkdapl_lmr_triplet t;
	int r = 0, i;

	/* RECVs into the second page of each buffer, which the traffic does not touch. */
	for (i = 0; i < RECV_POSTED && !r; i++) {
		t = (struct rkdapl_lmr_triplet){ o.c_lmr, PAGE_SIZE, 64 };
		r = rkdapl_post_recv(o.c_ep, &t, 1, C_RECV_COOKIE + i, 0);
		t = (struct rkdapl_lmr_triplet){ o.s_lmr, PAGE_SIZE, 64 };
		if (!r)
			r = rkdapl_post_recv(o.s_ep, &t, 1, S_RECV_COOKIE + i, 0);
	}
	if (r) {
		pr_err("traffic: post_recv = %d\n", r);
		return r;
	}
	o.traffic = kthread_run(traffic_fn, NULL, "rkdapl_obs_traffic");
	if (IS_ERR(o.traffic)) {
		r = PTR_ERR(o.traffic);
		o.traffic = NULL;
		return r;
	}
	return 0;
}

static int __init rkdapl_observe_init(void)
{
	/* The EVDs, in the order they are made: the client's, the server's, the PSP's, async. */
	const struct {
		u32 len;
		struct rkdapl_evd **evd;
	} evds[] = {
		{ 1024, &o.c_dto }, { 16, &o.c_conn }, { 64, &o.s_dto }, { 16, &o.s_conn },
		{ 16, &o.psp_evd }, { 16, &o.async },
	};
	size_t i;
	int r;

	r = rkdapl_ia_open(dev, &o.ia);
	if (!r)
		r = rkdapl_pz_create(o.ia, &o.pz);
	for (i = 0; !r && i < ARRAY_SIZE(evds); i++)
		r = rkdapl_evd_create(o.ia, evds[i].len, evds[i].evd);
	if (!r)
		r = rkdapl_ia_set_async_evd(o.ia, o.async);
	if (r) {
		pr_err("ia_open/pz_create/evd_create: %d\n", r);
		goto fail;
	}
	o.c_buf = kzalloc(BUF_BYTES, GFP_KERNEL);
	o.s_buf = kzalloc(BUF_BYTES, GFP_KERNEL);
	if (!o.c_buf || !o.s_buf) {
		r = -ENOMEM;
		goto fail;
	}
	r = rkdapl_lmr_create(o.pz, o.c_buf, BUF_BYTES, RKDAPL_MEM_LOCAL_WRITE, &o.c_lmr);
	if (!r)
		r = rkdapl_lmr_create(o.pz, o.s_buf, BUF_BYTES, ALL_PRIV, &o.s_lmr);
	if (!r)
		r = rkdapl_rmr_create(o.pz, &o.rmr);
	if (r) {
		pr_err("lmr_create/rmr_create: %d\n", r);
		goto fail;
	}
	r = obs_connect();
	if (!r)
		r = obs_transfer();
	if (!r && traffic)
		r = traffic_start();
	if (r)
		goto fail;
	pr_info("ready: 1 send of %u bytes, %u rdma writes of %u bytes\n", SEND_BYTES, writes,
		WRITE_BYTES);
	return 0;
fail:
	obs_free();
	return r;
}

static void __exit rkdapl_observe_exit(void)
{
	int bad;

	if (o.traffic)
		kthread_stop(o.traffic);
	if (leak) {
		/*
		 * A consumer that forgets to free: rkdapl frees its objects when this module is
		 * gone. The buffers are this module's own leak, on purpose.
		 */
		kmemleak_not_leak(o.c_buf);
		kmemleak_not_leak(o.s_buf);
		pr_info("leaving every object open\n");
		return;
	}
	bad = obs_free();
	pr_info("freed, %d errors\n", bad);
}

module_init(rkdapl_observe_init);
module_exit(rkdapl_observe_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: a consumer holding a live connection for rdma res, debugfs and tracing");
