// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test: kselftest-style TAP tests of rkdapl's C API (include/rkdapl.h only).
 *
 *   insmod rkdapl_test.ko role=badarg   [dev=rxe0] [peer=<own IPv4>] [port=7480]
 *   insmod rkdapl_test.ko role=loopback peer=<own IPv4> [port=7480]
 *   insmod rkdapl_test.ko role=server   [port=7480] [listen_ms=300000]
 *   insmod rkdapl_test.ko role=client   peer=<server IPv4> [port=7480] [connect_ms=120000]
 *   insmod rkdapl_test.ko role=none     (runs nothing; only holds a reference on rkdapl)
 *
 * Everything runs in module_init, which prints one line per test,
 *   rkdapl_test: ok N - <name>
 *   rkdapl_test: not ok N - <name> # <reason>
 * then "rkdapl_test: 1..N" and "rkdapl_test: # done P passed F failed", and returns 0 if every
 * test passed, -EIO otherwise (so a failed run also unloads the module again).
 *
 * badarg:   at least one bad-argument test per exported function (NULL handles and
 *           out-pointers, foreign objects, handles of another kind, double frees, bad lengths,
 *           privileges, flags and states), each checked against the errno the header
 *           documents. With peer= (the guest's own address), the state-dependent errors are
 *           also checked on real loopback connections (connected EPs, CRs, RMR grants, remote
 *           access errors, disconnect). Ends with a check that the provider still works.
 * server:   listens on port, serves one client (below), then tears down.
 * client:   connects to peer:port and runs the data tests: SEND, RDMA WRITE and RDMA READ of
 *           0, 1, 1023, 1024, 1025, 4096 and 1048576 bytes, every byte verified against a
 *           pattern seeded per test, with guard bytes after the transfer.
 * loopback: server in a kthread, client in module_init, over the guest's own address.
 *
 * The client drives the server with a small message protocol over SEND/RECV (struct tmsg):
 * the server keeps a RECV posted for commands, grants its buffer once with rkdapl_rmr_bind()
 * (HELLO), and prepares/verifies its side of each data test on request.
 */
#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/mm.h>
#include <linux/kthread.h>
#include <linux/sched/signal.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/jiffies.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/un.h>
#include <linux/string.h>
#include <linux/netdevice.h>
#include <linux/inetdevice.h>
#include <linux/log2.h>
#include <linux/preempt.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include "../../include/rkdapl.h"

static char *role = "badarg";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server | client | loopback | badarg (default) | none (load only)");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "IPv4 address: the server (client), own address (loopback, badarg)");
static ushort port = 7480;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7480; badarg also uses port+1 and port+2)");
static uint timeout_ms = 30000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one event (default 30000)");
static uint listen_ms = 300000;
module_param(listen_ms, uint, 0444);
MODULE_PARM_DESC(listen_ms, "server: how long to wait for the client (default 300000)");
static uint connect_ms = 120000;
module_param(connect_ms, uint, 0444);
MODULE_PARM_DESC(connect_ms, "client: how long to retry connecting (default 120000)");

#define WHY 200
#define GUARD 64
#define BIGBUF (1024 * 1024)
#define STASH 64
#define SLOT 256

static const u64 sizes[] = { 0, 1, 1023, 1024, 1025, 4096, BIGBUF };

/* ------------------------------------------------------------------------------------------ */
/* TAP */

static DEFINE_MUTEX(tap_lock);
static int tap_num, tap_passed, tap_failed;

static __printf(3, 4) bool tap(bool ok, const char *name, const char *fmt, ...)
{
	char why[WHY] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	mutex_lock(&tap_lock);
	tap_num++;
	if (ok) {
		tap_passed++;
		pr_info("rkdapl_test: ok %d - %s\n", tap_num, name);
	} else {
		tap_failed++;
		pr_info("rkdapl_test: not ok %d - %s # %s\n", tap_num, name, why[0] ? why : "failed");
	}
	mutex_unlock(&tap_lock);
	return ok;
}

static void tap_skip(const char *name, const char *reason)
{
	mutex_lock(&tap_lock);
	tap_num++;
	tap_passed++;
	pr_info("rkdapl_test: ok %d - %s # SKIP %s\n", tap_num, name, reason);
	mutex_unlock(&tap_lock);
}

static const char *ename(int e)
{
	switch (e) {
	case 0: return "0";
	case -EINVAL: return "-EINVAL";
	case -ENODEV: return "-ENODEV";
	case -ENOMEM: return "-ENOMEM";
	case -EFAULT: return "-EFAULT";
	case -ERANGE: return "-ERANGE";
	case -EACCES: return "-EACCES";
	case -EXDEV: return "-EXDEV";
	case -EBUSY: return "-EBUSY";
	case -E2BIG: return "-E2BIG";
	case -ENOTCONN: return "-ENOTCONN";
	case -EISCONN: return "-EISCONN";
	case -ENOSPC: return "-ENOSPC";
	case -EAGAIN: return "-EAGAIN";
	case -ETIMEDOUT: return "-ETIMEDOUT";
	case -EINTR: return "-EINTR";
	case -EAFNOSUPPORT: return "-EAFNOSUPPORT";
	case -EADDRINUSE: return "-EADDRINUSE";
	case -EADDRNOTAVAIL: return "-EADDRNOTAVAIL";
	case -ENETUNREACH: return "-ENETUNREACH";
	case -EMSGSIZE: return "-EMSGSIZE";
	case -EIO: return "-EIO";
	case -EPROTO: return "-EPROTO";
	case -EOVERFLOW: return "-EOVERFLOW";
	}
	return "?";
}

/* One call's return value against the errno the header documents. */
static bool expect(int got, int want, const char *what)
{
	char name[160];

	snprintf(name, sizeof(name), "%s -> %s", what, ename(want));
	return tap(got == want, name, "returned %d (%s)", got, ename(got));
}

static const char *evname(u32 t)
{
	static const char *const n[] = {
		"?", "DTO_COMPLETION", "RMR_BIND_COMPLETION", "CONNECTION_REQUEST", "ESTABLISHED",
		"PEER_REJECTED", "NON_PEER_REJECTED", "UNREACHABLE", "TIMED_OUT", "DISCONNECTED",
		"BROKEN", "EVD_OVERFLOW", "IA_CATASTROPHIC",
	};
	return t < ARRAY_SIZE(n) ? n[t] : "?";
}

static const char *stname(s32 s)
{
	static const char *const n[] = {
		"SUCCESS", "FLUSHED", "LOCAL_LENGTH_ERROR", "LOCAL_EP_ERROR",
		"LOCAL_PROTECTION_ERROR", "BAD_RESPONSE", "REMOTE_ACCESS_ERROR",
		"REMOTE_RESPONDER_ERROR", "TRANSPORT_ERROR", "RECEIVER_NOT_READY",
		"RMR_OPERATION_FAILED", "GENERIC_ERROR",
	};
	return s >= 0 && s < ARRAY_SIZE(n) ? n[s] : "?";
}

static const char *opname(u32 op)
{
	static const char *const n[] = {
		"?", "SEND", "RECV", "RDMA_WRITE", "RDMA_READ", "RMR_BIND", "RMR_UNBIND",
		"RDMA_WRITE_IMM", "SEND_INVALIDATE",
	};
	return op < ARRAY_SIZE(n) ? n[op] : "?";
}

/* ------------------------------------------------------------------------------------------ */
/* Test patterns: a byte stream per 32-bit seed; position i of the stream is byte i. */

static inline u32 mix32(u32 x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	x ^= x >> 16;
	return x;
}

static inline u32 pat_word(u32 seed, u64 i)
{
	return mix32(seed * 0x9e3779b1u + (u32)(i >> 2) + (u32)(i >> 34) * 0x85ebca77u);
}

static void pat_fill(void *buf, u64 off, u64 len, u32 seed)
{
	u8 *p = buf;
	u64 i, end = off + len;
	u32 w = pat_word(seed, off);

	for (i = off; i < end; i++) {
		if ((i & 3) == 0)
			w = pat_word(seed, i);
		p[i] = w >> ((i & 3) * 8);
	}
}

/* First offset in [off, off + len) that differs from the pattern, or -1. */
static s64 pat_check(const void *buf, u64 off, u64 len, u32 seed)
{
	const u8 *p = buf;
	u64 i, end = off + len;
	u32 w = pat_word(seed, off);

	for (i = off; i < end; i++) {
		if ((i & 3) == 0)
			w = pat_word(seed, i);
		if (p[i] != (u8)(w >> ((i & 3) * 8)))
			return i;
	}
	return -1;
}

static u32 poison_seed(u32 seed)
{
	return ~seed ^ 0x5a5a0000;
}

/* ------------------------------------------------------------------------------------------ */
/* One side of a connection, and waiting for its events */

struct side {
	const char *who;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *dto_evd, *conn_evd, *psp_evd;
	struct rkdapl_psp *psp;
	struct rkdapl_ep *ep;
	struct rkdapl_ia_attr attr;
	bool dead;		/* connection lost: the remaining tests fail at once */
	/*
	 * The SEND in flight is the last message: the peer disconnects as soon as it has it,
	 * which may flush the SEND before its ACK is processed. FLUSHED then counts as sent.
	 */
	bool last_send;
	u64 cookie;
	u32 seq;
	/* messages: slot 0 sends, slot 1 receives */
	u8 *msg;
	struct rkdapl_lmr *msg_lmr;
	u64 rx_cookie;
	/* SEND data (client: source, kmalloc; server: RECV target, kmalloc) */
	u8 *dbuf;
	u64 dlen;
	struct rkdapl_lmr *d_lmr;
	/* RDMA (client: local buffer; server: the granted buffer) */
	u8 *rbuf;
	u64 rlen;
	bool rbuf_vmalloc;
	struct rkdapl_lmr *r_lmr;
	struct rkdapl_rmr *rmr;
	/* client: the server's grant */
	u32 rkey;
	u64 raddr, rgranted;
	int nstash;
	struct rkdapl_event stash[STASH];
	struct rkdapl_event last;	/* the last event dto_expect() accepted */
};

static u64 next_cookie(struct side *s)
{
	static atomic64_t c = ATOMIC64_INIT(0x1000);

	return s->cookie = atomic64_inc_return(&c);
}

/* Waits at most @ms for an event on @evd. */
static int ev_wait(struct rkdapl_evd *evd, u32 ms, struct rkdapl_event *ev)
{
	return rkdapl_evd_wait(evd, ms ? ms : 1, ev);
}

/* Waits for the event carrying @cookie on the DTO EVD; other events are kept for later. */
static int wait_cookie(struct side *s, u64 cookie, struct rkdapl_event *ev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	long left;
	int i, r;

	for (i = 0; i < s->nstash; i++) {
		if (s->stash[i].cookie == cookie) {
			*ev = s->stash[i];
			s->stash[i] = s->stash[--s->nstash];
			return 0;
		}
	}
	for (;;) {
		left = (long)(deadline - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		r = ev_wait(s->dto_evd, jiffies_to_msecs(left), ev);
		if (r)
			return r;
		if (ev->type == RKDAPL_ASYNC_EVD_OVERFLOW)
			return -EOVERFLOW;
		if (ev->cookie == cookie && (ev->type == RKDAPL_DTO_COMPLETION_EVENT ||
					     ev->type == RKDAPL_RMR_BIND_COMPLETION_EVENT))
			return 0;
		if (s->nstash == STASH)
			return -ENOSPC;
		s->stash[s->nstash++] = *ev;
	}
}

/* Waits for the completion of @cookie and checks it: type, op, status, EP, length (>= 0). */
static int dto_expect(struct side *s, u64 cookie, u32 op, s64 len, char *why)
{
	bool bind = op == RKDAPL_DTO_RMR_BIND || op == RKDAPL_DTO_RMR_UNBIND;
	struct rkdapl_event ev = {};
	int r = wait_cookie(s, cookie, &ev);

	if (r) {
		snprintf(why, WHY, "%s: no %s completion (cookie %llu): %d %s", s->who, opname(op),
			 cookie, r, ename(r));
		s->dead = true;
		return r;
	}
	if (ev.status == RKDAPL_DTO_FLUSHED && op == RKDAPL_DTO_SEND && s->last_send)
		return 0;
	if (ev.status != RKDAPL_DTO_SUCCESS) {
		snprintf(why, WHY, "%s: %s completed with status %d (%s)", s->who, opname(op),
			 ev.status, stname(ev.status));
		s->dead = true;
		return -EIO;
	}
	if (ev.type != (bind ? RKDAPL_RMR_BIND_COMPLETION_EVENT : RKDAPL_DTO_COMPLETION_EVENT) ||
	    ev.op != op) {
		snprintf(why, WHY, "%s: %s completion is event %u (%s) op %u (%s)", s->who,
			 opname(op), ev.type, evname(ev.type), ev.op, opname(ev.op));
		return -EPROTO;
	}
	if (!bind && ev.ep != s->ep) {
		snprintf(why, WHY, "%s: %s completion names EP %p, not %p", s->who, opname(op),
			 ev.ep, s->ep);
		return -EPROTO;
	}
	if (len >= 0 && ev.transferred_length != (u64)len) {
		snprintf(why, WHY, "%s: %s transferred_length %llu, expected %lld", s->who,
			 opname(op), ev.transferred_length, len);
		return -EPROTO;
	}
	s->last = ev;
	return 0;
}

/*
 * Waits for a connection event of @type for @ep on @evd (events of other EPs, e.g. freed ones,
 * are skipped). Returns 0, -EPROTO with the event in @ev if another event came, or an error.
 */
static int conn_expect(struct rkdapl_evd *evd, struct rkdapl_ep *ep, u32 type, u32 ms,
		       struct rkdapl_event *ev)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(ms);
	long left;
	int r;

	for (;;) {
		left = (long)(deadline - jiffies);
		r = left > 0 ? ev_wait(evd, jiffies_to_msecs(left), ev) : -ETIMEDOUT;
		if (r) {
			memset(ev, 0, sizeof(*ev));	/* no stale event in the diagnostics */
			return r;
		}
		if (ep && ev->ep != ep && ev->type != RKDAPL_CONNECTION_REQUEST_EVENT)
			continue;
		return ev->type == type ? 0 : -EPROTO;
	}
}

static void evd_drain(struct rkdapl_evd *evd)
{
	struct rkdapl_event ev = {};

	while (evd && rkdapl_evd_dequeue(evd, &ev) == 0)
		;
}

/* ------------------------------------------------------------------------------------------ */
/* The message protocol */

#define TMSG_MAGIC 0x544b4452	/* "RDKT" */
#define CLIENT_PDATA "rkdapl_test client hello"
#define SERVER_PDATA "rkdapl_test server accept"

enum tcmd {
	CMD_HELLO = 1,		/* server -> client: the grant (rkey, addr, len) */
	CMD_SEND_PREP,		/* post a RECV for a SEND of len bytes, then RESULT after it */
	CMD_WRITE_PREP,		/* poison the granted buffer before an RDMA WRITE */
	CMD_CHECK,		/* verify the granted buffer after an RDMA WRITE */
	CMD_READ_PREP,		/* fill the granted buffer before an RDMA READ */
	CMD_BYE,		/* unbind the grant; the client disconnects next */
	CMD_READY,		/* server -> client: prepared (status 0) or not */
	CMD_RESULT,		/* server -> client: verified (status 0) or not */
	/*
	 * Poison the granted buffer and post a RECV for an RDMA WRITE with immediate (addr:
	 * the length it writes, seed: its immediate data); after it, RESULT.
	 */
	CMD_WRITE_IMM_PREP,
	/*
	 * Sent with SEND with invalidate of the grant's rkey: check that the grant ended, bind
	 * it again and answer RESULT with the new rkey and address.
	 */
	CMD_INVALIDATED,
};

struct tmsg {
	u32 magic;
	u32 cmd;
	u32 seq;
	u32 seed;
	u64 len;
	s32 status;
	u32 rkey;
	u64 addr;
	s64 bad;
	char why[96];
};

/* Sends a message; with @inv_rkey != 0 as SEND with invalidate of that rkey. */
static int send_msg_inv(struct side *s, struct tmsg *m, u32 inv_rkey, char *why)
{
	struct rkdapl_lmr_triplet t = { s->msg_lmr, 0, sizeof(*m) };
	u64 c = next_cookie(s);
	int r;

	m->magic = TMSG_MAGIC;
	memcpy(s->msg, m, sizeof(*m));
	rkdapl_lmr_sync_rdma_read(s->msg_lmr, 0, sizeof(*m));
	r = inv_rkey ? rkdapl_post_send_with_invalidate(s->ep, &t, 1, inv_rkey, c, 0) :
		       rkdapl_post_send(s->ep, &t, 1, c, 0);
	if (r) {
		snprintf(why, WHY, "%s: post_send(message) = %d %s", s->who, r, ename(r));
		s->dead = true;
		return r;
	}
	return dto_expect(s, c, inv_rkey ? RKDAPL_DTO_SEND_INVALIDATE : RKDAPL_DTO_SEND,
			  sizeof(*m), why);
}

static int send_msg(struct side *s, struct tmsg *m, char *why)
{
	return send_msg_inv(s, m, 0, why);
}

static int post_rx(struct side *s, char *why)
{
	struct rkdapl_lmr_triplet t = { s->msg_lmr, SLOT, SLOT };
	int r;

	s->rx_cookie = next_cookie(s);
	r = rkdapl_post_recv(s->ep, &t, 1, s->rx_cookie, 0);
	if (r) {
		snprintf(why, WHY, "%s: post_recv(message) = %d %s", s->who, r, ename(r));
		s->dead = true;
	}
	return r;
}

