/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The connection of a one-shot sample (rkdapl_sample/, rkdapl_rping.c): one IA, PZ and EVD
 * for every event, a PSP and its CR on the server, one EP, and the events that move it along.
 * Each sample embeds a struct sconn and handles its own DTO completions (sconn->dto_event);
 * everything else is here: connection events, waiting with a deadline, accepting, connecting
 * with retries, draining and freeing. Everything is static inline: rkdapl_rping.c includes it,
 * and so does each file of rkdapl_sample/.
 */
#ifndef _SAMPLE_CONN_H
#define _SAMPLE_CONN_H

#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "sample_common.h"

struct sconn {
	const char *who;		/* "server" or "client": every message starts with it */
	bool is_server;
	const char *pdata;		/* the client's private data; the server wants it in CRs */
	u32 timeout_ms;			/* each wait, and the client's connect retries */
	struct rkdapl_ia *ia;
	struct rkdapl_ia_attr attr;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd;		/* every event of the sample */
	struct rkdapl_psp *psp;
	struct rkdapl_cr *cr;		/* server: received, not yet accepted */
	struct rkdapl_ep *ep;
	struct rkdapl_ep_attr ep_attr;
	/* the sample's DTO and RMR bind completions */
	void (*dto_event)(struct sconn *c, const struct rkdapl_event *ev);
	/*
	 * A DISCONNECTED event ends a wait with -ECONNRESET but without an error message: the
	 * peer ends the session that way (rkdapl_rping).
	 */
	bool quiet_disconnect;

	/* Event state, updated by sconn_event() and the sample's dto_event. */
	int err;
	bool want_cr;
	bool established, disconnected, conn_failed;
	bool flushed;			/* a DTO came back FLUSHED: the connection is going */
	bool expect_disc;		/* the peer may disconnect while we wait */
	u32 conn_fail_type;
	s32 conn_fail_status;
};

static inline void sconn_fail(struct sconn *c, int err)
{
	if (!c->err)
		c->err = err;
}

/* Server: keeps the first CR that carries c->pdata while it wants one; rejects the others. */
static inline void sconn_cr_event(struct sconn *c, const struct rkdapl_event *ev)
{
	size_t plen = c->pdata ? strlen(c->pdata) : 0;

	if (!c->is_server) {
		pr_warn("%s: rejecting a connection request: not a server\n", c->who);
	} else if (!c->want_cr || c->cr) {
		pr_warn("%s: rejecting a connection request: already serving a client\n",
			c->who);
	} else if (plen && (ev->private_data_len < plen ||
			    memcmp(ev->private_data, c->pdata, plen))) {
		pr_warn("%s: rejecting a connection request: private data is not \"%s\"\n",
			c->who, c->pdata);
	} else {
		c->cr = ev->cr;
		return;
	}
	CHECK(c, rkdapl_cr_reject(ev->cr, NULL, 0));
}

static inline void sconn_event(struct sconn *c, const struct rkdapl_event *ev)
{
	switch (ev->type) {
	case RKDAPL_DTO_COMPLETION_EVENT:
	case RKDAPL_RMR_BIND_COMPLETION_EVENT:
		c->dto_event(c, ev);
		return;
	case RKDAPL_CONNECTION_REQUEST_EVENT:
		sconn_cr_event(c, ev);
		return;
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
	case RKDAPL_CONNECTION_EVENT_PEER_REJECTED:
	case RKDAPL_CONNECTION_EVENT_NON_PEER_REJECTED:
	case RKDAPL_CONNECTION_EVENT_UNREACHABLE:
	case RKDAPL_CONNECTION_EVENT_TIMED_OUT:
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		if (!ev->ep || ev->ep != c->ep) {
			pr_info("%s: %s event (status %d) of an earlier EP, ignored\n", c->who,
				rkdapl_event_msg(ev->type), ev->status);
			return;
		}
		break;
	case RKDAPL_ASYNC_EVD_OVERFLOW:
		pr_err("%s: EVD overflow, %llu events lost\n", c->who, ev->transferred_length);
		sconn_fail(c, -EOVERFLOW);
		return;
	case RKDAPL_ASYNC_IA_CATASTROPHIC:
		pr_err("%s: IA catastrophic error (status %d)\n", c->who, ev->status);
		sconn_fail(c, -EIO);
		return;
	default:
		pr_err("%s: unknown event type %u (status %d)\n", c->who, ev->type, ev->status);
		sconn_fail(c, -EPROTO);
		return;
	}

	switch (ev->type) {
	case RKDAPL_CONNECTION_EVENT_ESTABLISHED:
		if (ev->status)
			pr_warn("%s: ESTABLISHED with status %d\n", c->who, ev->status);
		if (c->established || c->disconnected) {
			pr_err("%s: unexpected ESTABLISHED event\n", c->who);
			sconn_fail(c, -EPROTO);
		}
		c->established = true;
		break;
	case RKDAPL_CONNECTION_EVENT_DISCONNECTED:
		if (ev->status)
			pr_warn("%s: DISCONNECTED with status %d\n", c->who, ev->status);
		c->disconnected = true;
		break;
	case RKDAPL_CONNECTION_EVENT_BROKEN:
		pr_err("%s: connection BROKEN (status %d)\n", c->who, ev->status);
		c->disconnected = true;
		sconn_fail(c, -ECONNRESET);
		break;
	default:	/* the connect failed */
		if (c->established) {
			pr_err("%s: %s event (status %d) on an established EP\n", c->who,
			       rkdapl_event_msg(ev->type), ev->status);
			sconn_fail(c, -EPROTO);
		}
		c->conn_failed = true;
		c->conn_fail_type = ev->type;
		c->conn_fail_status = ev->status;
		break;
	}
}

