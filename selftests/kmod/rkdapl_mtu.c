// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_mtu: one connection between the two guests (selftests/mtu.sh, with the netdevs'
 * MTUs set apart), reporting the path MTU each side's EP settled on (rkdapl_ep_query()) and
 * moving 4 KiB, 64 KiB and 1 MiB both ways, every byte checked:
 *
 *   insmod rkdapl_mtu.ko role=server [port=7580]
 *   insmod rkdapl_mtu.ko role=client peer=<server IPv4> [port=7580]
 *
 * Per size, the client RDMA WRITEs a fresh pattern into the server's grant (client -> server
 * packets) and SENDs its checksum; the server checks its buffer and answers; the client RDMA
 * READs the grant back (server -> client packets) and compares. The last line is
 * "rkdapl_mtu: <role>: path MTU N (port active MTU M), K sizes verified" or ", FAILED: <why>".
 */
#define pr_fmt(fmt) "rkdapl_mtu: " fmt

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

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
static ushort port = 7580;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7580)");
static uint timeout_ms = 60000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one event (default 60000)");

#define MTU_MAGIC 0x4d545521u	/* "MTU!" */
#define MTU_MAX (1u << 20)

static const u32 sizes[] = { 4096, 65536, MTU_MAX };

struct mtu_msg {
	__u32 magic;
	__u32 size;		/* client: bytes written; server: 0 in the advertisement */
	__u64 address;
	__u32 rkey;
	__u32 ok;		/* server's answer: 1 if its buffer matched */
	__u64 csum;
};

static struct mtu {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *dto, *conn, *psp_evd;
	struct rkdapl_psp *psp;
	struct rkdapl_ep *ep;
	struct rkdapl_rmr *rmr;
	struct rkdapl_lmr *msg_lmr, *buf_lmr;
	struct mtu_msg *msg;	/* [0] sent, [1] received */
	u8 *buf;		/* client: [0, MAX) written, [MAX, 2 MAX) read back */
	u32 path_mtu, active_mtu, verified;
	char why[160];
} s;

#define FAIL(fmt, ...) ({ snprintf(s.why, sizeof(s.why), fmt, ##__VA_ARGS__); -EIO; })

