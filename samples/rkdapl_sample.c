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

#include "../include/rkdapl.h"

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
	bool is_server;
	const char *who;
	struct rkdapl_ia *ia;
	struct rkdapl_ia_attr attr;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;
	struct rkdapl_psp *psp;
	struct rkdapl_ep *ep;
	struct rkdapl_ep_attr ep_attr;

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

	/* Event state, updated by sample_event(). */
	int err;
	bool want_cr;
	struct rkdapl_cr *cr;
	bool established, disconnected, conn_failed;
	bool expect_disc;	/* the peer may disconnect while we wait */
	u32 conn_fail_type;
	s32 conn_fail_status;
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

static const char *const event_names[] = {
	[RKDAPL_DTO_COMPLETION_EVENT] = "DTO_COMPLETION",
	[RKDAPL_RMR_BIND_COMPLETION_EVENT] = "RMR_BIND_COMPLETION",
	[RKDAPL_CONNECTION_REQUEST_EVENT] = "CONNECTION_REQUEST",
	[RKDAPL_CONNECTION_EVENT_ESTABLISHED] = "ESTABLISHED",
	[RKDAPL_CONNECTION_EVENT_PEER_REJECTED] = "PEER_REJECTED",
	[RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED] = "NON_PEER_REJECTED",
	[RKDAPL_CONNECTION_EVENT_UNREACHABLE] = "UNREACHABLE",
	[RKDAPL_CONNECTION_EVENT_TIMED_OUT] = "TIMED_OUT",
	[RKDAPL_CONNECTION_EVENT_DISCONNECTED] = "DISCONNECTED",
	[RKDAPL_CONNECTION_EVENT_BROKEN] = "BROKEN",
	[RKDAPL_ASYNC_EVD_OVERFLOW] = "EVD_OVERFLOW",
	[RKDAPL_ASYNC_IA_CATASTROPHIC] = "IA_CATASTROPHIC",
};

static const char *const status_names[] = {
	[RKDAPL_DTO_SUCCESS] = "SUCCESS",
	[RKDAPL_DTO_FLUSHED] = "FLUSHED",
	[RKDAPL_DTO_LOCAL_LENGTH_ERROR] = "LOCAL_LENGTH_ERROR",
	[RKDAPL_DTO_LOCAL_EP_ERROR] = "LOCAL_EP_ERROR",
	[RKDAPL_DTO_LOCAL_PROTECTION_ERROR] = "LOCAL_PROTECTION_ERROR",
	[RKDAPL_DTO_BAD_RESPONSE] = "BAD_RESPONSE",
	[RKDAPL_DTO_REMOTE_ACCESS_ERROR] = "REMOTE_ACCESS_ERROR",
	[RKDAPL_DTO_REMOTE_RESPONDER_ERROR] = "REMOTE_RESPONDER_ERROR",
	[RKDAPL_DTO_TRANSPORT_ERROR] = "TRANSPORT_ERROR",
	[RKDAPL_DTO_RECEIVER_NOT_READY] = "RECEIVER_NOT_READY",
	[RKDAPL_DTO_RMR_OPERATION_FAILED] = "RMR_OPERATION_FAILED",
	[RKDAPL_DTO_GENERIC_ERROR] = "GENERIC_ERROR",
};

static const char *const op_names[] = {
	[RKDAPL_DTO_SEND] = "SEND",
	[RKDAPL_DTO_RECV] = "RECV",
	[RKDAPL_DTO_RDMA_WRITE] = "RDMA_WRITE",
	[RKDAPL_DTO_RDMA_READ] = "RDMA_READ",
	[RKDAPL_DTO_RMR_BIND] = "RMR_BIND",
	[RKDAPL_DTO_RMR_UNBIND] = "RMR_UNBIND",
};

#define NAME(tab, i) ((i) < ARRAY_SIZE(tab) && (tab)[i] ? (tab)[i] : "?")

