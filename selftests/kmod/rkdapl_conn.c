// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_conn: fast connect/disconnect cycles between two guests (selftests/conn.sh), checking
 * that every EP on both sides ends exactly once: ESTABLISHED then DISCONNECTED, or one
 * failure event, or (passive side) an accept refused because the peer gave up.
 *
 *   insmod rkdapl_conn.ko role=server [port=7570] [delay_ms=1000]
 *   insmod rkdapl_conn.ko role=client peer=<server IPv4> [port=7570] [cycles=300] [first=0]
 *                         [last=1] [abandon_ms=400] [lossy=0]
 *
 * The client's connect carries {magic, cycle, kind, last} as private data; the server's PSP
 * EVD delivers connection requests by upcall, which accepts them on an EP the server thread
 * made beforehand (inside rdma_cm's handler of the request, where rkdapl_cr_accept() may
 * sleep). The kind of cycle n:
 *
 *   FAST     (most cycles) the client disconnects as soon as it has ESTABLISHED, moving nothing
 *   SLOW_RET (n % 25 == 12) the upcall sleeps @delay_ms after its accept: the client has
 *            disconnected before the accept's upcall returns (RTU and DREQ wait behind it)
 *   ABANDON  (n % 25 == 24) the upcall sleeps @delay_ms before it accepts, and the client frees
 *            its connecting EP after @abandon_ms: the accept is refused, or the server's EP
 *            gets one failure event
 *
 * With lossy=1 (the script puts netem loss on the client's NIC) the client takes any single
 * failure event as an outcome too. The server runs until it has handled a request marked last
 * (or a wait runs out). Each side counts its outcomes and fails on a second terminal event
 * for an EP, an event for an EP other than the current one, or no outcome within @timeout_ms.
 * The last line is "rkdapl_conn: <role>: N cycles: ..., every EP ended once" or
 * "..., FAILED: <why>"; insmod's status is the result.
 */
#define pr_fmt(fmt) "rkdapl_conn: " fmt

#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/string.h>
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
static ushort port = 7570;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "PSP port (default 7570)");
static uint cycles = 300;
module_param(cycles, uint, 0444);
MODULE_PARM_DESC(cycles, "client: connections to go through (default 300)");
static uint first;
module_param(first, uint, 0444);
MODULE_PARM_DESC(first, "client: number of the first cycle (default 0)");
static bool last = true;
module_param(last, bool, 0444);
MODULE_PARM_DESC(last, "client: mark the last cycle's request as the server's last (default 1)");
static uint delay_ms = 1000;
module_param(delay_ms, uint, 0444);
MODULE_PARM_DESC(delay_ms, "server: the upcall's sleep in SLOW_RET and ABANDON cycles (default 1000)");
static uint abandon_ms = 400;
module_param(abandon_ms, uint, 0444);
MODULE_PARM_DESC(abandon_ms, "client: how long an ABANDON cycle waits before freeing its EP (default 400)");
static bool lossy;
module_param(lossy, bool, 0444);
MODULE_PARM_DESC(lossy, "client: a lossy wire; any single failure event is an outcome (default 0)");
static uint timeout_ms = 90000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "longest wait for one outcome (default 90000: the IB CM gives up on an unanswered reply after about a minute)");

#define CONN_MAGIC 0x434f4e4eu	/* "CONN" */

enum kind { FAST, SLOW_RET, ABANDON };

struct conn_pdata {
	__u32 magic;
	__u32 cycle;
	__u32 kind;
	__u32 last;
};

static enum kind kind_of(u32 n)
{
	if (n % 25 == 12)
		return SLOW_RET;
	if (n % 25 == 24)
		return ABANDON;
	return FAST;
}

