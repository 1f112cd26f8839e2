/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What samples/rkdapl_perf.c (over rkdapl) and samples/raw_perf.c (over ib_core + rdma_cm)
 * share, so that the two tools do the same work and print the same line: the control-file
 * parser and the debugfs files, the wire messages, the statistics, the result line and the
 * crc32 + memcpy "ceiling" measurement. Each tool includes it once and defines
 * perf_ctl_write(), the ctl file's write; everything else is static here.
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

#include <linux/crc32.h>
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

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

static const char *const perf_op_names[] = {
	[PERF_OP_WRITE] = "write", [PERF_OP_READ] = "read", [PERF_OP_SEND] = "send",
	[PERF_OP_STOP] = "stop",
};
static const char *const perf_kind_names[] = { [PERF_BW] = "bw", [PERF_LAT] = "lat" };
static const char *const perf_mode_names[] = { [PERF_POLL] = "poll", [PERF_EVENT] = "event" };
static const char *const perf_cq_names[] = {
	[PERF_CQ_DEFAULT] = "default", [PERF_CQ_DIRECT] = "direct", [PERF_CQ_SOFTIRQ] = "softirq",
	[PERF_CQ_WQ] = "wq", [PERF_CQ_UNBOUND] = "unbound",
};

#define PERF_NAME(tab, i) ((i) < ARRAY_SIZE(tab) && (tab)[i] ? (tab)[i] : "?")

