// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test role=server: serves the client's data tests (the message protocol). */
#include "rkdapl_test.h"

bool server_abort;	/* loopback: the client gave up before connecting */

static int srv_reply(struct side *s, const struct tmsg *in, u32 cmd, int status, s64 bad,
		     const char *text, char *why)
{
	struct tmsg m = {
		.cmd = cmd, .seq = in->seq, .seed = in->seed, .len = in->len,
		.status = status, .bad = bad,
	};

	if (text)
		strscpy(m.why, text, sizeof(m.why));
	return send_msg(s, &m, why);
}

/*
 * Checks @len bytes of @buf against the pattern of @seed and the @g bytes after them against
 * its poison: 0, or -EILSEQ (a byte of the data) or -EOVERFLOW (a byte after it) with the
 * byte's offset in @bad and "server: <@data> <offset> wrong" or "server: <@after> <offset>"
 * in @text.
 */
static int srv_verify(const u8 *buf, u64 len, u64 g, u32 seed, const char *data,
		      const char *after, s64 *bad, char *text)
{
	*bad = pat_check(buf, 0, len, seed);
	if (*bad >= 0) {
		snprintf(text, sizeof_field(struct tmsg, why), "server: %s %lld wrong", data, *bad);
		return -EILSEQ;
	}
	*bad = pat_check(buf, len, g, poison_seed(seed));
	if (*bad >= 0) {
		snprintf(text, sizeof_field(struct tmsg, why), "server: %s %lld", after, *bad);
		return -EOVERFLOW;
	}
	return 0;
}

/*
 * Posts a RECV of the first @len bytes of the SEND buffer ahead of the next command's RECV
 * (RECVs are consumed in the order posted), answers @m with READY and waits for that RECV's
 * completion, in @ev. Returns 0; 1 if the RECV could not be posted (READY told the client);
 * < 0 if the connection failed (@why says how).
 */
static int srv_data_recv(struct side *s, const struct tmsg *m, u64 len, const char *what,
			 struct rkdapl_event *ev, char *why)
{
	struct rkdapl_lmr_triplet t = { s->d_lmr, 0, len };
	char text[sizeof_field(struct tmsg, why)];
	u64 dc = next_cookie(s);
	int r = rkdapl_post_recv(s->ep, &t, 1, dc, 0);

	if (r) {
		snprintf(text, sizeof(text), "server: post_recv(%s) = %d %s", what, r, ename(r));
		r = post_rx(s, why);
		return r ?: srv_reply(s, m, CMD_READY, -EIO, -1, text, why) ?: 1;
	}
	r = post_rx(s, why);
	r = r ?: srv_reply(s, m, CMD_READY, 0, -1, NULL, why);
	if (r)
		return r;
	r = wait_cookie(s, dc, ev);
	if (r) {
		snprintf(why, WHY, "server: no RECV completion for the %s: %d %s", what, r,
			 ename(r));
		s->dead = true;
	}
	return r;
}