static struct conn {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *dto, *conn, *psp_evd;
	struct rkdapl_psp *psp;
	char why[160];
	/* Server: the EP the next upcall accepts on, and what the upcall did. */
	struct rkdapl_ep *slot;
	wait_queue_head_t slot_wq;
	struct completion accepted;
	struct conn_pdata req;
	struct rkdapl_ep *acc_ep;
	int acc_r;
	/* Outcomes. */
	u32 established, reset, failed, refused, abandoned;
} s;

#define FAIL(fmt, ...) ({ snprintf(s.why, sizeof(s.why), fmt, ##__VA_ARGS__); -EIO; })

static bool failure_event(u32 type)
{
	return type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED ||
	       type == RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED ||
	       type == RKDAPL_CONNECTION_EVENT_UNREACHABLE ||
	       type == RKDAPL_CONNECTION_EVENT_TIMED_OUT ||
	       type == RKDAPL_CONNECTION_EVENT_BROKEN ||
	       type == RKDAPL_CONNECTION_EVENT_DISCONNECTED;
}

/*
 * Waits for the outcome of @ep: ESTABLISHED (then, if @disconnect, disconnects at once) and
 * DISCONNECTED, or one failure event. 1: it was established; 0: one failure event (in @ev);
 * negative: no outcome in time, or an event that breaks "exactly once".
 */
static int outcome(struct rkdapl_ep *ep, bool disconnect, u32 n, struct rkdapl_event *ev)
{
	bool est = false;
	int r;

	for (;;) {
		r = rkdapl_evd_wait(s.conn, timeout_ms, ev);
		if (r)
			return FAIL("cycle %u: EP %s with no %s within %u ms (%d)", n,
				    est ? "ESTABLISHED" : "accepted/connecting",
				    est ? "DISCONNECTED" : "outcome", timeout_ms, r);
		if (ev->ep != ep)
			return FAIL("cycle %u: event %u for another EP", n, ev->type);
		if (!est && ev->type == RKDAPL_CONNECTION_EVENT_ESTABLISHED) {
			est = true;
			if (disconnect) {
				r = rkdapl_ep_disconnect(ep);
				if (r)
					return FAIL("cycle %u: ep_disconnect = %d", n, r);
			}
			continue;
		}
		if (est && ev->type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && !ev->status)
			return 1;
		if (!est && failure_event(ev->type))
			return 0;
		return FAIL("cycle %u: event %u status %d after %s", n, ev->type, ev->status,
			    est ? "ESTABLISHED" : "nothing");
	}
}

/* After an EP's outcome and its free, nothing more may come for it. */
static int nothing_left(u32 n)
{
	struct rkdapl_event ev;

	if (!rkdapl_evd_dequeue(s.conn, &ev))
		return FAIL("cycle %u: a second terminal event %u status %d", n, ev.type,
			    ev.status);
	return 0;
}

/* The PSP EVD's upcall: in rdma_cm's handler of the request, where accepting may sleep. */
static void server_upcall(void *ctx, const struct rkdapl_event *ev)
{
	const struct conn_pdata *pd = (const void *)ev->private_data;
	struct rkdapl_ep *ep;
	enum kind k;

	if (ev->type != RKDAPL_CONNECTION_REQUEST_EVENT)
		return;
	/* The server thread fills the slot while it waits; the previous EP may still be busy. */
	wait_event_timeout(s.slot_wq, READ_ONCE(s.slot), msecs_to_jiffies(30000));
	ep = xchg(&s.slot, NULL);
	s.req = ev->private_data_len >= sizeof(*pd) ? *pd : (struct conn_pdata){ 0 };
	k = s.req.magic == CONN_MAGIC ? s.req.kind : FAST;
	if (!ep) {
		s.acc_r = -ENOSPC;
		rkdapl_cr_reject(ev->cr, NULL, 0);
	} else {
		if (k == ABANDON)
			msleep(delay_ms);
		s.acc_r = rkdapl_cr_accept(ev->cr, ep, NULL, 0);
		if (k == SLOW_RET)
			msleep(delay_ms);
	}
	s.acc_ep = ep;
	complete(&s.accepted);
}

