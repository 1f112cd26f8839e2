// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_sample: a one-shot, krping-like consumer of the rkdapl C API (include/rkdapl.h).
 *
 *   insmod rkdapl_sample.ko role=server [dev=rxe0] [port=7471] [size=16777216]
 *   insmod rkdapl_sample.ko role=client server=10.77.0.1 [dev=rxe0] [port=7471] [size=...]
 *
 * Other parameters: timeout_ms (each wait, and the client's connect retries; 120000),
 * inflight (client: RDMA DTOs in flight at most; default the EP's 64), lmr_per_seg (server:
 * register each granted segment as an LMR of its own instead of binding into one LMR).
 *
 * All the work happens in module_init, which returns 0 once the transfer is verified and a
 * negative errno otherwise, so insmod itself reports the result.
 *
 * The protocol is drawn in sample.h. This file has the module's parameters and its init, the
 * sample's objects (set-up and tear-down), its DTO completions and its messages; server.c
 * and client.c are the two sides.
 */
#include "sample.h"

#include <linux/bitmap.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name (default rxe0)");
char *server = "";
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "client: the server's IPv4 address");
ushort port = 7471;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7471)");
ulong size = SZ_16M;
module_param(size, ulong, 0444);
MODULE_PARM_DESC(size, "payload bytes (default 16 MiB, at most 64 MiB)");
static uint timeout_ms = 120000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "timeout of each wait, and of the connect retries (default 120000)");
uint inflight;
module_param(inflight, uint, 0444);
MODULE_PARM_DESC(inflight, "client: RDMA DTOs in flight at most (default 0: the EP's 64)");
bool lmr_per_seg;
module_param(lmr_per_seg, bool, 0444);
MODULE_PARM_DESC(lmr_per_seg,
		 "server: bind each RMR over its own LMR of just that segment (default: one LMR)");

/* ---- payload pattern and checksum ---------------------------------------------------- */

