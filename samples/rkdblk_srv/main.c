// SPDX-License-Identifier: GPL-2.0
/*
 * rkdblk_srv: the server of the rkdblk remote block device (docs/blockdev.md), a C consumer of
 * include/rkdapl.h. It exports the block device or file @path to rkdblk.ko clients:
 *
 *   insmod rkdblk_srv.ko path=/dev/ram0 [dev=rxe0] [port=4421] [max_depth=32]
 *         [direct=1] [inline_data_size=4096] [max_request_dtos=0] [read_only=0]
 *         [allow=10.77.0.2,fd00:77::/64]
 *
 * (modinfo rkdblk_srv.ko describes each). Who may connect and what they get: the trust model
 * in docs/blockdev.md; the allow-list and the rejects are in access.c. The one test hook,
 * stall, is a debugfs file (below), not a module parameter.
 *
 * A kthread waits on the PSP's EVD, which is also every connection's connection EVD: it
 * accepts each request (one connection per client hardware queue) and frees a connection when
 * it ends. Commands arrive by RECV on the connection's DTO EVD, whose upcall copies the
 * command out, re-posts the RECV and queues the command's work; the work reads or writes
 * @path and moves the data by RDMA WRITE (reads) or RDMA READ (writes) to or from the
 * client's grant, then SENDs the completion with invalidate of that grant. A write of at most
 * @inline_data_size bytes may carry its data in the command's SEND instead (in-capsule data,
 * as in NVMe over Fabrics): no grant, no RDMA READ, a plain SEND back.
 *
 * When the RDMA device goes away (`rdma link delete`, its driver unloaded) the IA's async EVD,
 * the PSP's EVD, reports it: the thread frees the connections and everything on the IA, then
 * opens the device again every second until it is back and listens on it anew (nvmet-rdma's
 * port repair), so that clients reconnect.
 *
 * A client that breaks the protocol by sending a command for a tag whose command is still in
 * flight is disconnected (nvmet-rdma's answer to a protocol error); malformed commands are
 * logged and ignored.
 *
 * Send-queue flow control, as nvmet-rdma's wait list: a send-queue slot comes back only when
 * its completion is polled, which may lag behind the client's next command. A command whose
 * RDMA READ or completion finds the send queue full (-ENOSPC) waits on its connection's list,
 * in the order the commands came to post, and the DTO upcall of each SEND or RDMA READ
 * completion (the send queue's DTOs that report one) posts what waits.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include "../../include/rkdapl.h"

#include "proto.h"
#include "srv.h"

static char *path;
module_param(path, charp, 0444);
MODULE_PARM_DESC(path, "the backing block device or file (required)");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name (default rxe0)");
static ushort port = 4421;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 4421; nvmet-rdma keeps 4420)");
static uint max_depth = 32;
module_param(max_depth, uint, 0444);
MODULE_PARM_DESC(max_depth, "commands in flight per connection at most (default 32, at most 1024)");
static bool direct = true;
module_param(direct, bool, 0444);
MODULE_PARM_DESC(direct, "open path with O_DIRECT, bypassing the page cache (default 1, as nvmet's block device backend)");
static uint inline_data_size = 4096;
module_param(inline_data_size, uint, 0444);
MODULE_PARM_DESC(inline_data_size,
		 "bytes of write data a command may carry in-capsule (default 4096, 0 none, at most 16384)");
static bool read_only;
module_param(read_only, bool, 0644);
MODULE_PARM_DESC(read_only,
		 "export path read-only (default 0): WRITE commands fail with -EROFS and clients see a read-only disk; 1 at load opens path read-only, and a later 0 does not make that export writable");
static char *allow;
module_param(allow, charp, 0444);
MODULE_PARM_DESC(allow,
		 "the client addresses that may connect, comma-separated IPv4 or IPv6 addresses or prefixes (10.77.0.2,fd00:77::/64); default: any client that reaches the port");
/*
 * Test hook, in debugfs only (/sys/kernel/debug/rkdblk_srv/stall, root's, mode 0600): while
 * nonzero, commands are taken (their tags busy) but never answered.
 */
static u32 stall;
static uint max_request_dtos;
module_param(max_request_dtos, uint, 0444);
MODULE_PARM_DESC(max_request_dtos,
		 "send-queue DTOs per connection (default 0: 4 per command slot, at most 4096; else 2..4096: fewer make commands wait for slots)");

