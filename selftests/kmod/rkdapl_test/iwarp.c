// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test badarg on an iWARP device (siw): what the transport reports and refuses, in
 * place of the RNR tests (iWARP has no RNR retries).
 */
#include "rkdapl_test.h"

bool is_iwarp(const struct rkdapl_ia_attr *a)
{
	return a->transport == RKDAPL_TRANSPORT_IWARP;
}

/* The status of a connect the peer rejected: IB CM's REJ reason 28, iw_cm's -ECONNRESET. */
int rej_status(const struct bctx *b)
{
	return is_iwarp(&b->attr) ? -ECONNRESET : 28;
}

/*
 * Whether the client's RDMA WRITE that the peer must refuse (a grant that does not allow it,
 * too small, unbound or invalidated), completed with @status, was refused as the transport
 * does it. RoCE: REMOTE_ACCESS_ERROR (the responder's NAK). iWARP: the WRITE completes once
 * it is sent, SUCCESS, or LOCAL_EP_ERROR if the peer's TERMINATE came first (for a WRITE
 * split into work requests (@split) the later ones may be FLUSHED); the TERMINATE breaks the
 * connection: the client's EP must end (DISCONNECTED or BROKEN), which this waits for. Adds
 * what it saw to @why.
 */
bool write_refused(struct bctx *b, s32 status, bool split, char *why)
{
	struct rkdapl_event ev = {};
	size_t n = strlen(why);
	int r;

	if (!is_iwarp(&b->attr))
		return status == RKDAPL_DTO_REMOTE_ACCESS_ERROR;
	if (status != RKDAPL_DTO_SUCCESS && status != RKDAPL_DTO_LOCAL_EP_ERROR &&
	    !(split && status == RKDAPL_DTO_FLUSHED))
		return false;
	r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
			timeout_ms, &ev);
	if (r == -EPROTO && ev.type == RKDAPL_CONNECTION_EVENT_BROKEN)
		r = 0;
	if (r && n < WHY)
		snprintf(why + n, WHY - n, "; the connection did not break: %d %s, event %u (%s)",
			 r, ename(r), ev.type, evname(ev.type));
	b->c->dead = true;
	return !r;
}

/*
 * iWARP: a suppressed RDMA WRITE outside the grant (cookie @c, its post returned @r). It
 * completes once it is sent, so its success reports nothing, unless the peer's TERMINATE came
 * first (LOCAL_EP_ERROR, which reports); the TERMINATE breaks the connection.
 */
void iwarp_suppressed_refused(struct bctx *b, int r, u64 c)
{
	struct rkdapl_event ev = {};
	char why[WHY] = "posted";
	int i, n = 0, bad = 0;
	bool broke = false;

	if (!r)
		broke = write_refused(b, RKDAPL_DTO_SUCCESS, false, why);
	msleep(50);
	for (i = 0; i < b->c->nstash; i++)
		if (b->c->stash[i].cookie == c)
			n++, bad += b->c->stash[i].status != RKDAPL_DTO_LOCAL_EP_ERROR;
	while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
		if (ev.cookie == c)
			n++, bad += ev.status != RKDAPL_DTO_LOCAL_EP_ERROR;
	b->c->nstash = 0;
	tap(!r && broke && n <= 1 && !bad,
	    "iWARP: selective signalling: a suppressed WRITE outside the grant completes as sent (no event, or LOCAL_EP_ERROR); the peer's TERMINATE breaks the connection",
	    "%d %s, %s; %d events for it, %d not LOCAL_EP_ERROR", r, ename(r), why, n, bad);
}

/* The next DTO event of the client must be @c (nothing was reported before it). */
static int next_is(struct bctx *b, u64 c, u32 op, u64 len, char *why)
{
	struct rkdapl_event ev = {};
	int r = ev_wait(b->c->dto_evd, timeout_ms, &ev);

	if (r) {
		snprintf(why, WHY, "no event: %d %s", r, ename(r));
		return r;
	}
	if (ev.cookie != c || ev.op != op || ev.status != RKDAPL_DTO_SUCCESS ||
	    ev.transferred_length != len) {
		snprintf(why, WHY, "event cookie %llu (want %llu) op %s status %s length %llu",
			 ev.cookie, c, opname(ev.op), stname(ev.status), ev.transferred_length);
		return -EPROTO;
	}
	return 0;
}

