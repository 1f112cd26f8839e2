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
 *   (once every EP is done, with @inflight)
 *   clear the buffer, RDMA READ the grant back on every EP at once
 *   at the first READ completion: disconnect all       DISCONNECTED on every EP
 *   each READ completes once: read back and compared, or FLUSHED
 *   free everything                            free everything
 *
 * The teardown with READ responses still arriving is what a client going away with I/O in
 * flight does; it is how rdma_rxe's packet drain under qp->state_lock (qemu/kernel-patches/)
 * was reproduced: rxe_completer() freed the response skbs of a QP in the error state, whose
 * pages go back to virtio-net's page_pool, with interrupts disabled.
 *
 * All work runs in module_init; insmod's status is the result. Lines of the form
 * "rkdapl_scale: <role>: result k=v ..." carry the figures (selftests/scale.sh):
 *   conn_ms      first connect (client) or request (server) to the last ESTABLISHED
 *   memfree_kib  MemFree (si_meminfo) taken between the baseline (everything but the EPs set
 *                up, data LMRs registered) and all EPs connected (server: and granted), the
 *                same for SUnreclaim (slab_kib); KASAN's quarantine keeps what connection
 *                set-up freed, so these are upper bounds
 *   data_ms      first RDMA WRITE to the last EP verified; teardown_ms: first disconnect to
 *                the last DISCONNECTED; read_ok, read_flushed: the READs of the teardown
 * and the last line is "rkdapl_scale: <role>: N EPs, N verified" (", FAILED: <why>").
 * On a failure, the lines before it give what the IA's async EVD held (diag.c) and the events
 * that came for the failed EP in the second after it ("after the failure: ...").
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

#include "scale.h"