/* Handles one command; returns 1 after BYE, 0 to go on, < 0 if the connection failed. */
static int srv_command(struct side *s, struct tmsg *m, char *why)
{
	struct rkdapl_event ev = {};
	char text[96] = "";
	u64 len = m->len, g;
	s64 bad = -1;
	int st = 0, r;
	u64 dc;

	switch (m->cmd) {
	case CMD_SEND_PREP:
		if (len + GUARD > s->dlen) {
			r = post_rx(s, why);
			return r ?: srv_reply(s, m, CMD_READY, -EMSGSIZE, -1, "too long", why);
		}
		pat_fill(s->dbuf, 0, len + GUARD, poison_seed(m->seed));
		rkdapl_lmr_sync_rdma_read(s->d_lmr, 0, len + GUARD);
		r = srv_data_recv(s, m, s->dlen, "data", &ev, why);
		if (r)
			return r > 0 ? 0 : r;
		if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.op != RKDAPL_DTO_RECV ||
		    ev.status != RKDAPL_DTO_SUCCESS || ev.ep != s->ep) {
			snprintf(text, sizeof(text),
				 "server: data RECV event %u op %u status %d (%s) ep %s",
				 ev.type, ev.op, ev.status, stname(ev.status),
				 ev.ep == s->ep ? "ok" : "wrong");
			st = -EIO;
			if (ev.status != RKDAPL_DTO_SUCCESS) {
				snprintf(why, WHY, "%s", text);
				s->dead = true;
				return -EIO;
			}
		} else if (ev.transferred_length != len) {
			snprintf(text, sizeof(text), "server: received %llu bytes, expected %llu",
				 ev.transferred_length, len);
			st = -EMSGSIZE;
		} else {
			rkdapl_lmr_sync_rdma_write(s->d_lmr, 0, len + GUARD);
			st = srv_verify(s->dbuf, len, GUARD, m->seed, "received byte",
					"RECV buffer overwritten at", &bad, text);
		}
		return srv_reply(s, m, CMD_RESULT, st, bad, text, why);

	case CMD_WRITE_PREP:
	case CMD_READ_PREP:
	case CMD_CHECK:
		if (len > s->rlen) {
			r = post_rx(s, why);
			return r ?: srv_reply(s, m, m->cmd == CMD_CHECK ? CMD_RESULT : CMD_READY,
					      -EMSGSIZE, -1, "too long", why);
		}
		g = min_t(u64, GUARD, s->rlen - len);
		if (m->cmd == CMD_WRITE_PREP) {
			pat_fill(s->rbuf, 0, len + g, poison_seed(m->seed));
			rkdapl_lmr_sync_rdma_read(s->r_lmr, 0, len + g);
		} else if (m->cmd == CMD_READ_PREP) {
			pat_fill(s->rbuf, 0, len, m->seed);
			pat_fill(s->rbuf, len, g, poison_seed(m->seed));
			rkdapl_lmr_sync_rdma_read(s->r_lmr, 0, len + g);
		} else {
			rkdapl_lmr_sync_rdma_write(s->r_lmr, 0, len + g);
			st = srv_verify(s->rbuf, len, g, m->seed, "granted buffer byte",
					"written past the end, at", &bad, text);
		}
		r = post_rx(s, why);
		return r ?: srv_reply(s, m, m->cmd == CMD_CHECK ? CMD_RESULT : CMD_READY, st, bad,
				      text, why);

	case CMD_WRITE_IMM_PREP:
		if (len > s->rlen || s->dlen < GUARD) {
			r = post_rx(s, why);
			return r ?: srv_reply(s, m, CMD_READY, -EMSGSIZE, -1, "too long", why);
		}
		g = min_t(u64, GUARD, s->rlen - len);
		pat_fill(s->rbuf, 0, len + g, poison_seed(m->seed));
		rkdapl_lmr_sync_rdma_read(s->r_lmr, 0, len + g);
		pat_fill(s->dbuf, 0, GUARD, poison_seed(m->seed));
		rkdapl_lmr_sync_rdma_read(s->d_lmr, 0, GUARD);
		/* the RECV the write consumes */
		r = srv_data_recv(s, m, GUARD, "write", &ev, why);
		if (r)
			return r > 0 ? 0 : r;
		if (ev.op != RKDAPL_DTO_RECV || ev.status != RKDAPL_DTO_SUCCESS ||
		    ev.flags != (RKDAPL_EVENT_WITH_IMM | RKDAPL_EVENT_RDMA_WRITE_IMM) ||
		    ev.immediate != m->seed || ev.transferred_length != m->addr) {
			snprintf(text, sizeof(text),
				 "server: RECV op %u status %d flags %#x imm %#x (want %#x) length %llu (want %llu)",
				 ev.op, ev.status, ev.flags, ev.immediate, m->seed,
				 ev.transferred_length, m->addr);
			st = -EIO;
		} else {
			rkdapl_lmr_sync_rdma_write(s->r_lmr, 0, len + g);
			rkdapl_lmr_sync_rdma_write(s->d_lmr, 0, GUARD);
			st = srv_verify(s->rbuf, len, g, m->seed, "granted buffer byte",
					"written past the end, at", &bad, text);
			if (!st)
				bad = pat_check(s->dbuf, 0, GUARD, poison_seed(m->seed));
			if (!st && bad >= 0) {
				snprintf(text, sizeof(text), "server: RECV buffer written at %lld", bad);
				st = -EIO;
			}
		}
		return srv_reply(s, m, CMD_RESULT, st, bad, text, why);

	case CMD_INVALIDATED: {
		struct tmsg a = { .cmd = CMD_RESULT, .seq = m->seq };
		u32 old = s->rkey;

		if (!(s->last.flags & RKDAPL_EVENT_INVALIDATED) || s->last.invalidated_rkey != old) {
			snprintf(text, sizeof(text), "server: message RECV flags %#x rkey %#x, grant %#x",
				 s->last.flags, s->last.invalidated_rkey, old);
			st = -EPROTO;
		}
		r = rkdapl_rmr_unbind(s->rmr, s->ep, next_cookie(s));
		if (!st && r != -EINVAL) {
			snprintf(text, sizeof(text), "server: rmr_unbind after invalidation = %d %s",
				 r, ename(r));
			st = -EPROTO;
		}
		tap(!st, "server: a SEND with invalidate of the grant's rkey ended the grant",
		    "%s", text);
		dc = next_cookie(s);
		r = rkdapl_rmr_bind(s->rmr, s->r_lmr, 0, s->rgrant,
				    RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, s->ep, dc,
				    &s->rkey, &s->raddr);
		r = r ?: dto_expect(s, dc, RKDAPL_DTO_RMR_BIND, -1, why);
		if (r && !st) {
			snprintf(text, sizeof(text), "server: rmr_bind again = %d %s", r, ename(r));
			st = r;
		}
		r = post_rx(s, why);
		if (r)
			return r;
		a.status = st;
		a.rkey = s->rkey;
		a.addr = s->raddr;
		a.len = s->rgrant;
		strscpy(a.why, text, sizeof(a.why));
		return send_msg(s, &a, why);
	}

	case CMD_BYE:
		dc = next_cookie(s);
		r = rkdapl_rmr_unbind(s->rmr, s->ep, dc);
		if (r) {
			snprintf(text, sizeof(text), "server: rmr_unbind = %d %s", r, ename(r));
			st = r;
		} else {
			r = dto_expect(s, dc, RKDAPL_DTO_RMR_UNBIND, -1, why);
			if (r) {
				strscpy(text, why, sizeof(text));
				st = r;
			}
		}
		tap(!st, "server: rmr_unbind of the grant", "%s", text);
		s->last_send = true;
		r = srv_reply(s, m, CMD_RESULT, st, -1, text, why);
		s->last_send = false;
		return r ?: 1;

	default:
		snprintf(why, WHY, "server: unknown command %u", m->cmd);
		s->dead = true;
		return -EPROTO;
	}
}

