#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Guest A of `make check` (selftests/run.sh -> qemu/run-guests.sh), 10.77.0.1: loads rkdapl.ko,
# checks that rmmod is refused while a consumer holds it, runs guest A's steps of the suites in
# selftests/suites.sh (all of them, or those of RKDAPL_T: make check T=...), unloads rkdapl.ko.
# With one guest (RKDAPL_PAIR=0) it also runs the single-guest steps guest B would run. What each
# suite covers: docs/testing.md. TAP lines go to $RKDAPL_SYNC/tap-a.txt; exits non-zero if any
# test failed.
set -u
. "$RKDAPL_TOP/selftests/guest-lib.sh" || exit 1
. "$RKDAPL_TOP/selftests/observe.sh" || exit 1
. "$RKDAPL_TOP/selftests/removal.sh" || exit 1
. "$RKDAPL_TOP/selftests/soak.sh" || exit 1
. "$RKDAPL_TOP/selftests/faults.sh" || exit 1
. "$RKDAPL_TOP/selftests/rping.sh" || exit 1
. "$RKDAPL_TOP/selftests/peerkill.sh" || exit 1
. "$RKDAPL_TOP/selftests/rust.sh" || exit 1
. "$RKDAPL_TOP/selftests/first.sh" || exit 1
. "$RKDAPL_TOP/selftests/transport.sh" || exit 1
. "$RKDAPL_TOP/selftests/srq.sh" || exit 1
. "$RKDAPL_TOP/selftests/ports.sh" || exit 1
. "$RKDAPL_TOP/selftests/ip6.sh" || exit 1
. "$RKDAPL_TOP/selftests/mtu.sh" || exit 1
. "$RKDAPL_TOP/selftests/conn.sh" || exit 1
. "$RKDAPL_TOP/selftests/scale.sh" || exit 1
. "$RKDAPL_TOP/selftests/blockdev.sh" || exit 1
. "$RKDAPL_TOP/selftests/blkreconn.sh" || exit 1
. "$RKDAPL_TOP/selftests/blkmpath.sh" || exit 1
. "$RKDAPL_TOP/selftests/fuzz.sh" || exit 1
. "$RKDAPL_TOP/selftests/inject.sh" || exit 1
. "$RKDAPL_TOP/selftests/netns.sh" || exit 1
. "$RKDAPL_TOP/selftests/suites.sh" || exit 1

# Starts the two-guest server, signals a.listening once its PSP exists, and stops it if guest
# B ends without finishing the session.
serve_two_guest() {
	local pid i=0 pidf=/run/rkdapl-test-insmod-two-guest.pid
	rm -f "$pidf"
	run_kmod two-guest 1500 -- role=server dev=$RKDAPL_DEV port=${TWO_PORT:-7480} listen_ms=1200000 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_test: # listening on port ${TWO_PORT:-7480}" && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal a.listening
	i=0
	while kill -0 $pid 2>/dev/null; do
		# If B is done, the server has timeout_ms to see the disconnect; then stop it.
		if [ -e "$RKDAPL_SYNC/rc-b" ] && [ $((i++)) -ge 60 ] && [ -s "$pidf" ]; then
			echo "rkdapl-selftest: guest B ended, stopping the server"
			kill -TERM "$(< "$pidf")" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait $pid
}

_log "guest A: start${RKDAPL_T:+, suites $RKDAPL_T}"
if load_provider; then
	check_refcount
	suite_run a
	unload_provider
fi
finish
