// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test role=fuzz: long random sequences of C API calls.
 *
 *   insmod rkdapl_test.ko role=fuzz peer=<own IPv4> [seed=N] [fuzz_ops=N] [port=7480]
 *
 * seed=0 (the default) picks one; the seed is printed first, and the same seed replays the
 * same sequence of choices (what the calls return may differ with timing). Each call takes
 * its handles from a pool of live objects, or, some of the time, NULL, a handle already freed,
 * or an object of another kind; its sizes, offsets, flags and privileges are random, often at
 * the edges. The objects connect to each other through a PSP of the same IA (a live peer over
 * the loopback). Meanwhile a second thread frees random objects of the pool, and some EVDs
 * deliver by upcall, where the upcall posts, dequeues, and tries the calls an upcall must not
 * make. Pass: every call returns 0 or a negative errno its kernel-doc in include/rkdapl.h
 * documents, the calls refused in an upcall return -EDEADLK, and everything is freed at the
 * end (the guest script then checks rdma res, unloads the module and scans for splats).
 *
 * Buffers are never freed before the end: a DTO in flight may still use one (the consumer's
 * obligation, which a fuzzer of the provider must keep).
 */
#include <linux/scatterlist.h>
#include "rkdapl_test.h"
#include <linux/prandom.h>

static ulong seed;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "fuzz: the seed (0: pick one and print it)");
static uint fuzz_ops = 20000;
module_param(fuzz_ops, uint, 0444);
MODULE_PARM_DESC(fuzz_ops, "fuzz: calls to make (default 20000)");

#define NSLOT 6
#define NBUF 8
#define BUFLEN (2 * PAGE_SIZE)
#define STALE 16

enum kind { K_PZ, K_EVD, K_LMR, K_RMR, K_EP, K_PSP, K_N };
static const char *const kname[K_N] = { "pz", "evd", "lmr", "rmr", "ep", "psp" };

#define FZ_SG 256

struct fz {
	struct rnd_state rnd;		/* the main thread's choices */
	struct rnd_state rnd2;		/* the freeing thread's */
	struct mutex lock;		/* the pool */
	void *h[K_N][NSLOT];
	void *stale[STALE];		/* freed handles */
	int nstale;
	struct rkdapl_ia *ia;
	struct sockaddr_in self;
	u16 pport;			/* the PSP's port */
	u8 *buf[NBUF];
	/*
	 * rkdapl_post_send_sg()'s lists, one per call in turn: a list stays the SEND's until its
	 * event, and the pool's EPs have far fewer SENDs in flight than FZ_SG calls take.
	 */
	struct scatterlist sg[FZ_SG];
	u32 nsg;
	void *foreign;
	u64 calls, errs, bad, refused_ok, refused_bad, upcalls, frees;
	u64 ev[RKDAPL_ASYNC_CQ_ERROR + 1];	/* events dequeued, by type */
	char first_bad[WHY];
	bool stop;
};

/* ---- documented errnos ---------------------------------------------------------------------- */

struct doc { const char *call; int errs[12]; };

/* From each function's "Return:" in include/rkdapl.h (what "as rkdapl_post_send()" refers to
 * included). */
