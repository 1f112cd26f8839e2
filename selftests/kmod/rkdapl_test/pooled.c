// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: pooled RMRs (rkdapl_ep_pooled_rmr_bind/unbind) on a connected pair. */
#include "rkdapl_test.h"

#define POOLED 4

/* One client RDMA WRITE (or READ) of @len bytes of bufb to @rt: its completion status. */
static int pooled_rdma(struct bctx *b, bool write, u64 len, struct rkdapl_rmr_triplet rt,
		       s32 *status, char *why)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, len };
	struct rkdapl_event ev = {};
	u64 c = next_cookie(b->c);
	int r;

	rt.length = len;
	r = write ? rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0) :
		    rkdapl_post_rdma_read(b->c->ep, &t, 1, &rt, c, 0);
	if (r) {
		snprintf(why, WHY, "post_rdma_%s = %d %s", write ? "write" : "read", r, ename(r));
		return r;
	}
	r = wait_cookie(b->c, c, &ev);
	if (r) {
		snprintf(why, WHY, "no completion: %d %s", r, ename(r));
		return r;
	}
	*status = ev.status;
	snprintf(why, WHY, "completion status %d (%s)", ev.status, stname(ev.status));
	return 0;
}

/*
 * A grant of [@off, @off + 4096) of lmr_a from the server EP's pool, bound under a spinlock
 * with interrupts off (CONFIG_DEBUG_ATOMIC_SLEEP splats on a sleep in it), and its completion.
 */
static int pooled_grant(struct bctx *b, u64 off, struct rkdapl_rmr_triplet *rt, char *why)
{
	static DEFINE_SPINLOCK(lock);
	unsigned long flags;
	u64 c = next_cookie(b->s);
	int r;

	memset(rt, 0, sizeof(*rt));
	spin_lock_irqsave(&lock, flags);
	r = rkdapl_ep_pooled_rmr_bind(b->s->ep, b->lmr_a, off, 4096,
				      RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, c,
				      &rt->rkey, &rt->address);
	spin_unlock_irqrestore(&lock, flags);
	if (r) {
		snprintf(why, WHY, "ep_pooled_rmr_bind = %d %s", r, ename(r));
		return r;
	}
	rt->length = 4096;
	return dto_expect(b->s, c, RKDAPL_DTO_RMR_BIND, -1, why);
}

static int pooled_ungrant(struct bctx *b, u32 rkey, char *why)
{
	u64 c = next_cookie(b->s);
	int r = rkdapl_ep_pooled_rmr_unbind(b->s->ep, rkey, c);

	if (r) {
		snprintf(why, WHY, "ep_pooled_rmr_unbind = %d %s", r, ename(r));
		return r;
	}
	return dto_expect(b->s, c, RKDAPL_DTO_RMR_UNBIND, -1, why);
}

void pooled_rmr_tests(struct bctx *b)
{
	struct rkdapl_ep_attr plain = { .max_request_iov = 256 };
	struct rkdapl_ep_attr pooled = { .max_request_iov = 256, .max_pooled_rmrs = POOLED };
	struct rkdapl_ep_attr big = { .max_pooled_rmrs = 4097 };
	struct rkdapl_rmr_triplet rt[POOLED], extra;
	struct rkdapl_ep *ep = NULL;
	char why[WHY] = "";
	u32 rkey, n = 0;
	u64 addr;
	s64 bad;
	s32 status;
	int r, i;

	expect(rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, &big, &ep), -EINVAL,
	       "ep_create(max_pooled_rmrs 4097)");
	if (ep)
		rkdapl_ep_free(ep);
	expect(rkdapl_ep_pooled_rmr_bind(NULL, b->lmr_a, 0, 64, RKDAPL_MEM_REMOTE_READ, 1, &rkey,
					 &addr), -EINVAL, "ep_pooled_rmr_bind(NULL ep)");
	expect(rkdapl_ep_pooled_rmr_unbind(NULL, 1, 1), -EINVAL, "ep_pooled_rmr_unbind(NULL ep)");

	r = pair_connect_attr(b, &plain, &pooled, why);
	if (!tap(!r, "a pair whose server EP has a pool of 4 RMRs", "%s", why)) {
		pair_close(b);
		return;
	}
