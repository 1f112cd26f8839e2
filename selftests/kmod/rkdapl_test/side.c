// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test: one side of a connection, its events and messages (server and client). */
#include "rkdapl_test.h"

/* ------------------------------------------------------------------------------------------ */
/* One side of a connection, and waiting for its events */

u64 next_cookie(struct side *s)
{
	static atomic64_t c = ATOMIC64_INIT(0x1000);

	return s->cookie = atomic64_inc_return(&c);
}

/* Waits at most @ms for an event on @evd. */
int ev_wait(struct rkdapl_evd *evd, u32 ms, struct rkdapl_event *ev)
{
	return rkdapl_evd_wait(evd, ms ? ms : 1, ev);
}

/* Waits for the event carrying @cookie on the DTO EVD; other events are kept for later. */
int wait_cookie(struct side *s, u64 cookie, struct rkdapl_event *ev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	long left;
	int i, r;

	for (i = 0; i < s->nstash; i++) {
		if (s->stash[i].cookie == cookie) {
			*ev = s->stash[i];
			s->stash[i] = s->stash[--s->nstash];
			return 0;
		}
	}
	for (;;) {
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		r = ev_wait(s->dto_evd, jiffies_to_msecs(left), ev);
		if (r)
			return r;
		if (ev->type == RKDAPL_ASYNC_EVD_OVERFLOW)
			return -EOVERFLOW;
		if (ev->cookie == cookie && (ev->type == RKDAPL_DTO_COMPLETION_EVENT ||
					     ev->type == RKDAPL_RMR_BIND_COMPLETION_EVENT))
			return 0;
		if (s->nstash == STASH)
			return -ENOSPC;
		s->stash[s->nstash++] = *ev;
	}
}

/* Waits for the completion of @cookie and checks it: type, op, status, EP, length (>= 0). */
int dto_expect(struct side *s, u64 cookie, u32 op, s64 len, char *why)
{
	bool bind = op == RKDAPL_DTO_RMR_BIND || op == RKDAPL_DTO_RMR_UNBIND;
	struct rkdapl_event ev = {};
	int r = wait_cookie(s, cookie, &ev);

	if (r) {
		snprintf(why, WHY, "%s: no %s completion (cookie %llu): %d %s", s->who, opname(op),
			 cookie, r, ename(r));
		s->dead = true;
		return r;
	}
	if (ev.status == RKDAPL_DTO_FLUSHED && op == RKDAPL_DTO_SEND && s->last_send)
		return 0;
	if (ev.status != RKDAPL_DTO_SUCCESS) {
		snprintf(why, WHY, "%s: %s completed with status %d (%s)", s->who, opname(op),
			 ev.status, stname(ev.status));
		s->dead = true;
		return -EIO;
	}
	if (ev.type != (bind ? RKDAPL_RMR_BIND_COMPLETION_EVENT : RKDAPL_DTO_COMPLETION_EVENT) ||
	    ev.op != op) {
		snprintf(why, WHY, "%s: %s completion is event %u (%s) op %u (%s)", s->who,
			 opname(op), ev.type, evname(ev.type), ev.op, opname(ev.op));
		return -EPROTO;
	}
	if (!bind && ev.ep != s->ep) {
		snprintf(why, WHY, "%s: %s completion names EP %p, not %p", s->who, opname(op),
			 ev.ep, s->ep);
		return -EPROTO;
	}
	if (len >= 0 && ev.transferred_length != (u64)len) {
		snprintf(why, WHY, "%s: %s transferred_length %llu, expected %lld", s->who,
			 opname(op), ev.transferred_length, len);
		return -EPROTO;
	}
	s->last = ev;
	return 0;
}

/*
 * Waits for a connection event of @type for @ep on @evd (events of other EPs, e.g. freed ones,
 * are skipped). Returns 0, -EPROTO with the event in @ev if another event came, or an error.
 */