static const struct doc docs[] = {
	{ "pz_create", { EINVAL, ENOMEM, ENODEV } },
	{ "pz_free", { EINVAL, EBUSY } },
	{ "evd_create", { EINVAL, ENOMEM } },
	{ "evd_free", { EINVAL, EDEADLK } },
	{ "evd_dequeue", { EINVAL, EAGAIN } },
	{ "evd_wait", { EINVAL, ETIMEDOUT, EINTR, EDEADLK } },
	{ "evd_modify_upcall", { EINVAL, EDEADLK } },
	{ "lmr_create", { EINVAL, ENOMEM, EFAULT, EIO, ENODEV } },
	{ "lmr_free", { EINVAL, EBUSY } },
	{ "rmr_create", { EINVAL, ENOMEM, ENODEV } },
	{ "rmr_bind", { EINVAL, E2BIG, EACCES, EBUSY, ENOSPC, ENOTCONN, ERANGE, EXDEV } },
	{ "rmr_unbind", { EINVAL, ENOSPC, ENOTCONN } },
	{ "rmr_free", { EINVAL } },
	{ "ep_create", { EINVAL, ENOMEM, ENODEV } },
	{ "ep_connect", { EINVAL, EAFNOSUPPORT, EISCONN, ENETUNREACH, EADDRNOTAVAIL, ENOMEM,
			  ENODEV } },
	{ "ep_connect_from", { EINVAL, EAFNOSUPPORT, EISCONN, ENETUNREACH, EADDRNOTAVAIL,
			       EADDRINUSE, ENOMEM, ENODEV } },
	{ "ep_disconnect", { EINVAL, ENOTCONN } },
	{ "ep_get_state", { EINVAL } },
	{ "ep_query", { EINVAL } },
	{ "ep_free", { EINVAL, EDEADLK } },
	{ "ep_reset", { EINVAL, EBUSY, EDEADLK, ENODEV } },
	{ "psp_create", { EINVAL, EADDRINUSE, ENOMEM } },
	{ "psp_free", { EINVAL, EDEADLK } },
	{ "cr_accept", { EINVAL, EISCONN, EXDEV, ECONNABORTED, ENODEV } },
	{ "cr_reject", { EINVAL } },
	{ "post", { EINVAL, EMSGSIZE, ENOMEM, ENOSPC, ENOTCONN, ERANGE, EXDEV, EACCES } },
	{ "post_send_sg", { EINVAL, EXDEV, ERANGE, ENOMEM, ENODEV, EIO, ENOTCONN, EMSGSIZE,
			    ENOSPC } },
};

/* Counts the call; a return that is neither 0 nor documented for @call is a finding. */
static int fz_ret(struct fz *f, const char *call, int r)
{
	const struct doc *d = NULL;
	int i;

	f->calls++;
	if (!r)
		return 0;
	f->errs++;
	for (i = 0; i < ARRAY_SIZE(docs); i++)
		if (!strcmp(docs[i].call, call))
			d = &docs[i];
	for (i = 0; d && r < 0 && i < ARRAY_SIZE(d->errs) && d->errs[i]; i++)
		if (r == -d->errs[i])
			return r;
	f->bad++;
	pr_info("rkdapl_test: # fuzz finding: %s returned %d %s (undocumented)\n", call, r,
		ename(r));
	if (!f->first_bad[0])
		snprintf(f->first_bad, WHY, "%s returned %d %s", call, r, ename(r));
	return r;
}

/* ---- the pool ------------------------------------------------------------------------------- */

static u32 rnd(struct rnd_state *s, u32 n)
{
	return n ? prandom_u32_state(s) % n : 0;
}

/* A handle for a call that takes a @k: live (mostly), NULL, freed, or of another kind. */
static void *fz_pick(struct fz *f, enum kind k)
{
	u32 c = rnd(&f->rnd, 100);
	void *h;

	mutex_lock(&f->lock);
	if (c < 6)
		h = NULL;
	else if (c < 12 && f->nstale)
		h = f->stale[rnd(&f->rnd, min(f->nstale, STALE))];
	else if (c < 16)
		h = f->h[(k + 1 + rnd(&f->rnd, K_N - 1)) % K_N][rnd(&f->rnd, NSLOT)];
	else if (c < 18)
		h = f->foreign;
	else
		h = f->h[k][rnd(&f->rnd, NSLOT)];
	mutex_unlock(&f->lock);
	return h;
}

/* Takes the handle in a random slot of @k out of the pool (NULL if the slot is empty). */
static void *fz_take(struct fz *f, struct rnd_state *s, enum kind k)
{
	int i;
	void *h;

	mutex_lock(&f->lock);
	i = rnd(s, NSLOT);
	h = f->h[k][i];
	f->h[k][i] = NULL;
	mutex_unlock(&f->lock);
	return h;
}

/* Puts a new handle in a free slot; frees it with @free if none is free. */
static void fz_put(struct fz *f, enum kind k, void *h, int (*free)(void *))
{
	int i;

	mutex_lock(&f->lock);
	for (i = 0; i < NSLOT; i++) {
		if (!f->h[k][i]) {
			f->h[k][i] = h;
			mutex_unlock(&f->lock);
			return;
		}
	}
	mutex_unlock(&f->lock);
	free(h);
}