static u64 csum64(const u8 *p, size_t n)
{
	u64 h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

static int wait_ev(struct rkdapl_evd *evd, u32 type, u64 cookie, const char *what)
{
	struct rkdapl_event ev;
	int r = rkdapl_evd_wait(evd, timeout_ms, &ev);

	if (r)
		return FAIL("%s: no event (%d)", what, r);
	if (ev.type != type || ev.status ||
	    (type <= RKDAPL_RMR_BIND_COMPLETION_EVENT && ev.cookie != cookie))
		return FAIL("%s: event %u status %d cookie %llu", what, ev.type, ev.status,
			    ev.cookie);
	return 0;
}

/*
 * Two DTO completions, cookies @a and @b, in either order: a SEND's completion waits for the
 * peer's ACK, which a lost packet delays until the retransmission, while the peer's reply may
 * already have completed a RECV.
 */
static int wait_two(struct rkdapl_evd *evd, u64 a, u64 b, const char *what)
{
	struct rkdapl_event ev;
	bool seen_a = false, seen_b = false;
	int r;

	while (!seen_a || !seen_b) {
		r = rkdapl_evd_wait(evd, timeout_ms, &ev);
		if (r)
			return FAIL("%s: no event (%d)", what, r);
		if (ev.type != RKDAPL_DTO_COMPLETION_EVENT || ev.status ||
		    (ev.cookie != a && ev.cookie != b) || (ev.cookie == a ? seen_a : seen_b))
			return FAIL("%s: event %u status %d cookie %llu", what, ev.type, ev.status,
				    ev.cookie);
		if (ev.cookie == a)
			seen_a = true;
		else
			seen_b = true;
	}
	return 0;
}

static int msg_post(bool send, u64 cookie)
{
	struct rkdapl_lmr_triplet t = { s.msg_lmr, send ? 0 : sizeof(*s.msg), sizeof(*s.msg) };

	return send ? rkdapl_post_send(s.ep, &t, 1, cookie, 0) :
		      rkdapl_post_recv(s.ep, &t, 1, cookie, 0);
}

/* The path MTU the EP settled on, and the port's own active MTU. */
static int note_mtu(void)
{
	struct rkdapl_ep_attr a;
	struct rkdapl_port_attr p;
	int r = rkdapl_ep_query(s.ep, &a) ?: rkdapl_ia_query_port(s.ia, 1, &p);

	if (r)
		return FAIL("ep_query/ia_query_port = %d", r);
	s.path_mtu = a.path_mtu;
	s.active_mtu = p.active_mtu;
	pr_info("%s: path MTU %u (port active MTU %u)\n", role, s.path_mtu, s.active_mtu);
	return s.path_mtu ? 0 : FAIL("ep_query: path_mtu 0 on an established EP");
}

static int server(void)
{
	struct rkdapl_event ev;
	u32 rkey, i;
	u64 addr;
	int r;

	r = rkdapl_evd_wait(s.psp_evd, timeout_ms * 5, &ev);
	if (r || ev.type != RKDAPL_CONNECTION_REQUEST_EVENT)
		return FAIL("no connection request (%d, event %u)", r, r ? 0 : ev.type);
	r = rkdapl_ep_create(s.pz, s.dto, s.conn, NULL, &s.ep) ?:
	    rkdapl_cr_accept(ev.cr, s.ep, NULL, 0) ?: msg_post(false, 1);
	if (r)
		return FAIL("ep_create/cr_accept/post_recv = %d", r);
	r = wait_ev(s.conn, RKDAPL_CONNECTION_EVENT_ESTABLISHED, 0, "established") ?: note_mtu();
	r = r ?: rkdapl_rmr_create(s.pz, &s.rmr);
	if (!r)
		r = rkdapl_rmr_bind(s.rmr, s.buf_lmr, 0, MTU_MAX,
				    RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE, s.ep, 2,
				    &rkey, &addr);
	r = r ?: wait_ev(s.dto, RKDAPL_RMR_BIND_COMPLETION_EVENT, 2, "bind");
	if (r)
		return r;
	s.msg[0] = (struct mtu_msg){ MTU_MAGIC, 0, addr, rkey, 0, 0 };
	/* The advertisement's SEND (3), and the client's first checksum (RECV 1). */
	r = msg_post(true, 3) ?: wait_two(s.dto, 3, 1, "advertisement, client's checksum");
	for (i = 0; !r && i < ARRAY_SIZE(sizes); i++) {
		rkdapl_lmr_sync_rdma_write(s.buf_lmr, 0, MTU_MAX);
		if (s.msg[1].magic != MTU_MAGIC || s.msg[1].size != sizes[i])
			return FAIL("size %u: bad message", sizes[i]);
		s.msg[0] = (struct mtu_msg){ MTU_MAGIC, sizes[i], 0, 0,
					     s.msg[1].csum == csum64(s.buf, sizes[i]), 0 };
		if (!s.msg[0].ok)
			return FAIL("size %u: the client's RDMA WRITE did not arrive intact", sizes[i]);
		s.verified++;
		r = msg_post(false, 1) ?: msg_post(true, 4);
		/* The answer's SEND (4), and the next size's checksum (RECV 1) if one follows. */
		if (!r && i + 1 < ARRAY_SIZE(sizes))
			r = wait_two(s.dto, 4, 1, "answer, client's checksum");
		else if (!r)
			r = wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 4, "answer");
	}
	return r ?: wait_ev(s.conn, RKDAPL_CONNECTION_EVENT_DISCONNECTED, 0, "disconnected");
}