/* Waits for the message RECV; does not post the next one. */
static int recv_msg(struct side *s, struct tmsg *m, char *why)
{
	int r = dto_expect(s, s->rx_cookie, RKDAPL_DTO_RECV, sizeof(*m), why);

	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(s->msg_lmr, SLOT, sizeof(*m));
	memcpy(m, s->msg + SLOT, sizeof(*m));
	m->why[sizeof(m->why) - 1] = 0;
	if (m->magic != TMSG_MAGIC) {
		snprintf(why, WHY, "%s: message with bad magic %#x", s->who, m->magic);
		s->dead = true;
		return -EPROTO;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Setting up and tearing down a side */

static int side_open(struct side *s, bool server, char *why)
{
	int r;

	r = rkdapl_ia_open(dev, &s->ia);
	if (r) {
		snprintf(why, WHY, "ia_open(%s) = %d %s", dev, r, ename(r));
		return r;
	}
	r = rkdapl_ia_query(s->ia, &s->attr);
	if (!r)
		r = rkdapl_pz_create(s->ia, &s->pz);
	if (!r)
		r = rkdapl_evd_create(s->ia, 256, &s->dto_evd);
	if (!r)
		r = rkdapl_evd_create(s->ia, 16, &s->conn_evd);
	if (!r && server)
		r = rkdapl_evd_create(s->ia, 16, &s->psp_evd);
	if (r) {
		snprintf(why, WHY, "ia_query/pz_create/evd_create = %d %s", r, ename(r));
		return r;
	}

	s->msg = kzalloc(2 * SLOT, GFP_KERNEL);
	/* SEND data must be one DMA segment: kmalloc memory is physically contiguous. */
	s->dlen = server ? BIGBUF + PAGE_SIZE : BIGBUF;
	s->dbuf = kmalloc(s->dlen, GFP_KERNEL);
	/*
	 * RDMA: vmalloc memory, so that a 1 MiB DTO is split into several work requests
	 * (256 pages, 8 x max_iov SGEs), unless the device's max_iov is too small for that.
	 */
	s->rlen = BIGBUF + PAGE_SIZE;
	s->rbuf_vmalloc = server || 8ULL * s->attr.max_iov >= BIGBUF / PAGE_SIZE;
	s->rbuf = s->rbuf_vmalloc ? vmalloc(s->rlen) : kmalloc(s->rlen, GFP_KERNEL);
	if (!s->msg || !s->dbuf || !s->rbuf) {
		snprintf(why, WHY, "out of memory");
		return -ENOMEM;
	}
	memset(s->dbuf, 0, s->dlen);
	memset(s->rbuf, 0, s->rlen);
	r = rkdapl_lmr_create(s->pz, s->msg, 2 * SLOT, RKDAPL_MEM_LOCAL_WRITE, &s->msg_lmr);
	if (!r)
		r = rkdapl_lmr_create(s->pz, s->dbuf, s->dlen, RKDAPL_MEM_LOCAL_WRITE, &s->d_lmr);
	if (!r)
		r = rkdapl_lmr_create(s->pz, s->rbuf, s->rlen,
				      RKDAPL_MEM_LOCAL_WRITE |
				      (server ? RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE : 0),
				      &s->r_lmr);
	if (!r && server)
		r = rkdapl_rmr_create(s->pz, &s->rmr);
	if (r) {
		snprintf(why, WHY, "lmr_create/rmr_create = %d %s", r, ename(r));
		return r;
	}
	return 0;
}

/* Frees everything; returns the number of frees that did not return 0 (reasons in @why). */
static int side_close(struct side *s, char *why)
{
	int bad = 0, r;
	bool lmr_ok = true;

#define FREE(call, h) do {							\
		if (h) {							\
			r = call(h);						\
			if (r) {						\
				if (!bad)					\
					snprintf(why, WHY, "%s = %d %s", #call,	\
						 r, ename(r));			\
				bad++;						\
			}							\
			h = NULL;						\
		}							\
	} while (0)

	FREE(rkdapl_ep_free, s->ep);
	FREE(rkdapl_psp_free, s->psp);
	FREE(rkdapl_rmr_free, s->rmr);
	if (s->msg_lmr || s->d_lmr || s->r_lmr) {
		int b0 = bad;

		FREE(rkdapl_lmr_free, s->msg_lmr);
		FREE(rkdapl_lmr_free, s->d_lmr);
		FREE(rkdapl_lmr_free, s->r_lmr);
		lmr_ok = bad == b0;
	}
	FREE(rkdapl_evd_free, s->dto_evd);
	FREE(rkdapl_evd_free, s->conn_evd);
	FREE(rkdapl_evd_free, s->psp_evd);
	FREE(rkdapl_pz_free, s->pz);
	FREE(rkdapl_ia_close, s->ia);
#undef FREE
	/* A buffer whose LMR could not be freed may still be mapped: leak it rather. */
	if (lmr_ok) {
		kfree(s->msg);
		kfree(s->dbuf);
		if (s->rbuf_vmalloc)
			vfree(s->rbuf);
		else
			kfree(s->rbuf);
	}
	s->msg = s->dbuf = s->rbuf = NULL;
	return bad;
}

static int parse_peer(struct sockaddr_in *sin, u16 p)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(p);
	if (!peer || !peer[0] || !in4_pton(peer, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Server */

static bool server_abort;	/* loopback: the client gave up before connecting */

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

/* Handles one command; returns 1 after BYE, 0 to go on, < 0 if the connection failed. */
static int srv_command(struct side *s, struct tmsg *m, char *why)
{
	struct rkdapl_lmr_triplet t;
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
		/* The data RECV goes first: RECVs are consumed in the order posted. */
		t = (struct rkdapl_lmr_triplet){ s->d_lmr, 0, s->dlen };
		dc = next_cookie(s);
		r = rkdapl_post_recv(s->ep, &t, 1, dc, 0);
		if (r) {
			snprintf(text, sizeof(text), "server: post_recv(data) = %d %s", r, ename(r));
			r = post_rx(s, why);
			return r ?: srv_reply(s, m, CMD_READY, -EIO, -1, text, why);
		}
		r = post_rx(s, why);
		if (!r)
			r = srv_reply(s, m, CMD_READY, 0, -1, NULL, why);
		if (r)
			return r;
		r = wait_cookie(s, dc, &ev);
		if (r) {
			snprintf(why, WHY, "server: no RECV completion for the data: %d %s", r,
				 ename(r));
			s->dead = true;
			return r;
		}
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
			bad = pat_check(s->dbuf, 0, len, m->seed);
			if (bad >= 0) {
				snprintf(text, sizeof(text), "server: received byte %lld wrong", bad);
				st = -EILSEQ;
			} else {
				bad = pat_check(s->dbuf, len, GUARD, poison_seed(m->seed));
				if (bad >= 0) {
					snprintf(text, sizeof(text),
						 "server: RECV buffer overwritten at %lld", bad);
					st = -EOVERFLOW;
				}
			}
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
			bad = pat_check(s->rbuf, 0, len, m->seed);
			if (bad >= 0) {
				snprintf(text, sizeof(text), "server: granted buffer byte %lld wrong",
					 bad);
				st = -EILSEQ;
			} else {
				bad = pat_check(s->rbuf, len, g, poison_seed(m->seed));
				if (bad >= 0) {
					snprintf(text, sizeof(text),
						 "server: written past the end, at %lld", bad);
					st = -EOVERFLOW;
				}
			}
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
		/* The RECV the write consumes goes first: RECVs are consumed in order. */
		t = (struct rkdapl_lmr_triplet){ s->d_lmr, 0, GUARD };
		dc = next_cookie(s);
		r = rkdapl_post_recv(s->ep, &t, 1, dc, 0);
		if (r) {
			snprintf(text, sizeof(text), "server: post_recv(imm) = %d %s", r, ename(r));
			r = post_rx(s, why);
			return r ?: srv_reply(s, m, CMD_READY, -EIO, -1, text, why);
		}
		r = post_rx(s, why);
		r = r ?: srv_reply(s, m, CMD_READY, 0, -1, NULL, why);
		r = r ?: wait_cookie(s, dc, &ev);
		if (r) {
			snprintf(why, WHY, "server: no RECV completion for the write: %d %s", r,
				 ename(r));
			s->dead = true;
			return r;
		}
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
			bad = pat_check(s->rbuf, 0, len, m->seed);
			if (bad >= 0) {
				snprintf(text, sizeof(text), "server: granted buffer byte %lld wrong",
					 bad);
				st = -EILSEQ;
			} else if ((bad = pat_check(s->rbuf, len, g, poison_seed(m->seed))) >= 0) {
				snprintf(text, sizeof(text), "server: written past the end, at %lld",
					 bad);
				st = -EOVERFLOW;
			} else if ((bad = pat_check(s->dbuf, 0, GUARD, poison_seed(m->seed))) >= 0) {
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
		r = rkdapl_rmr_bind(s->rmr, s->r_lmr, 0, s->rlen,
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
		a.len = s->rlen;
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

static int server_run(void)
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

	r = rkdapl_ep_create(s->pz, s->dto_evd, s->conn_evd, NULL, &s->ep);
	if (!tap(!r, "server: ep_create", "%d %s", r, ename(r))) {
		rkdapl_cr_reject(ev.cr, NULL, 0);
		goto out;
	}
	r = rkdapl_cr_accept(ev.cr, s->ep, SERVER_PDATA, sizeof(SERVER_PDATA));
	if (!tap(!r, "server: cr_accept", "%d %s", r, ename(r)))
		goto out;
	r = post_rx(s, why);
	if (!tap(!r, "server: post_recv right after cr_accept", "%s", why))
		goto out;
	bc = next_cookie(s);
	r = rkdapl_rmr_bind(s->rmr, s->r_lmr, 0, s->rlen,
			    RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, s->ep, bc, &s->rkey,
			    &s->raddr);
	if (!tap(!r, "server: rmr_bind of the buffer on the accepting EP", "%d %s", r, ename(r)))
		goto out;
	r = conn_expect(s->conn_evd, s->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms, &ev);
	if (!tap(!r, "server: established", "%s, event %u (%s) status %d", ename(r), ev.type,
		 evname(ev.type), ev.status))
		goto out;
	r = dto_expect(s, bc, RKDAPL_DTO_RMR_BIND, -1, why);
	if (!tap(!r, "server: rmr_bind completion", "%s", why))
		goto out;

	m = (struct tmsg){ .cmd = CMD_HELLO, .rkey = s->rkey, .addr = s->raddr, .len = s->rlen };
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

/* ------------------------------------------------------------------------------------------ */
/* Client */

static int client_connect(struct side *s, const struct sockaddr_in *sin, char *why)
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
		rkdapl_ep_free(s->ep);
		s->ep = NULL;
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

static int do_send(struct side *s, u64 len, u32 seed, char *why)
{
	struct rkdapl_lmr_triplet t = { s->d_lmr, 0, len };
	struct tmsg rep;
	u64 c;
	int r;

	r = rpc(s, CMD_SEND_PREP, len, seed, &rep, why);
	if (!r)
		r = answer_ok(&rep, CMD_READY, why);
	if (r)
		return r;
	pat_fill(s->dbuf, 0, len, seed);
	if (len)
		rkdapl_lmr_sync_rdma_read(s->d_lmr, 0, len);
	c = next_cookie(s);
	r = rkdapl_post_send(s->ep, &t, 1, c, 0);
	if (r) {
		snprintf(why, WHY, "post_send(%llu bytes) = %d %s", len, r, ename(r));
		s->dead = true;	/* the server waits for the data */
		return r;
	}
	r = dto_expect(s, c, RKDAPL_DTO_SEND, len, why);
	if (r)
		return r;
	r = recv_msg(s, &rep, why);
	if (!r)
		r = post_rx(s, why);
	if (!r && rep.seq != s->seq) {
		snprintf(why, WHY, "result has seq %u, expected %u", rep.seq, s->seq);
		s->dead = true;
		r = -EPROTO;
	}
	return r ?: answer_ok(&rep, CMD_RESULT, why);
}

static int do_rdma_write(struct side *s, u64 len, u32 seed, char *why)
{
	struct rkdapl_lmr_triplet t = { s->r_lmr, 0, len };
	struct rkdapl_rmr_triplet rt = { s->raddr, s->rkey, 0, len };
	struct tmsg rep;
	u64 c;
	int r;

	r = rpc(s, CMD_WRITE_PREP, len, seed, &rep, why);
	if (!r)
		r = answer_ok(&rep, CMD_READY, why);
	if (r)
		return r;
	pat_fill(s->rbuf, 0, len, seed);
	if (len)
		rkdapl_lmr_sync_rdma_read(s->r_lmr, 0, len);
	c = next_cookie(s);
	r = rkdapl_post_rdma_write(s->ep, &t, 1, &rt, c, 0);
	if (r) {
		snprintf(why, WHY, "post_rdma_write(%llu bytes) = %d %s", len, r, ename(r));
		return r;
	}
	r = dto_expect(s, c, RKDAPL_DTO_RDMA_WRITE, len, why);
	if (r)
		return r;
	r = rpc(s, CMD_CHECK, len, seed, &rep, why);
	return r ?: answer_ok(&rep, CMD_RESULT, why);
}

static int do_rdma_read(struct side *s, u64 len, u32 seed, char *why)
{
	struct rkdapl_lmr_triplet t = { s->r_lmr, 0, len };
	struct rkdapl_rmr_triplet rt = { s->raddr, s->rkey, 0, len };
	u64 g = min_t(u64, GUARD, s->rlen - len);
	struct tmsg rep;
	s64 bad;
	u64 c;
	int r;

	r = rpc(s, CMD_READ_PREP, len, seed, &rep, why);
	if (!r)
		r = answer_ok(&rep, CMD_READY, why);
	if (r)
		return r;
	pat_fill(s->rbuf, 0, len + g, poison_seed(seed));
	rkdapl_lmr_sync_rdma_read(s->r_lmr, 0, len + g);
	c = next_cookie(s);
	r = rkdapl_post_rdma_read(s->ep, &t, 1, &rt, c, 0);
	if (r) {
		snprintf(why, WHY, "post_rdma_read(%llu bytes) = %d %s", len, r, ename(r));
		return r;
	}
	r = dto_expect(s, c, RKDAPL_DTO_RDMA_READ, len, why);
	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(s->r_lmr, 0, len + g);
	bad = pat_check(s->rbuf, 0, len, seed);
	if (bad >= 0) {
		snprintf(why, WHY, "byte %lld read wrong", bad);
		return -EILSEQ;
	}
	bad = pat_check(s->rbuf, len, g, poison_seed(seed));
	if (bad >= 0) {
		snprintf(why, WHY, "local buffer written past the end, at %lld", bad);
		return -EOVERFLOW;
	}
	return 0;
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

	r = send_msg(s, &m, why);
	r = r ?: recv_msg(s, &rep, why);
	r = r ?: post_rx(s, why);
	r = r ?: answer_ok(&rep, CMD_READY, why);
	if (r)
		return r;
	pat_fill(s->rbuf, 0, len, seed);
	if (len)
		rkdapl_lmr_sync_rdma_read(s->r_lmr, 0, len);
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
	r = r ?: recv_msg(s, &rep, why);
	r = r ?: post_rx(s, why);
	if (!r && rep.seq != m.seq) {
		snprintf(why, WHY, "result has seq %u, expected %u", rep.seq, m.seq);
		s->dead = true;
		r = -EPROTO;
	}
	return r ?: answer_ok(&rep, CMD_RESULT, why);
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

static int client_run(void)
{
	static const struct {
		const char *name;
		int (*fn)(struct side *s, u64 len, u32 seed, char *why);
	} ops[] = {
		{ "send", do_send },
		{ "rdma_write", do_rdma_write },
		{ "rdma_read", do_rdma_read },
		{ "rdma_write_imm", do_rdma_write_imm },
		{ "chain of rdma_write + rdma_write_imm", do_chain },
	};
	struct side *s = kzalloc(sizeof(*s), GFP_KERNEL);
	struct rkdapl_event ev = {};
	struct sockaddr_in sin;
	char why[WHY] = "", name[64];
	u32 base = get_random_u32();
	struct tmsg m;
	bool ok;
	int r, i, j;

	if (!s)
		return tap(false, "client: setup", "out of memory"), -ENOMEM;
	s->who = "client";
	if (parse_peer(&sin, port)) {
		tap(false, "client: setup", "bad peer address '%s'", peer);
		goto out;
	}
	r = side_open(s, false, why);
	if (!tap(!r, "client: setup (ia, pz, evds, lmrs)", "%s", why))
		goto out;
	r = client_connect(s, &sin, why);
	if (!tap(!r, "client: connect (with private data both ways)", "%pI4:%u: %s",
		 &sin.sin_addr, port, why))
		goto out;
	r = post_rx(s, why);
	if (!r)
		r = recv_msg(s, &m, why);
	if (!r)
		r = post_rx(s, why);
	if (!r && (m.cmd != CMD_HELLO || m.len < BIGBUF + GUARD)) {
		snprintf(why, WHY, "first message %u, grant of %llu bytes", m.cmd, m.len);
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

/* ------------------------------------------------------------------------------------------ */
/* badarg */

/* Pages that are never physically adjacent: one DMA segment (and one RMR page) each. */
struct sparse {
	struct page **pages;
	unsigned int n;
	void *addr;
};

static int sparse_alloc(struct sparse *sp, unsigned int n)
{
	sp->pages = kcalloc(n, sizeof(*sp->pages), GFP_KERNEL);
	if (!sp->pages)
		return -ENOMEM;
	for (sp->n = 0; sp->n < n; sp->n++) {
		/* The first page of an order-1 block: its successor is never another's first. */
		sp->pages[sp->n] = alloc_pages(GFP_KERNEL | __GFP_ZERO, 1);
		if (!sp->pages[sp->n])
			return -ENOMEM;
		split_page(sp->pages[sp->n], 1);
	}
	sp->addr = vmap(sp->pages, n, VM_MAP, PAGE_KERNEL);
	return sp->addr ? 0 : -ENOMEM;
}

static void sparse_free(struct sparse *sp)
{
	unsigned int i;

	if (sp->addr)
		vunmap(sp->addr);
	for (i = 0; sp->pages && i < sp->n; i++) {
		__free_page(sp->pages[i]);
		__free_page(sp->pages[i] + 1);
	}
	kfree(sp->pages);
	memset(sp, 0, sizeof(*sp));
}

struct bctx {
	struct rkdapl_ia *ia;
	struct rkdapl_ia_attr attr;
	struct rkdapl_pz *pz, *pz2;
	struct rkdapl_evd *evd, *psp_evd;
	struct rkdapl_psp *psp;
	void *foreign;
	struct sockaddr_in self;
	/* connected part */
	struct side *c, *s;
	u8 *bufa, *bufb, *bufx;
	struct rkdapl_lmr *lmr_a;	/* bufa (vmalloc): all privileges (the server's target) */
	struct rkdapl_lmr *lmr_k;	/* bufb (kmalloc): all privileges */
	struct rkdapl_lmr *lmr_b;	/* bufb: local write (the client's buffer) */
	struct rkdapl_lmr *lmr_ro;	/* bufb: remote read only, no local write */
	struct rkdapl_lmr *lmr_lw;	/* bufb: local write only */
	struct rkdapl_lmr *lmr_rd;	/* bufa: local write + remote read */
	struct rkdapl_lmr *lmr_x;	/* bufx, on pz2: all privileges */
	struct rkdapl_lmr *lmr_sp;	/* sparse pages: all privileges */
	struct rkdapl_rmr *rmr, *rmr_x;
	struct sparse sp;
};

#define ALL_PRIV (RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE)
#define BUFSZ (4 * PAGE_SIZE)

/*
 * A connected loopback pair b->c (client) <-> b->s (server), through b->psp, the client's EP
 * with @cattr, the server's with @sattr.
 */
static int pair_connect_attr(struct bctx *b, struct rkdapl_ep_attr *cattr,
			     struct rkdapl_ep_attr *sattr, char *why)
{
	struct rkdapl_event ev = {};
	int r;

	b->c->dead = b->s->dead = false;
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, cattr, &b->c->ep);
	if (!r)
		r = rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, sattr, &b->s->ep);
	if (r) {
		snprintf(why, WHY, "ep_create = %d %s", r, ename(r));
		return r;
	}
	r = rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&b->self, 5000, NULL, 0);
	if (r) {
		snprintf(why, WHY, "ep_connect(%pI4:%u) = %d %s", &b->self.sin_addr,
			 ntohs(b->self.sin_port), r, ename(r));
		return r;
	}
	r = conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (r) {
		snprintf(why, WHY, "no connection request: %s, event %u (%s)", ename(r), ev.type,
			 evname(ev.type));
		return r;
	}
	r = rkdapl_cr_accept(ev.cr, b->s->ep, NULL, 0);
	if (r) {
		snprintf(why, WHY, "cr_accept = %d %s", r, ename(r));
		return r;
	}
	r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
			timeout_ms, &ev);
	if (!r)
		r = conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
				timeout_ms, &ev);
	if (r) {
		snprintf(why, WHY, "not established: %s, event %u (%s) status %d", ename(r),
			 ev.type, evname(ev.type), ev.status);
		return r;
	}
	return 0;
}

static int pair_connect(struct bctx *b, char *why)
{
	struct rkdapl_ep_attr attr = { .max_request_iov = 256 };

	return pair_connect_attr(b, &attr, &attr, why);
}

static void pair_close(struct bctx *b)
{
	if (b->c->ep)
		rkdapl_ep_free(b->c->ep);
	if (b->s->ep)
		rkdapl_ep_free(b->s->ep);
	b->c->ep = b->s->ep = NULL;
	evd_drain(b->c->dto_evd);
	evd_drain(b->c->conn_evd);
	evd_drain(b->s->dto_evd);
	evd_drain(b->s->conn_evd);
	evd_drain(b->psp_evd);
	b->c->nstash = b->s->nstash = 0;
}

/* Binds b->rmr over [off, off + len) of @lmr with @priv on the server EP and waits. */
static int grant(struct bctx *b, struct rkdapl_rmr *rmr, struct rkdapl_lmr *lmr, u64 off,
		 u64 len, u32 priv, struct rkdapl_rmr_triplet *rt, char *why)
{
	u64 c = next_cookie(b->s);
	int r;

	memset(rt, 0, sizeof(*rt));
	r = rkdapl_rmr_bind(rmr, lmr, off, len, priv, b->s->ep, c, &rt->rkey, &rt->address);
	if (r) {
		snprintf(why, WHY, "rmr_bind = %d %s", r, ename(r));
		return r;
	}
	rt->length = len;
	return dto_expect(b->s, c, RKDAPL_DTO_RMR_BIND, -1, why);
}

/* Posts an RDMA op of @len bytes of bufb on the client and returns its completion status. */
static int rdma_status(struct bctx *b, bool write, u64 len, struct rkdapl_rmr_triplet rt,
		       s32 *status, char *why)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, len };
	struct rkdapl_event ev = {};
	u64 c = next_cookie(b->c);
	int r;

	rt.length = len;
	r = write ? rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0) :
		    rkdapl_post_rdma_read(b->c->ep, &t, 1, &rt, c, 0);
	if (r) {
		snprintf(why, WHY, "post_rdma_%s = %d %s", write ? "write" : "read", r, ename(r));
		return r;
	}
	r = wait_cookie(b->c, c, &ev);
	if (r) {
		snprintf(why, WHY, "no completion: %d %s", r, ename(r));
		return r;
	}
	*status = ev.status;
	snprintf(why, WHY, "completion status %d (%s), op %u, length %llu", ev.status,
		 stname(ev.status), ev.op, ev.transferred_length);
	return 0;
}

/*
 * An RDMA WRITE that waits for a free DTO slot: -ENOSPC is the documented answer while
 * max_request_dtos DTOs are outstanding (suppressed ones free theirs only when a later one
 * completes). Gives up after timeout_ms.
 */
static int post_write_wait(struct rkdapl_ep *ep, struct rkdapl_lmr_triplet *t,
			   struct rkdapl_rmr_triplet *rt, u64 cookie, u32 flags, int *waits)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	int r;

	while ((r = rkdapl_post_rdma_write(ep, t, 1, rt, cookie, flags)) == -ENOSPC &&
	       time_before(jiffies, deadline)) {
		(*waits)++;
		usleep_range(500, 1000);
	}
	return r;
}

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