static void fz_stale(struct fz *f, void *h)
{
	mutex_lock(&f->lock);
	f->stale[f->nstale++ % STALE] = h;
	mutex_unlock(&f->lock);
}

/* The frees, by kind (the put-back of a refused free keeps the object in the pool). */
static int free_pz(void *h) { return rkdapl_pz_free(h); }
static int free_evd(void *h) { return rkdapl_evd_free(h); }
static int free_lmr(void *h) { return rkdapl_lmr_free(h); }
static int free_rmr(void *h) { return rkdapl_rmr_free(h); }
static int free_ep(void *h) { return rkdapl_ep_free(h); }
static int free_psp(void *h) { return rkdapl_psp_free(h); }
static int (*const frees[K_N])(void *) = { free_pz, free_evd, free_lmr, free_rmr, free_ep,
					   free_psp };
static const char *const free_name[K_N] = { "pz_free", "evd_free", "lmr_free", "rmr_free",
					    "ep_free", "psp_free" };

/* Frees one random object of @k; a refused free (busy) puts it back. */
static void fz_free_one(struct fz *f, struct rnd_state *s, enum kind k)
{
	void *h = fz_take(f, s, k);
	int r;

	if (!h)
		return;
	r = fz_ret(f, free_name[k], frees[k](h));
	if (r) {
		fz_put(f, k, h, frees[k]);
	} else {
		fz_stale(f, h);
		WRITE_ONCE(f->frees, f->frees + 1);
	}
}

/* ---- upcalls ------------------------------------------------------------------------------ */

static void fz_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct fz *f = ctx;
	struct rkdapl_event e2;
	int r;

	WRITE_ONCE(f->upcalls, f->upcalls + 1);
	/* what an upcall must not do: refused, nothing changed */
	switch (get_random_u32_below(4)) {
	case 0:
		r = ev->ep ? rkdapl_ep_free(ev->ep) : rkdapl_evd_wait(ev->evd, 0, &e2);
		break;
	case 1:
		r = rkdapl_evd_modify_upcall(ev->evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
		break;
	case 2:
		r = ev->ep ? rkdapl_ep_reset(ev->ep) : -EDEADLK;
		break;
	default:
		r = -EDEADLK;
		break;
	}
	/* a stale handle in an event (an EP freed meanwhile) is -EINVAL, also fine */
	if (r == -EDEADLK || r == -EINVAL)
		WRITE_ONCE(f->refused_ok, f->refused_ok + 1);
	else
		WRITE_ONCE(f->refused_bad, f->refused_bad + 1);
	/* what it may do: answer its own CR */
	if (ev->type == RKDAPL_CONNECTION_REQUEST_EVENT && ev->cr)
		rkdapl_cr_reject(ev->cr, NULL, 0);
}

/* ---- the calls ---------------------------------------------------------------------------- */

static u64 fz_len(struct fz *f)
{
	static const u64 edge[] = { 0, 1, 63, 64, 4095, 4096, 4097, BUFLEN - 1, BUFLEN,
				    BUFLEN + 1, U32_MAX, U64_MAX };
	return rnd(&f->rnd, 3) ? rnd(&f->rnd, BUFLEN + 1) : edge[rnd(&f->rnd, ARRAY_SIZE(edge))];
}

static void fz_triplet(struct fz *f, struct rkdapl_lmr_triplet *t)
{
	t->lmr = fz_pick(f, K_LMR);
	t->offset = rnd(&f->rnd, 4) ? rnd(&f->rnd, BUFLEN) : fz_len(f);
	t->length = fz_len(f) % (BUFLEN + 2);
}

/*
 * rkdapl_post_send_sg() of up to two of @t's triplets and one of the pool's buffers (from a
 * random offset, at most to its page's end; sometimes no page, no length, a NULL list or one
 * entry more than the list has), with random flags.
 */
