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
 * Protocol (one RC connection, messages in host byte order: both sides are the same arch):
 *
 *   client                                   server
 *     connect("rkdapl-sample")  ----------->   CONNECTION_REQUEST, accept
 *     SEND request {size}       ----------->   RMR per payload segment, bind
 *                               <-----------   SEND advertisement {nseg, {addr, rkey, len}[]}
 *     RDMA WRITE pattern into the segments (timed)
 *     RDMA READ it back (timed), compare
 *     SEND with invalidate of segment 0's rkey:
 *       done {checksum}         ----------->   compare its buffer with the pattern + checksum;
 *                                              the RECV says the client ended grant 0
 *                               <-----------   SEND verdict {ok}
 *     disconnect                ----------->   DISCONNECTED
 */
#define pr_fmt(fmt) "rkdapl_sample: " fmt

#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "sample_conn.h"

static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name (default rxe0)");
static char *server = "";
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "client: the server's IPv4 address");
static ushort port = 7471;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7471)");
static ulong size = SZ_16M;
module_param(size, ulong, 0444);
MODULE_PARM_DESC(size, "payload bytes (default 16 MiB, at most 64 MiB)");
static uint timeout_ms = 120000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "timeout of each wait, and of the connect retries (default 120000)");
static uint inflight;
module_param(inflight, uint, 0444);
MODULE_PARM_DESC(inflight, "client: RDMA DTOs in flight at most (default 0: the EP's 64)");
static bool lmr_per_seg;
module_param(lmr_per_seg, bool, 0444);
MODULE_PARM_DESC(lmr_per_seg,
		 "server: bind each RMR over its own LMR of just that segment (default: one LMR)");

#define SAMPLE_MAX_SIZE SZ_64M
#define SAMPLE_PRIVATE "rkdapl-sample"
/* Largest DTO the client posts: 1 MiB = 256 vmalloc pages, one SGE each. */
#define SAMPLE_MAX_DTO SZ_1M
/* Largest RMR segment the server grants. */
#define SAMPLE_MAX_SEG SZ_1M

#define MSG_REQUEST 0x524b5131u	/* "RKQ1" */
#define MSG_ADVERT 0x524b4131u	/* "RKA1" */
#define MSG_DONE 0x524b4431u	/* "RKD1" */
#define MSG_VERDICT 0x524b5631u	/* "RKV1" */

struct sample_seg {
	u64 address;
	u32 rkey;
	u32 len;
};

/* Every message: a fixed header, the advertisement adds its segments. */
struct sample_msg {
	u32 magic;
	u32 nseg;	/* advertisement: entries in seg[] */
	u32 ok;		/* done: client's own check passed; verdict: server's check passed */
	u32 reserved;
	u64 size;	/* request, advertisement, done: payload bytes */
	u64 checksum;	/* done, verdict: checksum of the payload */
	struct sample_seg seg[];
};

#define SAMPLE_MSG_BUF 8192
#define SAMPLE_MAX_SEGS ((SAMPLE_MSG_BUF - sizeof(struct sample_msg)) / sizeof(struct sample_seg))

/* Cookies: kind in the top 16 bits, an index below. */
enum sample_kind { K_SEND = 1, K_RECV, K_WRITE, K_READ, K_BIND };
#define COOKIE(kind, idx) (((u64)(kind) << 48) | (u64)(idx))
#define COOKIE_KIND(c) ((u32)((c) >> 48))
#define COOKIE_IDX(c) ((u32)((c) & 0xffffffffffffULL))

struct sample {
	struct sconn c;		/* IA, PZ, EVD, PSP, EP and the connection's events */

	u8 *payload;
	struct rkdapl_lmr *payload_lmr;
	u8 *readback;
	struct rkdapl_lmr *readback_lmr;
	struct sample_msg *tx, *rx;
	struct rkdapl_lmr *tx_lmr, *rx_lmr;

	struct rkdapl_rmr **rmrs;
	u32 nrmr;
	struct rkdapl_lmr **seg_lmrs;	/* lmr_per_seg */
	u32 nseg_lmr;
	struct sample_seg *segs;
	u32 nseg;

	/* DTO state, updated by sample_dto_event(). */
	u32 sq_inflight;
	u32 sends_posted, sends_done;
	u32 recvs_posted, recvs_done;
	u64 rx_len;
	u32 rx_flags;		/* &enum rkdapl_event_flags of the last RECV */
	u32 rx_inv_rkey;	/* its invalidated rkey */
	u32 binds_done;
	u32 rdma_done;
	u64 rdma_bytes;
	unsigned long *seen;
	u32 nseen;
};