/* Bytes per command at most. */
#define SRV_MAX_IO (128 * 1024)
/* In-capsule bytes per command at most. */
#define SRV_MAX_INLINE (16 * 1024)

/* Cookies: the kind in the top 32 bits, the RECV index or the tag below. */
enum { K_RECV = 1, K_READ, K_SEND, K_WRITE };
#define COOKIE(k, i) (((u64)(k) << 32) | (i))

struct srv_conn;

/* What a command posts next: its RDMA READ (a WRITE command's data) or its completion. */
enum { P_FETCH = 1, P_RESPOND };

/* One command slot, picked by the command's tag. */
struct srv_cmd {
	struct work_struct work;
	struct srv_conn *c;
	struct rkdblk_cmd cmd;
	/* Set by the upcall for a command refused before any I/O; then the completion's status. */
	int status;
	/* 1 once its RDMA READ (a WRITE command's data) completed. */
	int fetched;
	/* P_FETCH or P_RESPOND, and the first DTO of the completion's chain not yet posted. */
	u8 pending;
	u8 next;
	/* Under the connection's lock: a command of this tag is being served. */
	bool busy;
	/* Under the connection's lock: on its wait list (empty when not). */
	struct list_head wait;
};

struct srv_conn {
	struct list_head node;
	struct rkdapl_ep *ep;
	struct rkdapl_evd *evd;
	struct rkdapl_lmr *lmr;
	/* depth RECV buffers of recv_len, depth completions, depth data buffers of SRV_MAX_IO. */
	void *mem;
	u32 depth;
	/* Bytes of a RECV buffer: a command and inline_data_size bytes of in-capsule data. */
	u32 recv_len;
	u32 queue;
	atomic_t dead;
	struct srv_cmd *cmds;
	/*
	 * Guards each command's busy and wait, and the posts in wait-list order. Taken in
	 * process context only (the commands' work and the DTO upcall, which runs in the CQ's
	 * completion work), as nvmet-rdma takes its wait list's lock.
	 */
	spinlock_t lock;
	/* Commands waiting for send-queue slots, oldest first. */
	struct list_head waiting;
	/* Set once the client broke the protocol: nothing more is served (conn_drop()). */
	atomic_t dropped;
	/* Disconnects a client that broke the protocol. */
	struct work_struct drop;
};

static struct {
	struct file *file;
	u64 capacity;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *psp_evd;
	struct rkdapl_psp *psp;
	struct task_struct *thread;
	struct workqueue_struct *wq;
	struct list_head conns;
	/*
	 * Commands served, WRITEs of them with in-capsule data, and posts that waited for
	 * send-queue slots, for the unload line.
	 */
	atomic64_t served;
	atomic64_t inlined;
	atomic64_t waited;
	/* Connections disconnected for breaking the protocol (conn_drop()). */
	atomic64_t dropped;
	/* WRITE commands refused because the export is read-only. */
	atomic64_t refused_writes;
	/* Times the PSP was made again after the device came back. */
	unsigned int relistened;
	/* path was opened read-only (read_only=1 at load). */
	bool file_ro;
	struct dentry *debugfs;
} srv;

/* Whether the export is read-only now. Any context. */
static bool srv_read_only(void)
{
	return srv.file_ro || READ_ONCE(read_only);
}

static u64 recv_off(struct srv_conn *c, u32 i)
{
	return (u64)i * c->recv_len;
}

static u64 resp_off(struct srv_conn *c, u32 tag)
{
	return (u64)c->depth * c->recv_len + (u64)tag * sizeof(struct rkdblk_resp);
}

/* The data buffers start on a page boundary: O_DIRECT needs them aligned to the block size. */
static u64 data_off(struct srv_conn *c, u32 tag)
{
	return round_up((u64)c->depth * (c->recv_len + sizeof(struct rkdblk_resp)), PAGE_SIZE) +
	       (u64)tag * SRV_MAX_IO;
}

static int post_recv(struct srv_conn *c, u32 i)
{
	struct rkdapl_lmr_triplet t = { c->lmr, recv_off(c, i), c->recv_len };

	return rkdapl_post_recv(c->ep, &t, 1, COOKIE(K_RECV, i), 0);
}

