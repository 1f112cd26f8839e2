// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_fault: one rkdapl operation per write, for allocation-failure sweeps
 * (selftests/inject.sh, selftests/fail_nth.py).
 *
 *   insmod rkdapl_fault.ko [dev=rxe0] peer=<this guest's IPv4> [port=7620]
 *   echo <op> > /sys/kernel/debug/rkdapl_fault/op
 *
 * Each write runs the whole operation in the writing task and returns 0 or the first error.
 * Whatever was made is freed again before the write returns, so a failed attempt must leave
 * nothing behind. Operations:
 *
 *   ia_open     rkdapl_ia_open() + rkdapl_ia_close()
 *   pz_create   rkdapl_pz_create() + rkdapl_pz_free()
 *   evd_create  rkdapl_evd_create() + rkdapl_evd_free()
 *   ep_create   rkdapl_ep_create() + rkdapl_ep_free()
 *   lmr_create  rkdapl_lmr_create() over a kmalloc'd and a vmalloc'd (17 pages, unaligned)
 *               buffer + rkdapl_lmr_free()
 *   psp_create  rkdapl_psp_create() + rkdapl_psp_free()
 *   connect     loopback connection (EPs with small queues): active EP connects to @peer:@port+1, the CR is accepted
 *               on a second EP (both in this task), ESTABLISHED on both, a SEND is received
 *               and compared, disconnect, DISCONNECTED on both, free
 *
 * The objects the operations need (IA, PZ, EVDs) are made at load. Because the writing task
 * does all the work, /proc/thread-self/fail-nth makes the Nth allocation of the operation
 * fail, which is how fail_nth.py visits every allocation site the operation reaches in turn
 * (Documentation/fault-injection/fault-injection.rst). Work rdma_cm does in its own workers
 * (address and route resolution, CM message handling) is not in this task and not reached.
 *
 * Errors: -ETIME if an event the operation waits for never came (a hang: the sweep fails on
 * it), except -ENOLINK when the active side's DISCONNECTED never comes: when the IB CM cannot
 * allocate the DREQ, rdma_cm reports nothing (rkdapl_ep_disconnect() in rkdapl.h); -EPROTO for an event of the wrong kind (other than a failed connect), -EBADMSG for
 * wrong data; otherwise rkdapl's own error, or for a failed connect the event's: PEER_REJECTED
 * -ECONNREFUSED, UNREACHABLE -EHOSTUNREACH, TIMED_OUT -ETIMEDOUT, NON_PEER_REJECTED its
 * status.
 */
#define pr_fmt(fmt) "rkdapl_fault: " fmt

#include <linux/debugfs.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "../../include/rkdapl.h"

static char *dev = "rxe0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
static char *peer = "";
module_param(peer, charp, 0444);
MODULE_PARM_DESC(peer, "this guest's IPv4 address on @dev (for the loopback connect)");
static ushort port = 7620;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "psp_create uses @port, connect @port + 1 (default 7620)");

#define EV_MS 5000		/* connect timeout; events are waited for 10 s longer */
#define VBYTES (17 * PAGE_SIZE)
#define MSG "rkdapl_fault: data after an allocation-failure sweep"

/*
 * connect's EPs: small queues. rxe allocates each queue with vmalloc, page by page, and every
 * page is one more injection point of the same kind; ep_create sweeps the default sizes.
 */
static const struct rkdapl_ep_attr small = {
	.max_request_dtos = 4, .max_recv_dtos = 4, .max_request_iov = 1, .max_recv_iov = 1,
	.max_rdma_read_in = 1, .max_rdma_read_out = 1,
};

static struct {
	struct mutex lock;	/* one operation at a time */
	struct sockaddr_in sin;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *dto, *conn_a, *conn_p, *psp_evd;
	struct rkdapl_psp *psp;	/* for connect, on @port + 1 */
	struct rkdapl_lmr *msg_lmr;
	char *msg;		/* [0, 64) sent, [64, 128) received */
	struct dentry *dir;
} f;

static int op_ia_open(void)
{
	struct rkdapl_ia *ia;
	int r = rkdapl_ia_open(dev, &ia);

	return r ?: rkdapl_ia_close(ia);
}

static int op_pz_create(void)
{
	struct rkdapl_pz *pz;
	int r = rkdapl_pz_create(f.ia, &pz);

	return r ?: rkdapl_pz_free(pz);
}

static int op_evd_create(void)
{
	struct rkdapl_evd *evd;
	int r = rkdapl_evd_create(f.ia, 64, &evd);

	return r ?: rkdapl_evd_free(evd);
}

static int op_ep_create(void)
{
	struct rkdapl_ep *ep;
	int r = rkdapl_ep_create(f.pz, f.dto, f.conn_a, NULL, &ep);

	return r ?: rkdapl_ep_free(ep);
}

