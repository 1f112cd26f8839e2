// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: the state errors that need a connected loopback pair. */
#include "rkdapl_test.h"

/* The errors that need a connected EP, a real CR or an RMR grant. */
void badarg_connected(struct bctx *b)
{
	struct rkdapl_lmr_triplet t1, *tv = NULL;
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_ep *c2 = NULL, *x = NULL;
	struct rkdapl_psp *p2 = NULL;
	struct rkdapl_event ev = {};
	struct rkdapl_cr *cr;
	char why[WHY] = "", big[RKDAPL_MAX_PRIVATE_DATA + 1] = "";
	u32 st = ~0u, maxiov = b->attr.max_iov, maxpg = b->attr.max_rmr_pages, npg;
	u64 c;
	int r, i;

	/* --- objects --- */
	b->c = kzalloc_obj(*b->c, GFP_KERNEL);
	b->s = kzalloc_obj(*b->s, GFP_KERNEL);
	b->bufa = vzalloc(BUFSZ);
	b->bufb = kzalloc(BUFSZ, GFP_KERNEL);
	b->bufx = kzalloc(BUFSZ, GFP_KERNEL);
	tv = kcalloc(257, sizeof(*tv), GFP_KERNEL);
	if (!b->c || !b->s || !b->bufa || !b->bufb || !b->bufx || !tv) {
		tap(false, "connected setup", "out of memory");
		goto out;
	}
	b->c->who = "client";
	b->s->who = "server";
	npg = max(maxpg, 8 * maxiov) + 1;
	r = rkdapl_evd_create(b->ia, 256, &b->c->dto_evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->c->conn_evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 256, &b->s->dto_evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->s->conn_evd);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufa, BUFSZ, ALL_PRIV, &b->lmr_a);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &b->lmr_b);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, ALL_PRIV, &b->lmr_k);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_REMOTE_READ, &b->lmr_ro);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &b->lmr_lw);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufa, BUFSZ,
				      RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ, &b->lmr_rd);
	if (!r)
		r = rkdapl_lmr_create(b->pz2, b->bufx, BUFSZ, ALL_PRIV, &b->lmr_x);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &b->rmr);
	if (!r)
		r = rkdapl_rmr_create(b->pz2, &b->rmr_x);
	if (!r && npg <= 8192) {
		r = sparse_alloc(&b->sp, npg);
		if (!r)
			r = rkdapl_lmr_create(b->pz, b->sp.addr, (u64)npg * PAGE_SIZE, ALL_PRIV,
					      &b->lmr_sp);
	}
	if (!r)
		r = rkdapl_psp_create(b->ia, port, 8, b->psp_evd, &b->psp);
	if (!tap(!r, "connected setup (evds, lmrs, rmrs, psp)", "%d %s", r, ename(r)))
		goto out;

	/* --- a connected pair --- */
	r = pair_connect(b, why);
	if (!tap(!r, "loopback connection established", "%s", why))
		goto out;
	r = rkdapl_ep_get_state(b->c->ep, &st);
	tap(!r && st == RKDAPL_EP_STATE_CONNECTED, "ep_get_state of a connected EP is CONNECTED",
	    "returned %d, state %u", r, st);
	expect(rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&b->self, 1000, NULL, 0), -EISCONN,
	       "ep_connect(connected EP)");
	expect(rkdapl_psp_create(b->ia, port, 8, b->psp_evd, &p2), -EADDRINUSE,
	       "psp_create(port already listening)");
	if (p2)
		rkdapl_psp_free(p2);

	/* --- CR: accept on a connected EP, too much private data, reject, consumed --- */
	memset(big, 'p', sizeof(big));
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &c2);
	if (!r)
		r = rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &x);
	if (!r)
		r = rkdapl_ep_connect(c2, (struct sockaddr *)&b->self, 5000, NULL, 0);
	if (!r)
		r = conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (tap(!r, "second connection request arrives", "%s", ename(r))) {
		cr = ev.cr;
		expect(rkdapl_cr_accept(cr, b->s->ep, NULL, 0), -EISCONN,
		       "cr_accept(CR, connected EP)");
		expect(rkdapl_cr_accept(cr, x, big, sizeof(big)), -EINVAL,
		       "cr_accept(CR, EP, 57 bytes of private data)");
		expect(rkdapl_cr_reject(cr, big, sizeof(big)), -EINVAL,
		       "cr_reject(CR, 57 bytes of private data)");
		expect(rkdapl_cr_reject(cr, "go away", 7), 0, "cr_reject(CR, 7 bytes)");
		r = conn_expect(b->c->conn_evd, c2, RKDAPL_CONNECTION_EVENT_PEER_REJECTED,
				timeout_ms, &ev);
		/* IB CM: REJ reason 28 (consumer reject); iw_cm: -ECONNRESET (MPA reject) */
		tap(!r && ev.status == rej_status(b) && ev.private_data_len >= 7 &&
		    !memcmp(ev.private_data, "go away", 7),
		    is_iwarp(&b->attr) ?
		    "iWARP: rejected connect gets PEER_REJECTED, status -ECONNRESET and the private data" :
		    "rejected connect gets PEER_REJECTED, status 28 and the private data",
		    "%s, event %u (%s) status %d, private data %u bytes", ename(r), ev.type,
		    evname(ev.type), ev.status, ev.private_data_len);
		expect(rkdapl_cr_reject(cr, NULL, 0), -EINVAL, "cr_reject(consumed CR)");
		expect(rkdapl_cr_accept(cr, x, NULL, 0), -EINVAL, "cr_accept(consumed CR)");
		r = rkdapl_ep_get_state(c2, &st);
		tap(!r && st == RKDAPL_EP_STATE_DISCONNECTED,
		    "ep_get_state after PEER_REJECTED is DISCONNECTED", "returned %d, state %u", r,
		    st);
		expect(rkdapl_ep_connect(c2, (struct sockaddr *)&b->self, 1000, NULL, 0), -EISCONN,
		       "ep_connect(rejected EP)");
	}
	if (c2)
		rkdapl_ep_free(c2);
	if (x)
		rkdapl_ep_free(x);
	c2 = x = NULL;

	/* --- post_send --- */
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	c = next_cookie(b->c);
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 8), -EINVAL, "post_send(flags 8, unknown)");
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0x80000000), -EINVAL,
	       "post_send(flags 0x80000000)");
	expect(rkdapl_post_send(b->c->ep, NULL, 1, c, 0), -EINVAL, "post_send(NULL iov, 1)");
	for (i = 0; i < 257; i++)
		tv[i] = (struct rkdapl_lmr_triplet){ b->lmr_b, 2 * i, 1 };
	expect(rkdapl_post_send(b->c->ep, tv, 257, c, 0), -EINVAL, "post_send(257 segments)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, BUFSZ, 1 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_send(segment starting at the LMR's end)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, BUFSZ + 1 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_send(segment one byte too long)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 8, U64_MAX - 3 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_send(offset + length overflows)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -EXDEV,
	       "post_send(LMR of another PZ)");
	if (maxiov + 1 <= 256) {
		char n[80];

		snprintf(n, sizeof(n), "post_send(%u one-byte segments, max_iov %u)", maxiov + 1,
			 maxiov);
		expect(rkdapl_post_send(b->c->ep, tv, maxiov + 1, c, 0), -EMSGSIZE, n);
	} else {
		tap_skip("post_send(max_iov + 1 segments) -> -EMSGSIZE", "max_iov >= 256");
	}

	/* --- post_recv --- */
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_ro, 0, 16 };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 0), -EACCES,
	       "post_recv(LMR without local write)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 2), -EINVAL, "post_recv(flags 2)");
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, RKDAPL_COMPLETION_SUPPRESS), -EINVAL,
	       "post_recv(RKDAPL_COMPLETION_SUPPRESS)");
	expect(rkdapl_post_recv(b->c->ep, NULL, 1, c, 0), -EINVAL, "post_recv(NULL iov, 1)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 1, BUFSZ };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_recv(segment leaves the LMR)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 0), -EXDEV, "post_recv(LMR of another PZ)");

	/* --- RDMA posts (refused before anything reaches the wire) --- */
	rt = (struct rkdapl_rmr_triplet){ 0x10000, 0x1234, 0, 16 };
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, NULL, c, 0), -EINVAL,
	       "post_rdma_write(NULL remote)");
	rt.length = 17;
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -EINVAL,
	       "post_rdma_write(remote length != local total)");
	rt.length = 16;
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 1 << 3), -EINVAL,
	       "post_rdma_write(flags 8, unknown)");
	expect(rkdapl_post_rdma_write(b->c->ep, NULL, 1, &rt, c, 0), -EINVAL,
	       "post_rdma_write(NULL iov, 1)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, U64_MAX, 2 };
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -ERANGE,
	       "post_rdma_write(offset + length overflows)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -EXDEV,
	       "post_rdma_write(LMR of another PZ)");
	if (b->lmr_sp) {
		char n[96];

		t1 = (struct rkdapl_lmr_triplet){ b->lmr_sp, 0, (u64)(8 * maxiov + 1) * PAGE_SIZE };
		rt.length = 0;
		snprintf(n, sizeof(n), "post_rdma_write(%u page segments, > 8 x max_iov)",
			 8 * maxiov + 1);
		expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -EMSGSIZE, n);
		if (!is_iwarp(&b->attr)) {
			expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0), -EMSGSIZE,
			       "post_rdma_read(> 8 x max_iov page segments)");
		} else {
			/* iWARP: one sink MR maps the segment; it holds 256 pages at most */
			t1.length = (u64)b->sp.n * PAGE_SIZE;
			snprintf(n, sizeof(n), "iWARP: post_rdma_read(into %u separate pages, more than a sink MR maps) -> -EMSGSIZE",
				 b->sp.n);
			expect(b->sp.n > 256 ? rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0) :
			       -EMSGSIZE, -EMSGSIZE, n);
		}
	} else {
		tap_skip("post_rdma_write(> 8 x max_iov segments) -> -EMSGSIZE", "no sparse buffer");
	}
	rt.length = 16;
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_ro, 0, 16 };
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0), -EACCES,
	       "post_rdma_read(LMR without local write)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, NULL, c, 0), -EINVAL,
	       "post_rdma_read(NULL remote)");
	rt.length = 15;
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0), -EINVAL,
	       "post_rdma_read(remote length != local total)");
	rt.length = 16;
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 8), -EINVAL,
	       "post_rdma_read(flags 8)");

	rmr_tests(b);
	pooled_rmr_tests(b);
	completion_tests(b);
	dto_forms(b);
	send_sg_tests(b);
	upcall_tests(b);
	cr_upcall_tests(b);
	async_evd_tests(b);
	lmr_kinds(b);
	if (is_iwarp(&b->attr))
		iwarp_tests(b);
	else
		rnr_tests(b);
	evd_intr_test(b);
	rd_negotiation_test(b);
	cm_free_tests(b);
	atomic_tests(b);

	/* --- nobody listening --- */
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &c2);
	if (!r) {
		struct sockaddr_in other = b->self;

		other.sin_port = htons(port + 2);
		r = rkdapl_ep_connect(c2, (struct sockaddr *)&other, 5000, NULL, 0);
		if (!r && is_iwarp(&b->attr)) {
			/* iWARP: the TCP connection is refused, synchronously (siw) or not */
			r = ev_wait(b->c->conn_evd, timeout_ms, &ev);
			tap(!r && (ev.type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED ||
				   ev.type == RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED) &&
			    (ev.status == -ECONNREFUSED || ev.status == -ECONNRESET),
			    "iWARP: ep_connect to a port without PSP -> (NON_)PEER_REJECTED, -ECONNREFUSED",
			    "%s, event %u (%s) status %d", ename(r), ev.type, evname(ev.type),
			    ev.status);
		} else {
			if (!r)
				r = conn_expect(b->c->conn_evd, c2,
						RKDAPL_CONNECTION_EVENT_PEER_REJECTED, timeout_ms, &ev);
			tap(!r && ev.status == 8,
			    "ep_connect to a port without PSP -> PEER_REJECTED, status 8",
			    "%s, event %u (%s) status %d", ename(r), ev.type, evname(ev.type),
			    ev.status);
		}
		rkdapl_ep_free(c2);
		c2 = NULL;
	}

