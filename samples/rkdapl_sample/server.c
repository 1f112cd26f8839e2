// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_sample's server: it listens, accepts one client, grants it the payload buffer as
 * RMR segments, and checks what the client wrote (sample.h draws the protocol).
 */
#include "sample.h"

#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

static int server_grant(struct sample *s, u64 n)
{
	u64 seg = min_t(u64, SAMPLE_MAX_SEG, (u64)s->c.attr.max_rmr_pages * PAGE_SIZE);
	u32 window = s->c.ep_attr.max_request_dtos, i;
	int ret;

	s->nseg = DIV_ROUND_UP_ULL(n, seg);
	if (s->nseg > SAMPLE_MAX_SEGS) {
		pr_err("%s: %llu bytes need %u segments of %llu bytes, the message holds %zu\n",
		       s->c.who, n, s->nseg, seg, SAMPLE_MAX_SEGS);
		return -E2BIG;
	}
	s->segs = kcalloc(s->nseg, sizeof(*s->segs), GFP_KERNEL);
	s->rmrs = kcalloc(s->nseg, sizeof(*s->rmrs), GFP_KERNEL);
	if (!s->segs || !s->rmrs)
		return -ENOMEM;
	ret = sample_new_batch(s, s->nseg);
	if (ret)
		return ret;
	for (i = 0; i < s->nseg; i++) {
		ret = CHECK(&s->c, rkdapl_rmr_create(s->c.pz, &s->rmrs[i]));
		if (ret)
			return ret;
		s->nrmr++;
	}
	if (lmr_per_seg) {
		s->seg_lmrs = kcalloc(s->nseg, sizeof(*s->seg_lmrs), GFP_KERNEL);
		if (!s->seg_lmrs)
			return -ENOMEM;
		for (i = 0; i < s->nseg; i++) {
			u64 off = (u64)i * seg;

			ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->payload + off,
							     min(seg, n - off),
							     RKDAPL_MEM_LOCAL_WRITE |
							     RKDAPL_MEM_REMOTE_READ |
							     RKDAPL_MEM_REMOTE_WRITE,
							     &s->seg_lmrs[i]));
			if (ret)
				return ret;
			s->nseg_lmr++;
		}
	}
	for (i = 0; i < s->nseg; i++) {
		u64 off = (u64)i * seg, len = min(seg, n - off);

		ret = sample_sq_room(s, window, "RMR bind completions");
		if (ret)
			return ret;
		for (;;) {
			ret = rkdapl_rmr_bind(s->rmrs[i],
					      lmr_per_seg ? s->seg_lmrs[i] : s->payload_lmr,
					      lmr_per_seg ? 0 : off, len,
					      RKDAPL_MEM_REMOTE_READ | RKDAPL_MEM_REMOTE_WRITE,
					      s->c.ep, COOKIE(K_BIND, i), &s->segs[i].rkey,
					      &s->segs[i].address);
			if (ret != -ENOSPC || !s->sq_inflight)
				break;
			/* send queue full: wait for one completion, then retry */
			ret = sample_sq_room(s, s->sq_inflight, "RMR bind completions");
			if (ret)
				return ret;
		}
		if (ret) {
			pr_err("%s: rkdapl_rmr_bind(segment %u: %llu bytes at offset %llu) failed: %d\n",
			       s->c.who, i, len, off, ret);
			return ret;
		}
		s->sq_inflight++;
		s->segs[i].len = len;
	}
	ret = sconn_wait_for(&s->c, s->binds_done == s->nseg, "RMR bind completions");
	if (ret)
		return ret;
	pr_info("%s: granted %llu bytes as %u RMR segment(s) of up to %llu bytes%s\n", s->c.who,
		n, s->nseg, seg, lmr_per_seg ? ", one LMR each" : "");
	return 0;
}