/* Runs one rkdapl call; on failure prints the call as written and its errno. */
#define CHECK(s, call)								\
({										\
	int __r = (call);							\
	if (__r)								\
		pr_err("%s: %s failed: %d\n", (s)->who, #call, __r);		\
	__r;									\
})

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

/* ---- events ------------------------------------------------------------------------- */

static void sample_fail(struct sample *s, int err)
{
	if (!s->err)
		s->err = err;
}

static void sample_dto_event(struct sample *s, const struct rkdapl_event *ev)
{
	u32 kind = COOKIE_KIND(ev->cookie), idx = COOKIE_IDX(ev->cookie);
	bool sq = ev->op != RKDAPL_DTO_RECV;
	bool ok = ev->status == RKDAPL_DTO_SUCCESS;
	u32 want_kind;

	if (ev->ep != s->ep) {
		pr_warn("%s: %s completion (cookie %#llx) of another EP %p, ignored\n", s->who,
			NAME(op_names, ev->op), ev->cookie, ev->ep);
		return;
	}
	if (sq && s->sq_inflight)
		s->sq_inflight--;
	if (!ok) {
		pr_err("%s: %s (cookie %#llx) completed with status %d (%s)\n", s->who,
		       NAME(op_names, ev->op), ev->cookie, ev->status,
		       NAME(status_names, (u32)ev->status));
		sample_fail(s, -EIO);
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
		pr_err("%s: unexpected completion op %u (cookie %#llx)\n", s->who, ev->op,
		       ev->cookie);
		sample_fail(s, -EPROTO);
		return;
	}
	if (kind != want_kind ||
	    (ev->type == RKDAPL_RMR_BIND_COMPLETION_EVENT) != (want_kind == K_BIND)) {
		pr_err("%s: %s event with op %s carries cookie %#llx of another operation\n",
		       s->who, NAME(event_names, ev->type), NAME(op_names, ev->op), ev->cookie);
		sample_fail(s, -EPROTO);
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
	pr_err("%s: %s completion with unexpected cookie %#llx\n", s->who,
	       NAME(op_names, ev->op), ev->cookie);
	sample_fail(s, -EPROTO);
}

static void sample_cr_event(struct sample *s, const struct rkdapl_event *ev)
{
	size_t plen = strlen(SAMPLE_PRIVATE);
	const char *why = NULL;

	if (!s->is_server)
		why = "not a server";
	else if (!s->want_cr || s->cr)
		why = "already serving a client";
	else if (ev->private_data_len < plen || memcmp(ev->private_data, SAMPLE_PRIVATE, plen))
		why = "private data is not \"" SAMPLE_PRIVATE "\"";
	if (!why) {
		s->cr = ev->cr;
		return;
	}
	pr_warn("%s: rejecting a connection request: %s\n", s->who, why);
	CHECK(s, rkdapl_cr_reject(ev->cr, NULL, 0));
}

static void sample_event(struct sample *s, const struct rkdapl_event *ev)
{
	bool mine = ev->ep && ev->ep == s->ep;

	switch (ev->type) {
	case RKDAPL_DTO_COMPLETION_EVENT:
	case RKDAPL_RMR_BIND_COMPLETION_EVENT:
		sample_dto_event(s, ev);
		return;
	case RKDAPL_CONNECTION_REQUEST_EVENT:
		sample_cr_event(s, ev);
		return;
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
	case RKDAPL_CONNECTION_EVENT_PEER_REJECTED:
	case RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED:
	case RKDAPL_CONNECTION_EVENT_UNREACHABLE:
	case RKDAPL_CONNECTION_EVENT_TIMED_OUT:
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		if (!mine) {
			pr_info("%s: %s event (status %d) of an earlier EP, ignored\n", s->who,
				NAME(event_names, ev->type), ev->status);
			return;
		}
		break;
	case RKDAPL_ASYNC_EVD_OVERFLOW:
		pr_err("%s: EVD overflow, %llu events lost\n", s->who, ev->transferred_length);
		sample_fail(s, -EOVERFLOW);
		return;
	case RKDAPL_ASYNC_IA_CATASTROPHIC:
		pr_err("%s: IA catastrophic error (status %d)\n", s->who, ev->status);
		sample_fail(s, -EIO);
		return;
	default:
		pr_err("%s: unknown event type %u (status %d)\n", s->who, ev->type, ev->status);
		sample_fail(s, -EPROTO);
		return;
	}

	switch (ev->type) {
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
		if (ev->status)
			pr_warn("%s: ESTABLISHED with status %d\n", s->who, ev->status);
		if (s->established || s->disconnected) {
			pr_err("%s: unexpected ESTABLISHED event\n", s->who);
			sample_fail(s, -EPROTO);
		}
		s->established = true;
		break;
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
		if (ev->status)
			pr_warn("%s: DISCONNECTED with status %d\n", s->who, ev->status);
		s->disconnected = true;
		break;
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		pr_err("%s: connection BROKEN (status %d)\n", s->who, ev->status);
		s->disconnected = true;
		sample_fail(s, -ECONNRESET);
		break;
	default:	/* the connect failed */
		if (s->established) {
			pr_err("%s: %s event (status %d) on an established EP\n", s->who,
			       NAME(event_names, ev->type), ev->status);
			sample_fail(s, -EPROTO);
		}
		s->conn_failed = true;
		s->conn_fail_type = ev->type;
		s->conn_fail_status = ev->status;
		break;
	}
}

/* Waits (at most until deadline) for one event and handles it. */
static int sample_step(struct sample *s, unsigned long deadline, const char *what)
{
	struct rkdapl_event ev;
	long left = (long)(deadline - jiffies);
	int ret;

	if (left <= 0) {
		pr_err("%s: timed out after %u ms waiting for %s\n", s->who, timeout_ms, what);
		return -ETIMEDOUT;
	}
	memset(&ev, 0, sizeof(ev));
	ret = rkdapl_evd_wait(s->evd, max(jiffies_to_msecs(left), 1u), &ev);
	if (ret == -ETIMEDOUT) {
		pr_err("%s: timed out after %u ms waiting for %s\n", s->who, timeout_ms, what);
		return ret;
	}
	if (ret) {
		pr_err("%s: rkdapl_evd_wait() failed: %d (waiting for %s)\n", s->who, ret, what);
		return ret;
	}
	sample_event(s, &ev);
	return 0;
}

/*
 * Handles events until cond holds (0), an event failed (its errno), the connection ended
 * while cond does not hold yet (-ECONNRESET) or timeout_ms passed (-ETIMEDOUT).
 */
#define sample_wait_for(s, cond, what)						\
({										\
	unsigned long __dl = jiffies + msecs_to_jiffies(timeout_ms);		\
	int __ret;								\
	for (;;) {								\
		__ret = (s)->err;						\
		if (__ret) {							\
			pr_err("%s: failed while waiting for %s: %d\n",	\
			       (s)->who, (what), __ret);			\
			break;							\
		}								\
		if (cond)							\
			break;							\
		if ((s)->disconnected && !(s)->expect_disc) {			\
			pr_err("%s: disconnected while waiting for %s\n",	\
			       (s)->who, (what));				\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		__ret = sample_step((s), __dl, (what));				\
		if (__ret)							\
			break;							\
	}									\
	__ret;									\
})

/*
 * Discards whatever is queued on the EVD after an EP was freed: its flushed DTOs and late
 * connection events. Connection requests are rejected.
 */
static void sample_drain(struct sample *s)
{
	struct rkdapl_event ev;
	u32 flushed = 0;

	while (!rkdapl_evd_dequeue(s->evd, &ev)) {
		if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT) {
			pr_info("%s: rejecting a late connection request\n", s->who);
			CHECK(s, rkdapl_cr_reject(ev.cr, NULL, 0));
		} else if ((ev.type == RKDAPL_DTO_COMPLETION_EVENT ||
			    ev.type == RKDAPL_RMR_BIND_COMPLETION_EVENT) &&
			   ev.status == RKDAPL_DTO_FLUSHED) {
			flushed++;
		} else {
			pr_info("%s: discarding a late %s event (op %s, status %d)\n", s->who,
				NAME(event_names, ev.type), NAME(op_names, ev.op), ev.status);
		}
	}
	if (flushed)
		pr_info("%s: %u DTO(s) were flushed\n", s->who, flushed);
}

/* ---- messages ----------------------------------------------------------------------- */

static int sample_post_recv(struct sample *s)
{
	struct rkdapl_lmr_triplet iov = { .lmr = s->rx_lmr, .offset = 0,
					  .length = SAMPLE_MSG_BUF };
	int ret;

	memset(s->rx, 0, SAMPLE_MSG_BUF);
	ret = CHECK(s, rkdapl_post_recv(s->ep, &iov, 1, COOKIE(K_RECV, s->recvs_posted), 0));
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
		ret = CHECK(s, rkdapl_post_send_with_invalidate(s->ep, &iov, 1, inv_rkey, cookie,
								 0));
	else
		ret = CHECK(s, rkdapl_post_send(s->ep, &iov, 1, cookie, 0));
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

/* Sends the first len bytes of s->tx and waits for the completion. */
static int sample_send(struct sample *s, u32 len, const char *what)
{
	int ret = sample_post_send(s, len);

	if (ret)
		return ret;
	return sample_wait_for(s, s->sends_done == s->sends_posted, what);
}

/* Waits for the next RECV and checks its magic and minimum length. */
static int sample_recv(struct sample *s, u32 magic, u64 min_len, const char *what)
{
	int ret = sample_wait_for(s, s->recvs_done == s->recvs_posted, what);

	if (ret)
		return ret;
	if (s->rx_len < min_len || s->rx_len > SAMPLE_MSG_BUF || s->rx->magic != magic) {
		pr_err("%s: bad %s: %llu bytes, magic %#x (want >= %llu bytes, magic %#x)\n",
		       s->who, what, s->rx_len, s->rx->magic, min_len, magic);
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
		pr_err("%s: out of memory for %u completion flags\n", s->who, n);
		return -ENOMEM;
	}
	return 0;
}

/* Before a send-queue post: waits until fewer than window DTOs are outstanding. */
static int sample_sq_room(struct sample *s, u32 window, const char *what)
{
	return sample_wait_for(s, s->sq_inflight < window, what);
}

/* ---- set-up and tear-down ----------------------------------------------------------- */

static int sample_open(struct sample *s)
{
	int ret;

	ret = CHECK(s, rkdapl_ia_open(dev, &s->ia));
	if (ret)
		return ret;
	ret = CHECK(s, rkdapl_ia_query(s->ia, &s->attr));
	if (ret)
		return ret;
	pr_info("%s: IA %s: max_iov %u, max_dtos %u, max_rmr_pages %u, max_evd_qlen %u\n",
		s->who, s->attr.name, s->attr.max_iov, s->attr.max_dtos, s->attr.max_rmr_pages,
		s->attr.max_evd_qlen);
	if (!s->attr.max_iov || !s->attr.max_rmr_pages) {
		pr_err("%s: device reports max_iov %u, max_rmr_pages %u\n", s->who,
		       s->attr.max_iov, s->attr.max_rmr_pages);
		return -EINVAL;
	}
	ret = CHECK(s, rkdapl_pz_create(s->ia, &s->pz));
	if (ret)
		return ret;
	ret = CHECK(s, rkdapl_evd_create(s->ia, min(256u, s->attr.max_evd_qlen ?: 256u),
					 &s->evd));
	if (ret)
		return ret;

	s->ep_attr.max_request_dtos = 64;
	s->ep_attr.max_recv_dtos = 4;
	s->ep_attr.max_rdma_read_in = 16;
	s->ep_attr.max_rdma_read_out = 16;

	s->tx = kzalloc(SAMPLE_MSG_BUF, GFP_KERNEL);
	s->rx = kzalloc(SAMPLE_MSG_BUF, GFP_KERNEL);
	if (!s->tx || !s->rx) {
		pr_err("%s: out of memory for message buffers\n", s->who);
		return -ENOMEM;
	}
	ret = CHECK(s, rkdapl_lmr_create(s->pz, s->tx, SAMPLE_MSG_BUF, RKDAPL_MEM_LOCAL_WRITE,
					 &s->tx_lmr));
	if (ret)
		return ret;
	return CHECK(s, rkdapl_lmr_create(s->pz, s->rx, SAMPLE_MSG_BUF, RKDAPL_MEM_LOCAL_WRITE,
					  &s->rx_lmr));
}

/* Frees an LMR, then its buffer; a buffer whose LMR could not be freed is leaked. */
static int sample_free_lmr(struct sample *s, struct rkdapl_lmr **lmr, void **buf, bool vm,
			   const char *name)
{
	int ret = 0;

	if (*lmr) {
		ret = rkdapl_lmr_free(*lmr);
		if (ret) {
			pr_err("%s: rkdapl_lmr_free(%s) failed: %d; leaking its buffer\n", s->who,
			       name, ret);
			*buf = NULL;
		}
		*lmr = NULL;
	}
	if (vm)
		vfree(*buf);
	else
		kfree(*buf);
	*buf = NULL;
	return ret;
}

/* Frees everything in reverse order; returns the first error. */
static int sample_close(struct sample *s)
{
	int ret = 0, r;
	u32 i;

#define KEEP(x) do { r = (x); if (r && !ret) ret = r; } while (0)
	if (s->ep) {
		KEEP(CHECK(s, rkdapl_ep_free(s->ep)));
		s->ep = NULL;
	}
	if (s->evd)
		sample_drain(s);
	for (i = 0; i < s->nrmr; i++)
		KEEP(CHECK(s, rkdapl_rmr_free(s->rmrs[i])));
	s->nrmr = 0;
	kfree(s->rmrs);
	s->rmrs = NULL;
	for (i = 0; i < s->nseg_lmr; i++)
		KEEP(CHECK(s, rkdapl_lmr_free(s->seg_lmrs[i])));
	s->nseg_lmr = 0;
	kfree(s->seg_lmrs);
	s->seg_lmrs = NULL;
	if (s->cr) {	/* received but never accepted */
		KEEP(CHECK(s, rkdapl_cr_reject(s->cr, NULL, 0)));
		s->cr = NULL;
	}
	if (s->psp) {
		KEEP(CHECK(s, rkdapl_psp_free(s->psp)));
		s->psp = NULL;
	}
	KEEP(sample_free_lmr(s, &s->readback_lmr, (void **)&s->readback, true, "readback"));
	KEEP(sample_free_lmr(s, &s->payload_lmr, (void **)&s->payload, true, "payload"));
	KEEP(sample_free_lmr(s, &s->rx_lmr, (void **)&s->rx, false, "rx message"));
	KEEP(sample_free_lmr(s, &s->tx_lmr, (void **)&s->tx, false, "tx message"));
	if (s->evd) {
		KEEP(CHECK(s, rkdapl_evd_free(s->evd)));
		s->evd = NULL;
	}
	if (s->pz) {
		KEEP(CHECK(s, rkdapl_pz_free(s->pz)));
		s->pz = NULL;
	}
	if (s->ia) {
		KEEP(CHECK(s, rkdapl_ia_close(s->ia)));
		s->ia = NULL;
	}
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
	u64 seg = min_t(u64, SAMPLE_MAX_SEG, (u64)s->attr.max_rmr_pages * PAGE_SIZE);
	u32 window = s->ep_attr.max_request_dtos, i;
	int ret;

	s->nseg = DIV_ROUND_UP_ULL(n, seg);
	if (s->nseg > SAMPLE_MAX_SEGS) {
		pr_err("%s: %llu bytes need %u segments of %llu bytes, the message holds %zu\n",
		       s->who, n, s->nseg, seg, SAMPLE_MAX_SEGS);
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
		ret = CHECK(s, rkdapl_rmr_create(s->pz, &s->rmrs[i]));
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

			ret = CHECK(s, rkdapl_lmr_create(s->pz, s->payload + off, min(seg, n - off),
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
					      s->ep, COOKIE(K_BIND, i), &s->segs[i].rkey,
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
			       s->who, i, len, off, ret);
			return ret;
		}
		s->sq_inflight++;
		s->segs[i].len = len;
	}
	ret = sample_wait_for(s, s->binds_done == s->nseg, "RMR bind completions");
	if (ret)
		return ret;
	pr_info("%s: granted %llu bytes as %u RMR segment(s) of up to %llu bytes%s\n", s->who,
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
		pr_err("%s: vzalloc(%lu) failed\n", s->who, size);
		return -ENOMEM;
	}
	ret = CHECK(s, rkdapl_lmr_create(s->pz, s->payload, size,
					 RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
					 RKDAPL_MEM_REMOTE_WRITE, &s->payload_lmr));
	if (ret)
		return ret;
	ret = CHECK(s, rkdapl_psp_create(s->ia, port, 4, s->evd, &s->psp));
	if (ret)
		return ret;
	pr_info("server: listening on %s port %u (payload %lu bytes)\n", dev, port, size);

	s->want_cr = true;
	ret = sample_wait_for(s, s->cr, "a connection request");
	if (ret)
		return ret;
	s->want_cr = false;
	ret = CHECK(s, rkdapl_ep_create(s->pz, s->evd, s->evd, &s->ep_attr, &s->ep));
	if (ret)
		return ret;
	ret = rkdapl_cr_accept(s->cr, s->ep, NULL, 0);
	if (ret) {
		pr_err("server: rkdapl_cr_accept() failed: %d\n", ret);
		/* -EINVAL/-EISCONN/-EXDEV leave the CR pending: sample_close() rejects it */
		if (ret != -EINVAL && ret != -EISCONN && ret != -EXDEV)
			s->cr = NULL;
		return ret;
	}
	s->cr = NULL;
	ret = sample_post_recv(s);
	if (ret)
		return ret;
	ret = sample_wait_for(s, s->established, "ESTABLISHED");
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

	ret = sample_post_recv(s);
	if (ret)
		return ret;
	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = MSG_ADVERT;
	s->tx->nseg = s->nseg;
	s->tx->size = n;
	memcpy(s->tx->seg, s->segs, s->nseg * sizeof(*s->segs));
	ret = sample_send(s, struct_size(s->tx, seg, s->nseg), "the advertisement's SEND");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_DONE, sizeof(struct sample_msg), "the client's done message");
	if (ret)
		return ret;

	ret = CHECK(s, rkdapl_lmr_sync_rdma_write(s->payload_lmr, 0, n));
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
	s->expect_disc = true;
	ret = sample_post_send(s, sizeof(struct sample_msg));
	if (ret)
		return ret;
	ret = sample_wait_for(s, s->sends_done == s->sends_posted && s->disconnected,
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

static bool client_retryable_event(u32 type)
{
	return type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED ||
	       type == RKDAPL_CONNECTION_EVENT_UNREACHABLE ||
	       type == RKDAPL_CONNECTION_EVENT_TIMED_OUT;
}

static int client_connect(struct sample *s, const struct sockaddr_in *sin)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	u32 attempt;
	int ret;

	for (attempt = 1;; attempt++) {
		s->established = s->disconnected = s->conn_failed = false;
		ret = CHECK(s, rkdapl_ep_create(s->pz, s->evd, s->evd, &s->ep_attr, &s->ep));
		if (ret)
			return ret;
		ret = rkdapl_ep_connect(s->ep, (const struct sockaddr *)sin,
					min(timeout_ms, 5000u) ?: 1, SAMPLE_PRIVATE,
					strlen(SAMPLE_PRIVATE));
		if (!ret) {
			ret = sample_wait_for(s, s->established || s->conn_failed,
					      "the connection's outcome");
			if (ret)
				return ret;
			if (s->established) {
				pr_info("client: connected to %pI4:%u (attempt %u)\n",
					&sin->sin_addr, port, attempt);
				return 0;
			}
			if (!client_retryable_event(s->conn_fail_type)) {
				pr_err("client: connect to %pI4:%u: %s (status %d)\n",
				       &sin->sin_addr, port,
				       NAME(event_names, s->conn_fail_type), s->conn_fail_status);
				return -ECONNREFUSED;
			}
			if (attempt == 1 || !(attempt % 20))
				pr_info("client: connect attempt %u: %s (status %d), retrying\n",
					attempt, NAME(event_names, s->conn_fail_type),
					s->conn_fail_status);
		} else if (ret == -ENETUNREACH || ret == -EHOSTUNREACH || ret == -ETIMEDOUT ||
			   ret == -ECONNREFUSED) {
			if (attempt == 1 || !(attempt % 20))
				pr_info("client: connect attempt %u: rkdapl_ep_connect() %d, retrying\n",
					attempt, ret);
		} else {
			pr_err("client: rkdapl_ep_connect(%pI4:%u) failed: %d\n", &sin->sin_addr,
			       port, ret);
			return ret;
		}
		ret = CHECK(s, rkdapl_ep_free(s->ep));
		s->ep = NULL;
		if (ret)
			return ret;
		sample_drain(s);
		if (time_after(jiffies + msecs_to_jiffies(500), deadline)) {
			pr_err("client: no connection to %pI4:%u after %u attempts in %u ms\n",
			       &sin->sin_addr, port, attempt, timeout_ms);
			return -ETIMEDOUT;
		}
		msleep(500);
	}
}

/* RDMA WRITEs (or READs) all of lmr into the advertised segments; returns the time taken. */
static int client_rdma(struct sample *s, bool write, struct rkdapl_lmr *lmr, u64 total,
		       u64 *ns)
{
	const char *what = write ? "RDMA WRITE completions" : "RDMA READ completions";
	u64 chunk = min_t(u64, SAMPLE_MAX_DTO, 8ULL * s->attr.max_iov * PAGE_SIZE);
	u32 window = inflight ? min(inflight, s->ep_attr.max_request_dtos) :
				s->ep_attr.max_request_dtos;
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
					ret = rkdapl_post_rdma_write(s->ep, &iov, 1, &rem,
								     COOKIE(K_WRITE, idx), 0);
				else
					ret = rkdapl_post_rdma_read(s->ep, &iov, 1, &rem,
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
	ret = sample_wait_for(s, s->rdma_done == nchunks, what);
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
	ret = CHECK(s, rkdapl_lmr_create(s->pz, s->payload, size, RKDAPL_MEM_LOCAL_WRITE,
					 &s->payload_lmr));
	if (ret)
		return ret;
	ret = CHECK(s, rkdapl_lmr_create(s->pz, s->readback, size, RKDAPL_MEM_LOCAL_WRITE,
					 &s->readback_lmr));
	if (ret)
		return ret;
	ret = CHECK(s, rkdapl_lmr_sync_rdma_read(s->payload_lmr, 0, size));
	if (ret)
		return ret;

	ret = client_connect(s, &sin);
	if (ret)
		return ret;
	ret = sample_post_recv(s);
	if (ret)
		return ret;
	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = MSG_REQUEST;
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
	ret = CHECK(s, rkdapl_lmr_sync_rdma_write(s->readback_lmr, 0, size));
	if (ret)
		return ret;
	ok = !memcmp(s->readback, s->payload, size) && checksum(s->readback, size) == csum;
	if (!ok)
		pr_err("client: the data read back differs from what was written\n");

	ret = sample_post_recv(s);
	if (ret)
		return ret;
	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = MSG_DONE;
	s->tx->ok = ok;
	s->tx->size = size;
	s->tx->checksum = csum;
	/* the done message also ends the grant of segment 0: the server need not unbind it */
	ret = sample_post_send_inv(s, sizeof(struct sample_msg), s->segs[0].rkey);
	ret = ret ?: sample_wait_for(s, s->sends_done == s->sends_posted,
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
	ret = CHECK(s, rkdapl_ep_disconnect(s->ep));
	if (ret)
		return ret;
	ret = sample_wait_for(s, s->disconnected, "DISCONNECTED");
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
	if (!timeout_ms || !port) {
		pr_err("timeout_ms and port must not be 0\n");
		return -EINVAL;
	}
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	if (!strcmp(role, "server")) {
		s->is_server = true;
		s->who = "server";
		ret = server_run(s);
	} else if (!strcmp(role, "client")) {
		s->who = "client";
		ret = client_run(s);
	} else {
		pr_err("role=%s: must be server or client\n", role);
		kfree(s);
		return -EINVAL;
	}
	ret2 = sample_close(s);
	if (!ret && ret2)
		ret = ret2;
	if (ret)
		pr_err("%s: FAILED: %d\n", s->who, ret);
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
