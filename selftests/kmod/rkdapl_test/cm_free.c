// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test badarg: an EP freed while one of its connection events is in delivery, and the
 * calls an upcall must not make.
 *
 * For each kind of connection event (ESTABLISHED, DISCONNECTED, PEER_REJECTED, and
 * UNREACHABLE or TIMED_OUT), a client EP of the loopback pair's IA gets its connection events
 * by upcall. In the upcall of that event (inside rdma_cm's event handler of the EP's CM id):
 *   - rkdapl_ep_free(), rkdapl_ep_reset(), rkdapl_evd_wait(), rkdapl_evd_modify_upcall(),
 *     rkdapl_evd_free() and rkdapl_psp_free() are refused with -EDEADLK, and the EP is still
 *     there (rkdapl_ep_get_state());
 *   - a work item frees the EP while the upcall waits for it: rkdapl_ep_free() returns 0
 *     without waiting for the upcall (which would be a deadlock: the upcall waits for the
 *     free), and the EP's CM id, whose last reference is then the event handler's, is released
 *     after the handler (the RDMA layer defers it; a release in place would wait for the
 *     handler itself, under rdma_cm's handler lock, and hang).
 * A splat or a hung task in any of this fails the run (qemu/splat-scan.sh).
 */
#include "rkdapl_test.h"

/* How long the upcall waits for the free from the work item. */
#define CMF_FREE_MS 10000

struct cmf {
	struct bctx *b;
	struct rkdapl_ep *ep;
	struct rkdapl_evd *conn_evd, *dto_evd;
	u32 want, want2;	/* the event (either of two) whose delivery the free races */
	atomic_t seen;		/* calls for that event */
	u32 type;
	s32 status;
	/* the refused calls, from the upcall */
	int in_free, in_reset, in_wait, in_modify, in_evd_free, in_psp_free, state_ret;
	u32 state;
	/* the free from a work item */
	struct work_struct work;
	struct completion freed;
	int free_ret;
	bool free_in_time;
	bool upcall_done;
};

static void cmf_free_work(struct work_struct *w)
{
	struct cmf *f = container_of(w, struct cmf, work);

	f->free_ret = rkdapl_ep_free(f->ep);
	complete(&f->freed);
}

static void cmf_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct cmf *f = ctx;
	struct rkdapl_event e2;

	if (ev->ep != f->ep || (ev->type != f->want && ev->type != f->want2))
		return;
	if (atomic_inc_return(&f->seen) != 1)
		return;
	f->type = ev->type;
	f->status = ev->status;
	f->in_free = rkdapl_ep_free(f->ep);
	f->in_reset = rkdapl_ep_reset(f->ep);
	f->in_wait = rkdapl_evd_wait(f->dto_evd, 0, &e2);
	f->in_modify = rkdapl_evd_modify_upcall(f->conn_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
	f->in_evd_free = rkdapl_evd_free(f->dto_evd);
	f->in_psp_free = rkdapl_psp_free(f->b->psp);
	f->state_ret = rkdapl_ep_get_state(f->ep, &f->state);
	queue_work(system_unbound_wq, &f->work);
	f->free_in_time = wait_for_completion_timeout(&f->freed,
						      msecs_to_jiffies(CMF_FREE_MS)) != 0;
	WRITE_ONCE(f->upcall_done, true);
}

/* The server EP that accepts the client's request, or NULL after a reject. */
static int cmf_answer(struct cmf *f, bool accept, struct rkdapl_ep **s_ep, char *why)
{
	struct bctx *b = f->b;
	struct rkdapl_event ev = {};
	int r;

	r = conn_expect(b->psp_evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (r) {
		snprintf(why, WHY, "no connection request: %s", ename(r));
		return r;
	}
	if (!accept) {
		r = rkdapl_cr_reject(ev.cr, NULL, 0);
		if (r)
			snprintf(why, WHY, "cr_reject = %d %s", r, ename(r));
		return r;
	}
	r = rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, s_ep);
	r = r ?: rkdapl_cr_accept(ev.cr, *s_ep, NULL, 0);
	if (r)
		snprintf(why, WHY, "server ep_create/cr_accept = %d %s", r, ename(r));
	return r;
}

/* Waits until the upcall saw its event and returned. */
static bool cmf_wait_upcall(struct cmf *f, u32 ms)
{
	unsigned long until = jiffies + msecs_to_jiffies(ms);

	while (!READ_ONCE(f->upcall_done) && time_before(jiffies, until))
		msleep(10);
	return READ_ONCE(f->upcall_done);
}

enum cmf_kind { CMF_ESTABLISHED, CMF_DISCONNECTED, CMF_REJECTED, CMF_UNREACHABLE };

static const char *const cmf_name[] = {
	[CMF_ESTABLISHED] = "ESTABLISHED",
	[CMF_DISCONNECTED] = "DISCONNECTED",
	[CMF_REJECTED] = "PEER_REJECTED",
	[CMF_UNREACHABLE] = "UNREACHABLE",
};

static void cmf_one(struct bctx *b, enum cmf_kind kind)
{
	struct rkdapl_ep *s_ep = NULL;
	struct sockaddr_in dst = b->self;
	struct cmf *f = kzalloc(sizeof(*f), GFP_KERNEL);
	char why[WHY] = "", n[128];
	const char *k = cmf_name[kind];
	int r;

	if (!f) {
		tap(false, "free during a connection event", "out of memory");
		return;
	}
	f->b = b;
	INIT_WORK(&f->work, cmf_free_work);
	init_completion(&f->freed);
	switch (kind) {
	case CMF_ESTABLISHED:
		f->want = f->want2 = RKDAPL_CONNECTION_EVENT_ESTABLISHED;
		break;
	case CMF_DISCONNECTED:
		f->want = f->want2 = RKDAPL_CONNECTION_EVENT_DISCONNECTED;
		break;
	case CMF_REJECTED:
		f->want = f->want2 = RKDAPL_CONNECTION_EVENT_PEER_REJECTED;
		break;
	case CMF_UNREACHABLE:
		f->want = RKDAPL_CONNECTION_EVENT_UNREACHABLE;
		f->want2 = RKDAPL_CONNECTION_EVENT_TIMED_OUT;
		/* an address of the guest's subnet that no host has: ARP gets no answer */
		dst.sin_addr.s_addr = htonl((ntohl(b->self.sin_addr.s_addr) & ~0xffu) | 0xfa);
		break;
	}
	r = rkdapl_evd_create(b->ia, 64, &f->conn_evd);
	r = r ?: rkdapl_evd_create(b->ia, 64, &f->dto_evd);
	r = r ?: rkdapl_evd_modify_upcall(f->conn_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, cmf_upcall, f);
	r = r ?: rkdapl_ep_create(b->pz, f->dto_evd, f->conn_evd, NULL, &f->ep);
	r = r ?: rkdapl_ep_connect(f->ep, (struct sockaddr *)&dst, 2000, NULL, 0);
	if (r) {
		snprintf(why, WHY, "set-up: %d %s", r, ename(r));
		goto report;
	}
	if (kind == CMF_ESTABLISHED || kind == CMF_DISCONNECTED || kind == CMF_REJECTED)
		r = cmf_answer(f, kind != CMF_REJECTED, &s_ep, why);
	if (!r && kind == CMF_DISCONNECTED) {
		struct rkdapl_event ev = {};

		r = conn_expect(b->s->conn_evd, s_ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED,
				timeout_ms, &ev);
		r = r ?: rkdapl_ep_disconnect(s_ep);
		if (r)
			snprintf(why, WHY, "server ESTABLISHED/ep_disconnect: %d %s", r, ename(r));
	}
	if (!r && !cmf_wait_upcall(f, timeout_ms + CMF_FREE_MS)) {
		snprintf(why, WHY, "no %s upcall (%d calls)", k, atomic_read(&f->seen));
		r = -ETIMEDOUT;
	}
report:
	snprintf(n, sizeof(n), "free during %s: the connection event reached the upcall", k);
	if (tap(!r, n, "%s", why)) {
		snprintf(n, sizeof(n), "free during %s: in the upcall, ep_free, ep_reset, evd_wait, evd_modify_upcall, evd_free, psp_free -> -EDEADLK",
			 k);
		tap(f->in_free == -EDEADLK && f->in_reset == -EDEADLK && f->in_wait == -EDEADLK &&
		    f->in_modify == -EDEADLK && f->in_evd_free == -EDEADLK &&
		    f->in_psp_free == -EDEADLK, n, "%s %s %s %s %s %s", ename(f->in_free),
		    ename(f->in_reset), ename(f->in_wait), ename(f->in_modify),
		    ename(f->in_evd_free), ename(f->in_psp_free));
		snprintf(n, sizeof(n), "free during %s: the refused calls left the EP as it was", k);
		tap(!f->state_ret && (f->state == RKDAPL_EP_STATE_DISCONNECTED ||
				      (kind == CMF_ESTABLISHED &&
				       f->state == RKDAPL_EP_STATE_CONNECTED)), n, "ep_get_state = %s, state %u",
		    ename(f->state_ret), f->state);
		snprintf(n, sizeof(n), "free during %s: ep_free from a work item returns 0 while the upcall runs",
			 k);
		tap(f->free_in_time && !f->free_ret, n, "%s, ep_free = %d %s",
		    f->free_in_time ? "returned in time" : "still waiting after 10 s",
		    f->free_ret, ename(f->free_ret));
	}
	/*
	 * The EP is freed by the work item; wait for it if the upcall gave up waiting (the
	 * upcall's wait, when it succeeded, consumed the completion).
	 */
	if (f->ep && atomic_read(&f->seen)) {
		if (!READ_ONCE(f->free_in_time))
			wait_for_completion(&f->freed);
	} else if (f->ep) {
		rkdapl_ep_free(f->ep);
	}
	if (s_ep)
		rkdapl_ep_free(s_ep);
	evd_drain(b->s->dto_evd);
	evd_drain(b->s->conn_evd);
	evd_drain(b->psp_evd);
	if (f->conn_evd) {
		snprintf(n, sizeof(n), "free during %s: the upcall is disabled, and the EVDs freed, after", k);
		r = rkdapl_evd_modify_upcall(f->conn_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
		r = r ?: rkdapl_evd_free(f->conn_evd);
		r = r ?: (f->dto_evd ? rkdapl_evd_free(f->dto_evd) : 0);
		tap(!r, n, "%d %s", r, ename(r));
	}
	kfree(f);
}

void cm_free_tests(struct bctx *b)
{
	cmf_one(b, CMF_ESTABLISHED);
	cmf_one(b, CMF_DISCONNECTED);
	cmf_one(b, CMF_REJECTED);
	cmf_one(b, CMF_UNREACHABLE);
}

/*
 * role=removal_free: the fifth kind, BROKEN by device removal. A connected loopback pair whose
 * client EP gets its connection events by upcall; "# removal_free: ready" tells the guest
 * script (selftests/removal.sh) to delete the device; the BROKEN upcall, run by rkdapl's
 * removal, checks the refusals and has a work item free the EP while it waits. Returns once the
 * upcall is over (or after 180 s).
 */
int removal_free_run(void)
{
	struct bctx *b = kzalloc(sizeof(*b), GFP_KERNEL);
	struct side *sd = kzalloc(sizeof(*sd), GFP_KERNEL);
	struct cmf *f = kzalloc(sizeof(*f), GFP_KERNEL);
	struct rkdapl_ep *s_ep = NULL;
	struct rkdapl_event ev = {};
	char why[WHY] = "";
	int r = (b && sd && f) ? 0 : -ENOMEM, i;

	if (r)
		goto out;
	b->s = sd;
	f->b = b;
	f->want = f->want2 = RKDAPL_CONNECTION_EVENT_BROKEN;
	INIT_WORK(&f->work, cmf_free_work);
	init_completion(&f->freed);
	r = parse_peer(&b->self, port);
	r = r ?: rkdapl_ia_open(dev, &b->ia);
	r = r ?: rkdapl_pz_create(b->ia, &b->pz);
	r = r ?: rkdapl_evd_create(b->ia, 64, &b->psp_evd);
	r = r ?: rkdapl_evd_create(b->ia, 64, &sd->dto_evd);
	r = r ?: rkdapl_evd_create(b->ia, 64, &sd->conn_evd);
	r = r ?: rkdapl_psp_create(b->ia, port, 4, b->psp_evd, &b->psp);
	r = r ?: rkdapl_evd_create(b->ia, 64, &f->conn_evd);
	r = r ?: rkdapl_evd_create(b->ia, 64, &f->dto_evd);
	r = r ?: rkdapl_evd_modify_upcall(f->conn_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, cmf_upcall, f);
	r = r ?: rkdapl_ep_create(b->pz, f->dto_evd, f->conn_evd, NULL, &f->ep);
	r = r ?: rkdapl_ep_connect(f->ep, (struct sockaddr *)&b->self, 2000, NULL, 0);
	r = r ?: cmf_answer(f, true, &s_ep, why);
	r = r ?: conn_expect(sd->conn_evd, s_ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms, &ev);
	if (!tap(!r, "free during BROKEN: a connected pair, the client's events by upcall",
		 "%d %s %s", r, ename(r), why))
		goto out;
	pr_info("rkdapl_test: # removal_free: ready\n");
	for (i = 0; i < 180 && !READ_ONCE(f->upcall_done); i++)
		msleep(1000);
	if (tap(READ_ONCE(f->upcall_done), "free during BROKEN: the removal's event reached the upcall",
		"no BROKEN upcall in 180 s (%d calls)", atomic_read(&f->seen))) {
		tap(f->in_free == -EDEADLK && f->in_reset == -EDEADLK && f->in_wait == -EDEADLK &&
		    f->in_modify == -EDEADLK && f->in_evd_free == -EDEADLK &&
		    f->in_psp_free == -EDEADLK,
		    "free during BROKEN: in the upcall, ep_free, ep_reset, evd_wait, evd_modify_upcall, evd_free, psp_free -> -EDEADLK",
		    "%s %s %s %s %s %s", ename(f->in_free), ename(f->in_reset),
		    ename(f->in_wait), ename(f->in_modify), ename(f->in_evd_free),
		    ename(f->in_psp_free));
		tap(!f->state_ret && f->state == RKDAPL_EP_STATE_DISCONNECTED,
		    "free during BROKEN: the refused calls left the EP as it was",
		    "ep_get_state = %s, state %u", ename(f->state_ret), f->state);
		tap(f->free_in_time && !f->free_ret,
		    "free during BROKEN: ep_free from a work item returns 0 while the upcall runs",
		    "%s, ep_free = %d %s", f->free_in_time ? "returned in time" :
		    "still waiting after 10 s", f->free_ret, ename(f->free_ret));
	}
out:
	if (f && f->ep && atomic_read(&f->seen)) {
		if (!READ_ONCE(f->free_in_time))
			wait_for_completion(&f->freed);
	} else if (f && f->ep) {
		rkdapl_ep_free(f->ep);
	}
	if (s_ep)
		rkdapl_ep_free(s_ep);
	if (f && f->conn_evd) {
		rkdapl_evd_modify_upcall(f->conn_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
		rkdapl_evd_free(f->conn_evd);
	}
	if (f && f->dto_evd)
		rkdapl_evd_free(f->dto_evd);
	if (b && b->psp)
		rkdapl_psp_free(b->psp);
	if (sd && sd->dto_evd)
		rkdapl_evd_free(sd->dto_evd);
	if (sd && sd->conn_evd)
		rkdapl_evd_free(sd->conn_evd);
	if (b && b->psp_evd)
		rkdapl_evd_free(b->psp_evd);
	if (b && b->pz)
		rkdapl_pz_free(b->pz);
	if (b && b->ia)
		rkdapl_ia_close(b->ia);
	if (r == -ENOMEM && !f)
		tap(false, "free during BROKEN: set-up", "out of memory");
	kfree(f);
	kfree(sd);
	kfree(b);
	return 0;
}
