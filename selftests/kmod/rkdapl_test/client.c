// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test role=client: the data tests against a server. */
#include "rkdapl_test.h"

static const u64 sizes[] = { 0, 1, 1023, 1024, 1025, 4096, BIGBUF };

static int client_connect(struct side *s, const struct sockaddr_storage *sin, char *why)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(connect_ms);
	struct rkdapl_event ev = {};
	int attempts = 0, r;

	for (;;) {
		attempts++;
		r = rkdapl_ep_create(s->pz, s->dto_evd, s->conn_evd, NULL, &s->ep);
		if (r) {
			snprintf(why, WHY, "ep_create = %d %s", r, ename(r));
			return r;
		}
		/*
		 * The RECV of the server's first message (HELLO), before connecting: the server
		 * may SEND as soon as it sees the connection, and iWARP has no RNR retry.
		 */
		r = post_rx(s, why);
		if (r)
			return r;
		r = rkdapl_ep_connect(s->ep, (const struct sockaddr *)sin, 5000, CLIENT_PDATA,
				      sizeof(CLIENT_PDATA));
		if (r) {
			snprintf(why, WHY, "attempt %d: ep_connect = %d %s", attempts, r, ename(r));
		} else {
			r = ev_wait(s->conn_evd, timeout_ms, &ev);
			if (r) {
				snprintf(why, WHY, "attempt %d: no connection event: %d %s",
					 attempts, r, ename(r));
				return r;
			}
			if (ev.type == RKDAPL_CONNECTION_EVENT_ESTABLISHED) {
				if (ev.ep != s->ep) {
					snprintf(why, WHY, "ESTABLISHED names EP %p, not %p",
						 ev.ep, s->ep);
					return -EPROTO;
				}
				if (ev.private_data_len < sizeof(SERVER_PDATA) ||
				    memcmp(ev.private_data, SERVER_PDATA, sizeof(SERVER_PDATA))) {
					snprintf(why, WHY,
						 "ESTABLISHED lacks the server's private data (len %u)",
						 ev.private_data_len);
					return -EPROTO;
				}
				return 0;
			}
			snprintf(why, WHY, "attempt %d: event %u (%s) status %d", attempts,
				 ev.type, evname(ev.type), ev.status);
		}
		if (attempts <= 3)	/* the first failures say the most */
			pr_info("rkdapl_test: # client: %s\n", why);
		rkdapl_ep_free(s->ep);
		s->ep = NULL;
		evd_drain(s->dto_evd);	/* the RECV of this attempt, FLUSHED */
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		msleep(500);
	}
}

/* Sends a command and waits for its answer, then posts the next answer's RECV. */
static int rpc(struct side *s, u32 cmd, u64 len, u32 seed, struct tmsg *rep, char *why)
{
	struct tmsg m = { .cmd = cmd, .seq = ++s->seq, .len = len, .seed = seed };
	int r;

	r = send_msg(s, &m, why);
	if (!r)
		r = recv_msg(s, rep, why);
	if (!r && cmd != CMD_BYE)
		r = post_rx(s, why);
	if (r)
		return r;
	if (rep->seq != m.seq) {
		snprintf(why, WHY, "answer to command %u has seq %u, expected %u", cmd, rep->seq,
			 m.seq);
		s->dead = true;
		return -EPROTO;
	}
	return 0;
}

/* Checks a READY/RESULT answer. */
static int answer_ok(const struct tmsg *rep, u32 cmd, char *why)
{
	if (rep->cmd != cmd) {
		snprintf(why, WHY, "server answered %u, expected %u", rep->cmd, cmd);
		return -EPROTO;
	}
	if (rep->status) {
		snprintf(why, WHY, "%s (status %d)", rep->why[0] ? rep->why : "server failed",
			 rep->status);
		return rep->status;
	}
	return 0;
}

/* Sends a command that prepares a data test and checks that its answer is READY. */
static int prepare(struct side *s, u32 cmd, u64 len, u32 seed, char *why)
{
	struct tmsg rep;
	int r = rpc(s, cmd, len, seed, &rep, why);

	return r ?: answer_ok(&rep, CMD_READY, why);
}