static int server_cycle(bool *done)
{
	struct rkdapl_event ev;
	struct rkdapl_ep *ep;
	u32 n;
	int r;

	r = rkdapl_ep_create(s.pz, s.dto, s.conn, NULL, &ep);
	if (r)
		return FAIL("ep_create = %d", r);
	WRITE_ONCE(s.slot, ep);
	wake_up(&s.slot_wq);
	if (!wait_for_completion_timeout(&s.accepted, msecs_to_jiffies(timeout_ms + 120000))) {
		/* Nobody asked: take the EP back, unless an upcall is about to use it. */
		ep = xchg(&s.slot, NULL);
		if (ep) {
			rkdapl_ep_free(ep);
			return FAIL("no connection request within %u s", timeout_ms / 1000 + 120);
		}
		wait_for_completion(&s.accepted);
	}
	ep = s.acc_ep;
	n = s.req.cycle;
	if (s.req.magic != CONN_MAGIC) {
		r = FAIL("a request without this test's private data");
		goto out;
	}
	*done = s.req.last;
	if (s.acc_r) {
		/* Only a client that gave up makes the accept fail; the EP stays silent. */
		if (s.req.kind != ABANDON)
			r = FAIL("cycle %u: cr_accept = %d", n, s.acc_r);
		else if (s.acc_r != -ECONNABORTED && s.acc_r != -EINVAL)
			r = FAIL("cycle %u: cr_accept of a request the peer gave up = %d", n,
				 s.acc_r);
		else
			s.refused++;
		goto out;
	}
	r = outcome(ep, false, n, &ev);
	if (r == 1) {
		s.established++;
	} else if (r == 0) {
		if (ev.type == RKDAPL_CONNECTION_EVENT_DISCONNECTED &&
		    ev.status == -ECONNRESET)
			s.reset++;
		else if (ev.type == RKDAPL_CONNECTION_EVENT_DISCONNECTED)
			r = FAIL("cycle %u: DISCONNECTED (status %d) without ESTABLISHED", n,
				 ev.status);
		else
			s.failed++;
	}
out:
	if (ep)
		rkdapl_ep_free(ep);
	if (r >= 0)
		r = nothing_left(n);
	return r;
}

/* Connects; -EAGAIN: rejected before the server listens, retry with a new EP. */
static int client_cycle(u32 n, const struct sockaddr_in *sin, bool first_cycle)
{
	struct conn_pdata pd = { CONN_MAGIC, n, kind_of(n), last && n + 1 == first + cycles };
	struct rkdapl_event ev;
	struct rkdapl_ep *ep;
	int r;

	r = rkdapl_ep_create(s.pz, s.dto, s.conn, NULL, &ep);
	if (r)
		return FAIL("ep_create = %d", r);
	r = rkdapl_ep_connect(ep, (struct sockaddr *)sin, timeout_ms, &pd, sizeof(pd));
	if (r) {
		r = FAIL("cycle %u: ep_connect = %d", n, r);
		goto out;
	}
	if (pd.kind == ABANDON && !pd.last) {
		/* Give up while the server sleeps before its accept (if nothing came yet). */
		if (rkdapl_evd_wait(s.conn, abandon_ms, &ev) == -ETIMEDOUT) {
			s.abandoned++;
			rkdapl_ep_free(ep);
			/* An outcome may have come between the wait and the free: one at most. */
			if (!rkdapl_evd_dequeue(s.conn, &ev) &&
			    (ev.ep != ep || (ev.type != RKDAPL_CONNECTION_EVENT_ESTABLISHED &&
					     !failure_event(ev.type))))
				return FAIL("cycle %u: event %u after giving up", n, ev.type);
			return nothing_left(n);
		}
		/* An early outcome: handle it as a fast cycle. */
		if (ev.ep != ep) {
			r = FAIL("cycle %u: event %u for another EP", n, ev.type);
		} else if (ev.type == RKDAPL_CONNECTION_EVENT_ESTABLISHED) {
			r = rkdapl_ep_disconnect(ep);
			r = r ? FAIL("cycle %u: ep_disconnect = %d", n, r) :
				outcome(ep, false, n, &ev) == 0 &&
				ev.type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && !ev.status ? 1 :
				FAIL("cycle %u: no DISCONNECTED after ESTABLISHED", n);
		} else {
			r = failure_event(ev.type) ? 0 : FAIL("cycle %u: event %u", n, ev.type);
		}
	} else {
		r = outcome(ep, true, n, &ev);
	}
	if (r == 1) {
		s.established++;
	} else if (r == 0) {
		if (first_cycle && ev.type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED) {
			rkdapl_ep_free(ep);
			return -EAGAIN;
		}
		if (!lossy && pd.kind != ABANDON)
			r = FAIL("cycle %u: event %u status %d instead of ESTABLISHED", n, ev.type,
				 ev.status);
		else
			s.failed++;
	}
out:
	rkdapl_ep_free(ep);
	if (r >= 0)
		r = nothing_left(n);
	return r;
}

