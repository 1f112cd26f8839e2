// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_rping: a one-shot kernel rping over the rkdapl C API (include/rkdapl.h) that speaks
 * the wire protocol of rdma-core's rping (librdmacm/examples/rping.c), so either side can be
 * rdma-core's rping in user space.
 *
 *   insmod rkdapl_rping.ko role=server [dev=rxe0] [port=7174] [size=64] [count=10]
 *   insmod rkdapl_rping.ko role=client addr=10.77.0.1 [dev=rxe0] [port=7174] [size=64] [count=10]
 *
 *   e.g. rping -c -a <kernel server's IP> -C 10 -S 64 -V -v   against role=server
 *        rping -s -a <own IP> -C 10 -S 64 -V -v               for role=client addr=<its IP>
 *
 * Parameters:
 *   role        server or client
 *   dev         RDMA device (default rxe0)
 *   addr        client: the server's IPv4 address
 *   port        rdma_cm port (default 7174, rping's)
 *   size        ping data bytes, rping's -S (default 64, 26..65535 like rping); a server
 *               accepts a client's advertisement of up to size bytes
 *   count       pings, rping's -C (default 10). 0: a server serves until the client
 *               disconnects, a client pings until insmod gets a signal.
 *   validate    rping's -V (default 1). Client: the data written back equals what it sent.
 *               Server: the data it read is rping's pattern for that ping number.
 *   verbose     rping's -v: print the ping data (rate-limited, at most 128 bytes of each)
 *   timeout_ms  each wait, and the client's connect retries (default 120000)
 *
 * All the work happens in module_init, which returns 0 once all pings are done (and
 * validated), and a negative errno otherwise, so insmod itself reports the result. The last
 * line is a summary: "rkdapl_rping: client: 10 pings, 10 validated" (server likewise; with
 * ", FAILED: <errno>" appended on failure).
 *
 * Wire protocol (one RC connection; every message is a 16-byte struct rping_info: big-endian
 * 64-bit address, 32-bit rkey, 32-bit size; the peer posts 16-byte RECVs):
 *
 *   client                                       server
 *     SEND {start_buf, rkey (remote read), size}  --->  RECV
 *                                                       RDMA READ size bytes from start_buf
 *                                           <---  SEND go-ahead (16 zero bytes)
 *     SEND {sink_buf, rkey (remote write), size}  --->  RECV
 *                                                       RDMA WRITE strlen(data) + 1 bytes
 *                                           <---  SEND go-ahead
 *     compare start_buf and sink_buf, next ping
 *
 * start_buf of ping N is "rdma-ping-N: " followed by the letters 'A'..'z' cycling from the
 * letter 'A' + N % 58, with a NUL in its last byte. rping connects with responder_resources
 * and initiator_depth 1, and so does this module (EP max_rdma_read_in/out = 1).
 */
#define pr_fmt(fmt) "rkdapl_rping: " fmt

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../include/rkdapl.h"

static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name (default rxe0)");
static char *addr = "";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "client: the server's IPv4 address");
static ushort port = 7174;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "rdma_cm port (default 7174, rping's default)");
static uint size = 64;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "ping data bytes, rping -S (default 64, 26..65535)");
static uint count = 10;
module_param(count, uint, 0444);
MODULE_PARM_DESC(count, "pings, rping -C (default 10; 0: until the peer disconnects / a signal)");
static bool validate = true;
module_param(validate, bool, 0444);
MODULE_PARM_DESC(validate, "validate the ping data, rping -V (default 1)");
static bool verbose;
module_param(verbose, bool, 0444);
MODULE_PARM_DESC(verbose, "print the ping data, rping -v (rate-limited)");
static uint timeout_ms = 120000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "timeout of each wait and of the connect retries (default 120000)");

/*
 * rping's limits: RPING_MIN_BUFSIZE (sizeof "2147483647" + sizeof "rdma-ping-%d: ") and
 * RPING_BUFSIZE - 1.
 */
#define RPING_MIN_SIZE 26
#define RPING_MAX_SIZE (64 * 1024 - 1)
#define RPING_MSG_FMT "rdma-ping-%u: "
/* Bytes of the ping data that verbose prints. */
#define RPING_PRINT_MAX 128

/* rping's struct rping_info: the only message, in both directions. */
struct rping_info {
	__be64 buf;
	__be32 rkey;
	__be32 size;
};

/* Cookies: kind in the top 16 bits, the ping number below. */
enum rping_kind { K_SEND = 1, K_RECV, K_READ, K_WRITE, K_BIND };
#define COOKIE(kind, idx) (((u64)(kind) << 48) | (u64)(idx))
#define COOKIE_KIND(c) ((u32)((c) >> 48))

