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
 *   addr        client: the server's IPv4 or IPv6 address (rping -a takes either too)
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
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "sample_conn.h"

static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name (default rxe0)");
static char *addr = "";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "client: the server's IPv4 or IPv6 address");
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

/* The kinds of the cookies (COOKIE()): the ping number below. */
enum rping_kind { K_SEND = 1, K_RECV, K_READ, K_WRITE, K_BIND };

struct rping {
	struct sconn c;			/* IA, PZ, EVD, PSP, EP and the connection's events */

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

	/* DTO state, updated by rping_dto_event(). */
	u32 posted[K_BIND + 1], done[K_BIND + 1];
	u64 rx_len, rdma_len;

	u32 pings, validated;
};

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

/* rping's DTO and bind completions (sconn->dto_event). */
static void rping_dto_event(struct sconn *c, const struct rkdapl_event *ev)
{
	struct rping *r = container_of(c, struct rping, c);
	u32 kind = op_kind(ev->op);

	if (ev->ep != r->c.ep) {
		pr_warn("%s: %s completion of another EP, ignored\n", r->c.who,
			rkdapl_op_msg(ev->op));
		return;
	}
	if (!kind || kind != COOKIE_KIND(ev->cookie)) {
		pr_err("%s: %s completion with cookie %#llx of another operation\n", r->c.who,
		       rkdapl_op_msg(ev->op), ev->cookie);
		sconn_fail(&r->c, -EPROTO);
		return;
	}
	if (r->done[kind] >= r->posted[kind]) {
		pr_err("%s: more %s completions than posted\n", r->c.who, rkdapl_op_msg(ev->op));
		sconn_fail(&r->c, -EPROTO);
		return;
	}
	r->done[kind]++;
	if (ev->status == RKDAPL_DTO_FLUSHED) {
		/* the connection is going away; whoever waits on this DTO sees r->c.flushed */
		r->c.flushed = true;
		return;
	}
	if (ev->status != RKDAPL_DTO_SUCCESS) {
		pr_err("%s: %s (cookie %#llx) completed with status %d\n", r->c.who,
		       rkdapl_op_msg(ev->op), ev->cookie, ev->status);
		sconn_fail(&r->c, -EIO);
		return;
	}
	if (kind == K_RECV)
		r->rx_len = ev->transferred_length;
	else if (kind == K_READ || kind == K_WRITE)
		r->rdma_len = ev->transferred_length;
}

#define all_done(r, kind) ((r)->done[kind] == (r)->posted[kind])

/* ---- messages ------------------------------------------------------------------------- */

static int rping_post_recv(struct rping *r)
{
	struct rkdapl_lmr_triplet iov = { .lmr = r->rx_lmr, .length = sizeof(*r->rx) };
	int ret;

	ret = CHECK(&r->c, rkdapl_post_recv(r->c.ep, &iov, 1, COOKIE(K_RECV, r->posted[K_RECV]),
					    0));
	if (!ret)
		r->posted[K_RECV]++;
	return ret;
}

/* Posts a SEND of the 16 bytes in r->tx. */
static int rping_post_send(struct rping *r)
{
	struct rkdapl_lmr_triplet iov = { .lmr = r->tx_lmr, .length = sizeof(*r->tx) };
	int ret;

	ret = CHECK(&r->c, rkdapl_post_send(r->c.ep, &iov, 1, COOKIE(K_SEND, r->posted[K_SEND]),
					    0));
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
	int ret = sconn_wait_for(&r->c, all_done(r, K_RECV) && all_done(r, K_SEND), what);

	if (ret)
		return ret;
	if (r->rx_len != sizeof(*r->rx)) {
		pr_err("%s: %s: received %llu bytes, rping sends %zu\n", r->c.who, what, r->rx_len,
		       sizeof(*r->rx));
		return -EPROTO;
	}
	ret = CHECK(&r->c, rkdapl_lmr_sync_rdma_write(r->rx_lmr, 0, sizeof(*r->rx)));
	if (ret)
		return ret;
	r->msg = *r->rx;
	return rping_post_recv(r);
}

