// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_scale: many EPs connected at once between two guests (selftests/scale.sh), spread
 * over PSPs, EVDs and PZs the way a server spreads its connections:
 *
 *   insmod rkdapl_scale.ko role=server [port=7600] [eps=1024] [psps=4] [evds=8] [pzs=1]
 *   insmod rkdapl_scale.ko role=client peer=<server IPv4> [same parameters]
 *
 * The server listens on PSPs port..port+psps-1; the client connects EP i to PSP i % psps, at
 * most @window connections being set up at a time, with {magic, i} as private data. EP i
 * lives in PZ i % pzs and reports to EVD i % evds on both sides. Every EVD delivers by upcall
 * into one event ring that the insmod thread works through (an event-driven server).
 *
 * Per EP, with a @bytes LMR on each side (registered before the memory baseline):
 *   client                                     server
 *   connect                              ->    CR: EP create, accept, RECV
 *   ESTABLISHED: 2 RECVs                       ESTABLISHED: RMR create + bind (REMOTE_WRITE)
 *                                        <-    SEND {address, rkey, length}
 *   (once all EPs are connected and advertised, at most @data_window EPs at a time)
 *   RDMA WRITE @bytes of a pattern of i,
 *   SEND {i, checksum}                   ->    compare every byte with the pattern of i
 *                                        <-    SEND {i, verified}
 *   (once every EP is done) disconnect all     DISCONNECTED on every EP
 *   free everything                            free everything
 *
 * All work runs in module_init; insmod's status is the result. Lines of the form
 * "rkdapl_scale: <role>: result k=v ..." carry the figures (selftests/scale.sh):
 *   conn_ms      first connect (client) or request (server) to the last ESTABLISHED
 *   memfree_kib  MemFree (si_meminfo) taken between the baseline (everything but the EPs set
 *                up, data LMRs registered) and all EPs connected (server: and granted), the
 *                same for SUnreclaim (slab_kib); KASAN's quarantine keeps what connection
 *                set-up freed, so these are upper bounds
 *   data_ms      first RDMA WRITE to the last EP verified; teardown_ms: disconnect to freed
 * and the last line is "rkdapl_scale: <role>: N EPs, N verified" (", FAILED: <why>").
 */
#define pr_fmt(fmt) "rkdapl_scale: " fmt

#include <linux/hashtable.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/vmstat.h>
#include <linux/wait.h>

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
static ushort port = 7600;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "first PSP port (default 7600)");
static uint eps = 1024;
module_param(eps, uint, 0444);
MODULE_PARM_DESC(eps, "EPs, 1..4096 (default 1024)");
static uint psps = 4;
module_param(psps, uint, 0444);
MODULE_PARM_DESC(psps, "PSPs on the server, 1..16 (default 4)");
static uint evds = 8;
module_param(evds, uint, 0444);
MODULE_PARM_DESC(evds, "EVDs per side, 1..64 (default 8)");
static uint pzs = 1;
module_param(pzs, uint, 0444);
MODULE_PARM_DESC(pzs, "PZs per side, 1..16 (default 1)");
static uint bytes = 65536;
module_param(bytes, uint, 0444);
MODULE_PARM_DESC(bytes, "bytes each EP moves, a multiple of 4, 4..1048576 (default 65536)");
static uint window = 32;
module_param(window, uint, 0444);
MODULE_PARM_DESC(window, "client: connections being set up at a time (default 32)");
static uint data_window = 64;
module_param(data_window, uint, 0444);
MODULE_PARM_DESC(data_window, "client: EPs moving data at a time (default 64)");
static uint timeout_ms = 120000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest time without any event, and the connect timeout (default 120000)");

#define SCALE_MAGIC 0x5343414cu	/* "SCAL" */
#define SLOT 64			/* bytes per message slot; 4 slots per EP */
#define EP_ATTR_DEPTH 8

/* Cookie kinds (low byte; the EP index above it). */
enum { K_ADV = 1, K_ACK, K_NOTIFY, K_WRITE, K_BIND };
#define COOKIE(i, k) (((u64)(i) << 8) | (k))

