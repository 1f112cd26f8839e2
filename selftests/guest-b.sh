#!/bin/bash
# Guest B of `make check` (selftests/run.sh -> qemu/run-guests.sh), 10.77.0.2: loads
# rkdapl.ko, runs the allocation-failure sweeps (selftests/inject.sh) while guest A runs its
# single-guest suites, waits until guest A's server listens, runs rkdapl_test role=client
# against it (the two-guest data tests), then runs rdma-core's rping against guest A's kernel
# rping (selftests/rping.sh), the soak client (selftests/soak.sh) and the connection faults
# (selftests/faults.sh), the mismatched-MTU connections (selftests/mtu.sh) and the fast
# connect/disconnect cycles (selftests/conn.sh), and unloads rkdapl.ko. After rping: 8 EPs on
# guest A's SRQ (selftests/srq.sh). TAP lines go to $RKDAPL_SYNC/tap-b.txt.
# Having reported its results, it serves one more connection and is killed in the middle of
# it (selftests/peerkill.sh). RKDAPL_SUITES=stock (a distribution kernel) leaves out inject,
# soak, faults, mtu, conn, scale and scale: drop (guest A leaves out the same).
# While A runs its single-guest suites, B also runs the network namespace suite
# (selftests/netns.sh); after rping, the IPv6 suite (selftests/ip6.sh, client side).
# After the faults: the scale client, $RKDAPL_SCALE_EPS EPs at once, then 64 behind a qdisc
# that refuses packets (selftests/scale.sh).
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

full=1
[ "${RKDAPL_SUITES:-all}" = stock ] && full=0

two_guest_client() {
	if rkdapl_wait a.listening 2400; then
		t_ok "two-guest: guest A is listening"
		run_kmod two-guest 1500 -- role=client dev=$RKDAPL_DEV peer="$RKDAPL_PEER_IP" port=${TWO_PORT:-7480} \
			connect_ms=120000
	else
		t_fail "two-guest: guest A is listening" "no $RKDAPL_SYNC/a.listening"
	fi
}

_log "guest B: start"
if load_provider; then
	[ $full = 1 ] && inject_suite
	netns_suite
	siw_phase_b	# the suites again over siw0 (iWARP), "siw: ..." (selftests/transport.sh)
	_log "guest B: waiting for guest A's server"
	two_guest_client
	rping_guest_b
	srq_clients_b
	ip6_guest_b
	if [ $full = 1 ]; then
		soak_guest_b
		faults_guest_b
		# Peers with different MTUs; fast connect/disconnect cycles (issue 16).
		mtu_guest_b
		conn_guest_b
		scale_guest_b
		scale_drop_guest_b
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
