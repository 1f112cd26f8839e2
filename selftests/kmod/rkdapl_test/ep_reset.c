// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test role=reset: EP reuse (rkdapl_ep_reset(), DAT's dat_ep_reset()) on loopback
 * connections, and the small connected set-up it shares with role=ports (port_events.c).
 *
 * One client EP and one server EP go through several rounds of connect (the client through
 * the PSP, the server by accepting the CR), an RMR grant, an RDMA WRITE and an RDMA READ of
 * verified bytes, a disconnect and a reset of both EPs; before them the client's connect to a
 * port nobody listens on fails (PEER_REJECTED) and the reset makes it usable again. The
 * refusals: a reset of an UNCONNECTED and of a CONNECTED EP (-EINVAL, EP unchanged) and of a
 * DISCONNECTED EP whose flushed RECVs have not all been reported yet (-EBUSY: their events
 * are held in an upcall), which succeeds once they are.
 */
#include "rkdapl_test.h"

#define XLEN (8 * 1024)

/* Opens the IA, PZ, EVDs, the two buffers with their LMRs and the PSP on @psp_port. */
int xpair_setup(struct bctx *b, u16 psp_port, char *why)
{
	int r;

	b->c = kzalloc_obj(*b->c, GFP_KERNEL);
	b->s = kzalloc_obj(*b->s, GFP_KERNEL);
	b->bufa = vzalloc(BUFSZ);
	b->bufb = kzalloc(BUFSZ, GFP_KERNEL);
	if (!b->c || !b->s || !b->bufa || !b->bufb) {
		snprintf(why, WHY, "out of memory");
		return -ENOMEM;
	}
	b->c->who = "client";
	b->s->who = "server";
	b->self.sin_family = AF_INET;
	b->self.sin_port = htons(psp_port);
	if (!in4_pton(peer, -1, (u8 *)&b->self.sin_addr, -1, NULL)) {
		snprintf(why, WHY, "bad peer= '%s'", peer);
		return -EINVAL;
	}
	r = rkdapl_ia_open(dev, &b->ia);
	r = r ?: rkdapl_ia_query(b->ia, &b->attr);
	r = r ?: rkdapl_pz_create(b->ia, &b->pz);
	r = r ?: rkdapl_evd_create(b->ia, 64, &b->psp_evd);
	r = r ?: rkdapl_evd_create(b->ia, 256, &b->c->dto_evd);
	r = r ?: rkdapl_evd_create(b->ia, 64, &b->c->conn_evd);
	r = r ?: rkdapl_evd_create(b->ia, 256, &b->s->dto_evd);
	r = r ?: rkdapl_evd_create(b->ia, 64, &b->s->conn_evd);
	r = r ?: rkdapl_lmr_create(b->pz, b->bufa, BUFSZ, ALL_PRIV, &b->lmr_a);
	r = r ?: rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &b->lmr_b);
	r = r ?: rkdapl_psp_create(b->ia, psp_port, 8, b->psp_evd, &b->psp);
	if (r)
		snprintf(why, WHY, "set-up: %d %s", r, ename(r));
	return r;
}

void xpair_teardown(struct bctx *b)
{
#define F(call, h) do { if (h) call(h); h = NULL; } while (0)
	if (b->c && b->s)
		pair_close(b);
	F(rkdapl_psp_free, b->psp);
	F(rkdapl_rmr_free, b->rmr);
	F(rkdapl_lmr_free, b->lmr_a);
	F(rkdapl_lmr_free, b->lmr_b);
	if (b->c) {
		F(rkdapl_evd_free, b->c->dto_evd);
		F(rkdapl_evd_free, b->c->conn_evd);
	}
	if (b->s) {
		F(rkdapl_evd_free, b->s->dto_evd);
		F(rkdapl_evd_free, b->s->conn_evd);
	}
	F(rkdapl_evd_free, b->psp_evd);
	F(rkdapl_pz_free, b->pz);
	F(rkdapl_ia_close, b->ia);
#undef F
	vfree(b->bufa);
	kfree(b->bufb);
	kfree(b->c);
	kfree(b->s);
	b->c = b->s = NULL;
	b->bufa = b->bufb = NULL;
}

