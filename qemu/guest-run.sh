#!/bin/bash
# Runs INSIDE a guest as its whole job, started by run-guests.sh:
#   guest-run.sh <env-file> <test-script>
# Loads the RKDAPL_* environment, runs guest-setup.sh and then the test script,
# records the exit status in $RKDAPL_SYNC/rc-<role>, and (pass or fail) dumps
# dmesg plus a kmemleak report into $RKDAPL_SYNC/dmesg-<role>.txt.
set -a; . "$1"; set +a
exec >>"$RKDAPL_SYNC/out-$RKDAPL_ROLE.log" 2>&1
echo "rkdapl: harness start, guest $RKDAPL_ROLE" > /dev/kmsg
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
echo "rkdapl: guest $RKDAPL_ROLE script exit $rc after $((SECONDS - t0)) s" | tee /dev/kmsg
echo "$rc" > "$RKDAPL_SYNC/rc-$RKDAPL_ROLE"

out=$RKDAPL_SYNC/dmesg-$RKDAPL_ROLE.txt
t1=$SECONDS
kml=/sys/kernel/debug/kmemleak
if [ -e $kml ]; then
	echo scan > $kml
	echo scan > $kml
fi
dmesg > "$out"
[ -e $kml ] && { echo "--- kmemleak ---"; cat $kml; } >> "$out"
echo "rkdapl: guest $RKDAPL_ROLE kmemleak scan and dmesg dump took $((SECONDS - t1)) s"
exit "$rc"
