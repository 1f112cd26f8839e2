/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What samples/rkdapl_perf/ (over rkdapl) and samples/raw_perf/ (over ib_core + rdma_cm)
 * share, so that the two tools do the same work and print the same line. This header, which
 * every file of both tools includes, has the commands' arguments, the wire messages, the
 * signalling rules, waiting, a session's counts and the client's per-DTO times (all static
 * inline). samples/perf_ctl.h, which each tool's run.c includes once, has the control-file
 * parser and the debugfs files, the statistics and the result line, and the crc32 + memcpy
 * "ceiling" measurement; each tool defines perf_ctl_write(), the ctl file's write.
 *
 * Control file: /sys/kernel/debug/<tool>/ctl (write-only). One command per write, run in
 * the writing task; the write returns the byte count when the command succeeded and a
 * negative errno otherwise. Read /sys/kernel/debug/<tool>/result for the last result line.
 *
 *   server [port=7700] [dev=rxe0] [size=4194304] [sessions=0] [timeout_ms=60000]
 *	Listen on port and serve clients one after the other: sessions of them (0: until a
 *	client sends op=stop or the writer gets a signal). size is the buffer the server
 *	grants (RDMA) or receives into (SEND); clients' sizes must not exceed it.
 *   client addr=10.77.0.1 [port=7700] [dev=rxe0] [op=write|read|send] [kind=bw|lat]
 *	  [size=65536] [iters=200] [txdepth=16] [signal=1] [batch=1] [mode=poll|event]
 *	  [cq=default|direct|softirq|wq|unbound] [inline=0] [buf=kmalloc|sparse]
 *	  [timeout_ms=60000]
 *	One session: connect, learn the server's buffer, run the test, disconnect, and print
 *	   "<tool>: result tool=<t> op=<op> kind=<k> size=<n> iters=<n> txdepth=<n> signal=<n>
 *	    batch=<n> inline=<n> buf=<b> mode=<m> cq=<c> MBps=<x> Mmsgps=<x> lat_med_us=<x> lat_p99_us=<x>
 *	    post_ns=<x> empty_ns=<n> dto_ns=<n>"
 *	bw keeps txdepth DTOs in flight; lat has one in flight (ping-pong with the responder:
 *	post, wait for the completion). lat_* are the per-DTO post-to-completion times (for bw
 *	they include the queueing behind the txdepth - 1 DTOs ahead). MBps is 10^6 bytes/s of
 *	payload over the time from the first post to the last completion; Mmsgps is DTOs/us.
 *	signal=N (bw only, 1..txdepth): selective signalling, only every Nth DTO (and the last)
 *	is signalled: rkdapl_perf posts the others with RKDAPL_COMPLETION_SUPPRESS, raw_perf
 *	without IB_SEND_SIGNALED; a completion then accounts for every DTO before it, and the
 *	latency figures are those of the signalled DTOs.
 *	post_ns is the median time spent inside the post call (rkdapl_post_*() or
 *	ib_post_send()), made with interrupts off: the CPU cost of posting one DTO, including
 *	rxe's own enqueueing, unblurred by the network's round trip and by rxe's receive path.
 *	The median, because the guest's clock also runs while the host deschedules its vCPU.
 *	batch=N (bw only, 1..min(txdepth, 32)): post up to N DTOs in one call (rkdapl_post_chain(), or
 *	one ib_post_send() of a list of N work requests); post_ns is then the call's time
 *	divided by the DTOs it posted.
 *	cq= (raw_perf only) chooses the client CQ's polling context: direct (IB_POLL_DIRECT,
 *	drained by the waiting task; mode=poll's default), softirq (IB_POLL_SOFTIRQ; mode=event's
 *	default) or wq (IB_POLL_WORKQUEUE, rkdapl's own choice: with mode=poll the task spins on
 *	the completion counter the callbacks advance, with mode=event it sleeps until woken) or
 *	unbound (IB_POLL_UNBOUND_WORKQUEUE: the same, on a worker of any CPU).
 *	rkdapl_perf accepts only cq=default. cq=direct needs mode=poll.
 *	inline=N (raw_perf only): the QP is created with max_inline_data N, and DTOs of at most
 *	N bytes other than READs are posted with IB_SEND_INLINE.
 *	buf=sparse (rkdapl_perf only): the client's data buffer is pages that are never
 *	physically adjacent, mapped contiguously with vmap(), so a DTO has one SGE per page
 *	and a large one is split into several work requests (at most 8: up to 1 MiB with rxe's
 *	32 SGEs per work request).
 *	empty_ns is the median of an empty timed bracket (post_ns minus it is the call's own
 *	cost); dto_ns is the run's time per DTO (see perf_report()).
 *	op=stop asks the server to stop serving. mode is the client's; servers always sleep
 *	until an event comes.
 *   ceiling [size=1048576] [iters=64]
 *	CPU cost of what rxe does per byte: crc32_le (its ICRC) and memcpy over a size-byte
 *	buffer, iters times each. Prints "<tool>: ceiling size=.. iters=.. crc32_MBps=..
 *	memcpy_MBps=.. both_MBps=.." (both: one crc32 pass plus one copy per byte).
 *
 * Errors of the parser: -EINVAL for an unknown command or key, a malformed value or a
 * missing addr; -ERANGE for a value outside its range; -E2BIG for a line over 255 bytes.
 *
 * Wire protocol (one RC connection; struct perf_msg, little-endian, 48 bytes):
 *
 *   client                                    server
 *     connect                       ----->    accept (a 64-byte RECV posted for the hello)
 *     SEND hello {op, kind, size, iters, txdepth, mode}
 *                                   ----->    grant the buffer for remote read + write;
 *                                             op=send: post min(iters, 1024) RECVs of size
 *                                   <-----    SEND advert {addr, rkey, len}
 *     iters DTOs (write/read: into/from [addr, addr + size); send: SENDs of size)
 *                                             op=send: reposts RECVs until iters were posted
 *     disconnect                    ----->    DISCONNECTED; checks iters RECVs arrived
 */
