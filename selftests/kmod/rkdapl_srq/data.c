// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_srq: role=server (one SRQ, 8 EPs on it, three phases: every message verified and
 * counted, the low watermark, teardown with RECVs outstanding) and role=client (8 EPs that send
 * what the server asks for). main.c describes both.
 */
#include "srq.h"

/* ---- server --------------------------------------------------------------------------------- */

struct srv {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *conn_evd, *psp_evd, *async_evd, *flush_evd, *evd[NEP_MAX];
	struct rkdapl_psp *psp;
	struct rkdapl_srq *srq;
	struct rkdapl_ep *ep[NEP_MAX];
	int client_of[NEP_MAX];
	u32 per_ep[NEP_MAX];
	u8 *rbuf, *sbuf;
	struct rkdapl_lmr *rlmr, *slmr;
	bool posted[SRQ_N];
	u8 seen[NEP_MAX][MSG_MAX];
	u32 bad;		/* messages that failed a check */
	char why[160];
};

static int srv_post(struct srv *s, u32 c)
{
	struct rkdapl_lmr_triplet t = { s->rlmr, (u64)c * SLOT, SLOT };
	int r = rkdapl_srq_post_recv(s->srq, &t, 1, c);

	if (!r)
		s->posted[c] = true;
	return r;
}

static int ep_index(struct srv *s, struct rkdapl_ep *ep)
{
	int i;

	for (i = 0; i < neps; i++)
		if (s->ep[i] == ep)
			return i;
	return -1;
}

static void bad(struct srv *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->bad++) {
		va_start(ap, fmt);
		vscnprintf(s->why, sizeof(s->why), fmt, ap);
		va_end(ap);
	}
}

/* Checks one RECV completion taken from EP @i's EVD; reposts the RECV if @repost. */
static void srv_recv(struct srv *s, int i, const struct rkdapl_event *ev, bool repost)
{
	const struct smsg *m;
	u32 c = ev->cookie, k;

	if (ev->ep != s->ep[i])
		return bad(s, "a RECV on EP %d's EVD names another EP", i);
	if (ev->op != RKDAPL_DTO_RECV || ev->status)
		return bad(s, "EP %d: op %u status %d", i, ev->op, ev->status);
	if (c >= SRQ_N || !s->posted[c])
		return bad(s, "EP %d: cookie %u was not posted", i, c);
	s->posted[c] = false;
	m = (const struct smsg *)(s->rbuf + (u64)c * SLOT);
	if (m->magic != MAGIC || m->client != s->client_of[i] || m->seq >= MSG_MAX)
		return bad(s, "EP %d: header %x client %u (want %d) seq %u", i, m->magic,
			   m->client, s->client_of[i], m->seq);
	if (ev->transferred_length != m->len || m->len != msg_len(m->client, m->seq))
		return bad(s, "EP %d: %llu bytes, header says %u", i, ev->transferred_length,
			   m->len);
	for (k = 0; k < m->len - sizeof(*m); k++)
		if (m->data[k] != pat(m->client, m->seq, k))
			return bad(s, "EP %d: message %u byte %u differs", i, m->seq, k);
	if (s->seen[m->client][m->seq]++)
		return bad(s, "client %u message %u received twice", m->client, m->seq);
	s->per_ep[i]++;
	memset(s->rbuf + (u64)c * SLOT, 0, SLOT);
	if (repost && srv_post(s, c))
		bad(s, "repost of RECV %u failed", c);
}

/* Collects @want RECV completions from the EPs' EVDs (SEND completions of commands are
 * checked and skipped). Returns how many arrived.
 */
static u32 srv_collect(struct srv *s, u32 want, bool repost)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	struct rkdapl_event ev;
	u32 got = 0;
	int i;

	while (got < want && time_before(jiffies, end)) {
		bool any = false;

		for (i = 0; i < neps; i++) {
			while (!rkdapl_evd_dequeue(s->evd[i], &ev)) {
				any = true;
				if (ev.type != RKDAPL_DTO_COMPLETION_EVENT) {
					bad(s, "EP %d: event %u on its DTO EVD", i, ev.type);
					continue;
				}
				if (ev.op == RKDAPL_DTO_SEND) {
					if (ev.status)
						bad(s, "EP %d: command SEND status %d", i, ev.status);
					continue;
				}
				srv_recv(s, i, &ev, repost);
				got++;
			}
		}
		if (!any)
			usleep_range(200, 500);
	}
	return got;
}

