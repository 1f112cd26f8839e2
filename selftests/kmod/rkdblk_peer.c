// SPDX-License-Identifier: GPL-2.0
/*
 * rkdblk_peer: a client of rkdblk_srv that speaks the rkdblk protocol (docs/blockdev.md)
 * command by command, for selftests/blockdev.sh. It connects like one hardware queue of
 * rkdblk.ko, then, as mode= says:
 *
 *   busy      sends two FLUSH commands with the same tag, the second before the first was
 *             answered (the test stalls the server, which then leaves every command unanswered
 *             and its tag busy). The server must disconnect such a client: insmod succeeds only
 *             if DISCONNECTED (or BROKEN) arrives within timeout_ms, and the module's line says
 *             which.
 *   readonly  against a read-only export: the accept must say read-only, a WRITE of 512 bytes
 *             of in-capsule data must be answered -EROFS and a FLUSH after it 0; insmod
 *             succeeds only then, and the module's line says what came back.
 *
 *   insmod rkdblk_peer.ko peer=10.77.0.1 [mode=busy] [port=4421] [dev=rxe0] [timeout_ms=10000]
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/string.h>
#include "../../include/rkdapl.h"
#include "../../samples/rkdblk_srv/proto.h"

static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name (default rxe0)");
static char *peer;
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "the server's IPv4 address (required)");
static ushort port = 4421;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "the server's port (default 4421)");
static char *mode = "busy";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "busy (a command for a busy tag) or readonly (a WRITE to a read-only export)");
static uint timeout_ms = 10000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "how long to wait for each step, in ms (default 10000)");

#define DEPTH 4

/* Where the commands are sent from and the responses would land, in the one LMR. */
#define CMD_OFF(i) ((u64)(i) * sizeof(struct rkdblk_cmd))
#define RESP_OFF(i) (256 + (u64)(i) * sizeof(struct rkdblk_resp))

static struct {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;
	struct rkdapl_ep *ep;
	struct rkdapl_lmr *lmr;
	void *mem;
	char why[160];
} s;

/* readonly mode: the in-capsule WRITE's command and its data, one SEND. */
#define WRITE_OFF 2048
#define WRITE_LEN 512

#define FAIL(fmt, ...) ({ snprintf(s.why, sizeof(s.why), fmt, ##__VA_ARGS__); -EIO; })

/* The next event on the EVD, or -ETIMEDOUT once jiffies pass @end. */
static int wait_until(unsigned long end, struct rkdapl_event *ev)
{
	long left = (long)(end - jiffies);

	if (left <= 0)
		return -ETIMEDOUT;
	return rkdapl_evd_wait(s.evd, jiffies_to_msecs(left) + 1, ev);
}

/* The next connection event on the EVD, skipping DTO completions (the flushes included). */
static int next_conn_event(struct rkdapl_event *ev)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	int r;

	for (;;) {
		r = wait_until(end, ev);
		if (r)
			return r;
		if (ev->type != RKDAPL_DTO_COMPLETION_EVENT &&
		    ev->type != RKDAPL_RMR_BIND_COMPLETION_EVENT)
			return 0;
	}
}

/* The next RECV completion on the EVD (a response), skipping SEND completions. */
static int next_response(struct rkdapl_event *ev)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	int r;

	for (;;) {
		r = wait_until(end, ev);
		if (r)
			return r;
		if (ev->type != RKDAPL_DTO_COMPLETION_EVENT)
			return -ENOTCONN;
		if (ev->status != RKDAPL_DTO_SUCCESS)
			return -EIO;
		if (ev->op == RKDAPL_DTO_RECV)
			return 0;
	}
}

/* Sends one command, @len bytes at @off, and returns the status of its response. */
static int command(u64 off, u32 len, u32 cid, int *status)
{
	struct rkdapl_lmr_triplet t = { s.lmr, off, len };
	const struct rkdblk_resp *resp;
	struct rkdapl_event ev;
	int r;

	rkdapl_lmr_sync_rdma_read(s.lmr, off, len);
	r = rkdapl_post_send(s.ep, &t, 1, cid, 0);
	if (r)
		return r;
	r = next_response(&ev);
	if (r)
		return r;
	rkdapl_lmr_sync_rdma_write(s.lmr, RESP_OFF(ev.cookie - 100), sizeof(*resp));
	resp = s.mem + RESP_OFF(ev.cookie - 100);
	if (le32_to_cpu(resp->cid) != cid)
		return -EPROTO;
	*status = (int)le32_to_cpu(resp->status);
	/* The RECV again, for the next response. */
	t = (struct rkdapl_lmr_triplet){ s.lmr, RESP_OFF(ev.cookie - 100), sizeof(*resp) };
	return rkdapl_post_recv(s.ep, &t, 1, ev.cookie, 0);
}

