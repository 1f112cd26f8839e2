// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test badarg: DTO forms beyond SEND/RECV/WRITE/READ, and chains. */
#include "rkdapl_test.h"

/* ------------------------------------------------------------------------------------------ */
/* DTO forms: RDMA WRITE with immediate, SEND with invalidate, fence, solicited, chains */

#define IMM1 0xfeedf00d

/* Posts a RECV of [off, off + len) of @lmr on the server; returns its cookie or 0. */
static u64 srv_recv(struct bctx *b, struct rkdapl_lmr *lmr, u64 off, u64 len, char *why)
{
	struct rkdapl_lmr_triplet t = { lmr, off, len };
	u64 c = next_cookie(b->s);
	int r = rkdapl_post_recv(b->s->ep, &t, 1, c, 0);

	if (r) {
		snprintf(why, WHY, "server post_recv = %d %s", r, ename(r));
		return 0;
	}
	return c;
}

/* Waits for the server's RECV @c and checks status, length, flags and immediate data. */
/*
 * Whether @len bytes of pattern @seed are at @buf (offset @off of @lmr) within 2 s. On RoCE
 * the completion of an RDMA WRITE means the peer acknowledged it, so its bytes are there at
 * once; on iWARP (siw) it means the WRITE was sent, and the bytes land once the peer's device
 * placed them (only a later READ's or SEND's completion orders after that).
 */
static bool landed(struct rkdapl_lmr *lmr, const u8 *buf, u64 off, u64 len, u32 seed)
{
	int i;

	for (i = 0; i < 100; i++) {
		rkdapl_lmr_sync_rdma_write(lmr, off, len);
		if (pat_check(buf, 0, len, seed) < 0)
			return true;
		msleep(20);
	}
	return false;
}

static int recv_expect(struct bctx *b, u64 c, u64 len, u32 flags, u32 imm, u32 inv,
		       char *why)
{
	struct rkdapl_event ev = {};
	int r = wait_cookie(b->s, c, &ev);

	if (r) {
		snprintf(why, WHY, "no RECV completion: %d %s", r, ename(r));
		return r;
	}
	if (ev.status != RKDAPL_DTO_SUCCESS || ev.op != RKDAPL_DTO_RECV ||
	    ev.transferred_length != len || ev.flags != flags ||
	    ((flags & RKDAPL_EVENT_WITH_IMM) && ev.immediate != imm) ||
	    ((flags & RKDAPL_EVENT_INVALIDATED) && ev.invalidated_rkey != inv)) {
		snprintf(why, WHY,
			 "RECV event: status %d (%s) op %s length %llu flags %#x immediate %#x invalidated %#x; expected length %llu flags %#x immediate %#x invalidated %#x",
			 ev.status, stname(ev.status), opname(ev.op), ev.transferred_length,
			 ev.flags, ev.immediate, ev.invalidated_rkey, len, flags, imm, inv);
		return -EPROTO;
	}
	return 0;
}

static void dto_forms_chain(struct bctx *b, struct rkdapl_lmr *lmr_r, u8 *rbuf,
			    struct rkdapl_rmr_triplet rt)
{
	struct rkdapl_lmr_triplet lt[4];
	struct rkdapl_dto d[4], *many = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	u64 r1, r2, want[4];
	u32 posted = ~0u;
	int r, i, got, extra;
	s64 off;
	/* iWARP has no WRITE_IMM (iwarp.c tests its refusal): a plain WRITE takes its place */
	bool imm = b->attr.caps & RKDAPL_CAP_RDMA_WRITE_IMM;