/* Waits for the RESULT of the command in flight (seq s->seq), then posts the next RECV. */
static int wait_result(struct side *s, char *why)
{
	struct tmsg rep;
	int r = recv_msg(s, &rep, why);

	r = r ?: post_rx(s, why);
	if (!r && rep.seq != s->seq) {
		snprintf(why, WHY, "result has seq %u, expected %u", rep.seq, s->seq);
		s->dead = true;
		r = -EPROTO;
	}
	return r ?: answer_ok(&rep, CMD_RESULT, why);
}

/* An RDMA WRITE or READ of the first @len bytes of the local buffer, to or from the grant. */
static int rdma(struct side *s, bool write, u64 len, char *why)
{
	struct rkdapl_lmr_triplet t = { s->r_lmr, 0, len };
	struct rkdapl_rmr_triplet rt = { s->raddr, s->rkey, 0, len };
	u64 c = next_cookie(s);
	int r = write ? rkdapl_post_rdma_write(s->ep, &t, 1, &rt, c, 0) :
			rkdapl_post_rdma_read(s->ep, &t, 1, &rt, c, 0);

	if (r) {
		snprintf(why, WHY, "post_rdma_%s(%llu bytes) = %d %s", write ? "write" : "read",
			 len, r, ename(r));
		return r;
	}
	return dto_expect(s, c, write ? RKDAPL_DTO_RDMA_WRITE : RKDAPL_DTO_RDMA_READ, len, why);
}

/* Fills the first @len bytes of @buf, registered as @lmr, with the pattern of @seed. */
static void fill(u8 *buf, struct rkdapl_lmr *lmr, u64 len, u32 seed)
{
	pat_fill(buf, 0, len, seed);
	if (len)
		rkdapl_lmr_sync_rdma_read(lmr, 0, len);
}

static int do_send(struct side *s, u64 len, u32 seed, char *why)
{
	struct rkdapl_lmr_triplet t = { s->d_lmr, 0, len };
	u64 c;
	int r;

	r = prepare(s, CMD_SEND_PREP, len, seed, why);
	if (r)
		return r;
	fill(s->dbuf, s->d_lmr, len, seed);
	c = next_cookie(s);
	r = rkdapl_post_send(s->ep, &t, 1, c, 0);
	if (r) {
		snprintf(why, WHY, "post_send(%llu bytes) = %d %s", len, r, ename(r));
		s->dead = true;	/* the server waits for the data */
		return r;
	}
	r = dto_expect(s, c, RKDAPL_DTO_SEND, len, why);
	return r ?: wait_result(s, why);
}

static int do_rdma_write(struct side *s, u64 len, u32 seed, char *why)
{
	struct tmsg rep;
	int r;

	r = prepare(s, CMD_WRITE_PREP, len, seed, why);
	if (r)
		return r;
	fill(s->rbuf, s->r_lmr, len, seed);
	r = rdma(s, true, len, why);
	r = r ?: rpc(s, CMD_CHECK, len, seed, &rep, why);
	return r ?: answer_ok(&rep, CMD_RESULT, why);
}

/* Poisons the first @len bytes of the READ sink @buf (@lmr) and the @g guard bytes after them. */
static void read_sink_poison(u8 *buf, struct rkdapl_lmr *lmr, u64 len, u64 g, u32 seed)
{
	pat_fill(buf, 0, len + g, poison_seed(seed));
	rkdapl_lmr_sync_rdma_read(lmr, 0, len + g);
}

/* After a READ of @len bytes into @buf (@lmr): the pattern of @seed, then the guard untouched. */
static int read_sink_check(u8 *buf, struct rkdapl_lmr *lmr, u64 len, u64 g, u32 seed,
			   const char *what, char *why)
{
	s64 bad;

	rkdapl_lmr_sync_rdma_write(lmr, 0, len + g);
	bad = pat_check(buf, 0, len, seed);
	if (bad >= 0) {
		snprintf(why, WHY, "%sbyte %lld read wrong", what, bad);
		return -EILSEQ;
	}
	bad = pat_check(buf, len, g, poison_seed(seed));
	if (bad >= 0) {
		snprintf(why, WHY, "%slocal buffer written past the end, at %lld", what, bad);
		return -EOVERFLOW;
	}
	return 0;
}

