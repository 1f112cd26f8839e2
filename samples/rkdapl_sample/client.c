// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_sample's client: it connects, asks for the payload's size, RDMA WRITEs the pattern
 * into the server's segments and READs it back, both timed, and ends the grant of segment 0
 * with its done message (sample.h draws the protocol).
 */
#include "sample.h"

#include <linux/in.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

/* RDMA WRITEs (or READs) all of lmr into the advertised segments; returns the time taken. */
static int client_rdma(struct sample *s, bool write, struct rkdapl_lmr *lmr, u64 total,
		       u64 *ns)
{
	const char *what = write ? "RDMA WRITE completions" : "RDMA READ completions";
	u64 chunk = min_t(u64, SAMPLE_MAX_DTO, 8ULL * s->c.attr.max_iov * PAGE_SIZE);
	u32 window = inflight ? min(inflight, s->c.ep_attr.max_request_dtos) :
				s->c.ep_attr.max_request_dtos;
	u32 nchunks = 0, idx = 0, i;
	u64 loff = 0, off, len;
	ktime_t t0;
	int ret;

	for (i = 0; i < s->nseg; i++)
		nchunks += DIV_ROUND_UP_ULL(s->segs[i].len, chunk);
	ret = sample_new_batch(s, nchunks);
	if (ret)
		return ret;
	if (write)
		pr_info("client: %u DTOs of up to %llu bytes, at most %u in flight\n", nchunks,
			chunk, window);

	t0 = ktime_get();
	for (i = 0; i < s->nseg; i++) {
		for (off = 0; off < s->segs[i].len; off += len, idx++) {
			struct rkdapl_lmr_triplet iov;
			struct rkdapl_rmr_triplet rem;

			len = min_t(u64, chunk, s->segs[i].len - off);
			iov = (struct rkdapl_lmr_triplet){ .lmr = lmr, .offset = loff + off,
							   .length = len };
			rem = (struct rkdapl_rmr_triplet){ .address = s->segs[i].address + off,
							   .rkey = s->segs[i].rkey,
							   .length = len };
			ret = sample_sq_room(s, window, what);
			if (ret)
				return ret;
			for (;;) {
				if (write)
					ret = rkdapl_post_rdma_write(s->c.ep, &iov, 1, &rem,
								     COOKIE(K_WRITE, idx), 0);
				else
					ret = rkdapl_post_rdma_read(s->c.ep, &iov, 1, &rem,
								    COOKIE(K_READ, idx), 0);
				if (ret != -ENOSPC || !s->sq_inflight)
					break;
				ret = sample_sq_room(s, s->sq_inflight, what);
				if (ret)
					return ret;
			}
			if (ret) {
				pr_err("client: rkdapl_post_rdma_%s(%llu bytes at offset %llu to segment %u) failed: %d\n",
				       write ? "write" : "read", len, loff + off, i, ret);
				return ret;
			}
			s->sq_inflight++;
		}
		loff += s->segs[i].len;
	}
	ret = sconn_wait_for(&s->c, s->rdma_done == nchunks, what);
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	if (ret)
		return ret;
	if (s->rdma_bytes != total) {
		pr_err("client: %s moved %llu bytes, expected %llu\n", what, s->rdma_bytes, total);
		return -EIO;
	}
	return 0;
}

static void client_report(const char *op, u64 bytes, u64 ns)
{
	u64 us = max_t(u64, div_u64(ns, 1000), 1);
	u64 ms10 = div_u64(ns, 100000);		/* tenths of ms */
	u64 mbs100 = div64_u64(bytes * 100, us);	/* hundredths of MB/s (bytes/us = MB/s) */

	pr_info("client: %s %llu bytes in %llu.%llu ms (%llu.%02llu MB/s)\n", op, bytes,
		div_u64(ms10, 10), ms10 % 10, div_u64(mbs100, 100), mbs100 % 100);
}