/* readonly mode: after the accept (@ev), a WRITE refused with -EROFS, then a FLUSH served. */
static int read_only_export(const struct rkdapl_event *ev)
{
	const struct rkdblk_accept *acc = (const void *)ev->private_data;
	struct rkdblk_cmd wr = {
		.op = RKDBLK_OP_WRITE,
		.flags = RKDBLK_FLAG_INLINE,
		.cid = cpu_to_le32(0 | 1 << 16),
		.sector = cpu_to_le64(8),
		.length = cpu_to_le32(WRITE_LEN),
	};
	struct rkdblk_cmd fl = {
		.op = RKDBLK_OP_FLUSH,
		.cid = cpu_to_le32(1 | 1 << 16),
	};
	int r, wst = 0, fst = -1;

	if (ev->private_data_len < sizeof(*acc) ||
	    !(le32_to_cpu(acc->flags) & RKDBLK_ACCEPT_READ_ONLY))
		return FAIL("the accept does not say read-only (flags %#x)",
			    ev->private_data_len < sizeof(*acc) ? 0 : le32_to_cpu(acc->flags));
	if (le32_to_cpu(acc->inline_max) < WRITE_LEN)
		return FAIL("the server takes no in-capsule WRITE of %d bytes", WRITE_LEN);
	memcpy(s.mem + WRITE_OFF, &wr, sizeof(wr));
	memset(s.mem + WRITE_OFF + sizeof(wr), 0xa5, WRITE_LEN);
	r = command(WRITE_OFF, sizeof(wr) + WRITE_LEN, le32_to_cpu(wr.cid), &wst);
	if (r)
		return FAIL("WRITE: no response: %d", r);
	memcpy(s.mem + CMD_OFF(1), &fl, sizeof(fl));
	r = command(CMD_OFF(1), sizeof(fl), le32_to_cpu(fl.cid), &fst);
	if (r)
		return FAIL("FLUSH after the WRITE: no response: %d", r);
	if (wst != -EROFS || fst)
		return FAIL("the WRITE got %d (want %d, -EROFS), the FLUSH after it %d (want 0)",
			    wst, -EROFS, fst);
	pr_info("a read-only export: the accept says so, a WRITE got %d (-EROFS), a FLUSH after it %d\n",
		wst, fst);
	rkdapl_ep_disconnect(s.ep);
	return 0;
}

static int run(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rkdblk_connect req = {
		.magic = cpu_to_le32(RKDBLK_MAGIC),
		.version = cpu_to_le16(RKDBLK_VERSION),
		.queue = cpu_to_le16(7),
		.depth = cpu_to_le16(DEPTH),
	};
	struct rkdapl_event ev;
	u32 i;
	int r;

	if (strcmp(mode, "busy") && strcmp(mode, "readonly"))
		return FAIL("mode=%s: busy or readonly", mode);
	if (!peer || !in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return FAIL("peer=%s is not an IPv4 address", peer ?: "(none)");
	r = rkdapl_ia_open(dev, &s.ia);
	if (!r)
		r = rkdapl_pz_create(s.ia, &s.pz);
	if (!r)
		r = rkdapl_evd_create(s.ia, 64, &s.evd);
	if (!r)
		r = rkdapl_lmr_alloc(s.pz, 4096, RKDAPL_MEM_LOCAL_WRITE, &s.mem, &s.lmr);
	if (!r)
		r = rkdapl_ep_create(s.pz, s.evd, s.evd, NULL, &s.ep);
	if (r)
		return FAIL("set-up: %d", r);
	for (i = 0; i < DEPTH; i++) {
		struct rkdapl_lmr_triplet t = { s.lmr, RESP_OFF(i), sizeof(struct rkdblk_resp) };

		r = rkdapl_post_recv(s.ep, &t, 1, 100 + i, 0);
		if (r)
			return FAIL("RECV %u: %d", i, r);
	}
	r = rkdapl_ep_connect(s.ep, (struct sockaddr *)&sin, timeout_ms, &req, sizeof(req));
	if (r)
		return FAIL("connect: %d", r);
	r = next_conn_event(&ev);
	if (r || ev.type != RKDAPL_CONNECTION_EVENT_ESTABLISHED)
		return FAIL("not established: %d, event %u status %d", r, r ? 0 : ev.type,
			    r ? 0 : ev.status);
	if (!strcmp(mode, "readonly"))
		return read_only_export(&ev);
	/* Two FLUSHes of tag 0, generations 1 and 2: the second while the first is in flight. */
	for (i = 0; i < 2; i++) {
		struct rkdblk_cmd cmd = {
			.op = RKDBLK_OP_FLUSH,
			.cid = cpu_to_le32(0 | (i + 1) << 16),
		};
		struct rkdapl_lmr_triplet t = { s.lmr, CMD_OFF(i), sizeof(cmd) };

		memcpy(s.mem + CMD_OFF(i), &cmd, sizeof(cmd));
		rkdapl_lmr_sync_rdma_read(s.lmr, CMD_OFF(i), sizeof(cmd));
		r = rkdapl_post_send(s.ep, &t, 1, i, 0);
		if (r)
			return FAIL("SEND %u: %d", i, r);
	}
	r = next_conn_event(&ev);
	if (r)
		return FAIL("still connected after %u ms: %d", timeout_ms, r);
	if (ev.type != RKDAPL_CONNECTION_EVENT_DISCONNECTED &&
	    ev.type != RKDAPL_CONNECTION_EVENT_BROKEN)
		return FAIL("event %u status %d instead of a disconnect", ev.type, ev.status);
	pr_info("the server disconnected a client that sent a command for a busy tag (event %s)\n",
		ev.type == RKDAPL_CONNECTION_EVENT_DISCONNECTED ? "DISCONNECTED" : "BROKEN");
	return 0;
}

static int __init rkdblk_peer_init(void)
{
	int r = run();

	if (s.ep)
		rkdapl_ep_free(s.ep);
	if (s.lmr)
		rkdapl_lmr_free(s.lmr);
	if (s.evd)
		rkdapl_evd_free(s.evd);
	if (s.pz)
		rkdapl_pz_free(s.pz);
	if (s.ia)
		rkdapl_ia_close(s.ia);
	if (r)
		pr_err("FAILED: %s\n", s.why);
	return r;
}

static void __exit rkdblk_peer_exit(void)
{
}

module_init(rkdblk_peer_init);
module_exit(rkdblk_peer_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: an rkdblk client that reuses a busy tag, or writes to a read-only export");
