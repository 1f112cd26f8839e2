#!/bin/bash
# Guest A of `make check` (selftests/run.sh -> qemu/run-guests.sh), 10.77.0.1:
#   module: load rkdapl.ko, rmmod refused while a consumer holds it
#   kunit:     the KUnit cases that ran at rkdapl.ko's insmod (its #[kunit_tests] suites and
#              the RDMA layer's), one test per case (selftests/guest-lib.sh)
#   badarg:    rkdapl_test role=badarg (bad arguments; state errors on loopback connections)
#   loopback:  rkdapl_test role=loopback (server kthread + client over the guest's own IP)
#   fuzz:      rkdapl_test role=fuzz, random API call sequences, seeds 1, 2 and 3
#              (selftests/fuzz.sh; RKDAPL_FUZZ_SEEDS overrides them)
#   rust:      samples/rust/rkdapl_rust_sample.ko, a Rust consumer of rkdapl's Rust API
#              (selftests/rust.sh)
#   observe:   rkdapl_observe.ko holds a live connection; rdma res, debugfs and trace events
#              are checked against it (selftests/observe.sh)
#   removal:   rdma link delete rxe0 under live traffic, then rxe0 re-added (selftests/removal.sh;
#              only with RKDAPL_PAIR=0 or after the two-guest suite, which needs rxe0); then
#              again with an EP freed while the removal's BROKEN event is in its upcall
#   soak:      rkdapl_soak.ko role=server for guest B's 1000 connection cycles (selftests/soak.sh)
#   faults:    serves guest B's soak cycles over a lossy wire (selftests/faults.sh)
#   mtu:       serves guest B's connections with the NICs' MTUs set apart (selftests/mtu.sh)
#   conn:      accepts guest B's fast connect/disconnect cycles; every EP ends once (selftests/conn.sh)
#   peerkill:  streams RDMA WRITE/READ to guest B, which is killed mid-transfer (selftests/peerkill.sh)
#   srq:       shared receive queues (selftests/srq.sh): badarg, loopback, 8 of guest B's EPs on
#              one SRQ (two-guest, after rping), device removal with an SRQ alive
#   scale:     rkdapl_scale.ko role=server: guest B's $RKDAPL_SCALE_EPS EPs (default 1024) on 4 PSPs,
#              8 EVDs, 2 PZs, 64 KiB each verified, then torn down (selftests/scale.sh);
#              then 64 EPs again behind netem qdiscs that refuse packets (scale: drop: ...)
#   unload:    a consumer unloaded with all its objects open; rkdapl frees them
#   two-guest: rkdapl_test role=server; guest B connects once $RKDAPL_SYNC/a.listening exists
#              (skipped with RKDAPL_PAIR=0, i.e. run-guests.sh --one)
#   rping:     samples/rkdapl_rping.ko as server for B's rdma-core `rping -c`, then as client
#              of B's `rping -s` (selftests/rping.sh; also skipped with RKDAPL_PAIR=0)
#   reset:     rkdapl_test role=reset: EPs reset after a disconnect and connected again, several
#              rounds of verified data; refusals (selftests/ports.sh)
#   ports:     rkdapl_test role=ports: `ip link set dev <rxe0's netdev> down`, then `up`, under a
#              connected loopback pair: PORT_ERROR then PORT_ACTIVE on the async EVD, the
#              connection survives; then a QP access error (EP_BROKEN). Last, after the
#              two-guest suites and removal, when nothing else uses the link (selftests/ports.sh)
#   ip6:       the two-guest data tests and rping both ways over IPv6 (fd00:77::1, server side;
#              selftests/ip6.sh; skipped with RKDAPL_PAIR=0)
#   blockdev:  the rkdblk remote block device (selftests/blockdev.sh): rkdblk_srv.ko exports a
#              brd RAM disk, the Rust blk-mq client
#              rkdblk.ko connects over the loopback; mkfs.ext4, files and checksums across a
#              disconnect/reconnect, fio with crc32c verify (also through a 4-DTO server send
#              queue), the server unloaded under a reader, rdma link delete under a writer
#              (runs after rust, while guest B runs its own suites)
#   module: unload rkdapl
# TAP lines go to $RKDAPL_SYNC/tap-a.txt; exits non-zero if any test failed.
set -u
. "$RKDAPL_TOP/selftests/guest-lib.sh" || exit 1
. "$RKDAPL_TOP/selftests/observe.sh" || exit 1
. "$RKDAPL_TOP/selftests/removal.sh" || exit 1
. "$RKDAPL_TOP/selftests/soak.sh" || exit 1
. "$RKDAPL_TOP/selftests/faults.sh" || exit 1
. "$RKDAPL_TOP/selftests/rping.sh" || exit 1
. "$RKDAPL_TOP/selftests/peerkill.sh" || exit 1
. "$RKDAPL_TOP/selftests/rust.sh" || exit 1
. "$RKDAPL_TOP/selftests/transport.sh" || exit 1
. "$RKDAPL_TOP/selftests/srq.sh" || exit 1
. "$RKDAPL_TOP/selftests/ports.sh" || exit 1
. "$RKDAPL_TOP/selftests/ip6.sh" || exit 1
. "$RKDAPL_TOP/selftests/mtu.sh" || exit 1
. "$RKDAPL_TOP/selftests/conn.sh" || exit 1
. "$RKDAPL_TOP/selftests/scale.sh" || exit 1
. "$RKDAPL_TOP/selftests/blockdev.sh" || exit 1
. "$RKDAPL_TOP/selftests/fuzz.sh" || exit 1

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

# RKDAPL_SUITES=stock (a distribution kernel: no KUnit, no fault injection, no debug checks)
# leaves out kunit, and of the two-guest suites soak, faults, mtu, conn, scale, scale: drop and
# peerkill (guest B does the same).
full=1
[ "${RKDAPL_SUITES:-all}" = stock ] && full=0

_log "guest A: start"
if load_provider; then
	[ $full = 1 ] && kunit_suite
	check_refcount
	run_kmod badarg 1200 -- role=badarg dev=rxe0 peer="$RKDAPL_IP" port=7490
	run_kmod loopback 1200 -- role=loopback dev=rxe0 peer="$RKDAPL_IP" port=7500
	fuzz_suite
	reset_suite
	rust_suite
	# The rkdblk remote block device (issue 17). Here, while guest B runs its own suites, and
	# before observe_suite: blockdev_removal deletes and re-adds rxe0, which must not hit
	# observe's connection.
	blockdev_suite
	blockdev_send_queue
	blockdev_timeout
	blockdev_removal
	observe_suite
	siw_phase_a	# the suites again over siw0 (iWARP), "siw: ..." (selftests/transport.sh)
	srq_guest_a
	if [ "${RKDAPL_PAIR:-1}" = 1 ]; then
		serve_two_guest
		rping_guest_a
		srq_serve_a
		ip6_guest_a
		if [ $full = 1 ]; then
			soak_guest_a
			faults_guest_a
			mtu_guest_a
			conn_guest_a
			scale_guest_a
			scale_drop_guest_a
			peerkill_guest_a
		fi
	fi
	removal_suite
	removal_free_suite
	# After removal_suite: its observe connection (held since observe_suite) must see the
	# removal it causes itself, not this one's.
	srq_removal
	# Takes guest A's link down and up: only once guest B is done with it.
	ports_suite
	unload_suite
	unload_provider
fi
finish