char *scale_role = "";
module_param_named(role, scale_role, charp, 0444);
MODULE_PARM_DESC(role, "server or client");
char *scale_dev = "rxe0";
module_param_named(dev, scale_dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device (default rxe0)");
char *scale_peer = "";
module_param_named(peer, scale_peer, charp, 0444);
MODULE_PARM_DESC(peer, "client: the server's IPv4 address");
ushort scale_port = 7600;
module_param_named(port, scale_port, ushort, 0444);
MODULE_PARM_DESC(port, "first PSP port (default 7600)");
uint scale_eps = 1024;
module_param_named(eps, scale_eps, uint, 0444);
MODULE_PARM_DESC(eps, "EPs, 1..4096 (default 1024)");
uint scale_psps = 4;
module_param_named(psps, scale_psps, uint, 0444);
MODULE_PARM_DESC(psps, "PSPs on the server, 1..16 (default 4)");
uint scale_evds = 8;
module_param_named(evds, scale_evds, uint, 0444);
MODULE_PARM_DESC(evds, "EVDs per side, 1..64 (default 8)");
uint scale_pzs = 1;
module_param_named(pzs, scale_pzs, uint, 0444);
MODULE_PARM_DESC(pzs, "PZs per side, 1..16 (default 1)");
uint scale_bytes = 65536;
module_param_named(bytes, scale_bytes, uint, 0444);
MODULE_PARM_DESC(bytes, "bytes each EP moves, a multiple of 4, 4..1048576 (default 65536)");
uint scale_window = 32;
module_param_named(window, scale_window, uint, 0444);
MODULE_PARM_DESC(window, "client: connections being set up at a time (default 32)");
uint scale_data_window = 64;
module_param_named(data_window, scale_data_window, uint, 0444);
MODULE_PARM_DESC(data_window, "client: EPs moving data at a time (default 64)");
uint scale_inflight = 1;
module_param_named(inflight, scale_inflight, uint, 0444);
MODULE_PARM_DESC(inflight, "client: tear down with RDMA READs in flight (default 1; 0: disconnect when idle)");
uint scale_read_eps = 32;
module_param_named(read_eps, scale_read_eps, uint, 0444);
MODULE_PARM_DESC(read_eps, "client: EPs (the first ones) with a READ in flight at the teardown (default 32)");
uint scale_timeout_ms = 120000;
module_param_named(timeout_ms, scale_timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest time without any event, and the connect timeout (default 120000)");

struct scale sc;
static DEFINE_HASHTABLE(ep_table, 10);

void scale_read_mem(struct mem *m)
{
	struct sysinfo i;

	si_meminfo(&i);
	m->free_kib = i.freeram << (PAGE_SHIFT - 10);
	m->slab_kib = global_node_page_state_pages(NR_SLAB_UNRECLAIMABLE_B) << (PAGE_SHIFT - 10);
}

u32 scale_pattern(u32 idx, u32 k)
{
	u32 x = idx * 0x9e3779b1u ^ k * 0x85ebca6bu;

	return x ^ (x >> 15);
}

u64 scale_csum(const u32 *p, u32 n)
{
	u64 h = 1469598103934665603ULL;

	while (n--)
		h = (h ^ *p++) * 1099511628211ULL;
	return h;
}

struct scale_msg *scale_slot(u32 idx, u32 n)
{
	return (struct scale_msg *)((u8 *)sc.msgs + (idx * 4 + n) * SLOT);
}

static struct rkdapl_lmr_triplet slot_iov(u32 idx, u32 n)
{
	return (struct rkdapl_lmr_triplet){ sc.msg_lmr[idx % scale_pzs], (idx * 4 + n) * SLOT,
					    sizeof(struct scale_msg) };
}

static void upcall(void *ctx, const struct rkdapl_event *e)
{
	struct scale_ev *v;
	unsigned long fl;

	spin_lock_irqsave(&sc.lock, fl);
	if (sc.head - sc.tail >= sc.ring_size) {
		sc.lost++;
	} else {
		v = &sc.ring[sc.head++ & (sc.ring_size - 1)];
		*v = (struct scale_ev){ e->type, e->status, e->op, e->private_data_len, e->ep,
					e->cr, e->cookie };
		memcpy(v->pd, e->private_data, min_t(u32, e->private_data_len, sizeof(v->pd)));
	}
	spin_unlock_irqrestore(&sc.lock, fl);
	wake_up(&sc.wq);
}

static bool ring_take(struct scale_ev *v)
{
	unsigned long fl;
	bool got = false;

	spin_lock_irqsave(&sc.lock, fl);
	if (sc.head != sc.tail) {
		*v = sc.ring[sc.tail++ & (sc.ring_size - 1)];
		got = true;
	}
	spin_unlock_irqrestore(&sc.lock, fl);
	return got;
}

/* The next event; -ETIMEDOUT after timeout_ms without one, -ERESTARTSYS on a signal. */
static int next_event(struct scale_ev *v)
{
	long t = wait_event_interruptible_timeout(sc.wq, ring_take(v),
						  msecs_to_jiffies(scale_timeout_ms));

	if (t < 0)
		return FAIL("interrupted (%ld)", t);
	if (!t)
		return FAIL("no event for %u ms", scale_timeout_ms);
	if (READ_ONCE(sc.lost))
		return FAIL("event ring overflowed");
	return 0;
}

struct scale_ep *scale_by_ep(struct rkdapl_ep *ep)
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

int scale_new_ep(struct scale_ep *st)
{
	struct rkdapl_ep_attr a = ep_attr();
	int r = rkdapl_ep_create(sc.pz[st->idx % scale_pzs], sc.evd[st->idx % scale_evds],
				 sc.evd[st->idx % scale_evds], &a, &st->ep);

	if (r)
		return FAIL("EP %u: ep_create = %d", st->idx, r);
	hash_add(ep_table, &st->node, (unsigned long)st->ep);
	return 0;
}

int scale_post_slot_recv(struct scale_ep *st, u32 n, u32 kind)
{
	struct rkdapl_lmr_triplet t = slot_iov(st->idx, n);
	int r = rkdapl_post_recv(st->ep, &t, 1, COOKIE(st->idx, kind), 0);

	return r ? FAIL("EP %u: post_recv = %d", st->idx, r) : 0;
}

int scale_post_slot_send(struct scale_ep *st, u32 n, u32 kind)
{
	struct rkdapl_lmr_triplet t = slot_iov(st->idx, n);
	int r = rkdapl_post_send(st->ep, &t, 1, COOKIE(st->idx, kind), 0);

	return r ? FAIL("EP %u: post_send = %d", st->idx, r) : 0;
}

bool scale_msg_ok(const struct scale_msg *m, u32 idx)
{
	return m->magic == SCALE_MAGIC && m->index == idx && m->length == scale_bytes;
}

/* Client: disconnects every EP at once. */
static int disconnect_all(void)
{
	u32 i;
	int r;

	sc.tearing_down = true;
	pr_info("client: disconnecting all %u EPs\n", scale_eps);
	sc.t_disc0 = ktime_get();
	for (i = 0; i < scale_eps; i++) {
		r = rkdapl_ep_disconnect(sc.st[i].ep);
		if (r)
			return FAIL("EP %u: ep_disconnect = %d", i, r);
	}
	return 0;
}

/*
 * Client, once every EP is done: with @inflight, clears the buffers of the first @read_eps EPs
 * and posts an RDMA READ of each one's grant back into it, all at once; the first READ to
 * complete starts the teardown, so that the others' responses are still arriving when their
 * QPs go to the error state. Each READ must then complete once: successfully, with the pattern
 * read back, or FLUSHED. @read_eps bounds what the server's rdma_rxe queues: the response
 * packets of every READ at once (64 for 64 KiB); with all 1024 EPs reading at once a 1 GiB
 * KASAN guest ran out of atomic memory and dropped the DREQs.
 */
static int all_done(void)
{
	struct rkdapl_lmr_triplet t;
	struct rkdapl_rmr_triplet rt;
	struct scale_ep *st;
	u32 i;
	int r;

	sc.t_data1 = ktime_get();
	if (!scale_inflight)
		return disconnect_all();
	sc.reading = true;
	sc.nread_posted = min(scale_eps, scale_read_eps);
	pr_info("client: all %u EPs verified; READs in flight on %u of them\n", scale_eps,
		sc.nread_posted);
	for (i = 0; i < sc.nread_posted; i++) {
		st = &sc.st[i];
		memset(st->buf, 0, scale_bytes);
		rkdapl_lmr_sync_rdma_read(st->lmr, 0, scale_bytes);
		t = (struct rkdapl_lmr_triplet){ st->lmr, 0, scale_bytes };
		rt = (struct rkdapl_rmr_triplet){ st->address, st->rkey, 0, scale_bytes };
		r = rkdapl_post_rdma_read(st->ep, &t, 1, &rt, COOKIE(i, K_READ), 0);
		if (r)
			return FAIL("EP %u: post_rdma_read = %d", i, r);
	}
	return 0;
}

int scale_ep_done(struct scale_ep *st)
{
	st->flags |= S_DONE;
	if (++sc.ndone == scale_eps && !sc.server)
		return all_done();
	return 0;
}

/* Client: a read-back completed (@status 0 or FLUSHED). */
static int client_read_done(struct scale_ep *st, s32 status)
{
	u32 k;

	if (st->flags & S_READ)
		return FAIL("EP %u: a second completion of its READ", st->idx);
	st->flags |= S_READ;
	sc.nread++;
	if (status == RKDAPL_DTO_FLUSHED) {
		if (!sc.tearing_down)
			return FAIL("EP %u: READ flushed before the teardown", st->idx);
		sc.nread_flushed++;
		return 0;
	}
	rkdapl_lmr_sync_rdma_write(st->lmr, 0, scale_bytes);
	for (k = 0; k < scale_bytes / 4; k++)
		if (st->buf[k] != scale_pattern(st->idx, k))
			return FAIL("EP %u: word %u read back differs", st->idx, k);
	sc.nread_ok++;
	return sc.tearing_down ? 0 : disconnect_all();
}

/* Client: RDMA WRITE the pattern of EP @st into its grant, then SEND the notification. */
static int client_transfer(struct scale_ep *st)
{
	struct rkdapl_lmr_triplet t = { st->lmr, 0, scale_bytes };
	struct rkdapl_rmr_triplet rt = { st->address, st->rkey, 0, scale_bytes };
	int r;

	if (!sc.t_data0)
		sc.t_data0 = ktime_get();
	sc.moving++;
	r = rkdapl_post_rdma_write(st->ep, &t, 1, &rt, COOKIE(st->idx, K_WRITE), 0);
	if (r)
		return FAIL("EP %u: post_rdma_write = %d", st->idx, r);
	*scale_slot(st->idx, 2) = (struct scale_msg){ SCALE_MAGIC, st->idx, 0, 0, scale_bytes,
						scale_csum(st->buf, scale_bytes / 4) };
	return scale_post_slot_send(st, 2, K_NOTIFY);
}

/* Client: start transfers while fewer than data_window EPs move data. */
static int client_pump(void)
{
	int r = 0;

	if (sc.nconn < scale_eps || sc.nadv < scale_eps)
		return 0;
	while (!r && sc.next_data < scale_eps && sc.moving < scale_data_window)
		r = client_transfer(&sc.st[sc.next_data++]);
	return r;
}

static int client_connect(u32 i)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(scale_port + i % scale_psps) };
	struct scale_ep *st = &sc.st[i];
	u32 pd[2] = { SCALE_MAGIC, i };
	int r;

	in4_pton(scale_peer, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL);
	r = scale_new_ep(st);
	if (r)
		return r;
	if (!sc.t_first)
		sc.t_first = ktime_get();
	r = rkdapl_ep_connect(st->ep, (struct sockaddr *)&sin, scale_timeout_ms, pd, sizeof(pd));
	if (r)
		return FAIL("EP %u: ep_connect = %d", i, r);
	sc.connecting++;
	return 0;
}

