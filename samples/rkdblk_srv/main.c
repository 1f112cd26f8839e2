// SPDX-License-Identifier: GPL-2.0
/*
 * rkdblk_srv: the server of the rkdblk remote block device (docs/blockdev.md), a C consumer of
 * include/rkdapl.h. It exports the block device or file @path to rkdblk.ko clients:
 *
 *   insmod rkdblk_srv.ko path=/dev/ram0 [dev=rxe0[,rxe1]] [port=4421] [port2=4422] [max_depth=32]
 *         [direct=1] [inline_data_size=4096] [max_request_dtos=0] [read_only=0]
 *         [allow=10.77.0.2,fd00:77::/64] [nqn=NAME]
 *
 * (modinfo rkdblk_srv.ko describes each). Who may connect and what they get: the trust model
 * in docs/blockdev.md; the allow-list and the rejects are in access.c, the commands in cmd.c
 * (this file: the parameters, the PSP, the connections). The one test hook,
 * stall, is a debugfs file (below), not a module parameter.
 *
 * With two devices (dev=A,B) the server listens on each, A at @port and B at @port2, each
 * with its own IA, PSP, connections and thread: a client's two paths to the one export
 * (rkdblk's multipath). rkdapl's PSPs listen on the wildcard address, so one port has one
 * PSP per machine.
 *
 * A kthread per device waits on its PSP's EVD, which is also every connection's connection EVD: it
 * accepts each request (one connection per client hardware queue) and frees a connection when
 * it ends. Commands arrive by RECV on the connection's DTO EVD, whose upcall copies the
 * command out, re-posts the RECV and queues the command's work; the work reads or writes
 * @path and moves the data by RDMA WRITE (reads) or RDMA READ (writes) to or from the
 * client's grant, then SENDs the completion with invalidate of that grant. In-capsule data,
 * as in NVMe over Fabrics, up to @inline_data_size bytes, without a grant: a WRITE's data
 * comes in the command's SEND, into the RECV's second buffer, which the work writes to @path
 * from where it landed (the RECV is posted again after that, before the response); a READ's
 * goes back as the response itself, a SEND with immediate data (the command's id) from the
 * tag's buffer, when the client's connect asked for it.
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
#include <linux/blkdev.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include "../../include/rkdapl.h"

#include "proto.h"
#include "srv.h"

static char *path;
module_param(path, charp, 0444);
MODULE_PARM_DESC(path, "the backing block device or file (required)");
static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device name, or two comma-separated, the server listening on each (default rxe0)");
static ushort port = 4421;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 4421; nvmet-rdma keeps 4420)");
static ushort port2;
module_param(port2, ushort, 0444);
MODULE_PARM_DESC(port2, "the second device's PSP port (default 0: port + 1)");
static uint max_depth = 32;
module_param(max_depth, uint, 0444);
MODULE_PARM_DESC(max_depth, "commands in flight per connection at most (default 32, at most 1024)");
static bool direct = true;
module_param(direct, bool, 0444);
MODULE_PARM_DESC(direct, "open path with O_DIRECT, bypassing the page cache (default 1, as nvmet's block device backend)");
static uint inline_data_size = 4096;
module_param(inline_data_size, uint, 0444);
MODULE_PARM_DESC(inline_data_size,
		 "bytes of data a command may carry in-capsule, a WRITE's in its SEND or a READ's in its response (default 4096, 0 none, at most 16384)");
static bool read_only;
module_param(read_only, bool, 0644);
MODULE_PARM_DESC(read_only,
		 "export path read-only (default 0): WRITE commands fail with -EROFS and clients see a read-only disk; 1 at load opens path read-only, and a later 0 does not make that export writable");
static char *allow;
module_param(allow, charp, 0444);
MODULE_PARM_DESC(allow,
		 "the client addresses that may connect, comma-separated IPv4 or IPv6 addresses or prefixes (10.77.0.2,fd00:77::/64); default: any client that reaches the port");
static char *nqn;
module_param(nqn, charp, 0444);
MODULE_PARM_DESC(nqn,
		 "the export's name, 1 to 64 bytes: a connect that names another (rkdblk's nqn=) is rejected (default: none, any connect is taken)");
static bool coalesce = true;
module_param(coalesce, bool, 0444);
MODULE_PARM_DESC(coalesce,
		 "send the completions ready together in one SEND, to the clients that take them (default 1)");
static uint max_request_dtos;
module_param(max_request_dtos, uint, 0444);
MODULE_PARM_DESC(max_request_dtos,
		 "send-queue DTOs per connection (default 0: 4 per command slot, at most 4096; else 2..4096: fewer make commands wait for slots)");

struct srv_state srv;

/* Whether the export is read-only now. Any context. */
bool srv_read_only(void)
{
	return srv.file_ro || READ_ONCE(read_only);
}