struct rping {
	bool is_server;
	const char *who;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;
	struct rkdapl_psp *psp;
	struct rkdapl_cr *cr;
	struct rkdapl_ep *ep;
	struct rkdapl_ep_attr ep_attr;

	struct rping_info *tx, *rx;	/* the 16-byte SEND and RECV buffers */
	struct rping_info msg;		/* the last message received, copied out of rx */
	struct rkdapl_lmr *tx_lmr, *rx_lmr;
	char *rdma_buf;			/* server: READ into, WRITE from; client: the sink */
	struct rkdapl_lmr *rdma_lmr;
	char *start_buf;		/* client: the source */
	struct rkdapl_lmr *start_lmr;
	char *expect;			/* server: the pattern a ping should carry */
	struct rkdapl_rmr *start_rmr, *sink_rmr;
	u64 start_addr, sink_addr;
	u32 start_rkey, sink_rkey;

	/* Event state, updated by rping_event(). */
	int err;
	bool want_cr;
	bool established, disconnected, conn_failed, flushed;
	u32 conn_fail_type;
	s32 conn_fail_status;
	u32 posted[K_BIND + 1], done[K_BIND + 1];
	u64 rx_len, rdma_len;

	u32 pings, validated;
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
#define CHECK(r, call)								\
({										\
	int __c = (call);							\
	if (__c)								\
		pr_err("%s: %s failed: %d\n", (r)->who, #call, __c);		\
	__c;									\
})

/* ---- rping's ping data ---------------------------------------------------------------- */

/* Formats the ping data of ping number ping into buf[len] exactly as rping -c does. */
static void rping_pattern(char *buf, u32 len, u32 ping)
{
	u32 i, cc;
	u8 c;

	cc = snprintf(buf, len, RPING_MSG_FMT, ping);
	for (i = cc, c = 'A' + ping % 58; i < len; i++) {
		buf[i] = c;
		if (++c > 'z')
			c = 'A';
	}
	buf[len - 1] = 0;
}

/* ---- events --------------------------------------------------------------------------- */

static void rping_fail(struct rping *r, int err)
{
	if (!r->err)
		r->err = err;
}

static u32 op_kind(u32 op)
{
	switch (op) {
	case RKDAPL_DTO_SEND:
		return K_SEND;
	case RKDAPL_DTO_RECV:
		return K_RECV;
	case RKDAPL_DTO_RDMA_READ:
		return K_READ;
	case RKDAPL_DTO_RDMA_WRITE:
		return K_WRITE;
	case RKDAPL_DTO_RMR_BIND:
		return K_BIND;
	default:
		return 0;
	}
}

static void rping_dto_event(struct rping *r, const struct rkdapl_event *ev)
{
	u32 kind = op_kind(ev->op);

	if (ev->ep != r->ep) {
		pr_warn("%s: %s completion of another EP, ignored\n", r->who,
			NAME(op_names, ev->op));
		return;
	}
	if (!kind || kind != COOKIE_KIND(ev->cookie)) {
		pr_err("%s: %s completion with cookie %#llx of another operation\n", r->who,
		       NAME(op_names, ev->op), ev->cookie);
		rping_fail(r, -EPROTO);
		return;
	}
	if (r->done[kind] >= r->posted[kind]) {
		pr_err("%s: more %s completions than posted\n", r->who, NAME(op_names, ev->op));
		rping_fail(r, -EPROTO);
		return;
	}
	r->done[kind]++;
	if (ev->status == RKDAPL_DTO_FLUSHED) {
		/* the connection is going away; whoever waits on this DTO sees r->flushed */
		r->flushed = true;
		return;
	}
	if (ev->status != RKDAPL_DTO_SUCCESS) {
		pr_err("%s: %s (cookie %#llx) completed with status %d\n", r->who,
		       NAME(op_names, ev->op), ev->cookie, ev->status);
		rping_fail(r, -EIO);
		return;
	}
	if (kind == K_RECV)
		r->rx_len = ev->transferred_length;
	else if (kind == K_READ || kind == K_WRITE)
		r->rdma_len = ev->transferred_length;
}

static void rping_event(struct rping *r, const struct rkdapl_event *ev)
{
	switch (ev->type) {
	case RKDAPL_DTO_COMPLETION_EVENT:
	case RKDAPL_RMR_BIND_COMPLETION_EVENT:
		rping_dto_event(r, ev);
		return;
	case RKDAPL_CONNECTION_REQUEST_EVENT:
		if (r->want_cr && !r->cr) {
			r->cr = ev->cr;
		} else {
			pr_warn("%s: rejecting a connection request: %s\n", r->who,
				r->is_server ? "already serving a client" : "not a server");
			CHECK(r, rkdapl_cr_reject(ev->cr, NULL, 0));
		}
		return;
	case RKDAPL_ASYNC_EVD_OVERFLOW:
		pr_err("%s: EVD overflow, %llu events lost\n", r->who, ev->transferred_length);
		rping_fail(r, -EOVERFLOW);
		return;
	case RKDAPL_ASYNC_IA_CATASTROPHIC:
		pr_err("%s: IA catastrophic error (status %d)\n", r->who, ev->status);
		rping_fail(r, -EIO);
		return;
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
	case RKDAPL_CONNECTION_EVENT_PEER_REJECTED:
	case RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED:
	case RKDAPL_CONNECTION_EVENT_UNREACHABLE:
	case RKDAPL_CONNECTION_EVENT_TIMED_OUT:
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		if (!ev->ep || ev->ep != r->ep) {
			pr_info("%s: %s event (status %d) of an earlier EP, ignored\n", r->who,
				NAME(event_names, ev->type), ev->status);
			return;
		}
		break;
	default:
		pr_err("%s: unknown event type %u (status %d)\n", r->who, ev->type, ev->status);
		rping_fail(r, -EPROTO);
		return;
	}

	switch (ev->type) {
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
		if (r->established || r->disconnected) {
			pr_err("%s: unexpected ESTABLISHED event\n", r->who);
			rping_fail(r, -EPROTO);
		}
		r->established = true;
		break;
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
		r->disconnected = true;
		break;
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		pr_err("%s: connection BROKEN (status %d)\n", r->who, ev->status);
		r->disconnected = true;
		rping_fail(r, -ECONNRESET);
		break;
	default:	/* the connect failed */
		if (r->established) {
			pr_err("%s: %s event (status %d) on an established EP\n", r->who,
			       NAME(event_names, ev->type), ev->status);
			rping_fail(r, -EPROTO);
		}
		r->conn_failed = true;
		r->conn_fail_type = ev->type;
		r->conn_fail_status = ev->status;
		break;
	}
}

/* Waits (at most until deadline) for one event and handles it. */
static int rping_step(struct rping *r, unsigned long deadline, const char *what)
{
	struct rkdapl_event ev;
	long left = (long)(deadline - jiffies);
	int ret;

	if (left <= 0) {
		pr_err("%s: timed out after %u ms waiting for %s\n", r->who, timeout_ms, what);
		return -ETIMEDOUT;
	}
	memset(&ev, 0, sizeof(ev));
	ret = rkdapl_evd_wait(r->evd, max(jiffies_to_msecs(left), 1u), &ev);
	if (ret == -ETIMEDOUT) {
		pr_err("%s: timed out after %u ms waiting for %s\n", r->who, timeout_ms, what);
		return ret;
	}
	if (ret) {
		pr_err("%s: rkdapl_evd_wait() failed: %d (waiting for %s)\n", r->who, ret, what);
		return ret;
	}
	rping_event(r, &ev);
	return 0;
}

/*
 * Handles events until cond holds (0), an event failed (its errno), the connection went away
 * (-ECONNRESET: a flushed DTO, or a DISCONNECTED event while cond does not hold) or
 * timeout_ms passed (-ETIMEDOUT). A flushed DTO counts as done but moved nothing, so it
 * ends the wait before cond is looked at.
 */
#define rping_wait_for(r, cond, what)						\
({										\
	unsigned long __dl = jiffies + msecs_to_jiffies(timeout_ms);		\
	int __ret;								\
	for (;;) {								\
		__ret = (r)->err;						\
		if (__ret) {							\
			pr_err("%s: failed while waiting for %s: %d\n",	\
			       (r)->who, (what), __ret);			\
			break;							\
		}								\
		if ((r)->flushed) {						\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		if (cond)							\
			break;							\
		if ((r)->disconnected) {					\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		__ret = rping_step((r), __dl, (what));				\
		if (__ret)							\
			break;							\
	}									\
	__ret;									\
})

#define all_done(r, kind) ((r)->done[kind] == (r)->posted[kind])

/*
 * Discards whatever is queued on the EVD after an EP was freed: its flushed DTOs and late
 * connection events. Connection requests are rejected.
 */
static void rping_drain(struct rping *r)
{
	struct rkdapl_event ev;
	u32 flushed = 0;

	while (!rkdapl_evd_dequeue(r->evd, &ev)) {
		if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT) {
			pr_info("%s: rejecting a late connection request\n", r->who);
			CHECK(r, rkdapl_cr_reject(ev.cr, NULL, 0));
		} else if ((ev.type == RKDAPL_DTO_COMPLETION_EVENT ||
			    ev.type == RKDAPL_RMR_BIND_COMPLETION_EVENT) &&
			   ev.status == RKDAPL_DTO_FLUSHED) {
			flushed++;
		} else if (ev.type != RKDAPL_CONNECTION_EVENT_DISCONNECTED) {
			pr_info("%s: discarding a late %s event (op %s, status %d)\n", r->who,
				NAME(event_names, ev.type), NAME(op_names, ev.op), ev.status);
		}
	}
	if (flushed)
		pr_info("%s: %u DTO(s) were flushed\n", r->who, flushed);
}

/* ---- messages ------------------------------------------------------------------------- */

static int rping_post_recv(struct rping *r)
{
	struct rkdapl_lmr_triplet iov = { .lmr = r->rx_lmr, .length = sizeof(*r->rx) };
	int ret;

	ret = CHECK(r, rkdapl_post_recv(r->ep, &iov, 1, COOKIE(K_RECV, r->posted[K_RECV]), 0));
	if (!ret)
		r->posted[K_RECV]++;
	return ret;
}

/* Posts a SEND of the 16 bytes in r->tx. */
static int rping_post_send(struct rping *r)
{
	struct rkdapl_lmr_triplet iov = { .lmr = r->tx_lmr, .length = sizeof(*r->tx) };
	int ret;

	ret = CHECK(r, rkdapl_post_send(r->ep, &iov, 1, COOKIE(K_SEND, r->posted[K_SEND]), 0));
	if (!ret)
		r->posted[K_SEND]++;
	return ret;
}

/*
 * Waits for the RECV posted last (and for every SEND), checks that 16 bytes came, copies
 * them to r->msg and posts the next RECV before the peer can send again (as rping does).
 */
static int rping_recv(struct rping *r, const char *what)
{
	int ret = rping_wait_for(r, all_done(r, K_RECV) && all_done(r, K_SEND), what);

	if (ret)
		return ret;
	if (r->rx_len != sizeof(*r->rx)) {
		pr_err("%s: %s: received %llu bytes, rping sends %zu\n", r->who, what, r->rx_len,
		       sizeof(*r->rx));
		return -EPROTO;
	}
	ret = CHECK(r, rkdapl_lmr_sync_rdma_write(r->rx_lmr, 0, sizeof(*r->rx)));
	if (ret)
		return ret;
	r->msg = *r->rx;
	return rping_post_recv(r);
}

static void rping_print(struct rping *r, const char *buf, u32 len)
{
	if (verbose)
		pr_info_ratelimited("%s ping data: %.*s\n", r->is_server ? "server" : "client",
				    (int)min_t(u32, strnlen(buf, len), RPING_PRINT_MAX), buf);
}

/* ---- set-up and tear-down ------------------------------------------------------------- */

static int rping_alloc_lmr(struct rping *r, char **buf, u32 len, u32 priv,
			   struct rkdapl_lmr **lmr)
{
	*buf = kzalloc(len, GFP_KERNEL);
	if (!*buf) {
		pr_err("%s: out of memory for %u bytes\n", r->who, len);
		return -ENOMEM;
	}
	return CHECK(r, rkdapl_lmr_create(r->pz, *buf, len, priv, lmr));
}

static int rping_open(struct rping *r)
{
	int ret;

	ret = CHECK(r, rkdapl_ia_open(dev, &r->ia));
	if (ret)
		return ret;
	ret = CHECK(r, rkdapl_pz_create(r->ia, &r->pz));
	if (ret)
		return ret;
	ret = CHECK(r, rkdapl_evd_create(r->ia, 64, &r->evd));
	if (ret)
		return ret;
	/* rping's QP: 16 send WRs, 2 RECVs, one SGE; responder_resources = initiator_depth = 1 */
	r->ep_attr.max_request_dtos = 16;
	r->ep_attr.max_recv_dtos = 2;
	r->ep_attr.max_request_iov = 1;
	r->ep_attr.max_recv_iov = 1;
	r->ep_attr.max_rdma_read_in = 1;
	r->ep_attr.max_rdma_read_out = 1;
	r->ep_attr.retry_count = 7;
	r->ep_attr.rnr_retry_count = 7;

	ret = rping_alloc_lmr(r, (char **)&r->tx, sizeof(*r->tx), 0, &r->tx_lmr);
	if (ret)
		return ret;
	return rping_alloc_lmr(r, (char **)&r->rx, sizeof(*r->rx), RKDAPL_MEM_LOCAL_WRITE,
			       &r->rx_lmr);
}

/* Frees an LMR, then its buffer; a buffer whose LMR could not be freed is leaked. */
static int rping_free_lmr(struct rping *r, struct rkdapl_lmr **lmr, void *bufp, const char *name)
{
	void **buf = bufp;
	int ret = 0;

	if (*lmr) {
		ret = rkdapl_lmr_free(*lmr);
		if (ret) {
			pr_err("%s: rkdapl_lmr_free(%s) failed: %d; leaking its buffer\n", r->who,
			       name, ret);
			*buf = NULL;
		}
		*lmr = NULL;
	}
	kfree(*buf);
	*buf = NULL;
	return ret;
}

/* Frees everything in reverse order; returns the first error. */
static int rping_close(struct rping *r)
{
	int ret = 0, e;

#define KEEP(x) do { e = (x); if (e && !ret) ret = e; } while (0)
	if (r->ep) {
		KEEP(CHECK(r, rkdapl_ep_free(r->ep)));
		r->ep = NULL;
	}
	if (r->evd)
		rping_drain(r);
	if (r->start_rmr) {
		KEEP(CHECK(r, rkdapl_rmr_free(r->start_rmr)));
		r->start_rmr = NULL;
	}
	if (r->sink_rmr) {
		KEEP(CHECK(r, rkdapl_rmr_free(r->sink_rmr)));
		r->sink_rmr = NULL;
	}
	if (r->cr) {	/* received but never accepted */
		KEEP(CHECK(r, rkdapl_cr_reject(r->cr, NULL, 0)));
		r->cr = NULL;
	}
	if (r->psp) {
		KEEP(CHECK(r, rkdapl_psp_free(r->psp)));
		r->psp = NULL;
	}
	KEEP(rping_free_lmr(r, &r->start_lmr, &r->start_buf, "start_buf"));
	KEEP(rping_free_lmr(r, &r->rdma_lmr, &r->rdma_buf, "rdma_buf"));
	KEEP(rping_free_lmr(r, &r->rx_lmr, &r->rx, "rx"));
	KEEP(rping_free_lmr(r, &r->tx_lmr, &r->tx, "tx"));
	kfree(r->expect);
	r->expect = NULL;
	if (r->evd) {
		KEEP(CHECK(r, rkdapl_evd_free(r->evd)));
		r->evd = NULL;
	}
	if (r->pz) {
		KEEP(CHECK(r, rkdapl_pz_free(r->pz)));
		r->pz = NULL;
	}
	if (r->ia) {
		KEEP(CHECK(r, rkdapl_ia_close(r->ia)));
		r->ia = NULL;
	}
#undef KEEP
	return ret;
}

/* ---- server --------------------------------------------------------------------------- */

/* The peer's advertisement in r->msg: returns its length, or 0 if it does not fit len bytes. */
static u32 rping_adv(struct rping *r, const char *what, u32 len, u64 *raddr, u32 *rkey)
{
	u32 rlen = be32_to_cpu(r->msg.size);

	*raddr = be64_to_cpu(r->msg.buf);
	*rkey = be32_to_cpu(r->msg.rkey);
	if (!rlen || rlen > len) {
		pr_err("%s: ping %u: %s of %u bytes at %#llx rkey %#x: must be 1..%u bytes\n",
		       r->who, r->pings, what, rlen, *raddr, *rkey, len);
		return 0;
	}
	return rlen;
}

static int server_ping(struct rping *r)
{
	struct rkdapl_lmr_triplet iov = { .lmr = r->rdma_lmr };
	struct rkdapl_rmr_triplet rem = {};
	u32 ping = r->pings, rlen, wlen, slen;
	int ret;

	/* r->msg holds the client's source advertisement */
	rlen = rping_adv(r, "source advertisement", size, &rem.address, &rem.rkey);
	if (!rlen)
		return -EPROTO;
	iov.length = rlen;
	rem.length = rlen;
	memset(r->rdma_buf, 0, size);
	ret = CHECK(r, rkdapl_lmr_sync_rdma_read(r->rdma_lmr, 0, size));
	if (ret)
		return ret;
	ret = CHECK(r, rkdapl_post_rdma_read(r->ep, &iov, 1, &rem, COOKIE(K_READ, ping), 0));
	if (ret)
		return ret;
	r->posted[K_READ]++;
	ret = rping_wait_for(r, all_done(r, K_READ), "the RDMA READ");
	if (ret)
		return ret;
	if (r->rdma_len != rlen) {
		pr_err("%s: ping %u: RDMA READ moved %llu bytes, not %u\n", r->who, ping,
		       r->rdma_len, rlen);
		return -EIO;
	}
	ret = CHECK(r, rkdapl_lmr_sync_rdma_write(r->rdma_lmr, 0, rlen));
	if (ret)
		return ret;
	rping_print(r, r->rdma_buf, rlen);
	if (validate) {
		rping_pattern(r->expect, rlen, ping);
		if (memcmp(r->rdma_buf, r->expect, rlen)) {
			pr_err("%s: ping %u: the data read is not rping's pattern: \"%.*s\"\n",
			       r->who, ping, (int)min_t(u32, strnlen(r->rdma_buf, rlen), 64),
			       r->rdma_buf);
			return -EIO;
		}
	}

	/* go ahead: rping's server sends its never-formatted (zero) 16-byte buffer */
	memset(r->tx, 0, sizeof(*r->tx));
	ret = rping_post_send(r);
	if (ret)
		return ret;
	ret = rping_recv(r, "the sink advertisement");
	if (ret)
		return ret;
	slen = rping_adv(r, "sink advertisement", RPING_MAX_SIZE, &rem.address, &rem.rkey);
	if (!slen)
		return -EPROTO;
	/* rping echoes strlen(data) + 1 bytes */
	wlen = strnlen(r->rdma_buf, rlen);
	wlen = wlen < rlen ? wlen + 1 : rlen;
	if (wlen > slen) {
		pr_err("%s: ping %u: the sink has %u bytes, the echo %u\n", r->who, ping, slen,
		       wlen);
		return -EPROTO;
	}
	iov.length = wlen;
	rem.length = wlen;
	ret = CHECK(r, rkdapl_post_rdma_write(r->ep, &iov, 1, &rem, COOKIE(K_WRITE, ping), 0));
	if (ret)
		return ret;
	r->posted[K_WRITE]++;
	ret = rping_wait_for(r, all_done(r, K_WRITE), "the RDMA WRITE");
	if (ret)
		return ret;
	if (r->rdma_len != wlen) {
		pr_err("%s: ping %u: RDMA WRITE moved %llu bytes, not %u\n", r->who, ping,
		       r->rdma_len, wlen);
		return -EIO;
	}
	ret = rping_post_send(r);
	if (ret)
		return ret;
	r->pings++;
	if (validate)
		r->validated++;
	return 0;
}

static int server_run(struct rping *r)
{
	int ret;

	ret = rping_open(r);
	if (ret)
		return ret;
	ret = rping_alloc_lmr(r, &r->rdma_buf, size, RKDAPL_MEM_LOCAL_WRITE, &r->rdma_lmr);
	if (ret)
		return ret;
	r->expect = kzalloc(size, GFP_KERNEL);
	if (!r->expect)
		return -ENOMEM;
	ret = CHECK(r, rkdapl_psp_create(r->ia, port, 3, r->evd, &r->psp));
	if (ret)
		return ret;
	pr_info("server: listening on %s port %u (size %u, count %u, validate %d)\n", dev, port,
		size, count, validate);

	r->want_cr = true;
	ret = rping_wait_for(r, r->cr, "a connection request");
	if (ret)
		return ret;
	r->want_cr = false;
	ret = CHECK(r, rkdapl_ep_create(r->pz, r->evd, r->evd, &r->ep_attr, &r->ep));
	if (ret)
		return ret;
	ret = rkdapl_cr_accept(r->cr, r->ep, NULL, 0);
	if (ret) {
		pr_err("server: rkdapl_cr_accept() failed: %d\n", ret);
		/* -EINVAL/-EISCONN/-EXDEV leave the CR pending: rping_close() rejects it */
		if (ret != -EINVAL && ret != -EISCONN && ret != -EXDEV)
			r->cr = NULL;
		return ret;
	}
	r->cr = NULL;
	ret = rping_post_recv(r);
	if (ret)
		return ret;
	ret = rping_wait_for(r, r->established, "ESTABLISHED");
	if (ret)
		return ret;
	pr_info("server: connection established\n");

	while (!count || r->pings < count) {
		ret = rping_recv(r, "the source advertisement");
		if (ret == -ECONNRESET && !r->err && !count && r->pings) {
			/* count=0: the client ends the session by disconnecting */
			pr_info("server: the client disconnected\n");
			return 0;
		}
		if (ret == -ECONNRESET)
			pr_err("server: the client went away after %u of %u pings\n", r->pings,
			       count);
		if (ret)
			return ret;
		ret = server_ping(r);
		if (ret)
			return ret;
	}
	/*
	 * count pings done. The client disconnects once it has the last go-ahead: wait for
	 * that (or another advertisement, which means the client wants more than count).
	 */
	ret = rping_wait_for(r, all_done(r, K_SEND) && all_done(r, K_RECV),
			     "the client's disconnect");
	if (ret == -ECONNRESET && !r->err)
		return 0;
	if (ret)
		return ret;
	pr_info("server: the client goes on after %u pings: disconnecting\n", count);
	ret = CHECK(r, rkdapl_ep_disconnect(r->ep));
	if (ret)
		return ret;
	ret = rping_wait_for(r, r->disconnected, "DISCONNECTED");
	return ret == -ECONNRESET && !r->err ? 0 : ret;
}

/* ---- client --------------------------------------------------------------------------- */

static bool client_retryable_event(u32 type)
{
	return type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED ||
	       type == RKDAPL_CONNECTION_EVENT_UNREACHABLE ||
	       type == RKDAPL_CONNECTION_EVENT_TIMED_OUT;
}

static int client_connect(struct rping *r, const struct sockaddr_in *sin)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);
	u32 attempt;
	int ret;

	for (attempt = 1;; attempt++) {
		r->established = false;
		r->disconnected = false;
		r->conn_failed = false;
		r->flushed = false;
		ret = CHECK(r, rkdapl_ep_create(r->pz, r->evd, r->evd, &r->ep_attr, &r->ep));
		if (ret)
			return ret;
		ret = rkdapl_ep_connect(r->ep, (const struct sockaddr *)sin,
					min(timeout_ms, 5000u), NULL, 0);
		if (!ret) {
			ret = rping_wait_for(r, r->established || r->conn_failed,
					     "the connection's outcome");
			if (ret)
				return ret;
			if (r->established) {
				pr_info("client: connected to %pI4:%u (attempt %u)\n",
					&sin->sin_addr, port, attempt);
				return 0;
			}
			if (!client_retryable_event(r->conn_fail_type)) {
				pr_err("client: connect to %pI4:%u: %s (status %d)\n",
				       &sin->sin_addr, port,
				       NAME(event_names, r->conn_fail_type), r->conn_fail_status);
				return -ECONNREFUSED;
			}
			if (attempt == 1 || !(attempt % 20))
				pr_info("client: connect attempt %u: %s (status %d), retrying\n",
					attempt, NAME(event_names, r->conn_fail_type),
					r->conn_fail_status);
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
		ret = CHECK(r, rkdapl_ep_free(r->ep));
		r->ep = NULL;
		if (ret)
			return ret;
		rping_drain(r);
		memset(r->posted, 0, sizeof(r->posted));
		memset(r->done, 0, sizeof(r->done));
		if (time_after(jiffies + msecs_to_jiffies(500), deadline)) {
			pr_err("client: no connection to %pI4:%u after %u attempts in %u ms\n",
			       &sin->sin_addr, port, attempt, timeout_ms);
			return -ETIMEDOUT;
		}
		msleep(500);
	}
}

/* Sends an advertisement of buf (rping_format_send) and waits for the server's go-ahead. */
static int client_advertise(struct rping *r, u64 address, u32 rkey, const char *what)
{
	int ret;

	r->tx->buf = cpu_to_be64(address);
	r->tx->rkey = cpu_to_be32(rkey);
	r->tx->size = cpu_to_be32(size);
	ret = rping_post_send(r);
	if (ret)
		return ret;
	return rping_recv(r, what);
}

static int client_ping(struct rping *r)
{
	u32 ping = r->pings;
	int ret;

	rping_pattern(r->start_buf, size, ping);
	memset(r->rdma_buf, 0, size);
	ret = CHECK(r, rkdapl_lmr_sync_rdma_read(r->start_lmr, 0, size));
	if (!ret)
		ret = CHECK(r, rkdapl_lmr_sync_rdma_read(r->rdma_lmr, 0, size));
	if (ret)
		return ret;
	ret = client_advertise(r, r->start_addr, r->start_rkey,
			       "the go-ahead after the RDMA READ");
	if (ret)
		return ret;
	ret = client_advertise(r, r->sink_addr, r->sink_rkey,
			       "the go-ahead after the RDMA WRITE");
	if (ret)
		return ret;
	ret = CHECK(r, rkdapl_lmr_sync_rdma_write(r->rdma_lmr, 0, size));
	if (ret)
		return ret;
	r->pings++;
	if (validate) {
		if (memcmp(r->start_buf, r->rdma_buf, size)) {
			pr_err("client: ping %u: data mismatch: sent \"%.*s\", got back \"%.*s\"\n",
			       ping, (int)min_t(u32, strnlen(r->start_buf, size), 64), r->start_buf,
			       (int)min_t(u32, strnlen(r->rdma_buf, size), 64), r->rdma_buf);
			return -EIO;
		}
		r->validated++;
	}
	rping_print(r, r->rdma_buf, size);
	return 0;
}

static int client_run(struct rping *r)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int ret;

	if (!addr || !in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("client: addr=%s is not an IPv4 address\n", addr ?: "");
		return -EINVAL;
	}
	ret = rping_open(r);
	if (ret)
		return ret;
	ret = rping_alloc_lmr(r, &r->start_buf, size, RKDAPL_MEM_REMOTE_READ, &r->start_lmr);
	if (ret)
		return ret;
	ret = rping_alloc_lmr(r, &r->rdma_buf, size,
			      RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_WRITE, &r->rdma_lmr);
	if (ret)
		return ret;
	ret = CHECK(r, rkdapl_rmr_create(r->pz, &r->start_rmr));
	if (ret)
		return ret;
	ret = CHECK(r, rkdapl_rmr_create(r->pz, &r->sink_rmr));
	if (ret)
		return ret;

	ret = client_connect(r, &sin);
	if (ret)
		return ret;
	ret = rping_post_recv(r);
	if (ret)
		return ret;
	/* The grants rping's MRs give: the source for remote read, the sink for remote write. */
	ret = CHECK(r, rkdapl_rmr_bind(r->start_rmr, r->start_lmr, 0, size,
				       RKDAPL_MEM_REMOTE_READ, r->ep, COOKIE(K_BIND, 0),
				       &r->start_rkey, &r->start_addr));
	if (ret)
		return ret;
	r->posted[K_BIND]++;
	ret = CHECK(r, rkdapl_rmr_bind(r->sink_rmr, r->rdma_lmr, 0, size,
				       RKDAPL_MEM_REMOTE_WRITE, r->ep, COOKIE(K_BIND, 1),
				       &r->sink_rkey, &r->sink_addr));
	if (ret)
		return ret;
	r->posted[K_BIND]++;
	ret = rping_wait_for(r, all_done(r, K_BIND), "the RMR bind completions");
	if (ret)
		return ret;
	pr_info("client: source %#llx rkey %#x, sink %#llx rkey %#x, %u bytes\n", r->start_addr,
		r->start_rkey, r->sink_addr, r->sink_rkey, size);

	while (!count || r->pings < count) {
		ret = client_ping(r);
		if (ret == -ECONNRESET && !r->err)
			pr_err("client: the server went away during ping %u\n", r->pings);
		if (ret)
			return ret;
	}
	ret = CHECK(r, rkdapl_ep_disconnect(r->ep));
	if (ret)
		return ret;
	ret = rping_wait_for(r, r->disconnected, "DISCONNECTED");
	return ret == -ECONNRESET && !r->err ? 0 : ret;
}

static int __init rkdapl_rping_init(void)
{
	struct rping *r;
	int ret, ret2;

	if (size < RPING_MIN_SIZE || size > RPING_MAX_SIZE) {
		pr_err("size=%u out of rping's range %u..%u\n", size, RPING_MIN_SIZE,
		       RPING_MAX_SIZE);
		return -EINVAL;
	}
	if (!timeout_ms || !port) {
		pr_err("timeout_ms and port must not be 0\n");
		return -EINVAL;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	if (!strcmp(role, "server")) {
		r->is_server = true;
		r->who = "server";
		ret = server_run(r);
	} else if (!strcmp(role, "client")) {
		r->who = "client";
		ret = client_run(r);
	} else {
		pr_err("role=%s: must be server or client\n", role);
		kfree(r);
		return -EINVAL;
	}
	ret2 = rping_close(r);
	if (!ret && ret2)
		ret = ret2;
	if (ret)
		pr_err("%s: %u pings, %u validated, FAILED: %d\n", r->who, r->pings, r->validated,
		       ret);
	else
		pr_info("%s: %u pings, %u validated\n", r->who, r->pings, r->validated);
	kfree(r);
	return ret;
}

static void __exit rkdapl_rping_exit(void)
{
}

module_init(rkdapl_rping_init);
module_exit(rkdapl_rping_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rkdapl rping: rdma-core rping's ping-pong protocol over the rkdapl API");