int conn_expect(struct rkdapl_evd *evd, struct rkdapl_ep *ep, u32 type, u32 ms,
		       struct rkdapl_event *ev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);
	long left;
	int r;

	for (;;) {
		left = (long)(deadline - jiffies);
		r = left > 0 ? ev_wait(evd, jiffies_to_msecs(left), ev) : -ETIMEDOUT;
		if (r) {
			memset(ev, 0, sizeof(*ev));	/* no stale event in the diagnostics */
			return r;
		}
		if (ep && ev->ep != ep && ev->type != RKDAPL_CONNECTION_REQUEST_EVENT)
			continue;
		return ev->type == type ? 0 : -EPROTO;
	}
}

void evd_drain(struct rkdapl_evd *evd)
{
	struct rkdapl_event ev = {};

	while (evd && rkdapl_evd_dequeue(evd, &ev) == 0)
		;
}

/* ------------------------------------------------------------------------------------------ */
/* The message protocol */

/* Sends a message; with @inv_rkey != 0 as SEND with invalidate of that rkey. */
int send_msg_inv(struct side *s, struct tmsg *m, u32 inv_rkey, char *why)
{
	struct rkdapl_lmr_triplet t = { s->msg_lmr, 0, sizeof(*m) };
	u64 c = next_cookie(s);
	int r;

	m->magic = TMSG_MAGIC;
	memcpy(s->msg, m, sizeof(*m));
	rkdapl_lmr_sync_rdma_read(s->msg_lmr, 0, sizeof(*m));
	r = inv_rkey ? rkdapl_post_send_with_invalidate(s->ep, &t, 1, inv_rkey, c, 0) :
		       rkdapl_post_send(s->ep, &t, 1, c, 0);
	if (r) {
		snprintf(why, WHY, "%s: post_send(message) = %d %s", s->who, r, ename(r));
		s->dead = true;
		return r;
	}
	return dto_expect(s, c, inv_rkey ? RKDAPL_DTO_SEND_INVALIDATE : RKDAPL_DTO_SEND,
			  sizeof(*m), why);
}

int send_msg(struct side *s, struct tmsg *m, char *why)
{
	return send_msg_inv(s, m, 0, why);
}

int post_rx(struct side *s, char *why)
{
	struct rkdapl_lmr_triplet t = { s->msg_lmr, SLOT, SLOT };
	int r;

	s->rx_cookie = next_cookie(s);
	r = rkdapl_post_recv(s->ep, &t, 1, s->rx_cookie, 0);
	if (r) {
		snprintf(why, WHY, "%s: post_recv(message) = %d %s", s->who, r, ename(r));
		s->dead = true;
	}
	return r;
}