static int client_conn_event(const struct scale_ev *v)
{
	struct scale_ep *st = scale_by_ep(v->ep);
	int r;

	if (!st)
		return FAIL("connection event %u for an unknown EP", v->type);
	if (v->type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && sc.tearing_down &&
	    !(st->flags & S_DISC)) {
		st->flags |= S_DISC;
		if (++sc.ndisc == scale_eps)
			sc.t_end = ktime_get();
		return 0;
	}
	if (v->type != RKDAPL_CONNECTION_EVENT_ESTABLISHED || (st->flags & S_CONN))
		return FAIL("EP %u: connection event %u status %d", st->idx, v->type, v->status);
	st->flags |= S_CONN;
	sc.connecting--;
	r = scale_post_slot_recv(st, 0, K_ADV);
	if (!r)
		r = scale_post_slot_recv(st, 1, K_ACK);
	if (!r && ++sc.nconn == scale_eps) {
		sc.t_conn = ktime_get();
		pr_info("client: all %u EPs connected\n", scale_eps);
		scale_read_mem(&sc.m1);
	}
	return r ?: client_pump();
}

static int client_dto_event(const struct scale_ev *v, struct scale_ep *st, u32 kind)
{
	struct scale_msg *m;

	switch (kind) {
	case K_ADV:
		m = scale_slot(st->idx, 0);
		if (!scale_msg_ok(m, st->idx) || (st->flags & S_ADV))
			return FAIL("EP %u: bad advertisement", st->idx);
		st->address = m->address;
		st->rkey = m->rkey;
		st->flags |= S_ADV;
		sc.nadv++;
		return client_pump();
	case K_WRITE:
		st->flags |= S_WRITE;
		break;
	case K_NOTIFY:
		st->flags |= S_NOTIFY;
		break;
	case K_READ:
		return client_read_done(st, v->status);
	case K_ACK:
		m = scale_slot(st->idx, 1);
		if (!scale_msg_ok(m, st->idx) || m->rkey != 1)
			return FAIL("EP %u: the server did not verify the data (ack %u)", st->idx,
				    m->rkey);
		sc.nverified++;
		st->flags |= S_ACK;
		break;
	default:
		return FAIL("EP %u: completion of kind %u", st->idx, kind);
	}
	if ((st->flags & (S_WRITE | S_NOTIFY | S_ACK)) == (S_WRITE | S_NOTIFY | S_ACK) &&
	    !(st->flags & S_DONE)) {
		sc.moving--;
		return scale_ep_done(st) ?: client_pump();
	}
	return 0;
}