#define PBIND(ep, lmr, off, len, priv) \
	rkdapl_ep_pooled_rmr_bind(ep, lmr, off, len, priv, next_cookie(b->s), &rkey, &addr)
	expect(rkdapl_ep_pooled_rmr_bind(b->s->ep, b->lmr_a, 0, 64, RKDAPL_MEM_REMOTE_READ, 1,
					 NULL, &addr), -EINVAL, "ep_pooled_rmr_bind(NULL rkey)");
	expect(rkdapl_ep_pooled_rmr_bind(b->s->ep, b->lmr_a, 0, 64, RKDAPL_MEM_REMOTE_READ, 1,
					 &rkey, NULL), -EINVAL, "ep_pooled_rmr_bind(NULL address)");
	expect(PBIND(b->s->ep, NULL, 0, 64, RKDAPL_MEM_REMOTE_READ), -EINVAL,
	       "ep_pooled_rmr_bind(NULL lmr)");
	expect(PBIND(b->s->ep, b->lmr_a, 0, 0, RKDAPL_MEM_REMOTE_READ), -EINVAL,
	       "ep_pooled_rmr_bind(length 0)");
	expect(PBIND(b->s->ep, b->lmr_a, 0, 64, RKDAPL_MEM_LOCAL_WRITE), -EINVAL,
	       "ep_pooled_rmr_bind(LOCAL_WRITE)");
	expect(PBIND(b->s->ep, b->lmr_a, 1, BUFSZ, RKDAPL_MEM_REMOTE_READ), -ERANGE,
	       "ep_pooled_rmr_bind(range leaves the LMR)");
	expect(PBIND(b->s->ep, b->lmr_lw, 0, 64, RKDAPL_MEM_REMOTE_READ), -EACCES,
	       "ep_pooled_rmr_bind(remote read of an LMR without it)");
	expect(PBIND(b->s->ep, b->lmr_x, 0, 64, RKDAPL_MEM_REMOTE_READ), -EXDEV,
	       "ep_pooled_rmr_bind(LMR of another PZ)");
	expect(PBIND(b->c->ep, b->lmr_a, 0, 64, RKDAPL_MEM_REMOTE_READ), -ENOTCONN,
	       "ep_pooled_rmr_bind(EP created without pooled RMRs)");
	expect(rkdapl_ep_pooled_rmr_unbind(b->s->ep, 0, 1), -EINVAL,
	       "ep_pooled_rmr_unbind(rkey of no pooled grant)");

	/* Every pooled RMR bound (interrupts off), the next bind is refused with -EAGAIN. */
	for (i = 0; i < POOLED; i++) {
		r = pooled_grant(b, (u64)i * 4096, &rt[i], why);
		if (r)
			break;
		n++;
	}
	tap(n == POOLED, "ep_pooled_rmr_bind x 4 with interrupts off (the whole pool), completions",
	    "%u bound: %s", n, why);
	if (n == POOLED)
		expect(PBIND(b->s->ep, b->lmr_a, 0, 64, RKDAPL_MEM_REMOTE_READ), -EAGAIN,
		       "ep_pooled_rmr_bind(pool empty)");

	/* Bytes across a pooled grant: a WRITE lands within it, a READ brings it back. */
	if (n) {
		pat_fill(b->bufb, 0, 4096, 0x4444);
		pat_fill(b->bufa, 0, 4096 + GUARD, 0x5555);
		r = pooled_rdma(b, true, 4096, rt[0], &status, why);
		bad = pat_check(b->bufa, 0, 4096, 0x4444);
		if (bad < 0)
			bad = pat_check(b->bufa, 4096, GUARD, 0x5555);
		tap(!r && status == RKDAPL_DTO_SUCCESS && bad < 0,
		    "rdma_write of 4096 bytes through a pooled grant lands, nothing past it",
		    "%s, bad byte %lld", why, bad);
		pat_fill(b->bufa, 0, 4096, 0x6666);
		r = pooled_rdma(b, false, 4096, rt[0], &status, why);
		bad = pat_check(b->bufb, 0, 4096, 0x6666);
		tap(!r && status == RKDAPL_DTO_SUCCESS && bad < 0,
		    "rdma_read of 4096 bytes through a pooled grant", "%s, bad byte %lld", why, bad);
	}

	/* Every grant given back, and the pool reused. */
	for (i = 0, r = 0; i < (int)n && !r; i++)
		r = pooled_ungrant(b, rt[i].rkey, why);
	tap(n && !r, "ep_pooled_rmr_unbind of every pooled grant, completions", "%s", why);
	if (n)
		expect(rkdapl_ep_pooled_rmr_unbind(b->s->ep, rt[0].rkey, 1), -EINVAL,
		       "ep_pooled_rmr_unbind(a grant already unbound)");
	r = pooled_grant(b, 0, &extra, why);
	tap(!r && extra.rkey != rt[0].rkey, "ep_pooled_rmr_bind after the unbinds (fresh rkey)",
	    "%s; rkey %#x, first %#x", why, extra.rkey, n ? rt[0].rkey : 0);
	/* The grant left bound ends with the connection; the LMR is free-able then. */
	pair_close(b);
	expect(rkdapl_ep_pooled_rmr_bind(NULL, b->lmr_a, 0, 64, RKDAPL_MEM_REMOTE_READ, 1, &rkey,
					 &addr), -EINVAL, "ep_pooled_rmr_bind(NULL ep) after close");
#undef PBIND
}
