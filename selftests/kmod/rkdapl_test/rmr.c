// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: rmr_bind's errors, and what a grant allows. */
#include "rkdapl_test.h"

/* Posts an RDMA op of @len bytes of bufb on the client and returns its completion status. */
static int rdma_status(struct bctx *b, bool write, u64 len, struct rkdapl_rmr_triplet rt,
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
	snprintf(why, WHY, "completion status %d (%s), op %u, length %llu", ev.status,
		 stname(ev.status), ev.op, ev.transferred_length);
	return 0;
}

/* Frees b->rmr (bound or not) and creates it again. */
static int rmr_renew(struct bctx *b)
{
	int r = rkdapl_rmr_free(b->rmr);

	b->rmr = NULL;
	return r ?: rkdapl_rmr_create(b->pz, &b->rmr);
}

/*
 * rmr_bind's errors on a connected pair, grants over vmalloc and kmalloc memory, and what a
 * grant allows: data within it, nothing past its end, nothing after an unbind, and the first
 * error of a DTO split into work requests.
 */
void rmr_tests(struct bctx *b)
{
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_rmr *rmr_t = NULL;
	struct rkdapl_lmr *lmr_t = NULL;
	char why[WHY] = "";
	u32 rkey, maxiov = b->attr.max_iov, maxpg = b->attr.max_rmr_pages;
	u64 addr;
	s32 status;
	s64 bad;
	int r;

	/* --- rmr_bind --- */
#define BIND(rmr, lmr, off, len, priv) \
	rkdapl_rmr_bind(rmr, lmr, off, len, priv, b->s->ep, next_cookie(b->s), &rkey, &addr)
	expect(rkdapl_rmr_bind(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ, b->s->ep, 1,
			       NULL, &addr), -EINVAL, "rmr_bind(NULL rkey)");
	expect(rkdapl_rmr_bind(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ, b->s->ep, 1,
			       &rkey, NULL), -EINVAL, "rmr_bind(NULL address)");
	expect(BIND(b->rmr, b->lmr_a, 0, 0, RKDAPL_MEM_REMOTE_READ), -EINVAL,
	       "rmr_bind(length 0)");
	expect(BIND(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_LOCAL_WRITE),
	       -EINVAL, "rmr_bind(privileges include LOCAL_WRITE)");
	expect(BIND(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ | (1 << 5)), -EINVAL,
	       "rmr_bind(unknown privilege bit)");
	expect(BIND(b->rmr, b->lmr_a, 1, BUFSZ, RKDAPL_MEM_REMOTE_READ), -ERANGE,
	       "rmr_bind(range leaves the LMR)");
	expect(BIND(b->rmr, b->lmr_a, U64_MAX - 1, 4, RKDAPL_MEM_REMOTE_READ), -ERANGE,
	       "rmr_bind(offset + length overflows)");
	expect(BIND(b->rmr, b->lmr_lw, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EACCES,
	       "rmr_bind(remote read of an LMR without it)");
	expect(BIND(b->rmr, b->lmr_rd, 0, 4096, RKDAPL_MEM_REMOTE_WRITE), -EACCES,
	       "rmr_bind(remote write of an LMR without it)");
	expect(BIND(b->rmr, b->lmr_x, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EXDEV,
	       "rmr_bind(LMR of another PZ)");
	expect(BIND(b->rmr_x, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EXDEV,
	       "rmr_bind(RMR of another PZ)");
	if (b->lmr_sp) {
		char n[96];

		snprintf(n, sizeof(n), "rmr_bind(%u pages, max_rmr_pages %u)", maxpg + 1, maxpg);
		expect(BIND(b->rmr, b->lmr_sp, 0, (u64)(maxpg + 1) * PAGE_SIZE,
			    RKDAPL_MEM_REMOTE_WRITE), -E2BIG, n);
		r = grant(b, b->rmr, b->lmr_sp, 0, (u64)maxpg * PAGE_SIZE, RKDAPL_MEM_REMOTE_WRITE,
			  &rt, why);
		snprintf(n, sizeof(n), "rmr_bind(exactly max_rmr_pages = %u pages) and completion",
			 maxpg);
		tap(!r, n, "%s", why);
		if (!r) {
			r = ungrant(b, b->rmr, why);
			tap(!r, "rmr_unbind of it and completion", "%s", why);
		}
	} else {
		tap_skip("rmr_bind(max_rmr_pages + 1 pages) -> -E2BIG", "no sparse buffer");
	}

	/* --- grants over linear-map (kmalloc) memory --- */
	r = grant(b, b->rmr, b->lmr_k, 0, 4096, RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (tap(!r, "rmr_bind over kmalloc memory (4096 bytes) and completion", "%s", why)) {
		r = ungrant(b, b->rmr, why);
		tap(!r, "rmr_unbind of it and completion", "%s", why);
	}

	/* --- a grant (vmalloc memory): EBUSY, data within it, unbind --- */
	r = rkdapl_lmr_create(b->pz, b->bufa, BUFSZ, ALL_PRIV, &lmr_t);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &rmr_t);
	if (!r)
		r = grant(b, rmr_t, lmr_t, 0, 4096,
			  RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	else
		snprintf(why, WHY, "lmr/rmr_create = %d %s", r, ename(r));
	if (tap(!r, "rmr_bind(4096 bytes, read + write) and completion", "%s", why)) {
		expect(BIND(rmr_t, lmr_t, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EBUSY,
		       "rmr_bind(already bound RMR)");
		r = rkdapl_lmr_free(lmr_t);
		expect(r, -EBUSY, "lmr_free(LMR under a bound RMR)");
		if (!r)
			lmr_t = NULL;	/* freed after all: do not free it again below */
		/* Write 4096 bytes into the grant, read them back. */
		pat_fill(b->bufb, 0, 4096, 0x1111);
		pat_fill(b->bufa, 0, 4096 + GUARD, 0x2222);
		r = rdma_status(b, true, 4096, rt, &status, why);
		bad = pat_check(b->bufa, 0, 4096, 0x1111);
		if (bad < 0)
			bad = pat_check(b->bufa, 4096, GUARD, 0x2222);
		tap(!r && status == RKDAPL_DTO_SUCCESS && bad < 0,
		    "rdma_write of 4096 bytes within a grant lands", "%s, bad byte %lld", why, bad);
		pat_fill(b->bufa, 0, 4096, 0x3333);
		r = rdma_status(b, false, 4096, rt, &status, why);
		bad = pat_check(b->bufb, 0, 4096, 0x3333);
		tap(!r && status == RKDAPL_DTO_SUCCESS && bad < 0,
		    "rdma_read of 4096 bytes within a grant", "%s, bad byte %lld", why, bad);
		r = ungrant(b, rmr_t, why);
		tap(!r, "rmr_unbind and completion", "%s", why);
		expect(rkdapl_rmr_unbind(rmr_t, b->s->ep, next_cookie(b->s)), -EINVAL,
		       "rmr_unbind(unbound RMR)");
		if (lmr_t) {
			expect(rkdapl_lmr_free(lmr_t), 0, "lmr_free(LMR after its RMR was unbound)");
			lmr_t = NULL;
		} else {
			tap_skip("lmr_free(LMR after its RMR was unbound) -> 0",
				 "the LMR was freed while bound (see the -EBUSY test)");
		}
	}

	/* --- a read-only grant refuses a write (breaks the connection) --- */
	r = grant(b, b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (tap(!r, "rmr_bind(4096 bytes, read only) and completion", "%s", why)) {
		r = rdma_status(b, false, 64, rt, &status, why);
		tap(!r && status == RKDAPL_DTO_SUCCESS, "rdma_read of a read-only grant", "%s", why);
		r = rdma_status(b, true, 64, rt, &status, why);
		tap(!r && write_refused(b, status, false, why),
		    is_iwarp(&b->attr) ?
		    "iWARP: rdma_write to a read-only grant -> SUCCESS or LOCAL_EP_ERROR, the peer's TERMINATE breaks the connection" :
		    "rdma_write to a read-only grant -> REMOTE_ACCESS_ERROR", "%s", why);
	}
	pair_close(b);
	/* The RMR's grant went with the connection's QP; unbinding needs a connection now. */
	r = rmr_renew(b);
	tap(!r, "rmr_free of a bound RMR, rmr_create again", "%d %s", r, ename(r));

	/* --- a grant is bounded: a write past its end fails --- */
	r = pair_connect(b, why);
	if (!r)
		r = grant(b, b->rmr, b->lmr_a, 0, 4096,
			  RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (tap(!r && b->rmr, "new connection and a 4096-byte grant", "%s", why)) {
		r = rdma_status(b, true, 8192, rt, &status, why);
		tap(!r && write_refused(b, status, false, why),
		    is_iwarp(&b->attr) ?
		    "iWARP: rdma_write of 8192 bytes to a 4096-byte grant -> SUCCESS or LOCAL_EP_ERROR, the connection breaks" :
		    "rdma_write of 8192 bytes to a 4096-byte grant -> REMOTE_ACCESS_ERROR", "%s",
		    why);
	}
	pair_close(b);
	r = rmr_renew(b);

	/*
	 * --- a DTO split into work requests reports the first one's error ---
	 * A write from 2 x max_iov pages that never meet (so no two SGEs merge) takes two work
	 * requests; rkdapl signals only the second. The first overruns a 4096-byte grant: its
	 * error completion must set the DTO's status, not the flush of the second after it.
	 */
	if (!r) {
		u32 npages = 2 * maxiov;
		struct sparse big = {};
		struct rkdapl_lmr *lmr_big = NULL;

		r = sparse_alloc(&big, npages);
		if (!r)
			r = rkdapl_lmr_create(b->pz, big.addr, (u64)npages * PAGE_SIZE,
					      RKDAPL_MEM_LOCAL_WRITE, &lmr_big);
		if (!r)
			r = pair_connect(b, why);
		else
			snprintf(why, WHY, "LMR of %u sparse pages: %d %s", npages, r, ename(r));
		if (!r)
			r = grant(b, b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
		if (tap(!r, "new connection, a 4096-byte grant, an LMR of 2 x max_iov sparse pages",
			"%s", why)) {
			struct rkdapl_lmr_triplet t = { lmr_big, 0, (u64)npages * PAGE_SIZE };
			struct rkdapl_event ev = {};
			u64 c = next_cookie(b->c);

			rt.length = t.length;
			r = rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
			if (r)
				snprintf(why, WHY, "post_rdma_write = %d %s", r, ename(r));
			else
				r = wait_cookie(b->c, c, &ev);
			if (!r)
				snprintf(why, WHY, "completion status %d (%s), op %u", ev.status,
					 stname(ev.status), ev.op);
			tap(!r && write_refused(b, ev.status, true, why),
			    is_iwarp(&b->attr) ?
			    "iWARP: rdma_write split into 2 work requests, partly outside the grant -> SUCCESS, LOCAL_EP_ERROR or FLUSHED, the connection breaks, one event" :
			    "rdma_write split into 2 work requests, the first outside the grant -> REMOTE_ACCESS_ERROR (not FLUSHED), one event",
			    "%s", why);
			/* one event per DTO: nothing more for that cookie (flushed RECVs may come) */
			if (!r) {
				int dup = 0;

				msleep(50);
				while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
					dup += ev.cookie == c;
				tap(!dup, "... and no second event for it", "%d more", dup);
			} else {
				tap_skip("... and no second event for it", "no first event");
			}
		}
		pair_close(b);
		if (lmr_big)
			expect(rkdapl_lmr_free(lmr_big), 0, "lmr_free(the split write's LMR)");
		sparse_free(&big);
		r = rmr_renew(b);
	}

	/* --- a revoked grant fails --- */
	r = r ?: pair_connect(b, why);
	if (!r)
		r = grant(b, b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!r)
		r = ungrant(b, b->rmr, why);
	if (tap(!r, "new connection, a grant, unbound again", "%s", why)) {
		r = rdma_status(b, true, 64, rt, &status, why);
		tap(!r && write_refused(b, status, false, why),
		    is_iwarp(&b->attr) ?
		    "iWARP: rdma_write with the rkey of an unbound RMR -> SUCCESS or LOCAL_EP_ERROR, the connection breaks" :
		    "rdma_write with the rkey of an unbound RMR -> REMOTE_ACCESS_ERROR", "%s", why);
	}
	pair_close(b);
	if (rmr_t)
		rkdapl_rmr_free(rmr_t);
	if (lmr_t)
		rkdapl_lmr_free(lmr_t);
#undef BIND
}