int client_run(struct sample *s)
{
	u64 csum, wns = 0, rns = 0, total = 0;
	struct sockaddr_storage sin;
	bool ok;
	u32 i;
	int ret;

	ret = sconn_server_addr(&sin, "server", server, port);
	ret = ret ?: sample_open(s);
	if (ret)
		return ret;
	s->payload = vmalloc(size);
	s->readback = vzalloc(size);
	if (!s->payload || !s->readback) {
		pr_err("client: out of memory for 2 x %lu bytes\n", size);
		return -ENOMEM;
	}
	sample_pattern_fill(s->payload, size);
	csum = sample_checksum(s->payload, size);
	ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->payload, size, RKDAPL_MEM_LOCAL_WRITE,
					     &s->payload_lmr));
	if (ret)
		return ret;
	ret = CHECK(&s->c, rkdapl_lmr_create(s->c.pz, s->readback, size, RKDAPL_MEM_LOCAL_WRITE,
					     &s->readback_lmr));
	if (ret)
		return ret;
	ret = CHECK(&s->c, rkdapl_lmr_sync_rdma_read(s->payload_lmr, 0, size));
	if (ret)
		return ret;

	ret = sconn_connect(&s->c, &sin);
	if (ret)
		return ret;
	ret = sample_start_msg(s, MSG_REQUEST);
	if (ret)
		return ret;
	s->tx->size = size;
	ret = sample_send(s, sizeof(struct sample_msg), "the request's SEND");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_ADVERT, sizeof(struct sample_msg), "the advertisement");
	if (ret)
		return ret;
	s->nseg = s->rx->nseg;
	if (!s->nseg || s->nseg > SAMPLE_MAX_SEGS ||
	    s->rx_len < struct_size(s->rx, seg, s->nseg) || s->rx->size != size) {
		pr_err("client: bad advertisement: %u segments, %llu bytes, in %llu bytes\n",
		       s->nseg, s->rx->size, s->rx_len);
		return -EPROTO;
	}
	s->segs = kmemdup(s->rx->seg, s->nseg * sizeof(*s->segs), GFP_KERNEL);
	if (!s->segs)
		return -ENOMEM;
	for (i = 0; i < s->nseg; i++) {
		if (!s->segs[i].len) {
			pr_err("client: advertised segment %u is empty\n", i);
			return -EPROTO;
		}
		total += s->segs[i].len;
	}
	if (total != size) {
		pr_err("client: advertised segments cover %llu bytes, not %lu\n", total, size);
		return -EPROTO;
	}
	pr_info("client: server granted %u segment(s)\n", s->nseg);

	ret = client_rdma(s, true, s->payload_lmr, size, &wns);
	if (ret)
		return ret;
	client_report("RDMA WRITE", size, wns);
	ret = client_rdma(s, false, s->readback_lmr, size, &rns);
	if (ret)
		return ret;
	client_report("RDMA READ", size, rns);
	ret = CHECK(&s->c, rkdapl_lmr_sync_rdma_write(s->readback_lmr, 0, size));
	if (ret)
		return ret;
	ok = !memcmp(s->readback, s->payload, size) && sample_checksum(s->readback, size) == csum;
	if (!ok)
		pr_err("client: the data read back differs from what was written\n");

	ret = sample_start_msg(s, MSG_DONE);
	if (ret)
		return ret;
	s->tx->ok = ok;
	s->tx->size = size;
	s->tx->checksum = csum;
	/* the done message also ends the grant of segment 0: the server need not unbind it */
	ret = sample_post_send_inv(s, sizeof(struct sample_msg), s->segs[0].rkey);
	ret = ret ?: sconn_wait_for(&s->c, s->sends_done == s->sends_posted,
				    "the done message's SEND with invalidate");
	if (ret)
		return ret;
	ret = sample_recv(s, MSG_VERDICT, sizeof(struct sample_msg), "the server's verdict");
	if (ret)
		return ret;
	if (!s->rx->ok) {
		pr_err("client: the server's verification FAILED (its checksum 0x%016llx)\n",
		       s->rx->checksum);
		ok = false;
	}
	ret = sconn_disconnect(&s->c);
	if (ret)
		return ret;
	if (!ok)
		return -EIO;
	pr_info("client: verified %lu bytes (checksum 0x%016llx, server ok)\n", size, csum);
	return 0;
}