/* EP flags. */
enum {
	S_CONN = 1 << 0,	/* ESTABLISHED */
	S_ADV = 1 << 1,		/* client: advertisement received; server: its SEND completed */
	S_WRITE = 1 << 2,	/* client: RDMA WRITE completed */
	S_NOTIFY = 1 << 3,	/* client: notify SEND completed; server: notify received */
	S_ACK = 1 << 4,		/* client: ack received; server: ack SEND completed */
	S_DISC = 1 << 5,	/* DISCONNECTED */
	S_DONE = 1 << 6,	/* counted as done */
};

struct scale_msg {
	__u32 magic;
	__u32 index;
	__u64 address;
	__u32 rkey;
	__u32 length;
	__u64 csum;
};

struct scale_ep {
	struct rkdapl_ep *ep;
	struct rkdapl_lmr *lmr;	/* the @bytes data buffer */
	struct rkdapl_rmr *rmr;	/* server: the grant over it */
	u32 *buf;
	struct hlist_node node;
	u32 idx;
	u32 flags;
	u64 address;		/* client: the server's grant */
	u32 rkey;
};

/* One upcalled event, as much of it as the handlers use. */
struct scale_ev {
	u32 type;
	s32 status;
	u32 op;
	u32 pdlen;
	struct rkdapl_ep *ep;
	struct rkdapl_cr *cr;
	u64 cookie;
	u32 pd[2];
};

struct mem {
	unsigned long free_kib, slab_kib;
};

static struct scale {
	bool server;
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz[16];
	struct rkdapl_lmr *msg_lmr[16];	/* the message slots, registered in each PZ */
	struct rkdapl_evd *evd[64];
	struct rkdapl_evd *cr_evd;
	struct rkdapl_psp *psp[16];
	struct scale_msg *msgs;		/* 4 slots per EP */
	struct scale_ep *st;
	/* The event ring: filled by the upcall, emptied by the insmod thread. */
	spinlock_t lock;
	wait_queue_head_t wq;
	struct scale_ev *ring;
	u32 ring_size, head, tail, lost;
	/* Progress. */
	u32 started, connecting, nconn, nadv, next_data, moving, ndone, nverified, ndisc;
	bool tearing_down;
	ktime_t t_first, t_conn, t_data0, t_data1, t_disc0, t_end;
	struct mem m0, m1;
	char why[160];
} s;

static DEFINE_HASHTABLE(ep_table, 10);

#define FAIL(fmt, ...) ({ if (!s.why[0]) snprintf(s.why, sizeof(s.why), fmt, ##__VA_ARGS__); -EIO; })

static void read_mem(struct mem *m)
{
	struct sysinfo i;

	si_meminfo(&i);
	m->free_kib = i.freeram << (PAGE_SHIFT - 10);
	m->slab_kib = global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B) << (PAGE_SHIFT - 10);
}

static u32 pattern(u32 idx, u32 k)
{
	u32 x = idx * 0x9e3779b1u ^ k * 0x85ebca6bu;

	return x ^ (x >> 15);
}