static int srv_cmd(struct srv *s, int i, u32 op, u32 n, u32 seq0)
{
	struct cmd *c = (struct cmd *)(s->sbuf + (u64)i * SLOT);
	struct rkdapl_lmr_triplet t = { s->slmr, (u64)i * SLOT, sizeof(*c) };

	c->magic = MAGIC;
	c->op = op;
	c->n = n;
	c->seq0 = seq0;
	return rkdapl_post_send(s->ep[i], &t, 1, 1000 + i, 0);
}

/* Every client sends @n messages from sequence number @seq0 on each EP; all are collected. */
static bool srv_round(struct srv *s, u32 n, u32 seq0, bool repost, const char *name)
{
	u32 got, want = n * neps;
	int i, r = 0;

	s->bad = 0;
	for (i = 0; i < neps && !r; i++)
		r = srv_cmd(s, i, CMD_SEND, n, seq0);
	if (r)
		return tap(false, name, "command SEND: %d", r);
	got = srv_collect(s, want, repost);
	return tap(got == want && !s->bad, name, "%u of %u messages; %u bad (%s)", got, want,
		   s->bad, s->bad ? s->why : "-");
}

static int srv_limit_event(struct srv *s, u32 ms)
{
	struct rkdapl_event ev;
	int r = wait_ev(s->async_evd, ms, &ev);

	if (r)
		return r;
	if (ev.type != RKDAPL_ASYNC_SRQ_LIMIT_REACHED || ev.cookie != (u64)(uintptr_t)s->srq)
		return -EPROTO;
	return 0;
}