int server_run(struct sample *s)
{
	u64 n, csum, bad;
	bool ok;
	int ret;

	ret = sample_open(s);
	if (ret)
		return ret;
	s->payload = vzalloc(size);
	if (!s->payload) {
		pr_err("%s: vzalloc(%lu) failed\n", s->c.who, size);
		return -ENOMEM;
	}
	ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->payload, size,
					     RKDAPL_MEM_LOCAL_WRITE | RKDAPL_MEM_REMOTE_READ |
					     RKDAPL_MEM_REMOTE_WRITE, &s->payload_lmr));
	if (ret)
		return ret;
	ret = CHECK(&s->c, rkdapl_psp_create(s->c.ia, port, 4, s->c.evd, &s->c.psp));
	if (ret)
		return ret;
	pr_info("server: listening on %s port %u (payload %lu bytes)\n", dev, port, size);

	ret = sconn_wait_cr(&s->c);
	if (ret)
		return ret;
	ret = sample_post_recv(s);
	if (ret)
		return ret;
	ret = sconn_accept(&s->c);
	if (ret)
		return ret;
	ret = sconn_established(&s->c);
	if (ret)
		return ret;

	ret = sample_recv(s, MSG_REQUEST, sizeof(struct sample_msg), "the client's request");
	if (ret)
		return ret;
	n = s->rx->size;
	if (!n || n > size) {
		pr_err("server: the client asks for %llu bytes, the payload buffer has %lu\n", n,
		       size);
		return -EPROTO;
	}
	ret = server_grant(s, n);
	if (ret)
		return ret;

	ret = sample_start_msg(s, MSG_ADVERT);
	if (ret)
		return ret;
	s->tx->nseg = s->nseg;
	s->tx->size = n;
	memcpy(s->tx->seg, s->segs, s->nseg * sizeof(*s->segs));
	ret = sample_send(s, struct_size(s->tx, seg, s->nseg), "the advertisement's SEND");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_DONE, sizeof(struct sample_msg), "the client's done message");
	if (ret)
		return ret;

	ret = CHECK(&s->c, rkdapl_lmr_sync_rdma_write(s->payload_lmr, 0, n));
	if (ret)
		return ret;
	bad = sample_pattern_check(s->payload, n);
	csum = sample_checksum(s->payload, n);
	ok = bad == n && csum == s->rx->checksum && s->rx->size == n && s->rx->ok;
	if (!(s->rx_flags & RKDAPL_EVENT_INVALIDATED) || s->rx_inv_rkey != s->segs[0].rkey) {
		pr_err("server: the done message did not end grant 0 (flags %#x, rkey %#x, grant %#x)\n",
		       s->rx_flags, s->rx_inv_rkey, s->segs[0].rkey);
		ok = false;
	} else {
		pr_info("server: the client's done message ended the grant of segment 0 (rkey %#x)\n",
			s->rx_inv_rkey);
	}
	if (bad != n)
		pr_err("server: payload differs from the pattern at offset %llu\n", bad);
	if (csum != s->rx->checksum || s->rx->size != n)
		pr_err("server: checksum 0x%016llx of %llu bytes, client says 0x%016llx of %llu\n",
		       csum, n, s->rx->checksum, s->rx->size);
	if (!s->rx->ok)
		pr_err("server: the client reports its read-back check failed\n");

	memset(s->tx, 0, SAMPLE_MSG_BUF);
	s->tx->magic = MSG_VERDICT;
	s->tx->ok = ok;
	s->tx->size = n;
	s->tx->checksum = csum;
	/* the client disconnects once it has the verdict: the two events may come in any order */
	s->c.expect_disc = true;
	ret = sample_post_send(s, sizeof(struct sample_msg));
	if (ret)
		return ret;
	ret = sconn_wait_for(&s->c, s->sends_done == s->sends_posted && s->c.disconnected,
			     "the verdict's SEND and the client's disconnect");
	if (ret)
		return ret;
	if (!ok) {
		pr_err("server: verification of %llu bytes FAILED\n", n);
		return -EIO;
	}
	pr_info("server: verified %llu bytes written by the client, checksum 0x%016llx, ok\n", n,
		csum);
	return 0;
}