int server_run(void)
{
	struct side *s = kzalloc(sizeof(*s), GFP_KERNEL);
	unsigned long deadline;
	struct rkdapl_event ev = {};
	struct tmsg m;
	char why[WHY] = "";
	bool ok, got;
	u64 bc;
	int r, n;

	if (!s)
		return tap(false, "server: setup", "out of memory"), -ENOMEM;
	s->who = "server";
	r = side_open(s, true, why);
	if (!tap(!r, "server: setup (ia, pz, evds, lmrs, rmr)", "%s", why))
		goto out;

	r = rkdapl_psp_create(s->ia, port, 8, s->psp_evd, &s->psp);
	if (!tap(!r, "server: psp_create", "psp_create(port %u) = %d %s", port, r, ename(r)))
		goto out;
	pr_info("rkdapl_test: # listening on port %u\n", port);

	/* Wait for the client, in slices so that loopback can give up. */
	deadline = jiffies + msecs_to_jiffies(listen_ms);
	got = false;
	while (!READ_ONCE(server_abort) && time_before(jiffies, deadline)) {
		r = ev_wait(s->psp_evd, 1000, &ev);
		if (r == -ETIMEDOUT)
			continue;
		if (r || ev.type == RKDAPL_CONNECTION_REQUEST_EVENT) {
			got = !r;
			break;
		}
	}
	if (!tap(got && ev.cr, "server: connection request",
		 "%s", r ? ename(r) : server_abort ? "client gave up" : "no CR in time"))
		goto out;
	tap(ev.private_data_len >= sizeof(CLIENT_PDATA) &&
	    !memcmp(ev.private_data, CLIENT_PDATA, sizeof(CLIENT_PDATA)),
	    "server: connection request carries the client's private data",
	    "private_data_len %u, data '%.*s'", ev.private_data_len,
	    (int)min_t(u32, ev.private_data_len, RKDAPL_MAX_PRIVATE_DATA), ev.private_data);

	check_cr_peer(s, ev.cr);	/* with peer=: the CR's remote_addr (net.c) */
	r = rkdapl_ep_create(s->pz, s->dto_evd, s->conn_evd, NULL, &s->ep);
	if (!tap(!r, "server: ep_create", "%d %s", r, ename(r))) {
		rkdapl_cr_reject(ev.cr, NULL, 0);
		goto out;
	}
	/* The RECV of the client's first command, before accepting (iWARP: no RNR retry). */
	r = post_rx(s, why);
	if (!tap(!r, "server: post_recv on the EP before cr_accept", "%s", why)) {
		rkdapl_cr_reject(ev.cr, NULL, 0);
		goto out;
	}
	r = rkdapl_cr_accept(ev.cr, s->ep, SERVER_PDATA, sizeof(SERVER_PDATA));
	if (!tap(!r, "server: cr_accept", "%d %s", r, ename(r)))
		goto out;
	bc = next_cookie(s);
	r = rkdapl_rmr_bind(s->rmr, s->r_lmr, 0, s->rgrant,
			    RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, s->ep, bc, &s->rkey,
			    &s->raddr);
	if (!tap(!r, "server: rmr_bind of the buffer on the accepting EP", "%d %s", r, ename(r)))
		goto out;
	r = conn_expect(s->conn_evd, s->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms, &ev);
	if (!tap(!r, "server: established", "%s, event %u (%s) status %d", ename(r), ev.type,
		 evname(ev.type), ev.status))
		goto out;
	check_ep_peer(s);		/* with peer=: ep_query's remote_addr (net.c) */
	if (is_iwarp(&s->attr)) {
		/*
		 * Nothing goes out before the client's first message: MPA (RFC 5044) has the
		 * connecting side send first (docs/upstream/siw-mpa-early-fpdu.md).
		 */
		r = recv_msg(s, &m, why);
		if (!r && m.cmd != CMD_START) {
			snprintf(why, WHY, "server: first message %u, not START", m.cmd);
			r = -EPROTO;
		}
		r = r ?: post_rx(s, why);
		if (!tap(!r, "server: iWARP: the client's START arrives before anything is sent",
			 "%s", why))
			goto out;
	}
	r = dto_expect(s, bc, RKDAPL_DTO_RMR_BIND, -1, why);
	if (!tap(!r, "server: rmr_bind completion", "%s", why))
		goto out;

	m = (struct tmsg){ .cmd = CMD_HELLO, .rkey = s->rkey, .addr = s->raddr, .len = s->rgrant };
	r = send_msg(s, &m, why);
	if (!tap(!r, "server: grant sent", "%s", why))
		goto out;

	/* Serve until BYE. */
	n = 0;
	for (;;) {
		r = recv_msg(s, &m, why);
		if (r)
			break;
		n++;
		r = srv_command(s, &m, why);
		if (r)
			break;
	}
	tap(r == 1, "server: command session ended by BYE", "after %d commands: %s", n, why);
	if (r == 1) {
		r = conn_expect(s->conn_evd, s->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
				timeout_ms, &ev);
		tap(!r, "server: disconnected by the client", "%s, event %u (%s)", ename(r),
		    ev.type, evname(ev.type));
	}
out:
	r = side_close(s, why);
	ok = tap(!r, "server: teardown (every free returns 0)", "%d failed: %s", r, why);
	kfree(s);
	return ok ? 0 : -EIO;
}
