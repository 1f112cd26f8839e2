// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test role=ports: asynchronous port events on the IA's async EVD, under a connected
 * loopback pair.
 *
 * The module connects a pair over the guest's own address, moves verified bytes, prints
 * "# ports: ready for link down" and waits; the guest script (selftests/ports.sh) then takes
 * the RDMA device's network device down and, a few seconds later, up again (`ip link set`).
 * The async EVD must report RKDAPL_ASYNC_PORT_ERROR, then RKDAPL_ASYNC_PORT_ACTIVE, both for
 * port 1 (GID changes in between are counted, not required); a port query made after the
 * PORT_ERROR event says DOWN, one after PORT_ACTIVE says ACTIVE. The connection survives
 * (rdma_rxe keeps its QPs across a link flap and ib_core tears nothing down): the EPs are
 * still CONNECTED and move verified bytes again. Then a QP error (qp_error_test()).
 */
#include "rkdapl_test.h"

/* The next async event that is not a GID change (those are counted in *gids). */
static int next_port_event(struct rkdapl_evd *aevd, u32 ms, struct rkdapl_event *ev, int *gids)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);
	long left;
	int r;

	for (;;) {
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		r = ev_wait(aevd, jiffies_to_msecs(left), ev);
		if (r)
			return r;
		pr_info("rkdapl_test: # ports: async event %u (%s) port %u status %d\n", ev->type,
			evname(ev->type), ev->port, ev->status);
		if (ev->type != RKDAPL_ASYNC_GID_CHANGE)
			return 0;
		(*gids)++;
	}
}

/*
 * A QP error on a reset-and-reconnected pair: the client RDMA-WRITEs with an rkey the server
 * never granted; rdma_rxe's responder reports IB_EVENT_QP_ACCESS_ERR on the server's QP
 * (IB spec C9-222.1), which rkdapl reports as RKDAPL_ASYNC_EP_BROKEN naming the server EP
 * (-EACCES) on the async EVD and as BROKEN on the server EP's connection EVD.
 */
static void qp_error_test(struct bctx *b, struct rkdapl_evd *aevd)
{
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	s32 status = 0;
	u32 st = ~0u;
	int r;

	r = rkdapl_ep_reset(b->c->ep);
	r = r ?: rkdapl_ep_reset(b->s->ep);
	r = r ?: xpair_connect(b, why);
	if (b->rmr)
		rkdapl_rmr_free(b->rmr);
	b->rmr = NULL;
	r = r ?: rkdapl_rmr_create(b->pz, &b->rmr);
	r = r ?: grant(b, b->rmr, b->lmr_a, 0, 512, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!tap(!r, "QP error: both EPs reset and connected again, a grant made",
		 "%d %s %s", r, ename(r), why))
		return;
	evd_drain(aevd);
	rt.rkey ^= 0x80;	/* another key index: never granted */
	r = write_status(b, 0, 512, rt, 0, &status, why);
	tap(!r && status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
	    "QP error: an RDMA WRITE with a key never granted completes REMOTE_ACCESS_ERROR",
	    "%d %s, status %d (%s) %s", r, ename(r), status, stname(status), why);
	r = conn_expect(aevd, NULL, RKDAPL_ASYNC_EP_BROKEN, timeout_ms, &ev);
	tap(!r && ev.ep == b->s->ep && ev.status == -EACCES,
	    "QP error: the server's QP access error is RKDAPL_ASYNC_EP_BROKEN naming the server EP, -EACCES",
	    "%d %s, event %u (%s) ep %s status %d", r, ename(r), ev.type, evname(ev.type),
	    ev.ep == b->s->ep ? "server" : ev.ep == b->c->ep ? "client" : "other", ev.status);
	memset(&ev, 0, sizeof(ev));
	r = conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_BROKEN, timeout_ms, &ev);
	rkdapl_ep_get_state(b->s->ep, &st);
	tap(!r && ev.status == -EACCES && st == RKDAPL_EP_STATE_DISCONNECTED,
	    "QP error: the server EP reports BROKEN (-EACCES) on its connection EVD and is DISCONNECTED",
	    "%d %s, event %u (%s) status %d, state %u", r, ename(r), ev.type, evname(ev.type),
	    ev.status, st);
}