int server_run(void)
{
	struct srv *s = kzalloc(sizeof(*s), GFP_KERNEL);
	struct rkdapl_srq_attr a = { .max_recv_dtos = SRQ_N, .max_recv_iov = 1 };
	struct rkdapl_event ev;
	unsigned long end;
	u32 c, nflushed = 0, twice = 0, est = 0, outstanding, total;
	int i, r;

	if (!s)
		return tap(false, "server: memory", "kzalloc"), -ENOMEM;
	s->rbuf = kzalloc(SRQ_N * SLOT, GFP_KERNEL);
	s->sbuf = kzalloc(NEP_MAX * SLOT, GFP_KERNEL);
	if (!s->rbuf || !s->sbuf) {
		tap(false, "server: memory", "kzalloc");
		goto out_mem;
	}
	r = rkdapl_ia_open(dev, &s->ia);
	if (!expect(r, 0, "server: ia_open"))
		goto out_mem;
	r = rkdapl_pz_create(s->ia, &s->pz);
	r = r ?: rkdapl_evd_create(s->ia, 256, &s->conn_evd);
	r = r ?: rkdapl_evd_create(s->ia, 64, &s->psp_evd);
	r = r ?: rkdapl_evd_create(s->ia, 64, &s->async_evd);
	r = r ?: rkdapl_evd_create(s->ia, 256, &s->flush_evd);
	r = r ?: rkdapl_ia_set_async_evd(s->ia, s->async_evd);
	r = r ?: rkdapl_lmr_create(s->pz, s->rbuf, SRQ_N * SLOT, RKDAPL_MEM_LOCAL_WRITE, &s->rlmr);
	r = r ?: rkdapl_lmr_create(s->pz, s->sbuf, NEP_MAX * SLOT, 0, &s->slmr);
	for (i = 0; i < neps && !r; i++)
		r = rkdapl_evd_create(s->ia, 1024, &s->evd[i]);
	if (!expect(r, 0, "server: PZ, EVDs, LMRs"))
		goto out;
	r = rkdapl_srq_create(s->pz, s->flush_evd, &a, &s->srq);
	if (!expect(r, 0, "server: srq_create (64 RECVs, 1 segment)"))
		goto out;
	memset(&a, 0, sizeof(a));
	r = rkdapl_srq_query(s->srq, &a);
	tap(!r && a.max_recv_dtos == SRQ_N && a.max_recv_iov == 1 && !a.outstanding &&
	    a.max_srq_dtos >= SRQ_N && a.max_srq_iov >= 1, "server: srq_query after create",
	    "r %d: %u RECVs, %u iov, %u outstanding, device %u/%u", r, a.max_recv_dtos,
	    a.max_recv_iov, a.outstanding, a.max_srq_dtos, a.max_srq_iov);
	for (c = 0, r = 0; c < SRQ_N && !r; c++)
		r = srv_post(s, c);
	expect(r, 0, "server: 64 RECVs posted to the SRQ");
	r = rkdapl_srq_query(s->srq, &a);
	tap(!r && a.outstanding == SRQ_N, "server: srq_query counts 64 outstanding",
	    "r %d, %u", r, a.outstanding);
	r = rkdapl_psp_create(s->ia, port, 16, s->psp_evd, &s->psp);
	if (!expect(r, 0, "server: psp_create"))
		goto out;
	pr_info("# listening on port %u\n", port);

	/* Accept @neps connections, each on its own EP on the SRQ. */
	for (i = 0; i < neps; i++) {
		r = wait_ev(s->psp_evd, i ? timeout_ms : listen_ms, &ev);
		if (r || ev.type != RKDAPL_CONNECTION_REQUEST_EVENT) {
			tap(false, "server: connection requests", "request %d: r %d type %u", i, r,
			    r ? 0 : ev.type);
			goto out;
		}
		s->client_of[i] = ev.private_data_len ? ev.private_data[0] : -1;
		r = rkdapl_ep_create_with_srq(s->pz, s->evd[i], s->conn_evd, s->srq, NULL, &s->ep[i]);
		if (r) {
			expect(r, 0, "server: ep_create_with_srq");
			rkdapl_cr_reject(ev.cr, NULL, 0);
			goto out;
		}
		if (!i) {
			struct rkdapl_lmr_triplet t = { s->rlmr, 0, SLOT };

			expect(rkdapl_post_recv(s->ep[0], &t, 1, 7, 0), -EINVAL,
			       "server: post_recv on an EP of an SRQ refused (-EINVAL)");
		}
		r = rkdapl_cr_accept(ev.cr, s->ep[i], NULL, 0);
		if (!expect(r, 0, "server: cr_accept on an EP of the SRQ"))
			goto out;
	}
	end = jiffies + msecs_to_jiffies(timeout_ms);
	while (est < neps && time_before(jiffies, end)) {
		if (wait_ev(s->conn_evd, timeout_ms, &ev))
			break;
		if (ev.type == RKDAPL_CONNECTION_EVENT_ESTABLISHED && ep_index(s, ev.ep) >= 0)
			est++;
	}
	if (!tap(est == neps, "server: EPs sharing one SRQ established", "%u of %u", est, neps))
		goto out;
	r = rkdapl_srq_free(s->srq);
	expect(r, -EBUSY, "server: srq_free with EPs on it refused (-EBUSY)");

	/* 1: every message verified and counted. */
	srv_round(s, nmsg, 0, true, "server: phase 1: every message on the right EP, verified, counted once");
	total = 0;
	for (i = 0; i < neps; i++)
		total += s->per_ep[i];
	tap(total == nmsg * neps, "server: phase 1: total RECV completions", "%u", total);
	for (i = 0, r = 0; i < neps; i++)
		r += s->per_ep[i] == nmsg;
	tap(r == neps, "server: phase 1: each EP consumed exactly its messages", "%d EPs", r);
	r = rkdapl_srq_query(s->srq, &a);
	tap(!r && a.outstanding == SRQ_N, "server: phase 1: the SRQ refilled (64 outstanding)",
	    "r %d, %u", r, a.outstanding);

	/* 2: the low watermark: one event, re-armed by set_lw. */
	r = rkdapl_srq_set_lw(s->srq, 40);
	expect(r, 0, "server: srq_set_lw(40)");
	rkdapl_srq_query(s->srq, &a);
	tap(a.low_watermark == 40, "server: srq_query shows the armed watermark", "%u",
	    a.low_watermark);
	srv_round(s, 3, nmsg, false, "server: phase 2: 3 more per EP, not reposted (40 left)");
	expect(srv_limit_event(s, 500), -ETIMEDOUT, "server: no limit event with 40 left");
	srv_round(s, 1, nmsg + 3, false, "server: phase 2: 1 more per EP (32 left)");
	expect(srv_limit_event(s, timeout_ms), 0,
	       "server: RKDAPL_ASYNC_SRQ_LIMIT_REACHED with the SRQ's handle");
	expect(srv_limit_event(s, 500), -ETIMEDOUT, "server: the watermark fires once");
	r = rkdapl_srq_query(s->srq, &a);
	tap(!r && a.low_watermark == 0 && a.outstanding == SRQ_N - 4 * neps,
	    "server: srq_query: watermark disarmed, outstanding counted", "r %d lw %u out %u", r,
	    a.low_watermark, a.outstanding);
	expect(rkdapl_srq_set_lw(s->srq, 30), 0, "server: srq_set_lw(30) re-arms");
	srv_round(s, 1, nmsg + 4, false, "server: phase 2: 1 more per EP (24 left)");
	expect(srv_limit_event(s, timeout_ms), 0, "server: the re-armed watermark fires again");

	/* 3: teardown with RECVs outstanding. */
	r = rkdapl_srq_free(s->srq);
	expect(r, -EBUSY, "server: srq_free refused while EPs are on it");
	for (c = 0; c < SRQ_N && s->posted[c]; c++)
		;
	r = c < SRQ_N ? srv_post(s, c) : -ENOSPC;
	expect(r, 0, "server: the SRQ still takes a RECV after the refused free");
	rkdapl_srq_query(s->srq, &a);
	outstanding = a.outstanding;
	for (i = 0, r = 0; i < neps && !r; i++)
		r = srv_cmd(s, i, CMD_BYE, 0, 0);
	expect(r, 0, "server: BYE to every client");
	end = jiffies + msecs_to_jiffies(timeout_ms);
	for (est = 0; est < neps && time_before(jiffies, end);) {
		if (wait_ev(s->conn_evd, timeout_ms, &ev))
			break;
		if (ev.type == RKDAPL_CONNECTION_EVENT_DISCONNECTED)
			est++;
	}
	tap(est == neps, "server: every EP disconnected", "%u of %u", est, neps);
	for (i = 0; i < neps; i++) {
		rkdapl_ep_free(s->ep[i]);
		s->ep[i] = NULL;
	}
	for (i = 0, r = 0; i < neps; i++)
		while (!rkdapl_evd_dequeue(s->evd[i], &ev))
			r += ev.op == RKDAPL_DTO_RECV;
	expect(r, 0, "server: EP teardown reported none of the SRQ's RECVs");
	r = rkdapl_srq_free(s->srq);
	if (expect(r, 0, "server: srq_free after the EPs are freed"))
		s->srq = NULL;
	while (!rkdapl_evd_dequeue(s->flush_evd, &ev)) {
		c = ev.cookie;
		if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.op != RKDAPL_DTO_RECV ||
		    ev.status != RKDAPL_DTO_FLUSHED || ev.ep || c >= SRQ_N || !s->posted[c]) {
			twice++;
			continue;
		}
		s->posted[c] = false;
		nflushed++;
	}
	for (c = 0, r = 0; c < SRQ_N; c++)
		r += s->posted[c];
	tap(nflushed == outstanding && outstanding == SRQ_N - 5 * neps + 1 && !twice && !r,
	    "server: each outstanding RECV reported FLUSHED exactly once on the SRQ's EVD",
	    "%u flushed of %u outstanding, %u unexpected, %d never reported", nflushed,
	    outstanding, twice, r);
	pr_info("# SRQ: %u messages verified, %u RECVs flushed at free\n",
		(nmsg + 5) * neps, nflushed);
	r = rkdapl_lmr_free(s->rlmr);
	if (expect(r, 0, "server: the RECV LMR is no longer busy"))
		s->rlmr = NULL;
