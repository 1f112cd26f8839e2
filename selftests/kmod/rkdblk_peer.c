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
 *   inread    asks for in-capsule READs (RKDBLK_CONNECT_INLINE_READ) and checks the server's
 *             side of them: the accept must grant them; a 512-byte in-capsule WRITE of a
 *             pattern, then an in-capsule READ of it, which must come back as a SEND with
 *             immediate data (the READ's cid) of exactly 512 bytes equal to the pattern; then
 *             malformed in-capsule READs (longer than inline_max, with an rkey, of 0 bytes),
 *             which the server must ignore, and a FLUSH after them answered 0 (the connection
 *             still serves). The test greps the server's "malformed command" lines.
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
MODULE_PARM_DESC(mode, "busy (a command for a busy tag), readonly (a WRITE to a read-only export) or inread (in-capsule READs)");
static uint timeout_ms = 10000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "how long to wait for each step, in ms (default 10000)");

#define DEPTH 4

/* Where the commands are sent from and the responses would land, in the one LMR. */
#define CMD_OFF(i) ((u64)(i) * sizeof(struct rkdblk_cmd))
#define RESP_OFF(i) (256 + (u64)(i) * sizeof(struct rkdblk_resp))
/* inread mode: the RECVs take a whole in-capsule READ each (inline_max, at most INREAD_LEN). */
#define INREAD_LEN 4096
#define INREAD_OFF(i) (INREAD_LEN + (u64)(i) * INREAD_LEN)
#define LMR_LEN INREAD_OFF(DEPTH)