static u64 csum(const u32 *p, u32 n)
{
	u64 h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

static struct scale_msg *slot(u32 idx, u32 n)
{
	return &s.msgs[idx * 4 + n];
}

static struct rkdapl_lmr_triplet slot_iov(u32 idx, u32 n)
{
	return (struct rkdapl_lmr_triplet){ s.msg_lmr[idx % pzs], (idx * 4 + n) * SLOT,
					    sizeof(struct scale_msg) };
}

static void upcall(void *ctx, const struct rkdapl_event *e)
{
	struct scale_ev *v;
	unsigned long fl;

	spin_lock_irqsave(&s.lock, fl);
	if (s.head - s.tail >= s.ring_size) {
		s.lost++;
	} else {
		v = &s.ring[s.head++ & (s.ring_size - 1)];
		*v = (struct scale_ev){ e->type, e->status, e->op, e->private_data_len, e->ep, e->cr,
					e->cookie };
		memcpy(v->pd, e->private_data, min_t(u32, e->private_data_len, sizeof(v->pd)));
	}
	spin_unlock_irqrestore(&s.lock, fl);
	wake_up(&s.wq);
}

static bool ring_take(struct scale_ev *v)
{
	unsigned long fl;
	bool got = false;

	spin_lock_irqsave(&s.lock, fl);
	if (s.head != s.tail) {
		*v = s.ring[s.tail++ & (s.ring_size - 1)];
		got = true;
	}
	spin_unlock_irqrestore(&s.lock, fl);
	return got;
}

/* The next event; -ETIMEDOUT after timeout_ms without one, -ERESTARTSYS on a signal. */
static int next_event(struct scale_ev *v)
{
	long t = wait_event_interruptible_timeout(s.wq, ring_take(v), msecs_to_jiffies(timeout_ms));

	if (t < 0)
		return FAIL("interrupted (%ld)", t);
	if (!t)
		return FAIL("no event for %u ms", timeout_ms);
	if (READ_ONCE(s.lost))
		return FAIL("event ring overflowed");
	return 0;
}

static struct scale_ep *by_ep(struct rkdapl_ep *ep)
{
	struct scale_ep *st;

	hash_for_each_possible(ep_table, st, node, (unsigned long)ep)
		if (st->ep == ep)
			return st;
	return NULL;
}

static struct rkdapl_ep_attr ep_attr(void)
{
	return (struct rkdapl_ep_attr){ .max_request_dtos = EP_ATTR_DEPTH,
					.max_recv_dtos = EP_ATTR_DEPTH / 2,
					.max_request_iov = 1, .max_recv_iov = 1 };
}

static int new_ep(struct scale_ep *st)
{
	struct rkdapl_ep_attr a = ep_attr();
	int r = rkdapl_ep_create(s.pz[st->idx % pzs], s.evd[st->idx % evds],
				 s.evd[st->idx % evds], &a, &st->ep);

	if (r)
		return FAIL("EP %u: ep_create = %d", st->idx, r);
	hash_add(ep_table, &st->node, (unsigned long)st->ep);
	return 0;
}

static int post_slot_recv(struct scale_ep *st, u32 n, u32 kind)
{
	struct rkdapl_lmr_triplet t = slot_iov(st->idx, n);
	int r = rkdapl_post_recv(st->ep, &t, 1, COOKIE(st->idx, kind), 0);

	return r ? FAIL("EP %u: post_recv = %d", st->idx, r) : 0;
}

static int post_slot_send(struct scale_ep *st, u32 n, u32 kind)
{
	struct rkdapl_lmr_triplet t = slot_iov(st->idx, n);
	int r = rkdapl_post_send(st->ep, &t, 1, COOKIE(st->idx, kind), 0);

	return r ? FAIL("EP %u: post_send = %d", st->idx, r) : 0;
}

static bool msg_ok(const struct scale_msg *m, u32 idx)
{
	return m->magic == SCALE_MAGIC && m->index == idx && m->length == bytes;
}

/* Both sides: every EP is done; the client disconnects them all. */
static int all_done(void)
{
	u32 i;
	int r;

	if (s.server)
		return 0;
	s.t_data1 = ktime_get();
	s.tearing_down = true;
	s.t_disc0 = ktime_get();
	for (i = 0; i < eps; i++) {
		r = rkdapl_ep_disconnect(s.st[i].ep);
		if (r)
			return FAIL("EP %u: ep_disconnect = %d", i, r);
	}
	return 0;
}

static int ep_done(struct scale_ep *st)
{
	st->flags |= S_DONE;
	if (++s.ndone == eps)
		return all_done();
	return 0;
}

/* Client: RDMA WRITE the pattern of EP @st into its grant, then SEND the notification. */
static int client_transfer(struct scale_ep *st)
{
	struct rkdapl_lmr_triplet t = { st->lmr, 0, bytes };
	struct rkdapl_rmr_triplet rt = { st->address, st->rkey, 0, bytes };
	int r;

	if (!s.t_data0)
		s.t_data0 = ktime_get();
	s.moving++;
	r = rkdapl_post_rdma_write(st->ep, &t, 1, &rt, COOKIE(st->idx, K_WRITE), 0);
	if (r)
		return FAIL("EP %u: post_rdma_write = %d", st->idx, r);
	*slot(st->idx, 2) = (struct scale_msg){ SCALE_MAGIC, st->idx, 0, 0, bytes,
						csum(st->buf, bytes / 4) };
	return post_slot_send(st, 2, K_NOTIFY);
}

/* Client: start transfers while fewer than data_window EPs move data. */
static int client_pump(void)
{
	int r = 0;

	if (s.nconn < eps || s.nadv < eps)
		return 0;
	while (!r && s.next_data < eps && s.moving < data_window)
		r = client_transfer(&s.st[s.next_data++]);
	return r;
}

static int client_connect(u32 i)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port + i % psps) };
	struct scale_ep *st = &s.st[i];
	u32 pd[2] = { SCALE_MAGIC, i };
	int r;

	in4_pton(peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL);
	r = new_ep(st);
	if (r)
		return r;
	if (!s.t_first)
		s.t_first = ktime_get();
	r = rkdapl_ep_connect(st->ep, (struct sockaddr *)&sin, timeout_ms, pd, sizeof(pd));
	if (r)
		return FAIL("EP %u: ep_connect = %d", i, r);
	s.connecting++;
	return 0;
}