	/* WRITE, READ, WRITE_IMM, SEND in one call: in order, one event each */
	memset(rbuf, 0xa5, PAGE_SIZE);
	rkdapl_lmr_sync_rdma_read(lmr_r, 0, PAGE_SIZE);
	pat_fill(b->bufb, 0, 1088, 0xc4a1);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 1088);
	pat_fill(b->bufa, 4096, 512, 0xc4a2);
	memset(b->bufa, 0, 1024);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, 8192);
	r1 = imm ? srv_recv(b, lmr_r, 0, 256, why) : 1;
	r2 = r1 ? srv_recv(b, lmr_r, 256, 256, why) : 0;
	lt[0] = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 512 };
	lt[1] = (struct rkdapl_lmr_triplet){ b->lmr_b, 4096, 512 };
	lt[2] = (struct rkdapl_lmr_triplet){ b->lmr_b, 512, 512 };
	lt[3] = (struct rkdapl_lmr_triplet){ b->lmr_b, 1024, 64 };
	memset(d, 0, sizeof(d));
	d[0] = (struct rkdapl_dto){ .op = RKDAPL_DTO_RDMA_WRITE, .iov = &lt[0], .num_iov = 1,
				    .remote = { rt.address, rt.rkey, 0, 512 } };
	d[1] = (struct rkdapl_dto){ .op = RKDAPL_DTO_RDMA_READ, .iov = &lt[1], .num_iov = 1,
				    .remote = { rt.address + 4096, rt.rkey, 0, 512 } };
	d[2] = (struct rkdapl_dto){ .op = RKDAPL_DTO_RDMA_WRITE_IMM, .iov = &lt[2], .num_iov = 1,
				    .remote = { rt.address + 512, rt.rkey, 0, 512 },
				    .immediate = 11 };
	d[3] = (struct rkdapl_dto){ .op = RKDAPL_DTO_SEND, .iov = &lt[3], .num_iov = 1 };
	if (!imm)
		d[2].op = RKDAPL_DTO_RDMA_WRITE, d[2].immediate = 0;
	for (i = 0; i < 4; i++)
		d[i].cookie = want[i] = next_cookie(b->c);
	r = r2 ? rkdapl_post_chain(b->c->ep, d, 4, &posted) : -EIO;
	tap(!r && posted == 4, imm ? "post_chain of WRITE, READ, WRITE_IMM, SEND returns 0, 4 posted" :
	    "post_chain of WRITE, READ, WRITE, SEND returns 0, 4 posted",
	    "%d %s, posted %u %s", r, ename(r), posted, why);
	got = 0;
	for (i = 0; !r && i < 4; i++) {
		r = ev_wait(b->c->dto_evd, timeout_ms, &ev);
		if (!r && ev.cookie == want[i] && ev.status == RKDAPL_DTO_SUCCESS &&
		    ev.op == d[i].op && ev.transferred_length == lt[i].length)
			got++;
		else if (!r)
			snprintf(why, WHY, "event %d: cookie %llu (want %llu) op %s status %s length %llu",
				 i, ev.cookie, want[i], opname(ev.op), stname(ev.status),
				 ev.transferred_length);
	}
	tap(got == 4, "post_chain: four completion events, in posting order, each with its op and length",
	    "%d right; %d %s; %s", got, r, ename(r), why);
	r = imm ? recv_expect(b, r1, 512, RKDAPL_EVENT_WITH_IMM | RKDAPL_EVENT_RDMA_WRITE_IMM, 11,
			      0, why) : 0;
	r = r ?: recv_expect(b, r2, 64, 0, 0, 0, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, 8192);
	rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, 8192);
	rkdapl_lmr_sync_rdma_write(lmr_r, 0, PAGE_SIZE);
	off = pat_check(b->bufa, 0, 1024, 0xc4a1);
	if (!r && off >= 0)
		snprintf(why, WHY, "WRITEs: first wrong byte at %lld", off), r = -EIO;
	off = pat_check(b->bufb, 4096, 512, 0xc4a2);
	if (!r && off >= 0)
		snprintf(why, WHY, "READ: first wrong byte at %lld", off), r = -EIO;
	if (!r && (memcmp(rbuf + 256, b->bufb + 1024, 64) || !all_bytes(rbuf, 256, 0xa5)))
		snprintf(why, WHY, "SEND data or untouched WRITE_IMM RECV buffer wrong"), r = -EIO;
	tap(!r, imm ? "post_chain: the peer's RECVs see the WRITE_IMM then the SEND; every byte of the chain arrived" :
	    "post_chain: the peer's RECV sees the SEND; every byte of the chain arrived",
	    "%s", why);

	/* the chain stops at the first bad DTO: the ones before are posted */
	for (i = 0; i < 4; i++) {
		lt[i] = (struct rkdapl_lmr_triplet){ b->lmr_b, i * 64, 64 };
		d[i] = (struct rkdapl_dto){ .op = RKDAPL_DTO_RDMA_WRITE, .iov = &lt[i],
					    .num_iov = 1,
					    .remote = { rt.address + i * 64, rt.rkey, 0, 64 },
					    .cookie = next_cookie(b->c) };
	}
	lt[2].offset = BUFSZ;	/* outside its LMR */
	posted = ~0u;
	r = rkdapl_post_chain(b->c->ep, d, 4, &posted);
	got = extra = 0;
	for (i = 0; i < 2 && !wait_cookie(b->c, d[i].cookie, &ev); i++)
		got += ev.status == RKDAPL_DTO_SUCCESS;
	msleep(100);
	while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
		extra++;
	tap(r == -ERANGE && posted == 2 && got == 2 && !extra,
	    "post_chain stops at a segment outside its LMR: -ERANGE, 2 posted, 2 events, none for the rest",
	    "%d %s, posted %u, events %d + %d more", r, ename(r), posted, got, extra);

	/* argument errors */
	d[0] = (struct rkdapl_dto){ .op = RKDAPL_DTO_RDMA_WRITE, .iov = &lt[0], .num_iov = 1,
				    .remote = { rt.address, rt.rkey, 0, 64 } };
	posted = ~0u;
	expect(rkdapl_post_chain(b->c->ep, NULL, 1, &posted), -EINVAL, "post_chain(NULL dtos)");
	tap(posted == 0, "post_chain(NULL dtos) sets *posted to 0", "posted %u", posted);
	expect(rkdapl_post_chain(b->c->ep, d, 0, NULL), -EINVAL, "post_chain(n 0)");
	expect(rkdapl_post_chain(b->c->ep, d, 4097, NULL), -EINVAL, "post_chain(n 4097)");
	expect(rkdapl_post_chain(NULL, d, 1, NULL), -EINVAL, "post_chain(NULL EP)");
	d[1] = d[0];
	d[1].reserved = 1;
	posted = ~0u;
	r = rkdapl_post_chain(b->c->ep, &d[1], 1, &posted);
	tap(r == -EINVAL && !posted, "post_chain(reserved 1) -> -EINVAL, nothing posted",
	    "%d %s, posted %u", r, ename(r), posted);
	d[1] = d[0];
	d[1].op = RKDAPL_DTO_RECV;
	expect(rkdapl_post_chain(b->c->ep, &d[1], 1, NULL), -EINVAL, "post_chain(op RECV)");
	d[1] = d[0];
	d[1].flags = RKDAPL_COMPLETION_SOLICITED_WAIT;
	expect(rkdapl_post_chain(b->c->ep, &d[1], 1, NULL), -EINVAL,
	       "post_chain(RDMA WRITE with SOLICITED_WAIT)");
	d[1] = d[0];
	d[1].remote.length = 63;
	expect(rkdapl_post_chain(b->c->ep, &d[1], 1, NULL), -EINVAL,
	       "post_chain(remote length neither 0 nor the local total)");

	/* longer than the free slots: the first 64 are posted */
	many = kcalloc(65, sizeof(*many), GFP_KERNEL);
	if (!many) {
		tap(false, "post_chain of 65 on an EP of 64 DTOs", "out of memory");
		return;
	}
	for (i = 0; i < 65; i++) {
		many[i] = d[0];
		many[i].cookie = next_cookie(b->c);
	}
	posted = ~0u;
	r = rkdapl_post_chain(b->c->ep, many, 65, &posted);
	got = 0;
	for (i = 0; i < 64 && !wait_cookie(b->c, many[i].cookie, &ev); i++)
		got += ev.status == RKDAPL_DTO_SUCCESS;
	msleep(100);
	extra = 0;
	while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
		extra++;
	tap(r == -ENOSPC && posted == 64 && got == 64 && !extra,
	    "post_chain of 65 on an EP of 64 DTOs: -ENOSPC, 64 posted, 64 successful events",
	    "%d %s, posted %u, successes %d, other events %d", r, ename(r), posted, got, extra);
	kfree(many);
}

