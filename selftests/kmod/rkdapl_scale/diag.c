// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_scale.ko: what the IA's async EVD reports (the protocol: main.c).
 *
 * A QP that fails on its own (IB_EVENT_QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR) flushes what is
 * posted on it, and the test's first failure is then a FLUSHED completion that does not say
 * why; the reason, if the device reported one, is an RKDAPL_ASYNC_EP_BROKEN on the IA's async
 * EVD. So the test keeps one and prints what it holds when it fails, and fails when it holds
 * an EP, CQ or overflow error after a run that otherwise passed. A QP that the device moves
 * to the error state without an async event (rdma_rxe's requester, on a packet it could not
 * transmit: docs/testing.md, "Scale at 1024 EPs") leaves the EVD empty: the line says so.
 */
#define pr_fmt(fmt) "rkdapl_scale: " fmt

#include "scale.h"

int scale_async_setup(void)
{
	int r = rkdapl_evd_create(sc.ia, 64, &sc.async_evd);

	if (!r)
		r = rkdapl_ia_set_async_evd(sc.ia, sc.async_evd);
	return r ? FAIL("async EVD set-up = %d", r) : 0;
}

void scale_async_free(void)
{
	if (!sc.async_evd)
		return;
	rkdapl_ia_set_async_evd(sc.ia, NULL);
	rkdapl_evd_free(sc.async_evd);
	sc.async_evd = NULL;
}

static const char *async_name(u32 type)
{
	switch (type) {
	case RKDAPL_ASYNC_EVD_OVERFLOW:
		return "EVD_OVERFLOW";
	case RKDAPL_ASYNC_IA_CATASTROPHIC:
		return "IA_CATASTROPHIC";
	case RKDAPL_ASYNC_EP_BROKEN:
		return "EP_BROKEN";
	case RKDAPL_ASYNC_CQ_ERROR:
		return "CQ_ERROR";
	case RKDAPL_ASYNC_PORT_ACTIVE ... RKDAPL_ASYNC_SM_CHANGE:
		return "port event";
	default:
		return "other";
	}
}

/*
 * Prints every event on the async EVD; after a failure (@failed) waits up to 2 s for the
 * first (QP events reach it through a workqueue, after the flushed completions). Returns the
 * number of errors among them (EP, CQ, IA, overflow); port events are not errors.
 */
int scale_async_report(bool failed)
{
	const char *who = sc.server ? "server" : "client";
	struct rkdapl_event e;
	struct scale_ep *st;
	int n = 0, bad = 0, r;

	if (!sc.async_evd)
		return 0;
	r = failed ? rkdapl_evd_wait(sc.async_evd, 2000, &e) : rkdapl_evd_dequeue(sc.async_evd, &e);
	for (; !r && n < 64; r = rkdapl_evd_dequeue(sc.async_evd, &e), n++) {
		st = e.ep ? scale_by_ep(e.ep) : NULL;
		if (e.type < RKDAPL_ASYNC_PORT_ACTIVE || e.type > RKDAPL_ASYNC_SM_CHANGE)
			bad++;
		pr_info("%s: async EVD: %s (%u) status %d, EP %d, %llu lost\n", who,
			async_name(e.type), e.type, e.status, st ? (int)st->idx : -1,
			e.type == RKDAPL_ASYNC_EVD_OVERFLOW ? (u64)e.transferred_length : 0ULL);
	}
	if (failed && !n)
		pr_info("%s: async EVD: empty (no QP or CQ error reported by the device)\n", who);
	return bad;
}