/* Connects the existing EPs b->c and b->s through the PSP (b->self). */
int xpair_connect(struct bctx *b, char *why)
{
	struct rkdapl_event ev = {};
	int r;

	r = rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&b->self, 5000, NULL, 0);
	if (r) {
		snprintf(why, WHY, "ep_connect = %d %s", r, ename(r));
		return r;
	}
	r = conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (r) {
		snprintf(why, WHY, "no connection request: %s, event %u (%s)", ename(r), ev.type,
			 evname(ev.type));
		return r;
	}
	r = rkdapl_cr_accept(ev.cr, b->s->ep, NULL, 0);
	if (r) {
		snprintf(why, WHY, "cr_accept = %d %s", r, ename(r));
		return r;
	}
	r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
			timeout_ms, &ev);
	r = r ?: conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
			     timeout_ms, &ev);
	if (r)
		snprintf(why, WHY, "not established: %s, event %u (%s) status %d", ename(r),
			 ev.type, evname(ev.type), ev.status);
	return r;
}

/*
 * On a connected pair: a fresh RMR grants bufa to the client, which RDMA-WRITEs XLEN bytes of
 * pattern @seed into it (checked in bufa) and RDMA-READs them back into bufb (checked there).
 */
int xpair_verify(struct bctx *b, u32 seed, char *why)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, XLEN };
	struct rkdapl_rmr_triplet rt;
	s64 bad;
	u64 c;
	int r;

	if (b->rmr)
		rkdapl_rmr_free(b->rmr);
	b->rmr = NULL;
	r = rkdapl_rmr_create(b->pz, &b->rmr);
	r = r ?: grant(b, b->rmr, b->lmr_a, 0, XLEN, RKDAPL_MEM_REMOTE_WRITE |
		       RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (r)
		return r;
	pat_fill(b->bufb, 0, XLEN, seed);
	memset(b->bufa, 0, XLEN);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, XLEN);
	c = next_cookie(b->c);
	r = rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
	if (r) {
		snprintf(why, WHY, "post_rdma_write = %d %s", r, ename(r));
		return r;
	}
	r = dto_expect(b->c, c, RKDAPL_DTO_RDMA_WRITE, XLEN, why);
	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, XLEN);
	bad = pat_check(b->bufa, 0, XLEN, seed);
	if (bad >= 0) {
		snprintf(why, WHY, "RDMA WRITE: byte %lld of %d differs", bad, XLEN);
		return -EIO;
	}
	memset(b->bufb, 0, XLEN);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, XLEN);
	c = next_cookie(b->c);
	r = rkdapl_post_rdma_read(b->c->ep, &t, 1, &rt, c, 0);
	if (r) {
		snprintf(why, WHY, "post_rdma_read = %d %s", r, ename(r));
		return r;
	}
	r = dto_expect(b->c, c, RKDAPL_DTO_RDMA_READ, XLEN, why);
	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, XLEN);
	bad = pat_check(b->bufb, 0, XLEN, seed);
	if (bad >= 0) {
		snprintf(why, WHY, "RDMA READ: byte %lld of %d differs", bad, XLEN);
		return -EIO;
	}
	return 0;
}

/* The client disconnects; both EPs report DISCONNECTED. */
int xpair_disconnect(struct bctx *b, char *why)
{
	struct rkdapl_event ev = {};
	int r = rkdapl_ep_disconnect(b->c->ep);

	if (r) {
		snprintf(why, WHY, "ep_disconnect = %d %s", r, ename(r));
		return r;
	}
	r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
			timeout_ms, &ev);
	r = r ?: conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
			     timeout_ms, &ev);
	if (r)
		snprintf(why, WHY, "no DISCONNECTED: %s, event %u (%s)", ename(r), ev.type,
			 evname(ev.type));
	return r;
}

static u32 ep_state(struct rkdapl_ep *ep)
{
	u32 st = ~0u;

	rkdapl_ep_get_state(ep, &st);
	return st;
}

