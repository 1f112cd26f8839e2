// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_soak: many short connections between two guests (selftests/soak.sh), each one going
 * through the whole life of a consumer's objects:
 *
 *   insmod rkdapl_soak.ko role=server [port=7560] [cycles=1000]
 *   insmod rkdapl_soak.ko role=client peer=<server IPv4> [port=7560] [cycles=1000] [rounds=1]
 *
 * One cycle, client                              server
 *   EP create, RECV for the advertisement,
 *   LMR create (register), connect             ->  CR: EP create, RECV(s), accept
 *   (iWARP: SEND {start}                       ->  wait for it: MPA lets the accepting side
 *                                                  send only after the connecting side did)
 *                                                  RMR create + bind over its buffer
 *                                             <-   SEND {address, rkey, length}
 *   RDMA WRITE a fresh pattern, RDMA READ it back, compare   (@rounds times)
 *   SEND {checksum}                           ->   compare its buffer with the checksum
 *   disconnect; wait DISCONNECTED             ->   DISCONNECTED
 *   free EP, LMR                                   free EP, RMR
 *
 * All work runs in module_init; insmod's status is the result (0: every cycle verified on this
 * side). The last line is "rkdapl_soak: <role>: N cycles, N verified" (", FAILED: <why>").
 * With a large @rounds the client streams WRITE/READ pairs over one connection; it logs
 * "client: streaming" after 100 rounds (selftests/peerkill.sh kills the peer guest then).
 */
#define pr_fmt(fmt) "rkdapl_soak: " fmt

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../../include/rkdapl.h"

static char *role = "";
module_param(role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "client: the server's IPv4 address");
static ushort port = 7560;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7560)");
static uint cycles = 1000;
module_param(cycles, uint, 0444);
MODULE_PARM_DESC(cycles, "connections to go through (default 1000)");
static uint timeout_ms = 60000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one event, and the client's connect retries (default 60000)");
static uint retry_count;
module_param(retry_count, uint, 0444);
MODULE_PARM_DESC(retry_count, "EP transport retries, 1..7 (default 0: rkdapl's default, 7)");
static uint rounds = 1;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "client: RDMA WRITE + READ-back rounds per connection (default 1)");

#define SOAK_BYTES 4096
#define SOAK_MAGIC 0x534f414bu	/* "SOAK" */

struct soak_msg {
	__u32 magic;
	__u32 cycle;
	__u64 address;
	__u32 rkey;
	__u32 length;
	__u64 csum;
};

/* What lives for the whole run; one connection's objects are made and freed per cycle. */
static struct soak {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *dto, *conn, *psp_evd;
	struct rkdapl_psp *psp;
	struct rkdapl_lmr *msg_lmr, *buf_lmr;	/* server: buf_lmr for the whole run */
	struct soak_msg *msg;			/* [0] sent, [1] received */
	u8 *buf, *back;
	char why[160];
} s;

/* The IA is iWARP's: the client sends first (see server_cycle). */
static bool iwarp;

static u64 csum64(const u8 *p, size_t n)
{
	u64 h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

#define FAIL(fmt, ...) ({ snprintf(s.why, sizeof(s.why), fmt, ##__VA_ARGS__); -EIO; })

/* Waits for the next event on @evd; DTO events must be successful completions of @cookie. */
static int wait_ev(struct rkdapl_evd *evd, u32 type, u64 cookie, struct rkdapl_event *ev,
		   const char *what)
{
	int r = rkdapl_evd_wait(evd, timeout_ms, ev);

	if (r)
		return FAIL("%s: no event (%d)", what, r);
	if (ev->type != type || ev->status ||
	    (type <= RKDAPL_RMR_BIND_COMPLETION_EVENT && ev->cookie != cookie))
		return FAIL("%s: event %u status %d cookie %llu", what, ev->type, ev->status,
			    ev->cookie);
	return 0;
}

/*
 * Waits for the successful DTO completions of @c1 and @c2 on @evd, in either order. @c1 is a
 * SEND whose answer is @c2: once the answer is in, the SEND was delivered even if it completes
 * FLUSHED (its ACK was lost and the peer disconnected before the retransmission was answered).
 */
static int wait_two(struct rkdapl_evd *evd, u64 c1, u64 c2, const char *what)
{
	struct rkdapl_event ev;
	bool got1 = false, got2 = false;
	int r;

	while (!got1 || !got2) {
		r = rkdapl_evd_wait(evd, timeout_ms, &ev);
		if (r)
			return FAIL("%s: no event (%d)", what, r);
		if (ev.type == RKDAPL_DTO_COMPLETION_EVENT && ev.cookie == c1 && got2 &&
		    ev.status == RKDAPL_DTO_FLUSHED) {
			got1 = true;
			continue;
		}
		if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.status ||
		    (ev.cookie != c1 && ev.cookie != c2))
			return FAIL("%s: event %u status %d cookie %llu", what, ev.type, ev.status,
				    ev.cookie);
		got1 |= ev.cookie == c1;
		got2 |= ev.cookie == c2;
	}
	return 0;
}