static int perf_lookup(const char *const *tab, size_t n, const char *val, u32 *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (tab[i] && !strcmp(tab[i], val)) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int perf_u32(const char *val, u32 min, u32 max, u32 *out)
{
	u32 v;

	if (kstrtou32(val, 0, &v))
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * perf_parse() - parse one control line into @a
 * @line: NUL-terminated, modified in place.
 * @a: filled in, defaults first.
 *
 * Context: any context.
 * Return: 0; -EINVAL or -ERANGE as described at the top of this file.
 */
static int perf_parse(char *line, struct perf_args *a)
{
	char *tok, *val;
	u32 port = 7700;
	int ret = 0;

	memset(a, 0, sizeof(*a));
	strscpy(a->dev, "rxe0", sizeof(a->dev));
	a->op = PERF_OP_WRITE;
	a->kind = PERF_BW;
	a->mode = PERF_EVENT;
	a->size = 65536;
	a->iters = 200;
	a->txdepth = 16;
	a->signal = 1;
	a->batch = 1;
	a->timeout_ms = 60000;

	line = strim(line);
	tok = strsep(&line, " \t\n");
	if (!tok || !strcmp(tok, ""))
		return -EINVAL;
	if (!strcmp(tok, "server")) {
		a->cmd = PERF_CMD_SERVER;
		a->size = PERF_MAX_SIZE;
	} else if (!strcmp(tok, "client")) {
		a->cmd = PERF_CMD_CLIENT;
	} else if (!strcmp(tok, "ceiling")) {
		a->cmd = PERF_CMD_CEILING;
		a->size = 1 << 20;
		a->iters = 64;
	} else {
		return -EINVAL;
	}

	while ((tok = strsep(&line, " \t\n"))) {
		if (!*tok)
			continue;
		val = strchr(tok, '=');
		if (!val || !val[1])
			return -EINVAL;
		*val++ = '\0';
		if (!strcmp(tok, "dev")) {
			if (strscpy(a->dev, val, sizeof(a->dev)) < 0)
				return -ERANGE;
		} else if (!strcmp(tok, "addr")) {
			if (!in4_pton(val, -1, (u8 *)&a->sin.sin_addr.s_addr, -1, NULL))
				return -EINVAL;
			a->have_addr = true;
		} else if (!strcmp(tok, "port")) {
			ret = perf_u32(val, 1, 65535, &port);
		} else if (!strcmp(tok, "op")) {
			ret = perf_lookup(perf_op_names, ARRAY_SIZE(perf_op_names), val, &a->op);
		} else if (!strcmp(tok, "kind")) {
			ret = perf_lookup(perf_kind_names, ARRAY_SIZE(perf_kind_names), val,
					  &a->kind);
		} else if (!strcmp(tok, "mode")) {
			ret = perf_lookup(perf_mode_names, ARRAY_SIZE(perf_mode_names), val,
					  &a->mode);
		} else if (!strcmp(tok, "size")) {
			ret = perf_u32(val, 1, PERF_MAX_SIZE, &a->size);
		} else if (!strcmp(tok, "iters")) {
			ret = perf_u32(val, 1, PERF_MAX_ITERS, &a->iters);
		} else if (!strcmp(tok, "txdepth")) {
			ret = perf_u32(val, 1, PERF_MAX_TXDEPTH, &a->txdepth);
		} else if (!strcmp(tok, "signal")) {
			ret = perf_u32(val, 1, PERF_MAX_TXDEPTH, &a->signal);
		} else if (!strcmp(tok, "batch")) {
			ret = perf_u32(val, 1, PERF_MAX_BATCH, &a->batch);
		} else if (!strcmp(tok, "inline")) {
			ret = perf_u32(val, 0, 4096, &a->inline_max);
		} else if (!strcmp(tok, "buf")) {
			if (!strcmp(val, "sparse"))
				a->sparse = true;
			else if (strcmp(val, "kmalloc"))
				return -EINVAL;
		} else if (!strcmp(tok, "cq")) {
			ret = perf_lookup(perf_cq_names, ARRAY_SIZE(perf_cq_names), val, &a->cq);
		} else if (!strcmp(tok, "sessions")) {
			ret = perf_u32(val, 0, U32_MAX, &a->sessions);
		} else if (!strcmp(tok, "timeout_ms")) {
			ret = perf_u32(val, 1, 3600000, &a->timeout_ms);
		} else {
			return -EINVAL;
		}
		if (ret)
			return ret;
	}
	a->sin.sin_family = AF_INET;
	a->sin.sin_port = htons(port);
	if (a->cmd == PERF_CMD_CLIENT && !a->have_addr)
		return -EINVAL;
	/* a window of txdepth DTOs must hold a signalled one, or the client waits forever */
	if (a->signal > a->txdepth || a->batch > a->txdepth)
		return -EINVAL;
	return 0;
}

/* ---- statistics and the result line ------------------------------------------------- */

static int perf_cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* A fixed-point number for printing: v / 10^digits as "<int>.<digits digits>". */
struct perf_fix {
	char s[24];
};

static struct perf_fix perf_fix(u64 v, unsigned int digits)
{
	struct perf_fix f;
	u32 scale = 1, rem, i;
	u64 q;

	for (i = 0; i < digits; i++)
		scale *= 10;
	q = div_u64_rem(v, scale, &rem);

	snprintf(f.s, sizeof(f.s), "%llu.%0*u", q, digits, rem);
	return f;
}

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

/*
 * perf_empty_ns() - the median time of an empty timed bracket, in ns
 *
 * The same two ktime_get_ns() calls with interrupts off that time each post call, with
 * nothing between them: post_ns minus this is the post call's own cost. Under QEMU's
 * -icount shift=0 one guest instruction is one virtual ns, so the difference counts
 * instructions.
 * Context: process context.
 */
static u64 perf_empty_ns(void)
{
	u64 t[63], t0;
	unsigned long flags;
	u32 i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		local_irq_save(flags);
		t0 = ktime_get_ns();
		t[i] = ktime_get_ns() - t0;
		local_irq_restore(flags);
	}
	sort(t, ARRAY_SIZE(t), sizeof(*t), perf_cmp_u64, NULL);
	return t[ARRAY_SIZE(t) / 2];
}

/* The last result line, for the debugfs "result" file. */
static DEFINE_MUTEX(perf_result_lock);
static char perf_result[PERF_LINE_MAX];

static void perf_set_result(const char *line)
{
	mutex_lock(&perf_result_lock);
	strscpy(perf_result, line, sizeof(perf_result));
	mutex_unlock(&perf_result_lock);
}

/*
 * perf_report() - print and remember the result line of a client run
 * @tool: "rkdapl" or "raw".
 * @a: the run's arguments.
 * @total_ns: first post to last completion.
 * @samples: per-DTO times in ns, one per signalled DTO; sorted here.
 * @nsamples: entries in @samples.
 * @post_cost: @a->iters times spent inside each post call, in ns; sorted here. With
 *	batch=N a chain's call time is shared among its DTOs.
 *
 * Besides the rates, the line carries empty_ns (perf_empty_ns(): subtract it from post_ns for
 * the call's own cost) and dto_ns, @total_ns per DTO: under -icount shift=0 the instructions
 * all vCPUs executed per DTO (post, device work, completion, event), pipelined txdepth deep
 * for bw and one at a time for lat.
 * Context: process context (sorts up to PERF_MAX_ITERS entries).
 */
static void perf_report(const char *tool, const struct perf_args *a, u64 total_ns, u64 *samples,
			u32 nsamples, u64 *post_cost)
{
	char line[PERF_LINE_MAX];
	u64 bytes = (u64)a->size * a->iters, mbps, mmsg, med, p99, post;
	u32 n = a->iters, ns = max_t(u32, nsamples, 1);

	total_ns = max_t(u64, total_ns, 1);
	/* TCG guests move kilobytes per second at small sizes: print enough digits */
	mbps = mul_u64_u64_div_u64(bytes, 10000000, total_ns);	/* MB/s x 10^4 */
	mmsg = div64_u64((u64)n * 1000000000, total_ns);	/* Mmsg/s x 10^6 */
	sort(samples, ns, sizeof(*samples), perf_cmp_u64, NULL);
	med = div_u64(samples[(ns - 1) / 2], 10);		/* us x 100 */
	p99 = div_u64(samples[min_t(u32, ns - 1, div_u64((u64)ns * 99 + 99, 100) - 1)], 10);
	sort(post_cost, n, sizeof(*post_cost), perf_cmp_u64, NULL);
	post = post_cost[(n - 1) / 2] * 10;			/* ns x 10 */
	snprintf(line, sizeof(line),
		 "result tool=%s op=%s kind=%s size=%u iters=%u txdepth=%u signal=%u batch=%u inline=%u buf=%s mode=%s cq=%s MBps=%s Mmsgps=%s lat_med_us=%s lat_p99_us=%s post_ns=%s empty_ns=%llu dto_ns=%llu",
		 tool, PERF_NAME(perf_op_names, a->op), PERF_NAME(perf_kind_names, a->kind),
		 a->size, a->iters, a->kind == PERF_LAT ? 1 : a->txdepth, perf_signal(a),
		 a->kind == PERF_LAT ? 1 : a->batch, a->inline_max,
		 a->sparse ? "sparse" : "kmalloc", PERF_NAME(perf_mode_names, a->mode),
		 PERF_NAME(perf_cq_names, a->cq), perf_fix(mbps, 4).s, perf_fix(mmsg, 6).s,
		 perf_fix(med, 2).s, perf_fix(p99, 2).s, perf_fix(post, 1).s, perf_empty_ns(),
		 div_u64(total_ns, n));
	pr_info("%s\n", line);
	perf_set_result(line);
}

/* ---- the rxe ceiling ---------------------------------------------------------------- */

/*
 * perf_ceiling() - time crc32_le and memcpy over a buffer
 * @a: size and iters.
 *
 * Context: process context, may sleep.
 * Return: 0; -ENOMEM.
 */
static int perf_ceiling(const struct perf_args *a)
{
	char line[PERF_LINE_MAX];
	u64 bytes = (u64)a->size * a->iters, t_crc, t_cpy, crc_mbps, cpy_mbps, both;
	void *src, *dst;
	u32 crc = 0, i;
	ktime_t t0;

	src = kvmalloc(a->size, GFP_KERNEL);
	dst = kvmalloc(a->size, GFP_KERNEL);
	if (!src || !dst) {
		kvfree(src);
		kvfree(dst);
		return -ENOMEM;
	}
	memset(src, 0x5a, a->size);
	memset(dst, 0, a->size);
	t0 = ktime_get();
	for (i = 0; i < a->iters; i++)
		crc = crc32_le(crc, src, a->size);
	t_crc = max_t(u64, ktime_to_ns(ktime_sub(ktime_get(), t0)), 1);
	t0 = ktime_get();
	for (i = 0; i < a->iters; i++) {
		memcpy(dst, src, a->size);
		barrier();
	}
	t_cpy = max_t(u64, ktime_to_ns(ktime_sub(ktime_get(), t0)), 1);
	crc_mbps = div64_u64(bytes * 100000, t_crc);
	cpy_mbps = div64_u64(bytes * 100000, t_cpy);
	both = div64_u64(bytes * 100000, t_crc + t_cpy);
	snprintf(line, sizeof(line),
		 "ceiling size=%u iters=%u crc32_MBps=%s memcpy_MBps=%s both_MBps=%s crc=%08x",
		 a->size, a->iters, perf_fix(crc_mbps, 2).s, perf_fix(cpy_mbps, 2).s,
		 perf_fix(both, 2).s,
		 crc ^ ((u8 *)dst)[a->size - 1]);
	pr_info("%s\n", line);
	perf_set_result(line);
	kvfree(src);
	kvfree(dst);
	return 0;
}

/* ---- waiting ------------------------------------------------------------------------ */

/* Milliseconds left until deadline (jiffies), at least 1; 0 if it passed. */
static u32 perf_ms_left(unsigned long deadline)
{
	long left = (long)(deadline - jiffies);

	return left <= 0 ? 0 : max(jiffies_to_msecs(left), 1u);
}

/* One spin of a poll loop: 0 to go on; -ETIMEDOUT or -EINTR to stop. */
static int perf_spin(unsigned long deadline, u32 *spins)
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

/* ---- the wire messages and the run's times ----------------------------------------- */

/* The client's hello: what the server needs to know of the run (the SEND sets the magic). */
static void perf_hello(struct perf_msg *m, const struct perf_args *a)
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
static int perf_check_hello(const struct perf_msg *m, u32 buf_len, u32 *op, u32 *size,
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
static void perf_advert(struct perf_msg *m, u64 addr, u32 rkey, u64 len)
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
static int perf_check_advert(const struct perf_msg *m, const struct perf_args *a, u64 *addr,
			     u32 *rkey)
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

/*
 * perf_alloc_times() - the client's per-DTO arrays of a run (none for op=stop)
 * @a: the run (@a->iters DTOs).
 * @post_ns: the time each DTO was posted at.
 * @samples: post-to-completion times (perf_report()).
 * @post_cost: the time inside each post call (perf_report()).
 *
 * Context: process context, may sleep.
 * Return: 0; -ENOMEM (what was allocated is for perf_free_times()).
 */
static int perf_alloc_times(const struct perf_args *a, u64 **post_ns, u64 **samples,
			    u64 **post_cost)
{
	if (a->op == PERF_OP_STOP)
		return 0;
	*post_ns = kvcalloc(a->iters, sizeof(u64), GFP_KERNEL);
	*samples = kvcalloc(a->iters, sizeof(u64), GFP_KERNEL);
	*post_cost = kvcalloc(a->iters, sizeof(u64), GFP_KERNEL);
	return *post_ns && *samples && *post_cost ? 0 : -ENOMEM;
}

static void perf_free_times(u64 *post_ns, u64 *samples, u64 *post_cost)
{
	kvfree(post_ns);
	kvfree(samples);
	kvfree(post_cost);
}

/* ---- the control and result files ---------------------------------------------------- */

/*
 * perf_command() - reads one control write (at most PERF_LINE_MAX - 1 bytes) into @a
 *
 * Context: process context.
 * Return: 0; -EINVAL for an empty write, -E2BIG, -EFAULT, or perf_parse()'s error.
 */
static int perf_command(const char __user *ubuf, size_t len, struct perf_args *a)
{
	char *line;
	int ret;

	if (!len)
		return -EINVAL;
	if (len >= PERF_LINE_MAX)
		return -E2BIG;
	line = memdup_user_nul(ubuf, len);
	if (IS_ERR(line))
		return PTR_ERR(line);
	ret = perf_parse(line, a);
	kfree(line);
	return ret;
}

static ssize_t perf_result_read(struct file *file, char __user *ubuf, size_t len,
				loff_t *ppos)
{
	char buf[PERF_LINE_MAX + 1];
	size_t n;

	mutex_lock(&perf_result_lock);
	n = scnprintf(buf, sizeof(buf), "%s%s", perf_result, perf_result[0] ? "\n" : "");
	mutex_unlock(&perf_result_lock);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

/* Each tool's ctl file: parses one command and runs it in the writing task. */
static ssize_t perf_ctl_write(struct file *file, const char __user *ubuf, size_t len,
			      loff_t *ppos);

static const struct file_operations perf_ctl_fops = {
	.owner = THIS_MODULE,
	.write = perf_ctl_write,
};

static const struct file_operations perf_result_fops = {
	.owner = THIS_MODULE,
	.read = perf_result_read,
};

static struct dentry *perf_dir;

/* Creates /sys/kernel/debug/@name/ with the ctl and result files. Context: module_init. */
static int perf_debugfs_init(const char *name)
{
	perf_dir = debugfs_create_dir(name, NULL);
	if (IS_ERR(perf_dir))
		return PTR_ERR(perf_dir);
	debugfs_create_file("ctl", 0200, perf_dir, NULL, &perf_ctl_fops);
	debugfs_create_file("result", 0444, perf_dir, NULL, &perf_result_fops);
	return 0;
}

static void perf_debugfs_exit(void)
{
	debugfs_remove(perf_dir);
}

#endif /* _PERF_COMMON_H */
