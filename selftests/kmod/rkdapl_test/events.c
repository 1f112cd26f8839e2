// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test badarg: EVD upcalls, connection requests answered in an upcall, an interrupted
 * evd_wait, the async EVD.
 */
#include "rkdapl_test.h"

/* ------------------------------------------------------------------------------------------ */
/* EVD upcalls */

#define UPC_MAX 64
#define UPC_CHAINED 0xc0ffee00ull
#define UPC_N 16		/* the RECVs, SENDs and WRITEs of each test */

struct upc {
	struct bctx *b;
	struct rkdapl_rmr_triplet rt;
	atomic_t n, inside, max_inside, not_task;
	u64 cookie[UPC_MAX];
	u32 op[UPC_MAX];
	s32 status[UPC_MAX];
	int chain_ret;
	bool chained;
	bool spun;
};

static void test_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct upc *u = ctx;
	int in = atomic_inc_return(&u->inside), i;

	if (in > atomic_read(&u->max_inside))
		atomic_set(&u->max_inside, in);
	if (!in_task() || irqs_disabled())
		atomic_inc(&u->not_task);
	if (!u->spun) {
		/*
		 * Hold the first call (a RECV's or a WRITE's, whichever queue rxe served first)
		 * for up to 200 ms, or until a second call is inside: the rest of that queue waits
		 * behind it in its CQ's work, but the other queue's completions still come from the
		 * other CQ's work, which SINGLE_INSTANCE must keep out and MANY lets in. Sleeping,
		 * not spinning: both CQs' works may be queued on this CPU (ib_comp_wq is per-CPU),
		 * and the workqueue starts a second worker only while the first one sleeps.
		 */
		unsigned long until = jiffies + msecs_to_jiffies(200);

		u->spun = true;
		while (atomic_read(&u->inside) < 2 && time_before(jiffies, until))
			usleep_range(100, 200);
	}
	i = atomic_read(&u->n);
	if (i < UPC_MAX) {
		u->cookie[i] = ev->cookie;
		u->op[i] = ev->op;
		u->status[i] = ev->status;
	}
	if (!u->chained && ev->op == RKDAPL_DTO_RDMA_WRITE) {
		/* the any-context calls work from the upcall: post one more WRITE */
		struct rkdapl_lmr_triplet t = { u->b->lmr_b, 0, 64 };

		u->chained = true;
		u->chain_ret = rkdapl_post_rdma_write(u->b->c->ep, &t, 1, &u->rt, UPC_CHAINED, 0);
	}
	atomic_dec(&u->inside);
	atomic_inc(&u->n);
}

/* Waits until @u has seen @n events; returns how many it saw. */
static int upc_wait(struct upc *u, int n)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(timeout_ms);

	while (atomic_read(&u->n) < n && time_before(jiffies, deadline))
		msleep(5);
	msleep(50);	/* anything beyond n */
	return atomic_read(&u->n);
}

/*
 * The traffic of an upcall test: UPC_N RECVs on the client (cookies @recv_cookie + i), then
 * UPC_N times a SEND from the server (its cookies in @sc) and a 64-byte RDMA WRITE from the
 * client's offset i * @stride into @rt (cookies @write_cookie + i). Returns 0 or the first
 * post's error; *@posted counts the WRITEs posted.
 */
static int upc_traffic(struct bctx *b, const struct rkdapl_rmr_triplet *rt, u64 recv_cookie,
		       u64 write_cookie, u32 stride, u64 *sc, int *posted)
{
	struct rkdapl_lmr_triplet t;
	int r = 0, i;

	for (i = 0; !r && i < UPC_N; i++) {
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, 8192 + i * 64, 64 };
		r = rkdapl_post_recv(b->c->ep, &t, 1, recv_cookie + i, 0);
	}
	for (i = 0; !r && i < UPC_N; i++) {
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
		sc[i] = next_cookie(b->s);
		r = rkdapl_post_send(b->s->ep, &t, 1, sc[i], 0);
		t = (struct rkdapl_lmr_triplet){ b->lmr_b, i * stride, 64 };
		r = r ?: rkdapl_post_rdma_write(b->c->ep, &t, 1, rt, write_cookie + i, 0);
		*posted += !r;
	}
	return r;
}