/* Writes the completion of the command in @sc with @status, to post next. Any context. */
static void prepare_response(struct srv_cmd *sc, int status)
{
	struct srv_conn *c = sc->c;
	u32 tag = sc - c->cmds, len = le32_to_cpu(sc->cmd.length);
	struct rkdblk_resp *r = c->mem + resp_off(c, tag);

	memset(r, 0, sizeof(*r));
	r->cid = sc->cmd.cid;
	r->status = cpu_to_le32((u32)status);
	rkdapl_lmr_sync_rdma_read(c->lmr, resp_off(c, tag), sizeof(*r));
	if (!status && sc->cmd.op == RKDBLK_OP_READ && len)
		rkdapl_lmr_sync_rdma_read(c->lmr, data_off(c, tag), len);
	sc->status = status;
	sc->pending = P_RESPOND;
	sc->next = 0;
	atomic64_inc(&srv.served);
}

/*
 * Posts what @sc has pending (sc->pending): its RDMA READ, or its completion from DTO
 * sc->next of the chain on. The completion is a SEND with invalidate of the client's grant
 * when the command had one, with the data's RDMA WRITE chained before it for a successful
 * READ. The tag is free again before the post, as the client may reuse it as soon as the
 * completion arrives, and busy again if the send queue is full. Under the connection's lock.
 */
static int post_pending(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;
	u32 tag = sc - c->cmds, len = le32_to_cpu(sc->cmd.length);
	struct rkdapl_lmr_triplet data = { c->lmr, data_off(c, tag), len };
	struct rkdapl_lmr_triplet resp = { c->lmr, resp_off(c, tag), sizeof(struct rkdblk_resp) };
	struct rkdapl_rmr_triplet remote = {
		.address = le64_to_cpu(sc->cmd.address),
		.rkey = le32_to_cpu(sc->cmd.rkey),
		.length = len,
	};
	struct rkdapl_dto dtos[2] = {};
	u32 n = 0, posted = 0;
	int ret;

	lockdep_assert_held(&c->lock);
	if (sc->pending == P_FETCH)
		return rkdapl_post_rdma_read(c->ep, &data, 1, &remote, COOKIE(K_READ, tag), 0);
	if (!sc->status && sc->cmd.op == RKDBLK_OP_READ && len) {
		dtos[n].op = RKDAPL_DTO_RDMA_WRITE;
		dtos[n].flags = RKDAPL_COMPLETION_SUPPRESS;
		dtos[n].iov = &data;
		dtos[n].num_iov = 1;
		dtos[n].remote = remote;
		dtos[n].cookie = COOKIE(K_WRITE, tag);
		n++;
	}
	dtos[n].op = remote.rkey ? RKDAPL_DTO_SEND_INVALIDATE : RKDAPL_DTO_SEND;
	/*
	 * Signalled, unlike the WRITE: each completion gives the send queue's slots back at once
	 * and posts what waits for them. Suppressed, the SENDs would hold their slots until a DTO
	 * rkdapl signals every half queue completes.
	 */
	dtos[n].invalidate_rkey = remote.rkey;
	dtos[n].iov = &resp;
	dtos[n].num_iov = 1;
	dtos[n].cookie = COOKIE(K_SEND, tag);
	n++;
	sc->busy = false;
	ret = rkdapl_post_chain(c->ep, dtos + sc->next, n - sc->next, &posted);
	if (ret == -ENOSPC) {
		/* The chain stops at the first DTO without a slot: the next post resumes there. */
		sc->next += posted;
		sc->busy = true;
	}
	return ret;
}

/*
 * Posts the pending DTOs of the waiting commands, oldest first, until the send queue is full.
 * A failed RDMA READ turns into its command's completion with the error. Under the
 * connection's lock.
 */
static void post_waiting(struct srv_conn *c)
{
	struct srv_cmd *sc;
	int ret;

	lockdep_assert_held(&c->lock);
	while ((sc = list_first_entry_or_null(&c->waiting, struct srv_cmd, wait))) {
		ret = post_pending(sc);
		if (ret == -ENOSPC)
			return;
		if (ret && sc->pending == P_FETCH) {
			prepare_response(sc, ret);
			continue;
		}
		list_del_init(&sc->wait);
		if (ret && !atomic_read(&c->dead))
			pr_warn("queue %u: completion of tag %u not posted: %d\n", c->queue,
				(u32)(sc - c->cmds), ret);
	}
}