static int handle(const struct scale_ev *v)
{
	struct scale_ep *st;
	u32 i = v->cookie >> 8, kind = v->cookie & 0xff;

	if (v->type == RKDAPL_CONNECTION_REQUEST_EVENT && sc.server)
		return server_request(v);
	if (v->type >= RKDAPL_CONNECTION_EVENT_ESTABLISHED &&
	    v->type <= RKDAPL_CONNECTION_EVENT_BROKEN)
		return sc.server ? server_conn_event(v) : client_conn_event(v);
	if (v->type != RKDAPL_DTO_COMPLETION_EVENT &&
	    v->type != RKDAPL_RMR_BIND_COMPLETION_EVENT)
		return FAIL("unexpected event %u status %d", v->type, v->status);
	if (i >= scale_eps || !sc.st[i].ep || sc.st[i].ep != v->ep)
		return FAIL("completion with a bad cookie %llu", v->cookie);
	st = &sc.st[i];
	/*
	 * The server's SENDs may complete FLUSHED once the message got through but its ACK was
	 * lost and the client disconnected (every EP done) before the retransmission.
	 */
	if (v->status == RKDAPL_DTO_FLUSHED && sc.server && (st->flags & S_NOTIFY) &&
	    (kind == K_ADV || kind == K_ACK))
		return server_dto_event(v, st, kind);
	if (v->status == RKDAPL_DTO_FLUSHED && !sc.server && kind == K_READ)
		return client_read_done(st, v->status);
	if (v->status) {
		if (sc.fail_ep < 0)
			sc.fail_ep = i;
		return FAIL("EP %u: completion of kind %u status %d", i, kind, v->status);
	}
	return sc.server ? server_dto_event(v, st, kind) : client_dto_event(v, st, kind);
}