#ifndef _PERF_COMMON_H
#define _PERF_COMMON_H

#include <linux/in.h>
#include <linux/irqflags.h>
#include <linux/jiffies.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/printk.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>

#define PERF_MAGIC 0x72706631		/* "rpf1" */
#define PERF_MAX_SIZE (4u << 20)	/* kmalloc's largest buffer (MAX_PAGE_ORDER) */
#define PERF_MAX_ITERS 1000000u
#define PERF_MAX_TXDEPTH 256u
#define PERF_MAX_BATCH 32u		/* DTOs in one post call (batch=) */
#define PERF_RECV_DEPTH 1024u		/* data RECVs the server keeps posted for op=send */
#define PERF_MSG_BYTES 64u		/* control message buffers */
#define PERF_LINE_MAX 384u

enum perf_op { PERF_OP_WRITE = 1, PERF_OP_READ, PERF_OP_SEND, PERF_OP_STOP };
enum perf_kind { PERF_BW = 1, PERF_LAT };
enum perf_mode { PERF_POLL = 1, PERF_EVENT };
enum perf_cmd { PERF_CMD_SERVER = 1, PERF_CMD_CLIENT, PERF_CMD_CEILING };
/* raw_perf's completion context: the default follows mode (poll: direct, event: softirq) */
enum perf_cq { PERF_CQ_DEFAULT = 0, PERF_CQ_DIRECT, PERF_CQ_SOFTIRQ, PERF_CQ_WQ, PERF_CQ_UNBOUND };

/* The only message, both ways: the hello fills op..mode, the advert addr..len. */
struct perf_msg {
	__le32 magic;
	__le32 op;
	__le32 kind;
	__le32 size;
	__le32 iters;
	__le32 txdepth;
	__le32 mode;
	__le32 rkey;
	__le64 addr;
	__le64 len;
};

struct perf_args {
	enum perf_cmd cmd;
	char dev[32];
	struct sockaddr_in sin;	/* client: the server; server: the port */
	bool have_addr;
	u32 op, kind, mode, cq;
	bool sparse;		/* buf=sparse: the client's data buffer is scattered pages */
	u32 size, iters, txdepth, signal, batch, inline_max, sessions, timeout_ms;
};