static struct {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;
	struct rkdapl_ep *ep;
	struct rkdapl_lmr *lmr;
	void *mem;
	bool inread;
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

/* Where the RECV of @cookie (100 + its index) lands, and its length. */
static u64 recv_off(u64 cookie)
{
	return s.inread ? INREAD_OFF(cookie - 100) : RESP_OFF(cookie - 100);
}

static u32 recv_len(void)
{
	return s.inread ? INREAD_LEN : sizeof(struct rkdblk_resp);
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

/*
 * Sends one command, @len bytes at @off, and returns the status of its response. An answer
 * that is in-capsule READ data (a SEND with immediate data) must carry @cid and exactly
 * @data_len bytes, which are copied to @data (status 0); a plain response must carry @cid.
 */
static int command(u64 off, u32 len, u32 cid, int *status, void *data, u32 data_len)
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
	rkdapl_lmr_sync_rdma_write(s.lmr, recv_off(ev.cookie), recv_len());
	if (ev.flags & RKDAPL_EVENT_WITH_IMM) {
		if (ev.immediate != cid || !data || ev.transferred_length != data_len)
			return FAIL("in-capsule READ data: imm %#x (cid %#x), %llu bytes (want %u)",
				    ev.immediate, cid, ev.transferred_length,
				    data ? data_len : 0);
		memcpy(data, s.mem + recv_off(ev.cookie), data_len);
		*status = 0;
	} else {
		resp = s.mem + recv_off(ev.cookie);
		if (ev.transferred_length != sizeof(*resp) || le32_to_cpu(resp->cid) != cid)
			return FAIL("response of %llu bytes for cid %#x (want %zu bytes, cid %#x)",
				    ev.transferred_length, le32_to_cpu(resp->cid),
				    sizeof(*resp), cid);
		*status = (int)le32_to_cpu(resp->status);
	}
	/* The RECV again, for the next response. */
	t = (struct rkdapl_lmr_triplet){ s.lmr, recv_off(ev.cookie), recv_len() };
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
	r = command(WRITE_OFF, sizeof(wr) + WRITE_LEN, le32_to_cpu(wr.cid), &wst, NULL, 0);
	if (r)
		return FAIL("WRITE: no response: %d", r);
	memcpy(s.mem + CMD_OFF(1), &fl, sizeof(fl));
	r = command(CMD_OFF(1), sizeof(fl), le32_to_cpu(fl.cid), &fst, NULL, 0);
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

/*
 * inread mode: after the accept (@ev), an in-capsule WRITE of a pattern and an in-capsule
 * READ of it compared byte for byte, then three malformed in-capsule READs the server must
 * ignore, and a FLUSH the connection must still answer.
 */
static int inline_reads(const struct rkdapl_event *ev)
{
	static u8 back[WRITE_LEN];
	const struct rkdblk_accept *acc = (const void *)ev->private_data;
	struct rkdblk_cmd cmd = {
		.op = RKDBLK_OP_WRITE,
		.flags = RKDBLK_FLAG_INLINE,
		.cid = cpu_to_le32(0 | 1 << 16),
		.sector = cpu_to_le64(8),
		.length = cpu_to_le32(WRITE_LEN),
	};
	u32 inline_max, i;
	int r, st = -1;

	if (ev->private_data_len < sizeof(*acc) ||
	    !(le32_to_cpu(acc->flags) & RKDBLK_ACCEPT_INLINE_READ))
		return FAIL("the accept does not grant in-capsule READs (flags %#x)",
			    ev->private_data_len < sizeof(*acc) ? 0 : le32_to_cpu(acc->flags));
	inline_max = le32_to_cpu(acc->inline_max);
	if (inline_max < WRITE_LEN || inline_max > INREAD_LEN)
		return FAIL("inline_max %u: not within %d..%d", inline_max, WRITE_LEN, INREAD_LEN);
	memcpy(s.mem + WRITE_OFF, &cmd, sizeof(cmd));
	for (i = 0; i < WRITE_LEN; i++)
		((u8 *)s.mem)[WRITE_OFF + sizeof(cmd) + i] = (u8)(i * 7 + 3);
	r = command(WRITE_OFF, sizeof(cmd) + WRITE_LEN, le32_to_cpu(cmd.cid), &st, NULL, 0);
	if (r || st)
		return r ? r : FAIL("in-capsule WRITE: status %d", st);
	/* The READ of it, answered in-capsule. */
	cmd.op = RKDBLK_OP_READ;
	cmd.cid = cpu_to_le32(1 | 2 << 16);
	memcpy(s.mem + CMD_OFF(1), &cmd, sizeof(cmd));
	r = command(CMD_OFF(1), sizeof(cmd), le32_to_cpu(cmd.cid), &st, back, WRITE_LEN);
	if (r || st)
		return r ? r : FAIL("in-capsule READ: status %d", st);
	for (i = 0; i < WRITE_LEN; i++)
		if (back[i] != (u8)(i * 7 + 3))
			return FAIL("in-capsule READ: byte %u is %#x, written %#x", i, back[i],
				    (u8)(i * 7 + 3));
	/* Malformed: longer than inline_max, with an rkey, of 0 bytes. Tags 2 and 3, and 2. */
	for (i = 0; i < 3; i++) {
		struct rkdblk_cmd bad = cmd;
		struct rkdapl_lmr_triplet t = { s.lmr, CMD_OFF(2 + i % 2), sizeof(bad) };

		bad.cid = cpu_to_le32((2 + i % 2) | (3 + i) << 16);
		if (i == 0)
			bad.length = cpu_to_le32(inline_max + 512);
		else if (i == 1)
			bad.rkey = cpu_to_le32(0x1234);
		else
			bad.length = 0;
		memcpy(s.mem + CMD_OFF(2 + i % 2), &bad, sizeof(bad));
		rkdapl_lmr_sync_rdma_read(s.lmr, t.offset, t.length);
		r = rkdapl_post_send(s.ep, &t, 1, 2 + i, 0);
		if (r)
			return FAIL("malformed READ %u: SEND: %d", i, r);
	}
	/* The connection still serves: a FLUSH (tag 1 again, its READ answered) gets 0. */
	cmd = (struct rkdblk_cmd){ .op = RKDBLK_OP_FLUSH, .cid = cpu_to_le32(1 | 9 << 16) };
	memcpy(s.mem + CMD_OFF(1), &cmd, sizeof(cmd));
	r = command(CMD_OFF(1), sizeof(cmd), le32_to_cpu(cmd.cid), &st, NULL, 0);
	if (r || st)
		return r ? r : FAIL("FLUSH after the malformed READs: status %d", st);
	pr_info("in-capsule READs: %u bytes came back as a SEND with immediate data equal to what was written, 3 malformed READs ignored, a FLUSH after them 0\n",
		WRITE_LEN);
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

	if (strcmp(mode, "busy") && strcmp(mode, "readonly") && strcmp(mode, "inread"))
		return FAIL("mode=%s: busy, readonly or inread", mode);
	s.inread = !strcmp(mode, "inread");
	if (s.inread)
		req.flags = cpu_to_le16(RKDBLK_CONNECT_INLINE_READ);
	if (!peer || !in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return FAIL("peer=%s is not an IPv4 address", peer ?: "(none)");
	r = rkdapl_ia_open(dev, &s.ia);
	if (!r)
		r = rkdapl_pz_create(s.ia, &s.pz);
	if (!r)
		r = rkdapl_evd_create(s.ia, 64, &s.evd);
	if (!r)
		r = rkdapl_lmr_alloc(s.pz, LMR_LEN, RKDAPL_MEM_LOCAL_WRITE, &s.mem, &s.lmr);
	if (!r)
		r = rkdapl_ep_create(s.pz, s.evd, s.evd, NULL, &s.ep);
	if (r)
		return FAIL("set-up: %d", r);
	for (i = 0; i < DEPTH; i++) {
		struct rkdapl_lmr_triplet t = { s.lmr, recv_off(100 + i), recv_len() };

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
	if (s.inread)
		return inline_reads(&ev);
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
MODULE_DESCRIPTION("rkdapl selftest: an rkdblk client that reuses a busy tag, writes to a read-only export or checks in-capsule READs");