static int client_conn_event(const struct scale_ev *v)
{
	struct scale_ep *st = by_ep(v->ep);
	int r;

	if (!st)
		return FAIL("connection event %u for an unknown EP", v->type);
	if (v->type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && s.tearing_down &&
	    !(st->flags & S_DISC)) {
		st->flags |= S_DISC;
		if (++s.ndisc == eps)
			s.t_end = ktime_get();
		return 0;
	}
	if (v->type != RKDAPL_CONNECTION_EVENT_ESTABLISHED || (st->flags & S_CONN))
		return FAIL("EP %u: connection event %u status %d", st->idx, v->type, v->status);
	st->flags |= S_CONN;
	s.connecting--;
	r = post_slot_recv(st, 0, K_ADV);
	if (!r)
		r = post_slot_recv(st, 1, K_ACK);
	if (!r && ++s.nconn == eps) {
		s.t_conn = ktime_get();
		read_mem(&s.m1);
	}
	return r ?: client_pump();
}

static int client_dto_event(const struct scale_ev *v, struct scale_ep *st, u32 kind)
{
	struct scale_msg *m;

	switch (kind) {
	case K_ADV:
		m = slot(st->idx, 0);
		if (!msg_ok(m, st->idx) || (st->flags & S_ADV))
			return FAIL("EP %u: bad advertisement", st->idx);
		st->address = m->address;
		st->rkey = m->rkey;
		st->flags |= S_ADV;
		s.nadv++;
		return client_pump();
	case K_WRITE:
		st->flags |= S_WRITE;
		break;
	case K_NOTIFY:
		st->flags |= S_NOTIFY;
		break;
	case K_ACK:
		m = slot(st->idx, 1);
		if (!msg_ok(m, st->idx) || m->rkey != 1)
			return FAIL("EP %u: the server did not verify the data (ack %u)", st->idx,
				    m->rkey);
		s.nverified++;
		st->flags |= S_ACK;
		break;
	default:
		return FAIL("EP %u: completion of kind %u", st->idx, kind);
	}
	if ((st->flags & (S_WRITE | S_NOTIFY | S_ACK)) == (S_WRITE | S_NOTIFY | S_ACK) &&
	    !(st->flags & S_DONE)) {
		s.moving--;
		return ep_done(st) ?: client_pump();
	}
	return 0;
}

static int server_request(const struct scale_ev *v)
{
	struct scale_ep *st;
	u32 i = v->pd[1];
	int r;

	if (v->pdlen < sizeof(v->pd) || v->pd[0] != SCALE_MAGIC || i >= eps || s.st[i].ep)
		return FAIL("connection request with bad private data (%u bytes, index %u)",
			    v->pdlen, i);
	st = &s.st[i];
	if (!s.t_first)
		s.t_first = ktime_get();
	r = new_ep(st);
	if (r)
		return r;
	r = rkdapl_cr_accept(v->cr, st->ep, NULL, 0);
	if (r)
		return FAIL("EP %u: cr_accept = %d", i, r);
	return post_slot_recv(st, 0, K_NOTIFY);
}

