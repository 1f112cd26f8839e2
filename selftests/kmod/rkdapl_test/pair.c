// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: the loopback pair and the helpers of the connected tests. */
#include "rkdapl_test.h"

int sparse_alloc(struct sparse *sp, unsigned int n)
{
	sp->pages = kcalloc(n, sizeof(*sp->pages), GFP_KERNEL);
	if (!sp->pages)
		return -ENOMEM;
	for (sp->n = 0; sp->n < n; sp->n++) {
		/* The first page of an order-1 block: its successor is never another's first. */
		sp->pages[sp->n] = alloc_pages(GFP_KERNEL | __GFP_ZERO, 1);
		if (!sp->pages[sp->n])
			return -ENOMEM;
		split_page(sp->pages[sp->n], 1);
	}
	sp->addr = vmap(sp->pages, n, VM_MAP, PAGE_KERNEL);
	return sp->addr ? 0 : -ENOMEM;
}

void sparse_free(struct sparse *sp)
{
	unsigned int i;

	if (sp->addr)
		vunmap(sp->addr);
	for (i = 0; sp->pages && i < sp->n; i++) {
		__free_page(sp->pages[i]);
		__free_page(sp->pages[i] + 1);
	}
	kfree(sp->pages);
	memset(sp, 0, sizeof(*sp));
}

/*
 * A connected loopback pair b->c (client) <-> b->s (server), through b->psp, the client's EP
 * with @cattr, the server's with @sattr.
 */
int pair_connect_attr(struct bctx *b, struct rkdapl_ep_attr *cattr,
			     struct rkdapl_ep_attr *sattr, char *why)
{
	struct rkdapl_event ev = {};
	int r;

	/* A pair still open would be lost (its EPs overwritten, left to the module's unload). */
	if (b->c->ep || b->s->ep) {
		snprintf(why, WHY, "a pair is still open (pair_close() first)");
		return -EBUSY;
	}
	b->c->dead = b->s->dead = false;
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, cattr, &b->c->ep);
	if (!r)
		r = rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, sattr, &b->s->ep);
	if (r) {
		snprintf(why, WHY, "ep_create = %d %s", r, ename(r));
		return r;
	}
	/*
	 * From the IA's address given as the source, and the port b->from_port (0: any): the
	 * server's CR reports it as the client's address (ep_attr checks it in b->crp).
	 */
	b->from = b->self;
	b->from.sin_port = htons(b->from_port);
	r = rkdapl_ep_connect_from(b->c->ep, (struct sockaddr *)&b->from,
				   (struct sockaddr *)&b->self, 5000, NULL, 0);
	if (r) {
		snprintf(why, WHY, "ep_connect_from(%pI4:%u -> %pI4:%u) = %d %s",
			 &b->from.sin_addr, b->from_port, &b->self.sin_addr,
			 ntohs(b->self.sin_port), r, ename(r));
		return r;
	}
	r = conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (r) {
		snprintf(why, WHY, "no connection request: %s, event %u (%s)", ename(r), ev.type,
			 evname(ev.type));
		return r;
	}
	memset(&b->crp, 0xa5, sizeof(b->crp));
	b->crq = rkdapl_cr_query(ev.cr, &b->crp);
	r = rkdapl_cr_accept(ev.cr, b->s->ep, NULL, 0);
	if (r) {
		snprintf(why, WHY, "cr_accept = %d %s", r, ename(r));
		return r;
	}
	r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
			timeout_ms, &ev);
	if (!r)
		r = conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
				timeout_ms, &ev);
	if (r) {
		snprintf(why, WHY, "not established: %s, event %u (%s) status %d", ename(r),
			 ev.type, evname(ev.type), ev.status);
		return r;
	}
	return 0;
}

int pair_connect(struct bctx *b, char *why)
{
	struct rkdapl_ep_attr attr = { .max_request_iov = 256 };

	return pair_connect_attr(b, &attr, &attr, why);
}

void pair_close(struct bctx *b)
{
	if (b->c->ep)
		rkdapl_ep_free(b->c->ep);
	if (b->s->ep)
		rkdapl_ep_free(b->s->ep);
	b->c->ep = b->s->ep = NULL;
	evd_drain(b->c->dto_evd);
	evd_drain(b->c->conn_evd);
	evd_drain(b->s->dto_evd);
	evd_drain(b->s->conn_evd);
	evd_drain(b->psp_evd);
	b->c->nstash = b->s->nstash = 0;
}

/* Binds b->rmr over [off, off + len) of @lmr with @priv on the server EP and waits. */
int grant(struct bctx *b, struct rkdapl_rmr *rmr, struct rkdapl_lmr *lmr, u64 off,
		 u64 len, u32 priv, struct rkdapl_rmr_triplet *rt, char *why)
{
	u64 c = next_cookie(b->s);
	int r;

	memset(rt, 0, sizeof(*rt));
	r = rkdapl_rmr_bind(rmr, lmr, off, len, priv, b->s->ep, c, &rt->rkey, &rt->address);
	if (r) {
		snprintf(why, WHY, "rmr_bind = %d %s", r, ename(r));
		return r;
	}
	rt->length = len;
	return dto_expect(b->s, c, RKDAPL_DTO_RMR_BIND, -1, why);
}

/* Unbinds @rmr on the server EP and waits for the completion. */
int ungrant(struct bctx *b, struct rkdapl_rmr *rmr, char *why)
{
	u64 c = next_cookie(b->s);
	int r = rkdapl_rmr_unbind(rmr, b->s->ep, c);

	if (r) {
		snprintf(why, WHY, "rmr_unbind = %d %s", r, ename(r));
		return r;
	}
	return dto_expect(b->s, c, RKDAPL_DTO_RMR_UNBIND, -1, why);
}

/* A new pair (pair_connect()), a new RMR in @rmr and its grant of [0, @len) of bufa. */
int pair_grant(struct bctx *b, struct rkdapl_rmr **rmr, u64 len, u32 priv,
	       struct rkdapl_rmr_triplet *rt, char *why)
{
	int r = pair_connect(b, why);

	r = r ?: rkdapl_rmr_create(b->pz, rmr);
	return r ?: grant(b, *rmr, b->lmr_a, 0, len, priv, rt, why);
}

/* One client WRITE of @len bytes of bufb at @loff to @rt.address + @roff: its status. */
int write_status(struct bctx *b, u64 loff, u64 len, struct rkdapl_rmr_triplet rt,
			u64 roff, s32 *status, char *why)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, loff, len };
	struct rkdapl_event ev = {};
	u64 c = next_cookie(b->c);
	int r;

	rt.address += roff;
	rt.length = len;
	r = rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	if (r)
		snprintf(why, WHY, "post_rdma_write or its completion: %d %s", r, ename(r));
	*status = ev.status;
	return r;
}