/*
 * Posts @sc's pending DTOs behind the commands already waiting for send-queue slots, or
 * leaves it waiting with them (counted in srv.waited: a WRITE command whose RDMA READ and
 * response both waited counts twice). Process context (the command's work).
 */
static void submit(struct srv_cmd *sc)
{
	struct srv_conn *c = sc->c;

	spin_lock(&c->lock);
	list_add_tail(&sc->wait, &c->waiting);
	post_waiting(c);
	if (!list_empty(&sc->wait))
		atomic64_inc(&srv.waited);
	spin_unlock(&c->lock);
}

/* Sends the completion of the command in @sc with @status. Process context. */
static void respond(struct srv_cmd *sc, int status)
{
	prepare_response(sc, status);
	submit(sc);
}

/*
 * A command can arrive before this side saw ESTABLISHED (rkdapl_cr_accept()), when posting
 * gets -ENOTCONN: wait for the state to settle, up to 5 s (work items may sleep).
 */
static void wait_connected(struct srv_conn *c)
{
	u32 state = RKDAPL_EP_STATE_PASSIVE_CONNECTION_PENDING;
	int i;

	for (i = 0; i < 5000; i++) {
		if (rkdapl_ep_get_state(c->ep, &state) ||
		    state != RKDAPL_EP_STATE_PASSIVE_CONNECTION_PENDING)
			return;
		usleep_range(1000, 2000);
	}
}

static void cmd_work(struct work_struct *w)
{
	struct srv_cmd *sc = container_of(w, struct srv_cmd, work);
	struct srv_conn *c = sc->c;
	u32 tag = sc - c->cmds, len = le32_to_cpu(sc->cmd.length);
	loff_t pos = (loff_t)le64_to_cpu(sc->cmd.sector) << 9;
	void *buf = c->mem + data_off(c, tag);
	ssize_t n;
	int ret;

	wait_connected(c);
	if (sc->status)
		return respond(sc, sc->status);
	switch (sc->cmd.op) {
	case RKDBLK_OP_READ:
		n = kernel_read(srv.file, buf, len, &pos);
		return respond(sc, n == len ? 0 : n < 0 ? (int)n : -EIO);
	case RKDBLK_OP_WRITE:
		if (!sc->fetched) {
			sc->pending = P_FETCH;
			return submit(sc);
		}
		rkdapl_lmr_sync_rdma_write(c->lmr, data_off(c, tag), len);
		n = kernel_write(srv.file, buf, len, &pos);
		ret = n == len ? 0 : n < 0 ? (int)n : -EIO;
		if (!ret && (sc->cmd.flags & RKDBLK_FLAG_FUA))
			ret = vfs_fsync_range(srv.file, pos - len, pos - 1, 1);
		return respond(sc, ret);
	case RKDBLK_OP_FLUSH:
		return respond(sc, vfs_fsync(srv.file, 0));
	}
	respond(sc, -EOPNOTSUPP);
}

/* Disconnects the client of @c (process context). */
static void drop_work(struct work_struct *w)
{
	struct srv_conn *c = container_of(w, struct srv_conn, drop);
	int ret;

	/* A command can arrive before this side saw ESTABLISHED: disconnect needs CONNECTED. */
	wait_connected(c);
	ret = rkdapl_ep_disconnect(c->ep);
	/*
	 * -EINVAL: conn_free() freed the EP meanwhile (rkdapl refuses the stale handle);
	 * -ENOTCONN: the connection ended meanwhile. Either way the client is gone.
	 */
	if (!ret || ret == -EINVAL || ret == -ENOTCONN)
		atomic64_inc(&srv.dropped);
	else
		pr_warn("queue %u: disconnecting the client failed: %d\n", c->queue, ret);
}

/*
 * The client of @c broke the protocol (@why, about @tag): no more of its commands are served,
 * and its connection is disconnected (from a work item: the DTO upcall must not sleep). The
 * PSP thread frees it when DISCONNECTED arrives. Any context.
 */