static void fz_send_sg(struct fz *f, struct rkdapl_lmr_triplet *t, u64 c)
{
	struct scatterlist *sg = &f->sg[f->nsg++ % FZ_SG];
	u8 *p = f->buf[rnd(&f->rnd, NBUF)] + rnd(&f->rnd, PAGE_SIZE);
	u32 len = rnd(&f->rnd, PAGE_SIZE - offset_in_page(p) + 1);
	u32 pick = rnd(&f->rnd, 10);

	sg_init_table(sg, 1);
	if (pick)
		sg_set_page(sg, virt_to_page(p), len, offset_in_page(p));
	else
		sg->length = len;
	fz_ret(f, "post_send_sg",
	       rkdapl_post_send_sg(fz_pick(f, K_EP), t, rnd(&f->rnd, 3), pick == 1 ? NULL : sg,
				   pick == 2 ? 2 : 1, c, rnd(&f->rnd, 4) ? 0 : rnd(&f->rnd, 16)));
}

/* An UNCONNECTED EP of the pool, if there is one (else any pick): what an accept wants. */
static void *fz_unconnected(struct fz *f)
{
	u32 st;
	int i;

	for (i = 0; i < NSLOT; i++) {
		void *ep = READ_ONCE(f->h[K_EP][i]);

		if (ep && !rkdapl_ep_get_state(ep, &st) && st == RKDAPL_EP_STATE_UNCONNECTED)
			return ep;
	}
	return fz_pick(f, K_EP);
}

static void fz_event(struct fz *f, struct rkdapl_evd *evd)
{
	struct rkdapl_event ev = {};
	int r = fz_ret(f, "evd_dequeue", rkdapl_evd_dequeue(evd, &ev));

	if (!r && ev.type < ARRAY_SIZE(f->ev))
		f->ev[ev.type]++;
	if (r || ev.type != RKDAPL_CONNECTION_REQUEST_EVENT || !ev.cr)
		return;
	if (rnd(&f->rnd, 3)) {
		void *ep = rnd(&f->rnd, 3) ? fz_unconnected(f) : fz_pick(f, K_EP);

		r = fz_ret(f, "cr_accept", rkdapl_cr_accept(ev.cr, ep, NULL, 0));
		if (!r)
			return;
	}
	fz_ret(f, "cr_reject", rkdapl_cr_reject(ev.cr, NULL, 0));
}

/*
 * A connection on purpose, so that the random calls find connected EPs: a client and a server
 * EP on one PZ and EVD of the pool, the client connecting to a pool PSP's port, the request
 * taken from that PSP's EVD and accepted; both EPs join the pool whatever happened.
 */
static void fz_connect_pair(struct fz *f)
{
	struct rkdapl_ep *c = NULL, *s = NULL;
	struct rkdapl_event ev = {};
	struct sockaddr_in dst = f->self;
	void *pz, *evd, *psp_evd = NULL;
	int i, r;

	mutex_lock(&f->lock);
	pz = f->h[K_PZ][rnd(&f->rnd, NSLOT)];
	evd = f->h[K_EVD][rnd(&f->rnd, NSLOT)];
	i = rnd(&f->rnd, NSLOT);
	mutex_unlock(&f->lock);
	if (!pz || !evd)
		return;
	r = fz_ret(f, "ep_create", rkdapl_ep_create(pz, evd, evd, NULL, &c));
	r = r ?: fz_ret(f, "ep_create", rkdapl_ep_create(pz, evd, evd, NULL, &s));
	/* the PSPs listen on pport or pport + 1; their EVD is not known here: try both EVDs */
	dst.sin_port = htons(f->pport + (i & 1));
	r = r ?: fz_ret(f, "ep_connect", rkdapl_ep_connect(c, (struct sockaddr *)&dst, 2000,
							   NULL, 0));
	for (i = 0; !r && i < NSLOT && !psp_evd; i++) {
		void *e = READ_ONCE(f->h[K_EVD][i]);
		unsigned long until = jiffies + msecs_to_jiffies(300);

		while (e && time_before(jiffies, until)) {
			if (!rkdapl_evd_dequeue(e, &ev)) {
				if (ev.type < ARRAY_SIZE(f->ev))
					f->ev[ev.type]++;
				if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT && ev.cr) {
					psp_evd = e;
					fz_ret(f, "cr_accept", rkdapl_cr_accept(ev.cr, s, NULL, 0));
					break;
				}
				continue;
			}
			usleep_range(1000, 2000);
			if (i)	/* only the first EVD gets the full wait */
				break;
		}
	}
	if (c)
		fz_put(f, K_EP, c, free_ep);
	if (s)
		fz_put(f, K_EP, s, free_ep);
}

