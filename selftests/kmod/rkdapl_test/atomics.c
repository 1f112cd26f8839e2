// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test badarg: atomics (rkdapl_post_fetch_add(), rkdapl_post_cmp_swap()) over the
 * loopback pair's IA.
 *
 *   - ATOM_EPS client EPs, each in its own kthread, fetch-and-add 1 ATOM_ADDS times into one
 *     word of the server's memory: the final value is exactly ATOM_EPS * ATOM_ADDS and the
 *     values returned are each number below it exactly once;
 *   - two client EPs take a compare-and-swap lock word in turn, ATOM_LOCKS acquisitions in all;
 *     under the lock each READs a shared counter, adds one and WRITEs it back: the counter
 *     ends at ATOM_LOCKS only if no two held the lock at once;
 *   - refusals: an unaligned address, a local segment of other than 8 bytes and an LMR without
 *     local write at the post call; a grant without the atomic right and a word outside the
 *     grant at the peer (REMOTE_ACCESS_ERROR), each with the target word unchanged;
 *   - on a device without atomics (siw) both calls are refused with -EOPNOTSUPP.
 */
#include "rkdapl_test.h"

#define ATOM_EPS 4
#define ATOM_ADDS 64
#define ATOM_LOCKS 1000
/* The bytes of the server's page the grant covers: the word past it is outside. */
#define ATOM_GRANT (PAGE_SIZE / 2)
#define ATOM_PRIV (RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE | \
		   RKDAPL_MEM_REMOTE_ATOMIC)

/* One extra client EP of the pair's IA, connected to the pair's PSP, with its own EVDs. */
struct aclient {
	struct side s;			/* only who, ep, dto_evd and stash are used */
	struct rkdapl_evd *conn_evd;
	struct rkdapl_ep *server_ep;
	u64 *res;			/* ATOM_ADDS results, in @res_lmr */
	struct rkdapl_lmr *res_lmr;
	/* the kthread's work */
	struct bctx *b;
	struct rkdapl_rmr_triplet word;	/* the counter or the lock word */
	struct rkdapl_rmr_triplet shared;	/* the lock test's counter */
	u64 id;
	int n, err;
	char why[WHY];
	struct completion done;
};

static int ac_open(struct bctx *b, struct aclient *a, int i, char *why)
{
	struct rkdapl_event ev = {};
	int r;

	a->b = b;
	a->s.who = "atomic client";
	a->s.ep = NULL;
	init_completion(&a->done);
	a->res = kzalloc(ATOM_ADDS * sizeof(u64), GFP_KERNEL);
	if (!a->res)
		return -ENOMEM;
	r = rkdapl_lmr_create(b->pz, a->res, ATOM_ADDS * sizeof(u64), RKDAPL_MEM_LOCAL_WRITE,
			      &a->res_lmr);
	r = r ?: rkdapl_evd_create(b->ia, 256, &a->s.dto_evd);
	r = r ?: rkdapl_evd_create(b->ia, 16, &a->conn_evd);
	r = r ?: rkdapl_ep_create(b->pz, a->s.dto_evd, a->conn_evd, NULL, &a->s.ep);
	r = r ?: rkdapl_ep_connect(a->s.ep, (struct sockaddr *)&b->self, 5000, NULL, 0);
	r = r ?: conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	r = r ?: rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &a->server_ep);
	r = r ?: rkdapl_cr_accept(ev.cr, a->server_ep, NULL, 0);
	r = r ?: conn_expect(a->conn_evd, a->s.ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
			     timeout_ms, &ev);
	if (r)
		snprintf(why, WHY, "client %d: set-up: %d %s", i, r, ename(r));
	return r;
}

static void ac_close(struct bctx *b, struct aclient *a)
{
	if (a->s.ep)
		rkdapl_ep_free(a->s.ep);
	if (a->server_ep)
		rkdapl_ep_free(a->server_ep);
	if (a->res_lmr)
		rkdapl_lmr_free(a->res_lmr);
	if (a->s.dto_evd)
		rkdapl_evd_free(a->s.dto_evd);
	if (a->conn_evd)
		rkdapl_evd_free(a->conn_evd);
	kfree(a->res);
	evd_drain(b->s->dto_evd);
	evd_drain(b->s->conn_evd);
	memset(a, 0, sizeof(*a));
}