static int server_conn_event(const struct scale_ev *v)
{
	struct scale_ep *st = by_ep(v->ep);
	u64 addr;
	u32 rkey;
	int r;

	if (!st)
		return FAIL("connection event %u for an unknown EP", v->type);
	if (v->type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && !(st->flags & S_DISC)) {
		if (!(st->flags & S_NOTIFY))
			return FAIL("EP %u: disconnected before its data came", st->idx);
		st->flags |= S_DISC;
		if (++s.ndisc == 1)
			s.t_disc0 = ktime_get();
		if (s.ndisc == eps)
			s.t_end = ktime_get();
		return 0;
	}
	if (v->type != RKDAPL_CONNECTION_EVENT_ESTABLISHED || (st->flags & S_CONN))
		return FAIL("EP %u: connection event %u status %d", st->idx, v->type, v->status);
	st->flags |= S_CONN;
	if (++s.nconn == eps)
		s.t_conn = ktime_get();
	r = rkdapl_rmr_create(s.pz[st->idx % pzs], &st->rmr);
	if (r)
		return FAIL("EP %u: rmr_create = %d", st->idx, r);
	r = rkdapl_rmr_bind(st->rmr, st->lmr, 0, bytes, RKDAPL_MEM_REMOTE_WRITE, st->ep,
			    COOKIE(st->idx, K_BIND), &rkey, &addr);
	if (r)
		return FAIL("EP %u: rmr_bind = %d", st->idx, r);
	*slot(st->idx, 2) = (struct scale_msg){ SCALE_MAGIC, st->idx, addr, rkey, bytes, 0 };
	return 0;
}

static int server_dto_event(const struct scale_ev *v, struct scale_ep *st, u32 kind)
{
	struct scale_msg *m;
	bool ok = true;
	u32 k;

	switch (kind) {
	case K_BIND:
		return post_slot_send(st, 2, K_ADV);
	case K_ADV:
		st->flags |= S_ADV;
		break;
	case K_NOTIFY:
		m = slot(st->idx, 0);
		if (!msg_ok(m, st->idx) || (st->flags & S_NOTIFY))
			return FAIL("EP %u: bad notification", st->idx);
		st->flags |= S_NOTIFY;
		if (!s.t_data0)
			s.t_data0 = ktime_get();
		rkdapl_lmr_sync_rdma_write(st->lmr, 0, bytes);
		for (k = 0; k < bytes / 4 && ok; k++)
			ok = st->buf[k] == pattern(st->idx, k);
		if (!ok || m->csum != csum(st->buf, bytes / 4)) {
			FAIL("EP %u: word %u of its data differs from the pattern", st->idx, k - 1);
			ok = false;
		}
		if (ok && ++s.nverified == eps) {
			s.t_data1 = ktime_get();
			read_mem(&s.m1);
		}
		*slot(st->idx, 3) = (struct scale_msg){ SCALE_MAGIC, st->idx, 0, ok, bytes, 0 };
		return post_slot_send(st, 3, K_ACK) ?: (ok ? 0 : -EIO);
	case K_ACK:
		st->flags |= S_ACK;
		break;
	default:
		return FAIL("EP %u: completion of kind %u", st->idx, kind);
	}
	if ((st->flags & (S_ADV | S_ACK)) == (S_ADV | S_ACK) && !(st->flags & S_DONE))
		return ep_done(st);
	return 0;
}

static int handle(const struct scale_ev *v)
{
	struct scale_ep *st;
	u32 i = v->cookie >> 8, kind = v->cookie & 0xff;

	if (v->type == RKDAPL_CONNECTION_REQUEST_EVENT && s.server)
		return server_request(v);
	if (v->type >= RKDAPL_CONNECTION_EVENT_ESTABLISHED &&
	    v->type <= RKDAPL_CONNECTION_EVENT_BROKEN)
		return s.server ? server_conn_event(v) : client_conn_event(v);
	if (v->type != RKDAPL_DTO_COMPLETION_EVENT &&
	    v->type != RKDAPL_RMR_BIND_COMPLETION_EVENT)
		return FAIL("unexpected event %u status %d", v->type, v->status);
	if (i >= eps || !s.st[i].ep || s.st[i].ep != v->ep)
		return FAIL("completion with a bad cookie %llu", v->cookie);
	st = &s.st[i];
	/*
	 * The server's SENDs may complete FLUSHED once the message got through but its ACK was
	 * lost and the client disconnected (every EP done) before the retransmission.
	 */
	if (v->status == RKDAPL_DTO_FLUSHED && s.server && (st->flags & S_NOTIFY) &&
	    (kind == K_ADV || kind == K_ACK))
		return server_dto_event(v, st, kind);
	if (v->status)
		return FAIL("EP %u: completion of kind %u status %d", i, kind, v->status);
	return s.server ? server_dto_event(v, st, kind) : client_dto_event(v, st, kind);
}