void upcall_tests(struct bctx *b)
{
	enum { N = UPC_N };
	struct rkdapl_lmr_triplet t;
	struct rkdapl_rmr_triplet rt;
	struct rkdapl_rmr *rmr_u = NULL;
	struct rkdapl_event ev = {};
	struct upc *u = kzalloc(sizeof(*u), GFP_KERNEL);
	char why[WHY] = "";
	u64 last_w = 0, last_r = 0, sc[N], c;
	int r, i, got, bad = 0, posted = 0, chained = 0;

	if (!u) {
		tap(false, "upcall tests", "out of memory");
		return;
	}
	u->b = b;
	expect(rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, NULL, u),
	       -EINVAL, "evd_modify_upcall(SINGLE_INSTANCE, NULL function)");
	expect(rkdapl_evd_modify_upcall(b->c->dto_evd, 3, test_upcall, u), -EINVAL,
	       "evd_modify_upcall(policy 3)");
	expect(rkdapl_evd_modify_upcall(NULL, RKDAPL_UPCALL_MANY, test_upcall, u), -EINVAL,
	       "evd_modify_upcall(NULL EVD)");
	expect(rkdapl_evd_modify_upcall(b->foreign, RKDAPL_UPCALL_MANY, test_upcall, u), -EINVAL,
	       "evd_modify_upcall(foreign object)");

	r = pair_grant(b, &rmr_u, 8192, RKDAPL_MEM_REMOTE_WRITE, &rt, why);
	if (!tap(!r, "upcalls: connection and grant", "%d %s %s", r, ename(r), why))
		goto out;
	rt.length = 64;
	u->rt = rt;

	/*
	 * SINGLE_INSTANCE: the client's RECVs (receive CQ) and WRITEs (send CQ) complete from two
	 * completion works at once; the upcall must see one call at a time, in process context.
	 */
	r = rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, test_upcall, u);
	tap(!r, "evd_modify_upcall(SINGLE_INSTANCE)", "%d %s", r, ename(r));
	r = r ?: upc_traffic(b, &rt, 0x5000, 0x6000, 64, sc, &posted);
	got = upc_wait(u, 2 * N + 1);
	for (i = 0; i < min(got, UPC_MAX); i++) {
		if (u->status[i] != RKDAPL_DTO_SUCCESS)
			bad++;
		if (u->cookie[i] == UPC_CHAINED)
			chained++;
		else if (u->op[i] == RKDAPL_DTO_RDMA_WRITE && u->cookie[i] > last_w)
			last_w = u->cookie[i];
		else if (u->op[i] == RKDAPL_DTO_RECV && u->cookie[i] > last_r)
			last_r = u->cookie[i];
		else
			bad++;	/* out of order, or an unexpected event */
	}
	tap(!r && posted == N && got == 2 * N + 1 && !bad && chained == 1 && !u->chain_ret,
	    "upcall SINGLE_INSTANCE: 16 RECV and 17 WRITE completions, in order per queue, all successful, one WRITE posted from the upcall",
	    "post %d %s, posted %d, upcalls %d (want %d), bad %d, chained %d (post %d)", r,
	    ename(r), posted, got, 2 * N + 1, bad, chained, u->chain_ret);
	tap(atomic_read(&u->max_inside) == 1 && !atomic_read(&u->not_task),
	    "upcall SINGLE_INSTANCE: one call at a time, each in process context with interrupts on",
	    "at most %d at once, %d calls in atomic context", atomic_read(&u->max_inside),
	    atomic_read(&u->not_task));
	r = rkdapl_evd_dequeue(b->c->dto_evd, &ev);
	tap(r == -EAGAIN, "upcall mode: nothing is queued on the EVD", "evd_dequeue = %d %s, event %u",
	    r, ename(r), ev.type);
	for (i = 0; i < N; i++)
		wait_cookie(b->s, sc[i], &ev);

	/* disabled: events are queued again, the upcall is not called */
	r = rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
	got = atomic_read(&u->n);
	t = (struct rkdapl_lmr_triplet){ b->lmr_b, 0, 64 };
	c = next_cookie(b->c);
	r = r ?: rkdapl_post_rdma_write(b->c->ep, &t, 1, &rt, c, 0);
	r = r ?: wait_cookie(b->c, c, &ev);
	tap(!r && ev.status == RKDAPL_DTO_SUCCESS && atomic_read(&u->n) == got,
	    "upcall disabled: the next completion is queued and dequeued, no upcall",
	    "%d %s, status %d, upcalls %d then %d", r, ename(r), ev.status, got,
	    atomic_read(&u->n));

	/* MANY */
	atomic_set(&u->n, 0);
	atomic_set(&u->max_inside, 0);
	u->chained = true;	/* no WRITE from the upcall this time */
	u->spun = false;
	r = rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_MANY, test_upcall, u);
	r = r ?: upc_traffic(b, &rt, 0x7000, 0x8000, 0, sc, &posted);
	got = upc_wait(u, 2 * N);
	tap(!r && got == 2 * N && !atomic_read(&u->not_task),
	    "upcall MANY: every completion reaches the upcall, in process context",
	    "%d %s, upcalls %d (want %d)", r, ename(r), got, 2 * N);
	tap(atomic_read(&u->max_inside) == 2,
	    "upcall MANY: a call from one CQ's completions runs while a call from the other CQ's is held (2 at once)",
	    "at most %d at once", atomic_read(&u->max_inside));
	for (i = 0; i < N; i++)
		wait_cookie(b->s, sc[i], &ev);
	/* rkdapl_evd_free() and module unload disable the upcall too; here explicitly */
	expect(rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL), 0,
	       "evd_modify_upcall(DISABLE)");
