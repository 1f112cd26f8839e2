// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_first: a first consumer of rkdapl's C API (include/rkdapl.h), to copy from.
 *
 *   insmod rkdapl_first.ko addr=10.77.0.1 [port=7460] [size=65536]
 *
 * In one module, over the RDMA device that has the local IPv4 address @addr: a PSP (the
 * server side) and an EP that connects to it (the client side), one LMR each. The server
 * grants its LMR to the client through an RMR; the client RDMA-WRITEs a pattern into it,
 * RDMA-READs it back into a cleared buffer, and both copies are compared with what was sent.
 * init returns 0 when the bytes match (rmmod the module afterwards), a negative errno
 * otherwise, so insmod reports the result. docs/getting-started.md builds and runs it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/inet.h>
#include <linux/module.h>
#include <linux/string.h>
#include <rkdapl.h>

static char *addr = "10.77.0.1";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "a local IPv4 address of the RDMA device (default 10.77.0.1)");
static ushort port = 7460;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7460)");
static uint size = SZ_64K;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "bytes to write and read back (default 65536)");

#define TIMEOUT_MS 10000

/* Waits for the next event on @evd, which must be of @type with status 0. */
static int expect(struct rkdapl_evd *evd, u32 type, struct rkdapl_event *ev, const char *what)
{
	int ret = rkdapl_evd_wait(evd, TIMEOUT_MS, ev);

	if (ret) {
		pr_err("%s: no event (%d)\n", what, ret);
		return ret;
	}
	if (ev->type == type && !ev->status)
		return 0;
	if (ev->type == RKDAPL_DTO_COMPLETION_EVENT || ev->type == RKDAPL_RMR_BIND_COMPLETION_EVENT)
		pr_err("%s: %s %s\n", what, rkdapl_event_msg(ev->type), rkdapl_status_msg(ev->status));
	else
		pr_err("%s: %s, status %d\n", what, rkdapl_event_msg(ev->type), ev->status);
	return -EIO;
}