static void conn_free(struct srv_conn *c)
{
	atomic_set(&c->dead, 1);
	list_del(&c->node);
	/* Drains the QP: no upcall for it after this, so no work is queued any more. */
	if (c->ep)
		rkdapl_ep_free(c->ep);
	/* File I/O submitted from the upcall answers (or queues its work) first. */
	wait_var_event(&c->io, !atomic_read(&c->io));
	/* Work still running posts on a freed EP: rkdapl refuses the stale handle (-EINVAL). */
	flush_workqueue(srv.wq);
	/* Nothing queues it any more: the upcall, the file I/O and the work are done. */
	cancel_work_sync(&c->batch_work);
	if (c->lmr)
		rkdapl_lmr_free(c->lmr);
	if (c->evd)
		rkdapl_evd_free(c->evd);
	kvfree(c->pages);
	kvfree(c->cmds);
	kfree(c);
}

static void accept_one(struct srv_port *p, struct rkdapl_cr *cr, const struct rkdapl_event *ev)
{
	const struct rkdblk_connect *req = (const void *)ev->private_data;
	struct rkdapl_ep_attr attr = {};
	struct rkdblk_accept acc = {};
	struct srv_conn *c;
	u32 i, n, nqn_hash;
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
	nqn_hash = le32_to_cpu(req->nqn_hash);
	if (srv.nqn_hash && nqn_hash && nqn_hash != srv.nqn_hash) {
		atomic64_inc(&srv.other_export);
		pr_warn_ratelimited("connection request for another export than nqn=%s, rejected\n",
				    nqn);
		srv_reject(cr, RKDBLK_REJ_OTHER_EXPORT);
		return;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c) {
		srv_reject(cr, RKDBLK_REJ_NO_RESOURCES);
		return;
	}
	INIT_LIST_HEAD(&c->node);
	c->port = p;
	list_add(&c->node, &p->conns);
	spin_lock_init(&c->lock);
	INIT_LIST_HEAD(&c->waiting);
	INIT_WORK(&c->drop, drop_work);
	INIT_WORK(&c->batch_work, batch_work);
	c->queue = le16_to_cpu(req->queue);
	c->depth = min_t(u32, le16_to_cpu(req->depth), max_depth);
	c->inline_len = inline_data_size;
	c->inline_reads = p->imm && inline_data_size &&
			  (le16_to_cpu(req->flags) & RKDBLK_CONNECT_INLINE_READ);
	c->batch_max = min_t(u32, RKDBLK_COALESCE_MAX, p->max_iov);
	c->coalesce = coalesce && c->batch_max > 1 &&
		      (le16_to_cpu(req->flags) & RKDBLK_CONNECT_COALESCE);
	c->cmds = kvcalloc(c->depth, sizeof(*c->cmds), GFP_KERNEL);
	ret = -ENOMEM;
	if (!c->cmds)
		goto fail;
	for (i = 0; i < c->depth; i++) {
		c->cmds[i].c = c;
		INIT_WORK(&c->cmds[i].work, cmd_work);
		INIT_LIST_HEAD(&c->cmds[i].wait);
		c->cmds[i].recv = -1;
	}
	ret = rkdapl_evd_create(p->ia, 4 * c->depth + 16, &c->evd);
	if (ret)
		goto fail;
	ret = rkdapl_evd_modify_upcall(c->evd, RKDAPL_UPCALL_SINGLE_INSTANCE, dto_upcall, c);
	if (ret)
		goto fail;
	ret = rkdapl_lmr_alloc(p->pz, data_off(c, c->depth), RKDAPL_MEM_LOCAL_WRITE, &c->mem,
			       &c->lmr);
	if (ret)
		goto fail;
	/* Looked up once: each I/O's iov_iter names them (serve()). */
	n = DIV_ROUND_UP(data_off(c, c->depth), PAGE_SIZE);
	ret = -ENOMEM;
	c->pages = kvcalloc(n, sizeof(*c->pages), GFP_KERNEL);
	if (!c->pages)
		goto fail;
	for (i = 0; i < n; i++)
		c->pages[i] = is_vmalloc_addr(c->mem) ? vmalloc_to_page(c->mem + i * PAGE_SIZE) :
							virt_to_page(c->mem + i * PAGE_SIZE);
	/*
	 * A READ command takes a WRITE and a SEND, a WRITE command a READ and a SEND; twice that,
	 * as the SENDs' slots come back only when their completions are polled.
	 */
	attr.max_request_dtos = max_request_dtos ?: min_t(u32, 4 * c->depth, 4096);
	/*
	 * A quarter of the send queue's DTOs (see post_pending()): of its contexts, or of the
	 * DTOs its work requests hold at the least (rkdapl gives it 8 per DTO, at most the
	 * device's max_dtos, and a DTO takes up to 8).
	 */
	c->report_every = max_t(u32, min_t(u32, attr.max_request_dtos, p->max_dtos / 8) / 4, 1);
	attr.max_recv_dtos = c->depth;
	/* A SEND gathers the completions of a batch from their tags' buffers. */
	attr.max_request_iov = c->coalesce ? c->batch_max : 1;
	/* The command, and in-capsule data in a buffer of its own. */
	attr.max_recv_iov = 2;
	attr.max_rdma_read_out = 16;
	ret = rkdapl_ep_create(p->pz, c->evd, p->psp_evd, &attr, &c->ep);
	if (ret && c->coalesce) {
		/* A device whose send queue cannot be that large with 16 SGEs: no coalescing. */
		c->coalesce = false;
		attr.max_request_iov = 1;
		ret = rkdapl_ep_create(p->pz, c->evd, p->psp_evd, &attr, &c->ep);
	}
	if (ret)
		goto fail;
	acc.magic = cpu_to_le32(RKDBLK_MAGIC);
	acc.version = cpu_to_le16(RKDBLK_VERSION);
	acc.depth = cpu_to_le16(c->depth);
	acc.max_io = cpu_to_le32(SRV_MAX_IO);
	acc.block_size = cpu_to_le32(512);
	acc.capacity = cpu_to_le64(srv.capacity);
	acc.inline_max = cpu_to_le32(inline_data_size);
	acc.flags = cpu_to_le32((srv_read_only() ? RKDBLK_ACCEPT_READ_ONLY : 0) |
				(c->inline_reads ? RKDBLK_ACCEPT_INLINE_READ : 0) |
				(srv.nqn_hash && nqn_hash == srv.nqn_hash ? RKDBLK_ACCEPT_NQN : 0) |
				(c->coalesce ? RKDBLK_ACCEPT_COALESCE : 0));
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

static struct srv_conn *conn_of(struct srv_port *p, struct rkdapl_ep *ep)
{
	struct srv_conn *c;

	list_for_each_entry(c, &p->conns, node)
		if (c->ep == ep)
			return c;
	return NULL;
}

/*
 * Opens the IA on @p's device, its PZ and the PSP's EVD, which is also the IA's async EVD (the
 * device's removal is reported there), and makes the PSP. Nothing is left open on an error.
 * Process context (init, the thread).
 */
static int srv_listen(struct srv_port *p)
{
	struct rkdapl_ia_attr ia_attr;
	int ret;

	ret = rkdapl_ia_open(p->dev, &p->ia);
	if (ret)
		return ret;
	ret = rkdapl_ia_query(p->ia, &ia_attr);
	if (ret)
		goto out_ia;
	p->imm = ia_attr.caps & RKDAPL_CAP_RDMA_WRITE_IMM;
	p->max_dtos = ia_attr.max_dtos;
	p->max_iov = ia_attr.max_iov;
	ret = rkdapl_pz_create(p->ia, &p->pz);
	if (ret)
		goto out_ia;
	ret = rkdapl_evd_create(p->ia, 256, &p->psp_evd);
	if (ret)
		goto out_pz;
	ret = rkdapl_ia_set_async_evd(p->ia, p->psp_evd);
	if (ret)
		goto out_evd;
	ret = rkdapl_psp_create(p->ia, p->port, 64, p->psp_evd, &p->psp);
	if (ret)
		goto out_evd;
	return 0;
out_evd:
	rkdapl_evd_free(p->psp_evd);
out_pz:
	rkdapl_pz_free(p->pz);
out_ia:
	rkdapl_ia_close(p->ia);
	p->ia = NULL;
	p->psp = NULL;
	return ret;
}

/*
 * Frees @p's connections, the PSP, its EVD, the PZ and the IA (after the device's removal, or
 * at unload). Process context (the thread, or init once the thread stopped).
 */
static void srv_unlisten(struct srv_port *p)
{
	struct srv_conn *c, *tmp;

	list_for_each_entry_safe(c, tmp, &p->conns, node)
		conn_free(c);
	if (!p->ia)
		return;
	rkdapl_psp_free(p->psp);
	rkdapl_evd_free(p->psp_evd);
	rkdapl_pz_free(p->pz);
	rkdapl_ia_close(p->ia);
	p->ia = NULL;
	p->psp = NULL;
}

static int srv_thread(void *data)
{
	struct srv_port *p = data;
	struct rkdapl_event ev;
	struct srv_conn *c;
	int ret;

	while (!kthread_should_stop()) {
		if (!p->ia) {
			/* The device went away: listen again once it is back, every second. */
			if (srv_listen(p)) {
				schedule_timeout_interruptible(HZ);
				continue;
			}
			p->relistened++;
			pr_info("%s is back: listening on port %u again\n", p->dev, p->port);
			continue;
		}
		ret = rkdapl_evd_wait(p->psp_evd, 200, &ev);
		if (ret == -ETIMEDOUT || ret == -EINTR)
			continue;
		if (ret) {
			pr_warn("waiting on %s's PSP's EVD failed (%d): listening again\n", p->dev, ret);
			srv_unlisten(p);
			continue;
		}
		switch (ev.type) {
		case RKDAPL_CONNECTION_REQUEST_EVENT:
			accept_one(p, ev.cr, &ev);
			break;
		case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
			break;
		case RKDAPL_ASYNC_IA_CATASTROPHIC:
			pr_warn("%s went away (%d): its connections closed; listening again once it is back\n",
				p->dev, ev.status);
			srv_unlisten(p);
			break;
		case RKDAPL_ASYNC_EVD_OVERFLOW:
		case RKDAPL_ASYNC_SRQ_LIMIT_REACHED ... RKDAPL_ASYNC_CQ_ERROR:
			/* The connections' own events follow (BROKEN); the rest is not ours. */
			break;
		default:
			/* DISCONNECTED, BROKEN, or a failed accept's outcome. */
			c = conn_of(p, ev.ep);
			if (c) {
				pr_info("queue %u: connection ended (event %u, status %d)\n",
					c->queue, ev.type, ev.status);
				conn_free(c);
			}
		}
	}
	srv_unlisten(p);
	return 0;
}

/*
 * Fills srv.ports from dev= (one or two comma-separated names) and port=, port2=.
 * -EINVAL for an empty name, a name too long, more than SRV_MAX_PORTS, or two equal ports.
 */
static int srv_parse_devs(void)
{
	const char *d = dev;
	unsigned int n = 0;
	size_t len;

	while (d && *d) {
		len = strcspn(d, ",");
		if (!len || len >= sizeof(srv.ports[0].dev) || n == SRV_MAX_PORTS)
			return -EINVAL;
		memcpy(srv.ports[n].dev, d, len);
		srv.ports[n].dev[len] = 0;
		srv.ports[n].port = n ? (port2 ?: port + 1) : port;
		INIT_LIST_HEAD(&srv.ports[n].conns);
		n++;
		d += len;
		if (*d == ',')
			d++;
	}
	if (!n || (n == 2 && srv.ports[0].port == srv.ports[1].port))
		return -EINVAL;
	srv.nports = n;
	return 0;
}

/* Stops the threads of the first @n ports; each frees its connections and PSP as it stops. */
static void srv_stop(unsigned int n)
{
	while (n--)
		kthread_stop(srv.ports[n].thread);
}

static int __init srv_init(void)
{
	char also[96] = "";
	unsigned int i;
	int ret;

	if (!path || srv_parse_devs())
		return -EINVAL;
	if (max_depth < 1 || max_depth > 1024 || inline_data_size > SRV_MAX_INLINE ||
	    inline_data_size & 511 || max_request_dtos == 1 || max_request_dtos > 4096)
		return -EINVAL;
	if (nqn && (!*nqn || strlen(nqn) > 64))
		return -EINVAL;
	srv.nqn_hash = rkdblk_nqn_hash(nqn);
	ret = srv_allow_parse(allow);
	if (ret)
		return ret;
	srv.file_ro = read_only;
	/* O_NOATIME: a read of a regular file starts no journal transaction for its atime. */
	srv.file = filp_open(path, (srv.file_ro ? O_RDONLY : O_RDWR) | O_LARGEFILE | O_NOATIME |
			     (direct ? O_DIRECT : 0), 0);
	if (IS_ERR(srv.file)) {
		ret = PTR_ERR(srv.file);
		pr_err("cannot open %s: %d\n", path, ret);
		goto out_allow;
	}
	srv.capacity = i_size_read(srv.file->f_mapping->host) >> 9;
	srv.async_io = direct && (srv.file->f_mode & FMODE_NOWAIT) &&
		       srv.file->f_op->read_iter && srv.file->f_op->write_iter;
	srv.async_writes = srv.async_io && S_ISBLK(file_inode(srv.file)->i_mode);
	srv.dio_align = 511;
	if (S_ISBLK(file_inode(srv.file)->i_mode))
		srv.dio_align = bdev_dma_alignment(file_bdev(srv.file)) |
				(bdev_logical_block_size(file_bdev(srv.file)) - 1);
	ret = -ENOMEM;
	srv.wq = alloc_workqueue("rkdblk_srv", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!srv.wq)
		goto out_file;
	for (i = 0; i < srv.nports; i++) {
		struct srv_port *p = &srv.ports[i];

		ret = srv_listen(p);
		if (ret) {
			pr_err("cannot listen on %s port %u: %d\n", p->dev, p->port, ret);
			goto out_ports;
		}
		p->thread = kthread_run(srv_thread, p, "rkdblk_srv/%u", i);
		if (IS_ERR(p->thread)) {
			ret = PTR_ERR(p->thread);
			srv_unlisten(p);
			goto out_ports;
		}
	}
	/* Test hook only: no module parameter a production set-up could leave on. */
	srv.debugfs = debugfs_create_dir("rkdblk_srv", NULL);
	debugfs_create_u32("stall", 0600, srv.debugfs, &srv.stall);
	if (srv.nports > 1)
		snprintf(also, sizeof(also), " and on %s port %u", srv.ports[1].dev,
			 srv.ports[1].port);
	pr_info("serving %s (%llu sectors%s) on %s port %u%s to %s\n", path, srv.capacity,
		srv_read_only() ? ", read-only" : "", srv.ports[0].dev, srv.ports[0].port, also,
		allow && *allow ? allow : "any client (no allow-list)");
	return 0;
out_ports:
	srv_stop(i);
	destroy_workqueue(srv.wq);
out_file:
	filp_close(srv.file, NULL);
out_allow:
	srv_allow_free();
	return ret;
}

static void __exit srv_exit(void)
{
	unsigned int i;

	debugfs_remove(srv.debugfs);
	/* The thread frees the connections and the PSP (which rejects what waits) as it stops. */
	srv_stop(srv.nports);
	destroy_workqueue(srv.wq);
	filp_close(srv.file, NULL);
	srv_allow_free();
	for (i = 0; i < srv.nports; i++)
		if (srv.ports[i].relistened)
			pr_info("listened again %u time(s) after %s went away\n",
				srv.ports[i].relistened, srv.ports[i].dev);
	pr_info("served %lld commands, %lld of them WRITEs with in-capsule data (written from their RECV buffers), %lld READs answered in-capsule; %lld posts waited for send-queue slots; %lld responses posted without a completion event; %lld clients disconnected for breaking the protocol; %lld WRITEs refused (read-only); %lld connections refused (allow-list)\n",
		(long long)atomic64_read(&srv.served), (long long)atomic64_read(&srv.inlined),
		(long long)atomic64_read(&srv.inline_reads),
		(long long)atomic64_read(&srv.waited), (long long)atomic64_read(&srv.quiet),
		(long long)atomic64_read(&srv.dropped),
		(long long)atomic64_read(&srv.refused_writes), srv_refused());
	if (coalesce)
		pr_info("%lld completions went out coalesced, in %lld SENDs\n",
			(long long)atomic64_read(&srv.coalesced),
			(long long)atomic64_read(&srv.coalesced_sends));
	if (srv.nqn_hash)
		pr_info("%lld connections refused for another export than nqn=%s\n",
			(long long)atomic64_read(&srv.other_export), nqn);
	if (srv.async_io)
		pr_info("%lld I/Os submitted from the DTO upcall, %lld of them done again in the work (the device or file could not take them at once)\n",
			(long long)atomic64_read(&srv.upcall_io),
			(long long)atomic64_read(&srv.io_retried));
}

module_init(srv_init);
module_exit(srv_exit);
MODULE_DESCRIPTION("rkdblk server: a block device exported over rkdapl");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