static int setup(void)
{
	u32 priv = RKDAPL_MEM_LOCAL_WRITE | (s.server ? RKDAPL_MEM_REMOTE_WRITE : 0);
	u32 i, k;
	int r;

	for (s.ring_size = 64; s.ring_size < 8 * eps + 64; s.ring_size *= 2)
		;
	s.ring = vzalloc(array_size(s.ring_size, sizeof(*s.ring)));
	s.st = vzalloc(array_size(eps, sizeof(*s.st)));
	s.msgs = vzalloc(array_size(eps, 4 * SLOT));
	if (!s.ring || !s.st || !s.msgs)
		return FAIL("set-up: out of memory");
	r = rkdapl_ia_open(dev, &s.ia);
	if (r)
		return FAIL("ia_open(%s) = %d", dev, r);
	for (i = 0; i < pzs; i++) {
		r = rkdapl_pz_create(s.ia, &s.pz[i]);
		if (!r)
			r = rkdapl_lmr_create(s.pz[i], s.msgs, eps * 4 * SLOT,
					      RKDAPL_MEM_LOCAL_WRITE, &s.msg_lmr[i]);
		if (r)
			return FAIL("pz_create/lmr_create = %d", r);
	}
	for (i = 0; i < evds; i++) {
		r = rkdapl_evd_create(s.ia, 64, &s.evd[i]);
		if (!r)
			r = rkdapl_evd_modify_upcall(s.evd[i], RKDAPL_UPCALL_MANY, upcall, NULL);
		if (r)
			return FAIL("evd_create/modify_upcall = %d", r);
	}
	for (i = 0; i < eps; i++) {
		s.st[i].idx = i;
		r = rkdapl_lmr_alloc(s.pz[i % pzs], bytes, priv, (void **)&s.st[i].buf,
				     &s.st[i].lmr);
		if (r)
			return FAIL("EP %u: lmr_alloc(%u) = %d", i, bytes, r);
		for (k = 0; !s.server && k < bytes / 4; k++)
			s.st[i].buf[k] = pattern(i, k);
	}
	if (s.server) {
		r = rkdapl_evd_create(s.ia, 64, &s.cr_evd);
		if (!r)
			r = rkdapl_evd_modify_upcall(s.cr_evd, RKDAPL_UPCALL_MANY, upcall, NULL);
		for (i = 0; !r && i < psps; i++)
			r = rkdapl_psp_create(s.ia, port + i, eps, s.cr_evd, &s.psp[i]);
		if (r)
			return FAIL("PSP set-up = %d", r);
	}
	return 0;
}

/* Frees everything: EPs (and with them their connections) first, then what they used. */
static int teardown(void)
{
	int r = 0;
	u32 i;

	for (i = 0; s.st && i < eps; i++) {
		if (s.st[i].ep && rkdapl_ep_free(s.st[i].ep))
			r = FAIL("EP %u: ep_free failed", i);
		if (s.st[i].rmr && rkdapl_rmr_free(s.st[i].rmr))
			r = FAIL("EP %u: rmr_free failed", i);
		if (s.st[i].lmr && rkdapl_lmr_free(s.st[i].lmr))
			r = FAIL("EP %u: lmr_free failed", i);
	}
	for (i = 0; i < psps && i < ARRAY_SIZE(s.psp); i++)
		if (s.psp[i])
			rkdapl_psp_free(s.psp[i]);
	if (s.cr_evd)
		rkdapl_evd_free(s.cr_evd);
	for (i = 0; i < ARRAY_SIZE(s.evd); i++)
		if (s.evd[i])
			rkdapl_evd_free(s.evd[i]);
	for (i = 0; i < ARRAY_SIZE(s.pz); i++) {
		if (s.msg_lmr[i] && rkdapl_lmr_free(s.msg_lmr[i]))
			r = FAIL("message LMR free failed");
		if (s.pz[i])
			rkdapl_pz_free(s.pz[i]);
	}
	if (s.ia)
		rkdapl_ia_close(s.ia);
	vfree(s.ring);
	vfree(s.st);
	vfree(s.msgs);
	return r;
}