static void fz_call(struct fz *f)
{
	struct rkdapl_lmr_triplet t[2];
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_event ev;
	struct sockaddr_in dst;
	u32 state, rkey;
	u64 addr, c = rnd(&f->rnd, 1000);
	void *h = NULL;
	int r;

	switch (rnd(&f->rnd, 30)) {
	case 0:
		r = fz_ret(f, "pz_create", rkdapl_pz_create(rnd(&f->rnd, 8) ? f->ia : f->foreign,
							   (struct rkdapl_pz **)&h));
		if (!r)
			fz_put(f, K_PZ, h, free_pz);
		break;
	case 1:
		r = fz_ret(f, "evd_create", rkdapl_evd_create(f->ia, rnd(&f->rnd, 4) ?
							      1 + rnd(&f->rnd, 64) : fz_len(f),
							      (struct rkdapl_evd **)&h));
		if (r)
			break;
		if (!rnd(&f->rnd, 3))
			fz_ret(f, "evd_modify_upcall",
			       rkdapl_evd_modify_upcall(h, 1 + rnd(&f->rnd, 2), fz_upcall, f));
		fz_put(f, K_EVD, h, free_evd);
		break;
	case 2:
		r = fz_ret(f, "lmr_create", rkdapl_lmr_create(fz_pick(f, K_PZ),
				f->buf[rnd(&f->rnd, NBUF)] + rnd(&f->rnd, PAGE_SIZE),
				rnd(&f->rnd, 5) ? 1 + rnd(&f->rnd, PAGE_SIZE) : fz_len(f),
				rnd(&f->rnd, 16), (struct rkdapl_lmr **)&h));
		if (!r)
			fz_put(f, K_LMR, h, free_lmr);
		break;
	case 3:
		r = fz_ret(f, "rmr_create", rkdapl_rmr_create(fz_pick(f, K_PZ),
							      (struct rkdapl_rmr **)&h));
		if (!r)
			fz_put(f, K_RMR, h, free_rmr);
		break;
	case 4: {
		struct rkdapl_ep_attr a = { .max_request_dtos = rnd(&f->rnd, 40),
					    .max_recv_dtos = rnd(&f->rnd, 40),
					    .max_request_iov = rnd(&f->rnd, 4),
					    .max_recv_iov = rnd(&f->rnd, 4) };

		r = fz_ret(f, "ep_create", rkdapl_ep_create(fz_pick(f, K_PZ), fz_pick(f, K_EVD),
							    fz_pick(f, K_EVD),
							    rnd(&f->rnd, 2) ? &a : NULL,
							    (struct rkdapl_ep **)&h));
		if (!r)
			fz_put(f, K_EP, h, free_ep);
		break;
	}
	case 5:
		r = fz_ret(f, "psp_create", rkdapl_psp_create(f->ia, f->pport + rnd(&f->rnd, 2),
							      1 + rnd(&f->rnd, 8), fz_pick(f, K_EVD),
							      (struct rkdapl_psp **)&h));
		if (!r)
			fz_put(f, K_PSP, h, free_psp);
		break;
	case 6: case 7:
		dst = f->self;
		dst.sin_port = htons(f->pport + rnd(&f->rnd, 3));
		fz_ret(f, "ep_connect", rkdapl_ep_connect(fz_pick(f, K_EP), (struct sockaddr *)&dst,
							  1 + rnd(&f->rnd, 3000), NULL, 0));
		break;
	case 29: {
		/* From this machine's address (any port, or a PSP's: in use), or from none. */
		struct sockaddr_in src = f->self;

		dst = f->self;
		dst.sin_port = htons(f->pport + rnd(&f->rnd, 3));
		src.sin_port = rnd(&f->rnd, 2) ? htons(f->pport) : 0;
		fz_ret(f, "ep_connect_from",
		       rkdapl_ep_connect_from(fz_pick(f, K_EP),
					      rnd(&f->rnd, 4) ? (struct sockaddr *)&src : NULL,
					      (struct sockaddr *)&dst, 1 + rnd(&f->rnd, 3000), NULL,
					      0));
		break;
	}
	case 8:
		fz_ret(f, "ep_disconnect", rkdapl_ep_disconnect(fz_pick(f, K_EP)));
		break;
	case 9:
		fz_ret(f, "ep_get_state", rkdapl_ep_get_state(fz_pick(f, K_EP), &state));
		break;
	case 10:
		fz_ret(f, "ep_reset", rkdapl_ep_reset(fz_pick(f, K_EP)));
		break;
	case 11: case 12: case 13: case 26: case 27:
		fz_event(f, fz_pick(f, K_EVD));
		break;
	case 28:
		fz_connect_pair(f);
		break;
	case 14:
		fz_ret(f, "evd_wait", rkdapl_evd_wait(fz_pick(f, K_EVD), rnd(&f->rnd, 20), &ev));
		break;
	case 15:
		fz_ret(f, "evd_modify_upcall",
		       rkdapl_evd_modify_upcall(fz_pick(f, K_EVD), rnd(&f->rnd, 4), fz_upcall, f));
		break;
	case 16:
		fz_triplet(f, t);
		r = fz_ret(f, "rmr_bind", rkdapl_rmr_bind(fz_pick(f, K_RMR), t[0].lmr, t[0].offset,
							  t[0].length, rnd(&f->rnd, 16),
							  fz_pick(f, K_EP), c, &rkey, &addr));
		break;
	case 17:
		fz_ret(f, "rmr_unbind", rkdapl_rmr_unbind(fz_pick(f, K_RMR), fz_pick(f, K_EP), c));
		break;
	case 18: case 19:
		fz_triplet(f, &t[0]);
		fz_triplet(f, &t[1]);
		fz_ret(f, "post", rkdapl_post_recv(fz_pick(f, K_EP), t, rnd(&f->rnd, 3), c,
						   rnd(&f->rnd, 4) ? 0 : rnd(&f->rnd, 64)));
		break;
	case 20:
		fz_triplet(f, &t[0]);
		fz_triplet(f, &t[1]);
		if (rnd(&f->rnd, 2)) {
			fz_send_sg(f, t, c);
			break;
		}
		fz_ret(f, "post", rkdapl_post_send(fz_pick(f, K_EP), t, rnd(&f->rnd, 3), c,
						   rnd(&f->rnd, 4) ? 0 : rnd(&f->rnd, 64)));
		break;
	case 21: case 22:
		fz_triplet(f, &t[0]);
		rt.rkey = prandom_u32_state(&f->rnd);
		rt.address = rnd(&f->rnd, 2) ? (u64)f->buf[0] : fz_len(f);
		rt.length = t[0].length;
		if (rnd(&f->rnd, 2))
			fz_ret(f, "post", rkdapl_post_rdma_write(fz_pick(f, K_EP), t, 1, &rt, c, 0));
		else
			fz_ret(f, "post", rkdapl_post_rdma_read(fz_pick(f, K_EP), t, 1, &rt, c, 0));
		break;
	default:
		/* the main thread frees too (the other thread does so all the time) */
		fz_free_one(f, &f->rnd, rnd(&f->rnd, K_N));
		break;
	}
}