static int do_rdma_read(struct side *s, u64 len, u32 seed, char *why)
{
	u64 g = min_t(u64, GUARD, s->rlen - len);
	int r;

	r = prepare(s, CMD_READ_PREP, len, seed, why);
	if (r)
		return r;
	read_sink_poison(s->rbuf, s->r_lmr, len, g, seed);
	r = rdma(s, false, len, why);
	return r ?: read_sink_check(s->rbuf, s->r_lmr, len, g, seed, "", why);
}

/*
 * An RDMA READ of @len bytes posted in one chain right behind a 1 MiB READ of the same grant
 * (into the other local buffer): its request reaches the responder while the 1 MiB response is
 * still queued or being sent, so the responder has to queue this one too (siw: in its IRQ,
 * the inbound READ queue). siw sent a queued 0-byte response with the SGE of the previous
 * response, 1 MiB, which the requester refuses with a TERMINATE
 * (docs/upstream/siw-zero-length-read-response.md).
 */
static int do_read_behind(struct side *s, u64 len, u32 seed, char *why)
{
	u64 g = min_t(u64, GUARD, s->rlen - len);
	struct rkdapl_lmr_triplet t[2] = { { s->d_lmr, 0, BIGBUF }, { s->r_lmr, 0, len } };
	struct rkdapl_dto d[2] = {
		{ .op = RKDAPL_DTO_RDMA_READ, .iov = &t[0], .num_iov = 1,
		  .remote = { s->raddr, s->rkey, 0, BIGBUF } },
		{ .op = RKDAPL_DTO_RDMA_READ, .iov = &t[1], .num_iov = 1,
		  .remote = { s->raddr, s->rkey, 0, len } },
	};
	u32 posted = 0;
	int r;

	r = prepare(s, CMD_READ_PREP, BIGBUF, seed, why);
	if (r)
		return r;
	read_sink_poison(s->dbuf, s->d_lmr, BIGBUF, 0, seed);
	read_sink_poison(s->rbuf, s->r_lmr, len, g, seed);
	d[0].cookie = next_cookie(s);
	d[1].cookie = next_cookie(s);
	r = rkdapl_post_chain(s->ep, d, 2, &posted);
	if (r) {
		snprintf(why, WHY, "post_chain(2 RDMA READs) = %d %s, posted %u", r, ename(r),
			 posted);
		s->dead = posted > 0;
		return r;
	}
	r = dto_expect(s, d[0].cookie, RKDAPL_DTO_RDMA_READ, BIGBUF, why);
	r = r ?: dto_expect(s, d[1].cookie, RKDAPL_DTO_RDMA_READ, len, why);
	r = r ?: read_sink_check(s->dbuf, s->d_lmr, BIGBUF, 0, seed, "1 MiB READ: ", why);
	return r ?: read_sink_check(s->rbuf, s->r_lmr, len, g, seed, "", why);
}

/*
 * iWARP (no RDMA WRITE with immediate): the WRITE_IMM is refused with -EOPNOTSUPP before
 * anything is posted; in the chain the WRITE before it is posted and completes.
 */
static int write_imm_refused(struct side *s, struct rkdapl_dto *d,
			     struct rkdapl_lmr_triplet *t, bool chain, char *why)
{
	u32 posted = ~0u;
	int r;

	d[0].cookie = next_cookie(s);
	d[1].cookie = next_cookie(s);
	if (chain)
		r = rkdapl_post_chain(s->ep, d, 2, &posted);
	else
		r = rkdapl_post_rdma_write_imm(s->ep, &t[1], 1, &d[1].remote, d[1].immediate,
					       d[1].cookie, 0);
	if (r != -EOPNOTSUPP || (chain && posted != 1)) {
		snprintf(why, WHY, "%s = %d %s, posted %u; want -EOPNOTSUPP%s",
			 chain ? "post_chain" : "post_rdma_write_imm", r, ename(r), posted,
			 chain ? ", 1 posted" : "");
		return -EPROTO;
	}
	return chain ? dto_expect(s, d[0].cookie, RKDAPL_DTO_RDMA_WRITE, t[0].length, why) : 0;
}

