// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_test: addresses of either family, and which network namespace and local address each
 * side (server, client) opens its IA in (IPv6, network namespaces).
 *
 *   local=<address>   server and client roles: open the IA by this local IPv4 or IPv6 address
 *                     (rkdapl_ia_open_addr[_net]) instead of by dev=
 *   netns_pid=<pid>   server and client roles: open the IA in the network namespace of this
 *                     process (get_net_ns_by_pid()), e.g. a `sleep` started by `ip netns exec`
 *   peer=<address>    client: the server (IPv4 or IPv6); server: the client's address, then
 *                     checked against rkdapl_cr_query() and rkdapl_ep_query()
 */
#include "rkdapl_test.h"
#include <linux/in6.h>
#include <net/net_namespace.h>
#include <net/ipv6.h>

char *local = "";
module_param(local, charp, 0444);
MODULE_PARM_DESC(local, "server/client: open the IA by this own IPv4/IPv6 address");
int netns_pid;
module_param(netns_pid, int, 0444);
MODULE_PARM_DESC(netns_pid, "server/client: open the IA in the network namespace of this pid");

struct net_side nside[2];

int parse_addr(struct sockaddr_storage *ss, const char *s, u16 p)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (!s || !s[0])
		return -EINVAL;
	if (in4_pton(s, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(p);
		return 0;
	}
	if (in6_pton(s, -1, sin6->sin6_addr.s6_addr, -1, NULL)) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(p);
		return 0;
	}
	return -EINVAL;
}

bool same_ip(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;

	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return ipv6_addr_equal(&a6->sin6_addr, &b6->sin6_addr);
	return false;
}

u16 addr_port(const struct sockaddr_storage *a)
{
	return ntohs(((const struct sockaddr_in *)a)->sin_port);
}

int side_ia_open(struct side *s, char *why)
{
	struct net_side *ns = &nside[s->server ? 0 : 1];
	struct sockaddr_storage a;
	int r;

	if (ns->local && ns->local[0]) {
		if (parse_addr(&a, ns->local, 0)) {
			snprintf(why, WHY, "local=%s is not an IPv4 or IPv6 address", ns->local);
			return -EINVAL;
		}
		r = ns->net ? rkdapl_ia_open_addr_net(ns->net, (struct sockaddr *)&a, &s->ia) :
			      rkdapl_ia_open_addr((struct sockaddr *)&a, &s->ia);
		if (r)
			snprintf(why, WHY, "ia_open_addr%s(%pISc) = %d %s", ns->net ? "_net" : "",
				 &a, r, ename(r));
		return r;
	}
	r = ns->net ? rkdapl_ia_open_net(ns->net, dev, &s->ia) : rkdapl_ia_open(dev, &s->ia);
	if (r)
		snprintf(why, WHY, "ia_open%s(%s) = %d %s", ns->net ? "_net" : "", dev, r, ename(r));
	return r;
}

/* Server: the CR comes from the address the side expects (peer=), any port. */
void check_cr_peer(struct side *s, struct rkdapl_cr *cr)
{
	struct net_side *ns = &nside[0];
	struct rkdapl_cr_param p = {};
	struct sockaddr_storage want;
	int r;

	if (!ns->peer || parse_addr(&want, ns->peer, 0))
		return;
	r = rkdapl_cr_query(cr, &p);
	tap(!r && same_ip((struct sockaddr_storage *)&p.remote_addr, &want) &&
	    p.local_port == port,
	    "server: cr_query names the client's address and the PSP's port",
	    "cr_query = %d %s: %pISpc, local port %u; want %pISc, port %u", r, ename(r),
	    &p.remote_addr, p.local_port, &want, port);
}

/* Either side, connected: ep_query's remote_addr is the peer (and for the client its port). */
void check_ep_peer(struct side *s)
{
	struct net_side *ns = &nside[s->server ? 0 : 1];
	struct rkdapl_ep_attr q = {};
	struct sockaddr_storage want;
	const char *name = s->server ? "server: ep_query's remote_addr is the client's address" :
				       "client: ep_query's remote_addr is the server's address and port";
	int r;

	if (!ns->peer || parse_addr(&want, ns->peer, port))
		return;
	r = rkdapl_ep_query(s->ep, &q);
	tap(!r && same_ip((struct sockaddr_storage *)&q.remote_addr, &want) &&
	    (s->server || addr_port((struct sockaddr_storage *)&q.remote_addr) == port),
	    name, "ep_query = %d %s: %pISpc, want %pISpc", r, ename(r), &q.remote_addr, &want);
}

/* Module init: the sides of the server and client roles from local=, netns_pid= and peer=. */
int net_setup(void)
{
	struct net *net = NULL;
	int i;

	if (netns_pid) {
		net = get_net_ns_by_pid(netns_pid);
		if (IS_ERR(net)) {
			tap(false, "setup: network namespace of netns_pid", "pid %d: %ld", netns_pid,
			    PTR_ERR(net));
			return PTR_ERR(net);
		}
	}
	for (i = 0; i < 2; i++) {
		nside[i].net = net ? get_net(net) : NULL;
		nside[i].local = local;
		nside[i].peer = peer;
	}
	if (net)
		put_net(net);
	return 0;
}

void net_teardown(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (nside[i].net)
			put_net(nside[i].net);
		nside[i].net = NULL;
	}
}