out:
	rkdapl_evd_modify_upcall(b->c->dto_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
	pair_close(b);
	if (rmr_u)
		expect(rkdapl_rmr_free(rmr_u), 0, "rmr_free of the upcall test's grant");
	kfree(u);
}

/* ------------------------------------------------------------------------------------------ */
/* Connection requests answered from the PSP EVD's upcall (rdma_cm's handler of the request) */

enum crup_mode { CRUP_ACCEPT, CRUP_REJECT, CRUP_LEAVE };

struct crup {
	struct bctx *b;
	struct completion done;
	enum crup_mode mode;
	struct rkdapl_cr *cr;		/* the CR of the last event */
	u32 type;			/* the last event's type */
	bool pdata_ok, not_task;
	/* returns of the calls in the upcall */
	int bad_ep, null_ep, wrong_state, big, query, answer, again, recv;
	struct rkdapl_cr_param crp;
};

#define CRUP_LEN 3000		/* bytes of the SEND over the connection accepted in the upcall */
#define CRUP_RX 0x9100		/* cookie of the RECV the upcall posts */

static void cr_upcall(void *ctx, const struct rkdapl_event *ev)
{
	struct crup *u = ctx;
	struct bctx *b = u->b;
	char big[RKDAPL_MAX_PRIVATE_DATA + 1];
	struct rkdapl_lmr_triplet t = { b->lmr_a, 0, CRUP_LEN };

	u->type = ev->type;
	u->cr = ev->cr;
	if (!in_task() || irqs_disabled())
		u->not_task = true;
	if (ev->type != RKDAPL_CONNECTION_REQUEST_EVENT)
		goto out;
	u->pdata_ok = ev->private_data_len >= sizeof(CLIENT_PDATA) &&
		      !memcmp(ev->private_data, CLIENT_PDATA, sizeof(CLIENT_PDATA));
	if (u->mode == CRUP_LEAVE)
		goto out;
	/* Refused before the CR is consumed: each leaves it pending. */
	memset(big, 'u', sizeof(big));
	u->bad_ep = rkdapl_cr_accept(ev->cr, b->foreign, NULL, 0);
	u->null_ep = rkdapl_cr_accept(ev->cr, NULL, NULL, 0);
	u->wrong_state = rkdapl_cr_accept(ev->cr, b->c->ep, NULL, 0);
	u->big = rkdapl_cr_accept(ev->cr, b->s->ep, big, sizeof(big));
	memset(&u->crp, 0xa5, sizeof(u->crp));
	u->query = rkdapl_cr_query(ev->cr, &u->crp);
	if (u->mode == CRUP_ACCEPT) {
		u->answer = rkdapl_cr_accept(ev->cr, b->s->ep, SERVER_PDATA, sizeof(SERVER_PDATA));
		/* An event-driven server posts its first RECV right away. */
		u->recv = u->answer ?: rkdapl_post_recv(b->s->ep, &t, 1, CRUP_RX, 0);
	} else {
		u->answer = rkdapl_cr_reject(ev->cr, "not now", 7);
	}
	u->again = rkdapl_cr_reject(ev->cr, NULL, 0);
out:
	complete(&u->done);
}