/* The DTO forms beyond SEND/RECV/WRITE/READ, on a fresh loopback pair. */
void dto_forms(struct bctx *b)
{
	struct rkdapl_lmr_triplet t1;
	struct rkdapl_rmr_triplet rt, ri, rz = {};
	struct rkdapl_rmr *rmr_g = NULL, *rmr_i = NULL;
	struct rkdapl_lmr *lmr_r = NULL, *lmr_i = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	u8 *rbuf = NULL;
	u64 c, c2, rc;
	u32 old_rkey;
	s32 status = 0;
	s64 off;
	int r;

	rbuf = kzalloc(PAGE_SIZE, GFP_KERNEL);
	r = rbuf ? 0 : -ENOMEM;
	r = r ?: rkdapl_lmr_create(b->pz, rbuf, PAGE_SIZE, RKDAPL_MEM_LOCAL_WRITE, &lmr_r);
	r = r ?: pair_grant(b, &rmr_g, 8192, RKDAPL_MEM_REMOTE_WRITE | RKDAPL_MEM_REMOTE_READ,
			    &rt, why);
	if (!tap(!r, "DTO forms: connection, grant and RECV buffer", "%d %s %s", r, ename(r), why))
		goto out;

	/* --- RDMA WRITE with immediate (not on iWARP: iwarp.c tests its refusal) --- */
	if (!(b->attr.caps & RKDAPL_CAP_RDMA_WRITE_IMM)) {
		tap_skip("rdma_write_imm: 4 KiB land in the grant", "no RDMA WRITE with immediate on iWARP");
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 4096 };
		c = next_cookie(b->c);
		goto no_imm;
	}
	memset(rbuf, 0xa5, PAGE_SIZE);
	rkdapl_lmr_sync_rdma_read(lmr_r, 0, PAGE_SIZE);
	memset(b->bufa, 0, 8192);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, 8192);
	pat_fill(b->bufb, 0, 4096, 0x1a1a);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 4096);
	rc = srv_recv(b, lmr_r, 0, 256, why);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 4096 };
	rt.length = 4096;
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_rdma_write_imm(b->c->ep, &t1, 1, &rt, IMM1, c, 0) : -EIO;
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_RDMA_WRITE_IMM, 4096, why);
	r = r ?: recv_expect(b, rc, 4096, RKDAPL_EVENT_WITH_IMM | RKDAPL_EVENT_RDMA_WRITE_IMM,
			     IMM1, 0, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, 8192);
	rkdapl_lmr_sync_rdma_write(lmr_r, 0, PAGE_SIZE);
	off = pat_check(b->bufa, 0, 4096, 0x1a1a);
	if (!r && off >= 0)
		snprintf(why, WHY, "first wrong byte of the grant at %lld", off), r = -EIO;
	if (!r && !all_bytes(rbuf, PAGE_SIZE, 0xa5))
		snprintf(why, WHY, "the RECV's buffer was written"), r = -EIO;
	tap(!r, "rdma_write_imm: 4 KiB land in the grant; the peer's RECV reports WITH_IMM|RDMA_WRITE_IMM, 0xfeedf00d and 4096 bytes; its buffer untouched",
	    "%d %s: %s", r, ename(r), why);

	/* only the immediate data */
	rc = srv_recv(b, lmr_r, 0, 256, why);
	rz = (struct rkdapl_rmr_triplet){ rt.address, rt.rkey, 0, 0 };
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_rdma_write_imm(b->c->ep, NULL, 0, &rz, 7, c, 0) : -EIO;
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_RDMA_WRITE_IMM, 0, why);
	r = r ?: recv_expect(b, rc, 0, RKDAPL_EVENT_WITH_IMM | RKDAPL_EVENT_RDMA_WRITE_IMM, 7, 0,
			     why);
	tap(!r, "rdma_write_imm of 0 bytes carries only the immediate data (7)", "%d %s: %s", r,
	    ename(r), why);

	/* --- SEND with immediate: the bytes land in the RECV, which reports WITH_IMM only --- */
	memset(rbuf, 0, PAGE_SIZE);
	rkdapl_lmr_sync_rdma_read(lmr_r, 0, PAGE_SIZE);
	pat_fill(b->bufb, 0, 200, 0x5e5e);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 200);
	rc = srv_recv(b, lmr_r, 0, 256, why);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 200 };
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_send_imm(b->c->ep, &t1, 1, IMM1 ^ 0xff, c,
				      RKDAPL_COMPLETION_SOLICITED_WAIT) : -EIO;
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND_IMM, 200, why);
	r = r ?: recv_expect(b, rc, 200, RKDAPL_EVENT_WITH_IMM, IMM1 ^ 0xff, 0, why);
	rkdapl_lmr_sync_rdma_write(lmr_r, 0, PAGE_SIZE);
	off = pat_check(rbuf, 0, 200, 0x5e5e);
	if (!r && off >= 0)
		snprintf(why, WHY, "first wrong byte of the RECV at %lld", off), r = -EIO;
	tap(!r, "send_imm (solicited): 200 bytes land in the peer's RECV, which reports WITH_IMM (not RDMA_WRITE_IMM), 0xfeedf0f2 and 200 bytes; the sender's event says SEND_IMM",
	    "%d %s: %s", r, ename(r), why);

	/* only the immediate data, and in a chain behind a SEND */
	rc = srv_recv(b, lmr_r, 0, 256, why);
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_send_imm(b->c->ep, NULL, 0, 0, c, 0) : -EIO;
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND_IMM, 0, why);
	r = r ?: recv_expect(b, rc, 0, RKDAPL_EVENT_WITH_IMM, 0, 0, why);
	tap(!r, "send_imm of 0 bytes carries only the immediate data (0, WITH_IMM set)", "%d %s: %s",
	    r, ename(r), why);
	{
		struct rkdapl_dto d[2] = {
			{ .op = RKDAPL_DTO_SEND, .iov = &t1, .num_iov = 1,
			  .cookie = next_cookie(b->c) },
			{ .op = RKDAPL_DTO_SEND_IMM, .iov = &t1, .num_iov = 1, .immediate = 0x1234,
			  .flags = RKDAPL_COMPLETION_SOLICITED_WAIT, .cookie = next_cookie(b->c) },
		};
		u64 rc2;
		u32 posted = ~0u;

		rc = srv_recv(b, lmr_r, 0, 256, why);
		rc2 = rc ? srv_recv(b, lmr_r, 256, 256, why) : 0;
		r = rc2 ? rkdapl_post_chain(b->c->ep, d, 2, &posted) : -EIO;
		if (!r && posted != 2)
			snprintf(why, WHY, "posted %u", posted), r = -EIO;
		r = r ?: dto_expect(b->c, d[0].cookie, RKDAPL_DTO_SEND, 200, why);
		r = r ?: dto_expect(b->c, d[1].cookie, RKDAPL_DTO_SEND_IMM, 200, why);
		r = r ?: recv_expect(b, rc, 200, 0, 0, 0, why);
		r = r ?: recv_expect(b, rc2, 200, RKDAPL_EVENT_WITH_IMM, 0x1234, 0, why);
		rkdapl_lmr_sync_rdma_write(lmr_r, 0, PAGE_SIZE);
		if (!r && (pat_check(rbuf, 0, 200, 0x5e5e) >= 0 ||
			   pat_check(rbuf + 256, 0, 200, 0x5e5e) >= 0))
			snprintf(why, WHY, "received bytes differ"), r = -EIO;
		tap(!r, "post_chain of SEND, SEND_IMM (solicited): two RECVs, the second with WITH_IMM and 0x1234; every byte arrived",
		    "%d %s: %s", r, ename(r), why);
	}
