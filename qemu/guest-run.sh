#!/bin/bash
# Runs INSIDE a guest as its whole job, started by run-guests.sh:
#   guest-run.sh <env-file> <test-script>
# Loads the RKDAPL_* environment, runs guest-setup.sh and then the test script,
# records the exit status in $RKDAPL_SYNC/rc-<role>, and (pass or fail) dumps
# dmesg plus a kmemleak report into $RKDAPL_SYNC/dmesg-<role>.txt.
set -a; . "$1"; set +a
exec 2>&1
cd "$RKDAPL_TOP" || exit 1
t0=$SECONDS
if bash "$RKDAPL_TOP/qemu/guest-setup.sh"; then
	echo "rkdapl: guest $RKDAPL_ROLE setup done, running $2"
	bash "$2"
	rc=$?
else
	rc=$?
	echo "rkdapl: guest-setup.sh failed ($rc)"
fi
echo "rkdapl: guest $RKDAPL_ROLE script exit $rc after $((SECONDS - t0)) s"
echo "$rc" > "$RKDAPL_SYNC/rc-$RKDAPL_ROLE"

out=$RKDAPL_SYNC/dmesg-$RKDAPL_ROLE.txt
kml=/sys/kernel/debug/kmemleak
if [ -e $kml ]; then
	echo scan > $kml
	echo scan > $kml
fi
dmesg > "$out"
[ -e $kml ] && { echo "--- kmemleak ---"; cat $kml; } >> "$out"
exit "$rc"