/* -EBUSY: the flushed RECVs of a disconnected EP are held in the DTO EVD's upcall. */
static atomic_t held_events;
static bool hold_upcall_on;

static void hold_upcall(void *ctx, const struct rkdapl_event *ev)
{
	int i;

	/* Test only: sleeps in the completion work to keep the next completions back. */
	for (i = 0; i < 400 && READ_ONCE(hold_upcall_on); i++)
		msleep(50);
	atomic_inc(&held_events);
}

static void reset_busy_test(struct bctx *b)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, 64 };
	struct rkdapl_evd *hold = NULL;
	struct rkdapl_ep *keep_c = b->c->ep;
	struct rkdapl_evd *keep_dto = b->c->dto_evd;
	char why[WHY] = "";
	int r, i, busy;

	r = rkdapl_evd_create(b->ia, 16, &hold);
	r = r ?: rkdapl_evd_modify_upcall(hold, RKDAPL_UPCALL_MANY, hold_upcall, NULL);
	b->c->ep = NULL;
	r = r ?: rkdapl_ep_create(b->pz, hold, b->c->conn_evd, NULL, &b->c->ep);
	/* the connect helpers use c->dto_evd only for DTOs; none are waited for here */
	b->c->dto_evd = hold;
	r = r ?: xpair_connect(b, why);
	for (i = 0; !r && i < 4; i++)
		r = rkdapl_post_recv(b->c->ep, &t, 1, 0xb0 + i, 0);
	if (!tap(!r, "a pair with 4 RECVs posted on the client, its DTO EVD's upcall holding events",
		 "%d %s %s", r, ename(r), why))
		goto out;
	atomic_set(&held_events, 0);
	WRITE_ONCE(hold_upcall_on, true);
	/* The server disconnects: the client's RECVs flush; the first flush's event waits. */
	r = rkdapl_ep_disconnect(b->s->ep);
	{
		struct rkdapl_event ev = {};

		r = r ?: conn_expect(b->c->conn_evd, b->c->ep,
				     RKDAPL_CONNECTION_EVENT_DISCONNECTED, timeout_ms, &ev);
	}
	busy = rkdapl_ep_reset(b->c->ep);
	tap(!r && busy == -EBUSY && ep_state(b->c->ep) == RKDAPL_EP_STATE_DISCONNECTED,
	    "refused with -EBUSY while flushed RECVs of the old connection are not all reported; EP stays DISCONNECTED",
	    "disconnect %d %s, reset = %d %s, %d of 4 RECV events delivered, state %u", r,
	    ename(r), busy, ename(busy), atomic_read(&held_events), ep_state(b->c->ep));
	WRITE_ONCE(hold_upcall_on, false);
	for (i = 0; i < 200 && atomic_read(&held_events) < 4; i++)
		msleep(50);
	r = rkdapl_ep_reset(b->c->ep);
	tap(atomic_read(&held_events) == 4 && !r &&
	    ep_state(b->c->ep) == RKDAPL_EP_STATE_UNCONNECTED,
	    "once the 4 flushed RECVs were reported, the reset succeeds (UNCONNECTED)",
	    "%d of 4 events, reset = %d %s, state %u", atomic_read(&held_events), r, ename(r),
	    ep_state(b->c->ep));
	{
		struct rkdapl_event ev = {};

		conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
			    timeout_ms, &ev);
	}
	r = rkdapl_ep_reset(b->s->ep);
	r = r ?: xpair_connect(b, why);
	tap(!r, "that EP connects again", "%d %s %s", r, ename(r), why);
out:
	WRITE_ONCE(hold_upcall_on, false);
	if (b->c->ep)
		rkdapl_ep_free(b->c->ep);
	b->c->ep = keep_c;
	b->c->dto_evd = keep_dto;
	if (hold) {
		rkdapl_evd_modify_upcall(hold, RKDAPL_UPCALL_DISABLE, NULL, NULL);
		rkdapl_evd_free(hold);
	}
}