/* True if @len bytes at @p are all @v. */
static bool all_bytes(const u8 *p, size_t len, u8 v)
{
	return !memchr_inv(p, v, len);
}

/* One client WRITE of @len bytes of bufb at @loff to @rt.address + @roff: its status. */
static int write_status(struct bctx *b, u64 loff, u64 len, struct rkdapl_rmr_triplet rt,
			u64 roff, s32 *status, char *why)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, loff, len };
	struct rkdapl_event ev = {};
	u64 c = next_cookie(b->c);
	int r;

	rt.address += roff;
	rt.length = len;
	r = rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	if (r)
		snprintf(why, WHY, "post_rdma_write or its completion: %d %s", r, ename(r));
	*status = ev.status;
	return r;
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

	/* WRITE, READ, WRITE_IMM, SEND in one call: in order, one event each */
	memset(rbuf, 0xa5, PAGE_SIZE);
	rkdapl_lmr_sync_rdma_read(lmr_r, 0, PAGE_SIZE);
	pat_fill(b->bufb, 0, 1088, 0xc4a1);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, 1088);
	pat_fill(b->bufa, 4096, 512, 0xc4a2);
	memset(b->bufa, 0, 1024);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, 8192);
	r1 = srv_recv(b, lmr_r, 0, 256, why);
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
	for (i = 0; i < 4; i++)
		d[i].cookie = want[i] = next_cookie(b->c);
	r = r2 ? rkdapl_post_chain(b->c->ep, d, 4, &posted) : -EIO;
	tap(!r && posted == 4, "post_chain of WRITE, READ, WRITE_IMM, SEND returns 0, 4 posted",
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
	r = recv_expect(b, r1, 512, RKDAPL_EVENT_WITH_IMM | RKDAPL_EVENT_RDMA_WRITE_IMM, 11, 0, why);
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
	tap(!r, "post_chain: the peer's RECVs see the WRITE_IMM then the SEND; every byte of the chain arrived",
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

/* ------------------------------------------------------------------------------------------ */
/* EVD upcalls */

#define UPC_MAX 64
#define UPC_CHAINED 0xc0ffee00ull

struct upc {
	struct bctx *b;
	struct rkdapl_rmr_triplet rt;
	atomic_t n, inside, max_inside, not_task;
	u64 cookie[UPC_MAX];
	u32 op[UPC_MAX];
	s32 status[UPC_MAX];
	int chain_ret;
	bool chained;
	bool spun;
};

static void test_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct upc *u = ctx;
	int in = atomic_inc_return(&u->inside), i;

	if (in > atomic_read(&u->max_inside))
		atomic_set(&u->max_inside, in);
	if (!in_task() || irqs_disabled())
		atomic_inc(&u->not_task);
	if (!u->spun && ev->op == RKDAPL_DTO_RDMA_WRITE) {
		/*
		 * Hold the first WRITE's call for up to 200 ms, or until a second call is inside:
		 * meanwhile the server's SENDs complete the client's RECVs from the receive CQ's
		 * work, which SINGLE_INSTANCE must keep out and MANY lets in.
		 */
		unsigned long until = jiffies + msecs_to_jiffies(200);

		u->spun = true;
		while (atomic_read(&u->inside) < 2 && time_before(jiffies, until))
			udelay(100);
	}
	i = atomic_read(&u->n);
	if (i < UPC_MAX) {
		u->cookie[i] = ev->cookie;
		u->op[i] = ev->op;
		u->status[i] = ev->status;
	}
	if (!u->chained && ev->op == RKDAPL_DTO_RDMA_WRITE) {
		/* the any-context calls work from the upcall: post one more WRITE */
		struct rkdapl_lmr_triplet t = { u->b->lmr_b, 0, 64 };

		u->chained = true;
		u->chain_ret = rkdapl_post_rdma_write(u->b->c->ep, &t, 1, &u->rt, UPC_CHAINED, 0);
	}
	atomic_dec(&u->inside);
	atomic_inc(&u->n);
}

/* Waits until @u has seen @n events; returns how many it saw. */
static int upc_wait(struct upc *u, int n)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);

	while (atomic_read(&u->n) < n && time_before(jiffies, deadline))
		msleep(5);
	msleep(50);	/* anything beyond n */
	return atomic_read(&u->n);
}

static void upcall_tests(struct bctx *b)
{
	enum { N = 16 };
	struct rkdapl_lmr_triplet t;
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_rmr *rmr_u = NULL;
	struct rkdapl_event ev = {};
	struct upc *u = kzalloc(sizeof(*u), GFP_KERNEL);
	char why[WHY] = "";
	u64 last_w = 0, last_r = 0, sc[N], c;
	int r, i, got, bad = 0, posted = 0, chained = 0;

	if (!u) {
		tap(false, "upcall tests", "out of memory");
		return;
	}
	u->b = b;
	expect(rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, NULL, u),
	       -EINVAL, "evd_modify_upcall(SINGLE_INSTANCE, NULL function)");
	expect(rkdapl_evd_modify_upcall(b->c->dto_evd, 3, test_upcall, u), -EINVAL,
	       "evd_modify_upcall(policy 3)");
	expect(rkdapl_evd_modify_upcall(NULL, RKDAPL_UPCALL_MANY, test_upcall, u), -EINVAL,
	       "evd_modify_upcall(NULL EVD)");
	expect(rkdapl_evd_modify_upcall(b->foreign, RKDAPL_UPCALL_MANY, test_upcall, u), -EINVAL,
	       "evd_modify_upcall(foreign object)");

	r = pair_connect(b, why);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr_u);
	r = r ?: grant(b, rmr_u, b->lmr_a, 0, 8192, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!tap(!r, "upcalls: connection and grant", "%d %s %s", r, ename(r), why))
		goto out;
	rt.length = 64;
	u->rt = rt;

	/*
	 * SINGLE_INSTANCE: the client's RECVs (receive CQ) and WRITEs (send CQ) complete from two
	 * completion works at once; the upcall must see one call at a time, in process context.
	 */
	r = rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, test_upcall, u);
	tap(!r, "evd_modify_upcall(SINGLE_INSTANCE)", "%d %s", r, ename(r));
	for (i = 0; !r && i < N; i++) {
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, 8192 + i * 64, 64 };
		r = rkdapl_post_recv(b->c->ep, &t, 1, 0x5000 + i, 0);
	}
	for (i = 0; !r && i < N; i++) {
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
		sc[i] = next_cookie(b->s);
		r = rkdapl_post_send(b->s->ep, &t, 1, sc[i], 0);
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, i * 64, 64 };
		r = r ?: rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, 0x6000 + i, 0);
		posted += !r;
	}
	got = upc_wait(u, 2 * N + 1);
	for (i = 0; i < min(got, UPC_MAX); i++) {
		if (u->status[i] != RKDAPL_DTO_SUCCESS)
			bad++;
		if (u->cookie[i] == UPC_CHAINED)
			chained++;
		else if (u->op[i] == RKDAPL_DTO_RDMA_WRITE && u->cookie[i] > last_w)
			last_w = u->cookie[i];
		else if (u->op[i] == RKDAPL_DTO_RECV && u->cookie[i] > last_r)
			last_r = u->cookie[i];
		else
			bad++;	/* out of order, or an unexpected event */
	}
	tap(!r && posted == N && got == 2 * N + 1 && !bad && chained == 1 && !u->chain_ret,
	    "upcall SINGLE_INSTANCE: 16 RECV and 17 WRITE completions, in order per queue, all successful, one WRITE posted from the upcall",
	    "post %d %s, posted %d, upcalls %d (want %d), bad %d, chained %d (post %d)", r,
	    ename(r), posted, got, 2 * N + 1, bad, chained, u->chain_ret);
	tap(atomic_read(&u->max_inside) == 1 && !atomic_read(&u->not_task),
	    "upcall SINGLE_INSTANCE: one call at a time, each in process context with interrupts on",
	    "at most %d at once, %d calls in atomic context", atomic_read(&u->max_inside),
	    atomic_read(&u->not_task));
	r = rkdapl_evd_dequeue(b->c->dto_evd, &ev);
	tap(r == -EAGAIN, "upcall mode: nothing is queued on the EVD", "evd_dequeue = %d %s, event %u",
	    r, ename(r), ev.type);
	for (i = 0; i < N; i++)
		wait_cookie(b->s, sc[i], &ev);

	/* disabled: events are queued again, the upcall is not called */
	r = rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
	got = atomic_read(&u->n);
	t = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
	c = next_cookie(b->c);
	r = r ?: rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_SUCCESS && atomic_read(&u->n) == got,
	    "upcall disabled: the next completion is queued and dequeued, no upcall",
	    "%d %s, status %d, upcalls %d then %d", r, ename(r), ev.status, got,
	    atomic_read(&u->n));

	/* MANY */
	atomic_set(&u->n, 0);
	atomic_set(&u->max_inside, 0);
	u->chained = true;	/* no WRITE from the upcall this time */
	u->spun = false;
	r = rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_MANY, test_upcall, u);
	for (i = 0; !r && i < N; i++) {
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, 8192 + i * 64, 64 };
		r = rkdapl_post_recv(b->c->ep, &t, 1, 0x7000 + i, 0);
	}
	for (i = 0; !r && i < N; i++) {
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
		sc[i] = next_cookie(b->s);
		r = rkdapl_post_send(b->s->ep, &t, 1, sc[i], 0);
		r = r ?: rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, 0x8000 + i, 0);
	}
	got = upc_wait(u, 2 * N);
	tap(!r && got == 2 * N && !atomic_read(&u->not_task),
	    "upcall MANY: every completion reaches the upcall, in process context",
	    "%d %s, upcalls %d (want %d)", r, ename(r), got, 2 * N);
	tap(atomic_read(&u->max_inside) == 2,
	    "upcall MANY: a RECV completion's call runs while a WRITE completion's call is held (2 at once)",
	    "at most %d at once", atomic_read(&u->max_inside));
	for (i = 0; i < N; i++)
		wait_cookie(b->s, sc[i], &ev);
	/* rkdapl_evd_free() and module unload disable the upcall too; here explicitly */
	expect(rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL), 0,
	       "evd_modify_upcall(DISABLE)");
out:
	rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
	pair_close(b);
	if (rmr_u)
		expect(rkdapl_rmr_free(rmr_u), 0, "rmr_free of the upcall test's grant");
	kfree(u);
}

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

static void linear_fill(void *ctx, void *tmp, size_t len)
{
	memcpy(ctx, tmp, len);
}

static void linear_readback(void *ctx, void *tmp, size_t len)
{
	memcpy(tmp, ctx, len);
}

