#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest B of `make check` (selftests/run.sh -> qemu/run-guests.sh), 10.77.0.2: loads rkdapl.ko,
# runs guest B's steps of the suites in selftests/suites.sh (its single-guest steps while guest A
# runs its own, then the client side of the two-guest steps), unloads rkdapl.ko and reports. When
# peerkill is selected it then serves one more connection and is killed in the middle of it
# (selftests/peerkill.sh). TAP lines go to $RKDAPL_SYNC/tap-b.txt.
set -u
. "$RKDAPL_TOP/selftests/guest-lib.sh" || exit 1
. "$RKDAPL_TOP/selftests/observe.sh" || exit 1
. "$RKDAPL_TOP/selftests/removal.sh" || exit 1
. "$RKDAPL_TOP/selftests/rping.sh" || exit 1
. "$RKDAPL_TOP/selftests/soak.sh" || exit 1
. "$RKDAPL_TOP/selftests/faults.sh" || exit 1
. "$RKDAPL_TOP/selftests/inject.sh" || exit 1
. "$RKDAPL_TOP/selftests/peerkill.sh" || exit 1
. "$RKDAPL_TOP/selftests/transport.sh" || exit 1
. "$RKDAPL_TOP/selftests/srq.sh" || exit 1
. "$RKDAPL_TOP/selftests/ip6.sh" || exit 1
. "$RKDAPL_TOP/selftests/netns.sh" || exit 1
. "$RKDAPL_TOP/selftests/mtu.sh" || exit 1
. "$RKDAPL_TOP/selftests/conn.sh" || exit 1
. "$RKDAPL_TOP/selftests/scale.sh" || exit 1
. "$RKDAPL_TOP/selftests/suites.sh" || exit 1

two_guest_client() {
	if rkdapl_wait a.listening 2400; then
		t_ok "two-guest: guest A is listening"
		run_kmod two-guest 1500 -- role=client dev=$RKDAPL_DEV peer="$RKDAPL_PEER_IP" port=${TWO_PORT:-7480} \
			connect_ms=120000
	else
		t_fail "two-guest: guest A is listening" "no $RKDAPL_SYNC/a.listening"
	fi
}

_log "guest B: start${RKDAPL_T:+, suites $RKDAPL_T}"
SUITE_PEERKILL_VICTIM=0
if load_provider; then
	suite_run b
	unload_provider
fi
finish
rc=$?
[ $SUITE_PEERKILL_VICTIM = 1 ] || exit $rc
# The results are in; then this guest is killed in the middle of a transfer with guest A.
rkdapl_signal peerkill.victim
bash "$TOP/qemu/guest-report.sh" $rc
peerkill_victim_b
exit $rc