/* One atomic and its completion: the word's old value in a->res[slot]. */
static int ac_atomic(struct aclient *a, bool cas, u64 x, u64 y, int slot, u64 *old)
{
	struct rkdapl_lmr_triplet t = { a->res_lmr, slot * sizeof(u64), sizeof(u64) };
	u64 c = next_cookie(&a->s);
	int r;

	r = cas ? rkdapl_post_cmp_swap(a->s.ep, &t, &a->word, x, y, c, 0) :
		  rkdapl_post_fetch_add(a->s.ep, &t, &a->word, x, c, 0);
	r = r ?: dto_expect(&a->s, c, cas ? RKDAPL_DTO_CMP_SWAP : RKDAPL_DTO_FETCH_ADD, 8, a->why);
	if (!r)
		*old = READ_ONCE(a->res[slot]);
	return r;
}

static int ac_adder(void *arg)
{
	struct aclient *a = arg;
	u64 old;

	for (a->n = 0; !a->err && a->n < ATOM_ADDS; a->n++)
		a->err = ac_atomic(a, false, 1, 0, a->n, &old);
	complete(&a->done);
	return 0;
}

/* RDMA READ or WRITE of the 8-byte shared counter through slot 0 of a->res. */
static int ac_rw(struct aclient *a, bool write)
{
	struct rkdapl_lmr_triplet t = { a->res_lmr, 0, sizeof(u64) };
	u64 c = next_cookie(&a->s);
	int r;

	r = write ? rkdapl_post_rdma_write(a->s.ep, &t, 1, &a->shared, c, 0) :
		    rkdapl_post_rdma_read(a->s.ep, &t, 1, &a->shared, c, 0);
	return r ?: dto_expect(&a->s, c, write ? RKDAPL_DTO_RDMA_WRITE : RKDAPL_DTO_RDMA_READ, 8,
			       a->why);
}

static int ac_locker(void *arg)
{
	struct aclient *a = arg;
	u64 old, v;

	while (!a->err && a->n < ATOM_LOCKS / 2) {
		a->err = ac_atomic(a, true, 0, a->id, 1, &old);
		if (a->err || old != 0)
			continue;	/* held by the other: try again */
		a->err = ac_rw(a, false);
		v = READ_ONCE(a->res[0]) + 1;
		WRITE_ONCE(a->res[0], v);
		a->err = a->err ?: ac_rw(a, true);
		a->err = a->err ?: ac_atomic(a, true, a->id, 0, 1, &old);
		if (!a->err && old != a->id) {
			snprintf(a->why, WHY, "lock word was %llu while held by %llu", old, a->id);
			a->err = -EPROTO;
		}
		a->n++;
	}
	complete(&a->done);
	return 0;
}

/* Runs @fn on @n clients in kthreads and waits for them; 0 if all succeeded. */
static int ac_run(struct aclient *a, int n, int (*fn)(void *), char *why)
{
	int i, r = 0;

	for (i = 0; i < n; i++) {
		struct task_struct *t = kthread_run(fn, &a[i], "rkdapl_atomic%d", i);

		if (IS_ERR(t)) {
			a[i].err = PTR_ERR(t);
			complete(&a[i].done);
		}
	}
	for (i = 0; i < n; i++) {
		/* woken every 10 s: a slow guest is not a hung task (60 s in the debug kernel) */
		while (!wait_for_completion_timeout(&a[i].done, 10 * HZ))
			;
		if (a[i].err && !r) {
			r = a[i].err;
			snprintf(why, WHY, "client %d after %d: %d %s %s", i, a[i].n, r, ename(r),
				 a[i].why);
		}
	}
	return r;
}

/* The refusals at the post call, and at the peer on a pair of its own each. */
static void atomic_refusals(struct bctx *b, struct aclient *a, u64 *target,
			    struct rkdapl_lmr *tlmr)
{
	struct rkdapl_lmr_triplet t = { a->res_lmr, 0, 8 }, t4 = { a->res_lmr, 0, 4 };
	struct rkdapl_lmr_triplet tro = { b->lmr_ro, 0, 8 };
	struct rkdapl_rmr_triplet w = a->word, rt;
	struct rkdapl_rmr *rmr = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	u64 c = 1, before;
	int r;