static void lmr_kinds(struct bctx *b)
{
	struct page *pg[4] = {}, *bad_pg[2];
	struct scatterlist sg[3], sg2[2];
	struct rkdapl_rmr_triplet ga, rt;
	struct rkdapl_rmr *rmr_g = NULL, *rmr_t = NULL;
	struct rkdapl_lmr *lmr = NULL;
	struct pages_ctx pc;
	struct kind_io io;
	char why[WHY] = "";
	void *mem = NULL;
	size_t len;
	int r, i;

	for (i = 0; i < 4; i++)
		pg[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
	r = pg[0] && pg[1] && pg[2] && pg[3] ? 0 : -ENOMEM;
	r = r ?: pair_connect(b, why);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr_g);
	r = r ?: grant(b, rmr_g, b->lmr_a, 0, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &ga, why);
	if (!tap(!r, "LMR kinds: pages, connection and grant", "%d %s %s", r, ename(r), why))
		goto out;

	/* --- an array of pages, starting 100 bytes into the first --- */
	len = 3 * PAGE_SIZE - 300;
	r = rkdapl_lmr_create_pages(b->pz, pg, 3, 100, len, ALL_PRIV, &lmr);
	if (tap(!r, "lmr_create_pages(3 separate pages, offset 100, 3 pages - 300 bytes)", "%d %s",
		r, ename(r))) {
		pc = (struct pages_ctx){ pg, 100 };
		io = (struct kind_io){ pages_fill, pages_readback, &pc };
		r = lmr_kind_io(b, lmr, len, &io, &ga, 0x9a9e, why);
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
		pc = (struct pages_ctx){ order, 0 };
		io = (struct kind_io){ pages_fill, pages_readback, &pc };
		r = lmr_kind_io(b, lmr, len, &io, &ga, 0x5c47, why);
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

/*
 * A SEND or RDMA WRITE with immediate while the peer has no RECV posted: with a small RNR
 * retry count on the receiving EP (the IB CM gives it to the sender's QP) the DTO completes
 * RECEIVER_NOT_READY instead of waiting.
 */
static void rnr_tests(struct bctx *b)
{
	struct rkdapl_ep_attr ca = { .max_request_iov = 256 };
	struct rkdapl_ep_attr sa = { .max_request_iov = 256, .rnr_retry_count = 1 };
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, 64 };
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_rmr *rmr = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	unsigned long t0;
	u64 c;
	int r;

	r = pair_connect_attr(b, &ca, &sa, why);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr);
	r = r ?: grant(b, rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!tap(!r, "RNR: connection to a server EP with rnr_retry_count 1, and a grant", "%d %s %s", r,
		 ename(r), why))
		goto out;
	t0 = jiffies;
	c = next_cookie(b->c);
	r = rkdapl_post_send(b->c->ep, &t, 1, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_RECEIVER_NOT_READY,
	    "a SEND with no RECV posted at the peer (its rnr_retry_count 1) completes RECEIVER_NOT_READY",
	    "%d %s, status %d (%s) after %u ms", r, ename(r), ev.status, stname(ev.status),
	    jiffies_to_msecs(jiffies - t0));
	pair_close(b);
	r = pair_connect_attr(b, &ca, &sa, why);
	if (r) {
		tap(false, "RNR: second connection", "%s", why);
		goto out;
	}
	rt.length = 64;
	c = next_cookie(b->c);
	r = rkdapl_post_rdma_write_imm(b->c->ep, &t, 1, &rt, 5, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_RECEIVER_NOT_READY,
	    "an RDMA WRITE with immediate with no RECV posted at the peer completes RECEIVER_NOT_READY",
	    "%d %s, status %d (%s)", r, ename(r), ev.status, stname(ev.status));

	/* a SEND longer than the peer's RECV buffer */
	pair_close(b);
	r = pair_connect(b, why);
	if (r) {
		tap(false, "local length: connection", "%s", why);
		goto out;
	}
	{
		struct rkdapl_lmr_triplet rx = { b->lmr_b, 8192, 16 };
		u64 rc = next_cookie(b->s);
		struct rkdapl_event sev = {};

		memset(b->bufb + 8192, 0x77, 64);
		r = rkdapl_post_recv(b->s->ep, &rx, 1, rc, 0);
		c = next_cookie(b->c);
		r = r ?: rkdapl_post_send(b->c->ep, &t, 1, c, 0);
		r = r ?: wait_cookie(b->s, rc, &sev);
		r = r ?: wait_cookie(b->c, c, &ev);
		/*
		 * IB spec 9.9.3.1.2 (class C, RC): the responder NAKs Invalid Request and fails
		 * the RECV; rdma_rxe reports it as a local QP error, others as a length error.
		 */
		tap(!r && (sev.status == RKDAPL_DTO_LOCAL_LENGTH_ERROR ||
			   sev.status == RKDAPL_DTO_LOCAL_EP_ERROR) &&
		    ev.status == RKDAPL_DTO_REMOTE_RESPONDER_ERROR &&
		    all_bytes(b->bufb + 8192 + 16, 48, 0x77),
		    "a 64-byte SEND into a 16-byte RECV: the RECV fails (LOCAL_LENGTH or, on rxe, LOCAL_EP), the SEND REMOTE_RESPONDER_ERROR, nothing written past the RECV buffer",
		    "%d %s, RECV status %d (%s), SEND status %d (%s)", r, ename(r), sev.status,
		    stname(sev.status), ev.status, stname(ev.status));
	}
out:
	pair_close(b);
	if (rmr)
		rkdapl_rmr_free(rmr);
}

/*
 * RDMA READ limits settled between the two sides: the client asks to serve 2 and issue 3,
 * the server to serve 5 and issue 1; each side ends up issuing no more than the other serves.
 */
static void rd_negotiation_test(struct bctx *b)
{
	struct rkdapl_ep_attr ca = { .max_request_iov = 256, .max_rdma_read_in = 2,
				     .max_rdma_read_out = 3 };
	struct rkdapl_ep_attr sa = { .max_request_iov = 256, .max_rdma_read_in = 5,
				     .max_rdma_read_out = 1 };
	struct rkdapl_ep_attr q = {}, cq = {}, sq = {};
	struct rkdapl_ep *e = NULL;
	char why[WHY] = "";
	int r;

	r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &e);
	r = r ?: rkdapl_ep_query(e, &q);
	tap(!r && q.max_rdma_read_in == min(4u, b->attr.max_rdma_read_in) &&
	    q.max_rdma_read_out == min(4u, b->attr.max_rdma_read_out) && q.max_request_dtos == 64 &&
	    q.retry_count == 7 && q.rnr_retry_count == 7,
	    "ep_query of an unconnected EP: the defaults (64 DTOs, 4 RDMA READs each way, retries 7)",
	    "%d %s: dtos %u, read in %u out %u, retry %u rnr %u", r, ename(r), q.max_request_dtos,
	    q.max_rdma_read_in, q.max_rdma_read_out, q.retry_count, q.rnr_retry_count);
	expect(rkdapl_ep_query(e, NULL), -EINVAL, "ep_query(NULL attr)");
	expect(rkdapl_ep_query(b->foreign, &q), -EINVAL, "ep_query(foreign object)");
	if (e)
		rkdapl_ep_free(e);
	r = pair_connect_attr(b, &ca, &sa, why);
	r = r ?: rkdapl_ep_query(b->c->ep, &cq);
	r = r ?: rkdapl_ep_query(b->s->ep, &sq);
	tap(!r && cq.max_rdma_read_out == 3 && sq.max_rdma_read_in == 3 &&
	    sq.max_rdma_read_out == 1 && cq.max_rdma_read_in == 1,
	    "RDMA READ limits settled (client asks in 2 out 3, server in 5 out 1): client in 1 out 3, server in 3 out 1",
	    "%d %s %s: client in %u out %u, server in %u out %u", r, ename(r), why,
	    cq.max_rdma_read_in, cq.max_rdma_read_out, sq.max_rdma_read_in,
	    sq.max_rdma_read_out);
	pair_close(b);
}

/* rkdapl_evd_wait() in a kthread that gets a signal: -EINTR. */
struct intr_ctx {
	struct rkdapl_evd *evd;
	struct completion waiting, done;
	int ret;
};

static int intr_fn(void *arg)
{
	struct intr_ctx *x = arg;
	struct rkdapl_event ev;

	allow_signal(SIGUSR1);
	complete(&x->waiting);
	x->ret = rkdapl_evd_wait(x->evd, 20000, &ev);
	complete(&x->done);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(HZ / 10);
	return 0;
}

static void evd_intr_test(struct bctx *b)
{
	struct intr_ctx x = { .ret = 1 };
	struct task_struct *t;
	unsigned long t0 = jiffies;
	int r;

	r = rkdapl_evd_create(b->ia, 4, &x.evd);
	init_completion(&x.waiting);
	init_completion(&x.done);
	t = r ? ERR_PTR(r) : kthread_run(intr_fn, &x, "rkdapl_intr");
	if (!tap(!IS_ERR(t), "evd_wait interrupted: setup", "%ld", PTR_ERR(t)))
		goto out;
	wait_for_completion(&x.waiting);
	msleep(200);
	send_sig(SIGUSR1, t, 1);
	r = wait_for_completion_timeout(&x.done, msecs_to_jiffies(30000)) ? 0 : -ETIMEDOUT;
	tap(!r && x.ret == -EINTR && time_before(jiffies, t0 + msecs_to_jiffies(10000)),
	    "evd_wait(20 s) in a thread that gets a signal returns -EINTR at once",
	    "%d %s, evd_wait = %d %s after %u ms", r, ename(r), x.ret, ename(x.ret),
	    jiffies_to_msecs(jiffies - t0));
	kthread_stop(t);
out:
	if (x.evd)
		rkdapl_evd_free(x.evd);
}

/*
 * The IA's async EVD: argument errors, and an overflow of another EVD of the IA reported
 * there (connection requests into a PSP EVD of one entry).
 */
static void async_evd_tests(struct bctx *b)
{
	struct rkdapl_evd *small = NULL, *async = NULL, *other = NULL;
	struct rkdapl_ia *ia2 = NULL;
	struct rkdapl_psp *psp = NULL;
	struct rkdapl_ep *ep[2] = {};
	struct rkdapl_event ev = {};
	struct sockaddr_in to = b->self;
	int r, i;

	r = rkdapl_evd_create(b->ia, 1, &small);
	r = r ?: rkdapl_evd_create(b->ia, 8, &async);
	r = r ?: rkdapl_ia_open(dev, &ia2);
	r = r ?: rkdapl_evd_create(ia2, 8, &other);
	if (!tap(!r, "async EVD: setup", "%d %s", r, ename(r)))
		goto out;
	expect(rkdapl_ia_set_async_evd(NULL, async), -EINVAL, "ia_set_async_evd(NULL IA)");
	expect(rkdapl_ia_set_async_evd(b->ia, b->foreign), -EINVAL,
	       "ia_set_async_evd(foreign object)");
	expect(rkdapl_ia_set_async_evd(b->ia, other), -EXDEV,
	       "ia_set_async_evd(an EVD of another IA)");
	expect(rkdapl_ia_set_async_evd(b->ia, async), 0, "ia_set_async_evd(EVD of the IA)");

	to.sin_port = htons(port + 5);
	r = rkdapl_psp_create(b->ia, port + 5, 8, small, &psp);
	for (i = 0; !r && i < 2; i++) {
		r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ep[i]);
		r = r ?: rkdapl_ep_connect(ep[i], (struct sockaddr *)&to, 5000, NULL, 0);
	}
	r = r ?: conn_expect(async, NULL, RKDAPL_ASYNC_EVD_OVERFLOW, timeout_ms, &ev);
	tap(!r && ev.evd == small && ev.status == -EOVERFLOW && ev.transferred_length == 1,
	    "async EVD: two connection requests into a PSP EVD of 1 entry: RKDAPL_ASYNC_EVD_OVERFLOW naming that EVD",
	    "%d %s, event %u (%s) evd %s status %d lost %llu", r, ename(r), ev.type,
	    evname(ev.type), ev.evd == small ? "right" : "wrong", ev.status,
	    ev.transferred_length);
	memset(&ev, 0, sizeof(ev));
	r = rkdapl_evd_dequeue(small, &ev);
	tap(!r && ev.type == RKDAPL_ASYNC_EVD_OVERFLOW && ev.evd == small &&
	    ev.transferred_length == 1,
	    "the full EVD itself reports the loss first (1 event lost)",
	    "%d %s, event %u (%s), lost %llu", r, ename(r), ev.type, evname(ev.type),
	    ev.transferred_length);
	r = rkdapl_evd_dequeue(small, &ev);
	tap(!r && ev.type == RKDAPL_CONNECTION_REQUEST_EVENT, "then the connection request it kept",
	    "%d %s, event %u (%s)", r, ename(r), ev.type, evname(ev.type));
	if (!r && ev.type == RKDAPL_CONNECTION_REQUEST_EVENT)
		rkdapl_cr_reject(ev.cr, NULL, 0);
	expect(rkdapl_evd_dequeue(async, &ev), -EAGAIN, "async EVD: nothing else queued");
out:
	for (i = 0; i < 2; i++)
		if (ep[i])
			rkdapl_ep_free(ep[i]);
	if (psp)
		expect(rkdapl_psp_free(psp), 0, "psp_free of the overflow test's PSP");
	evd_drain(b->evd);
	if (async)
		expect(rkdapl_evd_free(async), 0, "evd_free of the async EVD (unsets it)");
	if (small)
		rkdapl_evd_free(small);
	if (other)
		rkdapl_evd_free(other);
	if (ia2)
		rkdapl_ia_close(ia2);
}

