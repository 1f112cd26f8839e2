// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: completions at disconnect, EVD overflow, teardown, suppression. */
#include "rkdapl_test.h"

/*
 * An RDMA WRITE that waits for a free DTO slot: -ENOSPC is the documented answer while
 * max_request_dtos DTOs are outstanding (suppressed ones free theirs only when a later one
 * completes). Gives up after timeout_ms.
 */
static int post_write_wait(struct rkdapl_ep *ep, struct rkdapl_lmr_triplet *t,
			   struct rkdapl_rmr_triplet *rt, u64 cookie, u32 flags, int *waits)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	int r;

	while ((r = rkdapl_post_rdma_write(ep, t, 1, rt, cookie, flags)) == -ENOSPC &&
	       time_before(jiffies, deadline)) {
		(*waits)++;
		usleep_range(500, 1000);
	}
	return r;
}

/*
 * What completes when: RECVs flushed by a disconnect, events lost to a full EVD, every work
 * request exactly once when EPs are freed with work in flight, and suppressed completions.
 */
void completion_tests(struct bctx *b)
{
	struct rkdapl_lmr_triplet t1;
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_rmr *rmr_f = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	u32 st = ~0u;
	u64 c;
	int r, i;

	/* --- graceful disconnect: events, flushed RECVs, state, ENOTCONN --- */
	r = pair_connect(b, why);
	if (tap(!r, "new connection for disconnect tests", "%s", why)) {
		u64 cs, cc;

		t1 = (struct rkdapl_lmr_triplet){ b->lmr_a, 0, 64 };
		cs = next_cookie(b->s);
		expect(rkdapl_post_recv(b->s->ep, &t1, 1, cs, 0), 0, "post_recv on the passive side");
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
		cc = next_cookie(b->c);
		expect(rkdapl_post_recv(b->c->ep, &t1, 1, cc, 0), 0, "post_recv on the active side");
		expect(rkdapl_ep_disconnect(b->c->ep), 0, "ep_disconnect(connected EP)");
		r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
				timeout_ms, &ev);
		tap(!r, "DISCONNECTED on the disconnecting side", "%s, event %u (%s)", ename(r),
		    ev.type, evname(ev.type));
		r = conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
				timeout_ms, &ev);
		tap(!r, "DISCONNECTED on the peer", "%s, event %u (%s)", ename(r), ev.type,
		    evname(ev.type));
		r = wait_cookie(b->c, cc, &ev);
		tap(!r && ev.status == RKDAPL_DTO_FLUSHED && ev.op == RKDAPL_DTO_RECV,
		    "RECV posted on the disconnecting EP completes FLUSHED",
		    "%s, status %d (%s), op %u", ename(r), ev.status, stname(ev.status), ev.op);
		r = rkdapl_ep_get_state(b->c->ep, &st);
		tap(!r && st == RKDAPL_EP_STATE_DISCONNECTED,
		    "ep_get_state after disconnect is DISCONNECTED", "returned %d, state %u", r, st);
		expect(rkdapl_ep_disconnect(b->c->ep), -ENOTCONN, "ep_disconnect(disconnected EP)");
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
		expect(rkdapl_post_send(b->c->ep, &t1, 1, next_cookie(b->c), 0), -ENOTCONN,
		       "post_send(disconnected EP)");
		expect(rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&b->self, 1000, NULL, 0),
		       -EISCONN, "ep_connect(disconnected EP)");
		/* The peer's RECV completes FLUSHED by the time ep_free() returns, at the latest. */
		expect(rkdapl_ep_free(b->s->ep), 0, "ep_free(peer EP with a RECV posted)");
		b->s->ep = NULL;
		r = wait_cookie(b->s, cs, &ev);
		tap(!r && ev.status == RKDAPL_DTO_FLUSHED && ev.op == RKDAPL_DTO_RECV,
		    "RECV posted on the peer completes FLUSHED (disconnect or ep_free)",
		    "%s, status %d (%s), op %u", ename(r), ev.status, stname(ev.status), ev.op);
	}
	pair_close(b);

	/* --- a full EVD: lost events are counted and reported first --- */
	{
		struct rkdapl_evd *dto = b->c->dto_evd, *small = NULL;
		int kept = 0, posted = 0, first = 0;
		u64 lost = 0;

		r = rkdapl_evd_create(b->ia, 2, &small);
		if (!r) {
			b->c->dto_evd = small;
			r = pair_connect(b, why);
		} else {
			snprintf(why, WHY, "evd_create(qlen 2) = %d %s", r, ename(r));
		}
		if (tap(!r, "connection whose DTO EVD holds 2 events", "%s", why)) {
			for (i = 0; i < 5; i++) {
				t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 64 * i, 64 };
				if (!rkdapl_post_recv(b->c->ep, &t1, 1, next_cookie(b->c), 0))
					posted++;
			}
			/* ep_free() flushes the 5 RECVs into the 2-entry EVD. */
			r = rkdapl_ep_free(b->c->ep);
			b->c->ep = NULL;
			for (i = 0; rkdapl_evd_dequeue(small, &ev) == 0 && i < 100; i++) {
				if (ev.type == RKDAPL_ASYNC_EVD_OVERFLOW) {
					if (!i && ev.status == -EOVERFLOW)
						first = 1;
					lost += ev.transferred_length;
				} else if (ev.type == RKDAPL_DTO_COMPLETION_EVENT) {
					kept++;
				}
			}
			tap(posted == 5 && !r && first && lost >= 1 && kept + lost == 5,
			    "EVD overflow: OVERFLOW event first (-EOVERFLOW), lost + kept = 5 flushed RECVs",
			    "posted %d, ep_free %d, overflow first %d, lost %llu, kept %d", posted, r,
			    first, lost, kept);
		}
		pair_close(b);
		b->c->dto_evd = dto;
		if (small)
			expect(rkdapl_evd_free(small), 0, "evd_free of the overflowed EVD");
	}

	/* --- teardown with work in flight: exactly one completion per posted work request --- */
	r = pair_grant(b, &rmr_f, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (tap(!r, "new connection and grant for the teardown-in-flight test", "%s", why)) {
		enum { NRECV = 8, NWRITE = 24 };
		u64 c0 = 0, s0 = 0, ck;
		u8 seen[NRECV + NWRITE] = {}, sseen[NRECV] = {};
		int posted = 0, sposted = 0, nbad = 0, dup = 0, other = 0, done = 0, flushed = 0;
		int eperr = 0;

		/* Cookies come from one counter: each side's block of cookies is contiguous. */
		for (i = 0; i < NRECV; i++) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 64 * i, 64 };
			ck = next_cookie(b->c);
			c0 = c0 ?: ck;
			posted += !rkdapl_post_recv(b->c->ep, &t1, 1, ck, 0);
		}
		for (i = 0; i < NWRITE; i++) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, BUFSZ };
			posted += !rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, next_cookie(b->c), 0);
		}
		for (i = 0; i < NRECV; i++) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_a, 64 * i, 64 };
			ck = next_cookie(b->s);
			s0 = s0 ?: ck;
			sposted += !rkdapl_post_recv(b->s->ep, &t1, 1, ck, 0);
		}
		/* Free both EPs at once: rkdapl drains each QP before it destroys it. */
		r = rkdapl_ep_free(b->c->ep);
		b->c->ep = NULL;
		expect(r, 0, "ep_free(EP with RDMA WRITEs and RECVs in flight)");
		expect(rkdapl_ep_free(b->s->ep), 0, "ep_free(peer EP with RECVs posted)");
		b->s->ep = NULL;
		while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev)) {
			if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.cookie < c0 ||
			    ev.cookie >= c0 + NRECV + NWRITE) {
				other++;
				continue;
			}
			dup += seen[ev.cookie - c0]++ > 0;
			/*
			 * iWARP (siw): the WRITE being sent when the QP goes to the error
			 * state completes LOCAL_EP_ERROR, not FLUSHED; only one is sent at a time.
			 */
			if (ev.status == RKDAPL_DTO_LOCAL_EP_ERROR && is_iwarp(&b->attr) &&
			    ev.op == RKDAPL_DTO_RDMA_WRITE)
				eperr++;
			else
				nbad += ev.status != RKDAPL_DTO_SUCCESS &&
					ev.status != RKDAPL_DTO_FLUSHED;
			flushed += ev.status == RKDAPL_DTO_FLUSHED;
			done++;
		}
		tap(posted == NRECV + NWRITE && done == posted && !dup && !nbad && !other &&
		    eperr <= 1,
		    is_iwarp(&b->attr) ?
		    "iWARP: teardown in flight: ep_free with 24 RDMA WRITEs and 8 RECVs posted: each completes exactly once, SUCCESS or FLUSHED (the WRITE being sent: LOCAL_EP_ERROR)" :
		    "teardown in flight: ep_free with 24 RDMA WRITEs and 8 RECVs posted: each completes exactly once, SUCCESS or FLUSHED",
		    "posted %d, completions %d (%d flushed, %d LOCAL_EP_ERROR), duplicates %d, bad status %d, other events %d",
		    posted, done, flushed, eperr, dup, nbad, other);
		done = dup = nbad = other = 0;
		while (!rkdapl_evd_dequeue(b->s->dto_evd, &ev)) {
			if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.cookie < s0 ||
			    ev.cookie >= s0 + NRECV) {
				other++;
				continue;
			}
			dup += sseen[ev.cookie - s0]++ > 0;
			nbad += ev.status != RKDAPL_DTO_FLUSHED;
			done++;
		}
		tap(sposted == NRECV && done == sposted && !dup && !nbad && !other,
		    "teardown in flight: the peer's 8 RECVs each complete exactly once, FLUSHED",
		    "posted %d, completions %d, duplicates %d, not FLUSHED %d, other events %d",
		    sposted, done, dup, nbad, other);
	}
	pair_close(b);
	if (rmr_f) {
		expect(rkdapl_rmr_free(rmr_f), 0, "rmr_free of the teardown test's grant");
		rmr_f = NULL;
	}

	/*
	 * --- selective signalling (RKDAPL_COMPLETION_SUPPRESS): suppressed DTOs report no
	 * event, their data arrives, their slots come back through later completions, a failed
	 * one still reports, and ep_free releases the LMRs of those still outstanding ---
	 */
	r = pair_grant(b, &rmr_f, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (tap(!r, "new connection and grant for the selective-signalling test", "%s", why)) {
		enum { CHUNK = 64, N = BUFSZ / CHUNK };
		struct rkdapl_rmr_triplet rc = rt;
		struct rkdapl_lmr *lmr_s = NULL;
		int posted = 0, nospc = 0, extra = 0;
		s64 off;

		pat_fill(b->bufb, 0, BUFSZ, 0x5e1ec7);
		rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, BUFSZ);
		memset(b->bufa, 0, BUFSZ);
		rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, BUFSZ);
		/* 256 suppressed WRITEs on an EP of 64 DTO slots: they must give slots back */
		r = 0;
		rc.length = CHUNK;
		while (!r && posted < N) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, posted * CHUNK, CHUNK };
			rc.address = rt.address + posted * CHUNK;
			r = post_write_wait(b->c->ep, &t1, &rc, next_cookie(b->c),
					    RKDAPL_COMPLETION_SUPPRESS, &nospc);
			posted += !r;
		}
		tap(posted == N, "selective signalling: 256 suppressed RDMA WRITEs post on an EP of 64 DTOs",
		    "posted %d, last error %d %s, -ENOSPC waits %d", posted, r, ename(r), nospc);
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, CHUNK };
		rc.address = rt.address;
		c = next_cookie(b->c);
		r = post_write_wait(b->c->ep, &t1, &rc, c, 0, &nospc);
		r = r ?: wait_cookie(b->c, c, &ev);
		msleep(100);
		while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
			extra++;
		tap(!r && ev.status == RKDAPL_DTO_SUCCESS && !b->c->nstash && !extra,
		    "selective signalling: a signalled WRITE after them completes; no suppressed one reports an event",
		    "%d %s, status %d (%s), suppressed events %d", r, ename(r), ev.status,
		    stname(ev.status), b->c->nstash + extra);
		b->c->nstash = 0;
		rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, BUFSZ);
		off = pat_check(b->bufa, 0, BUFSZ, 0x5e1ec7);
		tap(off < 0, "selective signalling: the data of every suppressed WRITE arrived",
		    "first wrong byte at %lld", off);
		/* outside the grant: a suppressed DTO that fails reports its event */
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, CHUNK };
		rc.address = rt.address + BUFSZ;
		c = next_cookie(b->c);
		r = post_write_wait(b->c->ep, &t1, &rc, c, RKDAPL_COMPLETION_SUPPRESS, &nospc);
		if (is_iwarp(&b->attr)) {
			iwarp_suppressed_refused(b, r, c);
		} else {
			r = r ?: wait_cookie(b->c, c, &ev);
			tap(!r && ev.status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
			    "selective signalling: a suppressed WRITE outside the grant reports REMOTE_ACCESS_ERROR",
			    "%d %s, status %d (%s)", r, ename(r), ev.status, stname(ev.status));
		}
		pair_close(b);
		/* suppressed DTOs still outstanding at ep_free: their LMR is released */
		r = rkdapl_rmr_free(rmr_f);
		rmr_f = NULL;
		r = r ?: pair_grant(b, &rmr_f, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
		r = r ?: rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &lmr_s);
		posted = 0;
		for (i = 0; !r && i < 8; i++) {
			t1 = (struct rkdapl_lmr_triplet){ lmr_s, i * CHUNK, CHUNK };
			rc.address = rt.address + i * CHUNK;
			posted += !rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rc, next_cookie(b->c),
							  RKDAPL_COMPLETION_SUPPRESS);
		}
		pair_close(b);
		if (lmr_s) {
			r = rkdapl_lmr_free(lmr_s);
			tap(posted == 8 && !r,
			    "selective signalling: ep_free with 8 suppressed WRITEs outstanding releases their LMR",
			    "posted %d, lmr_free = %d %s", posted, r, ename(r));
		} else {
			tap(false, "selective signalling: ep_free with 8 suppressed WRITEs outstanding releases their LMR",
			    "setup: %d %s %s", r, ename(r), why);
		}
	}
	pair_close(b);
	if (rmr_f) {
		expect(rkdapl_rmr_free(rmr_f), 0, "rmr_free of the selective-signalling test's grant");
		rmr_f = NULL;
	}
}