static int setup(void)
{
	u32 priv = RKDAPL_MEM_LOCAL_WRITE |
		   (sc.server ? RKDAPL_MEM_REMOTE_WRITE | RKDAPL_MEM_REMOTE_READ : 0);
	u32 i, k;
	int r;

	for (sc.ring_size = 64; sc.ring_size < 8 * scale_eps + 64; sc.ring_size *= 2)
		;
	sc.ring = vzalloc(array_size(sc.ring_size, sizeof(*sc.ring)));
	sc.st = vzalloc(array_size(scale_eps, sizeof(*sc.st)));
	sc.msgs = vzalloc(array_size(scale_eps, 4 * SLOT));
	if (!sc.ring || !sc.st || !sc.msgs)
		return FAIL("set-up: out of memory");
	r = rkdapl_ia_open(scale_dev, &sc.ia);
	if (r)
		return FAIL("ia_open(%s) = %d", scale_dev, r);
	r = scale_async_setup();
	if (r)
		return r;
	for (i = 0; i < scale_pzs; i++) {
		r = rkdapl_pz_create(sc.ia, &sc.pz[i]);
		if (!r)
			r = rkdapl_lmr_create(sc.pz[i], sc.msgs, scale_eps * 4 * SLOT,
					      RKDAPL_MEM_LOCAL_WRITE, &sc.msg_lmr[i]);
		if (r)
			return FAIL("pz_create/lmr_create = %d", r);
	}
	for (i = 0; i < scale_evds; i++) {
		r = rkdapl_evd_create(sc.ia, 64, &sc.evd[i]);
		if (!r)
			r = rkdapl_evd_modify_upcall(sc.evd[i], RKDAPL_UPCALL_MANY, upcall, NULL);
		if (r)
			return FAIL("evd_create/modify_upcall = %d", r);
	}
	for (i = 0; i < scale_eps; i++) {
		sc.st[i].idx = i;
		r = rkdapl_lmr_alloc(sc.pz[i % scale_pzs], scale_bytes, priv,
				     (void **)&sc.st[i].buf,
				     &sc.st[i].lmr);
		if (r)
			return FAIL("EP %u: lmr_alloc(%u) = %d", i, scale_bytes, r);
		for (k = 0; !sc.server && k < scale_bytes / 4; k++)
			sc.st[i].buf[k] = scale_pattern(i, k);
	}
	if (sc.server) {
		r = rkdapl_evd_create(sc.ia, 64, &sc.cr_evd);
		if (!r)
			r = rkdapl_evd_modify_upcall(sc.cr_evd, RKDAPL_UPCALL_MANY, upcall, NULL);
		for (i = 0; !r && i < scale_psps; i++)
			r = rkdapl_psp_create(sc.ia, scale_port + i, scale_eps, sc.cr_evd,
					      &sc.psp[i]);
		if (r)
			return FAIL("PSP set-up = %d", r);
	}
	return 0;
}