/* Connects @ep to the PSP and waits for the upcall's call. */
static int crup_connect(struct crup *u, struct rkdapl_ep *ep)
{
	reinit_completion(&u->done);
	u->type = 0;
	u->cr = NULL;
	u->pdata_ok = false;
	u->bad_ep = u->null_ep = u->wrong_state = u->big = u->query = 1;
	u->answer = u->again = u->recv = 1;
	return rkdapl_ep_connect(ep, (struct sockaddr *)&u->b->self, 5000, CLIENT_PDATA,
				 sizeof(CLIENT_PDATA)) ?:
	       (wait_for_completion_timeout(&u->done, msecs_to_jiffies(timeout_ms)) ? 0 :
							 -ETIMEDOUT);
}

/*
 * rkdapl_cr_accept() and rkdapl_cr_reject() inside the upcall of the CR's own event: argument
 * and state errors there leave the CR pending, an accept there connects (a RECV posted in the
 * upcall takes a SEND, bytes compared), a reject there reaches the peer, and a CR left
 * unanswered there is accepted afterwards from process context.
 */
void cr_upcall_tests(struct bctx *b)
{
	struct rkdapl_lmr_triplet t = { b->lmr_b, 0, CRUP_LEN };
	struct rkdapl_ep *c2 = NULL, *s2 = NULL;
	struct rkdapl_event ev = {};
	struct crup *u = kzalloc(sizeof(*u), GFP_KERNEL);
	char why[WHY] = "";
	s64 off = -1;
	u64 c;
	int r;

	if (!u) {
		tap(false, "CR upcall tests", "out of memory");
		return;
	}
	u->b = b;
	init_completion(&u->done);
	b->c->dead = b->s->dead = false;
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &b->c->ep);
	r = r ?: rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &b->s->ep);
	r = r ?: rkdapl_evd_modify_upcall(b->psp_evd, RKDAPL_UPCALL_SINGLE_INSTANCE, cr_upcall, u);
	if (!tap(!r, "CR upcall: EPs and the PSP EVD's upcall", "%d %s", r, ename(r)))
		goto out;

	/* accepted in the upcall */
	u->mode = CRUP_ACCEPT;
	r = crup_connect(u, b->c->ep);
	tap(!r && u->type == RKDAPL_CONNECTION_REQUEST_EVENT && u->pdata_ok && !u->not_task,
	    "CR upcall: the connection request reaches the PSP EVD's upcall in process context, with the client's private data",
	    "%d %s, event %u (%s), private data %s, %s", r, ename(r), u->type, evname(u->type),
	    u->pdata_ok ? "ok" : "wrong", u->not_task ? "atomic context" : "task");
	tap(u->bad_ep == -EINVAL && u->null_ep == -EINVAL && u->wrong_state == -EISCONN &&
	    u->big == -EINVAL && !u->query && u->crp.local_port == port,
	    "CR upcall: cr_accept(foreign object, NULL, the connecting EP, 57 bytes of private data) from the upcall -> -EINVAL, -EINVAL, -EISCONN, -EINVAL; cr_query of the CR still works",
	    "%d %d %d %d, cr_query %d local port %u", u->bad_ep, u->null_ep, u->wrong_state,
	    u->big, u->query, u->crp.local_port);
	tap(!u->answer && !u->recv && u->again == -EINVAL,
	    "CR upcall: cr_accept(CR, UNCONNECTED EP) from the upcall -> 0, a RECV posted there -> 0, the CR is consumed",
	    "cr_accept %d %s, post_recv %d %s, cr_reject after %d %s", u->answer, ename(u->answer),
	    u->recv, ename(u->recv), u->again, ename(u->again));
	r = conn_expect(b->c->conn_evd, b->c->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms,
			&ev);
	tap(!r && ev.private_data_len >= sizeof(SERVER_PDATA) &&
	    !memcmp(ev.private_data, SERVER_PDATA, sizeof(SERVER_PDATA)),
	    "CR upcall: the client is ESTABLISHED with the private data of the upcall's accept",
	    "%d %s, event %u (%s) status %d", r, ename(r), ev.type, evname(ev.type), ev.status);
	r = conn_expect(b->s->conn_evd, b->s->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms,
			&ev);
	tap(!r, "CR upcall: the server EP accepted in the upcall is ESTABLISHED", "%d %s, event %u (%s)",
	    r, ename(r), ev.type, evname(ev.type));

	/* a SEND into the RECV the upcall posted */
	memset(b->bufa, 0, CRUP_LEN);
	rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, CRUP_LEN);
	pat_fill(b->bufb, 0, CRUP_LEN, 0xc0a1);
	rkdapl_lmr_sync_rdma_read(b->lmr_b, 0, CRUP_LEN);
	c = next_cookie(b->c);
	r = rkdapl_post_send(b->c->ep, &t, 1, c, 0);
	r = r ?: dto_expect(b->c, c, RKDAPL_DTO_SEND, CRUP_LEN, why);
	r = r ?: dto_expect(b->s, CRUP_RX, RKDAPL_DTO_RECV, CRUP_LEN, why);
	if (!r) {
		rkdapl_lmr_sync_rdma_write(b->lmr_a, 0, CRUP_LEN);
		off = pat_check(b->bufa, 0, CRUP_LEN, 0xc0a1);
	}
	tap(!r && off < 0,
	    "CR upcall: a 3000-byte SEND lands in the RECV posted in the upcall, every byte right",
	    "%d %s %s, first wrong byte %lld", r, ename(r), why, off);

	/* rejected in the upcall */
	u->mode = CRUP_REJECT;
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &c2);
	r = r ?: crup_connect(u, c2);
	tap(!r && !u->answer && u->again == -EINVAL && u->wrong_state == -EISCONN,
	    "CR upcall: cr_reject(CR, 7 bytes) from the upcall -> 0, the CR is consumed",
	    "%d %s, cr_reject %d %s, again %d", r, ename(r), u->answer, ename(u->answer),
	    u->again);
	r = r ?: conn_expect(b->c->conn_evd, c2, RKDAPL_CONNECTION_EVENT_PEER_REJECTED,
			     timeout_ms, &ev);
	tap(!r && ev.status == rej_status(b) && ev.private_data_len >= 7 &&
	    !memcmp(ev.private_data, "not now", 7),
	    is_iwarp(&b->attr) ?
	    "iWARP: CR upcall: the client rejected in the upcall gets PEER_REJECTED, status -ECONNRESET and the private data" :
	    "CR upcall: the client rejected in the upcall gets PEER_REJECTED, status 28 and the private data",
	    "%d %s, event %u (%s) status %d", r, ename(r), ev.type, evname(ev.type), ev.status);
	if (c2)
		rkdapl_ep_free(c2);
	c2 = NULL;

	/* left pending by the upcall, accepted from here */
	u->mode = CRUP_LEAVE;
	r = rkdapl_ep_create(b->pz, b->c->dto_evd, b->c->conn_evd, NULL, &c2);
	r = r ?: rkdapl_ep_create(b->pz, b->s->dto_evd, b->s->conn_evd, NULL, &s2);
	r = r ?: crup_connect(u, c2);
	r = r ?: rkdapl_cr_accept(u->cr, s2, NULL, 0);
	r = r ?: conn_expect(b->c->conn_evd, c2, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms,
			     &ev);
	r = r ?: conn_expect(b->s->conn_evd, s2, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms,
			     &ev);
	tap(!r, "CR upcall: a CR the upcall leaves unanswered stays pending and is accepted later from a thread",
	    "%d %s, event %u (%s)", r, ename(r), ev.type, evname(ev.type));
	/* the first connection still works: a SEND the other way */
	if (!r) {
		struct rkdapl_lmr_triplet rx = { b->lmr_b, 0, 64 }, tx = { b->lmr_a, 0, 64 };
		u64 rc = next_cookie(b->c);

		memset(b->bufb, 0, 64);
		pat_fill(b->bufa, 0, 64, 0xc0a2);
		rkdapl_lmr_sync_rdma_read(b->lmr_a, 0, 64);
		c = next_cookie(b->s);
		r = rkdapl_post_recv(b->c->ep, &rx, 1, rc, 0);
		r = r ?: rkdapl_post_send(b->s->ep, &tx, 1, c, 0);
		r = r ?: dto_expect(b->s, c, RKDAPL_DTO_SEND, 64, why);
		r = r ?: dto_expect(b->c, rc, RKDAPL_DTO_RECV, 64, why);
		rkdapl_lmr_sync_rdma_write(b->lmr_b, 0, 64);
		off = r ? 0 : pat_check(b->bufb, 0, 64, 0xc0a2);
		tap(!r && off < 0,
		    "CR upcall: the connection accepted in the upcall still carries a SEND the other way",
		    "%d %s %s, first wrong byte %lld", r, ename(r), why, off);
	}