/* WRITE @wlen bytes, then WRITE_IMM @len - @wlen bytes, in one chain if @chain. */
static int write_imm_common(struct side *s, u64 len, u32 seed, bool chain, char *why)
{
	u64 wlen = chain ? len / 2 : 0;
	struct rkdapl_lmr_triplet t[2] = { { s->r_lmr, 0, wlen }, { s->r_lmr, wlen, len - wlen } };
	struct rkdapl_dto d[2] = {
		{ .op = RKDAPL_DTO_RDMA_WRITE, .iov = &t[0], .num_iov = 1,
		  .remote = { s->raddr, s->rkey, 0, wlen } },
		{ .op = RKDAPL_DTO_RDMA_WRITE_IMM, .iov = &t[1], .num_iov = 1, .immediate = seed,
		  .remote = { s->raddr + wlen, s->rkey, 0, len - wlen } },
	};
	struct tmsg m = { .cmd = CMD_WRITE_IMM_PREP, .seq = ++s->seq, .len = len, .seed = seed,
			  .addr = len - wlen };
	struct tmsg rep;
	u32 posted = 0;
	int r;

	if (!(s->attr.caps & RKDAPL_CAP_RDMA_WRITE_IMM))
		return write_imm_refused(s, d, t, chain, why);
	r = send_msg(s, &m, why);
	r = r ?: recv_msg(s, &rep, why);
	r = r ?: post_rx(s, why);
	r = r ?: answer_ok(&rep, CMD_READY, why);
	if (r)
		return r;
	fill(s->rbuf, s->r_lmr, len, seed);
	d[0].cookie = next_cookie(s);
	d[1].cookie = next_cookie(s);
	if (chain)
		r = rkdapl_post_chain(s->ep, d, 2, &posted);
	else
		r = rkdapl_post_rdma_write_imm(s->ep, &t[1], 1, &d[1].remote, seed, d[1].cookie,
					       0);
	if (r) {
		snprintf(why, WHY, "%s(%llu bytes) = %d %s, posted %u",
			 chain ? "post_chain" : "post_rdma_write_imm", len, r, ename(r), posted);
		s->dead = true;	/* the server waits for the write */
		return r;
	}
	if (chain)
		r = dto_expect(s, d[0].cookie, RKDAPL_DTO_RDMA_WRITE, wlen, why);
	r = r ?: dto_expect(s, d[1].cookie, RKDAPL_DTO_RDMA_WRITE_IMM, len - wlen, why);
	return r ?: wait_result(s, why);
}

static int do_rdma_write_imm(struct side *s, u64 len, u32 seed, char *why)
{
	return write_imm_common(s, len, seed, false, why);
}

static int do_chain(struct side *s, u64 len, u32 seed, char *why)
{
	return write_imm_common(s, len, seed, true, why);
}

/*
 * The command message goes as SEND with invalidate of the grant's rkey; the server checks
 * that the grant ended and binds it again: the new grant is used from here on.
 */
static int do_invalidate(struct side *s, char *why)
{
	struct tmsg m = { .cmd = CMD_INVALIDATED, .seq = ++s->seq };
	struct tmsg rep;
	int r;

	r = send_msg_inv(s, &m, s->rkey, why);
	r = r ?: recv_msg(s, &rep, why);
	r = r ?: post_rx(s, why);
	r = r ?: answer_ok(&rep, CMD_RESULT, why);
	if (r)
		return r;
	if (rep.rkey == s->rkey || rep.len != s->rgranted) {
		snprintf(why, WHY, "new grant: rkey %#x (old %#x), %llu bytes", rep.rkey, s->rkey,
			 rep.len);
		return -EPROTO;
	}
	s->rkey = rep.rkey;
	s->raddr = rep.addr;
	return 0;
}