/* ---- the run ------------------------------------------------------------------------------ */

static int fz_freer(void *arg)
{
	struct fz *f = arg;

	while (!READ_ONCE(f->stop) && !kthread_should_stop()) {
		fz_free_one(f, &f->rnd2, rnd(&f->rnd2, K_N));
		usleep_range(10000, 60000);
	}
	return 0;
}

int fuzz_run(void)
{
	struct task_struct *freer;
	struct fz *f = kzalloc(sizeof(*f), GFP_KERNEL);
	u64 s = seed ?: get_random_u64() ?: 1;
	char n[128];
	int r, i, k;

	if (!f)
		return tap(false, "fuzz: set-up", "out of memory") ? 0 : -ENOMEM;
	pr_info("rkdapl_test: # fuzz seed=%llu fuzz_ops=%u (replay: seed=%llu)\n", s, fuzz_ops, s);
	prandom_seed_state(&f->rnd, s);
	prandom_seed_state(&f->rnd2, s ^ 0x5deece66dull);
	mutex_init(&f->lock);
	f->pport = port;
	r = parse_peer(&f->self, port);
	for (i = 0; !r && i < NBUF; i++) {
		f->buf[i] = kzalloc(BUFLEN + PAGE_SIZE, GFP_KERNEL);
		if (!f->buf[i])
			r = -ENOMEM;
	}
	f->foreign = kzalloc(64, GFP_KERNEL);
	r = r ?: (f->foreign ? 0 : -ENOMEM);
	r = r ?: rkdapl_ia_open(dev, &f->ia);
	if (!tap(!r, "set-up (IA, buffers)", "%d %s", r, ename(r)))
		goto out;
	freer = kthread_run(fz_freer, f, "rkdapl_fuzz_free");
	if (IS_ERR(freer)) {
		tap(false, "the freeing thread", "%ld", PTR_ERR(freer));
		goto out;
	}
	for (i = 0; i < fuzz_ops; i++) {
		fz_call(f);
		if (i && !(i % 5000))
			pr_info("rkdapl_test: # fuzz: %d calls\n", i);
		cond_resched();
	}
	WRITE_ONCE(f->stop, true);
	kthread_stop(freer);
	pr_info("rkdapl_test: # fuzz seed=%llu: %llu calls, %llu returned 0, %llu frees; events: %llu DTO, %llu RMR bind, %llu requests, %llu established, %llu disconnected, %llu rejected or unreachable; %llu upcalls\n",
		s, f->calls, f->calls - f->errs, f->frees,
		f->ev[RKDAPL_DTO_COMPLETION_EVENT], f->ev[RKDAPL_RMR_BIND_COMPLETION_EVENT],
		f->ev[RKDAPL_CONNECTION_REQUEST_EVENT], f->ev[RKDAPL_CONNECTION_EVENT_ESTABLISHED],
		f->ev[RKDAPL_CONNECTION_EVENT_DISCONNECTED],
		f->ev[RKDAPL_CONNECTION_EVENT_PEER_REJECTED] +
		f->ev[RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED] +
		f->ev[RKDAPL_CONNECTION_EVENT_UNREACHABLE] + f->ev[RKDAPL_CONNECTION_EVENT_TIMED_OUT],
		f->upcalls);
	snprintf(n, sizeof(n), "seed %llu: %llu calls, every error a documented errno", s,
		 f->calls);
	tap(!f->bad, n, "%llu undocumented, the first: %s", f->bad, f->first_bad);
	snprintf(n, sizeof(n), "seed %llu: %llu upcalls, the calls an upcall must not make refused",
		 s, f->upcalls);
	tap(!f->refused_bad, n, "%llu not refused", f->refused_bad);
out:
	/* everything freed: EPs first (they use the EVDs and PZs), PZs last */
	for (k = 0; f->ia && k < K_N; k++) {
		static const enum kind order[K_N] = { K_EP, K_PSP, K_RMR, K_LMR, K_EVD, K_PZ };

		for (i = 0; i < NSLOT; i++) {
			void *h = f->h[order[k]][i];

			if (!h)
				continue;
			if (order[k] == K_EVD)
				rkdapl_evd_modify_upcall(h, RKDAPL_UPCALL_DISABLE, NULL, NULL);
			r = frees[order[k]](h);
			if (r)
				pr_info("rkdapl_test: # fuzz: %s at the end: %s\n", kname[order[k]],
					ename(r));
			f->h[order[k]][i] = NULL;
		}
	}
	if (f->ia) {
		r = rkdapl_ia_close(f->ia);
		tap(!r, "every object freed, the IA closed", "%d %s", r, ename(r));
	}
	for (i = 0; i < NBUF; i++)
		kfree(f->buf[i]);
	kfree(f->foreign);
	kfree(f);
	return 0;
}