no_imm:
	expect(rkdapl_post_send_imm(NULL, &t1, 1, 1, c, 0), -EINVAL, "post_send_imm(NULL EP)");
	expect(rkdapl_post_send_imm(b->c->ep, NULL, 1, 1, c, 0), -EINVAL,
	       "post_send_imm(NULL iov, 1 entry)");
	expect(rkdapl_post_send_imm(b->c->ep, &t1, 1, 1, c, 1u << 5), -EINVAL,
	       "post_send_imm(unknown flag)");
	expect(rkdapl_post_rdma_write_imm(b->c->ep, &t1, 1, NULL, 1, c, 0), -EINVAL,
	       "post_rdma_write_imm(NULL remote)");
	expect(rkdapl_post_rdma_write_imm(NULL, &t1, 1, &rt, 1, c, 0), -EINVAL,
	       "post_rdma_write_imm(NULL EP)");

	/* --- SEND with SOLICITED_WAIT; a plain RECV's flags are 0 --- */
	rc = srv_recv(b, lmr_r, 0, 256, why);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 100 };
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_send(b->c->ep, &t1, 1, c, RKDAPL_COMPLETION_SOLICITED_WAIT) : -EIO;
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND, 100, why);
	r = r ?: recv_expect(b, rc, 100, 0, 0, 0, why);
	rkdapl_lmr_sync_rdma_write(lmr_r, 0, PAGE_SIZE);
	if (!r && memcmp(rbuf, b->bufb, 100))
		snprintf(why, WHY, "received bytes differ"), r = -EIO;
	tap(!r, "post_send with SOLICITED_WAIT arrives; a SEND's RECV event has flags 0", "%d %s: %s",
	    r, ename(r), why);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
	rt.length = 64;
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, RKDAPL_COMPLETION_SOLICITED_WAIT),
	       -EINVAL, "post_rdma_write(SOLICITED_WAIT)");
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, RKDAPL_COMPLETION_SOLICITED_WAIT),
	       -EINVAL, "post_rdma_read(SOLICITED_WAIT)");

	/* --- BARRIER_FENCE: a WRITE after a READ of the same bytes --- */
	pat_fill(b->bufa, 0, 64, 0x01d);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, 64);
	pat_fill(b->bufb + 2048, 0, 64, 0x0e3);
	memset(b->bufb + 1024, 0, 64);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 4096);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 1024, 64 };
	c = next_cookie(b->c);
	r = rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 2048, 64 };
	c2 = next_cookie(b->c);
	r = r ?: rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c2, RKDAPL_COMPLETION_BARRIER_FENCE);
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_RDMA_READ, 64, why);
	r = r ?: dto_expect(b->c, c2, RKDAPL_DTO_RDMA_WRITE, 64, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, 4096);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, 64);
	if (!r && pat_check(b->bufb + 1024, 0, 64, 0x01d) >= 0)
		snprintf(why, WHY, "the READ did not return the old bytes"), r = -EIO;
	if (!r && !landed(b->lmr_a, b->bufa, 0, 64, 0x0e3))
		snprintf(why, WHY, "the fenced WRITE's bytes are not in the grant after 2 s"), r = -EIO;
	tap(!r, "BARRIER_FENCE: a fenced WRITE after a READ of the same bytes: the READ returns the old bytes, the WRITE lands",
	    "%d %s: %s", r, ename(r), why);

	dto_forms_chain(b, lmr_r, rbuf, rt);

	/* --- SEND with invalidate: the peer ends the grant --- */
	r = rkdapl_lmr_create(b->pz, b->bufa + 8192, 4096, ALL_PRIV, &lmr_i);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr_i);
	r = r ?: grant(b, rmr_i, lmr_i, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &ri, why);
	r = r ?: write_status(b, 0, 64, ri, 0, &status, why);
	if (!tap(!r && status == RKDAPL_DTO_SUCCESS, "send_with_invalidate: a grant the client writes through",
		 "%d %s, status %d (%s): %s", r, ename(r), status, stname(status), why))
		goto out;
	rc = srv_recv(b, lmr_r, 0, 256, why);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 32 };
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_send_with_invalidate(b->c->ep, &t1, 1, ri.rkey, c, 0) : -EIO;
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND_INVALIDATE, 32, why);
	r = r ?: recv_expect(b, rc, 32, RKDAPL_EVENT_INVALIDATED, 0, ri.rkey, why);
	tap(!r, "send_with_invalidate: the peer's RECV reports INVALIDATED with the rkey, 32 bytes",
	    "%d %s: %s", r, ename(r), why);
	c = next_cookie(b->s);
	expect(rkdapl_rmr_unbind(rmr_i, b->s->ep, c), -EINVAL,
	       "rmr_unbind of an RMR the peer invalidated (not bound any more)");
	r = rkdapl_lmr_free(lmr_i);
	tap(!r, "lmr_free of the LMR of a grant the peer invalidated succeeds (no longer busy)",
	    "%d %s", r, ename(r));
	if (!r)
		lmr_i = NULL;
	pat_fill(b->bufa, 8192, 4096, 0x0dd);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 8192, 4096);
	r = write_status(b, 0, 64, ri, 0, &status, why);
	rkdapl_lmr_sync_rdma_write(b->lmr_a, 8192, 4096);
	off = pat_check(b->bufa, 8192, 4096, 0x0dd);
	if (!r)
		snprintf(why, WHY, "status %d (%s), first changed byte %lld", status,
			 stname(status), off);
	tap(!r && write_refused(b, status, false, why) && off < 0,
	    is_iwarp(&b->attr) ?
	    "iWARP: a WRITE with the invalidated rkey -> SUCCESS or LOCAL_EP_ERROR, the connection breaks; the memory is unchanged" :
	    "a WRITE with the invalidated rkey gets REMOTE_ACCESS_ERROR; the memory is unchanged",
	    "%d %s: %s", r, ename(r), why);

	/* the RMR binds again, with a new rkey that works */
	pair_close(b);
	old_rkey = ri.rkey;
	r = pair_connect(b, why);
	r = r ?: grant(b, rmr_i, b->lmr_a, 8192, 4096, RKDAPL_MEM_REMOTE_WRITE, &ri, why);
	r = r ?: write_status(b, 0, 64, ri, 0, &status, why);
	tap(!r && status == RKDAPL_DTO_SUCCESS && ri.rkey != old_rkey,
	    "an RMR the peer invalidated binds again, with a new rkey the client writes through",
	    "%d %s, status %d (%s), rkey %#x (old %#x): %s", r, ename(r), status, stname(status),
	    ri.rkey, old_rkey, why);

	/*
	 * An rkey the peer cannot invalidate: the peer's RECV fails (IB class J, the peer's QP
	 * goes to error; rdma_rxe still acknowledges the SEND), the peer's grants stay.
	 */
	rc = r ? 0 : srv_recv(b, lmr_r, 0, 256, why);
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 32 };
	c = next_cookie(b->c);
	r = rc ? rkdapl_post_send_with_invalidate(b->c->ep, &t1, 1, 0x5a5a5a00, c, 0) : -EIO;
	r = r ?: wait_cookie(b->c, c, &ev);
	r = r ?: wait_cookie(b->s, rc, &ev);
	tap(!r && ev.status != RKDAPL_DTO_SUCCESS && !(ev.flags & RKDAPL_EVENT_INVALIDATED),
	    "send_with_invalidate of an rkey the peer never granted: the peer's RECV completes in error",
	    "%d %s, RECV status %d (%s) flags %#x", r, ename(r), ev.status, stname(ev.status),
	    ev.flags);
	c = next_cookie(b->s);
	r = rkdapl_rmr_unbind(rmr_i, b->s->ep, c);
	tap(r == 0 || r == -ENOTCONN,
	    "the peer's grant is still bound after a failed invalidate (unbind is not -EINVAL)",
	    "rmr_unbind = %d %s", r, ename(r));
out:
	pair_close(b);
	if (rmr_i)
		expect(rkdapl_rmr_free(rmr_i), 0, "rmr_free of the invalidation test's RMR");
	if (rmr_g)
		expect(rkdapl_rmr_free(rmr_g), 0, "rmr_free of the DTO-forms grant");
	if (lmr_i)
		rkdapl_lmr_free(lmr_i);
	if (lmr_r)
		expect(rkdapl_lmr_free(lmr_r), 0, "lmr_free of the DTO-forms RECV buffer");
	kfree(rbuf);
}