static void rping_print(struct rping *r, const char *buf, u32 len)
{
	if (verbose)
		pr_info_ratelimited("%s ping data: %.*s\n", r->c.is_server ? "server" : "client",
				    (int)min_t(u32, strnlen(buf, len), RPING_PRINT_MAX), buf);
}

/* ---- set-up and tear-down ------------------------------------------------------------- */

static int rping_open(struct rping *r)
{
	int ret;

	ret = sconn_open(&r->c, dev, 64);
	if (ret)
		return ret;
	/* rping's QP: 16 send WRs, 2 RECVs, one SGE; responder_resources = initiator_depth = 1 */
	r->c.ep_attr.max_request_dtos = 16;
	r->c.ep_attr.max_recv_dtos = 2;
	r->c.ep_attr.max_request_iov = 1;
	r->c.ep_attr.max_recv_iov = 1;
	r->c.ep_attr.max_rdma_read_in = 1;
	r->c.ep_attr.max_rdma_read_out = 1;
	r->c.ep_attr.retry_count = 7;
	r->c.ep_attr.rnr_retry_count = 7;

	ret = sconn_alloc_lmr(&r->c, &r->tx, sizeof(*r->tx), 0, &r->tx_lmr);
	if (ret)
		return ret;
	return sconn_alloc_lmr(&r->c, &r->rx, sizeof(*r->rx), RKDAPL_MEM_LOCAL_WRITE,
			       &r->rx_lmr);
}

/* Frees everything in reverse order; returns the first error. */
static int rping_close(struct rping *r)
{
	int ret, e;

#define KEEP(x) do { e = (x); if (e && !ret) ret = e; } while (0)
	ret = sconn_free_ep(&r->c);
	if (r->start_rmr) {
		KEEP(CHECK(&r->c, rkdapl_rmr_free(r->start_rmr)));
		r->start_rmr = NULL;
	}
	if (r->sink_rmr) {
		KEEP(CHECK(&r->c, rkdapl_rmr_free(r->sink_rmr)));
		r->sink_rmr = NULL;
	}
	KEEP(sconn_free_lmr(&r->c, &r->start_lmr, &r->start_buf, "start_buf"));
	KEEP(sconn_free_lmr(&r->c, &r->rdma_lmr, &r->rdma_buf, "rdma_buf"));
	KEEP(sconn_free_lmr(&r->c, &r->rx_lmr, &r->rx, "rx"));
	KEEP(sconn_free_lmr(&r->c, &r->tx_lmr, &r->tx, "tx"));
	kfree(r->expect);
	r->expect = NULL;
	KEEP(sconn_close(&r->c));
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
		       r->c.who, r->pings, what, rlen, *raddr, *rkey, len);
		return 0;
	}
	return rlen;
}

/* An RDMA READ into rdma_buf (or WRITE from it) of @len bytes at @rem, waited for. */
static int server_rdma(struct rping *r, bool write, struct rkdapl_rmr_triplet *rem, u32 len)
{
	struct rkdapl_lmr_triplet iov = { .lmr = r->rdma_lmr, .length = len };
	u32 kind = write ? K_WRITE : K_READ;
	u64 cookie = COOKIE(kind, r->pings);
	int ret;

	rem->length = len;
	if (write)
		ret = CHECK(&r->c, rkdapl_post_rdma_write(r->c.ep, &iov, 1, rem, cookie, 0));
	else
		ret = CHECK(&r->c, rkdapl_post_rdma_read(r->c.ep, &iov, 1, rem, cookie, 0));
	if (ret)
		return ret;
	r->posted[kind]++;
	ret = sconn_wait_for(&r->c, all_done(r, kind), write ? "the RDMA WRITE" : "the RDMA READ");
	if (ret)
		return ret;
	if (r->rdma_len != len) {
		pr_err("%s: ping %u: RDMA %s moved %llu bytes, not %u\n", r->c.who, r->pings,
		       write ? "WRITE" : "READ", r->rdma_len, len);
		return -EIO;
	}
	return 0;
}

