// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test badarg: rkdapl_post_send_sg(), a SEND of LMR segments followed by pages lent
 * without an LMR: bytes compared at the peer, and every refusal its "Return:" documents.
 */
#include <linux/scatterlist.h>
#include "rkdapl_test.h"

#define SG_SEED 0x5a5a17
#define HEAD_SEED 0x4ead

/* A SEND of a 100-byte command and 4096 + 900 bytes of two pages lands whole at the peer. */
static void send_sg_bytes(struct bctx *b, struct page **pg)
{
	struct rkdapl_lmr_triplet head = { b->lmr_b, 0, 100 }, rt = { b->lmr_a, 0, BUFSZ };
	struct rkdapl_ia_attr attr = {};
	struct scatterlist sg[2];
	char why[WHY] = "";
	u64 c, rc, want = 100 + 4096 + 900;
	s64 off;
	int r;

	pat_fill(page_address(pg[0]), 0, PAGE_SIZE, SG_SEED);
	pat_fill(page_address(pg[1]), 0, PAGE_SIZE, SG_SEED + 1);
	pat_fill(b->bufb, 0, 100, HEAD_SEED);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 100);
	memset(b->bufa, 0, BUFSZ);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, BUFSZ);
	sg_init_table(sg, 2);
	sg_set_page(&sg[0], pg[0], PAGE_SIZE, 0);
	sg_set_page(&sg[1], pg[1], 900, 100);
	r = rkdapl_ia_query(b->ia, &attr);
	if (!r && attr.max_iov < 3) {
		/* siw: a SEND holds one SGE (max_iov: its max_sge_rd bounds the send queue's) */
		c = next_cookie(b->c);
		r = rkdapl_post_send_sg(b->c->ep, &head, 1, sg, 2, c, 0);
		tap(r == -EMSGSIZE,
		    "post_send_sg: a command and two lent pages, 3 SGEs, on an EP whose SEND holds fewer: -EMSGSIZE",
		    "%d %s, max_iov %u", r, ename(r), attr.max_iov);
		goto alone;
	}
	rc = next_cookie(b->s);
	r = rkdapl_post_recv(b->s->ep, &rt, 1, rc, 0);
	if (r)
		snprintf(why, WHY, "server post_recv = %d %s", r, ename(r));
	c = next_cookie(b->c);
	r = r ?: rkdapl_post_send_sg(b->c->ep, &head, 1, sg, 2, c, 0);
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND, want, why);
	r = r ?: dto_expect(b->s, rc, RKDAPL_DTO_RECV, want, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, BUFSZ);
	off = r ? -1 : pat_check(b->bufa, 0, 100, HEAD_SEED);
	if (off >= 0)
		snprintf(why, WHY, "command: first wrong byte at %lld", off), r = -EIO;
	off = r ? -1 : pat_check(b->bufa + 100, 0, PAGE_SIZE, SG_SEED);
	if (off >= 0)
		snprintf(why, WHY, "page 1: first wrong byte at %lld", off), r = -EIO;
	/* the second entry starts 100 bytes into its page: the pattern from there */
	if (!r && memcmp(b->bufa + 100 + PAGE_SIZE, page_address(pg[1]) + 100, 900))
		snprintf(why, WHY, "page 2: bytes differ"), r = -EIO;
	if (!r && !all_bytes(b->bufa + want, BUFSZ - want, 0))
		snprintf(why, WHY, "bytes past the SEND's 5096 written"), r = -EIO;
	tap(!r, "post_send_sg: a 100-byte command then 4096 + 900 bytes of two lent pages land in the peer's RECV as 5096 bytes; the SEND reports 5096",
	    "%d %s: %s", r, ename(r), why);

alone:
	/* no LMR segment at all: the pages alone */
	sg_init_table(sg, 1);
	sg_set_page(&sg[0], pg[0], 512, 0);
	memset(b->bufa, 0, BUFSZ);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, BUFSZ);
	rc = next_cookie(b->s);
	r = rkdapl_post_recv(b->s->ep, &rt, 1, rc, 0);
	c = next_cookie(b->c);
	r = r ?: rkdapl_post_send_sg(b->c->ep, NULL, 0, sg, 1, c, RKDAPL_COMPLETION_SOLICITED_WAIT);
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND, 512, why);
	r = r ?: dto_expect(b->s, rc, RKDAPL_DTO_RECV, 512, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, BUFSZ);
	off = r ? -1 : pat_check(b->bufa, 0, 512, SG_SEED);
	if (off >= 0)
		snprintf(why, WHY, "first wrong byte at %lld", off), r = -EIO;
	tap(!r, "post_send_sg: no segment, 512 bytes of a lent page alone (solicited) land in the peer's RECV",
	    "%d %s: %s", r, ename(r), why);
}