static int __init first_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rkdapl_evd *c_evd = NULL, *s_evd = NULL;
	struct rkdapl_lmr *c_lmr = NULL, *s_lmr = NULL;
	struct rkdapl_ep *client = NULL, *server = NULL;
	struct rkdapl_psp *psp = NULL;
	struct rkdapl_rmr *rmr = NULL;
	struct rkdapl_ia *ia = NULL;
	struct rkdapl_pz *pz = NULL;
	struct rkdapl_rmr_triplet remote = {};
	struct rkdapl_lmr_triplet iov;
	struct rkdapl_ia_attr attr;
	struct rkdapl_event ev;
	void *c_buf, *s_buf;
	u32 i;
	int ret;

	if (!size || !in4_pton(addr, -1, (u8 *)&sin.sin_addr, -1, NULL)) {
		pr_err("addr=%s size=%u: an IPv4 address and a size above 0, please\n", addr, size);
		return -EINVAL;
	}
	/*
	 * Resources: IA, PZ, an EVD per side, an LMR per side (over memory the LMR allocates).
	 * "a ?: b" calls b only if a returned 0, and is the first error otherwise.
	 */
	ret = rkdapl_ia_open_addr((struct sockaddr *)&sin, &ia) ?:
	      rkdapl_ia_query(ia, &attr) ?:
	      rkdapl_pz_create(ia, &pz) ?:
	      rkdapl_evd_create(ia, 16, &c_evd) ?:
	      rkdapl_evd_create(ia, 16, &s_evd) ?:
	      rkdapl_lmr_alloc(pz, size, RKDAPL_MEM_LOCAL_WRITE, &c_buf, &c_lmr) ?:
	      rkdapl_lmr_alloc(pz, size, RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
			       RKDAPL_MEM_REMOTE_WRITE, &s_buf, &s_lmr);
	if (ret)
		goto out;

	/* Connect: the client's EP to the server's PSP; the server accepts on an EP of its own. */
	ret = rkdapl_psp_create(ia, port, 1, s_evd, &psp) ?:
	      rkdapl_ep_create(pz, c_evd, c_evd, NULL, &client) ?:
	      rkdapl_ep_create(pz, s_evd, s_evd, NULL, &server) ?:
	      rkdapl_ep_connect(client, (struct sockaddr *)&sin, TIMEOUT_MS, NULL, 0) ?:
	      expect(s_evd, RKDAPL_CONNECTION_REQUEST_EVENT, &ev, "connection request") ?:
	      rkdapl_cr_accept(ev.cr, server, NULL, 0) ?:
	      expect(c_evd, RKDAPL_CONNECTION_EVENT_ESTABLISHED, &ev, "client connect") ?:
	      expect(s_evd, RKDAPL_CONNECTION_EVENT_ESTABLISHED, &ev, "server accept");
	if (ret)
		goto out;

	/* The server grants its LMR: the rkey and address are what a peer would be sent. */
	ret = rkdapl_rmr_create(pz, &rmr) ?:
	      rkdapl_rmr_bind(rmr, s_lmr, 0, size, RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE,
			      server, 1, &remote.rkey, &remote.address) ?:
	      expect(s_evd, RKDAPL_RMR_BIND_COMPLETION_EVENT, &ev, "RMR bind");
	if (ret)
		goto out;

	/* RDMA WRITE a pattern into the grant; the server's memory must hold it. */
	for (i = 0; i < size; i++)
		((u8 *)c_buf)[i] = i * 7 + (i >> 8);
	iov = (struct rkdapl_lmr_triplet){ .lmr = c_lmr, .offset = 0, .length = size };
	ret = rkdapl_lmr_sync_rdma_read(c_lmr, 0, size) ?:
	      rkdapl_post_rdma_write(client, &iov, 1, &remote, 2, 0) ?:
	      expect(c_evd, RKDAPL_DTO_COMPLETION_EVENT, &ev, "RDMA WRITE") ?:
	      rkdapl_lmr_sync_rdma_write(s_lmr, 0, size);
	if (!ret && memcmp(s_buf, c_buf, size)) {
		pr_err("the server's memory differs from what was written\n");
		ret = -EIO;
	}
	if (ret)
		goto out;

	/* RDMA READ it back into the cleared client buffer. */
	memset(c_buf, 0, size);
	ret = rkdapl_lmr_sync_rdma_read(c_lmr, 0, size) ?:
	      rkdapl_post_rdma_read(client, &iov, 1, &remote, 3, 0) ?:
	      expect(c_evd, RKDAPL_DTO_COMPLETION_EVENT, &ev, "RDMA READ") ?:
	      rkdapl_lmr_sync_rdma_write(c_lmr, 0, size);
	if (!ret && memcmp(c_buf, s_buf, size)) {
		pr_err("the bytes read back differ from what was written\n");
		ret = -EIO;
	}
	if (!ret)
		pr_info("%u bytes RDMA WRITTEN and READ back over %s, compared: ok\n", size, attr.name);

	/* Free everything; the order is free (objects keep what they were made from alive). */
out:
	if (ret)
		pr_err("failed: %d\n", ret);
	if (client)
		rkdapl_ep_free(client);	/* disconnects, flushes what is still posted */
	if (server)
		rkdapl_ep_free(server);
	if (rmr)
		rkdapl_rmr_free(rmr);	/* revokes the grant */
	if (psp)
		rkdapl_psp_free(psp);
	if (c_lmr)
		rkdapl_lmr_free(c_lmr);	/* and the memory rkdapl_lmr_alloc() gave it */
	if (s_lmr)
		rkdapl_lmr_free(s_lmr);
	if (c_evd)
		rkdapl_evd_free(c_evd);
	if (s_evd)
		rkdapl_evd_free(s_evd);
	if (pz)
		rkdapl_pz_free(pz);
	if (ia)
		rkdapl_ia_close(ia);
	return ret;
}

static void __exit first_exit(void)
{
}

module_init(first_init);
module_exit(first_exit);
MODULE_DESCRIPTION("A first rkdapl consumer: connect, RDMA WRITE, RDMA READ, compare");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