static int server_ping(struct rping *r)
{
	struct rkdapl_rmr_triplet rem = {};
	u32 ping = r->pings, rlen, wlen, slen;
	int ret;

	/* r->msg holds the client's source advertisement */
	rlen = rping_adv(r, "source advertisement", size, &rem.address, &rem.rkey);
	if (!rlen)
		return -EPROTO;
	memset(r->rdma_buf, 0, size);
	ret = CHECK(&r->c, rkdapl_lmr_sync_rdma_read(r->rdma_lmr, 0, size));
	ret = ret ?: server_rdma(r, false, &rem, rlen);
	if (ret)
		return ret;
	ret = CHECK(&r->c, rkdapl_lmr_sync_rdma_write(r->rdma_lmr, 0, rlen));
	if (ret)
		return ret;
	rping_print(r, r->rdma_buf, rlen);
	if (validate) {
		rping_pattern(r->expect, rlen, ping);
		if (memcmp(r->rdma_buf, r->expect, rlen)) {
			pr_err("%s: ping %u: the data read is not rping's pattern: \"%.*s\"\n",
			       r->c.who, ping, (int)min_t(u32, strnlen(r->rdma_buf, rlen), 64),
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
		pr_err("%s: ping %u: the sink has %u bytes, the echo %u\n", r->c.who, ping, slen,
		       wlen);
		return -EPROTO;
	}
	ret = server_rdma(r, true, &rem, wlen);
	if (ret)
		return ret;
	ret = rping_post_send(r);
	if (ret)
		return ret;
	r->pings++;
	if (validate)
		r->validated++;
	return 0;
}

/* Logs the path MTU the connected EP settled on (selftests/mtu.sh, against rdma-core's rping). */
static void rping_log_mtu(struct rping *r)
{
	struct rkdapl_ep_attr a;

	if (!rkdapl_ep_query(r->c.ep, &a))
		pr_info("%s: path MTU %u\n", r->c.who, a.path_mtu);
}

static int server_run(struct rping *r)
{
	int ret;

	ret = rping_open(r);
	if (ret)
		return ret;
	ret = sconn_alloc_lmr(&r->c, &r->rdma_buf, size, RKDAPL_MEM_LOCAL_WRITE, &r->rdma_lmr);
	if (ret)
		return ret;
	r->expect = kzalloc(size, GFP_KERNEL);
	if (!r->expect)
		return -ENOMEM;
	ret = CHECK(&r->c, rkdapl_psp_create(r->c.ia, port, 3, r->c.evd, &r->c.psp));
	if (ret)
		return ret;
	pr_info("server: listening on %s port %u (size %u, count %u, validate %d)\n", dev, port,
		size, count, validate);

	ret = sconn_wait_cr(&r->c);
	if (ret)
		return ret;
	ret = rping_post_recv(r);
	if (ret)
		return ret;
	ret = sconn_accept(&r->c);
	if (ret)
		return ret;
	ret = sconn_established(&r->c);
	if (ret)
		return ret;
	rping_log_mtu(r);

	while (!count || r->pings < count) {
		ret = rping_recv(r, "the source advertisement");
		if (ret == -ECONNRESET && !r->c.err && !count && r->pings) {
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
	ret = sconn_wait_for(&r->c, all_done(r, K_SEND) && all_done(r, K_RECV),
			     "the client's disconnect");
	if (ret == -ECONNRESET && !r->c.err)
		return 0;
	if (ret)
		return ret;
	pr_info("server: the client goes on after %u pings: disconnecting\n", count);
	ret = sconn_disconnect(&r->c);
	return ret == -ECONNRESET && !r->c.err ? 0 : ret;
}

/* ---- client --------------------------------------------------------------------------- */

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
	ret = CHECK(&r->c, rkdapl_lmr_sync_rdma_read(r->start_lmr, 0, size));
	if (!ret)
		ret = CHECK(&r->c, rkdapl_lmr_sync_rdma_read(r->rdma_lmr, 0, size));
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
	ret = CHECK(&r->c, rkdapl_lmr_sync_rdma_write(r->rdma_lmr, 0, size));
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
	struct sockaddr_storage sin;
	int ret;

	ret = sconn_server_addr(&sin, "addr", addr, port);
	ret = ret ?: rping_open(r);
	if (ret)
		return ret;
	ret = sconn_alloc_lmr(&r->c, &r->start_buf, size, RKDAPL_MEM_REMOTE_READ, &r->start_lmr);
	if (ret)
		return ret;
	ret = sconn_alloc_lmr(&r->c, &r->rdma_buf, size,
			      RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_WRITE, &r->rdma_lmr);
	if (ret)
		return ret;
	ret = CHECK(&r->c, rkdapl_rmr_create(r->c.pz, &r->start_rmr));
	if (ret)
		return ret;
	ret = CHECK(&r->c, rkdapl_rmr_create(r->c.pz, &r->sink_rmr));
	if (ret)
		return ret;

	ret = sconn_connect(&r->c, &sin);
	if (ret)
		return ret;
	rping_log_mtu(r);
	ret = rping_post_recv(r);
	if (ret)
		return ret;
	/* The grants rping's MRs give: the source for remote read, the sink for remote write. */
	ret = CHECK(&r->c, rkdapl_rmr_bind(r->start_rmr, r->start_lmr, 0, size,
					   RKDAPL_MEM_REMOTE_READ, r->c.ep, COOKIE(K_BIND, 0),
					   &r->start_rkey, &r->start_addr));
	if (ret)
		return ret;
	r->posted[K_BIND]++;
	ret = CHECK(&r->c, rkdapl_rmr_bind(r->sink_rmr, r->rdma_lmr, 0, size,
					   RKDAPL_MEM_REMOTE_WRITE, r->c.ep, COOKIE(K_BIND, 1),
					   &r->sink_rkey, &r->sink_addr));
	if (ret)
		return ret;
	r->posted[K_BIND]++;
	ret = sconn_wait_for(&r->c, all_done(r, K_BIND), "the RMR bind completions");
	if (ret)
		return ret;
	pr_info("client: source %#llx rkey %#x, sink %#llx rkey %#x, %u bytes\n", r->start_addr,
		r->start_rkey, r->sink_addr, r->sink_rkey, size);

	while (!count || r->pings < count) {
		ret = client_ping(r);
		if (ret == -ECONNRESET && !r->c.err)
			pr_err("client: the server went away during ping %u\n", r->pings);
		if (ret)
			return ret;
	}
	ret = sconn_disconnect(&r->c);
	return ret == -ECONNRESET && !r->c.err ? 0 : ret;
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
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	ret = sconn_init(&r->c, role, timeout_ms, port);
	if (ret) {
		kfree(r);
		return ret;
	}
	r->c.dto_event = rping_dto_event;
	r->c.quiet_disconnect = true;	/* the peer ends a session by disconnecting */
	ret = r->c.is_server ? server_run(r) : client_run(r);
	ret2 = rping_close(r);
	if (!ret && ret2)
		ret = ret2;
	if (ret)
		pr_err("%s: %u pings, %u validated, FAILED: %d\n", r->c.who, r->pings, r->validated,
		       ret);
	else
		pr_info("%s: %u pings, %u validated\n", r->c.who, r->pings, r->validated);
	kfree(r);
	return ret;
}

static void __exit rkdapl_rping_exit(void)
{
}

module_init(rkdapl_rping_init);
module_exit(rkdapl_rping_exit);

MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl rping: rdma-core rping's ping-pong protocol over the rkdapl API");