/*
 * After a failure: what the async EVD holds, the failed EP's state, and for a second the
 * events of that EP and any other failed completion (16 at most), which name what happened to
 * it (a connection event BROKEN, REJECTED or DISCONNECTED) when its QP was moved to the error
 * state from outside.
 */
static void after_failure(void)
{
	const char *who = sc.server ? "server" : "client";
	struct scale_ep *f = sc.fail_ep >= 0 ? &sc.st[sc.fail_ep] : NULL;
	ktime_t end = ktime_add_ms(ktime_get(), 1000);
	struct scale_ev v;
	u32 state, n = 0;
	long left;

	scale_async_report(true);
	if (f && f->ep && !rkdapl_ep_get_state(f->ep, &state))
		pr_info("%s: after the failure: EP %u in state %u, flags %#x\n", who, f->idx, state,
			f->flags);
	while (n < 16 && (left = ktime_ms_delta(end, ktime_get())) > 0) {
		if (wait_event_interruptible_timeout(sc.wq, ring_take(&v),
						     msecs_to_jiffies(left)) <= 0)
			break;
		if (!(f && v.ep == f->ep) && !(v.type == RKDAPL_DTO_COMPLETION_EVENT && v.status))
			continue;
		n++;
		pr_info("%s: after the failure: event %u status %d, EP %d, cookie kind %llu\n", who,
			v.type, v.status, scale_by_ep(v.ep) ? (int)scale_by_ep(v.ep)->idx : -1,
			v.cookie & 0xff);
	}
}

/*
 * Frees everything: EPs (and with them their connections) first, then what they used. The EPs'
 * frees alone are timed: the cost of ending an EP's handle shows there.
 */
static int teardown(void)
{
	ktime_t t0 = ktime_get();
	u32 i, neps = 0;
	int r = 0;

	for (i = 0; sc.st && i < scale_eps; i++) {
		if (!sc.st[i].ep)
			continue;
		if (rkdapl_ep_free(sc.st[i].ep))
			r = FAIL("EP %u: ep_free failed", i);
		neps++;
	}
	if (neps) {
		s64 us = ktime_us_delta(ktime_get(), t0);

		pr_info("%s: freed %u EPs in %lld ms (%lld us per EP)\n", scale_role, neps,
			us / 1000, us / neps);
	}
	for (i = 0; sc.st && i < scale_eps; i++) {
		if (sc.st[i].rmr && rkdapl_rmr_free(sc.st[i].rmr))
			r = FAIL("EP %u: rmr_free failed", i);
		if (sc.st[i].lmr && rkdapl_lmr_free(sc.st[i].lmr))
			r = FAIL("EP %u: lmr_free failed", i);
	}
	for (i = 0; i < scale_psps && i < ARRAY_SIZE(sc.psp); i++)
		if (sc.psp[i])
			rkdapl_psp_free(sc.psp[i]);
	scale_async_free();
	if (sc.cr_evd)
		rkdapl_evd_free(sc.cr_evd);
	for (i = 0; i < ARRAY_SIZE(sc.evd); i++)
		if (sc.evd[i])
			rkdapl_evd_free(sc.evd[i]);
	for (i = 0; i < ARRAY_SIZE(sc.pz); i++) {
		if (sc.msg_lmr[i] && rkdapl_lmr_free(sc.msg_lmr[i]))
			r = FAIL("message LMR free failed");
		if (sc.pz[i])
			rkdapl_pz_free(sc.pz[i]);
	}
	if (sc.ia)
		rkdapl_ia_close(sc.ia);
	vfree(sc.ring);
	vfree(sc.st);
	vfree(sc.msgs);
	return r;
}

static u64 ms(ktime_t a, ktime_t b)
{
	return a && b ? ktime_ms_delta(b, a) : 0;
}