/* Every documented refusal, each posting nothing (the pair still works afterwards). */
static void send_sg_refusals(struct bctx *b, struct page **pg)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, 16 };
	struct rkdapl_ep_attr attr = {};
	struct scatterlist sg[2], *many = NULL;
	struct rkdapl_ep *ep = NULL;
	u32 n = 0, i;
	int r;

	sg_init_table(sg, 1);
	sg_set_page(&sg[0], pg[0], 64, 0);
	expect(rkdapl_post_send_sg(NULL, &t, 1, sg, 1, 1, 0), -EINVAL, "post_send_sg(NULL ep)");
	expect(rkdapl_post_send_sg(b->foreign, &t, 1, sg, 1, 1, 0), -EINVAL,
	       "post_send_sg(foreign object as EP)");
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, NULL, 1, 1, 0), -EINVAL,
	       "post_send_sg(NULL sgl)");
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 0, 1, 0), -EINVAL,
	       "post_send_sg(nents 0)");
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, RKDAPL_COMPLETION_SUPPRESS),
	       -EINVAL, "post_send_sg(RKDAPL_COMPLETION_SUPPRESS)");
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, 1 << 7), -EINVAL,
	       "post_send_sg(flags 0x80)");
	expect(rkdapl_post_send_sg(b->c->ep, NULL, 1, sg, 1, 1, 0), -EINVAL,
	       "post_send_sg(NULL iov, num_iov 1)");
	expect(rkdapl_post_send_sg(b->c->ep, &t, 257, sg, 1, 1, 0), -EINVAL,
	       "post_send_sg(257 segments)");
	t.lmr = b->foreign;
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, 0), -EINVAL,
	       "post_send_sg(foreign object as LMR)");
	t = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, 0), -EXDEV,
	       "post_send_sg(LMR of another PZ)");
	t = (struct rkdapl_lmr_triplet){ b->lmr_b, BUFSZ - 8, 16 };
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, 0), -ERANGE,
	       "post_send_sg(segment past its LMR)");
	t = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	/* an entry without a length, then one without a page */
	sg_set_page(&sg[0], pg[0], 0, 0);
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, 0), -EINVAL,
	       "post_send_sg(entry of 0 bytes)");
	sg_init_table(sg, 1);
	sg[0].length = 64;
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 1, 1, 0), -EINVAL,
	       "post_send_sg(entry without a page)");
	/* more entries than the list has: the end marker's next is none */
	sg_set_page(&sg[0], pg[0], 64, 0);
	expect(rkdapl_post_send_sg(b->c->ep, &t, 1, sg, 2, 1, 0), -EINVAL,
	       "post_send_sg(nents past the list's end)");

	/* one SGE more than a SEND of the EP holds: the command and max_request_iov entries */
	r = rkdapl_ep_query(b->c->ep, &attr);
	if (!r && attr.max_request_iov && attr.max_request_iov <= 1024) {
		n = attr.max_request_iov;
		many = kcalloc(n, sizeof(*many), GFP_KERNEL);
	}
	if (many) {
		sg_init_table(many, n);
		for (i = 0; i < n; i++)
			sg_set_page(&many[i], pg[i & 1], 16, 0);
		expect(rkdapl_post_send_sg(b->c->ep, &t, 1, many, n, 1, 0), -EMSGSIZE,
		       "post_send_sg(a segment and max_request_iov entries: one SGE too many)");
		kfree(many);
	} else {
		tap(false, "post_send_sg(one SGE too many)", "ep_query = %d %s, max_request_iov %u",
		    r, ename(r), attr.max_request_iov);
	}

	/* an EP that is not connected */
	r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ep);
	if (tap(!r, "post_send_sg: an unconnected EP for the state check", "%d %s", r, ename(r))) {
		expect(rkdapl_post_send_sg(ep, &t, 1, sg, 1, 1, 0), -ENOTCONN,
		       "post_send_sg(unconnected EP)");
		rkdapl_ep_free(ep);
	}
}

void send_sg_tests(struct bctx *b)
{
	struct page *pg[2] = { alloc_page(GFP_KERNEL), alloc_page(GFP_KERNEL) };
	char why[WHY] = "";
	int r = pg[0] && pg[1] ? 0 : -ENOMEM;

	r = r ?: pair_connect(b, why);
	if (tap(!r, "post_send_sg: a connected pair and two pages to lend", "%d %s %s", r,
		ename(r), why)) {
		send_sg_refusals(b, pg);
		send_sg_bytes(b, pg);
	}
	pair_close(b);
	if (pg[0])
		__free_page(pg[0]);
	if (pg[1])
		__free_page(pg[1]);
}