out:
	for (i = 0; i < neps; i++)
		if (s->ep[i])
			rkdapl_ep_free(s->ep[i]);
	if (s->srq)
		rkdapl_srq_free(s->srq);
	if (s->psp)
		rkdapl_psp_free(s->psp);
	if (s->rlmr)
		rkdapl_lmr_free(s->rlmr);
	if (s->slmr)
		rkdapl_lmr_free(s->slmr);
	for (i = 0; i < neps; i++)
		if (s->evd[i])
			rkdapl_evd_free(s->evd[i]);
	if (s->flush_evd)
		rkdapl_evd_free(s->flush_evd);
	if (s->async_evd)
		rkdapl_evd_free(s->async_evd);
	if (s->psp_evd)
		rkdapl_evd_free(s->psp_evd);
	if (s->conn_evd)
		rkdapl_evd_free(s->conn_evd);
	if (s->pz)
		rkdapl_pz_free(s->pz);
	if (s->ia)
		rkdapl_ia_close(s->ia);
out_mem:
	kfree(s->sbuf);
	kfree(s->rbuf);
	kfree(s);
	return 0;
}

/* ---- client --------------------------------------------------------------------------------- */

struct cli {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd[NEP_MAX];
	struct rkdapl_ep *ep[NEP_MAX];
	u8 *cbuf, *sbuf;
	struct rkdapl_lmr *clmr, *slmr;
	u32 sent;
	/*
	 * The server's next command can complete its RECV before our last SEND's completion is
	 * reported: the EP's send and receive queues complete on two CQs, and DAT orders the
	 * EVD's events of each queue, not across them. cli_send() keeps such an event here.
	 */
	bool early[NEP_MAX];
	struct rkdapl_event early_ev[NEP_MAX];
};