/* Waits (at most until deadline) for one event and handles it. */
static inline int sconn_step(struct sconn *c, unsigned long deadline, const char *what)
{
	struct rkdapl_event ev;
	long left = (long)(deadline - jiffies);
	int ret;

	if (left <= 0) {
		pr_err("%s: timed out after %u ms waiting for %s\n", c->who, c->timeout_ms, what);
		return -ETIMEDOUT;
	}
	memset(&ev, 0, sizeof(ev));
	ret = rkdapl_evd_wait(c->evd, max(jiffies_to_msecs(left), 1u), &ev);
	if (ret == -ETIMEDOUT) {
		pr_err("%s: timed out after %u ms waiting for %s\n", c->who, c->timeout_ms, what);
		return ret;
	}
	if (ret) {
		pr_err("%s: rkdapl_evd_wait() failed: %d (waiting for %s)\n", c->who, ret, what);
		return ret;
	}
	sconn_event(c, &ev);
	return 0;
}

/*
 * Handles events until cond holds (0), an event failed (its errno), the connection went away
 * (-ECONNRESET: a flushed DTO, or a DISCONNECTED event while cond does not hold, unless
 * expect_disc) or timeout_ms passed (-ETIMEDOUT). A flushed DTO counts as done but moved
 * nothing, so it ends the wait before cond is looked at.
 */