int reset_run(void)
{
	struct bctx *b = kzalloc_obj(*b, GFP_KERNEL);
	struct sockaddr_in nobody;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	int r, round, rc, rs;

	if (!b)
		return tap(false, "set-up", "out of memory");
	r = xpair_setup(b, port, why);
	r = r ?: rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &b->c->ep);
	r = r ?: rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &b->s->ep);
	if (!tap(!r, "set-up (IA, PZ, EVDs, LMRs, PSP, two EPs)", "%s", why))
		goto out;

	expect(rkdapl_ep_reset(NULL), -EINVAL, "ep_reset(NULL)");
	expect(rkdapl_ep_reset((struct rkdapl_ep *)b->pz), -EINVAL, "ep_reset(PZ handle)");
	r = rkdapl_ep_reset(b->c->ep);
	tap(r == -EINVAL && ep_state(b->c->ep) == RKDAPL_EP_STATE_UNCONNECTED,
	    "refused with -EINVAL on an UNCONNECTED EP", "%d %s, state %u", r, ename(r),
	    ep_state(b->c->ep));

	/* A failed connect: nobody listens on port+7. */
	nobody = b->self;
	nobody.sin_port = htons(port + 7);
	r = rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&nobody, 5000, NULL, 0);
	r = r ?: conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_PEER_REJECTED,
			     timeout_ms, &ev);
	tap(!r && ep_state(b->c->ep) == RKDAPL_EP_STATE_DISCONNECTED,
	    "a connect to a port nobody listens on: PEER_REJECTED, DISCONNECTED",
	    "%d %s, event %u (%s) status %d", r, ename(r), ev.type, evname(ev.type), ev.status);
	r = rkdapl_ep_reset(b->c->ep);
	tap(!r && ep_state(b->c->ep) == RKDAPL_EP_STATE_UNCONNECTED,
	    "after PEER_REJECTED the EP is reset to UNCONNECTED", "%d %s, state %u", r,
	    ename(r), ep_state(b->c->ep));

	for (round = 1; round <= 3; round++) {
		r = xpair_connect(b, why);
		if (!tap(!r, round == 1 ? "round 1: the reset EP connects (ESTABLISHED on both EPs)" :
			 round == 2 ? "round 2: both reset EPs connect again" :
			 "round 3: both reset EPs connect again",
			 "%s", why))
			goto out;
		if (round == 1) {
			rc = rkdapl_ep_reset(b->c->ep);
			rs = rkdapl_ep_reset(b->s->ep);
			tap(rc == -EINVAL && rs == -EINVAL &&
			    ep_state(b->c->ep) == RKDAPL_EP_STATE_CONNECTED &&
			    ep_state(b->s->ep) == RKDAPL_EP_STATE_CONNECTED,
			    "refused with -EINVAL on CONNECTED EPs (both sides), which stay CONNECTED",
			    "client %d %s, server %d %s", rc, ename(rc), rs, ename(rs));
		}
		r = xpair_verify(b, 0x5e70 + round, why);
		if (!tap(!r, round == 1 ? "round 1: RDMA WRITE and READ of 8 KiB verified" :
			 round == 2 ? "round 2: RDMA WRITE and READ of 8 KiB verified" :
			 "round 3: RDMA WRITE and READ of 8 KiB verified", "%s", why))
			goto out;
		r = xpair_disconnect(b, why);
		evd_drain(b->c->dto_evd);
		evd_drain(b->s->dto_evd);
		rc = r ?: rkdapl_ep_reset(b->c->ep);
		rs = r ?: rkdapl_ep_reset(b->s->ep);
		if (!tap(!r && !rc && !rs && ep_state(b->c->ep) == RKDAPL_EP_STATE_UNCONNECTED &&
			 ep_state(b->s->ep) == RKDAPL_EP_STATE_UNCONNECTED,
			 round == 1 ? "round 1: disconnected, both EPs reset to UNCONNECTED" :
			 round == 2 ? "round 2: disconnected, both EPs reset to UNCONNECTED" :
			 "round 3: disconnected, both EPs reset to UNCONNECTED",
			 "%s; reset client %d %s, server %d %s", why, rc, ename(rc), rs, ename(rs)))
			goto out;
	}
	reset_busy_test(b);
out:
	xpair_teardown(b);
	kfree(b);
	return 0;
}