static int cli_post_cmd(struct cli *k, int i)
{
	struct rkdapl_lmr_triplet t = { k->clmr, (u64)i * SLOT, SLOT };

	return rkdapl_post_recv(k->ep[i], &t, 1, 2000 + i, 0);
}

/* Connects EP @i (retrying while the server is not listening yet). */
static int cli_connect(struct cli *k, int i, struct sockaddr_in *sin, unsigned long end)
{
	struct rkdapl_event ev;
	u8 pd = i;
	int r;

	for (;;) {
		r = rkdapl_ep_create(k->pz, k->evd[i], k->evd[i], NULL, &k->ep[i]);
		if (r)
			return r;
		r = rkdapl_ep_connect(k->ep[i], (struct sockaddr *)sin, 2000, &pd, 1);
		if (!r)
			r = wait_ev(k->evd[i], timeout_ms, &ev);
		if (!r && ev.type == RKDAPL_CONNECTION_EVENT_ESTABLISHED)
			return cli_post_cmd(k, i);
		rkdapl_ep_free(k->ep[i]);
		k->ep[i] = NULL;
		if (!time_before(jiffies, end))
			return r ?: -ECONNREFUSED;
		msleep(500);
	}
}

static int cli_send(struct cli *k, int i, u32 seq)
{
	struct smsg *m = (struct smsg *)(k->sbuf + (u64)i * SLOT);
	u32 len = msg_len(i, seq), j;
	struct rkdapl_lmr_triplet t = { k->slmr, (u64)i * SLOT, len };
	struct rkdapl_event ev;
	int r;

	m->magic = MAGIC;
	m->client = i;
	m->seq = seq;
	m->len = len;
	for (j = 0; j < len - sizeof(*m); j++)
		m->data[j] = pat(i, seq, j);
	r = rkdapl_post_send(k->ep[i], &t, 1, seq, 0);
	if (r)
		return r;
	for (;;) {
		r = wait_ev(k->evd[i], timeout_ms, &ev);
		if (r)
			return r;
		if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.op != RKDAPL_DTO_RECV ||
		    k->early[i])
			break;
		/* The next command, ahead of this SEND's completion (see struct cli). */
		k->early[i] = true;
		k->early_ev[i] = ev;
	}
	if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.op != RKDAPL_DTO_SEND || ev.status)
		return -EPROTO;
	k->sent++;
	return 0;
}