static u64 ms(ktime_t a, ktime_t b)
{
	return a && b ? ktime_ms_delta(b, a) : 0;
}

static void report(int r)
{
	const char *who = s.server ? "server" : "client";
	u64 conn = ms(s.t_first, s.t_conn), data = ms(s.t_data0, s.t_data1);
	u64 down = ms(s.t_disc0, s.t_end);
	long dfree = (long)s.m0.free_kib - (long)s.m1.free_kib;
	long dslab = (long)s.m1.slab_kib - (long)s.m0.slab_kib;

	pr_info("%s: %u EPs over %u PSP(s), %u EVD(s), %u PZ(s), %u bytes each\n", who, eps, psps,
		evds, pzs, bytes);
	if (conn)
		pr_info("%s: %u connections in %llu ms: %llu.%llu connections/s\n", who, s.nconn,
			conn, s.nconn * 1000ULL / conn, s.nconn * 10000ULL / conn % 10);
	if (s.m1.free_kib)
		pr_info("%s: memory with all EPs connected: MemFree -%ld KiB (%ld KiB per EP), SUnreclaim +%ld KiB (%ld KiB per EP)\n",
			who, dfree, dfree / (long)eps, dslab, dslab / (long)eps);
	if (data)
		pr_info("%s: %u EPs moved %llu KiB in %llu ms (%llu KiB/s)\n", who, s.ndone,
			(u64)s.ndone * bytes / 1024, data, (u64)s.ndone * bytes / data * 1000 / 1024);
	pr_info("%s: result eps=%u connected=%u verified=%u disconnected=%u conn_ms=%llu memfree_kib=%ld slab_kib=%ld data_ms=%llu teardown_ms=%llu\n",
		who, eps, s.nconn, s.nverified, s.ndisc, conn, dfree, dslab, data, down);
	if (r)
		pr_info("%s: %u EPs, %u verified, FAILED: %s\n", who, eps, s.nverified, s.why);
	else
		pr_info("%s: %u EPs, %u verified\n", who, eps, s.nverified);
}

static int __init rkdapl_scale_init(void)
{
	struct scale_ev v;
	__be32 addr;
	ktime_t t0;
	int r;

	memset(&s, 0, sizeof(s));
	hash_init(ep_table);
	spin_lock_init(&s.lock);
	init_waitqueue_head(&s.wq);
	s.server = !strcmp(role, "server");
	if (!s.server && strcmp(role, "client")) {
		pr_err("role must be server or client\n");
		return -EINVAL;
	}
	if (!s.server && !in4_pton(peer, -1, (u8 *)&addr, -1, NULL)) {
		pr_err("peer=%s is not an IPv4 address\n", peer);
		return -EINVAL;
	}
	if (!eps || eps > 4096 || !psps || psps > 16 || !evds || evds > 64 || !pzs || pzs > 16 ||
	    bytes < 4 || bytes > SZ_1M || bytes % 4 || !window || !data_window || !timeout_ms) {
		pr_err("parameter out of range\n");
		return -EINVAL;
	}
	r = setup();
	read_mem(&s.m0);
	if (!r && s.server)
		pr_info("server: listening on ports %u..%u\n", port, port + psps - 1);
	while (!r && s.ndisc < eps) {
		while (!r && !s.server && s.started < eps && s.connecting < window)
			r = client_connect(s.started++);
		if (!r)
			r = next_event(&v);
		if (!r)
			r = handle(&v);
	}
	t0 = ktime_get();
	if (teardown() && !r)
		r = -EIO;
	if (!r)
		pr_info("%s: freed everything in %llu ms\n", role, ms(t0, ktime_get()));
	report(r);
	return r ? -EIO : 0;
}

static void __exit rkdapl_scale_exit(void)
{
}

module_init(rkdapl_scale_init);
module_exit(rkdapl_scale_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("rkdapl selftest: many EPs at once over several PSPs, EVDs and PZs");