static void conn_drop(struct srv_conn *c, const char *why, u32 tag)
{
	if (atomic_xchg(&c->dropped, 1))
		return;
	atomic_set(&c->dead, 1);
	pr_warn("queue %u: %s %u: the client broke the protocol, disconnecting it\n", c->queue,
		why, tag);
	queue_work(srv.wq, &c->drop);
}

/*
 * A new command arrived in RECV @i (@len bytes): the command copied out (with its in-capsule
 * data, into its tag's data buffer), the RECV posted again, the work queued.
 */
static void on_command(struct srv_conn *c, u32 i, u64 len)
{
	struct rkdblk_cmd cmd;
	struct srv_cmd *sc = NULL;
	bool inline_data = false, busy;
	u32 tag, io = 0;
	u64 end;
	int ret;

	if (len < sizeof(cmd) || len > c->recv_len || atomic_read(&c->dropped))
		goto post;
	rkdapl_lmr_sync_rdma_write(c->lmr, recv_off(c, i), len);
	memcpy(&cmd, c->mem + recv_off(c, i), sizeof(cmd));
	tag = RKDBLK_TAG(le32_to_cpu(cmd.cid));
	io = le32_to_cpu(cmd.length);
	inline_data = cmd.flags & RKDBLK_FLAG_INLINE;
	/* In-capsule data: a WRITE's, no grant, exactly the command's length after it. */
	if (tag >= c->depth ||
	    (inline_data ? cmd.op != RKDBLK_OP_WRITE || cmd.rkey || !io ||
				   io > c->recv_len - sizeof(cmd) || len != sizeof(cmd) + io
			 : len != sizeof(cmd))) {
		pr_warn("queue %u: malformed command (%llu bytes, tag %u, flags %#x), ignored\n",
			c->queue, len, tag, cmd.flags);
		goto post;
	}
	sc = &c->cmds[tag];
	spin_lock(&c->lock);
	busy = sc->busy;
	sc->busy = true;
	spin_unlock(&c->lock);
	if (busy) {
		/*
		 * The client sent a command for a tag whose command is still in flight: it does
		 * not follow the protocol (the tag's buffer is in use), and nothing it sends on
		 * this connection can be trusted. As nvmet-rdma does on a protocol error, the
		 * connection goes.
		 */
		conn_drop(c, "a command for busy tag", tag);
		sc = NULL;
		goto post;
	}
	/* Test hook: the command is taken (its tag busy) and never answered. */
	if (READ_ONCE(stall)) {
		sc = NULL;
		goto post;
	}
	if (inline_data) {
		memcpy(c->mem + data_off(c, tag), c->mem + recv_off(c, i) + sizeof(cmd), io);
		atomic64_inc(&srv.inlined);
	}
post:
	ret = post_recv(c, i);
	if (ret && !atomic_read(&c->dead))
		pr_warn("queue %u: RECV %u not posted again: %d\n", c->queue, i, ret);
	if (!sc)
		return;
	sc->cmd = cmd;
	sc->fetched = inline_data;
	sc->status = 0;
	end = le64_to_cpu(cmd.sector) + (io >> 9);
	if (cmd.op < RKDBLK_OP_READ || cmd.op > RKDBLK_OP_FLUSH)
		sc->status = -EOPNOTSUPP;
	else if (cmd.op != RKDBLK_OP_FLUSH &&
		 (!io || io > SRV_MAX_IO || io & 511 || (!cmd.rkey && !inline_data) ||
		  end > srv.capacity))
		sc->status = -EINVAL;
	else if (cmd.op == RKDBLK_OP_WRITE && srv_read_only())
		/* Refused before its data is fetched; the client's grant ends with the response. */
		sc->status = -EROFS;
	if (sc->status == -EROFS && atomic64_inc_return(&srv.refused_writes) == 1)
		pr_info("queue %u: a WRITE refused with -EROFS: the export is read-only\n",
			c->queue);
	queue_work(srv.wq, &sc->work);
}