static void conn_free(void)
{
	if (s.psp)
		rkdapl_psp_free(s.psp);
	if (s.slot)
		rkdapl_ep_free(s.slot);
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
}

static int __init rkdapl_conn_init(void)
{
	bool server = !strcmp(role, "server"), done = false;
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	unsigned long end;
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
	init_waitqueue_head(&s.slot_wq);
	init_completion(&s.accepted);
	r = rkdapl_ia_open(dev, &s.ia);
	if (!r)
		r = rkdapl_pz_create(s.ia, &s.pz);
	if (!r)
		r = rkdapl_evd_create(s.ia, 16, &s.dto);
	if (!r)
		r = rkdapl_evd_create(s.ia, 16, &s.conn);
	if (!r && server)
		r = rkdapl_evd_create(s.ia, 16, &s.psp_evd);
	if (!r && server)
		r = rkdapl_evd_modify_upcall(s.psp_evd, RKDAPL_UPCALL_SINGLE_INSTANCE,
					     server_upcall, NULL);
	if (!r && server)
		r = rkdapl_psp_create(s.ia, port, 16, s.psp_evd, &s.psp);
	if (r) {
		FAIL("set-up = %d", r);
		goto out;
	}
	if (server) {
		pr_info("server: listening on port %u\n", port);
		while (!done) {
			r = server_cycle(&done);
			if (r < 0)
				break;
			r = 0;
			if (++n % 100 == 0)
				pr_info("server: %u requests\n", n);
		}
	} else {
		for (n = first; n < first + cycles; n++) {
			end = jiffies + msecs_to_jiffies(timeout_ms);
			do {
				r = client_cycle(n, &sin, n == first);
				if (r == -EAGAIN)
					msleep(200);
			} while (r == -EAGAIN && time_before(jiffies, end));
			if (r == -EAGAIN)
				r = FAIL("cycle %u: rejected (nobody listening) for %u ms", n, timeout_ms);
			if (r < 0)
				break;
			r = 0;
			if ((n + 1) % 100 == 0)
				pr_info("client: %u cycles\n", n + 1);
		}
		n -= first;
	}
out:
	conn_free();
	pr_info("%s: %u cycles: %u established, %u reset before established, %u failed, %u refused, %u abandoned, %s%s\n",
		role, n, s.established, s.reset, s.failed, s.refused, s.abandoned,
		r ? "FAILED: " : "every EP ended once", r ? s.why : "");
	return r ? -EIO : 0;
}

static void __exit rkdapl_conn_exit(void)
{
}

module_init(rkdapl_conn_init);
module_exit(rkdapl_conn_exit);
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS("RKDAPL");
MODULE_DESCRIPTION("rkdapl selftest: fast connect/disconnect cycles, every EP ending exactly once");