static int post_one(int (*post)(struct rkdapl_ep *, const struct rkdapl_lmr_triplet *, __u32,
				__u64, __u32),
		    struct rkdapl_ep *ep, struct rkdapl_lmr *lmr, u64 off, u64 len, u64 cookie)
{
	struct rkdapl_lmr_triplet t = { lmr, off, len };

	return post(ep, &t, 1, cookie, 0);
}

/*
 * The end of a cycle: frees its EP, then its RMR (server) or LMR (client), and discards what
 * its connection left on the EVDs. Returns @r, or the first failed free's error.
 */
static int cycle_end(int r, struct rkdapl_ep *ep, struct rkdapl_rmr *rmr,
		     struct rkdapl_lmr *lmr)
{
	struct rkdapl_event ev;

	if (ep && rkdapl_ep_free(ep) && !r)
		r = FAIL("ep_free failed");
	if (rmr && rkdapl_rmr_free(rmr) && !r)
		r = FAIL("rmr_free failed");
	if (lmr && rkdapl_lmr_free(lmr) && !r)
		r = FAIL("lmr_free failed");
	/* Flushed or stray events of this connection must not reach the next one. */
	while (!rkdapl_evd_dequeue(s.dto, &ev))
		;
	while (!rkdapl_evd_dequeue(s.conn, &ev))
		;
	return r;
}

static int server_cycle(u32 n)
{
	struct rkdapl_ep *ep = NULL;
	struct rkdapl_rmr *rmr = NULL;
	struct rkdapl_event ev;
	u32 rkey;
	u64 addr;
	int r;

	r = wait_ev(s.psp_evd, RKDAPL_CONNECTION_REQUEST_EVENT, 0, &ev, "connection request");
	if (r)
		return r;
	r = rkdapl_ep_create(s.pz, s.dto, s.conn, NULL, &ep);
	/*
	 * The RECVs of the client's messages, posted before accepting, as iWARP wants: on iWARP
	 * its start message (cookie 5), then its checksum (cookie 1), into the same buffer.
	 */
	if (!r && iwarp)
		r = post_one(rkdapl_post_recv, ep, s.msg_lmr, sizeof(*s.msg), sizeof(*s.msg), 5);
	if (!r)
		r = post_one(rkdapl_post_recv, ep, s.msg_lmr, sizeof(*s.msg), sizeof(*s.msg), 1);
	if (!r)
		r = rkdapl_cr_accept(ev.cr, ep, NULL, 0);
	if (r) {
		FAIL("ep_create/post_recv/cr_accept = %d", r);
		goto out;
	}
	r = wait_ev(s.conn, RKDAPL_CONNECTION_EVENT_ESTABLISHED, 0, &ev, "established");
	/*
	 * iWARP: nothing is sent before the client's first message. MPA (RFC 5044) has the
	 * connecting side send first; siw fails its connect with -EINVAL if our first frame
	 * arrives with the MPA reply (docs/upstream/siw-mpa-early-fpdu.md).
	 */
	if (!r && iwarp) {
		r = wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 5, &ev, "start recv");
		if (!r && (s.msg[1].magic != SOAK_MAGIC || s.msg[1].cycle != n))
			r = FAIL("cycle %u: bad start message", n);
		if (r)
			goto out;
	}
	if (!r)
		r = rkdapl_rmr_create(s.pz, &rmr);
	if (!r)
		r = rkdapl_rmr_bind(rmr, s.buf_lmr, 0, SOAK_BYTES,
				    RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, ep, 2, &rkey,
				    &addr);
	if (r) {
		FAIL("rmr_create/bind = %d", r);
		goto out;
	}
	r = wait_ev(s.dto, RKDAPL_RMR_BIND_COMPLETION_EVENT, 2, &ev, "bind");
	if (r)
		goto out;
	s.msg[0] = (struct soak_msg){ SOAK_MAGIC, n, addr, rkey, SOAK_BYTES, 0 };
	r = post_one(rkdapl_post_send, ep, s.msg_lmr, 0, sizeof(*s.msg), 3);
	/* The SEND's completion and the client's answer may come in either order. */
	if (!r)
		r = wait_two(s.dto, 3, 1, "advertisement send, done recv");
	if (r)
		goto out;
	rkdapl_lmr_sync_rdma_write(s.buf_lmr, 0, SOAK_BYTES);
	if (s.msg[1].magic != SOAK_MAGIC || s.msg[1].cycle != n ||
	    s.msg[1].csum != csum64(s.buf, SOAK_BYTES)) {
		r = FAIL("cycle %u: the client's data differs from its checksum", n);
		goto out;
	}
	r = wait_ev(s.conn, RKDAPL_CONNECTION_EVENT_DISCONNECTED, 0, &ev, "disconnected");