	w.address += 4;
	WRITE_ONCE(target[0], 7);
	expect(rkdapl_post_fetch_add(a->s.ep, &t, &w, 1, c, 0), -EINVAL,
	       "atomics: fetch_add at an unaligned address");
	expect(rkdapl_post_cmp_swap(a->s.ep, &t4, &a->word, 7, 8, c, 0), -EINVAL,
	       "atomics: cmp_swap into a 4-byte local segment");
	expect(rkdapl_post_fetch_add(a->s.ep, &tro, &a->word, 1, c, 0), -EACCES,
	       "atomics: fetch_add into an LMR without local write");
	expect(rkdapl_post_fetch_add(a->s.ep, NULL, &a->word, 1, c, 0), -EINVAL,
	       "atomics: fetch_add with NULL local");
	expect(rkdapl_post_cmp_swap(a->s.ep, &t, NULL, 7, 8, c, 0), -EINVAL,
	       "atomics: cmp_swap with NULL remote");
	expect(rkdapl_post_fetch_add(a->s.ep, &t, &a->word, 1, c, RKDAPL_COMPLETION_SOLICITED_WAIT),
	       -EINVAL, "atomics: fetch_add with SOLICITED_WAIT");
	tap(READ_ONCE(target[0]) == 7, "atomics: the refused posts left the word unchanged",
	    "word %llu", READ_ONCE(target[0]));

	/* at the peer: a grant without the atomic right (remote write only) */
	r = rkdapl_rmr_create(b->pz, &rmr);
	r = r ?: grant(b, rmr, tlmr, 0, ATOM_GRANT, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!tap(!r, "atomics: a grant without the atomic right", "%s", why))
		goto out;
	rt.length = 8;
	before = READ_ONCE(target[0]);
	c = next_cookie(&a->s);
	r = rkdapl_post_fetch_add(a->s.ep, &t, &rt, 1, c, 0);
	r = r ?: wait_cookie(&a->s, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_REMOTE_ACCESS_ERROR && READ_ONCE(target[0]) == before,
	    "atomics: fetch_add under a grant without the atomic right -> REMOTE_ACCESS_ERROR, word unchanged",
	    "%d %s, status %d (%s), word %llu -> %llu", r, ename(r), ev.status,
	    stname(ev.status), before, READ_ONCE(target[0]));
out:
	if (rmr)
		rkdapl_rmr_free(rmr);
}

/* Outside the grant: on a fresh client (the access error breaks its connection). */
static void atomic_outside(struct bctx *b, struct rkdapl_rmr_triplet word, u64 *target)
{
	struct aclient *a = kzalloc(sizeof(*a), GFP_KERNEL);
	struct rkdapl_lmr_triplet t;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	u64 c, before;
	int r;

	if (!a)
		return;
	r = ac_open(b, a, 9, why);
	t = (struct rkdapl_lmr_triplet){ a->res_lmr, 0, 8 };
	if (!tap(!r, "atomics: a second client for the access errors", "%s", why))
		goto out;
	a->word = word;
	a->word.address += ATOM_GRANT;	/* in the LMR, past the grant */
	WRITE_ONCE(target[ATOM_GRANT / 8], 5);
	before = READ_ONCE(target[ATOM_GRANT / 8]);
	c = next_cookie(&a->s);
	r = rkdapl_post_cmp_swap(a->s.ep, &t, &a->word, before, before + 1, c, 0);
	r = r ?: wait_cookie(&a->s, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_REMOTE_ACCESS_ERROR &&
	    READ_ONCE(target[ATOM_GRANT / 8]) == before,
	    "atomics: cmp_swap on a word outside the grant -> REMOTE_ACCESS_ERROR, word unchanged",
	    "%d %s, status %d (%s), word %llu -> %llu", r, ename(r), ev.status,
	    stname(ev.status), before, READ_ONCE(target[ATOM_GRANT / 8]));
out:
	ac_close(b, a);
	kfree(a);
}

