/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control and result files of samples/rkdapl_perf/ and samples/raw_perf/ (the commands,
 * the result line and the errors are described at the top of samples/perf_common.h): the
 * parser, the debugfs files, the statistics and the result line of a client run, and the
 * crc32 + memcpy "ceiling" measurement. Each tool's run.c includes it once and defines
 * perf_ctl_write(), the ctl file's write; everything here is static.
 */
#ifndef _PERF_CTL_H
#define _PERF_CTL_H

#include <linux/crc32.h>
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sort.h>
#include <linux/uaccess.h>

#include "perf_common.h"

/* ---- the parser --------------------------------------------------------------------- */

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
 * Return: 0; -EINVAL or -ERANGE as described at the top of samples/perf_common.h.
 */
static int perf_parse(char *line, struct perf_args *a)
{
	char *tok, *val;
	u32 port = 7700;
	int ret = 0;

	*a = (struct perf_args){
		.dev = "rxe0", .op = PERF_OP_WRITE, .kind = PERF_BW, .mode = PERF_EVENT,
		.size = 65536, .iters = 200, .txdepth = 16, .signal = 1, .batch = 1,
		.timeout_ms = 60000,
	};

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
 * @t: the run's times: the per-DTO times of the signalled DTOs (samples, nsamples) and the
 *	@a->iters times spent inside each post call (post_cost; with batch=N a chain's call
 *	time is shared among its DTOs), in ns; both sorted here.
 *
 * Besides the rates, the line carries empty_ns (perf_empty_ns(): subtract it from post_ns for
 * the call's own cost) and dto_ns, @total_ns per DTO: under -icount shift=0 the instructions
 * all vCPUs executed per DTO (post, device work, completion, event), pipelined txdepth deep
 * for bw and one at a time for lat.
 * Context: process context (sorts up to PERF_MAX_ITERS entries).
 */
static void perf_report(const char *tool, const struct perf_args *a, u64 total_ns,
			struct perf_times *t)
{
	char line[PERF_LINE_MAX];
	u64 bytes = (u64)a->size * a->iters, mbps, mmsg, med, p99, post;
	u32 n = a->iters, ns = max_t(u32, t->nsamples, 1);
	u64 *samples = t->samples, *post_cost = t->post_cost;

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

#endif /* _PERF_CTL_H */