#define sconn_wait_for(c, cond, what)						\
({										\
	unsigned long __dl = jiffies + msecs_to_jiffies((c)->timeout_ms);	\
	int __ret;								\
	for (;;) {								\
		__ret = (c)->err;						\
		if (__ret) {							\
			pr_err("%s: failed while waiting for %s: %d\n",	\
			       (c)->who, (what), __ret);			\
			break;							\
		}								\
		if ((c)->flushed) {						\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		if (cond)							\
			break;							\
		if ((c)->disconnected && !(c)->expect_disc) {			\
			if (!(c)->quiet_disconnect)				\
				pr_err("%s: disconnected while waiting for %s\n", \
				       (c)->who, (what));			\
			__ret = -ECONNRESET;					\
			break;							\
		}								\
		__ret = sconn_step((c), __dl, (what));				\
		if (__ret)							\
			break;							\
	}									\
	__ret;									\
})

/*
 * Discards whatever is queued on the EVD after an EP was freed: its flushed DTOs and late
 * connection events. Connection requests are rejected.
 */
static inline void sconn_drain(struct sconn *c)
{
	struct rkdapl_event ev;
	u32 flushed = 0;

	while (!rkdapl_evd_dequeue(c->evd, &ev)) {
		if (ev.type == RKDAPL_CONNECTION_REQUEST_EVENT) {
			pr_info("%s: rejecting a late connection request\n", c->who);
			CHECK(c, rkdapl_cr_reject(ev.cr, NULL, 0));
		} else if ((ev.type == RKDAPL_DTO_COMPLETION_EVENT ||
			    ev.type == RKDAPL_RMR_BIND_COMPLETION_EVENT) &&
			   ev.status == RKDAPL_DTO_FLUSHED) {
			flushed++;
		} else if (ev.type != RKDAPL_CONNECTION_EVENT_DISCONNECTED) {
			pr_info("%s: discarding a late %s event (op %s, status %d)\n", c->who,
				rkdapl_event_msg(ev.type), rkdapl_op_msg(ev.op), ev.status);
		}
	}
	if (flushed)
		pr_info("%s: %u DTO(s) were flushed\n", c->who, flushed);
}

/*
 * Checks the parameters every sample has and sets the side from role= ("server" or "client")
 * and the timeout of every wait. Returns 0 or -EINVAL.
 */
static inline int sconn_init(struct sconn *c, const char *role, u32 timeout_ms, u16 port)
{
	if (!timeout_ms || !port) {
		pr_err("timeout_ms and port must not be 0\n");
		return -EINVAL;
	}
	c->timeout_ms = timeout_ms;
	if (!strcmp(role, "server")) {
		c->is_server = true;
		c->who = "server";
	} else if (!strcmp(role, "client")) {
		c->who = "client";
	} else {
		pr_err("role=%s: must be server or client\n", role);
		return -EINVAL;
	}
	return 0;
}

/* Opens the IA of @dev (its attributes in c->attr), a PZ and an EVD of @evd_len events. */
static inline int sconn_open(struct sconn *c, const char *dev, u32 evd_len)
{
	int ret;

	ret = CHECK(c, rkdapl_ia_open(dev, &c->ia));
	if (ret)
		return ret;
	ret = CHECK(c, rkdapl_ia_query(c->ia, &c->attr));
	if (ret)
		return ret;
	ret = CHECK(c, rkdapl_pz_create(c->ia, &c->pz));
	if (ret)
		return ret;
	return CHECK(c, rkdapl_evd_create(c->ia, min(evd_len, c->attr.max_evd_qlen ?: evd_len),
					  &c->evd));
}

/*
 * Allocates @len zeroed bytes with kzalloc() (physically contiguous: one SGE) into *@bufp
 * and registers them with @priv.
 */
static inline int sconn_alloc_lmr(struct sconn *c, void *bufp, size_t len, u32 priv,
				  struct rkdapl_lmr **lmr)
{
	void **buf = bufp;

	*buf = kzalloc(len, GFP_KERNEL);
	if (!*buf) {
		pr_err("%s: out of memory for %zu bytes\n", c->who, len);
		return -ENOMEM;
	}
	return CHECK(c, rkdapl_lmr_create(c->pz, *buf, len, priv, lmr));
}

/*
 * Frees an LMR, then its buffer (kmalloc or vmalloc memory); a buffer whose LMR could not be
 * freed is leaked.
 */
static inline int sconn_free_lmr(struct sconn *c, struct rkdapl_lmr **lmr, void *bufp,
				 const char *name)
{
	void **buf = bufp;
	int ret = 0;

	if (*lmr) {
		ret = rkdapl_lmr_free(*lmr);
		if (ret) {
			pr_err("%s: rkdapl_lmr_free(%s) failed: %d; leaking its buffer\n", c->who,
			       name, ret);
			*buf = NULL;
		}
		*lmr = NULL;
	}
	kvfree(*buf);
	*buf = NULL;
	return ret;
}

/*
 * Server: waits for a connection request (see sconn_cr_event() for the ones rejected), then
 * creates the EP to accept it on. The caller posts its first RECV on that EP before
 * sconn_accept(): over iWARP a SEND that finds no RECV posted ends the connection (there is
 * no RNR retry), and an rdma-core client sends as soon as it is established.
 */
static inline int sconn_wait_cr(struct sconn *c)
{
	int ret;

	c->want_cr = true;
	ret = sconn_wait_for(c, c->cr, "a connection request");
	if (ret)
		return ret;
	c->want_cr = false;
	return CHECK(c, rkdapl_ep_create(c->pz, c->evd, c->evd, &c->ep_attr, &c->ep));
}

/* Server: accepts the connection request of sconn_wait_cr() on its EP. */
static inline int sconn_accept(struct sconn *c)
{
	/* a CR still pending after a failed accept is rejected by sconn_close() */
	return sample_cr_accept(&c->cr, c->ep);
}

/* Server: waits for ESTABLISHED on the accepted EP (its first RECV posted) and says so. */
static inline int sconn_established(struct sconn *c)
{
	int ret = sconn_wait_for(c, c->established, "ESTABLISHED");

	if (!ret)
		pr_info("%s: connection established\n", c->who);
	return ret;
}

/*
 * Client: the server's address for sconn_connect(): @port and the IPv4 or IPv6 address @val,
 * the value of the module parameter @name. Returns 0 or -EINVAL.
 */
static inline int sconn_server_addr(struct sockaddr_storage *ss, const char *name,
				    const char *val, u16 port)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (val && in4_pton(val, -1, (u8 *)&sin->sin_addr.s_addr, -1, NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (val && in6_pton(val, -1, sin6->sin6_addr.s6_addr, -1, NULL)) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	pr_err("client: %s=%s is not an IPv4 or IPv6 address\n", name, val ?: "");
	return -EINVAL;
}

/*
 * Client: connects to @sin with c->pdata, retrying while the server is not there yet
 * (connect_retryable()), for timeout_ms.
 */
static inline int sconn_connect(struct sconn *c, const struct sockaddr_storage *sin)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(c->timeout_ms);
	u32 attempt;
	int ret;

	for (attempt = 1;; attempt++) {
		c->established = false;
		c->disconnected = false;
		c->conn_failed = false;
		c->flushed = false;
		ret = CHECK(c, rkdapl_ep_create(c->pz, c->evd, c->evd, &c->ep_attr, &c->ep));
		if (ret)
			return ret;
		ret = rkdapl_ep_connect(c->ep, (const struct sockaddr *)sin,
					min(c->timeout_ms, 5000u), c->pdata,
					c->pdata ? strlen(c->pdata) : 0);
		if (!ret) {
			ret = sconn_wait_for(c, c->established || c->conn_failed,
					     "the connection's outcome");
			if (ret)
				return ret;
			if (c->established) {
				pr_info("client: connected to %pISpc (attempt %u)\n", sin,
					attempt);
				return 0;
			}
			if (!connect_retryable(c->conn_fail_type)) {
				pr_err("client: connect to %pISpc: %s (status %d)\n",
				       sin, rkdapl_event_msg(c->conn_fail_type),
				       c->conn_fail_status);
				return -ECONNREFUSED;
			}
			if (attempt == 1 || !(attempt % 20))
				pr_info("client: connect attempt %u: %s (status %d), retrying\n",
					attempt, rkdapl_event_msg(c->conn_fail_type),
					c->conn_fail_status);
		} else if (ret == -ENETUNREACH || ret == -EHOSTUNREACH || ret == -ETIMEDOUT ||
			   ret == -ECONNREFUSED) {
			if (attempt == 1 || !(attempt % 20))
				pr_info("client: connect attempt %u: rkdapl_ep_connect() %d, retrying\n",
					attempt, ret);
		} else {
			pr_err("client: rkdapl_ep_connect(%pISpc) failed: %d\n", sin, ret);
			return ret;
		}
		ret = CHECK(c, rkdapl_ep_free(c->ep));
		c->ep = NULL;
		if (ret)
			return ret;
		sconn_drain(c);
		if (time_after(jiffies + msecs_to_jiffies(500), deadline)) {
			pr_err("client: no connection to %pISpc after %u attempts in %u ms\n",
			       sin, attempt, c->timeout_ms);
			return -ETIMEDOUT;
		}
		msleep(500);
	}
}

/* Disconnects the EP and waits for DISCONNECTED: 0, or the error of either. */
static inline int sconn_disconnect(struct sconn *c)
{
	int ret = CHECK(c, rkdapl_ep_disconnect(c->ep));

	return ret ?: sconn_wait_for(c, c->disconnected, "DISCONNECTED");
}

/*
 * Frees the EP and discards what its end left on the EVD: the first step of a sample's
 * teardown, before the RMRs and LMRs the EP used. Returns the error of rkdapl_ep_free().
 */
static inline int sconn_free_ep(struct sconn *c)
{
	int ret = 0;

	if (c->ep) {
		ret = CHECK(c, rkdapl_ep_free(c->ep));
		c->ep = NULL;
	}
	if (c->evd)
		sconn_drain(c);
	return ret;
}

/*
 * The last step of a sample's teardown: rejects a CR never accepted, frees the PSP, the EVD,
 * the PZ and the IA. Returns the first error.
 */
static inline int sconn_close(struct sconn *c)
{
	int ret = 0, e;

#define KEEP(x) do { e = (x); if (e && !ret) ret = e; } while (0)
	if (c->cr) {
		KEEP(CHECK(c, rkdapl_cr_reject(c->cr, NULL, 0)));
		c->cr = NULL;
	}
	if (c->psp) {
		KEEP(CHECK(c, rkdapl_psp_free(c->psp)));
		c->psp = NULL;
	}
	if (c->evd) {
		KEEP(CHECK(c, rkdapl_evd_free(c->evd)));
		c->evd = NULL;
	}
	if (c->pz) {
		KEEP(CHECK(c, rkdapl_pz_free(c->pz)));
		c->pz = NULL;
	}
	if (c->ia) {
		KEEP(CHECK(c, rkdapl_ia_close(c->ia)));
		c->ia = NULL;
	}
#undef KEEP
	return ret;
}

#endif /* _SAMPLE_CONN_H */