/* ---- payload pattern and checksum ---------------------------------------------------- */

/* splitmix64 of the 8-byte word index: the byte at offset o is byte o % 8 of word o / 8. */
static inline u64 pattern_word(u64 i)
{
	u64 z = i * 0x9e3779b97f4a7c15ULL + 0x726b6461706c2121ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void pattern_fill(u8 *buf, u64 len)
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
static u64 pattern_check(const u8 *buf, u64 len)
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
static u64 checksum(const u8 *buf, u64 len)
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
			op_name(ev->op), ev->cookie, ev->ep);
		return;
	}
	if (sq && s->sq_inflight)
		s->sq_inflight--;
	if (!ok) {
		pr_err("%s: %s (cookie %#llx) completed with status %d (%s)\n", s->c.who,
		       op_name(ev->op), ev->cookie, ev->status, status_name(ev->status));
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
		       s->c.who, event_name(ev->type), op_name(ev->op), ev->cookie);
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
	       op_name(ev->op), ev->cookie);
	sconn_fail(&s->c, -EPROTO);
}

/* ---- messages ----------------------------------------------------------------------- */

static int sample_post_recv(struct sample *s)
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
static int sample_post_send_inv(struct sample *s, u32 len, u32 inv_rkey)
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

static int sample_post_send(struct sample *s, u32 len)
{
	return sample_post_send_inv(s, len, 0);
}

/* Posts the RECV for the peer's answer, then starts a message of @magic in s->tx. */
static int sample_start_msg(struct sample *s, u32 magic)
{
	int ret = sample_post_recv(s);

	if (ret)
		return ret;
	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = magic;
	return 0;
}

/* Sends the first len bytes of s->tx and waits for the completion. */
static int sample_send(struct sample *s, u32 len, const char *what)
{
	int ret = sample_post_send(s, len);

	if (ret)
		return ret;
	return sconn_wait_for(&s->c, s->sends_done == s->sends_posted, what);
}

/* Waits for the next RECV and checks its magic and minimum length. */
static int sample_recv(struct sample *s, u32 magic, u64 min_len, const char *what)
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

static int sample_new_batch(struct sample *s, u32 n)
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
static int sample_sq_room(struct sample *s, u32 window, const char *what)
{
	return sconn_wait_for(&s->c, s->sq_inflight < window, what);
}

/* ---- set-up and tear-down ----------------------------------------------------------- */

static int sample_open(struct sample *s)
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

/* ---- server ------------------------------------------------------------------------- */

static int server_grant(struct sample *s, u64 n)
{
	u64 seg = min_t(u64, SAMPLE_MAX_SEG, (u64)s->c.attr.max_rmr_pages * PAGE_SIZE);
	u32 window = s->c.ep_attr.max_request_dtos, i;
	int ret;

	s->nseg = DIV_ROUND_UP_ULL(n, seg);
	if (s->nseg > SAMPLE_MAX_SEGS) {
		pr_err("%s: %llu bytes need %u segments of %llu bytes, the message holds %zu\n",
		       s->c.who, n, s->nseg, seg, SAMPLE_MAX_SEGS);
		return -E2BIG;
	}
	s->segs = kcalloc(s->nseg, sizeof(*s->segs), GFP_KERNEL);
	s->rmrs = kcalloc(s->nseg, sizeof(*s->rmrs), GFP_KERNEL);
	if (!s->segs || !s->rmrs)
		return -ENOMEM;
	ret = sample_new_batch(s, s->nseg);
	if (ret)
		return ret;
	for (i = 0; i < s->nseg; i++) {
		ret = CHECK(&s->c, rkdapl_rmr_create(s->c.pz, &s->rmrs[i]));
		if (ret)
			return ret;
		s->nrmr++;
	}
	if (lmr_per_seg) {
		s->seg_lmrs = kcalloc(s->nseg, sizeof(*s->seg_lmrs), GFP_KERNEL);
		if (!s->seg_lmrs)
			return -ENOMEM;
		for (i = 0; i < s->nseg; i++) {
			u64 off = (u64)i * seg;

			ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->payload + off,
							     min(seg, n - off),
							     RKDAPL_MEM_LOCAL_WRITE |
							     RKDAPL_MEM_REMOTE_READ |
							     RKDAPL_MEM_REMOTE_WRITE,
							     &s->seg_lmrs[i]));
			if (ret)
				return ret;
			s->nseg_lmr++;
		}
	}
	for (i = 0; i < s->nseg; i++) {
		u64 off = (u64)i * seg, len = min(seg, n - off);

		ret = sample_sq_room(s, window, "RMR bind completions");
		if (ret)
			return ret;
		for (;;) {
			ret = rkdapl_rmr_bind(s->rmrs[i],
					      lmr_per_seg ? s->seg_lmrs[i] : s->payload_lmr,
					      lmr_per_seg ? 0 : off, len,
					      RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE,
					      s->c.ep, COOKIE(K_BIND, i), &s->segs[i].rkey,
					      &s->segs[i].address);
			if (ret != -ENOSPC || !s->sq_inflight)
				break;
			/* send queue full: wait for one completion, then retry */
			ret = sample_sq_room(s, s->sq_inflight, "RMR bind completions");
			if (ret)
				return ret;
		}
		if (ret) {
			pr_err("%s: rkdapl_rmr_bind(segment %u: %llu bytes at offset %llu) failed: %d\n",
			       s->c.who, i, len, off, ret);
			return ret;
		}
		s->sq_inflight++;
		s->segs[i].len = len;
	}
	ret = sconn_wait_for(&s->c, s->binds_done == s->nseg, "RMR bind completions");
	if (ret)
		return ret;
	pr_info("%s: granted %llu bytes as %u RMR segment(s) of up to %llu bytes%s\n", s->c.who,
		n, s->nseg, seg, lmr_per_seg ? ", one LMR each" : "");
	return 0;
}