static int client(const struct sockaddr_in *sin)
{
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_lmr_triplet t;
	struct rkdapl_event ev;
	char what[32];
	u32 i, k, n;
	int r;

	for (k = 0; k < 100; k++) {
		r = rkdapl_ep_create(s.pz, s.dto, s.conn, NULL, &s.ep) ?:
		    rkdapl_ep_connect(s.ep, (struct sockaddr *)sin, timeout_ms, NULL, 0);
		if (r)
			return FAIL("ep_create/connect = %d", r);
		r = rkdapl_evd_wait(s.conn, timeout_ms + 10000, &ev);
		if (!r && ev.type == RKDAPL_CONNECTION_EVENT_ESTABLISHED)
			break;
		if (r || ev.type != RKDAPL_CONNECTION_EVENT_PEER_REJECTED)
			return FAIL("connect: %d, event %u status %d", r, r ? 0 : ev.type,
				    r ? 0 : ev.status);
		/* Rejected: the server does not listen yet. */
		rkdapl_ep_free(s.ep);
		s.ep = NULL;
		msleep(300);
	}
	if (!s.ep)
		return FAIL("connect: rejected 100 times");
	r = note_mtu() ?: msg_post(false, 1) ?:
	    wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 1, "advertisement");
	if (r)
		return r;
	if (s.msg[1].magic != MTU_MAGIC)
		return FAIL("bad advertisement");
	rt = (struct rkdapl_rmr_triplet){ s.msg[1].address, s.msg[1].rkey, 0, MTU_MAX };
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		n = sizes[i];
		for (k = 0; k < n; k++)
			s.buf[k] = (u8)(i * 61 + k * 7 + (k >> 9));
		memset(s.buf + MTU_MAX, 0, n);
		rkdapl_lmr_sync_rdma_read(s.buf_lmr, 0, n);
		t = (struct rkdapl_lmr_triplet){ s.buf_lmr, 0, n };
		rt.length = n;
		snprintf(what, sizeof(what), "size %u: rdma write", n);
		r = rkdapl_post_rdma_write(s.ep, &t, 1, &rt, 2, 0) ?:
		    wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 2, what);
		if (r)
			return r;
		s.msg[0] = (struct mtu_msg){ MTU_MAGIC, n, 0, 0, 0, csum64(s.buf, n) };
		r = msg_post(false, 1) ?: msg_post(true, 3) ?:
		    wait_two(s.dto, 3, 1, "checksum send, server's answer");
		if (r)
			return r;
		if (s.msg[1].magic != MTU_MAGIC || s.msg[1].size != n || !s.msg[1].ok)
			return FAIL("size %u: the server found its buffer differs", n);
		t.offset = MTU_MAX;
		snprintf(what, sizeof(what), "size %u: rdma read", n);
		r = rkdapl_post_rdma_read(s.ep, &t, 1, &rt, 4, 0) ?:
		    wait_ev(s.dto, RKDAPL_DTO_COMPLETION_EVENT, 4, what);
		if (r)
			return r;
		rkdapl_lmr_sync_rdma_write(s.buf_lmr, MTU_MAX, n);
		if (memcmp(s.buf, s.buf + MTU_MAX, n))
			return FAIL("size %u: RDMA READ brought back other bytes", n);
		s.verified++;
	}
	return rkdapl_ep_disconnect(s.ep) ?:
	       wait_ev(s.conn, RKDAPL_CONNECTION_EVENT_DISCONNECTED, 0, "disconnected");
}

static int __init rkdapl_mtu_init(void)
{
	bool srv = !strcmp(role, "server");
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int r;

	if (!srv && strcmp(role, "client")) {
		pr_err("role must be server or client\n");
		return -EINVAL;
	}
	if (!srv && !in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("peer=%s is not an IPv4 address\n", peer);
		return -EINVAL;
	}
	memset(&s, 0, sizeof(s));
	s.msg = kzalloc(2 * sizeof(*s.msg), GFP_KERNEL);
	s.buf = vzalloc(2 * MTU_MAX);
	r = s.msg && s.buf ? 0 : -ENOMEM;
	r = r ?: rkdapl_ia_open(dev, &s.ia);
	r = r ?: rkdapl_pz_create(s.ia, &s.pz);
	r = r ?: rkdapl_evd_create(s.ia, 16, &s.dto);
	r = r ?: rkdapl_evd_create(s.ia, 16, &s.conn);
	r = r ?: rkdapl_lmr_create(s.pz, s.msg, 2 * sizeof(*s.msg), RKDAPL_MEM_LOCAL_WRITE,
				   &s.msg_lmr);
	r = r ?: rkdapl_lmr_create(s.pz, s.buf, 2 * MTU_MAX,
				   RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
				   RKDAPL_MEM_REMOTE_WRITE, &s.buf_lmr);
	if (!r && srv)
		r = rkdapl_evd_create(s.ia, 4, &s.psp_evd) ?:
		    rkdapl_psp_create(s.ia, port, 4, s.psp_evd, &s.psp);
	if (r) {
		FAIL("set-up = %d", r);
	} else {
		if (srv)
			pr_info("server: listening on port %u\n", port);
		r = srv ? server() : client(&sin);
	}
	if (s.ep)
		rkdapl_ep_free(s.ep);
	if (s.rmr)
		rkdapl_rmr_free(s.rmr);
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
	vfree(s.buf);
	pr_info("%s: path MTU %u (port active MTU %u), %u sizes verified%s%s\n", role,
		s.path_mtu, s.active_mtu, s.verified, r ? ", FAILED: " : "", r ? s.why : "");
	return r ? -EIO : 0;
}

static void __exit rkdapl_mtu_exit(void)
{
}

module_init(rkdapl_mtu_init);
module_exit(rkdapl_mtu_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: the path MTU two peers settle on, and transfers through it");