/* DTO completions of one connection (the CQ's completion work: must not sleep). */
static void dto_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct srv_conn *c = ctx;
	u32 kind = ev->cookie >> 32, i = (u32)ev->cookie;

	if (ev->type != RKDAPL_DTO_COMPLETION_EVENT)
		return;
	if (ev->status != RKDAPL_DTO_SUCCESS) {
		if (!atomic_xchg(&c->dead, 1) && ev->status != RKDAPL_DTO_FLUSHED)
			pr_warn("queue %u: DTO (kind %u, %u) failed with status %d\n", c->queue,
				kind, i, ev->status);
		return;
	}
	/*
	 * A send-queue completion gave its slots back (before this upcall): post what waits for
	 * them. The list is read without the lock, as nvmet-rdma reads its wait list: a command
	 * refused with -ENOSPC found every slot taken, and slots come back in posting order. Only
	 * the list's head can hold a WRITE posted without its SEND, so with at least 2 slots
	 * (max_request_dtos) a SEND or RDMA READ posted before the refusal is still outstanding;
	 * rkdapl frees its slot under the EP's queue lock after the refusal took that lock, and
	 * this upcall, after it, sees the command on the list.
	 */
	if (kind != K_RECV && !list_empty(&c->waiting)) {
		spin_lock(&c->lock);
		post_waiting(c);
		spin_unlock(&c->lock);
	}
	if (kind == K_RECV && i < c->depth) {
		on_command(c, i, ev->transferred_length);
	} else if (kind == K_READ && i < c->depth) {
		c->cmds[i].fetched = 1;
		queue_work(srv.wq, &c->cmds[i].work);
	}
}

static void conn_free(struct srv_conn *c)
{
	atomic_set(&c->dead, 1);
	list_del(&c->node);
	/* Drains the QP: no upcall for it after this, so no work is queued any more. */
	if (c->ep)
		rkdapl_ep_free(c->ep);
	/* Work still running posts on a freed EP: rkdapl refuses the stale handle (-EINVAL). */
	flush_workqueue(srv.wq);
	if (c->lmr)
		rkdapl_lmr_free(c->lmr);
	if (c->evd)
		rkdapl_evd_free(c->evd);
	kvfree(c->cmds);
	kfree(c);
}

static void accept_one(struct rkdapl_cr *cr, const struct rkdapl_event *ev)
{
	const struct rkdblk_connect *req = (const void *)ev->private_data;
	struct rkdapl_ep_attr attr = {};
	struct rkdblk_accept acc = {};
	struct srv_conn *c;
	u32 i;
	int ret;

	/* Who asks comes first: a client off the allow-list learns nothing else. */
	if (!srv_admit(cr))
		return;
	if (ev->private_data_len < sizeof(*req) || le32_to_cpu(req->magic) != RKDBLK_MAGIC ||
	    le16_to_cpu(req->version) != RKDBLK_VERSION || !req->depth) {
		pr_warn("connection request without an rkdblk header, rejected\n");
		srv_reject(cr, RKDBLK_REJ_BAD_REQUEST);
		return;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		srv_reject(cr, RKDBLK_REJ_NO_RESOURCES);
		return;
	}
	INIT_LIST_HEAD(&c->node);
	list_add(&c->node, &srv.conns);
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->waiting);
	INIT_WORK(&c->drop, drop_work);
	c->queue = le16_to_cpu(req->queue);
	c->depth = min_t(u32, le16_to_cpu(req->depth), max_depth);
	c->recv_len = sizeof(struct rkdblk_cmd) + inline_data_size;
	c->cmds = kvcalloc(c->depth, sizeof(*c->cmds), GFP_KERNEL);
	ret = -ENOMEM;
	if (!c->cmds)
		goto fail;
	for (i = 0; i < c->depth; i++) {
		c->cmds[i].c = c;
		INIT_WORK(&c->cmds[i].work, cmd_work);
		INIT_LIST_HEAD(&c->cmds[i].wait);
	}
	ret = rkdapl_evd_create(srv.ia, 4 * c->depth + 16, &c->evd);
	if (ret)
		goto fail;
	ret = rkdapl_evd_modify_upcall(c->evd, RKDAPL_UPCALL_SINGLE_INSTANCE, dto_upcall, c);
	if (ret)
		goto fail;
	ret = rkdapl_lmr_alloc(srv.pz, data_off(c, c->depth), RKDAPL_MEM_LOCAL_WRITE, &c->mem,
			       &c->lmr);
	if (ret)
		goto fail;
	/*
	 * A READ command takes a WRITE and a SEND, a WRITE command a READ and a SEND; twice that,
	 * as the SENDs' slots come back only when their completions are polled.
	 */
	attr.max_request_dtos = max_request_dtos ?: min_t(u32, 4 * c->depth, 4096);
	attr.max_recv_dtos = c->depth;
	attr.max_request_iov = 1;
	attr.max_recv_iov = 1;
	attr.max_rdma_read_out = 16;
	ret = rkdapl_ep_create(srv.pz, c->evd, srv.psp_evd, &attr, &c->ep);
	if (ret)
		goto fail;
	acc.magic = cpu_to_le32(RKDBLK_MAGIC);
	acc.version = cpu_to_le16(RKDBLK_VERSION);
	acc.depth = cpu_to_le16(c->depth);
	acc.max_io = cpu_to_le32(SRV_MAX_IO);
	acc.block_size = cpu_to_le32(512);
	acc.capacity = cpu_to_le64(srv.capacity);
	acc.inline_max = cpu_to_le32(inline_data_size);
	acc.flags = cpu_to_le32(srv_read_only() ? RKDBLK_ACCEPT_READ_ONLY : 0);
	ret = rkdapl_cr_accept(cr, c->ep, &acc, sizeof(acc));
	cr = NULL;
	if (ret)
		goto fail;
	for (i = 0; i < c->depth; i++) {
		ret = post_recv(c, i);
		if (ret)
			goto fail;
	}
	pr_info("queue %u: accepted, depth %u\n", c->queue, c->depth);
	return;