static int server_run(struct sample *s)
{
	u64 n, csum, bad;
	bool ok;
	int ret;

	ret = sample_open(s);
	if (ret)
		return ret;
	s->payload = vzalloc(size);
	if (!s->payload) {
		pr_err("%s: vzalloc(%lu) failed\n", s->c.who, size);
		return -ENOMEM;
	}
	ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->payload, size,
					     RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
					     RKDAPL_MEM_REMOTE_WRITE, &s->payload_lmr));
	if (ret)
		return ret;
	ret = CHECK(&s->c, rkdapl_psp_create(s->c.ia, port, 4, s->c.evd, &s->c.psp));
	if (ret)
		return ret;
	pr_info("server: listening on %s port %u (payload %lu bytes)\n", dev, port, size);

	ret = sconn_accept(&s->c);
	if (ret)
		return ret;
	ret = sample_post_recv(s);
	if (ret)
		return ret;
	ret = sconn_wait_for(&s->c, s->c.established, "ESTABLISHED");
	if (ret)
		return ret;
	pr_info("server: connection established\n");

	ret = sample_recv(s, MSG_REQUEST, sizeof(struct sample_msg), "the client's request");
	if (ret)
		return ret;
	n = s->rx->size;
	if (!n || n > size) {
		pr_err("server: the client asks for %llu bytes, the payload buffer has %lu\n", n,
		       size);
		return -EPROTO;
	}
	ret = server_grant(s, n);
	if (ret)
		return ret;

	ret = sample_start_msg(s, MSG_ADVERT);
	if (ret)
		return ret;
	s->tx->nseg = s->nseg;
	s->tx->size = n;
	memcpy(s->tx->seg, s->segs, s->nseg * sizeof(*s->segs));
	ret = sample_send(s, struct_size(s->tx, seg, s->nseg), "the advertisement's SEND");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_DONE, sizeof(struct sample_msg), "the client's done message");
	if (ret)
		return ret;

	ret = CHECK(&s->c, rkdapl_lmr_sync_rdma_write(s->payload_lmr, 0, n));
	if (ret)
		return ret;
	bad = pattern_check(s->payload, n);
	csum = checksum(s->payload, n);
	ok = bad == n && csum == s->rx->checksum && s->rx->size == n && s->rx->ok;
	if (!(s->rx_flags & RKDAPL_EVENT_INVALIDATED) || s->rx_inv_rkey != s->segs[0].rkey) {
		pr_err("server: the done message did not end grant 0 (flags %#x, rkey %#x, grant %#x)\n",
		       s->rx_flags, s->rx_inv_rkey, s->segs[0].rkey);
		ok = false;
	} else {
		pr_info("server: the client's done message ended the grant of segment 0 (rkey %#x)\n",
			s->rx_inv_rkey);
	}
	if (bad != n)
		pr_err("server: payload differs from the pattern at offset %llu\n", bad);
	if (csum != s->rx->checksum || s->rx->size != n)
		pr_err("server: checksum 0x%016llx of %llu bytes, client says 0x%016llx of %llu\n",
		       csum, n, s->rx->checksum, s->rx->size);
	if (!s->rx->ok)
		pr_err("server: the client reports its read-back check failed\n");

	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = MSG_VERDICT;
	s->tx->ok = ok;
	s->tx->size = n;
	s->tx->checksum = csum;
	/* the client disconnects once it has the verdict: the two events may come in any order */
	s->c.expect_disc = true;
	ret = sample_post_send(s, sizeof(struct sample_msg));
	if (ret)
		return ret;
	ret = sconn_wait_for(&s->c, s->sends_done == s->sends_posted && s->c.disconnected,
			     "the verdict's SEND and the client's disconnect");
	if (ret)
		return ret;
	if (!ok) {
		pr_err("server: verification of %llu bytes FAILED\n", n);
		return -EIO;
	}
	pr_info("server: verified %llu bytes written by the client, checksum 0x%016llx, ok\n", n,
		csum);
	return 0;
}

