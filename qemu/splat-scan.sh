#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Scans guest dmesg dumps for kernel splats (WARN, BUG, KASAN, lockdep,
# kmemleak, hung tasks, UBSAN, debugobjects, list/refcount corruption...).
# Prints TAP: one test per file, a "# file:line: text" diagnostic per splat.
#   qemu/splat-scan.sh <dmesg-file>...     exit 1 if any splat (or missing file)
# A splat logged before the harness started (the line "rkdapl: harness start" that
# qemu/guest-run.sh writes to /dev/kmsg before any rkdapl module is loaded) is the kernel's
# own boot under TCG, out of rkdapl's reach: it is listed as "# boot-time ..." and does not
# fail the file. Without the marker every splat counts. A user-space program's fault
# ("traps: prog[pid] general protection fault ... in lib.so", e.g. a perftest crash in make
# bench) is not a kernel splat: it is listed as "# user space ..." and not counted.
# Lock debugging turned off (lockdep's debug_locks cleared) counts wherever it happens, boot
# included: lockdep then checks nothing for the rest of the guest's run, so a pass would mean
# nothing. The kernel says so in several ways: "Disabling lock debugging due to kernel taint"
# (add_taint(..., LOCKDEP_NOW_UNRELIABLE): any KASAN report, an oops, a forced rmmod...),
# DEBUG_LOCKS_WARN_ON(...), lockdep's "turning off the locking correctness validator" (a table
# full) and "INFO: lockdep is turned off"; qemu/guest-report.sh adds "rkdapl: lock debugging
# is OFF" when /proc/lockdep_stats shows debug_locks 0 at the end, whatever turned it off.
lockoff='Disabling lock debugging|DEBUG_LOCKS_WARN_ON|turning off the locking correctness validator|INFO: lockdep is turned off|rkdapl: lock debugging is OFF'
# A KCSAN data-race report ("BUG: KCSAN: ...", only with the kcsan kernel flavour) is a finding
# that qemu/kcsan-scan.py reports (FLAVOUR=kcsan make check): listed as "# KCSAN ...", not counted.
re='WARNING:|(^|[^A-Z])BUG:|KASAN:|Oops|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|unreferenced object|INFO: task .* blocked|UBSAN:|ODEBUG:|list_(add|del) corruption|refcount_t:|rcu: INFO: rcu_.* detected (expedited )?stalls|soft lockup|hard LOCKUP'
[ $# -gt 0 ] || { echo "usage: $0 <dmesg-file>..." >&2; exit 2; }
echo "1..$#"
n=0 total=0 bad=0
for f in "$@"; do
	n=$((n + 1))
	if [ ! -r "$f" ]; then
		echo "not ok $n - $f: missing"
		bad=1
		continue
	fi
	start=$(grep -na 'rkdapl: harness start' "$f" | head -n 1 | cut -d: -f1)
	user='traps: [^ ]+\[[0-9]+\] general protection fault'
	kcsan='BUG: KCSAN: '
	hits=$(grep -naE "$re|$lockoff" "$f" | grep -vE "$user|$kcsan" |
		awk -F: -v s="${start:-0}" -v off="$lockoff" '$1 > s || $0 ~ off')
	boot=$(grep -naE "$re" "$f" | grep -vE "$user|$kcsan" |
		awk -F: -v s="${start:-0}" -v off="$lockoff" '$1 <= s && $0 !~ off')
	ufault=$(grep -naE "$user" "$f")
	races=$(grep -naE "$kcsan" "$f")
	c=$(printf '%s' "$hits" | grep -c .)
	total=$((total + c))
	if [ "$c" = 0 ]; then
		echo "ok $n - $f: no kernel splats"
	else
		echo "not ok $n - $f: $c splat line(s)"
		printf '%s\n' "$hits" | sed "s|^|# $f:|"
		bad=1
	fi
	[ -n "$boot" ] && printf '%s\n' "$boot" | sed "s|^|# boot-time, before the harness (not counted): $f:|"
	[ -n "$ufault" ] && printf '%s\n' "$ufault" | sed "s|^|# user space, not a kernel splat (not counted): $f:|"
	[ -n "$races" ] && printf '%s\n' "$races" | sed "s|^|# KCSAN finding, not a splat (not counted): $f:|"
done
echo "# splat-scan: $total splat line(s) in $# file(s)"
exit $bad