/* Waits for the message RECV; does not post the next one. */
int recv_msg(struct side *s, struct tmsg *m, char *why)
{
	int r = dto_expect(s, s->rx_cookie, RKDAPL_DTO_RECV, sizeof(*m), why);

	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(s->msg_lmr, SLOT, sizeof(*m));
	memcpy(m, s->msg + SLOT, sizeof(*m));
	m->why[sizeof(m->why) - 1] = 0;
	if (m->magic != TMSG_MAGIC) {
		snprintf(why, WHY, "%s: message with bad magic %#x", s->who, m->magic);
		s->dead = true;
		return -EPROTO;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Setting up and tearing down a side */

int side_open(struct side *s, bool server, char *why)
{
	int r;

	s->server = server;
	r = side_ia_open(s, why);	/* net.c: by dev=, or local=, in netns_pid='s namespace */
	if (r)
		return r;
	r = rkdapl_ia_query(s->ia, &s->attr);
	if (!r)
		r = rkdapl_pz_create(s->ia, &s->pz);
	if (!r)
		r = rkdapl_evd_create(s->ia, 256, &s->dto_evd);
	if (!r)
		r = rkdapl_evd_create(s->ia, 16, &s->conn_evd);
	if (!r && server)
		r = rkdapl_evd_create(s->ia, 16, &s->psp_evd);
	if (r) {
		snprintf(why, WHY, "ia_query/pz_create/evd_create = %d %s", r, ename(r));
		return r;
	}

	s->msg = kzalloc(2 * SLOT, GFP_KERNEL);
	/* SEND data must be one DMA segment: kmalloc memory is physically contiguous. */
	s->dlen = server ? BIGBUF + PAGE_SIZE : BIGBUF;
	s->dbuf = kmalloc(s->dlen, GFP_KERNEL);
	/*
	 * RDMA: vmalloc memory, so that a 1 MiB DTO is split into several work requests
	 * (256 pages, 8 x max_iov SGEs), unless the device's max_iov is too small for that.
	 */
	s->rlen = BIGBUF + PAGE_SIZE;
	s->rgrant = min_t(u64, s->rlen, (u64)s->attr.max_rmr_pages * PAGE_SIZE);
	s->rbuf_vmalloc = server || 8ULL * s->attr.max_iov >= BIGBUF / PAGE_SIZE;
	s->rbuf = s->rbuf_vmalloc ? vmalloc(s->rlen) : kmalloc(s->rlen, GFP_KERNEL);
	if (!s->msg || !s->dbuf || !s->rbuf) {
		snprintf(why, WHY, "out of memory");
		return -ENOMEM;
	}
	memset(s->dbuf, 0, s->dlen);
	memset(s->rbuf, 0, s->rlen);
	r = rkdapl_lmr_create(s->pz, s->msg, 2 * SLOT, RKDAPL_MEM_LOCAL_WRITE, &s->msg_lmr);
	if (!r)
		r = rkdapl_lmr_create(s->pz, s->dbuf, s->dlen, RKDAPL_MEM_LOCAL_WRITE, &s->d_lmr);
	if (!r)
		r = rkdapl_lmr_create(s->pz, s->rbuf, s->rlen,
				      RKDAPL_MEM_LOCAL_WRITE |
				      (server ? RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE : 0),
				      &s->r_lmr);
	if (!r && server)
		r = rkdapl_rmr_create(s->pz, &s->rmr);
	if (r) {
		snprintf(why, WHY, "lmr_create/rmr_create = %d %s", r, ename(r));
		return r;
	}
	return 0;
}

/* Frees everything; returns the number of frees that did not return 0 (reasons in @why). */
int side_close(struct side *s, char *why)
{
	int bad = 0, r;
	bool lmr_ok = true;

#define FREE(call, h) do {							\
		if (h) {							\
			r = call(h);						\
			if (r) {						\
				if (!bad)					\
					snprintf(why, WHY, "%s = %d %s", #call,	\
						 r, ename(r));			\
				bad++;						\
			}							\
			h = NULL;						\
		}							\
	} while (0)

	FREE(rkdapl_ep_free, s->ep);
	FREE(rkdapl_psp_free, s->psp);
	FREE(rkdapl_rmr_free, s->rmr);
	if (s->msg_lmr || s->d_lmr || s->r_lmr) {
		int b0 = bad;

		FREE(rkdapl_lmr_free, s->msg_lmr);
		FREE(rkdapl_lmr_free, s->d_lmr);
		FREE(rkdapl_lmr_free, s->r_lmr);
		lmr_ok = bad == b0;
	}
	FREE(rkdapl_evd_free, s->dto_evd);
	FREE(rkdapl_evd_free, s->conn_evd);
	FREE(rkdapl_evd_free, s->psp_evd);
	FREE(rkdapl_pz_free, s->pz);
	FREE(rkdapl_ia_close, s->ia);
#undef FREE
	/* A buffer whose LMR could not be freed may still be mapped: leak it rather. */
	if (lmr_ok) {
		kfree(s->msg);
		kfree(s->dbuf);
		if (s->rbuf_vmalloc)
			vfree(s->rbuf);
		else
			kfree(s->rbuf);
	}
	s->msg = s->dbuf = s->rbuf = NULL;
	return bad;
}

int parse_peer(struct sockaddr_in *sin, u16 p)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(p);
	if (!peer || !peer[0] || !in4_pton(peer, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	return 0;
}