/* The DTO forms beyond SEND/RECV/WRITE/READ, on a fresh loopback pair. */
static void dto_forms(struct bctx *b)
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
	r = r ?: pair_connect(b, why);
	r = r ?: rkdapl_rmr_create(b->pz, &rmr_g);
	r = r ?: grant(b, rmr_g, b->lmr_a, 0, 8192,
		       RKDAPL_MEM_REMOTE_WRITE | RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (!tap(!r, "DTO forms: connection, grant and RECV buffer", "%d %s %s", r, ename(r), why))
		goto out;

	/* --- RDMA WRITE with immediate --- */
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
	if (!r && pat_check(b->bufa, 0, 64, 0x0e3) >= 0)
		snprintf(why, WHY, "the fenced WRITE's bytes are not in the grant"), r = -EIO;
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
	tap(!r && status == RKDAPL_DTO_REMOTE_ACCESS_ERROR && off < 0,
	    "a WRITE with the invalidated rkey gets REMOTE_ACCESS_ERROR; the memory is unchanged",
	    "%d %s, status %d (%s), first changed byte %lld", r, ename(r), status,
	    stname(status), off);

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

/* The errors that need a connected EP, a real CR or an RMR grant. */
static void badarg_connected(struct bctx *b)
{
	struct rkdapl_lmr_triplet t1, *tv = NULL;
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_ep *c2 = NULL, *x = NULL;
	struct rkdapl_psp *p2 = NULL;
	struct rkdapl_rmr *rmr_t = NULL, *rmr_f = NULL;
	struct rkdapl_lmr *lmr_t = NULL;
	struct rkdapl_event ev = {};
	struct rkdapl_cr *cr;
	char why[WHY] = "", big[RKDAPL_MAX_PRIVATE_DATA + 1] = "";
	u32 rkey, st = ~0u, maxiov = b->attr.max_iov, maxpg = b->attr.max_rmr_pages, npg;
	u64 addr, c;
	s32 status;
	s64 bad;
	int r, i;

	/* --- objects --- */
	b->c = kzalloc(sizeof(*b->c), GFP_KERNEL);
	b->s = kzalloc(sizeof(*b->s), GFP_KERNEL);
	b->bufa = vzalloc(BUFSZ);
	b->bufb = kzalloc(BUFSZ, GFP_KERNEL);
	b->bufx = kzalloc(BUFSZ, GFP_KERNEL);
	tv = kcalloc(257, sizeof(*tv), GFP_KERNEL);
	if (!b->c || !b->s || !b->bufa || !b->bufb || !b->bufx || !tv) {
		tap(false, "connected setup", "out of memory");
		goto out;
	}
	b->c->who = "client";
	b->s->who = "server";
	npg = max(maxpg, 8 * maxiov) + 1;
	r = rkdapl_evd_create(b->ia, 256, &b->c->dto_evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->c->conn_evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 256, &b->s->dto_evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->s->conn_evd);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufa, BUFSZ, ALL_PRIV, &b->lmr_a);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &b->lmr_b);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, ALL_PRIV, &b->lmr_k);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_REMOTE_READ, &b->lmr_ro);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &b->lmr_lw);
	if (!r)
		r = rkdapl_lmr_create(b->pz, b->bufa, BUFSZ,
				      RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ, &b->lmr_rd);
	if (!r)
		r = rkdapl_lmr_create(b->pz2, b->bufx, BUFSZ, ALL_PRIV, &b->lmr_x);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &b->rmr);
	if (!r)
		r = rkdapl_rmr_create(b->pz2, &b->rmr_x);
	if (!r && npg <= 8192) {
		r = sparse_alloc(&b->sp, npg);
		if (!r)
			r = rkdapl_lmr_create(b->pz, b->sp.addr, (u64)npg * PAGE_SIZE, ALL_PRIV,
					      &b->lmr_sp);
	}
	if (!r)
		r = rkdapl_psp_create(b->ia, port, 8, b->psp_evd, &b->psp);
	if (!tap(!r, "connected setup (evds, lmrs, rmrs, psp)", "%d %s", r, ename(r)))
		goto out;

	/* --- a connected pair --- */
	r = pair_connect(b, why);
	if (!tap(!r, "loopback connection established", "%s", why))
		goto out;
	r = rkdapl_ep_get_state(b->c->ep, &st);
	tap(!r && st == RKDAPL_EP_STATE_CONNECTED, "ep_get_state of a connected EP is CONNECTED",
	    "returned %d, state %u", r, st);
	expect(rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&b->self, 1000, NULL, 0), -EISCONN,
	       "ep_connect(connected EP)");
	expect(rkdapl_psp_create(b->ia, port, 8, b->psp_evd, &p2), -EADDRINUSE,
	       "psp_create(port already listening)");
	if (p2)
		rkdapl_psp_free(p2);

	/* --- CR: accept on a connected EP, too much private data, reject, consumed --- */
	memset(big, 'p', sizeof(big));
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &c2);
	if (!r)
		r = rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &x);
	if (!r)
		r = rkdapl_ep_connect(c2, (struct sockaddr *)&b->self, 5000, NULL, 0);
	if (!r)
		r = conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (tap(!r, "second connection request arrives", "%s", ename(r))) {
		cr = ev.cr;
		expect(rkdapl_cr_accept(cr, b->s->ep, NULL, 0), -EISCONN,
		       "cr_accept(CR, connected EP)");
		expect(rkdapl_cr_accept(cr, x, big, sizeof(big)), -EINVAL,
		       "cr_accept(CR, EP, 57 bytes of private data)");
		expect(rkdapl_cr_reject(cr, big, sizeof(big)), -EINVAL,
		       "cr_reject(CR, 57 bytes of private data)");
		expect(rkdapl_cr_reject(cr, "go away", 7), 0, "cr_reject(CR, 7 bytes)");
		r = conn_expect(b->c->conn_evd, c2, RKDAPL_CONNECTION_EVENT_PEER_REJECTED,
				timeout_ms, &ev);
		tap(!r && ev.status == 28 && ev.private_data_len >= 7 &&
		    !memcmp(ev.private_data, "go away", 7),
		    "rejected connect gets PEER_REJECTED, status 28 and the private data",
		    "%s, event %u (%s) status %d, private data %u bytes", ename(r), ev.type,
		    evname(ev.type), ev.status, ev.private_data_len);
		expect(rkdapl_cr_reject(cr, NULL, 0), -EINVAL, "cr_reject(consumed CR)");
		expect(rkdapl_cr_accept(cr, x, NULL, 0), -EINVAL, "cr_accept(consumed CR)");
		r = rkdapl_ep_get_state(c2, &st);
		tap(!r && st == RKDAPL_EP_STATE_DISCONNECTED,
		    "ep_get_state after PEER_REJECTED is DISCONNECTED", "returned %d, state %u", r,
		    st);
		expect(rkdapl_ep_connect(c2, (struct sockaddr *)&b->self, 1000, NULL, 0), -EISCONN,
		       "ep_connect(rejected EP)");
	}
	if (c2)
		rkdapl_ep_free(c2);
	if (x)
		rkdapl_ep_free(x);
	c2 = x = NULL;

	/* --- post_send --- */
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	c = next_cookie(b->c);
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 8), -EINVAL, "post_send(flags 8, unknown)");
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0x80000000), -EINVAL,
	       "post_send(flags 0x80000000)");
	expect(rkdapl_post_send(b->c->ep, NULL, 1, c, 0), -EINVAL, "post_send(NULL iov, 1)");
	for (i = 0; i < 257; i++)
		tv[i] = (struct rkdapl_lmr_triplet){ b->lmr_b, 2 * i, 1 };
	expect(rkdapl_post_send(b->c->ep, tv, 257, c, 0), -EINVAL, "post_send(257 segments)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, BUFSZ, 1 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_send(segment starting at the LMR's end)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, BUFSZ + 1 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_send(segment one byte too long)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 8, U64_MAX - 3 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_send(offset + length overflows)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_send(b->c->ep, &t1, 1, c, 0), -EXDEV,
	       "post_send(LMR of another PZ)");
	if (maxiov + 1 <= 256) {
		char n[80];

		snprintf(n, sizeof(n), "post_send(%u one-byte segments, max_iov %u)", maxiov + 1,
			 maxiov);
		expect(rkdapl_post_send(b->c->ep, tv, maxiov + 1, c, 0), -EMSGSIZE, n);
	} else {
		tap_skip("post_send(max_iov + 1 segments) -> -EMSGSIZE", "max_iov >= 256");
	}

	/* --- post_recv --- */
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_ro, 0, 16 };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 0), -EACCES,
	       "post_recv(LMR without local write)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 2), -EINVAL, "post_recv(flags 2)");
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, RKDAPL_COMPLETION_SUPPRESS), -EINVAL,
	       "post_recv(RKDAPL_COMPLETION_SUPPRESS)");
	expect(rkdapl_post_recv(b->c->ep, NULL, 1, c, 0), -EINVAL, "post_recv(NULL iov, 1)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 1, BUFSZ };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 0), -ERANGE,
	       "post_recv(segment leaves the LMR)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_recv(b->c->ep, &t1, 1, c, 0), -EXDEV, "post_recv(LMR of another PZ)");

	/* --- RDMA posts (refused before anything reaches the wire) --- */
	rt = (struct rkdapl_rmr_triplet){ 0x10000, 0x1234, 0, 16 };
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, NULL, c, 0), -EINVAL,
	       "post_rdma_write(NULL remote)");
	rt.length = 17;
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -EINVAL,
	       "post_rdma_write(remote length != local total)");
	rt.length = 16;
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 1 << 3), -EINVAL,
	       "post_rdma_write(flags 8, unknown)");
	expect(rkdapl_post_rdma_write(b->c->ep, NULL, 1, &rt, c, 0), -EINVAL,
	       "post_rdma_write(NULL iov, 1)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, U64_MAX, 2 };
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -ERANGE,
	       "post_rdma_write(offset + length overflows)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_x, 0, 16 };
	expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -EXDEV,
	       "post_rdma_write(LMR of another PZ)");
	if (b->lmr_sp) {
		char n[96];

		t1 = (struct rkdapl_lmr_triplet){ b->lmr_sp, 0, (u64)(8 * maxiov + 1) * PAGE_SIZE };
		rt.length = 0;
		snprintf(n, sizeof(n), "post_rdma_write(%u page segments, > 8 x max_iov)",
			 8 * maxiov + 1);
		expect(rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, c, 0), -EMSGSIZE, n);
		expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0), -EMSGSIZE,
		       "post_rdma_read(> 8 x max_iov page segments)");
	} else {
		tap_skip("post_rdma_write(> 8 x max_iov segments) -> -EMSGSIZE", "no sparse buffer");
	}
	rt.length = 16;
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_ro, 0, 16 };
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0), -EACCES,
	       "post_rdma_read(LMR without local write)");
	t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, NULL, c, 0), -EINVAL,
	       "post_rdma_read(NULL remote)");
	rt.length = 15;
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 0), -EINVAL,
	       "post_rdma_read(remote length != local total)");
	rt.length = 16;
	expect(rkdapl_post_rdma_read(b->c->ep, &t1, 1, &rt, c, 8), -EINVAL,
	       "post_rdma_read(flags 8)");

	/* --- rmr_bind --- */