out:
	return cycle_end(r, ep, rmr, NULL);
}

/* Connects @ep; -EAGAIN: rejected (no listener yet), retry with a new EP. */
static int client_connect(struct rkdapl_ep *ep, const struct sockaddr_in *sin,
			  unsigned long end)
{
	struct rkdapl_event ev;
	int r;

	r = rkdapl_ep_connect(ep, (struct sockaddr *)sin, timeout_ms, NULL, 0);
	if (r)
		return FAIL("ep_connect = %d", r);
	/* A failing connect reports when its timeout has run out: wait a little longer. */
	r = rkdapl_evd_wait(s.conn, timeout_ms + 10000, &ev);
	if (r)
		return FAIL("connect: no event (%d)", r);
	if (ev.type == RKDAPL_CONNECTION_EVENT_ESTABLISHED)
		return 0;
	/* Before the server listens the connect is rejected: the caller retries, new EP. */
	if (ev.type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED && time_before(jiffies, end))
		return -EAGAIN;
	return FAIL("connect: event %u status %d", ev.type, ev.status);
}

/* RDMA WRITEs a pattern made from @seed into the server's buffer, READs it back, compares. */
static int client_round(struct rkdapl_ep *ep, struct rkdapl_lmr *lmr,
			const struct rkdapl_rmr_triplet *rt, u32 seed)
{
	struct rkdapl_lmr_triplet t = { lmr, 0, SOAK_BYTES };
	struct rkdapl_event ev;
	u32 i;
	int r;

	for (i = 0; i < SOAK_BYTES; i++)
		s.buf[i] = (u8)(seed * 131 + i * 7 + (i >> 8));
	memset(s.buf + SOAK_BYTES, 0, SOAK_BYTES);
	rkdapl_lmr_sync_rdma_read(lmr, 0, SOAK_BYTES);
	r = rkdapl_post_rdma_write(ep, &t, 1, rt, 2, 0);
	if (!r)
		r = wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 2, &ev, "rdma write");
	t.offset = SOAK_BYTES;
	if (!r)
		r = rkdapl_post_rdma_read(ep, &t, 1, rt, 3, 0);
	if (!r)
		r = wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 3, &ev, "rdma read");
	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(lmr, SOAK_BYTES, SOAK_BYTES);
	if (memcmp(s.buf, s.buf + SOAK_BYTES, SOAK_BYTES))
		return FAIL("round %u: read back differs from what was written", seed);
	return 0;
}

static int client_cycle(u32 n, const struct sockaddr_in *sin)
{
	struct rkdapl_ep_attr attr = { .retry_count = retry_count };
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_lmr *lmr = NULL;
	struct rkdapl_ep *ep = NULL;
	struct rkdapl_event ev;
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	u32 k;
	int r;

retry:
	r = rkdapl_ep_create(s.pz, s.dto, s.conn, &attr, &ep);
	/*
	 * The RECV of the advertisement, before connecting: the server SENDs it as soon as it
	 * sees the connection, maybe before our ESTABLISHED, and iWARP has no RNR retry.
	 */
	if (!r)
		r = post_one(rkdapl_post_recv, ep, s.msg_lmr, sizeof(*s.msg), sizeof(*s.msg), 1);
	if (!r && !lmr)
		r = rkdapl_lmr_create(s.pz, s.buf, 2 * SOAK_BYTES, RKDAPL_MEM_LOCAL_WRITE, &lmr);
	if (r) {
		FAIL("ep_create/post_recv/lmr_create = %d", r);
		goto out;
	}
	r = client_connect(ep, sin, end);
	if (r == -EAGAIN) {
		rkdapl_ep_free(ep);
		ep = NULL;
		/* its RECV, FLUSHED: not the next attempt's */
		while (!rkdapl_evd_dequeue(s.dto, &ev))
			;
		msleep(200);
		goto retry;
	}
	/* iWARP: the connecting side sends first; the server answers with the advertisement. */
	if (!r && iwarp) {
		s.msg[0] = (struct soak_msg){ SOAK_MAGIC, n, 0, 0, 0, 0 };
		r = post_one(rkdapl_post_send, ep, s.msg_lmr, 0, sizeof(*s.msg), 5);
		if (!r)
			r = wait_two(s.dto, 5, 1, "start send, advertisement recv");
	} else if (!r) {
		r = wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 1, &ev, "advertisement recv");
	}
	if (r)
		goto out;
	if (s.msg[1].magic != SOAK_MAGIC || s.msg[1].length != SOAK_BYTES) {
		r = FAIL("cycle %u: bad advertisement", n);
		goto out;
	}
	rt = (struct rkdapl_rmr_triplet){ s.msg[1].address, s.msg[1].rkey, 0, SOAK_BYTES };
	for (k = 0; k < rounds; k++) {
		r = client_round(ep, lmr, &rt, n + k);
		if (r)
			goto out;
		if (k == 100)
			pr_info("client: streaming\n");
	}
	s.msg[0] = (struct soak_msg){ SOAK_MAGIC, n, 0, 0, SOAK_BYTES, csum64(s.buf, SOAK_BYTES) };
	r = post_one(rkdapl_post_send, ep, s.msg_lmr, 0, sizeof(*s.msg), 4);
	if (!r)
		r = wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 4, &ev, "done send");
	if (!r)
		r = rkdapl_ep_disconnect(ep);
	if (!r)
		r = wait_ev(s.conn, RKDAPL_CONNECTION_EVENT_DISCONNECTED, 0, &ev, "disconnected");