/*
 * A session's work requests, posted and completed: control SENDs and RECVs, registrations
 * (rkdapl_perf's RMR binds, raw_perf's FRWRs) and data DTOs (data_ok: those that succeeded).
 * Zeroed for each session.
 */
struct perf_counts {
	u32 ctl_sends, ctl_sends_done, ctl_recvs, ctl_recvs_done;
	u32 regs, regs_done;
	u32 data_posted, data_done, data_ok;
};

/* The client's per-DTO times of a run (perf_times_alloc()); see perf_report(). */
struct perf_times {
	u64 *post_ns;			/* the time each DTO was posted at */
	u64 *samples;			/* post-to-completion of each signalled DTO */
	u64 *post_cost;			/* the time inside each post call */
	u32 nsamples;			/* entries in samples */
};

/* ---- signalling --------------------------------------------------------------------- */

/* The signalling interval of a run: latency runs signal every DTO. */
static inline u32 perf_signal(const struct perf_args *a)
{
	return a->kind == PERF_LAT ? 1 : max_t(u32, a->signal, 1);
}

/* Whether DTO @i of a run is signalled: every signal-th one, and the last. */
static inline bool perf_signalled(const struct perf_args *a, u32 i)
{
	return (i + 1) % perf_signal(a) == 0 || i + 1 >= a->iters;
}

/*
 * Whether the client may post now: with @batch DTOs per call it waits until a whole batch
 * (or the rest of the run) fits in the window of @depth DTOs in flight.
 */
static inline bool perf_may_post(const struct perf_args *a, u32 posted, u32 done, u32 depth,
				 u32 batch)
{
	return posted < a->iters && posted - done + min(batch, a->iters - posted) <= depth;
}

/* The first signalled DTO at or after @i: the one a completion reports. */
static inline u32 perf_next_signalled(const struct perf_args *a, u32 i)
{
	while (!perf_signalled(a, i))
		i++;
	return i;
}

/* ---- waiting ------------------------------------------------------------------------ */

/* Milliseconds left until deadline (jiffies), at least 1; 0 if it passed. */
static inline u32 perf_ms_left(unsigned long deadline)
{
	long left = (long)(deadline - jiffies);

	return left <= 0 ? 0 : max(jiffies_to_msecs(left), 1u);
}