void atomic_tests(struct bctx *b)
{
	struct aclient *a = kcalloc(ATOM_EPS, sizeof(*a), GFP_KERNEL);
	struct rkdapl_lmr_triplet t;
	struct rkdapl_rmr_triplet word = {};
	struct rkdapl_lmr *tlmr = NULL;
	struct rkdapl_rmr *rmr = NULL;
	unsigned long *seen = NULL;
	u64 *target = NULL, total = (u64)ATOM_EPS * ATOM_ADDS;
	char why[WHY] = "";
	int r, i, j, dup = 0;

	if (!a)
		return;
	r = ac_open(b, &a[0], 0, why);
	if (!tap(!r, "atomics: a client EP", "%s", why))
		goto out;
	if (!(b->attr.caps & RKDAPL_CAP_ATOMICS)) {
		t = (struct rkdapl_lmr_triplet){ a[0].res_lmr, 0, 8 };
		word = (struct rkdapl_rmr_triplet){ .address = 0, .rkey = 1, .length = 8 };
		expect(rkdapl_post_fetch_add(a[0].s.ep, &t, &word, 1, 1, 0), -EOPNOTSUPP,
		       "atomics: no RKDAPL_CAP_ATOMICS: fetch_add");
		expect(rkdapl_post_cmp_swap(a[0].s.ep, &t, &word, 0, 1, 1, 0), -EOPNOTSUPP,
		       "atomics: no RKDAPL_CAP_ATOMICS: cmp_swap");
		goto out;
	}
	/* the server's memory: a page, its first half granted with the atomic right */
	target = (u64 *)get_zeroed_page(GFP_KERNEL);
	r = target ? 0 : -ENOMEM;
	r = r ?: pair_connect(b, why);
	r = r ?: rkdapl_lmr_create(b->pz, target, PAGE_SIZE, ATOM_PRIV, &tlmr);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr);
	r = r ?: grant(b, rmr, tlmr, 0, ATOM_GRANT, RKDAPL_MEM_REMOTE_ATOMIC |
		       RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, &word, why);
	for (i = 1; !r && i < ATOM_EPS; i++)
		r = ac_open(b, &a[i], i, why);
	if (!tap(!r, "atomics: the target word granted, the clients connected", "%d %s %s", r,
		 ename(r), why))
		goto out;
	word.length = 8;

	/* ATOM_EPS clients add at once */
	for (i = 0; i < ATOM_EPS; i++)
		a[i].word = word;
	r = ac_run(a, ATOM_EPS, ac_adder, why);
	seen = bitmap_zalloc(total, GFP_KERNEL);
	for (i = 0; seen && i < ATOM_EPS; i++)
		for (j = 0; j < ATOM_ADDS; j++) {
			u64 v = a[i].res[j];

			if (v >= total || test_and_set_bit(v, seen))
				dup++;
		}
	tap(!r && READ_ONCE(target[0]) == total && seen && !dup,
	    "atomics: 4 EPs x 64 fetch_add(1) into one word: exactly 256, each old value once",
	    "%s; word %llu, %d values repeated or out of range", r ? why : "", READ_ONCE(target[0]),
	    dup);

	/* a compare-and-swap lock word (target[1]) over a shared counter (target[2]) */
	for (i = 0; i < 2; i++) {
		a[i].word = word;
		a[i].word.address += 8;
		a[i].shared = word;
		a[i].shared.address += 16;
		a[i].id = i + 1;
		a[i].n = 0;
		a[i].err = 0;
		reinit_completion(&a[i].done);
	}
	r = ac_run(a, 2, ac_locker, why);
	tap(!r && READ_ONCE(target[2]) == ATOM_LOCKS && READ_ONCE(target[1]) == 0,
	    "atomics: a cmp_swap lock between two EPs, 1000 acquisitions: the counter under it ends at 1000",
	    "%s; counter %llu, lock word %llu", r ? why : "", READ_ONCE(target[2]),
	    READ_ONCE(target[1]));

	a[0].word = word;
	atomic_refusals(b, &a[0], target, tlmr);
	atomic_outside(b, word, target);
out:
	for (i = 0; i < ATOM_EPS; i++)
		ac_close(b, &a[i]);
	if (rmr)
		rkdapl_rmr_free(rmr);
	pair_close(b);
	if (tlmr)
		rkdapl_lmr_free(tlmr);
	bitmap_free(seen);
	free_page((unsigned long)target);
	kfree(a);
}
