// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test role=netns: IAs, PSPs and EPs in two network namespaces A and B joined by a veth
 * pair, with an rxe device on each end (selftests/netns.sh sets them up, as the kernel's
 * tools/testing/selftests/rdma/rxe_rping_between_netns.sh does):
 *
 *   insmod rkdapl_test.ko role=netns netns_a=<pid in A> netns_b=<pid in B> \
 *          addr_a=<A's address> addr_b=<B's address> [dev_a=<A's rxe>] [port=7520]
 *
 * The module is loaded from the initial namespace; the namespaces are named by the pid of a
 * process in each (get_net_ns_by_pid()), as a kernel service would be told by whoever
 * configures it: the server runs in a kernel thread, which would be in the initial namespace
 * whatever namespace insmod ran in.
 *
 *   - rkdapl_ia_open_net() and rkdapl_ia_open_addr_net() refuse NULL arguments (-EINVAL);
 *   - addr_a opens an IA in A (on dev_a), not in B nor in the initial namespace (-EADDRNOTAVAIL);
 *   - a port is per namespace: PSPs on the same port in A and in B, a second one in A refused;
 *   - a PSP in A is not reachable at B's address: a client in A connecting to addr_b:port gets
 *     PEER_REJECTED (nobody listens on B's side), and a client in the initial namespace cannot
 *     reach addr_a at all;
 *   - an IA opened by A's network device (rkdapl_ia_open_netdev(), ndev_a) belongs to A: a
 *     client in B reaches a PSP made on it;
 *   - the data tests of the client role (every DTO kind, every byte verified) from a client in
 *     B to a server thread in A, IAs opened by address in each.
 */
#include "rkdapl_test.h"
#include <linux/netdevice.h>
#include <net/net_namespace.h>

static int netns_a, netns_b;
module_param(netns_a, int, 0444);
MODULE_PARM_DESC(netns_a, "role=netns: pid of a process in namespace A (the server's)");
module_param(netns_b, int, 0444);
MODULE_PARM_DESC(netns_b, "role=netns: pid of a process in namespace B (the client's)");
static char *addr_a = "", *addr_b = "", *dev_a = "", *ndev_a = "";
module_param(addr_a, charp, 0444);
MODULE_PARM_DESC(addr_a, "role=netns: A's address (IPv4 or IPv6)");
module_param(addr_b, charp, 0444);
MODULE_PARM_DESC(addr_b, "role=netns: B's address");
module_param(dev_a, charp, 0444);
MODULE_PARM_DESC(dev_a, "role=netns: the RDMA device on A's end (checked by name)");
module_param(ndev_a, charp, 0444);
MODULE_PARM_DESC(ndev_a, "role=netns: the network device of A's end (opened by netdev)");

/* One IA with what a connecting EP needs. */
struct nconn {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;
	struct rkdapl_ep *ep;
};

static int nconn_open(struct nconn *c, struct net *net, const char *addr)
{
	struct sockaddr_storage a;
	int r;

	memset(c, 0, sizeof(*c));
	r = addr ? parse_addr(&a, addr, 0) : 0;
	r = r ?: net ? rkdapl_ia_open_addr_net(net, (struct sockaddr *)&a, &c->ia) :
		       rkdapl_ia_open(dev, &c->ia);
	r = r ?: rkdapl_pz_create(c->ia, &c->pz);
	r = r ?: rkdapl_evd_create(c->ia, 16, &c->evd);
	r = r ?: rkdapl_ep_create(c->pz, c->evd, c->evd, NULL, &c->ep);
	return r;
}

static void nconn_close(struct nconn *c)
{
	if (c->ep)
		rkdapl_ep_free(c->ep);
	if (c->evd)
		rkdapl_evd_free(c->evd);
	if (c->pz)
		rkdapl_pz_free(c->pz);
	if (c->ia)
		rkdapl_ia_close(c->ia);
}

/*
 * Connects @c's EP to @addr:@p and waits for the outcome: 0 for ESTABLISHED, -EPROTO for
 * another event (in @ev), or the error of rkdapl_ep_connect() or of the wait.
 */
static int nconn_try(struct nconn *c, const char *addr, u16 p, struct rkdapl_event *ev)
{
	struct sockaddr_storage a;
	int r;

	memset(ev, 0, sizeof(*ev));
	r = parse_addr(&a, addr, p);
	r = r ?: rkdapl_ep_connect(c->ep, (struct sockaddr *)&a, 5000, NULL, 0);
	return r ?: conn_expect(c->evd, c->ep, RKDAPL_CONNECTION_EVENT_ESTABLISHED, timeout_ms, ev);
}

static void netns_args(struct net *a, const char *addr)
{
	struct sockaddr_storage sa;
	struct rkdapl_ia *ia = NULL;

	parse_addr(&sa, addr, 0);
	expect(rkdapl_ia_open_net(NULL, dev, &ia), -EINVAL, "netns: ia_open_net(NULL net)");
	expect(rkdapl_ia_open_net(a, NULL, &ia), -EINVAL, "netns: ia_open_net(NULL name)");
	expect(rkdapl_ia_open_net(a, dev, NULL), -EINVAL, "netns: ia_open_net(NULL ia)");
	expect(rkdapl_ia_open_net(a, "nosuchdev", &ia), -ENODEV,
	       "netns: ia_open_net(a device that does not exist)");
	expect(__rkdapl_ia_open_net(a, dev, &ia, ""), -EINVAL, "netns: ia_open_net(empty owner)");
	expect(rkdapl_ia_open_addr_net(NULL, (struct sockaddr *)&sa, &ia), -EINVAL,
	       "netns: ia_open_addr_net(NULL net)");
	expect(rkdapl_ia_open_addr_net(a, NULL, &ia), -EINVAL, "netns: ia_open_addr_net(NULL addr)");
	expect(rkdapl_ia_open_addr_net(a, (struct sockaddr *)&sa, NULL), -EINVAL,
	       "netns: ia_open_addr_net(NULL ia)");
}

/*
 * An IA opened by A's network device belongs to A (dev_net()): a PSP on it listens in A, where
 * a client in B (@b, whose EP is fresh or was rejected) finds it.
 */
static void netns_by_netdev(struct net *na, struct nconn *b)
{
	struct net_device *nd = ndev_a[0] ? dev_get_by_name(na, ndev_a) : NULL;
	struct rkdapl_ia *ia = NULL;
	struct rkdapl_evd *evd = NULL;
	struct rkdapl_psp *psp = NULL;
	struct rkdapl_ep *ep = NULL;
	struct sockaddr_storage sa;
	struct rkdapl_event ev;
	int r;

	if (!tap(nd, "netns: A's network device by name in A", "ndev_a='%s'", ndev_a))
		return;
	r = rkdapl_ia_open_netdev(nd, &ia);
	dev_put(nd);
	r = r ?: rkdapl_evd_create(ia, 16, &evd);
	r = r ?: rkdapl_psp_create(ia, port + 2, 4, evd, &psp);
	tap(!r, "netns: ia_open_netdev(A's netdev) and a PSP on it", "%d %s", r, ename(r));
	r = r ?: rkdapl_ep_create(b->pz, b->evd, b->evd, NULL, &ep);
	r = r ?: parse_addr(&sa, addr_a, port + 2);
	r = r ?: rkdapl_ep_connect(ep, (struct sockaddr *)&sa, 5000, NULL, 0);
	r = r ?: conn_expect(evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (tap(!r && ev.cr, "netns: a client in B reaches a PSP of an IA opened by A's netdev",
		"%d %s", r, ename(r))) {
		r = rkdapl_cr_reject(ev.cr, NULL, 0);
		r = r ?: conn_expect(b->evd, ep, RKDAPL_CONNECTION_EVENT_PEER_REJECTED, timeout_ms,
				     &ev);
		tap(!r, "netns: ... and sees its reject", "%d %s, event %u (%s)", r, ename(r),
		    ev.type, evname(ev.type));
	}
	if (ep)
		rkdapl_ep_free(ep);
	if (psp)
		rkdapl_psp_free(psp);
	if (evd)
		rkdapl_evd_free(evd);
	if (ia)
		rkdapl_ia_close(ia);
}

struct srv_thread {
	struct completion done;
	int ret;
};

static int netns_server(void *arg)
{
	struct srv_thread *t = arg;

	t->ret = server_run();
	kthread_complete_and_exit(&t->done, 0);
}

int netns_run(void)
{
	struct net *na = NULL, *nb = NULL;
	struct rkdapl_ia *ia = NULL;
	struct rkdapl_ia_attr attr = {};
	struct sockaddr_storage sa, sb;
	struct nconn a = {}, b = {}, init = {};
	struct rkdapl_psp *pa = NULL, *pb = NULL, *pa2 = NULL;
	struct rkdapl_event ev;
	struct task_struct *task;
	struct srv_thread st;
	char *saved_peer = peer;
	int r;

	na = netns_a ? get_net_ns_by_pid(netns_a) : ERR_PTR(-EINVAL);
	nb = netns_b ? get_net_ns_by_pid(netns_b) : ERR_PTR(-EINVAL);
	if (!tap(!IS_ERR(na) && !IS_ERR(nb) && !parse_addr(&sa, addr_a, 0) &&
		 !parse_addr(&sb, addr_b, 0) && na != nb,
		 "netns: namespaces A and B (by pid) and their addresses",
		 "netns_a=%d: %d, netns_b=%d: %d, addr_a=%s addr_b=%s", netns_a,
		 PTR_ERR_OR_ZERO(na), netns_b, PTR_ERR_OR_ZERO(nb), addr_a, addr_b))
		goto out;

	netns_args(na, addr_a);

	/* Opening by address finds the device in the IA's namespace only. */
	r = rkdapl_ia_open_addr_net(na, (struct sockaddr *)&sa, &ia);
	r = r ?: rkdapl_ia_query(ia, &attr);
	tap(!r && (!dev_a[0] || !strcmp(attr.name, dev_a)),
	    "netns: ia_open_addr_net(A, A's address) opens A's device",
	    "%d %s, device '%s', want '%s'", r, ename(r), attr.name, dev_a);
	if (ia)
		rkdapl_ia_close(ia);
	ia = NULL;
	r = rkdapl_ia_open_addr_net(nb, (struct sockaddr *)&sa, &ia);
	tap(r == -EADDRNOTAVAIL, "netns: ia_open_addr_net(B, A's address) = -EADDRNOTAVAIL",
	    "%d %s", r, ename(r));
	if (!r)
		rkdapl_ia_close(ia);
	ia = NULL;
	r = rkdapl_ia_open_addr((struct sockaddr *)&sa, &ia);
	tap(r == -EADDRNOTAVAIL,
	    "netns: ia_open_addr(A's address) from the initial namespace = -EADDRNOTAVAIL",
	    "%d %s", r, ename(r));
	if (!r)
		rkdapl_ia_close(ia);

	/* Ports are per namespace. */
	r = nconn_open(&a, na, addr_a);
	r = r ?: nconn_open(&b, nb, addr_b);
	if (!tap(!r, "netns: an IA, PZ, EVD and EP opened by address in A and in B", "%d %s",
		 r, ename(r)))
		goto close;
	r = rkdapl_psp_create(a.ia, port + 1, 4, a.evd, &pa);
	tap(!r, "netns: psp_create on A's IA", "%d %s", r, ename(r));
	r = rkdapl_psp_create(b.ia, port + 1, 4, b.evd, &pb);
	tap(!r, "netns: psp_create on B's IA, same port (ports are per namespace)", "%d %s", r,
	    ename(r));
	r = rkdapl_psp_create(a.ia, port + 1, 4, a.evd, &pa2);
	tap(r == -EADDRINUSE, "netns: a second psp_create on that port in A = -EADDRINUSE",
	    "%d %s", r, ename(r));
	if (!r)
		rkdapl_psp_free(pa2);
	if (pb)
		rkdapl_psp_free(pb);
	pb = NULL;

	/*
	 * Only A listens now. A client in A connecting to B's address: the request crosses the
	 * veth to B's rxe, where nobody in B listens on the port.
	 */
	r = nconn_try(&a, addr_b, port + 1, &ev);
	tap(r == -EPROTO && ev.type == RKDAPL_CONNECTION_EVENT_PEER_REJECTED,
	    "netns: a PSP in A is not reachable at B's address (PEER_REJECTED)",
	    "%d %s, event %u (%s) status %d", r, ename(r), ev.type, evname(ev.type), ev.status);
	pr_info("rkdapl_test: # netns: connect to B's address: event %u (%s) status %d\n",
		ev.type, evname(ev.type), ev.status);
	/* From B to A's address it is: the CR arrives in A; rejected, B sees the reject. */
	r = parse_addr(&sa, addr_a, port + 1);
	r = r ?: rkdapl_ep_connect(b.ep, (struct sockaddr *)&sa, 5000, NULL, 0);
	r = r ?: conn_expect(a.evd, NULL, RKDAPL_CONNECTION_REQUEST_EVENT, timeout_ms, &ev);
	if (tap(!r && ev.cr, "netns: a client in B reaches A's PSP (a CR in A)", "%d %s", r,
		ename(r))) {
		struct rkdapl_cr_param p = {};

		r = rkdapl_cr_query(ev.cr, &p);
		tap(!r && same_ip((struct sockaddr_storage *)&p.remote_addr, &sb),
		    "netns: the CR in A comes from B's address", "%d %s: %pISc", r, ename(r),
		    &p.remote_addr);
		r = rkdapl_cr_reject(ev.cr, NULL, 0);
		r = r ?: conn_expect(b.evd, b.ep, RKDAPL_CONNECTION_EVENT_PEER_REJECTED, timeout_ms,
				     &ev);
		tap(!r, "netns: B's EP sees A's reject (PEER_REJECTED)", "%d %s, event %u (%s)", r,
		    ename(r), ev.type, evname(ev.type));
	}

	netns_by_netdev(na, &b);

	/* The initial namespace has no route to A's address. */
	r = nconn_open(&init, NULL, NULL);
	if (tap(!r, "netns: an EP in the initial namespace", "%d %s", r, ename(r))) {
		r = nconn_try(&init, addr_a, port + 1, &ev);
		tap(r || ev.type != RKDAPL_CONNECTION_EVENT_ESTABLISHED,
		    "netns: the initial namespace cannot connect to A's address",
		    "connect = %d %s, event %u (%s) status %d", r, ename(r), ev.type,
		    evname(ev.type), ev.status);
		pr_info("rkdapl_test: # netns: connect from init_net: %d, event %u (%s) status %d\n",
			r, ev.type, evname(ev.type), ev.status);
	}

close:
	if (pa)
		rkdapl_psp_free(pa);
	nconn_close(&init);
	nconn_close(&b);
	nconn_close(&a);

	/* The data tests across the namespaces: server thread in A, client in B. */
	nside[0] = (struct net_side){ .net = na, .local = addr_a, .peer = addr_b };
	nside[1] = (struct net_side){ .net = nb, .local = addr_b, .peer = addr_a };
	peer = addr_a;
	init_completion(&st.done);
	WRITE_ONCE(server_abort, false);
	task = kthread_run(netns_server, &st, "rkdapl_test_ns");
	if (IS_ERR(task)) {
		tap(false, "netns: server thread", "kthread_run = %ld", PTR_ERR(task));
	} else {
		client_run();
		wait_for_completion(&st.done);
	}
	peer = saved_peer;
	memset(nside, 0, sizeof(nside));
out:
	if (!IS_ERR_OR_NULL(na))
		put_net(na);
	if (!IS_ERR_OR_NULL(nb))
		put_net(nb);
	return 0;
}