fail:
	pr_warn("queue %u: not accepted: %d\n", c->queue, ret);
	if (cr)
		srv_reject(cr, RKDBLK_REJ_NO_RESOURCES);
	conn_free(c);
}

static struct srv_conn *conn_of(struct rkdapl_ep *ep)
{
	struct srv_conn *c;

	list_for_each_entry(c, &srv.conns, node)
		if (c->ep == ep)
			return c;
	return NULL;
}

/*
 * Opens the IA on @dev, its PZ and the PSP's EVD, which is also the IA's async EVD (the
 * device's removal is reported there), and makes the PSP. Nothing is left open on an error.
 * Process context (init, the thread).
 */
static int srv_listen(void)
{
	int ret;

	ret = rkdapl_ia_open(dev, &srv.ia);
	if (ret)
		return ret;
	ret = rkdapl_pz_create(srv.ia, &srv.pz);
	if (ret)
		goto out_ia;
	ret = rkdapl_evd_create(srv.ia, 256, &srv.psp_evd);
	if (ret)
		goto out_pz;
	ret = rkdapl_ia_set_async_evd(srv.ia, srv.psp_evd);
	if (ret)
		goto out_evd;
	ret = rkdapl_psp_create(srv.ia, port, 64, srv.psp_evd, &srv.psp);
	if (ret)
		goto out_evd;
	return 0;
out_evd:
	rkdapl_evd_free(srv.psp_evd);
out_pz:
	rkdapl_pz_free(srv.pz);
out_ia:
	rkdapl_ia_close(srv.ia);
	srv.ia = NULL;
	srv.psp = NULL;
	return ret;
}

/*
 * Frees the connections, the PSP, its EVD, the PZ and the IA (after the device's removal, or
 * at unload). Process context (the thread, or exit once the thread stopped).
 */
static void srv_unlisten(void)
{
	struct srv_conn *c, *tmp;

	list_for_each_entry_safe(c, tmp, &srv.conns, node)
		conn_free(c);
	if (!srv.ia)
		return;
	rkdapl_psp_free(srv.psp);
	rkdapl_evd_free(srv.psp_evd);
	rkdapl_pz_free(srv.pz);
	rkdapl_ia_close(srv.ia);
	srv.ia = NULL;
	srv.psp = NULL;
}