static int op_lmr_create(void)
{
	struct rkdapl_lmr *a = NULL, *b = NULL;
	void *kbuf = kmalloc(3000, GFP_KERNEL);
	void *vbuf = vmalloc(VBYTES);
	int r = kbuf && vbuf ? 0 : -ENOMEM;

	if (!r)
		r = rkdapl_lmr_create(f.pz, kbuf + 1, 2999, RKDAPL_MEM_LOCAL_WRITE, &a);
	if (!r)
		r = rkdapl_lmr_create(f.pz, vbuf + 100, VBYTES - 200,
				      RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
				      RKDAPL_MEM_REMOTE_WRITE, &b);
	if (b && rkdapl_lmr_free(b) && !r)
		r = -EPROTO;
	if (a && rkdapl_lmr_free(a) && !r)
		r = -EPROTO;
	vfree(vbuf);
	kfree(kbuf);
	return r;
}

static int op_psp_create(void)
{
	struct rkdapl_psp *psp;
	int r = rkdapl_psp_create(f.ia, port, 4, f.psp_evd, &psp);

	return r ?: rkdapl_psp_free(psp);
}

/* Waits for an event of @type on @evd: -ETIME if none comes, -EPROTO if another one does. */
static int wait_for(struct rkdapl_evd *evd, u32 type, struct rkdapl_event *ev)
{
	int r = rkdapl_evd_wait(evd, EV_MS + 10000, ev);

	if (r)
		return r == -ETIMEDOUT ? -ETIME : r;
	return ev->type == type && !ev->status ? 0 : -EPROTO;
}

/* The active side's connect outcome: 0 for ESTABLISHED, else the failure as an errno. */
static int connect_outcome(void)
{
	struct rkdapl_event ev;
	int r = wait_for(f.conn_a, RKDAPL_CONNECTION_EVENT_ESTABLISHED, &ev);

	if (r != -EPROTO)
		return r;
	switch (ev.type) {
	case RKDAPL_CONNECTION_EVENT_PEER_REJECTED:
		return -ECONNREFUSED;
	case RKDAPL_CONNECTION_EVENT_UNREACHABLE:
		return -EHOSTUNREACH;
	case RKDAPL_CONNECTION_EVENT_TIMED_OUT:
		return -ETIMEDOUT;
	case RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED:
		return ev.status < 0 ? ev.status : -ECONNABORTED;
	}
	return -EPROTO;
}

static int op_connect(void)
{
	struct rkdapl_lmr_triplet tx = { f.msg_lmr, 0, sizeof(MSG) };
	struct rkdapl_lmr_triplet rx = { f.msg_lmr, 64, 64 };
	struct rkdapl_ep *a = NULL, *p = NULL;
	struct rkdapl_event ev;
	bool accepted = false;
	const char *step;
	int r, r2;

	memset(f.msg, 0, 128);
	strscpy(f.msg, MSG, 64);
	step = "active ep_create";
	r = rkdapl_ep_create(f.pz, f.dto, f.conn_a, &small, &a);
	if (r)
		goto out;
	step = "ep_connect";
	r = rkdapl_ep_connect(a, (struct sockaddr *)&f.sin, EV_MS, NULL, 0);
	if (r)
		goto out;
	/* The passive side, in this task too. */
	step = "connection request";
	r = wait_for(f.psp_evd, RKDAPL_CONNECTION_REQUEST_EVENT, &ev);
	if (r) {
		/* No CR: the active side's event says why. */
		r2 = connect_outcome();
		r = r2 ?: r;
		goto out;
	}
	step = "passive ep_create";
	r = rkdapl_ep_create(f.pz, f.dto, f.conn_p, &small, &p);
	if (r) {
		rkdapl_cr_reject(ev.cr, NULL, 0);
	} else {
		step = "cr_accept";
		r = rkdapl_cr_accept(ev.cr, p, NULL, 0);
		accepted = !r;
	}
	if (!r) {
		step = "post_recv";
		r = rkdapl_post_recv(p, &rx, 1, 1, 0);
	}
	/* The active side learns the outcome either way: wait for it before anything else. */
	r2 = connect_outcome();
	if (!r) {
		step = "active connect outcome";
		r = r2;
	}
	if (!r && accepted) {
		step = "passive ESTABLISHED";
		r = wait_for(f.conn_p, RKDAPL_CONNECTION_EVENT_ESTABLISHED, &ev);
	}
	if (!r) {
		step = "post_send";
		r = rkdapl_post_send(a, &tx, 1, 2, 0);
	}
	/* Both completions, in either order. */
	if (!r) {
		step = "SEND and RECV completions";
		r = wait_for(f.dto, RKDAPL_DTO_COMPLETION_EVENT, &ev) ?:
		    wait_for(f.dto, RKDAPL_DTO_COMPLETION_EVENT, &ev);
	}
	if (!r && strcmp(f.msg + 64, MSG)) {
		step = "received data";
		r = -EBADMSG;
	}
	if (!r) {
		step = "ep_disconnect";
		r = rkdapl_ep_disconnect(a);
	}
	if (!r) {
		step = "active DISCONNECTED";
		r = wait_for(f.conn_a, RKDAPL_CONNECTION_EVENT_DISCONNECTED, &ev);
		/* The DREQ could not be allocated: rdma_cm reports nothing (see the header). */
		if (r == -ETIME)
			r = -ENOLINK;
	}
	if (!r) {
		step = "passive DISCONNECTED";
		r = rkdapl_evd_wait(f.conn_p, 3000, &ev);
		if (r == -ETIMEDOUT) {
			/*
			 * No DREQ reached the passive side: the IB CM could not allocate it (an
			 * injected failure) and went to timewait. The peer learns only by its own
			 * traffic or disconnect, as after any lost DREQ: disconnect it too.
			 */
			pr_info("connect: no DREQ reached the passive side; disconnecting it\n");
			r = rkdapl_ep_disconnect(p) ?:
			    wait_for(f.conn_p, RKDAPL_CONNECTION_EVENT_DISCONNECTED, &ev);
		} else if (!r && ev.type != RKDAPL_CONNECTION_EVENT_DISCONNECTED) {
			r = -EPROTO;
		}
	}
out:
	if (r)
		pr_info("connect: %s: %d\n", step, r);
	if (p && rkdapl_ep_free(p) && !r)
		r = -EPROTO;
	if (a && rkdapl_ep_free(a) && !r)
		r = -EPROTO;
	/* Flushed RECVs and late connection events must not reach the next attempt. */
	while (!rkdapl_evd_dequeue(f.dto, &ev))
		;
	while (!rkdapl_evd_dequeue(f.conn_a, &ev))
		;
	while (!rkdapl_evd_dequeue(f.conn_p, &ev))
		;
	while (!rkdapl_evd_dequeue(f.psp_evd, &ev))
		if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT)
			rkdapl_cr_reject(ev.cr, NULL, 0);
	return r;
}

