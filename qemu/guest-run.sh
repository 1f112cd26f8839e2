#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE a guest as its whole job, started by run-guests.sh:
#   guest-run.sh <env-file> <test-script>
# Loads the RKDAPL_* environment, runs guest-setup.sh and then the test script,
# then guest-report.sh: the exit status into $RKDAPL_SYNC/rc-<role> and (pass or fail)
# dmesg plus a kmemleak report into $RKDAPL_SYNC/dmesg-<role>.txt.
set -a; . "$1"; set +a
exec >>"$RKDAPL_SYNC/out-$RKDAPL_ROLE.log" 2>&1
echo "rkdapl: harness start, guest $RKDAPL_ROLE" > /dev/kmsg
# Lock debugging already off here was lost during boot (see qemu/splat-scan.sh): noted for
# guest-report.sh's "lock debugging is OFF" line.
[ "$(awk '$1 == "debug_locks:" { print $2 }' /proc/lockdep_stats 2>/dev/null)" = 0 ] &&
	echo ", already at harness start: lost during boot" > "$RKDAPL_SYNC/lockoff-$RKDAPL_ROLE"
# KUnit suites of modules loaded from now on (rkdapl.ko's) are chosen by this glob, not by the
# boot-time one (see run-guests.sh). No newline: the parameter takes the bytes as written.
[ -n "${RKDAPL_KUNIT_GLOB:-}" ] &&
	{ printf '%s' "$RKDAPL_KUNIT_GLOB" > /sys/module/kunit/parameters/filter_glob ||
		echo "rkdapl: cannot set kunit.filter_glob to $RKDAPL_KUNIT_GLOB"; }
cd "$RKDAPL_TOP" || exit 1
t0=$SECONDS
if bash "$RKDAPL_TOP/qemu/guest-setup.sh"; then
	echo "rkdapl: guest $RKDAPL_ROLE setup done, running $2" | tee /dev/kmsg
	bash "$2"
	rc=$?
else
	rc=$?
	echo "rkdapl: guest-setup.sh failed ($rc)"
fi
echo "rkdapl: guest $RKDAPL_ROLE script exit $rc after $((SECONDS - t0)) s"
# A script that reported already (it was to be killed, and was not) keeps its report.
[ -e "$RKDAPL_SYNC/rc-$RKDAPL_ROLE" ] || bash "$RKDAPL_TOP/qemu/guest-report.sh" "$rc"
exit "$rc"
