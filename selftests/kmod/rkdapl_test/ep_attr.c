// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: EP attributes at work: RNR retries, RDMA READ limits. */
#include "rkdapl_test.h"

/*
 * A SEND or RDMA WRITE with immediate while the peer has no RECV posted: with a small RNR
 * retry count on the receiving EP (the IB CM gives it to the sender's QP) the DTO completes
 * RECEIVER_NOT_READY instead of waiting.
 */
void rnr_tests(struct bctx *b)
{
	struct rkdapl_ep_attr ca = { .max_request_iov = 256 };
	struct rkdapl_ep_attr sa = { .max_request_iov = 256, .rnr_retry_count = 1 };
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, 64 };
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_rmr *rmr = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	unsigned long t0;
	u64 c;
	int r;

	r = pair_connect_attr(b, &ca, &sa, why);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr);
	r = r ?: grant(b, rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!tap(!r, "RNR: connection to a server EP with rnr_retry_count 1, and a grant", "%d %s %s", r,
		 ename(r), why))
		goto out;
	t0 = jiffies;
	c = next_cookie(b->c);
	r = rkdapl_post_send(b->c->ep, &t, 1, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_RECEIVER_NOT_READY,
	    "a SEND with no RECV posted at the peer (its rnr_retry_count 1) completes RECEIVER_NOT_READY",
	    "%d %s, status %d (%s) after %u ms", r, ename(r), ev.status, stname(ev.status),
	    jiffies_to_msecs(jiffies - t0));
	pair_close(b);
	r = pair_connect_attr(b, &ca, &sa, why);
	if (r) {
		tap(false, "RNR: second connection", "%s", why);
		goto out;
	}
	rt.length = 64;
	c = next_cookie(b->c);
	r = rkdapl_post_rdma_write_imm(b->c->ep, &t, 1, &rt, 5, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_RECEIVER_NOT_READY,
	    "an RDMA WRITE with immediate with no RECV posted at the peer completes RECEIVER_NOT_READY",
	    "%d %s, status %d (%s)", r, ename(r), ev.status, stname(ev.status));

	/* a SEND longer than the peer's RECV buffer */
	pair_close(b);
	r = pair_connect(b, why);
	if (r) {
		tap(false, "local length: connection", "%s", why);
		goto out;
	}
	{
		struct rkdapl_lmr_triplet rx = { b->lmr_b, 8192, 16 };
		u64 rc = next_cookie(b->s);
		struct rkdapl_event sev = {};

		memset(b->bufb + 8192, 0x77, 64);
		r = rkdapl_post_recv(b->s->ep, &rx, 1, rc, 0);
		c = next_cookie(b->c);
		r = r ?: rkdapl_post_send(b->c->ep, &t, 1, c, 0);
		r = r ?: wait_cookie(b->s, rc, &sev);
		r = r ?: wait_cookie(b->c, c, &ev);
		/*
		 * IB spec 9.9.3.1.2 (class C, RC): the responder NAKs Invalid Request and fails
		 * the RECV; rdma_rxe reports it as a local QP error, others as a length error.
		 */
		tap(!r && (sev.status == RKDAPL_DTO_LOCAL_LENGTH_ERROR ||
			   sev.status == RKDAPL_DTO_LOCAL_EP_ERROR) &&
		    ev.status == RKDAPL_DTO_REMOTE_RESPONDER_ERROR &&
		    all_bytes(b->bufb + 8192 + 16, 48, 0x77),
		    "a 64-byte SEND into a 16-byte RECV: the RECV fails (LOCAL_LENGTH or, on rxe, LOCAL_EP), the SEND REMOTE_RESPONDER_ERROR, nothing written past the RECV buffer",
		    "%d %s, RECV status %d (%s), SEND status %d (%s)", r, ename(r), sev.status,
		    stname(sev.status), ev.status, stname(ev.status));
	}
out:
	pair_close(b);
	if (rmr)
		rkdapl_rmr_free(rmr);
}

/*
 * RDMA READ limits settled between the two sides: the client asks to serve 2 READs and to have
 * 3 of its own in flight, the server to serve 5 and to have 1 in flight; each side ends up
 * with no more in flight than the other serves.
 */
