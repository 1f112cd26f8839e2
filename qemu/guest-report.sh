#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE a guest: records a test script's exit status in $RKDAPL_SYNC/rc-<role> and dumps
# dmesg plus a kmemleak report (and, on a KCSAN kernel, KCSAN's counters) into
# $RKDAPL_SYNC/dmesg-<role>.txt, which run-guests.sh reads.
#   guest-report.sh <exit-status>
# Called by guest-run.sh when the script ends, and by a script that reports before it is
# killed on purpose (selftests/peerkill.sh).
rc=$1
echo "rkdapl: guest $RKDAPL_ROLE script exit $rc" > /dev/kmsg
echo "$rc" > "$RKDAPL_SYNC/rc-$RKDAPL_ROLE"
out=$RKDAPL_SYNC/dmesg-$RKDAPL_ROLE.txt
t1=$SECONDS
kml=/sys/kernel/debug/kmemleak
if [ -e $kml ]; then
	echo scan > $kml
	echo scan > $kml
fi
# Lock debugging that got turned off (debug_locks 0) fails the guest in splat-scan.sh: lockdep
# checked nothing from then on. Most ways to turn it off print a line splat-scan.sh knows; this
# one covers the rest. /proc/lockdep_stats exists only on a lockdep kernel (not release).
if dl=$(awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats 2>/dev/null) && [ "$dl" = 0 ]; then
	echo "rkdapl: lock debugging is OFF (debug_locks 0$(cat "$RKDAPL_SYNC/lockoff-$RKDAPL_ROLE" 2>/dev/null)): lockdep did not check this guest's run" > /dev/kmsg
fi
dmesg > "$out"
[ -e $kml ] && { echo "--- kmemleak ---"; cat $kml; } >> "$out"
# The kcsan flavour: KCSAN's counters (watchpoints set up, races seen), the proof it was on.
[ -e /sys/kernel/debug/kcsan ] && { echo "--- kcsan ---"; cat /sys/kernel/debug/kcsan
	grep -H . /sys/module/kcsan/parameters/* 2>/dev/null; } >> "$out"
echo "rkdapl: guest $RKDAPL_ROLE kmemleak scan and dmesg dump took $((SECONDS - t1)) s"