out:
	pair_close(b);
	kfree(tv);
}

/* Frees what badarg_connected() created (the bctx, not the sides, is checked at the end). */
int badarg_connected_free(struct bctx *b)
{
	int bad = 0;

#define F(call, h) do { if (h && call(h)) bad++; h = NULL; } while (0)
	F(rkdapl_psp_free, b->psp);
	F(rkdapl_rmr_free, b->rmr);
	F(rkdapl_rmr_free, b->rmr_x);
	F(rkdapl_lmr_free, b->lmr_a);
	F(rkdapl_lmr_free, b->lmr_b);
	F(rkdapl_lmr_free, b->lmr_k);
	F(rkdapl_lmr_free, b->lmr_ro);
	F(rkdapl_lmr_free, b->lmr_lw);
	F(rkdapl_lmr_free, b->lmr_rd);
	F(rkdapl_lmr_free, b->lmr_x);
	F(rkdapl_lmr_free, b->lmr_sp);
	if (b->c) {
		F(rkdapl_evd_free, b->c->dto_evd);
		F(rkdapl_evd_free, b->c->conn_evd);
	}
	if (b->s) {
		F(rkdapl_evd_free, b->s->dto_evd);
		F(rkdapl_evd_free, b->s->conn_evd);
	}
#undef F
	if (!bad) {
		sparse_free(&b->sp);
		vfree(b->bufa);
		kfree(b->bufb);
		kfree(b->bufx);
	}
	kfree(b->c);
	kfree(b->s);
	return bad;
}
