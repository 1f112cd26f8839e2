// SPDX-License-Identifier: GPL-2.0
/* rkdapl_scale.ko: the server's event handlers (the protocol: main.c). */
#define pr_fmt(fmt) "rkdapl_scale: " fmt

#include "scale.h"

int server_request(const struct scale_ev *v)
{
	struct scale_ep *st;
	u32 i = v->pd[1];
	int r;

	if (v->pdlen < sizeof(v->pd) || v->pd[0] != SCALE_MAGIC || i >= scale_eps || sc.st[i].ep)
		return FAIL("connection request with bad private data (%u bytes, index %u)",
			    v->pdlen, i);
	st = &sc.st[i];
	if (!sc.t_first)
		sc.t_first = ktime_get();
	r = scale_new_ep(st);
	if (r)
		return r;
	r = rkdapl_cr_accept(v->cr, st->ep, NULL, 0);
	if (r)
		return FAIL("EP %u: cr_accept = %d", i, r);
	return scale_post_slot_recv(st, 0, K_NOTIFY);
}

int server_conn_event(const struct scale_ev *v)
{
	struct scale_ep *st = scale_by_ep(v->ep);
	u64 addr;
	u32 rkey;
	int r;

	if (!st)
		return FAIL("connection event %u for an unknown EP", v->type);
	if (v->type == RKDAPL_CONNECTION_EVENT_DISCONNECTED && !(st->flags & S_DISC)) {
		if (!(st->flags & S_NOTIFY))
			return FAIL("EP %u: disconnected before its data came", st->idx);
		st->flags |= S_DISC;
		if (++sc.ndisc == 1)
			sc.t_disc0 = ktime_get();
		if (sc.ndisc == scale_eps)
			sc.t_end = ktime_get();
		return 0;
	}
	if (v->type != RKDAPL_CONNECTION_EVENT_ESTABLISHED || (st->flags & S_CONN))
		return FAIL("EP %u: connection event %u status %d", st->idx, v->type, v->status);
	st->flags |= S_CONN;
	if (++sc.nconn == scale_eps) {
		sc.t_conn = ktime_get();
		pr_info("server: all %u EPs connected\n", scale_eps);
	}
	r = rkdapl_rmr_create(sc.pz[st->idx % scale_pzs], &st->rmr);
	if (r)
		return FAIL("EP %u: rmr_create = %d", st->idx, r);
	r = rkdapl_rmr_bind(st->rmr, st->lmr, 0, scale_bytes,
			    RKDAPL_MEM_REMOTE_WRITE | RKDAPL_MEM_REMOTE_READ, st->ep,
			    COOKIE(st->idx, K_BIND), &rkey, &addr);
	if (r)
		return FAIL("EP %u: rmr_bind = %d", st->idx, r);
	*scale_slot(st->idx, 2) = (struct scale_msg){ SCALE_MAGIC, st->idx, addr, rkey,
						      scale_bytes, 0 };
	return 0;
}

int server_dto_event(const struct scale_ev *v, struct scale_ep *st, u32 kind)
{
	struct scale_msg *m;
	bool ok = true;
	u32 k;

	switch (kind) {
	case K_BIND:
		return scale_post_slot_send(st, 2, K_ADV);
	case K_ADV:
		st->flags |= S_ADV;
		break;
	case K_NOTIFY:
		m = scale_slot(st->idx, 0);
		if (!scale_msg_ok(m, st->idx) || (st->flags & S_NOTIFY))
			return FAIL("EP %u: bad notification", st->idx);
		st->flags |= S_NOTIFY;
		if (!sc.t_data0)
			sc.t_data0 = ktime_get();
		rkdapl_lmr_sync_rdma_write(st->lmr, 0, scale_bytes);
		for (k = 0; k < scale_bytes / 4 && ok; k++)
			ok = st->buf[k] == scale_pattern(st->idx, k);
		if (!ok || m->csum != scale_csum(st->buf, scale_bytes / 4)) {
			FAIL("EP %u: word %u of its data differs from the pattern", st->idx, k - 1);
			ok = false;
		}
		if (ok && ++sc.nverified == scale_eps) {
			sc.t_data1 = ktime_get();
			scale_read_mem(&sc.m1);
		}
		*scale_slot(st->idx, 3) = (struct scale_msg){ SCALE_MAGIC, st->idx, 0, ok,
							      scale_bytes, 0 };
		return scale_post_slot_send(st, 3, K_ACK) ?: (ok ? 0 : -EIO);
	case K_ACK:
		st->flags |= S_ACK;
		break;
	default:
		return FAIL("EP %u: completion of kind %u", st->idx, kind);
	}
	if ((st->flags & (S_ADV | S_ACK)) == (S_ADV | S_ACK) && !(st->flags & S_DONE))
		return scale_ep_done(st);
	return 0;
}