/* ---- client ------------------------------------------------------------------------- */

/* RDMA WRITEs (or READs) all of lmr into the advertised segments; returns the time taken. */
static int client_rdma(struct sample *s, bool write, struct rkdapl_lmr *lmr, u64 total,
		       u64 *ns)
{
	const char *what = write ? "RDMA WRITE completions" : "RDMA READ completions";
	u64 chunk = min_t(u64, SAMPLE_MAX_DTO, 8ULL * s->c.attr.max_iov * PAGE_SIZE);
	u32 window = inflight ? min(inflight, s->c.ep_attr.max_request_dtos) :
				s->c.ep_attr.max_request_dtos;
	u32 nchunks = 0, idx = 0, i;
	u64 loff = 0, off, len;
	ktime_t t0;
	int ret;

	for (i = 0; i < s->nseg; i++)
		nchunks += DIV_ROUND_UP_ULL(s->segs[i].len, chunk);
	ret = sample_new_batch(s, nchunks);
	if (ret)
		return ret;
	if (write)
		pr_info("client: %u DTOs of up to %llu bytes, at most %u in flight\n", nchunks,
			chunk, window);

	t0 = ktime_get();
	for (i = 0; i < s->nseg; i++) {
		for (off = 0; off < s->segs[i].len; off += len, idx++) {
			struct rkdapl_lmr_triplet iov;
			struct rkdapl_rmr_triplet rem;

			len = min_t(u64, chunk, s->segs[i].len - off);
			iov = (struct rkdapl_lmr_triplet){ .lmr = lmr, .offset = loff + off,
							   .length = len };
			rem = (struct rkdapl_rmr_triplet){ .address = s->segs[i].address + off,
							   .rkey = s->segs[i].rkey,
							   .length = len };
			ret = sample_sq_room(s, window, what);
			if (ret)
				return ret;
			for (;;) {
				if (write)
					ret = rkdapl_post_rdma_write(s->c.ep, &iov, 1, &rem,
								     COOKIE(K_WRITE, idx), 0);
				else
					ret = rkdapl_post_rdma_read(s->c.ep, &iov, 1, &rem,
								    COOKIE(K_READ, idx), 0);
				if (ret != -ENOSPC || !s->sq_inflight)
					break;
				ret = sample_sq_room(s, s->sq_inflight, what);
				if (ret)
					return ret;
			}
			if (ret) {
				pr_err("client: rkdapl_post_rdma_%s(%llu bytes at offset %llu to segment %u) failed: %d\n",
				       write ? "write" : "read", len, loff + off, i, ret);
				return ret;
			}
			s->sq_inflight++;
		}
		loff += s->segs[i].len;
	}
	ret = sconn_wait_for(&s->c, s->rdma_done == nchunks, what);
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	if (ret)
		return ret;
	if (s->rdma_bytes != total) {
		pr_err("client: %s moved %llu bytes, expected %llu\n", what, s->rdma_bytes, total);
		return -EIO;
	}
	return 0;
}

static void client_report(const char *op, u64 bytes, u64 ns)
{
	u64 us = max_t(u64, div_u64(ns, 1000), 1);
	u64 ms10 = div_u64(ns, 100000);		/* tenths of ms */
	u64 mbs100 = div64_u64(bytes * 100, us);	/* hundredths of MB/s (bytes/us = MB/s) */

	pr_info("client: %s %llu bytes in %llu.%llu ms (%llu.%02llu MB/s)\n", op, bytes,
		div_u64(ms10, 10), ms10 % 10, div_u64(mbs100, 100), mbs100 % 100);
}