int client_run(void)
{
	struct cli *k = kzalloc(sizeof(*k), GFP_KERNEL);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	unsigned long end = jiffies + msecs_to_jiffies(connect_ms);
	struct rkdapl_event ev;
	bool done[NEP_MAX] = {};
	int i, r, ndone = 0, fail = 0;
	u32 j, n, seq0;

	if (!k)
		return -ENOMEM;
	if (!in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		tap(false, "client: peer address", "'%s'", peer);
		goto out_mem;
	}
	k->cbuf = kzalloc(NEP_MAX * SLOT, GFP_KERNEL);
	k->sbuf = kzalloc(NEP_MAX * SLOT, GFP_KERNEL);
	if (!k->cbuf || !k->sbuf)
		goto out_mem;
	r = rkdapl_ia_open(dev, &k->ia);
	r = r ?: rkdapl_pz_create(k->ia, &k->pz);
	r = r ?: rkdapl_lmr_create(k->pz, k->cbuf, NEP_MAX * SLOT, RKDAPL_MEM_LOCAL_WRITE, &k->clmr);
	r = r ?: rkdapl_lmr_create(k->pz, k->sbuf, NEP_MAX * SLOT, 0, &k->slmr);
	for (i = 0; i < neps && !r; i++)
		r = rkdapl_evd_create(k->ia, 256, &k->evd[i]);
	if (!expect(r, 0, "client: IA, PZ, LMRs, EVDs"))
		goto out;
	for (i = 0, r = 0; i < neps && !r; i++)
		r = cli_connect(k, i, &sin, end);
	if (!expect(r, 0, "client: EPs connected to the server's SRQ EPs"))
		goto out;
	end = jiffies + msecs_to_jiffies(listen_ms);
	while (ndone < neps && !fail && time_before(jiffies, end)) {
		bool any = false;

		for (i = 0; i < neps && !fail; i++) {
			struct cmd *c = (struct cmd *)(k->cbuf + (u64)i * SLOT);

			if (done[i])
				continue;
			if (k->early[i]) {
				ev = k->early_ev[i];
				k->early[i] = false;
			} else if (rkdapl_evd_dequeue(k->evd[i], &ev)) {
				continue;
			}
			any = true;
			if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.op != RKDAPL_DTO_RECV ||
			    ev.status || c->magic != MAGIC) {
				fail = -EPROTO;
				break;
			}
			if (c->op == CMD_BYE) {
				rkdapl_ep_disconnect(k->ep[i]);
				done[i] = true;
				ndone++;
				continue;
			}
			/* Read before the RECV is posted again into the same slot. */
			n = c->n;
			seq0 = c->seq0;
			r = cli_post_cmd(k, i);
			for (j = 0; j < n && !r; j++)
				r = cli_send(k, i, seq0 + j);
			if (r)
				fail = r;
		}
		if (!any)
			usleep_range(200, 500);
	}
	tap(!fail && ndone == neps, "client: sent every message asked for, then BYE",
	    "error %d, %d of %u EPs done", fail, ndone, neps);
	pr_info("# client: %u messages sent\n", k->sent);
out:
	for (i = 0; i < neps; i++)
		if (k->ep[i])
			rkdapl_ep_free(k->ep[i]);
	if (k->slmr)
		rkdapl_lmr_free(k->slmr);
	if (k->clmr)
		rkdapl_lmr_free(k->clmr);
	for (i = 0; i < neps; i++)
		if (k->evd[i])
			rkdapl_evd_free(k->evd[i]);
	if (k->pz)
		rkdapl_pz_free(k->pz);
	if (k->ia)
		rkdapl_ia_close(k->ia);
out_mem:
	kfree(k->sbuf);
	kfree(k->cbuf);
	kfree(k);
	return 0;
}