static int srv_thread(void *unused)
{
	struct rkdapl_event ev;
	struct srv_conn *c;
	int ret;

	while (!kthread_should_stop()) {
		if (!srv.ia) {
			/* The device went away: listen again once it is back, every second. */
			if (srv_listen()) {
				schedule_timeout_interruptible(HZ);
				continue;
			}
			srv.relistened++;
			pr_info("%s is back: listening on port %u again\n", dev, port);
			continue;
		}
		ret = rkdapl_evd_wait(srv.psp_evd, 200, &ev);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			continue;
		if (ret) {
			pr_warn("waiting on the PSP's EVD failed (%d): listening again\n", ret);
			srv_unlisten();
			continue;
		}
		switch (ev.type) {
		case RKDAPL_CONNECTION_REQUEST_EVENT:
			accept_one(ev.cr, &ev);
			break;
		case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
			break;
		case RKDAPL_ASYNC_IA_CATASTROPHIC:
			pr_warn("%s went away (%d): its connections closed; listening again once it is back\n",
				dev, ev.status);
			srv_unlisten();
			break;
		case RKDAPL_ASYNC_EVD_OVERFLOW:
		case RKDAPL_ASYNC_SRQ_LIMIT_REACHED ... RKDAPL_ASYNC_CQ_ERROR:
			/* The connections' own events follow (BROKEN); the rest is not ours. */
			break;
		default:
			/* DISCONNECTED, BROKEN, or a failed accept's outcome. */
			c = conn_of(ev.ep);
			if (c) {
				pr_info("queue %u: connection ended (event %u, status %d)\n",
					c->queue, ev.type, ev.status);
				conn_free(c);
			}
		}
	}
	srv_unlisten();
	return 0;
}

static int __init srv_init(void)
{
	int ret;

	INIT_LIST_HEAD(&srv.conns);
	if (!path)
		return -EINVAL;
	if (max_depth < 1 || max_depth > 1024 || inline_data_size > SRV_MAX_INLINE ||
	    inline_data_size & 511 || max_request_dtos == 1 || max_request_dtos > 4096)
		return -EINVAL;
	ret = srv_allow_parse(allow);
	if (ret)
		return ret;
	srv.file_ro = read_only;
	srv.file = filp_open(path, (srv.file_ro ? O_RDONLY : O_RDWR) | O_LARGEFILE |
			     (direct ? O_DIRECT : 0), 0);
	if (IS_ERR(srv.file)) {
		ret = PTR_ERR(srv.file);
		pr_err("cannot open %s: %d\n", path, ret);
		goto out_allow;
	}
	srv.capacity = i_size_read(srv.file->f_mapping->host) >> 9;
	ret = -ENOMEM;
	srv.wq = alloc_workqueue("rkdblk_srv", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!srv.wq)
		goto out_file;
	ret = srv_listen();
	if (ret)
		goto out_wq;
	srv.thread = kthread_run(srv_thread, NULL, "rkdblk_srv");
	if (IS_ERR(srv.thread)) {
		ret = PTR_ERR(srv.thread);
		srv_unlisten();
		goto out_wq;
	}
	/* Test hook only: no module parameter a production set-up could leave on. */
	srv.debugfs = debugfs_create_dir("rkdblk_srv", NULL);
	debugfs_create_u32("stall", 0600, srv.debugfs, &stall);
	pr_info("serving %s (%llu sectors%s) on %s port %u to %s\n", path, srv.capacity,
		srv_read_only() ? ", read-only" : "", dev, port,
		allow && *allow ? allow : "any client (no allow-list)");
	return 0;
out_wq:
	destroy_workqueue(srv.wq);
out_file:
	filp_close(srv.file, NULL);
out_allow:
	srv_allow_free();
	return ret;
}

static void __exit srv_exit(void)
{
	debugfs_remove(srv.debugfs);
	/* The thread frees the connections and the PSP (which rejects what waits) as it stops. */
	kthread_stop(srv.thread);
	destroy_workqueue(srv.wq);
	filp_close(srv.file, NULL);
	srv_allow_free();
	if (srv.relistened)
		pr_info("listened again %u time(s) after %s went away\n", srv.relistened, dev);
	pr_info("served %lld commands, %lld of them WRITEs with in-capsule data; %lld posts waited for send-queue slots; %lld clients disconnected for breaking the protocol; %lld WRITEs refused (read-only); %lld connections refused (allow-list)\n",
		(long long)atomic64_read(&srv.served), (long long)atomic64_read(&srv.inlined),
		(long long)atomic64_read(&srv.waited), (long long)atomic64_read(&srv.dropped),
		(long long)atomic64_read(&srv.refused_writes), srv_refused());
}

module_init(srv_init);
module_exit(srv_exit);
MODULE_DESCRIPTION("rkdblk server: a block device exported over rkdapl");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