#define BIND(rmr, lmr, off, len, priv) \
	rkdapl_rmr_bind(rmr, lmr, off, len, priv, b->s->ep, next_cookie(b->s), &rkey, &addr)
	expect(rkdapl_rmr_bind(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ, b->s->ep, 1,
			       NULL, &addr), -EINVAL, "rmr_bind(NULL rkey)");
	expect(rkdapl_rmr_bind(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ, b->s->ep, 1,
			       &rkey, NULL), -EINVAL, "rmr_bind(NULL address)");
	expect(BIND(b->rmr, b->lmr_a, 0, 0, RKDAPL_MEM_REMOTE_READ), -EINVAL,
	       "rmr_bind(length 0)");
	expect(BIND(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_LOCAL_WRITE),
	       -EINVAL, "rmr_bind(privileges include LOCAL_WRITE)");
	expect(BIND(b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ | (1 << 5)), -EINVAL,
	       "rmr_bind(unknown privilege bit)");
	expect(BIND(b->rmr, b->lmr_a, 1, BUFSZ, RKDAPL_MEM_REMOTE_READ), -ERANGE,
	       "rmr_bind(range leaves the LMR)");
	expect(BIND(b->rmr, b->lmr_a, U64_MAX - 1, 4, RKDAPL_MEM_REMOTE_READ), -ERANGE,
	       "rmr_bind(offset + length overflows)");
	expect(BIND(b->rmr, b->lmr_lw, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EACCES,
	       "rmr_bind(remote read of an LMR without it)");
	expect(BIND(b->rmr, b->lmr_rd, 0, 4096, RKDAPL_MEM_REMOTE_WRITE), -EACCES,
	       "rmr_bind(remote write of an LMR without it)");
	expect(BIND(b->rmr, b->lmr_x, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EXDEV,
	       "rmr_bind(LMR of another PZ)");
	expect(BIND(b->rmr_x, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EXDEV,
	       "rmr_bind(RMR of another PZ)");
	if (b->lmr_sp) {
		char n[96];

		snprintf(n, sizeof(n), "rmr_bind(%u pages, max_rmr_pages %u)", maxpg + 1, maxpg);
		expect(BIND(b->rmr, b->lmr_sp, 0, (u64)(maxpg + 1) * PAGE_SIZE,
			    RKDAPL_MEM_REMOTE_WRITE), -E2BIG, n);
		r = grant(b, b->rmr, b->lmr_sp, 0, (u64)maxpg * PAGE_SIZE, RKDAPL_MEM_REMOTE_WRITE,
			  &rt, why);
		snprintf(n, sizeof(n), "rmr_bind(exactly max_rmr_pages = %u pages) and completion",
			 maxpg);
		tap(!r, n, "%s", why);
		if (!r) {
			c = next_cookie(b->s);
			r = rkdapl_rmr_unbind(b->rmr, b->s->ep, c);
			if (!r)
				r = dto_expect(b->s, c, RKDAPL_DTO_RMR_UNBIND, -1, why);
			else
				snprintf(why, WHY, "rmr_unbind = %d %s", r, ename(r));
			tap(!r, "rmr_unbind of it and completion", "%s", why);
		}
	} else {
		tap_skip("rmr_bind(max_rmr_pages + 1 pages) -> -E2BIG", "no sparse buffer");
	}

	/* --- grants over linear-map (kmalloc) memory --- */
	r = grant(b, b->rmr, b->lmr_k, 0, 4096, RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (tap(!r, "rmr_bind over kmalloc memory (4096 bytes) and completion", "%s", why)) {
		c = next_cookie(b->s);
		r = rkdapl_rmr_unbind(b->rmr, b->s->ep, c);
		if (!r)
			r = dto_expect(b->s, c, RKDAPL_DTO_RMR_UNBIND, -1, why);
		else
			snprintf(why, WHY, "rmr_unbind = %d %s", r, ename(r));
		tap(!r, "rmr_unbind of it and completion", "%s", why);
	}

	/* --- a grant (vmalloc memory): EBUSY, data within it, unbind --- */
	r = rkdapl_lmr_create(b->pz, b->bufa, BUFSZ, ALL_PRIV, &lmr_t);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &rmr_t);
	if (!r)
		r = grant(b, rmr_t, lmr_t, 0, 4096,
			  RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	else
		snprintf(why, WHY, "lmr/rmr_create = %d %s", r, ename(r));
	if (tap(!r, "rmr_bind(4096 bytes, read + write) and completion", "%s", why)) {
		expect(BIND(rmr_t, lmr_t, 0, 4096, RKDAPL_MEM_REMOTE_READ), -EBUSY,
		       "rmr_bind(already bound RMR)");
		r = rkdapl_lmr_free(lmr_t);
		expect(r, -EBUSY, "lmr_free(LMR under a bound RMR)");
		if (!r)
			lmr_t = NULL;	/* freed after all: do not free it again below */
		/* Write 4096 bytes into the grant, read them back. */
		pat_fill(b->bufb, 0, 4096, 0x1111);
		pat_fill(b->bufa, 0, 4096 + GUARD, 0x2222);
		r = rdma_status(b, true, 4096, rt, &status, why);
		bad = pat_check(b->bufa, 0, 4096, 0x1111);
		if (bad < 0)
			bad = pat_check(b->bufa, 4096, GUARD, 0x2222);
		tap(!r && status == RKDAPL_DTO_SUCCESS && bad < 0,
		    "rdma_write of 4096 bytes within a grant lands", "%s, bad byte %lld", why, bad);
		pat_fill(b->bufa, 0, 4096, 0x3333);
		r = rdma_status(b, false, 4096, rt, &status, why);
		bad = pat_check(b->bufb, 0, 4096, 0x3333);
		tap(!r && status == RKDAPL_DTO_SUCCESS && bad < 0,
		    "rdma_read of 4096 bytes within a grant", "%s, bad byte %lld", why, bad);
		c = next_cookie(b->s);
		r = rkdapl_rmr_unbind(rmr_t, b->s->ep, c);
		if (!r)
			r = dto_expect(b->s, c, RKDAPL_DTO_RMR_UNBIND, -1, why);
		else
			snprintf(why, WHY, "rmr_unbind = %d %s", r, ename(r));
		tap(!r, "rmr_unbind and completion", "%s", why);
		expect(rkdapl_rmr_unbind(rmr_t, b->s->ep, next_cookie(b->s)), -EINVAL,
		       "rmr_unbind(unbound RMR)");
		if (lmr_t) {
			expect(rkdapl_lmr_free(lmr_t), 0, "lmr_free(LMR after its RMR was unbound)");
			lmr_t = NULL;
		} else {
			tap_skip("lmr_free(LMR after its RMR was unbound) -> 0",
				 "the LMR was freed while bound (see the -EBUSY test)");
		}
	}

	/* --- a read-only grant refuses a write (breaks the connection) --- */
	r = grant(b, b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_READ, &rt, why);
	if (tap(!r, "rmr_bind(4096 bytes, read only) and completion", "%s", why)) {
		r = rdma_status(b, false, 64, rt, &status, why);
		tap(!r && status == RKDAPL_DTO_SUCCESS, "rdma_read of a read-only grant", "%s", why);
		r = rdma_status(b, true, 64, rt, &status, why);
		tap(!r && status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
		    "rdma_write to a read-only grant -> REMOTE_ACCESS_ERROR", "%s", why);
	}
	pair_close(b);
	/* The RMR's grant went with the connection's QP; unbinding needs a connection now. */
	r = rkdapl_rmr_free(b->rmr);
	b->rmr = NULL;
	if (!r)
		r = rkdapl_rmr_create(b->pz, &b->rmr);
	tap(!r, "rmr_free of a bound RMR, rmr_create again", "%d %s", r, ename(r));

	/* --- a grant is bounded: a write past its end fails --- */
	r = pair_connect(b, why);
	if (!r)
		r = grant(b, b->rmr, b->lmr_a, 0, 4096,
			  RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (tap(!r && b->rmr, "new connection and a 4096-byte grant", "%s", why)) {
		r = rdma_status(b, true, 8192, rt, &status, why);
		tap(!r && status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
		    "rdma_write of 8192 bytes to a 4096-byte grant -> REMOTE_ACCESS_ERROR", "%s",
		    why);
	}
	pair_close(b);
	r = rkdapl_rmr_free(b->rmr);
	b->rmr = NULL;
	if (!r)
		r = rkdapl_rmr_create(b->pz, &b->rmr);

	/*
	 * --- a DTO split into work requests reports the first one's error ---
	 * A write from 2 x max_iov pages that never meet (so no two SGEs merge) takes two work
	 * requests; rkdapl signals only the second. The first overruns a 4096-byte grant: its
	 * error completion must set the DTO's status, not the flush of the second after it.
	 */
	if (!r) {
		u32 npages = 2 * maxiov;
		struct sparse big = {};
		struct rkdapl_lmr *lmr_big = NULL;

		r = sparse_alloc(&big, npages);
		if (!r)
			r = rkdapl_lmr_create(b->pz, big.addr, (u64)npages * PAGE_SIZE,
					      RKDAPL_MEM_LOCAL_WRITE, &lmr_big);
		if (!r)
			r = pair_connect(b, why);
		else
			snprintf(why, WHY, "LMR of %u sparse pages: %d %s", npages, r, ename(r));
		if (!r)
			r = grant(b, b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
		if (tap(!r, "new connection, a 4096-byte grant, an LMR of 2 x max_iov sparse pages",
			"%s", why)) {
			struct rkdapl_lmr_triplet t = { lmr_big, 0, (u64)npages * PAGE_SIZE };
			struct rkdapl_event ev = {};
			u64 c = next_cookie(b->c);

			rt.length = t.length;
			r = rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
			if (r)
				snprintf(why, WHY, "post_rdma_write = %d %s", r, ename(r));
			else
				r = wait_cookie(b->c, c, &ev);
			if (!r)
				snprintf(why, WHY, "completion status %d (%s), op %u", ev.status,
					 stname(ev.status), ev.op);
			tap(!r && ev.status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
			    "rdma_write split into 2 work requests, the first outside the grant -> REMOTE_ACCESS_ERROR (not FLUSHED), one event",
			    "%s", why);
			/* one event per DTO: nothing more for that cookie (flushed RECVs may come) */
			if (!r) {
				int dup = 0;

				msleep(50);
				while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
					dup += ev.cookie == c;
				tap(!dup, "... and no second event for it", "%d more", dup);
			} else {
				tap_skip("... and no second event for it", "no first event");
			}
		}
		pair_close(b);
		if (lmr_big)
			expect(rkdapl_lmr_free(lmr_big), 0, "lmr_free(the split write's LMR)");
		sparse_free(&big);
		r = rkdapl_rmr_free(b->rmr);
		b->rmr = NULL;
		if (!r)
			r = rkdapl_rmr_create(b->pz, &b->rmr);
	}

	/* --- a revoked grant fails --- */
	r = r ?: pair_connect(b, why);
	if (!r)
		r = grant(b, b->rmr, b->lmr_a, 0, 4096, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!r) {
		c = next_cookie(b->s);
		r = rkdapl_rmr_unbind(b->rmr, b->s->ep, c);
		if (!r)
			r = dto_expect(b->s, c, RKDAPL_DTO_RMR_UNBIND, -1, why);
	}
	if (tap(!r, "new connection, a grant, unbound again", "%s", why)) {
		r = rdma_status(b, true, 64, rt, &status, why);
		tap(!r && status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
		    "rdma_write with the rkey of an unbound RMR -> REMOTE_ACCESS_ERROR", "%s", why);
	}
	pair_close(b);

	/* --- graceful disconnect: events, flushed RECVs, state, ENOTCONN --- */
	r = pair_connect(b, why);
	if (tap(!r, "new connection for disconnect tests", "%s", why)) {
		u64 cs, cc;

		t1 = (struct rkdapl_lmr_triplet){ b->lmr_a, 0, 64 };
		cs = next_cookie(b->s);
		expect(rkdapl_post_recv(b->s->ep, &t1, 1, cs, 0), 0, "post_recv on the passive side");
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
		cc = next_cookie(b->c);
		expect(rkdapl_post_recv(b->c->ep, &t1, 1, cc, 0), 0, "post_recv on the active side");
		expect(rkdapl_ep_disconnect(b->c->ep), 0, "ep_disconnect(connected EP)");
		r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
				timeout_ms, &ev);
		tap(!r, "DISCONNECTED on the disconnecting side", "%s, event %u (%s)", ename(r),
		    ev.type, evname(ev.type));
		r = conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_DISCONNECTED,
				timeout_ms, &ev);
		tap(!r, "DISCONNECTED on the peer", "%s, event %u (%s)", ename(r), ev.type,
		    evname(ev.type));
		r = wait_cookie(b->c, cc, &ev);
		tap(!r && ev.status == RKDAPL_DTO_FLUSHED && ev.op == RKDAPL_DTO_RECV,
		    "RECV posted on the disconnecting EP completes FLUSHED",
		    "%s, status %d (%s), op %u", ename(r), ev.status, stname(ev.status), ev.op);
		r = rkdapl_ep_get_state(b->c->ep, &st);
		tap(!r && st == RKDAPL_EP_STATE_DISCONNECTED,
		    "ep_get_state after disconnect is DISCONNECTED", "returned %d, state %u", r, st);
		expect(rkdapl_ep_disconnect(b->c->ep), -ENOTCONN, "ep_disconnect(disconnected EP)");
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 16 };
		expect(rkdapl_post_send(b->c->ep, &t1, 1, next_cookie(b->c), 0), -ENOTCONN,
		       "post_send(disconnected EP)");
		expect(rkdapl_ep_connect(b->c->ep, (struct sockaddr *)&b->self, 1000, NULL, 0),
		       -EISCONN, "ep_connect(disconnected EP)");
		/* The peer's RECV completes FLUSHED by the time ep_free() returns, at the latest. */
		expect(rkdapl_ep_free(b->s->ep), 0, "ep_free(peer EP with a RECV posted)");
		b->s->ep = NULL;
		r = wait_cookie(b->s, cs, &ev);
		tap(!r && ev.status == RKDAPL_DTO_FLUSHED && ev.op == RKDAPL_DTO_RECV,
		    "RECV posted on the peer completes FLUSHED (disconnect or ep_free)",
		    "%s, status %d (%s), op %u", ename(r), ev.status, stname(ev.status), ev.op);
	}
	pair_close(b);

	/* --- a full EVD: lost events are counted and reported first --- */
	{
		struct rkdapl_evd *dto = b->c->dto_evd, *small = NULL;
		int kept = 0, posted = 0, first = 0;
		u64 lost = 0;

		r = rkdapl_evd_create(b->ia, 2, &small);
		if (!r) {
			b->c->dto_evd = small;
			r = pair_connect(b, why);
		} else {
			snprintf(why, WHY, "evd_create(qlen 2) = %d %s", r, ename(r));
		}
		if (tap(!r, "connection whose DTO EVD holds 2 events", "%s", why)) {
			for (i = 0; i < 5; i++) {
				t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 64 * i, 64 };
				if (!rkdapl_post_recv(b->c->ep, &t1, 1, next_cookie(b->c), 0))
					posted++;
			}
			/* ep_free() flushes the 5 RECVs into the 2-entry EVD. */
			r = rkdapl_ep_free(b->c->ep);
			b->c->ep = NULL;
			for (i = 0; rkdapl_evd_dequeue(small, &ev) == 0 && i < 100; i++) {
				if (ev.type == RKDAPL_ASYNC_EVD_OVERFLOW) {
					if (!i && ev.status == -EOVERFLOW)
						first = 1;
					lost += ev.transferred_length;
				} else if (ev.type == RKDAPL_DTO_COMPLETION_EVENT) {
					kept++;
				}
			}
			tap(posted == 5 && !r && first && lost >= 1 && kept + lost == 5,
			    "EVD overflow: OVERFLOW event first (-EOVERFLOW), lost + kept = 5 flushed RECVs",
			    "posted %d, ep_free %d, overflow first %d, lost %llu, kept %d", posted, r,
			    first, lost, kept);
		}
		pair_close(b);
		b->c->dto_evd = dto;
		if (small)
			expect(rkdapl_evd_free(small), 0, "evd_free of the overflowed EVD");
	}

	/* --- teardown with work in flight: exactly one completion per posted work request --- */
	r = pair_connect(b, why);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &rmr_f);
	if (!r)
		r = grant(b, rmr_f, b->lmr_a, 0, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (tap(!r, "new connection and grant for the teardown-in-flight test", "%s", why)) {
		enum { NRECV = 8, NWRITE = 24 };
		u64 c0 = 0, s0 = 0, ck;
		u8 seen[NRECV + NWRITE] = {}, sseen[NRECV] = {};
		int posted = 0, sposted = 0, nbad = 0, dup = 0, other = 0, done = 0, flushed = 0;

		/* Cookies come from one counter: each side's block of cookies is contiguous. */
		for (i = 0; i < NRECV; i++) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 64 * i, 64 };
			ck = next_cookie(b->c);
			c0 = c0 ?: ck;
			posted += !rkdapl_post_recv(b->c->ep, &t1, 1, ck, 0);
		}
		for (i = 0; i < NWRITE; i++) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, BUFSZ };
			posted += !rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rt, next_cookie(b->c), 0);
		}
		for (i = 0; i < NRECV; i++) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_a, 64 * i, 64 };
			ck = next_cookie(b->s);
			s0 = s0 ?: ck;
			sposted += !rkdapl_post_recv(b->s->ep, &t1, 1, ck, 0);
		}
		/* Free both EPs at once: rkdapl drains each QP before it destroys it. */
		r = rkdapl_ep_free(b->c->ep);
		b->c->ep = NULL;
		expect(r, 0, "ep_free(EP with RDMA WRITEs and RECVs in flight)");
		expect(rkdapl_ep_free(b->s->ep), 0, "ep_free(peer EP with RECVs posted)");
		b->s->ep = NULL;
		while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev)) {
			if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.cookie < c0 ||
			    ev.cookie >= c0 + NRECV + NWRITE) {
				other++;
				continue;
			}
			dup += seen[ev.cookie - c0]++ > 0;
			nbad += ev.status != RKDAPL_DTO_SUCCESS && ev.status != RKDAPL_DTO_FLUSHED;
			flushed += ev.status == RKDAPL_DTO_FLUSHED;
			done++;
		}
		tap(posted == NRECV + NWRITE && done == posted && !dup && !nbad && !other,
		    "teardown in flight: ep_free with 24 RDMA WRITEs and 8 RECVs posted: each completes exactly once, SUCCESS or FLUSHED",
		    "posted %d, completions %d (%d flushed), duplicates %d, bad status %d, other events %d",
		    posted, done, flushed, dup, nbad, other);
		done = dup = nbad = other = 0;
		while (!rkdapl_evd_dequeue(b->s->dto_evd, &ev)) {
			if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.cookie < s0 ||
			    ev.cookie >= s0 + NRECV) {
				other++;
				continue;
			}
			dup += sseen[ev.cookie - s0]++ > 0;
			nbad += ev.status != RKDAPL_DTO_FLUSHED;
			done++;
		}
		tap(sposted == NRECV && done == sposted && !dup && !nbad && !other,
		    "teardown in flight: the peer's 8 RECVs each complete exactly once, FLUSHED",
		    "posted %d, completions %d, duplicates %d, not FLUSHED %d, other events %d",
		    sposted, done, dup, nbad, other);
	}
	pair_close(b);
	if (rmr_f) {
		expect(rkdapl_rmr_free(rmr_f), 0, "rmr_free of the teardown test's grant");
		rmr_f = NULL;
	}

	/*
	 * --- selective signalling (RKDAPL_COMPLETION_SUPPRESS): suppressed DTOs report no
	 * event, their data arrives, their slots come back through later completions, a failed
	 * one still reports, and ep_free releases the LMRs of those still outstanding ---
	 */
	r = pair_connect(b, why);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &rmr_f);
	if (!r)
		r = grant(b, rmr_f, b->lmr_a, 0, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (tap(!r, "new connection and grant for the selective-signalling test", "%s", why)) {
		enum { CHUNK = 64, N = BUFSZ / CHUNK };
		struct rkdapl_rmr_triplet rc = rt;
		struct rkdapl_lmr *lmr_s = NULL;
		int posted = 0, nospc = 0, extra = 0;
		s64 off;

		pat_fill(b->bufb, 0, BUFSZ, 0x5e1ec7);
		rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, BUFSZ);
		memset(b->bufa, 0, BUFSZ);
		rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, BUFSZ);
		/* 256 suppressed WRITEs on an EP of 64 DTO slots: they must give slots back */
		r = 0;
		rc.length = CHUNK;
		while (!r && posted < N) {
			t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, posted * CHUNK, CHUNK };
			rc.address = rt.address + posted * CHUNK;
			r = post_write_wait(b->c->ep, &t1, &rc, next_cookie(b->c),
					    RKDAPL_COMPLETION_SUPPRESS, &nospc);
			posted += !r;
		}
		tap(posted == N, "selective signalling: 256 suppressed RDMA WRITEs post on an EP of 64 DTOs",
		    "posted %d, last error %d %s, -ENOSPC waits %d", posted, r, ename(r), nospc);
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, CHUNK };
		rc.address = rt.address;
		c = next_cookie(b->c);
		r = post_write_wait(b->c->ep, &t1, &rc, c, 0, &nospc);
		r = r ?: wait_cookie(b->c, c, &ev);
		msleep(100);
		while (!rkdapl_evd_dequeue(b->c->dto_evd, &ev))
			extra++;
		tap(!r && ev.status == RKDAPL_DTO_SUCCESS && !b->c->nstash && !extra,
		    "selective signalling: a signalled WRITE after them completes; no suppressed one reports an event",
		    "%d %s, status %d (%s), suppressed events %d", r, ename(r), ev.status,
		    stname(ev.status), b->c->nstash + extra);
		b->c->nstash = 0;
		rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, BUFSZ);
		off = pat_check(b->bufa, 0, BUFSZ, 0x5e1ec7);
		tap(off < 0, "selective signalling: the data of every suppressed WRITE arrived",
		    "first wrong byte at %lld", off);
		/* outside the grant: a suppressed DTO that fails reports its event */
		t1 = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, CHUNK };
		rc.address = rt.address + BUFSZ;
		c = next_cookie(b->c);
		r = post_write_wait(b->c->ep, &t1, &rc, c, RKDAPL_COMPLETION_SUPPRESS, &nospc);
		r = r ?: wait_cookie(b->c, c, &ev);
		tap(!r && ev.status == RKDAPL_DTO_REMOTE_ACCESS_ERROR,
		    "selective signalling: a suppressed WRITE outside the grant reports REMOTE_ACCESS_ERROR",
		    "%d %s, status %d (%s)", r, ename(r), ev.status, stname(ev.status));
		pair_close(b);
		/* suppressed DTOs still outstanding at ep_free: their LMR is released */
		r = rkdapl_rmr_free(rmr_f);
		rmr_f = NULL;
		r = r ?: pair_connect(b, why);
		r = r ?: rkdapl_rmr_create(b->pz, &rmr_f);
		r = r ?: grant(b, rmr_f, b->lmr_a, 0, BUFSZ, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
		r = r ?: rkdapl_lmr_create(b->pz, b->bufb, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &lmr_s);
		posted = 0;
		for (i = 0; !r && i < 8; i++) {
			t1 = (struct rkdapl_lmr_triplet){ lmr_s, i * CHUNK, CHUNK };
			rc.address = rt.address + i * CHUNK;
			posted += !rkdapl_post_rdma_write(b->c->ep, &t1, 1, &rc, next_cookie(b->c),
							  RKDAPL_COMPLETION_SUPPRESS);
		}
		pair_close(b);
		if (lmr_s) {
			r = rkdapl_lmr_free(lmr_s);
			tap(posted == 8 && !r,
			    "selective signalling: ep_free with 8 suppressed WRITEs outstanding releases their LMR",
			    "posted %d, lmr_free = %d %s", posted, r, ename(r));
		} else {
			tap(false, "selective signalling: ep_free with 8 suppressed WRITEs outstanding releases their LMR",
			    "setup: %d %s %s", r, ename(r), why);
		}
	}
	pair_close(b);
	if (rmr_f) {
		expect(rkdapl_rmr_free(rmr_f), 0, "rmr_free of the selective-signalling test's grant");
		rmr_f = NULL;
	}

	dto_forms(b);
	upcall_tests(b);
	async_evd_tests(b);
	lmr_kinds(b);
	rnr_tests(b);
	evd_intr_test(b);
	rd_negotiation_test(b);

	/* --- nobody listening --- */
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &c2);
	if (!r) {
		struct sockaddr_in other = b->self;

		other.sin_port = htons(port + 2);
		r = rkdapl_ep_connect(c2, (struct sockaddr *)&other, 5000, NULL, 0);
		if (!r)
			r = conn_expect(b->c->conn_evd, c2, RKDAPL_CONNECTION_EVENT_PEER_REJECTED,
					timeout_ms, &ev);
		tap(!r && ev.status == 8, "ep_connect to a port without PSP -> PEER_REJECTED, status 8",
		    "%s, event %u (%s) status %d", ename(r), ev.type, evname(ev.type), ev.status);
		rkdapl_ep_free(c2);
		c2 = NULL;
	}

out:
	pair_close(b);
	if (rmr_t)
		rkdapl_rmr_free(rmr_t);
	if (lmr_t)
		rkdapl_lmr_free(lmr_t);
	kfree(tv);
}

/* Frees what badarg_connected() created (the bctx, not the sides, is checked at the end). */
static int badarg_connected_free(struct bctx *b)
{
	int bad = 0;

#define F(call, h) do { if (h && call(h)) bad++; h = NULL; } while (0)
	F(rkdapl_psp_free, b->psp);
	F(rkdapl_rmr_free, b->rmr);
	F(rkdapl_rmr_free, b->rmr_x);
	F(rkdapl_lmr_free, b->lmr_a);
	F(rkdapl_lmr_free, b->lmr_b);
	F(rkdapl_lmr_free, b->lmr_k);
	F(rkdapl_lmr_free, b->lmr_ro);
	F(rkdapl_lmr_free, b->lmr_lw);
	F(rkdapl_lmr_free, b->lmr_rd);
	F(rkdapl_lmr_free, b->lmr_x);
	F(rkdapl_lmr_free, b->lmr_sp);
	if (b->c) {
		F(rkdapl_evd_free, b->c->dto_evd);
		F(rkdapl_evd_free, b->c->conn_evd);
	}
	if (b->s) {
		F(rkdapl_evd_free, b->s->dto_evd);
		F(rkdapl_evd_free, b->s->conn_evd);
	}
#undef F
	if (!bad) {
		sparse_free(&b->sp);
		vfree(b->bufa);
		kfree(b->bufb);
		kfree(b->bufx);
	}
	kfree(b->c);
	kfree(b->s);
	return bad;
}

