#!/bin/bash
# Guest B of `make check` (selftests/run.sh -> qemu/run-guests.sh), 10.77.0.2: loads
# rkdapl.ko, runs the allocation-failure sweeps (selftests/inject.sh) while guest A runs its
# single-guest suites, waits until guest A's server listens, runs rkdapl_test role=client
# against it (the two-guest data tests), then runs rdma-core's rping against guest A's kernel
# rping (selftests/rping.sh), the soak client (selftests/soak.sh) and the connection faults
# (selftests/faults.sh), and unloads rkdapl.ko. TAP lines go to $RKDAPL_SYNC/tap-b.txt.
# Having reported its results, it serves one more connection and is killed in the middle of
# it (selftests/peerkill.sh). RKDAPL_SUITES=stock (a distribution kernel) runs only the
# two-guest and rping suites (no fault injection there; guest A leaves out the same).
# After the faults: the scale client, $RKDAPL_SCALE_EPS EPs at once (selftests/scale.sh).
set -u
. "$RKDAPL_TOP/selftests/guest-lib.sh" || exit 1
. "$RKDAPL_TOP/selftests/rping.sh" || exit 1
. "$RKDAPL_TOP/selftests/soak.sh" || exit 1
. "$RKDAPL_TOP/selftests/faults.sh" || exit 1
. "$RKDAPL_TOP/selftests/inject.sh" || exit 1
. "$RKDAPL_TOP/selftests/peerkill.sh" || exit 1
. "$RKDAPL_TOP/selftests/scale.sh" || exit 1

full=1
[ "${RKDAPL_SUITES:-all}" = stock ] && full=0

_log "guest B: start"
if load_provider; then
	[ $full = 1 ] && inject_suite
	_log "guest B: waiting for guest A's server"
	if rkdapl_wait a.listening 2400; then
		t_ok "two-guest: guest A is listening"
		run_kmod two-guest 1500 -- role=client dev=rxe0 peer="$RKDAPL_PEER_IP" port=7480 \
			connect_ms=120000
	else
		t_fail "two-guest: guest A is listening" "no $RKDAPL_SYNC/a.listening"
	fi
	rping_guest_b
	if [ $full = 1 ]; then
		soak_guest_b
		faults_guest_b
		scale_guest_b
	fi
	unload_provider
fi
finish
rc=$?
[ "${RKDAPL_PAIR:-1}" = 1 ] && [ $full = 1 ] || exit $rc
# The results are in; then this guest is killed in the middle of a transfer with guest A.
rkdapl_signal peerkill.victim
bash "$TOP/qemu/guest-report.sh" $rc
peerkill_victim_b
exit $rc