/* One spin of a poll loop: 0 to go on; -ETIMEDOUT or -EINTR to stop. */
static inline int perf_spin(unsigned long deadline, u32 *spins)
{
	if (!(++*spins & 1023)) {
		if (time_after(jiffies, deadline))
			return -ETIMEDOUT;
		if (signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	cpu_relax();
	return 0;
}

/* ---- the wire messages -------------------------------------------------------------- */

/* The client's hello: what the server needs to know of the run (the SEND sets the magic). */
static inline void perf_hello(struct perf_msg *m, const struct perf_args *a)
{
	memset(m, 0, sizeof(*m));
	m->op = cpu_to_le32(a->op);
	m->kind = cpu_to_le32(a->kind);
	m->size = cpu_to_le32(a->size);
	m->iters = cpu_to_le32(a->iters);
	m->txdepth = cpu_to_le32(a->txdepth);
	m->mode = cpu_to_le32(a->mode);
}

/*
 * perf_check_hello() - the server's reading of a client's hello
 * @m: the hello.
 * @buf_len: the server's buffer, the largest size it serves.
 * @op, @size, @iters: the run.
 *
 * Context: any context.
 * Return: 0 to serve the run; 1 for op=stop; -EPROTO for a run it cannot serve.
 */
static inline int perf_check_hello(const struct perf_msg *m, u32 buf_len, u32 *op, u32 *size,
				   u32 *iters)
{
	*op = le32_to_cpu(m->op);
	*size = le32_to_cpu(m->size);
	*iters = le32_to_cpu(m->iters);
	if (*op == PERF_OP_STOP) {
		pr_info("server: stop requested\n");
		return 1;
	}
	if (*op < PERF_OP_WRITE || *op > PERF_OP_SEND || !*size || *size > buf_len || !*iters ||
	    *iters > PERF_MAX_ITERS) {
		pr_err("server: bad hello: op %u size %u (buffer %u) iters %u\n", *op, *size,
		       buf_len, *iters);
		return -EPROTO;
	}
	return 0;
}

/* The server's advert: its buffer of @len bytes at @addr, for remote read and write. */
static inline void perf_advert(struct perf_msg *m, u64 addr, u32 rkey, u64 len)
{
	memset(m, 0, sizeof(*m));
	m->addr = cpu_to_le64(addr);
	m->rkey = cpu_to_le32(rkey);
	m->len = cpu_to_le64(len);
}

/*
 * The client's reading of the server's advert: 0 with its buffer in @addr, @rkey; -EMSGSIZE
 * if the buffer is smaller than @a->size.
 */
static inline int perf_check_advert(const struct perf_msg *m, const struct perf_args *a,
				    u64 *addr, u32 *rkey)
{
	*addr = le64_to_cpu(m->addr);
	*rkey = le32_to_cpu(m->rkey);
	if (le64_to_cpu(m->len) < a->size) {
		pr_err("client: the server's buffer has %llu bytes, size=%u\n",
		       le64_to_cpu(m->len), a->size);
		return -EMSGSIZE;
	}
	return 0;
}

/* ---- the client's per-DTO times ----------------------------------------------------- */

/*
 * perf_times_alloc() - the client's per-DTO arrays of a run (none for op=stop)
 * @a: the run (@a->iters DTOs).
 * @t: filled in.
 *
 * Context: process context, may sleep.
 * Return: 0; -ENOMEM (what was allocated is for perf_times_free()).
 */
static inline int perf_times_alloc(const struct perf_args *a, struct perf_times *t)
{
	if (a->op == PERF_OP_STOP)
		return 0;
	t->post_ns = kvcalloc(a->iters, sizeof(u64), GFP_KERNEL);
	t->samples = kvcalloc(a->iters, sizeof(u64), GFP_KERNEL);
	t->post_cost = kvcalloc(a->iters, sizeof(u64), GFP_KERNEL);
	return t->post_ns && t->samples && t->post_cost ? 0 : -ENOMEM;
}

static inline void perf_times_free(struct perf_times *t)
{
	kvfree(t->post_ns);
	kvfree(t->samples);
	kvfree(t->post_cost);
}

/*
 * Records the post-to-completion time of DTO @i, completed at @now (ns), if the run keeps
 * times (a client's) and has room. Context: any context.
 */
static inline void perf_times_sample(struct perf_times *t, const struct perf_args *a, u32 i,
				     u64 now)
{
	if (t->samples && i < a->iters && t->nsamples < a->iters)
		t->samples[t->nsamples++] = now - t->post_ns[i];
}

/*
 * perf_post_begin() - opens the timed bracket of one post call of DTOs @i0..@i0 + @n - 1
 *
 * Interrupts are off across the call (the post calls may be called from any context) so that
 * post_ns is the call's own CPU time: otherwise the rxe work the post wakes may preempt the
 * poster, and the NIC's interrupt with rxe's receive softirq may run inside the call. Sets
 * the DTOs' post times. perf_post_end() closes the bracket.
 * Return: the bracket's start, for perf_post_end().
 */
static __always_inline u64 perf_post_begin(struct perf_times *t, u32 i0, u32 n,
					   unsigned long *flags)
{
	u64 t0;
	u32 k;

	local_irq_save(*flags);
	t0 = ktime_get_ns();
	for (k = 0; k < n; k++)
		t->post_ns[i0 + k] = t0;
	return t0;
}

/* Closes the bracket perf_post_begin() opened at @t0: each DTO's share of the call's time. */
static __always_inline void perf_post_end(struct perf_times *t, u32 i0, u32 n, u64 t0,
					  unsigned long flags)
{
	u64 cost = div_u64(ktime_get_ns() - t0, n);
	u32 k;

	local_irq_restore(flags);
	for (k = 0; k < n; k++)
		t->post_cost[i0 + k] = cost;
}

#endif /* _PERF_COMMON_H */