int client_run(void)
{
	static const struct {
		const char *name;
		int (*fn)(struct side *s, u64 len, u32 seed, char *why);
	} ops[] = {
		{ "send", do_send },
		{ "rdma_write", do_rdma_write },
		{ "rdma_read", do_rdma_read },
		{ "rdma_read behind a 1 MiB rdma_read:", do_read_behind },
		{ "rdma_write_imm", do_rdma_write_imm },
		{ "chain of rdma_write + rdma_write_imm", do_chain },
	};
	struct side *s = kzalloc(sizeof(*s), GFP_KERNEL);
	struct rkdapl_event ev = {};
	struct sockaddr_storage sin;
	char why[WHY] = "", name[96];
	u32 base = get_random_u32();
	struct tmsg m;
	bool ok;
	int r, i, j;

	if (!s)
		return tap(false, "client: setup", "out of memory"), -ENOMEM;
	s->who = "client";
	if (parse_addr(&sin, peer, port)) {	/* IPv4 or IPv6 (net.c) */
		tap(false, "client: setup", "bad peer address '%s'", peer);
		goto out;
	}
	r = side_open(s, false, why);
	if (!tap(!r, "client: setup (ia, pz, evds, lmrs)", "%s", why))
		goto out;
	r = client_connect(s, &sin, why);
	if (!tap(!r, "client: connect (with private data both ways)", "%pISpc: %s", &sin, why))
		goto out;
	check_ep_peer(s);	/* with peer=: ep_query's remote_addr (net.c) */
	if (is_iwarp(&s->attr)) {
		/* the connecting side sends first (docs/upstream/siw-mpa-early-fpdu.md) */
		m = (struct tmsg){ .cmd = CMD_START };
		r = send_msg(s, &m, why);
		if (!tap(!r, "client: iWARP: the first message is the client's (START)", "%s",
			 why))
			goto bye;
	}
	r = recv_msg(s, &m, why);	/* into the RECV posted before connecting */
	if (!r)
		r = post_rx(s, why);
	/* the server's whole buffer, or max_rmr_pages pages of it (siw: 256, 1 MiB) */
	if (!r && (m.cmd != CMD_HELLO || m.len != s->rgrant || m.len < BIGBUF)) {
		snprintf(why, WHY, "first message %u, grant of %llu bytes (want %llu)", m.cmd,
			 m.len, s->rgrant);
		r = -EPROTO;
	}
	if (!tap(!r, "client: grant received", "%s", why))
		goto bye;
	s->rkey = m.rkey;
	s->raddr = m.addr;
	s->rgranted = m.len;
	r = do_invalidate(s, why);
	if (!tap(!r, "client: send_with_invalidate ends the server's grant; it grants again with a new rkey",
		 "%s", why))
		goto bye;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		for (j = 0; j < ARRAY_SIZE(sizes); j++) {
			u32 seed = mix32(base + i * 64 + j + 1);

			snprintf(name, sizeof(name), "%s %llu bytes", ops[i].name, sizes[j]);
			/* iWARP: the same test names with the refusal checked (write_imm_refused) */
			if ((ops[i].fn == do_rdma_write_imm || ops[i].fn == do_chain) &&
			    !(s->attr.caps & RKDAPL_CAP_RDMA_WRITE_IMM))
				snprintf(name, sizeof(name), "%s %llu bytes refused (iWARP)",
					 ops[i].name, sizes[j]);
			if (s->dead) {
				tap(false, name, "connection lost earlier: %s", why);
				continue;
			}
			why[0] = 0;
			r = ops[i].fn(s, sizes[j], seed, why);
			tap(!r, name, "%s", why);
		}
	}
bye:
	if (!s->dead) {
		r = rpc(s, CMD_BYE, 0, 0, &m, why);
		if (!r)
			r = answer_ok(&m, CMD_RESULT, why);
		tap(!r, "client: BYE answered (server unbound its grant)", "%s", why);
	}
	r = rkdapl_ep_disconnect(s->ep);
	if (tap(!r, "client: ep_disconnect", "%d %s", r, ename(r))) {
		r = conn_expect(s->conn_evd, s->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
				timeout_ms, &ev);
		tap(!r, "client: DISCONNECTED event", "%s, event %u (%s)", ename(r), ev.type,
		    evname(ev.type));
	}
out:
	WRITE_ONCE(server_abort, true);
	r = side_close(s, why);
	ok = tap(!r, "client: teardown (every free returns 0)", "%d failed: %s", r, why);
	kfree(s);
	return ok ? 0 : -EIO;
}