void iwarp_tests(struct bctx *b)
{
	const struct rkdapl_ia_attr *a = &b->attr;
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, 512 }, lt[3];
	struct rkdapl_rmr_triplet rt, r0;
	struct rkdapl_rmr *rmr = NULL, *rmr2 = NULL;
	struct rkdapl_dto d[3];
	char why[WHY] = "";
	u32 posted = ~0u;
	u8 *want;
	u64 c;
	s64 off;
	int r, i;

	tap(a->transport == RKDAPL_TRANSPORT_IWARP &&
	    !(a->caps & (RKDAPL_CAP_RDMA_WRITE_IMM | RKDAPL_CAP_RNR_RETRY |
			 RKDAPL_CAP_RETRY_COUNT)) &&
	    (a->caps & RKDAPL_CAP_SEND_INVALIDATE) && a->max_read_iov >= 1 &&
	    a->max_iov <= a->max_read_iov && !a->reserved2,
	    "iWARP: ia_query reports transport IWARP, caps SEND_INVALIDATE only (no WRITE_IMM, RNR or retry count), max_iov <= max_read_iov",
	    "transport %u caps %#x max_iov %u max_read_iov %u reserved2 %u", a->transport, a->caps,
	    a->max_iov, a->max_read_iov, a->reserved2);
	pr_info("rkdapl_test: # %s: transport %u caps %#x max_read_iov %u\n", a->name,
		a->transport, a->caps, a->max_read_iov);

	/* pair_grant() connects the pair itself */
	r = pair_grant(b, &rmr, 8192, RKDAPL_MEM_REMOTE_WRITE | RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (!tap(!r, "iWARP: connection and a grant", "%d %s %s", r, ename(r), why))
		goto out;

	/* RDMA WRITE with immediate: refused before anything is posted */
	rt.length = 512;
	c = next_cookie(b->c);
	expect(rkdapl_post_rdma_write_imm(b->c->ep, &t, 1, &rt, 5, c, 0), -EOPNOTSUPP,
	       "iWARP: post_rdma_write_imm -> -EOPNOTSUPP");
	r0 = (struct rkdapl_rmr_triplet){ rt.address, rt.rkey, 0, 0 };
	expect(rkdapl_post_rdma_write_imm(b->c->ep, NULL, 0, &r0, 5, c, 0), -EOPNOTSUPP,
	       "iWARP: post_rdma_write_imm of 0 bytes -> -EOPNOTSUPP");
	/* SEND with immediate too (no immediate data on iWARP), alone or in a chain */
	expect(rkdapl_post_send_imm(b->c->ep, &t, 1, 5, c, RKDAPL_COMPLETION_SOLICITED_WAIT),
	       -EOPNOTSUPP, "iWARP: post_send_imm -> -EOPNOTSUPP");
	expect(rkdapl_post_send_imm(b->c->ep, NULL, 0, 5, c, 0), -EOPNOTSUPP,
	       "iWARP: post_send_imm of 0 bytes -> -EOPNOTSUPP");
	memset(d, 0, sizeof(d));
	d[0] = (struct rkdapl_dto){ .op = RKDAPL_DTO_SEND_IMM, .iov = &t, .num_iov = 1,
				    .immediate = 5, .cookie = c };
	posted = ~0u;
	r = rkdapl_post_chain(b->c->ep, d, 1, &posted);
	tap(r == -EOPNOTSUPP && posted == 0, "iWARP: post_chain of a SEND_IMM -> -EOPNOTSUPP, 0 posted",
	    "%d %s, posted %u", r, ename(r), posted);
	posted = ~0u;

	/* a chain stops at it: the WRITE before is posted, the one after is not */
	pat_fill(b->bufb, 0, 1536, 0x1717);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 1536);
	memset(b->bufa, 0, 2048);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, 2048);
	memset(d, 0, sizeof(d));
	for (i = 0; i < 3; i++) {
		lt[i] = (struct rkdapl_lmr_triplet){ b->lmr_b, i * 512, 512 };
		d[i] = (struct rkdapl_dto){ .op = RKDAPL_DTO_RDMA_WRITE, .iov = &lt[i],
					    .num_iov = 1,
					    .remote = { rt.address + i * 512, rt.rkey, 0, 512 },
					    .cookie = next_cookie(b->c) };
	}
	d[1].op = RKDAPL_DTO_RDMA_WRITE_IMM;
	d[1].immediate = 9;
	r = rkdapl_post_chain(b->c->ep, d, 3, &posted);
	tap(r == -EOPNOTSUPP && posted == 1,
	    "iWARP: post_chain of WRITE, WRITE_IMM, WRITE -> -EOPNOTSUPP, 1 posted",
	    "%d %s, posted %u", r, ename(r), posted);
	r = next_is(b, d[0].cookie, RKDAPL_DTO_RDMA_WRITE, 512, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, 2048);
	off = pat_check(b->bufa, 0, 512, 0x1717);
	if (!r && off >= 0)
		snprintf(why, WHY, "first wrong byte at %lld", off), r = -EIO;
	if (!r && !all_bytes(b->bufa + 512, 1024, 0))
		snprintf(why, WHY, "bytes of the refused DTOs arrived"), r = -EIO;
	tap(!r, "iWARP: the chain's first WRITE completes and lands; the refused WRITE_IMM and the WRITE after it report nothing and write nothing",
	    "%s", why);

	/*
	 * An RDMA READ of three segments, more than the device takes per READ (max_read_iov):
	 * split into work requests of max_iov SGEs, every byte arrives.
	 */
	pat_fill(b->bufa, 4096, 3 * 300, 0x2727);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 4096, 900);
	memset(b->bufb, 0, 4096);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 4096);
	lt[0] = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 300 };
	lt[1] = (struct rkdapl_lmr_triplet){ b->lmr_b, 1000, 300 };
	lt[2] = (struct rkdapl_lmr_triplet){ b->lmr_b, 2000, 300 };
	rt.length = 900;
	c = next_cookie(b->c);
	r = rkdapl_post_rdma_read(b->c->ep, lt, 3,
				  &(struct rkdapl_rmr_triplet){ rt.address + 4096, rt.rkey, 0, 900 },
				  c, 0);
	r = r ?: next_is(b, c, RKDAPL_DTO_RDMA_READ, 900, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, 4096);
	/* segment i holds bytes [4096 + 300 i, 4096 + 300 i + 300) of the grant's pattern */
	want = r ? NULL : kmalloc(4096 + 900, GFP_KERNEL);
	if (!r && !want)
		r = -ENOMEM;
	if (want)
		pat_fill(want, 4096, 900, 0x2727);
	for (i = 0; !r && i < 3; i++)
		if (memcmp(b->bufb + 1000 * i, want + 4096 + 300 * i, 300))
			snprintf(why, WHY, "segment %d differs from the peer's bytes", i), r = -EIO;
	kfree(want);
	tap(!r, "iWARP: an RDMA READ into 3 segments (more than max_read_iov SGEs) is split, every byte arrives",
	    "%d %s %s", r, ename(r), why);

	/*
	 * An RDMA READ into one segment of 9 separate pages (9 DMA segments, more than 8 work
	 * requests of max_read_iov SGEs): one sink MR registered for remote write covers it.
	 */
	if (b->lmr_sp && b->sp.n >= 25) {
		struct rkdapl_lmr_triplet ts = { b->lmr_sp, 16 * PAGE_SIZE, 9 * PAGE_SIZE };
		struct rkdapl_rmr_triplet rs;
		u8 *sp = b->sp.addr;

		r = rkdapl_rmr_create(b->pz, &rmr2);
		r = r ?: grant(b, rmr2, b->lmr_sp, 0, 9 * PAGE_SIZE, RKDAPL_MEM_REMOTE_READ, &rs,
			       why);
		if (!r) {
			pat_fill(sp, 0, 9 * PAGE_SIZE, 0x3737);
			memset(sp + 16 * PAGE_SIZE, 0, 9 * PAGE_SIZE);
			rkdapl_lmr_sync_rdma_read(b->lmr_sp, 0, 25 * PAGE_SIZE);
			c = next_cookie(b->c);
			r = rkdapl_post_rdma_read(b->c->ep, &ts, 1, &rs, c, 0);
			r = r ?: next_is(b, c, RKDAPL_DTO_RDMA_READ, 9 * PAGE_SIZE, why);
			rkdapl_lmr_sync_rdma_write(b->lmr_sp, 0, 25 * PAGE_SIZE);
			if (!r && memcmp(sp + 16 * PAGE_SIZE, sp, 9 * PAGE_SIZE))
				snprintf(why, WHY, "the sink differs from the source"), r = -EIO;
		}
		tap(!r, "iWARP: an RDMA READ into 9 separate pages (one segment, 9 DMA segments) goes through one sink MR, every byte arrives",
		    "%d %s %s", r, ename(r), why);
		/* 40 more: the sink MRs come back to the EP's pool and are registered again */
		for (i = 0; !r && i < 40; i++) {
			c = next_cookie(b->c);
			r = rkdapl_post_rdma_read(b->c->ep, &ts, 1, &rs, c, 0);
			r = r ?: next_is(b, c, RKDAPL_DTO_RDMA_READ, 9 * PAGE_SIZE, why);
		}
		tap(!r, "iWARP: 40 more such READs, one after the other (more than the EP's 32 sink MRs): each completes",
		    "READ %d: %d %s %s", i, r, ename(r), why);
	} else {
		tap_skip("iWARP: an RDMA READ into 9 separate pages goes through one sink MR",
			 "no sparse buffer");
	}
out:
	pair_close(b);
	if (rmr)
		rkdapl_rmr_free(rmr);
	if (rmr2)
		rkdapl_rmr_free(rmr2);
}
