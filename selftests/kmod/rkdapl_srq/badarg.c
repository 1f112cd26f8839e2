// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_srq: role=badarg (every SRQ call with bad arguments) and role=removal (an SRQ with
 * RECVs posted and an EP on it when the device goes away). main.c describes both.
 */
#include "srq.h"

/* ---- badarg --------------------------------------------------------------------------------- */

void badarg_run(void)
{
	struct rkdapl_ia *ia = NULL, *ia2 = NULL;
	struct rkdapl_pz *pz = NULL, *pz2 = NULL;
	struct rkdapl_evd *evd = NULL, *evd2 = NULL;
	struct rkdapl_lmr *lmr = NULL, *ro = NULL, *lmr2 = NULL;
	struct rkdapl_srq *srq = NULL, *srq2 = NULL, *x = NULL;
	struct rkdapl_ep *ep = NULL;
	struct rkdapl_srq_attr a = { .max_recv_dtos = 4, .max_recv_iov = 1 }, q;
	struct rkdapl_lmr_triplet t[2];
	struct rkdapl_event ev;
	u8 *buf = kzalloc(4 * SLOT, GFP_KERNEL);
	u8 *buf2 = kzalloc(SLOT, GFP_KERNEL);
	int r, i, n;

	r = buf && buf2 ? 0 : -ENOMEM;
	r = r ?: rkdapl_ia_open(dev, &ia);
	r = r ?: rkdapl_ia_open(dev, &ia2);
	r = r ?: rkdapl_pz_create(ia, &pz);
	r = r ?: rkdapl_pz_create(ia, &pz2);
	r = r ?: rkdapl_evd_create(ia, 64, &evd);
	r = r ?: rkdapl_evd_create(ia2, 64, &evd2);
	r = r ?: rkdapl_lmr_create(pz, buf, 4 * SLOT, RKDAPL_MEM_LOCAL_WRITE, &lmr);
	r = r ?: rkdapl_lmr_create(pz, buf, SLOT, 0, &ro);
	r = r ?: rkdapl_lmr_create(pz2, buf2, SLOT, RKDAPL_MEM_LOCAL_WRITE, &lmr2);
	if (!expect(r, 0, "badarg: IAs, PZs, EVDs, LMRs"))
		goto out;

	expect(rkdapl_srq_create(NULL, evd, &a, &x), -EINVAL, "badarg: srq_create NULL pz");
	expect(rkdapl_srq_create((void *)evd, evd, &a, &x), -EINVAL,
	       "badarg: srq_create with an EVD handle as pz");
	expect(rkdapl_srq_create(pz, NULL, &a, &x), -EINVAL, "badarg: srq_create NULL evd");
	expect(rkdapl_srq_create(pz, evd2, &a, &x), -EINVAL,
	       "badarg: srq_create with an EVD of another IA");
	expect(rkdapl_srq_create(pz, evd, NULL, &x), -EINVAL, "badarg: srq_create NULL attr");
	expect(rkdapl_srq_create(pz, evd, &a, NULL), -EINVAL, "badarg: srq_create NULL out");
	q = a;
	q.max_recv_dtos = 0;
	expect(rkdapl_srq_create(pz, evd, &q, &x), -EINVAL, "badarg: srq_create 0 RECVs");
	q.max_recv_dtos = 4097;
	expect(rkdapl_srq_create(pz, evd, &q, &x), -EINVAL, "badarg: srq_create 4097 RECVs");
	q.max_recv_dtos = 4;
	q.low_watermark = 4;
	expect(rkdapl_srq_create(pz, evd, &q, &x), -EINVAL,
	       "badarg: srq_create watermark not below the size");
	q.low_watermark = 0;
	q.max_recv_iov = 100000;
	expect(rkdapl_srq_create(pz, evd, &q, &x), -EINVAL, "badarg: srq_create too many segments");
	tap(!x, "badarg: failed creates return no SRQ", "%p", x);

	r = rkdapl_srq_create(pz, evd, &a, &srq);
	if (!expect(r, 0, "badarg: srq_create (4 RECVs, 1 segment)"))
		goto out;
	r = rkdapl_srq_create(pz2, evd, &a, &srq2);
	expect(r, 0, "badarg: srq_create in a second PZ");

	t[0] = (struct rkdapl_lmr_triplet){ lmr, 0, SLOT };
	t[1] = (struct rkdapl_lmr_triplet){ lmr, SLOT, SLOT };
	expect(rkdapl_srq_post_recv(NULL, t, 1, 1), -EINVAL, "badarg: srq_post_recv NULL srq");
	expect(rkdapl_srq_post_recv((void *)pz, t, 1, 1), -EINVAL,
	       "badarg: srq_post_recv with a PZ handle");
	expect(rkdapl_srq_post_recv(srq, NULL, 1, 1), -EINVAL, "badarg: srq_post_recv NULL iov");
	expect(rkdapl_srq_post_recv(srq, t, 2, 1), -EMSGSIZE,
	       "badarg: srq_post_recv more segments than the SRQ takes");
	t[1] = (struct rkdapl_lmr_triplet){ ro, 0, SLOT };
	expect(rkdapl_srq_post_recv(srq, &t[1], 1, 1), -EACCES,
	       "badarg: srq_post_recv into an LMR without local write");
	t[1] = (struct rkdapl_lmr_triplet){ lmr, 3 * SLOT, 2 * SLOT };
	expect(rkdapl_srq_post_recv(srq, &t[1], 1, 1), -ERANGE,
	       "badarg: srq_post_recv outside the LMR");
	t[1] = (struct rkdapl_lmr_triplet){ lmr2, 0, SLOT };
	expect(rkdapl_srq_post_recv(srq, &t[1], 1, 1), -EXDEV,
	       "badarg: srq_post_recv with an LMR of another PZ");
	for (i = 0, r = 0; i < 4 && !r; i++) {
		t[1] = (struct rkdapl_lmr_triplet){ lmr, (u64)i * SLOT, SLOT };
		r = rkdapl_srq_post_recv(srq, &t[1], 1, 100 + i);
	}
	expect(r, 0, "badarg: srq_post_recv fills the SRQ");
	expect(rkdapl_srq_post_recv(srq, t, 1, 9), -ENOSPC, "badarg: srq_post_recv on a full SRQ");
	expect(rkdapl_lmr_free(lmr), -EBUSY, "badarg: lmr_free of an LMR with SRQ RECVs posted");

	expect(rkdapl_srq_set_lw(NULL, 1), -EINVAL, "badarg: srq_set_lw NULL srq");
	expect(rkdapl_srq_set_lw(srq, 4), -EINVAL, "badarg: srq_set_lw not below the size");
	expect(rkdapl_srq_set_lw(srq, 2), 0, "badarg: srq_set_lw(2)");
	expect(rkdapl_srq_query(NULL, &q), -EINVAL, "badarg: srq_query NULL srq");
	expect(rkdapl_srq_query(srq, NULL), -EINVAL, "badarg: srq_query NULL attr");
	r = rkdapl_srq_query(srq, &q);
	tap(!r && q.outstanding == 4 && q.low_watermark == 2 && q.max_recv_dtos == 4,
	    "badarg: srq_query", "r %d out %u lw %u size %u", r, q.outstanding, q.low_watermark,
	    q.max_recv_dtos);

	expect(rkdapl_ep_create_with_srq(pz, evd, evd, NULL, NULL, &ep), -EINVAL,
	       "badarg: ep_create_with_srq NULL srq");
	expect(rkdapl_ep_create_with_srq(pz, evd, evd, (void *)pz, NULL, &ep), -EINVAL,
	       "badarg: ep_create_with_srq with a PZ handle as srq");
	expect(rkdapl_ep_create_with_srq(pz, evd, evd, srq2, NULL, &ep), -EINVAL,
	       "badarg: ep_create_with_srq with an SRQ of another PZ");
	expect(rkdapl_ep_create_with_srq(pz, evd, evd, srq, NULL, NULL), -EINVAL,
	       "badarg: ep_create_with_srq NULL out");
	r = rkdapl_ep_create_with_srq(pz, evd, evd, srq, NULL, &ep);
	expect(r, 0, "badarg: ep_create_with_srq");
	t[1] = (struct rkdapl_lmr_triplet){ lmr, 0, SLOT };
	if (ep)
		expect(rkdapl_post_recv(ep, &t[1], 1, 5, 0), -EINVAL,
		       "badarg: post_recv on an EP of an SRQ");
	expect(rkdapl_srq_free(srq), -EBUSY, "badarg: srq_free with an EP on it");
	r = rkdapl_srq_query(srq, &q);
	tap(!r && q.outstanding == 4, "badarg: the refused free left the SRQ whole", "r %d out %u",
	    r, q.outstanding);
	if (ep)
		expect(rkdapl_ep_free(ep), 0, "badarg: ep_free of the SRQ's EP");
	while (!rkdapl_evd_dequeue(evd, &ev))
		;
	expect(rkdapl_srq_free(srq), 0, "badarg: srq_free with 4 RECVs posted");
	for (n = 0, r = 0; !rkdapl_evd_dequeue(evd, &ev);) {
		if (ev.type == RKDAPL_DTO_COMPLETION_EVENT && ev.op == RKDAPL_DTO_RECV &&
		    ev.status == RKDAPL_DTO_FLUSHED && ev.cookie >= 100 && ev.cookie < 104 &&
		    !(r & (1 << (ev.cookie - 100))))
			r |= 1 << (ev.cookie - 100);
		else
			n++;
	}
	tap(r == 0xf && !n, "badarg: each RECV reported FLUSHED once at srq_free",
	    "cookies seen %#x, %d other events", r, n);
	expect(rkdapl_srq_free(srq), -EINVAL, "badarg: srq_free twice");
	expect(rkdapl_srq_post_recv(srq, t, 1, 1), -EINVAL, "badarg: srq_post_recv after free");
	expect(rkdapl_lmr_free(lmr), 0, "badarg: lmr_free once the RECVs were reported");
	lmr = NULL;
	if (srq2)
		expect(rkdapl_srq_free(srq2), 0, "badarg: srq_free of an empty SRQ");
out:
	if (lmr)
		rkdapl_lmr_free(lmr);
	if (ro)
		rkdapl_lmr_free(ro);
	if (lmr2)
		rkdapl_lmr_free(lmr2);
	if (evd)
		rkdapl_evd_free(evd);
	if (evd2)
		rkdapl_evd_free(evd2);
	if (pz)
		rkdapl_pz_free(pz);
	if (pz2)
		rkdapl_pz_free(pz2);
	if (ia)
		rkdapl_ia_close(ia);
	if (ia2)
		rkdapl_ia_close(ia2);
	kfree(buf);
	kfree(buf2);
}

