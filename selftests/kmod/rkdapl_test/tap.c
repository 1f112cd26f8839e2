// SPDX-License-Identifier: GPL-2.0
/* rkdapl_test: TAP output, names of errnos, events, statuses and ops; test patterns. */
#include "rkdapl_test.h"

/* ------------------------------------------------------------------------------------------ */
/*
 * KTAP (Documentation/dev-tools/ktap.rst). The number of tests depends on the device and the
 * run (the transports, the sizes, what the fuzzer draws), so there is no plan line: KTAP allows
 * its omission when the count is not known in advance. The run ends with kselftest's totals
 * line and "# done P passed F failed S skipped" (selftests/guest-lib.sh waits for it); a skip
 * is never a pass.
 */

static DEFINE_MUTEX(tap_lock);
static int tap_num, tap_passed, tap_failed, tap_skipped;

/* Prints the version line; module_init calls it before any test. */
void tap_start(void)
{
	pr_info("rkdapl_test: KTAP version 1\n");
}

__printf(3, 4) bool tap(bool ok, const char *name, const char *fmt, ...)
{
	char why[WHY] = "";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(why, sizeof(why), fmt, ap);
		va_end(ap);
	}
	mutex_lock(&tap_lock);
	tap_num++;
	if (ok) {
		tap_passed++;
		pr_info("rkdapl_test: ok %d - %s\n", tap_num, name);
	} else {
		tap_failed++;
		pr_info("rkdapl_test: not ok %d - %s # %s\n", tap_num, name, why[0] ? why : "failed");
	}
	mutex_unlock(&tap_lock);
	return ok;
}

void tap_skip(const char *name, const char *reason)
{
	mutex_lock(&tap_lock);
	tap_num++;
	tap_skipped++;
	pr_info("rkdapl_test: ok %d - %s # SKIP %s\n", tap_num, name, reason);
	mutex_unlock(&tap_lock);
}

/* Prints the totals; module_init's return value: 0 if no test failed and there was a test. */
int tap_finish(void)
{
	pr_info("rkdapl_test: # Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0\n",
		tap_passed, tap_failed, tap_skipped);
	pr_info("rkdapl_test: # done %d passed %d failed %d skipped\n", tap_passed, tap_failed,
		tap_skipped);
	return tap_failed || !tap_num ? -EIO : 0;
}

const char *ename(int e)
{
	switch (e) {
	case 0: return "0";
	case -EINVAL: return "-EINVAL";
	case -ENODEV: return "-ENODEV";
	case -ENOMEM: return "-ENOMEM";
	case -EFAULT: return "-EFAULT";
	case -ERANGE: return "-ERANGE";
	case -EACCES: return "-EACCES";
	case -EXDEV: return "-EXDEV";
	case -EBUSY: return "-EBUSY";
	case -E2BIG: return "-E2BIG";
	case -ENOTCONN: return "-ENOTCONN";
	case -EISCONN: return "-EISCONN";
	case -ENOSPC: return "-ENOSPC";
	case -EAGAIN: return "-EAGAIN";
	case -ETIMEDOUT: return "-ETIMEDOUT";
	case -EINTR: return "-EINTR";
	case -EAFNOSUPPORT: return "-EAFNOSUPPORT";
	case -EADDRINUSE: return "-EADDRINUSE";
	case -EADDRNOTAVAIL: return "-EADDRNOTAVAIL";
	case -ENETUNREACH: return "-ENETUNREACH";
	case -EMSGSIZE: return "-EMSGSIZE";
	case -EIO: return "-EIO";
	case -EPROTO: return "-EPROTO";
	case -EOVERFLOW: return "-EOVERFLOW";
	case -EDEADLK: return "-EDEADLK";
	case -EOPNOTSUPP: return "-EOPNOTSUPP";
	case -ECONNABORTED: return "-ECONNABORTED";
	}
	return "?";
}

/* One call's return value against the errno the header documents. */
bool expect(int got, int want, const char *what)
{
	char name[160];

	snprintf(name, sizeof(name), "%s -> %s", what, ename(want));
	return tap(got == want, name, "returned %d (%s)", got, ename(got));
}

/* ------------------------------------------------------------------------------------------ */
/* Test patterns: a byte stream per 32-bit seed; position i of the stream is byte i. */

void pat_fill(void *buf, u64 off, u64 len, u32 seed)
{
	u8 *p = buf;
	u64 i, end = off + len;
	u32 w = pat_word(seed, off);

	for (i = off; i < end; i++) {
		if ((i & 3) == 0)
			w = pat_word(seed, i);
		p[i] = w >> ((i & 3) * 8);
	}
}

/* First offset in [off, off + len) that differs from the pattern, or -1. */
s64 pat_check(const void *buf, u64 off, u64 len, u32 seed)
{
	const u8 *p = buf;
	u64 i, end = off + len;
	u32 w = pat_word(seed, off);

	for (i = off; i < end; i++) {
		if ((i & 3) == 0)
			w = pat_word(seed, i);
		if (p[i] != (u8)(w >> ((i & 3) * 8)))
			return i;
	}
	return -1;
}

u32 poison_seed(u32 seed)
{
	return ~seed ^ 0x5a5a0000;
}