static int client_run(struct sample *s)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	u64 csum, wns = 0, rns = 0, total = 0;
	bool ok;
	u32 i;
	int ret;

	if (!server || !in4_pton(server, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("client: server=%s is not an IPv4 address\n", server ?: "");
		return -EINVAL;
	}
	ret = sample_open(s);
	if (ret)
		return ret;
	s->payload = vmalloc(size);
	s->readback = vzalloc(size);
	if (!s->payload || !s->readback) {
		pr_err("client: out of memory for 2 x %lu bytes\n", size);
		return -ENOMEM;
	}
	pattern_fill(s->payload, size);
	csum = checksum(s->payload, size);
	ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->payload, size, RKDAPL_MEM_LOCAL_WRITE,
					     &s->payload_lmr));
	if (ret)
		return ret;
	ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->readback, size, RKDAPL_MEM_LOCAL_WRITE,
					     &s->readback_lmr));
	if (ret)
		return ret;
	ret = CHECK(&s->c, rkdapl_lmr_sync_rdma_read(s->payload_lmr, 0, size));
	if (ret)
		return ret;

	ret = sconn_connect(&s->c, &sin);
	if (ret)
		return ret;
	ret = sample_start_msg(s, MSG_REQUEST);
	if (ret)
		return ret;
	s->tx->size = size;
	ret = sample_send(s, sizeof(struct sample_msg), "the request's SEND");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_ADVERT, sizeof(struct sample_msg), "the advertisement");
	if (ret)
		return ret;
	s->nseg = s->rx->nseg;
	if (!s->nseg || s->nseg > SAMPLE_MAX_SEGS ||
	    s->rx_len < struct_size(s->rx, seg, s->nseg) || s->rx->size != size) {
		pr_err("client: bad advertisement: %u segments, %llu bytes, in %llu bytes\n",
		       s->nseg, s->rx->size, s->rx_len);
		return -EPROTO;
	}
	s->segs = kmemdup(s->rx->seg, s->nseg * sizeof(*s->segs), GFP_KERNEL);
	if (!s->segs)
		return -ENOMEM;
	for (i = 0; i < s->nseg; i++) {
		if (!s->segs[i].len) {
			pr_err("client: advertised segment %u is empty\n", i);
			return -EPROTO;
		}
		total += s->segs[i].len;
	}
	if (total != size) {
		pr_err("client: advertised segments cover %llu bytes, not %lu\n", total, size);
		return -EPROTO;
	}
	pr_info("client: server granted %u segment(s)\n", s->nseg);

	ret = client_rdma(s, true, s->payload_lmr, size, &wns);
	if (ret)
		return ret;
	client_report("RDMA WRITE", size, wns);
	ret = client_rdma(s, false, s->readback_lmr, size, &rns);
	if (ret)
		return ret;
	client_report("RDMA READ", size, rns);
	ret = CHECK(&s->c, rkdapl_lmr_sync_rdma_write(s->readback_lmr, 0, size));
	if (ret)
		return ret;
	ok = !memcmp(s->readback, s->payload, size) && checksum(s->readback, size) == csum;
	if (!ok)
		pr_err("client: the data read back differs from what was written\n");

	ret = sample_start_msg(s, MSG_DONE);
	if (ret)
		return ret;
	s->tx->ok = ok;
	s->tx->size = size;
	s->tx->checksum = csum;
	/* the done message also ends the grant of segment 0: the server need not unbind it */
	ret = sample_post_send_inv(s, sizeof(struct sample_msg), s->segs[0].rkey);
	ret = ret ?: sconn_wait_for(&s->c, s->sends_done == s->sends_posted,
				    "the done message's SEND with invalidate");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_VERDICT, sizeof(struct sample_msg), "the server's verdict");
	if (ret)
		return ret;
	if (!s->rx->ok) {
		pr_err("client: the server's verification FAILED (its checksum 0x%016llx)\n",
		       s->rx->checksum);
		ok = false;
	}
	ret = sconn_disconnect(&s->c);
	if (ret)
		return ret;
	if (!ok)
		return -EIO;
	pr_info("client: verified %lu bytes (checksum 0x%016llx, server ok)\n", size, csum);
	return 0;
}

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
MODULE_DESCRIPTION("rkdapl sample consumer: verified RDMA WRITE/READ between two hosts");

