// SPDX-License-Identifier: GPL-2.0
/*
 * rkdblk_srv's access control (docs/blockdev.md, "Trust model"): the allow-list of client
 * addresses (the allow parameter) and the rejects that tell a client why it was refused.
 *
 * The allow-list is checked against the connection request's source address as rdma_cm
 * reports it (rkdapl_cr_query()): an IP address, not an authenticated identity. Anyone who
 * can send from an allowed address on the RDMA network is let in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "../../include/rkdapl.h"

#include "proto.h"
#include "srv.h"

/* Entries of the allow-list at most. */
#define SRV_MAX_ALLOW 32

/* One entry: an address and how many of its leading bits must match. */
struct srv_net {
	bool v6;
	u8 prefix;
	u8 addr[16];
};

static struct srv_net *nets;
static unsigned int nr_nets;
static atomic64_t refused;

/* Parses one entry, "A.B.C.D[/N]" or "X:Y::Z[/N]", into @n. */
static int parse_net(char *word, struct srv_net *n)
{
	char *slash = strchr(word, '/');
	unsigned int max;
	u8 prefix;

	if (slash)
		*slash = '\0';
	if (in4_pton(word, -1, n->addr, -1, NULL)) {
		n->v6 = false;
		max = 32;
	} else if (in6_pton(word, -1, n->addr, -1, NULL)) {
		n->v6 = true;
		max = 128;
	} else {
		return -EINVAL;
	}
	n->prefix = max;
	if (slash) {
		if (kstrtou8(slash + 1, 10, &prefix) || prefix > max)
			return -EINVAL;
		n->prefix = prefix;
	}
	return 0;
}

/**
 * srv_allow_parse() - take the allow parameter
 * @list: comma-separated IPv4 or IPv6 addresses, each optionally with a prefix length; NULL
 *	or empty: no allow-list (any client).
 *
 * Context: process context (the module's init).
 * Return: 0; -EINVAL for an entry that is no address or prefix (logged), or more than
 * %SRV_MAX_ALLOW entries; -ENOMEM.
 */
int srv_allow_parse(const char *list)
{
	char *copy, *cur, *word;
	int ret = 0;

	if (!list || !*list)
		return 0;
	copy = kstrdup(list, GFP_KERNEL);
	nets = kcalloc(SRV_MAX_ALLOW, sizeof(*nets), GFP_KERNEL);
	if (!copy || !nets) {
		ret = -ENOMEM;
		goto out;
	}
	cur = copy;
	while ((word = strsep(&cur, ","))) {
		if (!*word)
			continue;
		if (nr_nets == SRV_MAX_ALLOW) {
			pr_err("allow: more than %d entries\n", SRV_MAX_ALLOW);
			ret = -EINVAL;
			break;
		}
		ret = parse_net(word, &nets[nr_nets]);
		if (ret) {
			pr_err("allow: '%s' is not an IPv4 or IPv6 address or prefix\n", word);
			break;
		}
		nr_nets++;
	}
	if (!ret && !nr_nets) {
		pr_err("allow: no address in '%s'\n", list);
		ret = -EINVAL;
	}
out:
	kfree(copy);
	if (ret)
		srv_allow_free();
	return ret;
}

/* Frees the allow-list. Process context. */
void srv_allow_free(void)
{
	kfree(nets);
	nets = NULL;
	nr_nets = 0;
}

/* Whether the first @bits bits of @a and @b are equal. */
static bool prefix_equal(const u8 *a, const u8 *b, unsigned int bits)
{
	unsigned int whole = bits / 8, rest = bits % 8;

	if (memcmp(a, b, whole))
		return false;
	return !rest || !((a[whole] ^ b[whole]) & (0xff00 >> rest));
}

/* Whether @sa, a client's address, is on the allow-list (always, without one). */
static bool allowed(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const void *)sa;
	const struct sockaddr_in *s4 = (const void *)sa;
	const u8 *addr;
	bool v6;
	unsigned int i;

	if (!nr_nets)
		return true;
	if (sa->sa_family == AF_INET) {
		addr = (const u8 *)&s4->sin_addr;
		v6 = false;
	} else if (sa->sa_family == AF_INET6) {
		addr = s6->sin6_addr.s6_addr;
		v6 = true;
		/* ::ffff:a.b.c.d is the IPv4 client a.b.c.d. */
		if (!memchr_inv(addr, 0, 10) && addr[10] == 0xff && addr[11] == 0xff) {
			addr += 12;
			v6 = false;
		}
	} else {
		return false;
	}
	for (i = 0; i < nr_nets; i++)
		if (nets[i].v6 == v6 && prefix_equal(nets[i].addr, addr, nets[i].prefix))
			return true;
	return false;
}

/**
 * srv_reject() - reject a connection request, telling the client why
 * @cr: the request, consumed.
 * @reason: &enum rkdblk_reject_reason, in the reject's private data (&struct rkdblk_reject).
 *
 * Context: process context (the PSP thread).
 */
void srv_reject(struct rkdapl_cr *cr, u16 reason)
{
	struct rkdblk_reject rej = {
		.magic = cpu_to_le32(RKDBLK_MAGIC),
		.version = cpu_to_le16(RKDBLK_VERSION),
		.reason = cpu_to_le16(reason),
	};
	int ret = rkdapl_cr_reject(cr, &rej, sizeof(rej));

	if (ret)
		pr_warn("reject (reason %u) failed: %d\n", reason, ret);
}

/**
 * srv_admit() - whether a connection request's client may connect
 * @cr: the request.
 *
 * A client off the allow-list is rejected with %RKDBLK_REJ_NOT_ALLOWED and one log line that
 * names its address (rate-limited). A request whose address cannot be read is refused too.
 *
 * Context: process context (the PSP thread).
 * Return: true if the caller goes on with @cr; false if @cr was rejected (consumed).
 */
bool srv_admit(struct rkdapl_cr *cr)
{
	struct rkdapl_cr_param p = {};
	int ret;

	if (!nr_nets)
		return true;
	ret = rkdapl_cr_query(cr, &p);
	if (!ret && allowed((const struct sockaddr *)&p.remote_addr))
		return true;
	atomic64_inc(&refused);
	if (ret)
		pr_warn_ratelimited("refused a client whose address is unknown (%d)\n", ret);
	else
		pr_warn_ratelimited("refused %pISc: not on the allow-list\n", &p.remote_addr);
	srv_reject(cr, RKDBLK_REJ_NOT_ALLOWED);
	return false;
}

/* Connection requests refused by the allow-list so far, for the unload line. */
long long srv_refused(void)
{
	return atomic64_read(&refused);
}
