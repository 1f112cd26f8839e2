// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: LMRs of page arrays, scatterlists and provider memory. */
#include "rkdapl_test.h"

/* ------------------------------------------------------------------------------------------ */
/* LMR kinds: page arrays, scatterlists, provider-allocated memory */

/* Copies @len bytes between @buf and the region that starts @off0 bytes into @pg[0]. */
static void pages_copy(struct page **pg, size_t off0, void *buf, size_t len, bool to_pages)
{
	size_t done = 0;

	while (done < len) {
		size_t at = off0 + done, n = min_t(size_t, len - done, PAGE_SIZE - at % PAGE_SIZE);

		if (to_pages)
			memcpy_to_page(pg[at / PAGE_SIZE], at % PAGE_SIZE, buf + done, n);
		else
			memcpy_from_page(buf + done, pg[at / PAGE_SIZE], at % PAGE_SIZE, n);
		done += n;
	}
}

/*
 * Client WRITEs @len bytes of @lmr (CPU view: @tmp after @fill) to the grant on bufa and the
 * bytes are checked there; then the server grants [0, len) of @lmr and the client WRITEs bufb
 * into it, checked through @readback. Returns 0 or an error with @why.
 */
struct kind_io {
	void (*fill)(void *ctx, void *tmp, size_t len);		/* tmp -> memory */
	void (*readback)(void *ctx, void *tmp, size_t len);	/* memory -> tmp */
	void *ctx;
};

static int lmr_kind_io(struct bctx *b, struct rkdapl_lmr *lmr, size_t len, struct kind_io *io,
		       struct rkdapl_rmr_triplet *ga, u32 seed, char *why)
{
	struct rkdapl_lmr_triplet t = { lmr, 0, len };
	struct rkdapl_rmr_triplet rt = *ga, rl;
	struct rkdapl_rmr *rmr = NULL;
	u8 *tmp = kvzalloc(len, GFP_KERNEL);
	u64 c = next_cookie(b->c);
	s32 status = 0;
	s64 off;
	int r;

	if (!tmp)
		return -ENOMEM;
	/* out of the LMR */
	pat_fill(tmp, 0, len, seed);
	io->fill(io->ctx, tmp, len);
	rkdapl_lmr_sync_rdma_read(lmr, 0, len);
	memset(b->bufa, 0, len);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, len);
	rt.length = len;
	r = rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_RDMA_WRITE, len, why);
	if (r)
		goto out;
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, len);
	off = pat_check(b->bufa, 0, len, seed);
	if (off >= 0) {
		snprintf(why, WHY, "WRITE from the LMR: byte %lld wrong", off);
		r = -EIO;
		goto out;
	}
	/* into the LMR, through a grant */
	r = rkdapl_rmr_create(b->pz, &rmr);
	r = r ?: grant(b, rmr, lmr, 0, len, RKDAPL_MEM_REMOTE_WRITE, &rl, why);
	pat_fill(b->bufb, 0, len, seed ^ 0xffff);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, len);
	r = r ?: write_status(b, 0, len, rl, 0, &status, why);
	if (!r && status != RKDAPL_DTO_SUCCESS) {
		snprintf(why, WHY, "WRITE into the LMR's grant: status %d (%s)", status,
			 stname(status));
		r = -EIO;
	}
	if (r)
		goto out;
	rkdapl_lmr_sync_rdma_write(lmr, 0, len);
	io->readback(io->ctx, tmp, len);
	off = pat_check(tmp, 0, len, seed ^ 0xffff);
	if (off >= 0) {
		snprintf(why, WHY, "WRITE into the LMR: byte %lld wrong", off);
		r = -EIO;
	}
out:
	if (rmr)
		rkdapl_rmr_free(rmr);
	kvfree(tmp);
	return r;
}

struct pages_ctx {
	struct page **pg;
	size_t off0;
};

static void pages_fill(void *ctx, void *tmp, size_t len)
{
	struct pages_ctx *p = ctx;

	pages_copy(p->pg, p->off0, tmp, len, true);
}

static void pages_readback(void *ctx, void *tmp, size_t len)
{
	struct pages_ctx *p = ctx;

	pages_copy(p->pg, p->off0, tmp, len, false);
}

/* lmr_kind_io() for an LMR over @pg, whose bytes start @off0 bytes into the first page. */
static int pages_kind_io(struct bctx *b, struct rkdapl_lmr *lmr, size_t len, struct page **pg,
			 size_t off0, struct rkdapl_rmr_triplet *ga, u32 seed, char *why)
{
	struct pages_ctx pc = { pg, off0 };
	struct kind_io io = { pages_fill, pages_readback, &pc };

	return lmr_kind_io(b, lmr, len, &io, ga, seed, why);
}