/* ---- removal -------------------------------------------------------------------------------- */

static struct {
	struct rkdapl_ia *ia;
	struct rkdapl_pz *pz;
	struct rkdapl_evd *evd, *async;
	struct rkdapl_lmr *lmr;
	struct rkdapl_srq *srq;
	struct rkdapl_ep *ep;
	u8 *buf;
} rm;

int removal_start(void)
{
	struct rkdapl_srq_attr a = { .max_recv_dtos = 16, .max_recv_iov = 1 };
	int r, i;

	rm.buf = kzalloc(16 * SLOT, GFP_KERNEL);
	r = rm.buf ? 0 : -ENOMEM;
	r = r ?: rkdapl_ia_open(dev, &rm.ia);
	r = r ?: rkdapl_pz_create(rm.ia, &rm.pz);
	r = r ?: rkdapl_evd_create(rm.ia, 64, &rm.evd);
	r = r ?: rkdapl_evd_create(rm.ia, 64, &rm.async);
	r = r ?: rkdapl_ia_set_async_evd(rm.ia, rm.async);
	r = r ?: rkdapl_lmr_create(rm.pz, rm.buf, 16 * SLOT, RKDAPL_MEM_LOCAL_WRITE, &rm.lmr);
	r = r ?: rkdapl_srq_create(rm.pz, rm.evd, &a, &rm.srq);
	for (i = 0; i < 16 && !r; i++) {
		struct rkdapl_lmr_triplet t = { rm.lmr, (u64)i * SLOT, SLOT };

		r = rkdapl_srq_post_recv(rm.srq, &t, 1, i);
	}
	r = r ?: rkdapl_ep_create_with_srq(rm.pz, rm.evd, rm.evd, rm.srq, NULL, &rm.ep);
	pr_info("# removal: SRQ with 16 RECVs and an EP on it: %d\n", r);
	return r;
}