/* splitmix64 of the 8-byte word index: the byte at offset o is byte o % 8 of word o / 8. */
static inline u64 pattern_word(u64 i)
{
	u64 z = i * 0x9e3779b97f4a7c15ULL + 0x726b6461706c2121ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void sample_pattern_fill(u8 *buf, u64 len)
{
	u64 off, w;

	for (off = 0; off < len; off += 8) {
		w = pattern_word(off >> 3);
		memcpy(buf + off, &w, min_t(u64, 8, len - off));
		if (!(off & (SZ_1M - 1)))
			cond_resched();
	}
}

/* Returns the offset of the first byte that differs from the pattern, or len. */
u64 sample_pattern_check(const u8 *buf, u64 len)
{
	u64 off, w, n, i;

	for (off = 0; off < len; off += 8) {
		w = pattern_word(off >> 3);
		n = min_t(u64, 8, len - off);
		if (memcmp(buf + off, &w, n)) {
			for (i = 0; i < n; i++)
				if (buf[off + i] != ((u8 *)&w)[i])
					return off + i;
		}
		if (!(off & (SZ_1M - 1)))
			cond_resched();
	}
	return len;
}

/* FNV-1a 64 over 64-bit words (the tail byte-wise): cheap enough for a KASAN guest. */
u64 sample_checksum(const u8 *buf, u64 len)
{
	u64 h = 0xcbf29ce484222325ULL, off, w;

	for (off = 0; off + 8 <= len; off += 8) {
		memcpy(&w, buf + off, 8);
		h = (h ^ w) * 0x100000001b3ULL;
		if (!(off & (SZ_1M - 1)))
			cond_resched();
	}
	for (; off < len; off++)
		h = (h ^ buf[off]) * 0x100000001b3ULL;
	return h;
}

/* ---- completions ---------------------------------------------------------------------- */

/* The sample's DTO and bind completions (sconn->dto_event). */
static void sample_dto_event(struct sconn *c, const struct rkdapl_event *ev)
{
	struct sample *s = container_of(c, struct sample, c);
	u32 kind = COOKIE_KIND(ev->cookie), idx = COOKIE_IDX(ev->cookie);
	bool sq = ev->op != RKDAPL_DTO_RECV;
	bool ok = ev->status == RKDAPL_DTO_SUCCESS;
	u32 want_kind;

	if (ev->ep != s->c.ep) {
		pr_warn("%s: %s completion (cookie %#llx) of another EP %p, ignored\n", s->c.who,
			rkdapl_op_msg(ev->op), ev->cookie, ev->ep);
		return;
	}
	if (sq && s->sq_inflight)
		s->sq_inflight--;
	if (!ok) {
		pr_err("%s: %s (cookie %#llx) completed with status %d (%s)\n", s->c.who,
		       rkdapl_op_msg(ev->op), ev->cookie, ev->status,
		       rkdapl_status_msg(ev->status));
		sconn_fail(&s->c, -EIO);
		return;
	}
	switch (ev->op) {
	case RKDAPL_DTO_SEND:
	case RKDAPL_DTO_SEND_INVALIDATE:
		want_kind = K_SEND;
		break;
	case RKDAPL_DTO_RECV:
		want_kind = K_RECV;
		break;
	case RKDAPL_DTO_RDMA_WRITE:
		want_kind = K_WRITE;
		break;
	case RKDAPL_DTO_RDMA_READ:
		want_kind = K_READ;
		break;
	case RKDAPL_DTO_RMR_BIND:
		want_kind = K_BIND;
		break;
	default:
		pr_err("%s: unexpected completion op %u (cookie %#llx)\n", s->c.who, ev->op,
		       ev->cookie);
		sconn_fail(&s->c, -EPROTO);
		return;
	}
	if (kind != want_kind ||
	    (ev->type == RKDAPL_RMR_BIND_COMPLETION_EVENT) != (want_kind == K_BIND)) {
		pr_err("%s: %s event with op %s carries cookie %#llx of another operation\n",
		       s->c.who, rkdapl_event_msg(ev->type), rkdapl_op_msg(ev->op), ev->cookie);
		sconn_fail(&s->c, -EPROTO);
		return;
	}
	switch (kind) {
	case K_SEND:
		if (idx != s->sends_done || s->sends_done >= s->sends_posted)
			goto bad_cookie;
		s->sends_done++;
		break;
	case K_RECV:
		if (idx != s->recvs_done || s->recvs_done >= s->recvs_posted)
			goto bad_cookie;
		s->recvs_done++;
		s->rx_len = ev->transferred_length;
		s->rx_flags = ev->flags;
		s->rx_inv_rkey = ev->invalidated_rkey;
		break;
	default:	/* RDMA and binds: each index of the current batch exactly once */
		if (!s->seen || idx >= s->nseen || test_and_set_bit(idx, s->seen))
			goto bad_cookie;
		if (kind == K_BIND) {
			s->binds_done++;
		} else {
			s->rdma_done++;
			s->rdma_bytes += ev->transferred_length;
		}
		break;
	}
	return;

bad_cookie:
	pr_err("%s: %s completion with unexpected cookie %#llx\n", s->c.who,
	       rkdapl_op_msg(ev->op), ev->cookie);
	sconn_fail(&s->c, -EPROTO);
}

/* ---- messages ----------------------------------------------------------------------- */

int sample_post_recv(struct sample *s)
{
	struct rkdapl_lmr_triplet iov = { .lmr = s->rx_lmr, .offset = 0,
					  .length = SAMPLE_MSG_BUF };
	int ret;

	memset(s->rx, 0, SAMPLE_MSG_BUF);
	ret = CHECK(&s->c, rkdapl_post_recv(s->c.ep, &iov, 1, COOKIE(K_RECV, s->recvs_posted), 0));
	if (!ret)
		s->recvs_posted++;
	return ret;
}

/*
 * Posts a SEND of the first len bytes of s->tx; with inv_rkey != 0 a SEND with invalidate,
 * which also ends the peer's grant of that rkey.
 */
int sample_post_send_inv(struct sample *s, u32 len, u32 inv_rkey)
{
	struct rkdapl_lmr_triplet iov = { .lmr = s->tx_lmr, .offset = 0, .length = len };
	u64 cookie = COOKIE(K_SEND, s->sends_posted);
	int ret;

	if (inv_rkey)
		ret = CHECK(&s->c, rkdapl_post_send_with_invalidate(s->c.ep, &iov, 1, inv_rkey,
								    cookie, 0));
	else
		ret = CHECK(&s->c, rkdapl_post_send(s->c.ep, &iov, 1, cookie, 0));
	if (ret)
		return ret;
	s->sends_posted++;
	s->sq_inflight++;
	return 0;
}

int sample_post_send(struct sample *s, u32 len)
{
	return sample_post_send_inv(s, len, 0);
}

/* Posts the RECV for the peer's answer, then starts a message of @magic in s->tx. */
int sample_start_msg(struct sample *s, u32 magic)
{
	int ret = sample_post_recv(s);

	if (ret)
		return ret;
	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = magic;
	return 0;
}

/* Sends the first len bytes of s->tx and waits for the completion. */
int sample_send(struct sample *s, u32 len, const char *what)
{
	int ret = sample_post_send(s, len);

	if (ret)
		return ret;
	return sconn_wait_for(&s->c, s->sends_done == s->sends_posted, what);
}

/* Waits for the next RECV and checks its magic and minimum length. */
int sample_recv(struct sample *s, u32 magic, u64 min_len, const char *what)
{
	int ret = sconn_wait_for(&s->c, s->recvs_done == s->recvs_posted, what);

	if (ret)
		return ret;
	if (s->rx_len < min_len || s->rx_len > SAMPLE_MSG_BUF || s->rx->magic != magic) {
		pr_err("%s: bad %s: %llu bytes, magic %#x (want >= %llu bytes, magic %#x)\n",
		       s->c.who, what, s->rx_len, s->rx->magic, min_len, magic);
		return -EPROTO;
	}
	return 0;
}

int sample_new_batch(struct sample *s, u32 n)
{
	bitmap_free(s->seen);
	s->seen = bitmap_zalloc(n, GFP_KERNEL);
	s->nseen = s->seen ? n : 0;
	s->binds_done = 0;
	s->rdma_done = 0;
	s->rdma_bytes = 0;
	if (!s->seen) {
		pr_err("%s: out of memory for %u completion flags\n", s->c.who, n);
		return -ENOMEM;
	}
	return 0;
}

/* Before a send-queue post: waits until fewer than window DTOs are outstanding. */
int sample_sq_room(struct sample *s, u32 window, const char *what)
{
	return sconn_wait_for(&s->c, s->sq_inflight < window, what);
}

/* ---- set-up and tear-down ----------------------------------------------------------- */

int sample_open(struct sample *s)
{
	int ret;

	ret = sconn_open(&s->c, dev, 256);
	if (ret)
		return ret;
	pr_info("%s: IA %s: max_iov %u, max_dtos %u, max_rmr_pages %u, max_evd_qlen %u\n",
		s->c.who, s->c.attr.name, s->c.attr.max_iov, s->c.attr.max_dtos,
		s->c.attr.max_rmr_pages, s->c.attr.max_evd_qlen);
	if (!s->c.attr.max_iov || !s->c.attr.max_rmr_pages) {
		pr_err("%s: device reports max_iov %u, max_rmr_pages %u\n", s->c.who,
		       s->c.attr.max_iov, s->c.attr.max_rmr_pages);
		return -EINVAL;
	}

	s->c.ep_attr.max_request_dtos = 64;
	s->c.ep_attr.max_recv_dtos = 4;
	s->c.ep_attr.max_rdma_read_in = 16;
	s->c.ep_attr.max_rdma_read_out = 16;

	ret = sconn_alloc_lmr(&s->c, &s->tx, SAMPLE_MSG_BUF, RKDAPL_MEM_LOCAL_WRITE, &s->tx_lmr);
	if (ret)
		return ret;
	return sconn_alloc_lmr(&s->c, &s->rx, SAMPLE_MSG_BUF, RKDAPL_MEM_LOCAL_WRITE, &s->rx_lmr);
}

/* Frees everything in reverse order; returns the first error. */
static int sample_close(struct sample *s)
{
	int ret, r;
	u32 i;

#define KEEP(x) do { r = (x); if (r && !ret) ret = r; } while (0)
	ret = sconn_free_ep(&s->c);
	for (i = 0; i < s->nrmr; i++)
		KEEP(CHECK(&s->c, rkdapl_rmr_free(s->rmrs[i])));
	s->nrmr = 0;
	kfree(s->rmrs);
	s->rmrs = NULL;
	for (i = 0; i < s->nseg_lmr; i++)
		KEEP(CHECK(&s->c, rkdapl_lmr_free(s->seg_lmrs[i])));
	s->nseg_lmr = 0;
	kfree(s->seg_lmrs);
	s->seg_lmrs = NULL;
	KEEP(sconn_free_lmr(&s->c, &s->readback_lmr, &s->readback, "readback"));
	KEEP(sconn_free_lmr(&s->c, &s->payload_lmr, &s->payload, "payload"));
	KEEP(sconn_free_lmr(&s->c, &s->rx_lmr, &s->rx, "rx message"));
	KEEP(sconn_free_lmr(&s->c, &s->tx_lmr, &s->tx, "tx message"));
	KEEP(sconn_close(&s->c));
#undef KEEP
	kfree(s->segs);
	s->segs = NULL;
	bitmap_free(s->seen);
	s->seen = NULL;
	return ret;
}

/* ---- the module --------------------------------------------------------------------- */

static int __init rkdapl_sample_init(void)
{
	struct sample *s;
	int ret, ret2;

	if (!size || size > SAMPLE_MAX_SIZE) {
		pr_err("size=%lu out of range 1..%u\n", size, SAMPLE_MAX_SIZE);
		return -EINVAL;
	}
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	ret = sconn_init(&s->c, role, timeout_ms, port);
	if (ret) {
		kfree(s);
		return ret;
	}
	s->c.pdata = SAMPLE_PRIVATE;
	s->c.dto_event = sample_dto_event;
	ret = s->c.is_server ? server_run(s) : client_run(s);
	ret2 = sample_close(s);
	if (!ret && ret2)
		ret = ret2;
	if (ret)
		pr_err("%s: FAILED: %d\n", s->c.who, ret);
	kfree(s);
	return ret;
}

static void __exit rkdapl_sample_exit(void)
{
}

module_init(rkdapl_sample_init);
module_exit(rkdapl_sample_exit);

MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl sample consumer: verified RDMA WRITE/READ between two hosts");