static void report(int r)
{
	const char *who = sc.server ? "server" : "client";
	u64 conn = ms(sc.t_first, sc.t_conn), data = ms(sc.t_data0, sc.t_data1);
	u64 down = ms(sc.t_disc0, sc.t_end);
	long dfree = 0, dslab = 0;

	if (sc.m1.free_kib) {
		dfree = (long)sc.m0.free_kib - (long)sc.m1.free_kib;
		dslab = (long)sc.m1.slab_kib - (long)sc.m0.slab_kib;
	}

	pr_info("%s: %u EPs over %u PSP(s), %u EVD(s), %u PZ(s), %u bytes each\n", who,
		scale_eps, scale_psps, scale_evds, scale_pzs, scale_bytes);
	if (conn)
		pr_info("%s: %u connections in %llu ms: %llu.%llu connections/s\n", who, sc.nconn,
			conn, sc.nconn * 1000ULL / conn, sc.nconn * 10000ULL / conn % 10);
	if (sc.m1.free_kib)
		pr_info("%s: memory with all EPs connected: MemFree -%ld KiB (%ld KiB per EP), SUnreclaim +%ld KiB (%ld KiB per EP)\n",
			who, dfree, dfree / (long)scale_eps, dslab, dslab / (long)scale_eps);
	if (data)
		pr_info("%s: %u EPs moved %llu KiB in %llu ms (%llu KiB/s)\n", who, sc.ndone,
			(u64)sc.ndone * scale_bytes / 1024, data,
			(u64)sc.ndone * scale_bytes / data * 1000 / 1024);
	if (sc.reading)
		pr_info("%s: teardown with READs in flight: %u READs, %u read back and verified, %u flushed\n",
			who, sc.nread, sc.nread_ok, sc.nread_flushed);
	pr_info("%s: result eps=%u connected=%u verified=%u disconnected=%u conn_ms=%llu memfree_kib=%ld slab_kib=%ld data_ms=%llu teardown_ms=%llu read_ok=%u read_flushed=%u\n",
		who, scale_eps, sc.nconn, sc.nverified, sc.ndisc, conn, dfree, dslab, data, down,
		sc.nread_ok, sc.nread_flushed);
	if (r)
		pr_info("%s: %u EPs, %u verified, FAILED: %s\n", who, scale_eps, sc.nverified,
			sc.why);
	else
		pr_info("%s: %u EPs, %u verified\n", who, scale_eps, sc.nverified);
}

static int __init rkdapl_scale_init(void)
{
	struct scale_ev v;
	__be32 addr;
	ktime_t t0;
	int r;

	memset(&sc, 0, sizeof(sc));
	hash_init(ep_table);
	spin_lock_init(&sc.lock);
	init_waitqueue_head(&sc.wq);
	sc.fail_ep = -1;
	sc.server = !strcmp(scale_role, "server");
	if (!sc.server && strcmp(scale_role, "client")) {
		pr_err("role must be server or client\n");
		return -EINVAL;
	}
	if (!sc.server && !in4_pton(scale_peer, -1, (u8 *)&addr, -1, NULL)) {
		pr_err("peer=%s is not an IPv4 address\n", scale_peer);
		return -EINVAL;
	}
	if (!scale_eps || scale_eps > 4096 || !scale_psps || scale_psps > 16 || !scale_evds ||
	    scale_evds > 64 || !scale_pzs || scale_pzs > 16 || scale_bytes < 4 ||
	    scale_bytes > SZ_1M || scale_bytes % 4 || !scale_window || !scale_data_window ||
	    !scale_timeout_ms) {
		pr_err("parameter out of range\n");
		return -EINVAL;
	}
	r = setup();
	scale_read_mem(&sc.m0);
	if (!r && sc.server)
		pr_info("server: listening on ports %u..%u\n", scale_port,
			scale_port + scale_psps - 1);
	while (!r && (sc.ndisc < scale_eps || sc.nread < sc.nread_posted)) {
		while (!r && !sc.server && sc.started < scale_eps && sc.connecting < scale_window)
			r = client_connect(sc.started++);
		if (!r)
			r = next_event(&v);
		if (!r)
			r = handle(&v);
	}
	if (r && sc.ia)
		after_failure();
	else if (!r && scale_async_report(false))
		r = FAIL("the IA's async EVD reported an error");
	t0 = ktime_get();
	if (teardown() && !r)
		r = -EIO;
	if (!r)
		pr_info("%s: freed everything in %llu ms\n", scale_role, ms(t0, ktime_get()));
	report(r);
	return r ? -EIO : 0;
}

static void __exit rkdapl_scale_exit(void)
{
}

module_init(rkdapl_scale_init);
module_exit(rkdapl_scale_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: many EPs at once over several PSPs, EVDs and PZs");