void removal_finish(void)
{
	struct rkdapl_event ev;
	u32 seen = 0, other = 0, cat = 0;

	while (!rkdapl_evd_dequeue(rm.async, &ev))
		cat += ev.type == RKDAPL_ASYNC_IA_CATASTROPHIC;
	tap(cat == 1, "removal: RKDAPL_ASYNC_IA_CATASTROPHIC on the async EVD", "%u", cat);
	while (!rkdapl_evd_dequeue(rm.evd, &ev)) {
		if (ev.type == RKDAPL_DTO_COMPLETION_EVENT && ev.op == RKDAPL_DTO_RECV &&
		    ev.status == RKDAPL_DTO_FLUSHED && ev.cookie < 16 && !(seen & (1 << ev.cookie)))
			seen |= 1 << ev.cookie;
		else if (ev.type == RKDAPL_DTO_COMPLETION_EVENT)
			other++;
	}
	tap(seen == 0xffff && !other, "removal: each SRQ RECV reported FLUSHED once",
	    "seen %#x, %u other DTO events", seen, other);
	expect(rkdapl_srq_post_recv(rm.srq, NULL, 0, 0), -ENODEV,
	       "removal: srq_post_recv after removal (-ENODEV)");
	expect(rkdapl_ep_free(rm.ep), 0, "removal: ep_free after removal");
	expect(rkdapl_srq_free(rm.srq), 0, "removal: srq_free after removal");
	expect(rkdapl_lmr_free(rm.lmr), 0, "removal: lmr_free after removal");
	rkdapl_evd_free(rm.evd);
	rkdapl_evd_free(rm.async);
	rkdapl_pz_free(rm.pz);
	rkdapl_ia_close(rm.ia);
	kfree(rm.buf);
	tap_finish();
}