/* Opening an IA by address and by network device; port attributes. */
static void ia_open_forms(struct bctx *b)
{
	struct rkdapl_ia_attr attr = {};
	struct rkdapl_port_attr pa;
	struct rkdapl_ia *ia = NULL;
	struct net_device *nd = NULL;
	struct sockaddr_in sin, other;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int r;

	if (parse_peer(&sin, 7777)) {
		tap(false, "ia_open_addr(this guest's address)", "no address: peer=%s", peer);
		return;
	}
	r = rkdapl_ia_open_addr((struct sockaddr *)&sin, &ia);
	r = r ?: rkdapl_ia_query(ia, &attr);
	tap(!r && !strcmp(attr.name, dev), "ia_open_addr(this guest's IPv4 address, any port) opens its device",
	    "%d %s, device '%.16s', want %s", r, ename(r), attr.name, dev);
	if (ia)
		expect(rkdapl_ia_close(ia), 0, "ia_close of the IA opened by address");
	ia = NULL;
	other = sin;
	other.sin_addr.s_addr = htonl(0x0afffffe);	/* 10.255.255.254: not on this guest */
	expect(rkdapl_ia_open_addr((struct sockaddr *)&other, &ia), -EADDRNOTAVAIL,
	       "ia_open_addr(an address no device has)");
	expect(rkdapl_ia_open_addr((struct sockaddr *)&sun, &ia), -EAFNOSUPPORT,
	       "ia_open_addr(AF_UNIX)");
	expect(rkdapl_ia_open_addr(NULL, &ia), -EINVAL, "ia_open_addr(NULL addr)");
	expect(rkdapl_ia_open_addr((struct sockaddr *)&sin, NULL), -EINVAL, "ia_open_addr(NULL ia)");

	nd = ip_dev_find(&init_net, sin.sin_addr.s_addr);
	if (!tap(nd != NULL, "the network device of this guest's address", "ip_dev_find failed"))
		return;
	memset(&attr, 0, sizeof(attr));
	r = rkdapl_ia_open_netdev(nd, &ia);
	r = r ?: rkdapl_ia_query(ia, &attr);
	tap(!r && !strcmp(attr.name, dev), "ia_open_netdev(the guest's NIC) opens its device",
	    "%d %s, %s -> '%.16s', want %s", r, ename(r), nd->name, attr.name, dev);
	if (ia) {
		memset(&pa, 0xa5, sizeof(pa));
		r = rkdapl_ia_query_port(ia, 1, &pa);
		tap(!r && pa.port == 1 && pa.port_count == 1 && pa.state == RKDAPL_PORT_ACTIVE &&
		    pa.link_layer == 2 && is_power_of_2(pa.active_mtu) && pa.active_mtu >= 256 &&
		    pa.active_mtu <= pa.max_mtu && pa.max_mtu <= 4096 &&
		    pa.active_mtu <= nd->mtu && 2 * pa.active_mtu > nd->mtu - 100 &&
		    pa.max_msg_size >= BIGBUF,
		    "ia_query_port(1): ACTIVE, Ethernet, the IB MTU that fits the NIC's MTU, max message >= 1 MiB",
		    "%d %s: port %u of %u, state %u phys %u, mtu %u (max %u; %s mtu %u), max_msg_size %u, link layer %u",
		    r, ename(r), pa.port, pa.port_count, pa.state, pa.phys_state, pa.active_mtu,
		    pa.max_mtu, nd->name, nd->mtu, pa.max_msg_size, pa.link_layer);
		pr_info("rkdapl_test: # %s port 1: state %u, active_mtu %u, max_mtu %u, max_msg_size %u, link_layer %u\n",
			dev, pa.state, pa.active_mtu, pa.max_mtu, pa.max_msg_size, pa.link_layer);
		expect(rkdapl_ia_query_port(ia, 0, &pa), -EINVAL, "ia_query_port(port 0)");
		expect(rkdapl_ia_query_port(ia, 2, &pa), -EINVAL, "ia_query_port(port 2 of 1)");
		expect(rkdapl_ia_query_port(ia, 1, NULL), -EINVAL, "ia_query_port(NULL attr)");
		expect(rkdapl_ia_query_port(NULL, 1, &pa), -EINVAL, "ia_query_port(NULL ia)");
		expect(rkdapl_ia_query_port(b->foreign, 1, &pa), -EINVAL,
		       "ia_query_port(foreign object)");
		expect(rkdapl_ia_close(ia), 0, "ia_close of the IA opened by network device");
		ia = NULL;
	}
	dev_put(nd);
	nd = dev_get_by_name(&init_net, "lo");
	if (nd) {
		expect(rkdapl_ia_open_netdev(nd, &ia), -ENODEV,
		       "ia_open_netdev(lo, no RDMA device on it)");
		dev_put(nd);
	}
	expect(rkdapl_ia_open_netdev(NULL, &ia), -EINVAL, "ia_open_netdev(NULL)");
	if (ia)
		rkdapl_ia_close(ia);
}

static int badarg_run(void)
{
	struct bctx *b = kzalloc(sizeof(*b), GFP_KERNEL);
	struct rkdapl_ia *ia2 = NULL;
	struct rkdapl_pz *pz2 = NULL, *pzt = NULL;
	struct rkdapl_lmr *lmr = NULL, *lmrt = NULL, *lmr_v = NULL;
	struct rkdapl_rmr *rmr = NULL, *rmrt = NULL;
	struct rkdapl_evd *evdt = NULL;
	struct rkdapl_ep *ep = NULL, *ept = NULL;
	struct rkdapl_psp *pspt = NULL;
	struct rkdapl_ia_attr attr;
	struct rkdapl_ep_attr ea;
	struct rkdapl_lmr_triplet t = { NULL, 0, 16 };
	struct rkdapl_rmr_triplet rt = { 0x10000, 0x1234, 0, 16 };
	struct rkdapl_event ev = {};
	struct sockaddr_un sun;
	struct sockaddr_in sin;
	char big[RKDAPL_MAX_PRIVATE_DATA + 1];
	void *buf = NULL, *vbuf = NULL, *f;
	unsigned long t0;
	u32 rkey, st = ~0u;
	u64 addr;
	int r, bad;

	if (!b || !(b->foreign = kzalloc(512, GFP_KERNEL))) {
		tap(false, "badarg setup", "out of memory");
		goto free_b;
	}
	f = b->foreign;	/* a random kernel object passed as a handle */
	buf = kzalloc(BUFSZ, GFP_KERNEL);
	vbuf = vzalloc(BUFSZ);
	memset(big, 'x', sizeof(big));

	/* --- setup --- */
	r = rkdapl_ia_open(dev, &b->ia);
	if (!r)
		r = rkdapl_pz_create(b->ia, &b->pz);
	if (!r)
		r = rkdapl_pz_create(b->ia, &b->pz2);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->evd);
	if (!r)
		r = rkdapl_evd_create(b->ia, 64, &b->psp_evd);
	if (!r && buf && vbuf)
		r = rkdapl_lmr_create(b->pz, buf, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &lmr);
	if (!r)
		r = rkdapl_rmr_create(b->pz, &rmr);
	if (!r)
		r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ep);
	if (!tap(!r && buf && vbuf, "badarg setup (ia_open, pz, evd, lmr, rmr, ep)", "%d %s", r,
		 ename(r)))
		goto teardown;

	/* --- ia_open / ia_close / ia_query --- */
	expect(rkdapl_ia_open(NULL, &ia2), -EINVAL, "ia_open(NULL name)");
	expect(rkdapl_ia_open(dev, NULL), -EINVAL, "ia_open(NULL ia)");
	expect(rkdapl_ia_open("nosuchdev", &ia2), -ENODEV, "ia_open(\"nosuchdev\")");
	expect(rkdapl_ia_open("", &ia2), -ENODEV, "ia_open(\"\")");
	memset(&attr, 0xa5, sizeof(attr));
	r = rkdapl_ia_query(b->ia, &attr);
	tap(!r && !strcmp(attr.name, dev) && attr.max_private_data == RKDAPL_MAX_PRIVATE_DATA &&
	    attr.reserved == 0 && attr.max_iov >= 1 && attr.max_rmr_pages >= 1 &&
	    attr.max_evd_qlen >= 1 && attr.max_dtos >= 1 && attr.max_mr_size >= BIGBUF,
	    "ia_query: name, limits, reserved 0",
	    "returned %d, name '%.8s', max_iov %u, max_rmr_pages %u, max_private_data %u, reserved %u",
	    r, attr.name, attr.max_iov, attr.max_rmr_pages, attr.max_private_data, attr.reserved);
	b->attr = attr;
	pr_info("rkdapl_test: # %s: max_mr_size %llu max_dtos %u max_iov %u rd_in %u rd_out %u max_rmr_pages %u max_evd_qlen %u\n",
		attr.name, attr.max_mr_size, attr.max_dtos, attr.max_iov, attr.max_rdma_read_in,
		attr.max_rdma_read_out, attr.max_rmr_pages, attr.max_evd_qlen);
	expect(rkdapl_ia_query(NULL, &attr), -EINVAL, "ia_query(NULL ia)");
	expect(rkdapl_ia_query(b->ia, NULL), -EINVAL, "ia_query(NULL attr)");
	expect(rkdapl_ia_query(f, &attr), -EINVAL, "ia_query(foreign object)");
	expect(rkdapl_ia_query((struct rkdapl_ia *)b->pz, &attr), -EINVAL, "ia_query(PZ handle)");
	expect(rkdapl_ia_close(NULL), -EINVAL, "ia_close(NULL)");
	expect(rkdapl_ia_close(f), -EINVAL, "ia_close(foreign object)");
	ia_open_forms(b);
	expect(rkdapl_ia_close((struct rkdapl_ia *)b->evd), -EINVAL, "ia_close(EVD handle)");
	r = rkdapl_ia_open(dev, &ia2);
	if (tap(!r, "ia_open of a second IA", "%d %s", r, ename(r))) {
		/* Objects keep their IA: a PZ outlives the close of its IA handle. */
		r = rkdapl_pz_create(ia2, &pz2);
		expect(rkdapl_ia_close(ia2), 0, "ia_close");
		expect(rkdapl_ia_close(ia2), -EINVAL, "ia_close(closed IA)");
		expect(rkdapl_ia_query(ia2, &attr), -EINVAL, "ia_query(closed IA)");
		expect(rkdapl_pz_create(ia2, &pzt), -EINVAL, "pz_create(closed IA)");
		if (!r) {
			r = rkdapl_lmr_create(pz2, buf, 64, 0, &lmrt);
			if (!r)
				r = rkdapl_lmr_free(lmrt);
			tap(!r, "a PZ keeps working after its IA handle is closed", "%d %s", r,
			    ename(r));
			lmrt = NULL;
			expect(rkdapl_pz_free(pz2), 0, "pz_free of that PZ");
		}
		pz2 = NULL;
	}

	/* --- pz_create / pz_free --- */
	expect(rkdapl_pz_create(NULL, &pzt), -EINVAL, "pz_create(NULL ia)");
	expect(rkdapl_pz_create(b->ia, NULL), -EINVAL, "pz_create(NULL pz)");
	expect(rkdapl_pz_create(f, &pzt), -EINVAL, "pz_create(foreign object)");
	expect(rkdapl_pz_create((struct rkdapl_ia *)b->pz, &pzt), -EINVAL, "pz_create(PZ handle)");
	expect(rkdapl_pz_free(NULL), -EINVAL, "pz_free(NULL)");
	expect(rkdapl_pz_free(f), -EINVAL, "pz_free(foreign object)");
	expect(rkdapl_pz_free((struct rkdapl_pz *)b->ia), -EINVAL, "pz_free(IA handle)");
	r = rkdapl_pz_create(b->ia, &pzt);
	if (tap(!r, "pz_create", "%d %s", r, ename(r))) {
		expect(rkdapl_pz_free(pzt), 0, "pz_free");
		expect(rkdapl_pz_free(pzt), -EINVAL, "pz_free(freed PZ)");
	}
	pzt = NULL;

	/* --- lmr_create / lmr_free / lmr_sync_* --- */
	expect(rkdapl_lmr_create(NULL, buf, 64, 0, &lmrt), -EINVAL, "lmr_create(NULL pz)");
	expect(rkdapl_lmr_create(f, buf, 64, 0, &lmrt), -EINVAL, "lmr_create(foreign object)");
	expect(rkdapl_lmr_create((struct rkdapl_pz *)b->ia, buf, 64, 0, &lmrt), -EINVAL,
	       "lmr_create(IA handle as PZ)");
	expect(rkdapl_lmr_create(b->pz, NULL, 64, 0, &lmrt), -EINVAL, "lmr_create(NULL addr)");
	expect(rkdapl_lmr_create(b->pz, buf, 0, 0, &lmrt), -EINVAL, "lmr_create(length 0)");
	expect(rkdapl_lmr_create(b->pz, buf, 64, 0, NULL), -EINVAL, "lmr_create(NULL lmr)");
	expect(rkdapl_lmr_create(b->pz, buf, 64, 1 << 3, &lmrt), -EINVAL,
	       "lmr_create(unknown privilege 1 << 3)");
	expect(rkdapl_lmr_create(b->pz, buf, 64, 0x80000000u | RKDAPL_MEM_LOCAL_WRITE, &lmrt),
	       -EINVAL, "lmr_create(unknown privilege 1 << 31)");
	expect(rkdapl_lmr_create(b->pz, (void *)0x1000, 64, 0, &lmrt), -EFAULT,
	       "lmr_create(address 0x1000)");
	expect(rkdapl_lmr_create(b->pz, (void *)0x7fff12345000UL, 4096, 0, &lmrt), -EFAULT,
	       "lmr_create(user-space address)");
	r = rkdapl_lmr_create(b->pz, (u8 *)buf + 3, 1021, ALL_PRIV, &lmrt);
	if (tap(!r, "lmr_create(unaligned kmalloc memory, all privileges)", "%d %s", r, ename(r))) {
		expect(rkdapl_lmr_free(lmrt), 0, "lmr_free");
		expect(rkdapl_lmr_free(lmrt), -EINVAL, "lmr_free(freed LMR)");
	}
	lmrt = NULL;
	r = rkdapl_lmr_create(b->pz, vbuf, BUFSZ, RKDAPL_MEM_LOCAL_WRITE, &lmr_v);
	tap(!r, "lmr_create(vmalloc memory)", "%d %s", r, ename(r));
	expect(rkdapl_lmr_free(NULL), -EINVAL, "lmr_free(NULL)");
	expect(rkdapl_lmr_free(f), -EINVAL, "lmr_free(foreign object)");
	expect(rkdapl_lmr_free((struct rkdapl_lmr *)rmr), -EINVAL, "lmr_free(RMR handle)");
	expect(rkdapl_lmr_sync_rdma_read(NULL, 0, 1), -EINVAL, "lmr_sync_rdma_read(NULL)");
	expect(rkdapl_lmr_sync_rdma_read(f, 0, 1), -EINVAL, "lmr_sync_rdma_read(foreign object)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 0, BUFSZ + 1), -ERANGE,
	       "lmr_sync_rdma_read(length + 1)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, BUFSZ, 1), -ERANGE,
	       "lmr_sync_rdma_read(offset at the end)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 1, U64_MAX), -ERANGE,
	       "lmr_sync_rdma_read(offset + length overflows)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 0, BUFSZ), 0, "lmr_sync_rdma_read(whole LMR)");
	expect(rkdapl_lmr_sync_rdma_write(NULL, 0, 1), -EINVAL, "lmr_sync_rdma_write(NULL)");
	expect(rkdapl_lmr_sync_rdma_write(f, 0, 1), -EINVAL,
	       "lmr_sync_rdma_write(foreign object)");
	expect(rkdapl_lmr_sync_rdma_write(lmr, 1, BUFSZ), -ERANGE,
	       "lmr_sync_rdma_write(range leaves the LMR)");
	expect(rkdapl_lmr_sync_rdma_write(lmr, U64_MAX, 2), -ERANGE,
	       "lmr_sync_rdma_write(offset + length overflows)");
	expect(rkdapl_lmr_sync_rdma_write(lmr, 100, 100), 0, "lmr_sync_rdma_write(inner range)");

	/* --- rmr_create / rmr_bind / rmr_unbind / rmr_free --- */
	expect(rkdapl_rmr_create(NULL, &rmrt), -EINVAL, "rmr_create(NULL pz)");
	expect(rkdapl_rmr_create(b->pz, NULL), -EINVAL, "rmr_create(NULL rmr)");
	expect(rkdapl_rmr_create(f, &rmrt), -EINVAL, "rmr_create(foreign object)");
	expect(rkdapl_rmr_bind(NULL, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(NULL rmr)");
	expect(rkdapl_rmr_bind(f, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(foreign object as rmr)");
	expect(rkdapl_rmr_bind(rmr, NULL, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(NULL lmr)");
	expect(rkdapl_rmr_bind(rmr, f, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(foreign object as lmr)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, NULL, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(NULL ep)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, f, 1, &rkey, &addr),
	       -EINVAL, "rmr_bind(foreign object as ep)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, NULL, &addr),
	       -EINVAL, "rmr_bind(NULL rkey)");
	expect(rkdapl_rmr_bind(rmr, lmr, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey, NULL),
	       -EINVAL, "rmr_bind(NULL address)");
	r = rkdapl_lmr_create(b->pz, vbuf, BUFSZ, ALL_PRIV, &lmrt);
	if (!r) {
		expect(rkdapl_rmr_bind(rmr, lmrt, 0, 64, RKDAPL_MEM_REMOTE_READ, ep, 1, &rkey,
				       &addr), -ENOTCONN, "rmr_bind(unconnected EP)");
		expect(rkdapl_lmr_free(lmrt), 0, "lmr_free after the refused bind");
		lmrt = NULL;
	}
	expect(rkdapl_rmr_unbind(NULL, ep, 1), -EINVAL, "rmr_unbind(NULL rmr)");
	expect(rkdapl_rmr_unbind(f, ep, 1), -EINVAL, "rmr_unbind(foreign object)");
	expect(rkdapl_rmr_unbind(rmr, NULL, 1), -EINVAL, "rmr_unbind(NULL ep)");
	expect(rkdapl_rmr_unbind(rmr, ep, 1), -EINVAL, "rmr_unbind(unbound RMR)");
	expect(rkdapl_rmr_free(NULL), -EINVAL, "rmr_free(NULL)");
	expect(rkdapl_rmr_free(f), -EINVAL, "rmr_free(foreign object)");
	expect(rkdapl_rmr_free((struct rkdapl_rmr *)lmr), -EINVAL, "rmr_free(LMR handle)");
	expect(rkdapl_lmr_sync_rdma_read(lmr, 0, 1), 0, "the LMR survives rmr_free(LMR handle)");
	r = rkdapl_rmr_create(b->pz, &rmrt);
	if (tap(!r, "rmr_create", "%d %s", r, ename(r))) {
		expect(rkdapl_rmr_free(rmrt), 0, "rmr_free");
		expect(rkdapl_rmr_free(rmrt), -EINVAL, "rmr_free(freed RMR)");
	}
	rmrt = NULL;

	/* --- evd_create / evd_dequeue / evd_wait / evd_free --- */
	expect(rkdapl_evd_create(NULL, 8, &evdt), -EINVAL, "evd_create(NULL ia)");
	expect(rkdapl_evd_create(f, 8, &evdt), -EINVAL, "evd_create(foreign object)");
	expect(rkdapl_evd_create(b->ia, 8, NULL), -EINVAL, "evd_create(NULL evd)");
	expect(rkdapl_evd_create(b->ia, 0, &evdt), -EINVAL, "evd_create(qlen 0)");
	expect(rkdapl_evd_create(b->ia, 65537, &evdt), -EINVAL, "evd_create(qlen 65537)");
	expect(rkdapl_evd_create(b->ia, U32_MAX, &evdt), -EINVAL, "evd_create(qlen U32_MAX)");
	r = rkdapl_evd_create(b->ia, 65536, &evdt);
	if (expect(r, 0, "evd_create(qlen 65536, the largest)"))
		expect(rkdapl_evd_free(evdt), 0, "evd_free of it");
	evdt = NULL;
	r = rkdapl_evd_create(b->ia, 1, &evdt);
	if (expect(r, 0, "evd_create(qlen 1)")) {
		expect(rkdapl_evd_dequeue(evdt, &ev), -EAGAIN, "evd_dequeue(empty EVD)");
		t0 = jiffies;
		r = rkdapl_evd_wait(evdt, 50, &ev);
		tap(r == -ETIMEDOUT && time_after_eq(jiffies, t0 + msecs_to_jiffies(40)),
		    "evd_wait(empty EVD, 50 ms) -> -ETIMEDOUT after >= 50 ms",
		    "returned %d (%s) after %u ms", r, ename(r), jiffies_to_msecs(jiffies - t0));
		expect(rkdapl_evd_free(evdt), 0, "evd_free");
		expect(rkdapl_evd_free(evdt), -EINVAL, "evd_free(freed EVD)");
		expect(rkdapl_evd_dequeue(evdt, &ev), -EINVAL, "evd_dequeue(freed EVD)");
		expect(rkdapl_evd_wait(evdt, 10, &ev), -EINVAL, "evd_wait(freed EVD)");
	}
	evdt = NULL;
	expect(rkdapl_evd_dequeue(NULL, &ev), -EINVAL, "evd_dequeue(NULL evd)");
	expect(rkdapl_evd_dequeue(f, &ev), -EINVAL, "evd_dequeue(foreign object)");
	expect(rkdapl_evd_dequeue(b->evd, NULL), -EINVAL, "evd_dequeue(NULL event)");
	expect(rkdapl_evd_wait(NULL, 10, &ev), -EINVAL, "evd_wait(NULL evd)");
	expect(rkdapl_evd_wait(f, 10, &ev), -EINVAL, "evd_wait(foreign object)");
	expect(rkdapl_evd_wait((struct rkdapl_evd *)ep, 10, &ev), -EINVAL, "evd_wait(EP handle)");
	expect(rkdapl_evd_wait(b->evd, 10, NULL), -EINVAL, "evd_wait(NULL event)");
	expect(rkdapl_evd_free(NULL), -EINVAL, "evd_free(NULL)");
	expect(rkdapl_evd_free(f), -EINVAL, "evd_free(foreign object)");
	expect(rkdapl_evd_free((struct rkdapl_evd *)b->pz), -EINVAL, "evd_free(PZ handle)");

	/* --- ep_create / ep_connect / ep_disconnect / ep_get_state / ep_free --- */
	expect(rkdapl_ep_create(NULL, b->evd, b->evd, NULL, &ept), -EINVAL, "ep_create(NULL pz)");
	expect(rkdapl_ep_create(f, b->evd, b->evd, NULL, &ept), -EINVAL,
	       "ep_create(foreign object as pz)");
	expect(rkdapl_ep_create(b->pz, NULL, b->evd, NULL, &ept), -EINVAL,
	       "ep_create(NULL dto_evd)");
	expect(rkdapl_ep_create(b->pz, b->evd, NULL, NULL, &ept), -EINVAL,
	       "ep_create(NULL conn_evd)");
	expect(rkdapl_ep_create(b->pz, b->evd, f, NULL, &ept), -EINVAL,
	       "ep_create(foreign object as conn_evd)");
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, NULL), -EINVAL, "ep_create(NULL ep)");
	ea = (struct rkdapl_ep_attr){ .max_request_dtos = 4097 };
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, &ea, &ept), -EINVAL,
	       "ep_create(max_request_dtos 4097)");
	ea = (struct rkdapl_ep_attr){ .max_recv_dtos = 4097 };
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, &ea, &ept), -EINVAL,
	       "ep_create(max_recv_dtos 4097)");
	ea = (struct rkdapl_ep_attr){ .max_request_iov = 257 };
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, &ea, &ept), -EINVAL,
	       "ep_create(max_request_iov 257)");
	ea = (struct rkdapl_ep_attr){ .retry_count = 8 };
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, &ea, &ept), -EINVAL,
	       "ep_create(retry_count 8)");
	ea = (struct rkdapl_ep_attr){ .rnr_retry_count = 8 };
	expect(rkdapl_ep_create(b->pz, b->evd, b->evd, &ea, &ept), -EINVAL,
	       "ep_create(rnr_retry_count 8)");
	{
		/* The largest values the header and ia_query allow. */
		u32 dtos = min_t(u32, 4096, b->attr.max_dtos);
		const struct {
			struct rkdapl_ep_attr a;
			const char *what;
		} big_attrs[] = {
			{ { .max_request_dtos = dtos }, "ep_create(max_request_dtos = max_dtos)" },
			{ { .max_recv_dtos = dtos }, "ep_create(max_recv_dtos = max_dtos)" },
			{ { .max_request_iov = 256 }, "ep_create(max_request_iov 256)" },
			{ { .max_recv_iov = b->attr.max_iov }, "ep_create(max_recv_iov = max_iov)" },
			{ { .retry_count = 7, .rnr_retry_count = 7 },
			  "ep_create(retry_count 7, rnr_retry_count 7)" },
		};
		char n[96];
		int i;

		for (i = 0; i < ARRAY_SIZE(big_attrs); i++) {
			ept = NULL;
			r = rkdapl_ep_create(b->pz, b->evd, b->psp_evd, &big_attrs[i].a, &ept);
			snprintf(n, sizeof(n), "%s (max_dtos %u, max_iov %u)", big_attrs[i].what,
				 b->attr.max_dtos, b->attr.max_iov);
			if (expect(r, 0, n))
				expect(rkdapl_ep_free(ept), 0, "ep_free of it");
		}
		ept = NULL;
	}

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strscpy(sun.sun_path, "/tmp/rkdapl", sizeof(sun.sun_path));
	expect(rkdapl_ep_connect(NULL, (struct sockaddr *)&sin, 1000, NULL, 0), -EINVAL,
	       "ep_connect(NULL ep)");
	expect(rkdapl_ep_connect(f, (struct sockaddr *)&sin, 1000, NULL, 0), -EINVAL,
	       "ep_connect(foreign object)");
	expect(rkdapl_ep_connect(ep, NULL, 1000, NULL, 0), -EINVAL, "ep_connect(NULL address)");
	expect(rkdapl_ep_connect(ep, (struct sockaddr *)&sun, 1000, NULL, 0), -EAFNOSUPPORT,
	       "ep_connect(AF_UNIX address)");
	expect(rkdapl_ep_connect(ep, (struct sockaddr *)&sin, 0, NULL, 0), -EINVAL,
	       "ep_connect(timeout 0)");
	expect(rkdapl_ep_connect(ep, (struct sockaddr *)&sin, 1000, big, sizeof(big)), -EINVAL,
	       "ep_connect(57 bytes of private data)");
	r = rkdapl_ep_get_state(ep, &st);
	tap(!r && st == RKDAPL_EP_STATE_UNCONNECTED,
	    "ep_get_state: UNCONNECTED (also after the refused connects)", "returned %d, state %u",
	    r, st);
	expect(rkdapl_ep_get_state(NULL, &st), -EINVAL, "ep_get_state(NULL ep)");
	expect(rkdapl_ep_get_state(f, &st), -EINVAL, "ep_get_state(foreign object)");
	expect(rkdapl_ep_get_state(ep, NULL), -EINVAL, "ep_get_state(NULL state)");
	expect(rkdapl_ep_disconnect(NULL), -EINVAL, "ep_disconnect(NULL)");
	expect(rkdapl_ep_disconnect(f), -EINVAL, "ep_disconnect(foreign object)");
	expect(rkdapl_ep_disconnect((struct rkdapl_ep *)b->psp_evd), -EINVAL,
	       "ep_disconnect(EVD handle)");
	expect(rkdapl_ep_disconnect(ep), -ENOTCONN, "ep_disconnect(unconnected EP)");
	expect(rkdapl_ep_free(NULL), -EINVAL, "ep_free(NULL)");
	expect(rkdapl_ep_free(f), -EINVAL, "ep_free(foreign object)");
	r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ept);
	if (expect(r, 0, "ep_create(default attributes)")) {
		expect(rkdapl_ep_free(ept), 0, "ep_free");
		expect(rkdapl_ep_free(ept), -EINVAL, "ep_free(freed EP)");
		expect(rkdapl_ep_get_state(ept, &st), -EINVAL, "ep_get_state(freed EP)");
	}
	ept = NULL;

	/* --- psp_create / psp_free --- */
	expect(rkdapl_psp_create(NULL, port, 8, b->psp_evd, &pspt), -EINVAL,
	       "psp_create(NULL ia)");
	expect(rkdapl_psp_create(f, port, 8, b->psp_evd, &pspt), -EINVAL,
	       "psp_create(foreign object as ia)");
	expect(rkdapl_psp_create(b->ia, port, 8, NULL, &pspt), -EINVAL, "psp_create(NULL evd)");
	expect(rkdapl_psp_create(b->ia, port, 8, b->psp_evd, NULL), -EINVAL,
	       "psp_create(NULL psp)");
	expect(rkdapl_psp_create(b->ia, 0, 8, b->psp_evd, &pspt), -EINVAL, "psp_create(port 0)");
	expect(rkdapl_psp_create(b->ia, port, 0, b->psp_evd, &pspt), -EINVAL,
	       "psp_create(backlog 0)");
	r = rkdapl_psp_create(b->ia, port + 1, 4, b->psp_evd, &pspt);
	if (expect(r, 0, "psp_create")) {
		struct rkdapl_psp *p2 = NULL;

		expect(rkdapl_psp_create(b->ia, port + 1, 4, b->psp_evd, &p2), -EADDRINUSE,
		       "psp_create(same port again)");
		if (p2)
			rkdapl_psp_free(p2);
		expect(rkdapl_psp_free(pspt), 0, "psp_free");
		expect(rkdapl_psp_free(pspt), -EINVAL, "psp_free(freed PSP)");
		r = rkdapl_psp_create(b->ia, port + 1, 4, b->psp_evd, &pspt);
		if (expect(r, 0, "psp_create(the port is free again)"))
			rkdapl_psp_free(pspt);
	}
	pspt = NULL;
	expect(rkdapl_psp_free(NULL), -EINVAL, "psp_free(NULL)");
	expect(rkdapl_psp_free(f), -EINVAL, "psp_free(foreign object)");

	/* --- cr_accept / cr_reject without a CR --- */
	expect(rkdapl_cr_accept(NULL, ep, NULL, 0), -EINVAL, "cr_accept(NULL cr)");
	expect(rkdapl_cr_accept(f, ep, NULL, 0), -EINVAL, "cr_accept(foreign object)");
	expect(rkdapl_cr_accept((struct rkdapl_cr *)ep, ep, NULL, 0), -EINVAL,
	       "cr_accept(EP handle as cr)");
	expect(rkdapl_cr_reject(NULL, NULL, 0), -EINVAL, "cr_reject(NULL cr)");
	expect(rkdapl_cr_reject(f, NULL, 0), -EINVAL, "cr_reject(foreign object)");

	/* --- DTOs on an unconnected EP, NULL and foreign EPs --- */
	t.lmr = lmr;
	expect(rkdapl_post_send(NULL, &t, 1, 1, 0), -EINVAL, "post_send(NULL ep)");
	expect(rkdapl_post_send(f, &t, 1, 1, 0), -EINVAL, "post_send(foreign object)");
	expect(rkdapl_post_send(ep, &t, 1, 1, 0), -ENOTCONN, "post_send(unconnected EP)");
	expect(rkdapl_post_recv(NULL, &t, 1, 1, 0), -EINVAL, "post_recv(NULL ep)");
	expect(rkdapl_post_recv(f, &t, 1, 1, 0), -EINVAL, "post_recv(foreign object)");
	expect(rkdapl_post_recv(ep, &t, 1, 1, 0), -ENOTCONN, "post_recv(unconnected EP)");
	expect(rkdapl_post_rdma_write(NULL, &t, 1, &rt, 1, 0), -EINVAL, "post_rdma_write(NULL ep)");
	expect(rkdapl_post_rdma_write(f, &t, 1, &rt, 1, 0), -EINVAL,
	       "post_rdma_write(foreign object)");
	expect(rkdapl_post_rdma_write(ep, &t, 1, &rt, 1, 0), -ENOTCONN,
	       "post_rdma_write(unconnected EP)");
	expect(rkdapl_post_rdma_read(NULL, &t, 1, &rt, 1, 0), -EINVAL, "post_rdma_read(NULL ep)");
	expect(rkdapl_post_rdma_read(f, &t, 1, &rt, 1, 0), -EINVAL,
	       "post_rdma_read(foreign object)");
	expect(rkdapl_post_rdma_read(ep, &t, 1, &rt, 1, 0), -ENOTCONN,
	       "post_rdma_read(unconnected EP)");
	t.lmr = f;
	expect(rkdapl_post_send(ep, &t, 1, 1, 0), -EINVAL, "post_send(foreign object as LMR)");
	expect(rkdapl_evd_dequeue(b->evd, &ev), -EAGAIN, "no event was generated by all this");

	/* --- state-dependent errors on real loopback connections --- */
	if (parse_peer(&b->self, port) == 0)
		badarg_connected(b);
	else
		tap_skip("connected EP, CR, grant and disconnect tests",
			 "no peer= (the guest's own IPv4 address)");