out:
	return cycle_end(r, ep, NULL, lmr);
}

static void soak_free(void)
{
	if (s.psp)
		rkdapl_psp_free(s.psp);
	if (s.msg_lmr)
		rkdapl_lmr_free(s.msg_lmr);
	if (s.buf_lmr)
		rkdapl_lmr_free(s.buf_lmr);
	if (s.dto)
		rkdapl_evd_free(s.dto);
	if (s.conn)
		rkdapl_evd_free(s.conn);
	if (s.psp_evd)
		rkdapl_evd_free(s.psp_evd);
	if (s.pz)
		rkdapl_pz_free(s.pz);
	if (s.ia)
		rkdapl_ia_close(s.ia);
	kfree(s.msg);
	kfree(s.buf);
}

static int __init rkdapl_soak_init(void)
{
	bool server = !strcmp(role, "server");
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	u32 n = 0;
	int r;

	if (!server && strcmp(role, "client")) {
		pr_err("role must be server or client\n");
		return -EINVAL;
	}
	if (!server && !in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("peer=%s is not an IPv4 address\n", peer);
		return -EINVAL;
	}
	memset(&s, 0, sizeof(s));
	s.msg = kzalloc(2 * sizeof(*s.msg), GFP_KERNEL);
	s.buf = kzalloc(2 * SOAK_BYTES, GFP_KERNEL);
	r = s.msg && s.buf ? 0 : -ENOMEM;
	if (!r)
		r = rkdapl_ia_open(dev, &s.ia);
	if (!r) {
		struct rkdapl_ia_attr a;

		r = rkdapl_ia_query(s.ia, &a);
		iwarp = !r && a.transport == RKDAPL_TRANSPORT_IWARP;
	}
	if (!r)
		r = rkdapl_pz_create(s.ia, &s.pz);
	if (!r)
		r = rkdapl_evd_create(s.ia, 64, &s.dto);
	if (!r)
		r = rkdapl_evd_create(s.ia, 16, &s.conn);
	if (!r)
		r = rkdapl_lmr_create(s.pz, s.msg, 2 * sizeof(*s.msg), RKDAPL_MEM_LOCAL_WRITE,
				      &s.msg_lmr);
	if (!r && server)
		r = rkdapl_lmr_create(s.pz, s.buf, SOAK_BYTES,
				      RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
				      RKDAPL_MEM_REMOTE_WRITE, &s.buf_lmr);
	if (!r && server)
		r = rkdapl_evd_create(s.ia, 16, &s.psp_evd);
	if (!r && server)
		r = rkdapl_psp_create(s.ia, port, 4, s.psp_evd, &s.psp);
	if (r) {
		FAIL("set-up = %d", r);
		goto out;
	}
	if (server)
		pr_info("server: listening on port %u\n", port);
	for (n = 0; n < cycles; n++) {
		r = server ? server_cycle(n) : client_cycle(n, &sin);
		if (r)
			break;
		if ((n + 1) % 100 == 0)
			pr_info("%s: %u cycles\n", role, n + 1);
	}
out:
	soak_free();
	if (r)
		pr_info("%s: %u cycles, %u verified, FAILED: %s\n", role, n, n, s.why);
	else
		pr_info("%s: %u cycles, %u verified\n", role, n, n);
	return r ? -EIO : 0;
}

static void __exit rkdapl_soak_exit(void)
{
}

module_init(rkdapl_soak_init);
module_exit(rkdapl_soak_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: many connect/register/write/read/disconnect/free cycles");