out:
	rkdapl_evd_modify_upcall(b->psp_evd, RKDAPL_UPCALL_DISABLE, NULL, NULL);
	if (c2)
		rkdapl_ep_free(c2);
	if (s2)
		rkdapl_ep_free(s2);
	pair_close(b);
	kfree(u);
}

/* rkdapl_evd_wait() in a kthread that gets a signal: -EINTR. */
struct intr_ctx {
	struct rkdapl_evd *evd;
	struct completion waiting, done;
	int ret;
};

static int intr_fn(void *arg)
{
	struct intr_ctx *x = arg;
	struct rkdapl_event ev;

	allow_signal(SIGUSR1);
	complete(&x->waiting);
	x->ret = rkdapl_evd_wait(x->evd, 20000, &ev);
	complete(&x->done);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(HZ / 10);
	return 0;
}

void evd_intr_test(struct bctx *b)
{
	struct intr_ctx x = { .ret = 1 };
	struct task_struct *t;
	unsigned long t0 = jiffies;
	int r;

	r = rkdapl_evd_create(b->ia, 4, &x.evd);
	init_completion(&x.waiting);
	init_completion(&x.done);
	t = r ? ERR_PTR(r) : kthread_run(intr_fn, &x, "rkdapl_intr");
	if (!tap(!IS_ERR(t), "evd_wait interrupted: setup", "%ld", PTR_ERR(t)))
		goto out;
	wait_for_completion(&x.waiting);
	msleep(200);
	send_sig(SIGUSR1, t, 1);
	r = wait_for_completion_timeout(&x.done, msecs_to_jiffies(30000)) ? 0 : -ETIMEDOUT;
	tap(!r && x.ret == -EINTR && time_before(jiffies, t0 + msecs_to_jiffies(10000)),
	    "evd_wait(20 s) in a thread that gets a signal returns -EINTR at once",
	    "%d %s, evd_wait = %d %s after %u ms", r, ename(r), x.ret, ename(x.ret),
	    jiffies_to_msecs(jiffies - t0));
	kthread_stop(t);
out:
	if (x.evd)
		rkdapl_evd_free(x.evd);
}