teardown:
	bad = 0;
	if (ep && rkdapl_ep_free(ep))
		bad++;
	if (rmr && rkdapl_rmr_free(rmr))
		bad++;
	if (lmr && rkdapl_lmr_free(lmr))
		bad++;
	if (lmr_v && rkdapl_lmr_free(lmr_v))
		bad++;
	bad += badarg_connected_free(b);
	if (b->evd && rkdapl_evd_free(b->evd))
		bad++;
	if (b->psp_evd && rkdapl_evd_free(b->psp_evd))
		bad++;
	if (b->pz2 && rkdapl_pz_free(b->pz2))
		bad++;
	if (b->pz && rkdapl_pz_free(b->pz))
		bad++;
	if (b->ia && rkdapl_ia_close(b->ia))
		bad++;
	tap(!bad, "badarg teardown (every free returns 0)", "%d frees failed", bad);

	/* --- the provider still works --- */
	ia2 = NULL;
	pz2 = NULL;
	lmrt = NULL;
	evdt = NULL;
	r = rkdapl_ia_open(dev, &ia2);
	if (!r)
		r = rkdapl_pz_create(ia2, &pz2);
	if (!r && buf)
		r = rkdapl_lmr_create(pz2, buf, BUFSZ, ALL_PRIV, &lmrt);
	if (!r)
		r = rkdapl_evd_create(ia2, 16, &evdt);
	if (!r)
		r = rkdapl_ep_create(pz2, evdt, evdt, NULL, &ept);
	if (!r)
		r = rkdapl_ep_free(ept);
	if (!r)
		r = rkdapl_evd_free(evdt);
	if (!r)
		r = rkdapl_lmr_free(lmrt);
	if (!r)
		r = rkdapl_pz_free(pz2);
	if (!r)
		r = rkdapl_ia_close(ia2);
	tap(!r, "provider still works after the bad calls (ia, pz, lmr, evd, ep create + free)",
	    "%d %s", r, ename(r));
	if (!r && !bad) {
		kfree(buf);
		vfree(vbuf);
	}
free_b:
	if (b)
		kfree(b->foreign);
	kfree(b);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

struct srv_thread {
	struct completion done;
	int ret;
};

static int server_thread(void *arg)
{
	struct srv_thread *t = arg;

	t->ret = server_run();
	kthread_complete_and_exit(&t->done, 0);
}

static int __init rkdapl_test_init(void)
{
	struct srv_thread st;
	struct task_struct *task;

	if (!strcmp(role, "none"))
		return 0;	/* only holds a reference on rkdapl (module refcount test) */
	pr_info("rkdapl_test: # role=%s dev=%s peer=%s port=%u\n", role, dev, peer, port);
	if (!strcmp(role, "badarg")) {
		badarg_run();
	} else if (!strcmp(role, "server")) {
		server_run();
	} else if (!strcmp(role, "client")) {
		client_run();
	} else if (!strcmp(role, "loopback")) {
		init_completion(&st.done);
		WRITE_ONCE(server_abort, false);
		task = kthread_run(server_thread, &st, "rkdapl_test_srv");
		if (IS_ERR(task)) {
			tap(false, "loopback: server thread", "kthread_run = %ld", PTR_ERR(task));
		} else {
			client_run();
			wait_for_completion(&st.done);
		}
	} else {
		pr_err("rkdapl_test: unknown role '%s'\n", role);
		return -EINVAL;
	}
	pr_info("rkdapl_test: 1..%d\n", tap_num);
	pr_info("rkdapl_test: # done %d passed %d failed\n", tap_passed, tap_failed);
	return tap_failed || !tap_num ? -EIO : 0;
}

static void __exit rkdapl_test_exit(void)
{
}

module_init(rkdapl_test_init);
module_exit(rkdapl_test_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rkdapl selftests (TAP): data transfers, bad arguments");