static void linear_fill(void *ctx, void *tmp, size_t len)
{
	memcpy(ctx, tmp, len);
}

static void linear_readback(void *ctx, void *tmp, size_t len)
{
	memcpy(tmp, ctx, len);
}

void lmr_kinds(struct bctx *b)
{
	struct page *pg[4] = {}, *bad_pg[2];
	struct scatterlist sg[3], sg2[2];
	struct rkdapl_rmr_triplet ga, rt;
	struct rkdapl_rmr *rmr_g = NULL, *rmr_t = NULL;
	struct rkdapl_lmr *lmr = NULL;
	struct kind_io io;
	char why[WHY] = "";
	void *mem = NULL;
	size_t len;
	int r, i;

	for (i = 0; i < 4; i++)
		pg[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
	r = pg[0] && pg[1] && pg[2] && pg[3] ? 0 : -ENOMEM;
	r = r ?: pair_grant(b, &rmr_g, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &ga, why);
	if (!tap(!r, "LMR kinds: pages, connection and grant", "%d %s %s", r, ename(r), why))
		goto out;

	/* --- an array of pages, starting 100 bytes into the first --- */
	len = 3 * PAGE_SIZE - 300;
	r = rkdapl_lmr_create_pages(b->pz, pg, 3, 100, len, ALL_PRIV, &lmr);
	if (tap(!r, "lmr_create_pages(3 separate pages, offset 100, 3 pages - 300 bytes)", "%d %s",
		r, ename(r))) {
		r = pages_kind_io(b, lmr, len, pg, 100, &ga, 0x9a9e, why);
		tap(!r, "page-array LMR: an RDMA WRITE from it and one into it through a grant move every byte",
		    "%d %s: %s", r, ename(r), why);
		expect(rkdapl_lmr_free(lmr), 0, "lmr_free of the page-array LMR");
	}
	lmr = NULL;
	expect(rkdapl_lmr_create_pages(b->pz, pg, 3, PAGE_SIZE, 10, ALL_PRIV, &lmr), -EINVAL,
	       "lmr_create_pages(offset PAGE_SIZE)");
	expect(rkdapl_lmr_create_pages(b->pz, pg, 3, 0, 3 * PAGE_SIZE + 1, ALL_PRIV, &lmr), -EINVAL,
	       "lmr_create_pages(length beyond the pages)");
	expect(rkdapl_lmr_create_pages(b->pz, pg, 0, 0, 10, ALL_PRIV, &lmr), -EINVAL,
	       "lmr_create_pages(0 pages)");
	expect(rkdapl_lmr_create_pages(b->pz, NULL, 1, 0, 10, ALL_PRIV, &lmr), -EINVAL,
	       "lmr_create_pages(NULL pages)");
	bad_pg[0] = pg[0];
	bad_pg[1] = NULL;
	expect(rkdapl_lmr_create_pages(b->pz, bad_pg, 2, 0, PAGE_SIZE + 1, ALL_PRIV, &lmr), -EFAULT,
	       "lmr_create_pages(a NULL page in the range)");
	expect(rkdapl_lmr_create_pages(b->pz, pg, 1, 0, 10, 1 << 5, &lmr), -EINVAL,
	       "lmr_create_pages(unknown privilege)");
	expect(rkdapl_lmr_create_pages(b->foreign, pg, 1, 0, 10, ALL_PRIV, &lmr), -EINVAL,
	       "lmr_create_pages(foreign PZ)");

	/* --- a scatterlist: two whole pages and 1000 bytes of a third --- */
	sg_init_table(sg, 3);
	sg_set_page(&sg[0], pg[1], PAGE_SIZE, 0);
	sg_set_page(&sg[1], pg[3], PAGE_SIZE, 0);
	sg_set_page(&sg[2], pg[0], 1000, 0);
	len = 2 * PAGE_SIZE + 1000;
	lmr = NULL;
	r = rkdapl_lmr_create_sg(b->pz, sg, 3, ALL_PRIV, &lmr);
	if (tap(!r, "lmr_create_sg(3 entries: 2 pages + 1000 bytes)", "%d %s", r, ename(r))) {
		struct page *order[3] = { pg[1], pg[3], pg[0] };

		memset(sg, 0, sizeof(sg));	/* rkdapl mapped a copy */
		r = pages_kind_io(b, lmr, len, order, 0, &ga, 0x5c47, why);
		tap(!r, "scatterlist LMR (caller's list cleared after create): an RDMA WRITE from it and one into it through a grant",
		    "%d %s: %s", r, ename(r), why);
		expect(rkdapl_lmr_free(lmr), 0, "lmr_free of the scatterlist LMR");
	}
	/* entries that do not meet at page boundaries: fine for DTOs, not for a grant */
	sg_init_table(sg2, 2);
	sg_set_page(&sg2[0], pg[2], 100, 0);
	sg_set_page(&sg2[1], pg[0], 200, 2000);
	lmr = NULL;
	r = rkdapl_lmr_create_sg(b->pz, sg2, 2, ALL_PRIV, &lmr);
	if (tap(!r, "lmr_create_sg(100 bytes + 200 bytes at offset 2000)", "%d %s", r, ename(r))) {
		struct rkdapl_lmr_triplet t = { lmr, 0, 300 };
		u64 c = next_cookie(b->c);
		u8 *want = kmalloc(300, GFP_KERNEL);

		pat_fill(b->bufa, 0, 300, 0);
		memset(page_address(pg[2]), 0x11, 100);
		memset(page_address(pg[0]) + 2000, 0x22, 200);
		rkdapl_lmr_sync_rdma_read(lmr, 0, 300);
		rt = ga;
		rt.length = 300;
		r = want ? 0 : -ENOMEM;
		r = r ?: rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
		r = r ?: dto_expect(b->c, c, RKDAPL_DTO_RDMA_WRITE, 300, why);
		if (!r) {
			memset(want, 0x11, 100);
			memset(want + 100, 0x22, 200);
			rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, 300);
			if (memcmp(b->bufa, want, 300))
				snprintf(why, WHY, "bytes differ"), r = -EIO;
		}
		tap(!r, "an RDMA WRITE from it (two SGEs) moves both pieces in order", "%d %s: %s", r,
		    ename(r), why);
		kfree(want);
		r = rkdapl_rmr_create(b->pz, &rmr_t);
		r = r ?: rkdapl_rmr_bind(rmr_t, lmr, 0, 300, RKDAPL_MEM_REMOTE_WRITE, b->s->ep,
					 next_cookie(b->s), &rt.rkey, &rt.address);
		tap(r == -E2BIG, "rmr_bind over entries that do not meet at a page boundary -> -E2BIG",
		    "returned %d %s", r, ename(r));
		if (rmr_t)
			rkdapl_rmr_free(rmr_t);
		rmr_t = NULL;
		expect(rkdapl_lmr_free(lmr), 0, "lmr_free of the unaligned scatterlist LMR");
	}
	lmr = NULL;
	expect(rkdapl_lmr_create_sg(b->pz, NULL, 1, ALL_PRIV, &lmr), -EINVAL, "lmr_create_sg(NULL)");
	expect(rkdapl_lmr_create_sg(b->pz, sg2, 0, ALL_PRIV, &lmr), -EINVAL, "lmr_create_sg(0 entries)");
	expect(rkdapl_lmr_create_sg(b->pz, sg2, 3, ALL_PRIV, &lmr), -EINVAL,
	       "lmr_create_sg(3 entries of a 2-entry list)");

	/* --- memory rkdapl allocates --- */
	len = 3 * PAGE_SIZE + 123;
	r = rkdapl_lmr_alloc(b->pz, len, ALL_PRIV, &mem, &lmr);
	tap(!r && mem && PAGE_ALIGNED(mem) && !memchr_inv(mem, 0, len),
	    "lmr_alloc(3 pages + 123 bytes): page-aligned zeroed memory",
	    "%d %s, addr %px", r, ename(r), mem);
	if (!r) {
		io = (struct kind_io){ linear_fill, linear_readback, mem };
		r = lmr_kind_io(b, lmr, len, &io, &ga, 0xa110c, why);
		tap(!r, "allocated LMR: an RDMA WRITE from it and one into it through a grant",
		    "%d %s: %s", r, ename(r), why);
		expect(rkdapl_lmr_free(lmr), 0, "lmr_free of the allocated LMR (frees its memory)");
	}
	lmr = NULL;
	mem = NULL;
	expect(rkdapl_lmr_alloc(b->pz, 0, ALL_PRIV, &mem, &lmr), -EINVAL, "lmr_alloc(length 0)");
	expect(rkdapl_lmr_alloc(b->pz, (1ull << 30) + 1, ALL_PRIV, &mem, &lmr), -EINVAL,
	       "lmr_alloc(1 GiB + 1)");
	expect(rkdapl_lmr_alloc(b->pz, 100, ALL_PRIV, NULL, &lmr), -EINVAL, "lmr_alloc(NULL addr)");
	expect(rkdapl_lmr_alloc(b->pz, 100, ALL_PRIV, &mem, NULL), -EINVAL, "lmr_alloc(NULL lmr)");
	expect(rkdapl_lmr_alloc(b->pz, 100, 1 << 5, &mem, &lmr), -EINVAL,
	       "lmr_alloc(unknown privilege)");
out:
	pair_close(b);
	if (rmr_g)
		rkdapl_rmr_free(rmr_g);
	for (i = 0; i < 4; i++)
		if (pg[i])
			__free_page(pg[i]);
}