/*
 * The IA's async EVD: argument errors, and an overflow of another EVD of the IA reported
 * there (connection requests into a PSP EVD of one entry).
 */
void async_evd_tests(struct bctx *b)
{
	struct rkdapl_evd *small = NULL, *async = NULL, *other = NULL;
	struct rkdapl_ia *ia2 = NULL;
	struct rkdapl_psp *psp = NULL;
	struct rkdapl_ep *ep[2] = {};
	struct rkdapl_event ev = {};
	struct sockaddr_in to = b->self;
	int r, i;

	r = rkdapl_evd_create(b->ia, 1, &small);
	r = r ?: rkdapl_evd_create(b->ia, 8, &async);
	r = r ?: rkdapl_ia_open(dev, &ia2);
	r = r ?: rkdapl_evd_create(ia2, 8, &other);
	if (!tap(!r, "async EVD: setup", "%d %s", r, ename(r)))
		goto out;
	expect(rkdapl_ia_set_async_evd(NULL, async), -EINVAL, "ia_set_async_evd(NULL IA)");
	expect(rkdapl_ia_set_async_evd(b->ia, b->foreign), -EINVAL,
	       "ia_set_async_evd(foreign object)");
	expect(rkdapl_ia_set_async_evd(b->ia, other), -EXDEV,
	       "ia_set_async_evd(an EVD of another IA)");
	expect(rkdapl_ia_set_async_evd(b->ia, async), 0, "ia_set_async_evd(EVD of the IA)");

	to.sin_port = htons(port + 5);
	r = rkdapl_psp_create(b->ia, port + 5, 8, small, &psp);
	for (i = 0; !r && i < 2; i++) {
		r = rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ep[i]);
		r = r ?: rkdapl_ep_connect(ep[i], (struct sockaddr *)&to, 5000, NULL, 0);
	}
	r = r ?: conn_expect(async, NULL, RKDAPL_ASYNC_EVD_OVERFLOW, timeout_ms, &ev);
	tap(!r && ev.evd == small && ev.status == -EOVERFLOW && ev.transferred_length == 1,
	    "async EVD: two connection requests into a PSP EVD of 1 entry: RKDAPL_ASYNC_EVD_OVERFLOW naming that EVD",
	    "%d %s, event %u (%s) evd %s status %d lost %llu", r, ename(r), ev.type,
	    evname(ev.type), ev.evd == small ? "right" : "wrong", ev.status,
	    ev.transferred_length);
	memset(&ev, 0, sizeof(ev));
	r = rkdapl_evd_dequeue(small, &ev);
	tap(!r && ev.type == RKDAPL_ASYNC_EVD_OVERFLOW && ev.evd == small &&
	    ev.transferred_length == 1,
	    "the full EVD itself reports the loss first (1 event lost)",
	    "%d %s, event %u (%s), lost %llu", r, ename(r), ev.type, evname(ev.type),
	    ev.transferred_length);
	r = rkdapl_evd_dequeue(small, &ev);
	tap(!r && ev.type == RKDAPL_CONNECTION_REQUEST_EVENT, "then the connection request it kept",
	    "%d %s, event %u (%s)", r, ename(r), ev.type, evname(ev.type));
	if (!r && ev.type == RKDAPL_CONNECTION_REQUEST_EVENT)
		rkdapl_cr_reject(ev.cr, NULL, 0);
	expect(rkdapl_evd_dequeue(async, &ev), -EAGAIN, "async EVD: nothing else queued");
out:
	for (i = 0; i < 2; i++)
		if (ep[i])
			rkdapl_ep_free(ep[i]);
	if (psp)
		expect(rkdapl_psp_free(psp), 0, "psp_free of the overflow test's PSP");
	evd_drain(b->evd);
	if (async)
		expect(rkdapl_evd_free(async), 0, "evd_free of the async EVD (unsets it)");
	if (small)
		rkdapl_evd_free(small);
	if (other)
		rkdapl_evd_free(other);
	if (ia2)
		rkdapl_ia_close(ia2);
}