int ports_run(void)
{
	struct bctx *b = kzalloc_obj(*b, GFP_KERNEL);
	struct rkdapl_evd *aevd = NULL;
	struct rkdapl_port_attr pa = {};
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	u32 st = ~0u, st2 = ~0u;
	int r, q, gids = 0;
	unsigned long t0;

	if (!b)
		return tap(false, "set-up", "out of memory");
	r = xpair_setup(b, port, why);
	r = r ?: rkdapl_evd_create(b->ia, 64, &aevd);
	r = r ?: rkdapl_ia_set_async_evd(b->ia, aevd);
	r = r ?: rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &b->c->ep);
	r = r ?: rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &b->s->ep);
	r = r ?: xpair_connect(b, why);
	r = r ?: xpair_verify(b, 0x9047, why);
	if (!tap(!r, "a connected loopback pair with an async EVD moves verified bytes",
		 "%d %s %s", r, ename(r), why))
		goto out;
	q = rkdapl_ia_query_port(b->ia, 1, &pa);
	tap(!q && pa.state == RKDAPL_PORT_ACTIVE, "port 1 is ACTIVE before the link goes down",
	    "query %d %s, state %u", q, ename(q), pa.state);
	evd_drain(aevd);

	pr_info("rkdapl_test: # ports: ready for link down\n");
	t0 = jiffies;
	r = next_port_event(aevd, 120000, &ev, &gids);
	q = rkdapl_ia_query_port(b->ia, 1, &pa);
	tap(!r && ev.type == RKDAPL_ASYNC_PORT_ERROR && ev.port == 1 && ev.status == 0,
	    "link down: RKDAPL_ASYNC_PORT_ERROR for port 1 on the async EVD",
	    "%d %s, event %u (%s) port %u status %d", r, ename(r), ev.type, evname(ev.type),
	    ev.port, ev.status);
	pr_info("rkdapl_test: # ports: PORT_ERROR after %u ms\n", jiffies_to_msecs(jiffies - t0));
	tap(!q && pa.state == RKDAPL_PORT_DOWN,
	    "a port query after PORT_ERROR says DOWN", "query %d %s, state %u", q, ename(q),
	    pa.state);
	memset(&ev, 0, sizeof(ev));
	r = next_port_event(aevd, 120000, &ev, &gids);
	q = rkdapl_ia_query_port(b->ia, 1, &pa);
	tap(!r && ev.type == RKDAPL_ASYNC_PORT_ACTIVE && ev.port == 1 && ev.status == 0,
	    "link up: then RKDAPL_ASYNC_PORT_ACTIVE for port 1",
	    "%d %s, event %u (%s) port %u status %d", r, ename(r), ev.type, evname(ev.type),
	    ev.port, ev.status);
	tap(!q && pa.state == RKDAPL_PORT_ACTIVE, "a port query after PORT_ACTIVE says ACTIVE",
	    "query %d %s, state %u", q, ename(q), pa.state);
	pr_info("rkdapl_test: # ports: PORT_ACTIVE after %u ms, %d GID change event(s) on the way\n",
		jiffies_to_msecs(jiffies - t0), gids);
	memset(&ev, 0, sizeof(ev));
	msleep(500);
	r = rkdapl_evd_dequeue(aevd, &ev);
	while (r == 0 && ev.type == RKDAPL_ASYNC_GID_CHANGE)
		r = rkdapl_evd_dequeue(aevd, &ev);
	tap(r == -EAGAIN, "no other async event (one PORT_ERROR, one PORT_ACTIVE)",
	    "%d %s, event %u (%s) port %u", r, ename(r), ev.type, evname(ev.type), ev.port);

	rkdapl_ep_get_state(b->c->ep, &st);
	rkdapl_ep_get_state(b->s->ep, &st2);
	tap(st == RKDAPL_EP_STATE_CONNECTED && st2 == RKDAPL_EP_STATE_CONNECTED,
	    "both EPs are still CONNECTED after the link flap", "client %u, server %u", st,
	    st2);
	r = xpair_verify(b, 0x9048, why);
	tap(!r, "the connection survives: RDMA WRITE and READ of 8 KiB verified after link up",
	    "%d %s %s", r, ename(r), why);
	r = xpair_disconnect(b, why);
	tap(!r, "graceful disconnect after the flap", "%s", why);
	evd_drain(b->c->dto_evd);
	evd_drain(b->s->dto_evd);
	qp_error_test(b, aevd);
out:
	if (aevd) {
		rkdapl_ia_set_async_evd(b->ia, NULL);
		rkdapl_evd_free(aevd);
	}
	xpair_teardown(b);
	kfree(b);
	return 0;
}