static const struct {
	const char *name;
	int (*run)(void);
} ops[] = {
	{ "ia_open", op_ia_open },	 { "pz_create", op_pz_create },
	{ "evd_create", op_evd_create }, { "ep_create", op_ep_create },
	{ "lmr_create", op_lmr_create }, { "psp_create", op_psp_create },
	{ "connect", op_connect },
};

static ssize_t op_write(struct file *file, const char __user *ubuf, size_t len, loff_t *ppos)
{
	char name[32];
	size_t i;
	int r = -EINVAL;

	if (len >= sizeof(name))
		return -EINVAL;
	if (copy_from_user(name, ubuf, len))
		return -EFAULT;
	name[len] = '\0';
	strim(name);
	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		if (strcmp(name, ops[i].name))
			continue;
		mutex_lock(&f.lock);
		r = ops[i].run();
		mutex_unlock(&f.lock);
		break;
	}
	return r ?: len;
}

static const struct file_operations op_fops = {
	.owner = THIS_MODULE,
	.write = op_write,
};

static void fault_free(void)
{
	if (f.psp)
		rkdapl_psp_free(f.psp);
	if (f.msg_lmr)
		rkdapl_lmr_free(f.msg_lmr);
	if (f.dto)
		rkdapl_evd_free(f.dto);
	if (f.conn_a)
		rkdapl_evd_free(f.conn_a);
	if (f.conn_p)
		rkdapl_evd_free(f.conn_p);
	if (f.psp_evd)
		rkdapl_evd_free(f.psp_evd);
	if (f.pz)
		rkdapl_pz_free(f.pz);
	if (f.ia)
		rkdapl_ia_close(f.ia);
	kfree(f.msg);
}

static int __init rkdapl_fault_init(void)
{
	int r;

	mutex_init(&f.lock);
	f.sin = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port + 1) };
	if (!in4_pton(peer, -1, (u8 *)&f.sin.sin_addr.s_addr, -1, NULL)) {
		pr_err("peer=%s is not an IPv4 address\n", peer);
		return -EINVAL;
	}
	f.msg = kzalloc(128, GFP_KERNEL);
	r = f.msg ? 0 : -ENOMEM;
	if (!r)
		r = rkdapl_ia_open(dev, &f.ia);
	if (!r)
		r = rkdapl_pz_create(f.ia, &f.pz);
	if (!r)
		r = rkdapl_evd_create(f.ia, 64, &f.dto);
	if (!r)
		r = rkdapl_evd_create(f.ia, 16, &f.conn_a);
	if (!r)
		r = rkdapl_evd_create(f.ia, 16, &f.conn_p);
	if (!r)
		r = rkdapl_evd_create(f.ia, 16, &f.psp_evd);
	if (!r)
		r = rkdapl_lmr_create(f.pz, f.msg, 128, RKDAPL_MEM_LOCAL_WRITE, &f.msg_lmr);
	if (!r)
		r = rkdapl_psp_create(f.ia, port + 1, 4, f.psp_evd, &f.psp);
	if (!r) {
		f.dir = debugfs_create_dir("rkdapl_fault", NULL);
		debugfs_create_file("op", 0200, f.dir, NULL, &op_fops);
	}
	if (r) {
		pr_err("set-up failed: %d\n", r);
		fault_free();
	}
	return r;
}

static void __exit rkdapl_fault_exit(void)
{
	debugfs_remove(f.dir);
	fault_free();
}

module_init(rkdapl_fault_init);
module_exit(rkdapl_fault_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: rkdapl operations on demand, for fault-injection sweeps");