void rd_negotiation_test(struct bctx *b)
{
	struct rkdapl_ep_attr ca = { .max_request_iov = 256, .max_rdma_read_in = 2,
				     .max_rdma_read_out = 3 };
	struct rkdapl_ep_attr sa = { .max_request_iov = 256, .max_rdma_read_in = 5,
				     .max_rdma_read_out = 1 };
	struct rkdapl_ep_attr q = {}, cq = {}, sq = {};
	struct rkdapl_ep *e = NULL;
	char why[WHY] = "";
	int r;

	r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &e);
	r = r ?: rkdapl_ep_query(e, &q);
	tap(!r && q.remote_addr.ss_family == AF_UNSPEC &&
	    q.max_rdma_read_in == min(4u, b->attr.max_rdma_read_in) &&
	    q.max_rdma_read_out == min(4u, b->attr.max_rdma_read_out) && q.max_request_dtos == 64 &&
	    q.retry_count == 7 && q.rnr_retry_count == 7,
	    "ep_query of an unconnected EP: the defaults (64 DTOs, 4 RDMA READs each way, retries 7)",
	    "%d %s: dtos %u, read in %u out %u, retry %u rnr %u", r, ename(r), q.max_request_dtos,
	    q.max_rdma_read_in, q.max_rdma_read_out, q.retry_count, q.rnr_retry_count);
	expect(rkdapl_ep_query(e, NULL), -EINVAL, "ep_query(NULL attr)");
	expect(rkdapl_ep_query(b->foreign, &q), -EINVAL, "ep_query(foreign object)");
	if (e)
		rkdapl_ep_free(e);
	/* From a source port of our choosing (rkdapl_ep_connect_from()), checked in the CR below. */
	b->from_port = get_random_u32_inclusive(40000, 59999);
	r = pair_connect_attr(b, &ca, &sa, why);
	b->from_port = 0;
	r = r ?: rkdapl_ep_query(b->c->ep, &cq);
	r = r ?: rkdapl_ep_query(b->s->ep, &sq);
	tap(!r && cq.max_rdma_read_out == 3 && sq.max_rdma_read_in == 3 &&
	    sq.max_rdma_read_out == 1 && cq.max_rdma_read_in == 1,
	    "RDMA READ limits settled (client asks in 2 out 3, server in 5 out 1): client in 1 out 3, server in 3 out 1",
	    "%d %s %s: client in %u out %u, server in %u out %u", r, ename(r), why,
	    cq.max_rdma_read_in, cq.max_rdma_read_out, sq.max_rdma_read_in,
	    sq.max_rdma_read_out);
	{
		struct sockaddr_in *crp = (struct sockaddr_in *)&b->crp.remote_addr;
		struct sockaddr_in *cpeer = (struct sockaddr_in *)&cq.remote_addr;
		struct sockaddr_in *speer = (struct sockaddr_in *)&sq.remote_addr;

		tap(!r && !b->crq && crp->sin_family == AF_INET &&
		    crp->sin_addr.s_addr == b->self.sin_addr.s_addr &&
		    crp->sin_port == b->from.sin_port &&
		    b->crp.local_port == ntohs(b->self.sin_port) && !b->crp.reserved[0],
		    "cr_query: the connecting peer's IPv4 address and the port it connected from (rkdapl_ep_connect_from()), and the PSP's port",
		    "%d %s: family %u, %pI4:%u, local port %u (want %pI4:%u, port %u)", b->crq,
		    ename(b->crq), crp->sin_family, &crp->sin_addr, ntohs(crp->sin_port),
		    b->crp.local_port, &b->self.sin_addr, ntohs(b->from.sin_port),
		    ntohs(b->self.sin_port));
		tap(!r && cpeer->sin_family == AF_INET &&
		    cpeer->sin_addr.s_addr == b->self.sin_addr.s_addr &&
		    cpeer->sin_port == b->self.sin_port && speer->sin_family == AF_INET &&
		    speer->sin_addr.s_addr == crp->sin_addr.s_addr &&
		    speer->sin_port == crp->sin_port,
		    "ep_query: remote_addr is the peer (client: the PSP's address and port; server: the CR's peer)",
		    "client sees %pI4:%u family %u, server sees %pI4:%u family %u", &cpeer->sin_addr,
		    ntohs(cpeer->sin_port), cpeer->sin_family, &speer->sin_addr,
		    ntohs(speer->sin_port), speer->sin_family);
	}
	if (!r) {
		/* an event that is not there yet: the server's disconnect reaches the client */
		struct rkdapl_event ev = {};
		int d = rkdapl_ep_disconnect(b->s->ep);

		d = d ?: rkdapl_evd_wait(b->c->conn_evd, RKDAPL_TIMEOUT_INFINITE, &ev);
		tap(!d && ev.type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && ev.ep == b->c->ep,
		    "evd_wait(RKDAPL_TIMEOUT_INFINITE) sleeps until the peer's disconnect arrives",
		    "%d %s, event %u (%s)", d, ename(d), ev.type, evname(ev.type));
	}
	expect(rkdapl_cr_query(NULL, &b->crp), -EINVAL, "cr_query(NULL)");
	expect(rkdapl_cr_query(b->foreign, &b->crp), -EINVAL, "cr_query(foreign object)");
	pair_close(b);
}
