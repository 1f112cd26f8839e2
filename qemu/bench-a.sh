#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE guest A (10.77.0.1) of `make bench` (scripts/bench.sh -> qemu/run-guests.sh):
# the serving side. Loads rkdapl.ko, samples/rkdapl_perf.ko and samples/raw_perf.ko, starts
# both kernel servers (ports 7700 and 7710; they serve guest B's clients one after the other
# until B sends op=stop), then starts the perftest server guest B asks for, one at a time:
# B writes $RKDAPL_SYNC/pt-req-<n> (the command line minus the peer address), A starts it,
# signals pt-ready-<n> once it listens, and pt-done-<n> when it has exited (or, when B writes
# pt-kill-<n> because its client failed, once it was stopped). B's pt-end ends the loop. Output: $RKDAPL_SYNC/pt-a-<n>.txt, bench-a.log lines on stdout.
#
# Everything is in functions that bash reads before running them, so editing this file while
# a guest runs it cannot change what the guest executes.
set -u

. "$RKDAPL_TOP/qemu/bench-lib.sh"

start_kservers() {
	local to=$((${RKDAPL_BENCH_TIMEOUT_S:-300} * 1000))
	(echo "server port=7700 size=4194304 timeout_ms=$to" > /sys/kernel/debug/rkdapl_perf/ctl
	 echo $? > /run/bench-rkdapl-server.rc) &
	KPID1=$!
	(echo "server port=7710 size=4194304 timeout_ms=$to" > /sys/kernel/debug/raw_perf/ctl
	 echo $? > /run/bench-raw-server.rc) &
	KPID2=$!
	local i
	for ((i = 0; i < 300; i++)); do
		listening 7700 && listening 7710 && return 0
		sleep 0.2
	done
	say "kernel servers not listening after 60 s"
	return 1
}

perftest_loop() {
	local n=0 i pid cmd
	while :; do
		for ((i = 0; ; i++)); do
			[ -e "$RKDAPL_SYNC/pt-req-$n" ] && break
			[ -e "$RKDAPL_SYNC/pt-end" ] && return 0
			[ -e "$RKDAPL_SYNC/rc-b" ] && { say "guest B ended"; return 1; }
			[ $i -gt 18000 ] && { say "no request from B for an hour"; return 1; }
			sleep 0.2
		done
		cmd=$(cat "$RKDAPL_SYNC/pt-req-$n")
		# The last server's listening cm_id outlives its process for a moment (ucma
		# closes it asynchronously); starting before it is gone would take that id for
		# the new server's and send B to connect to nobody (REJECTED, invalid service
		# ID; perftest then crashes in librdmacm).
		for ((i = 0; i < 100; i++)); do
			listening 18515 || break
			sleep 0.1
		done
		# shellcheck disable=SC2086  # the command line is split on purpose
		timeout -k 5 "${RKDAPL_BENCH_TIMEOUT_S:-300}" $cmd > "$RKDAPL_SYNC/pt-a-$n.txt" 2>&1 &
		pid=$!
		for ((i = 0; i < 300; i++)); do
			listening 18515 && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.2
		done
		rkdapl_signal "pt-ready-$n"
		# B asks for the server to go when its client failed (pt-kill-<n>).
		while kill -0 $pid 2>/dev/null; do
			[ -e "$RKDAPL_SYNC/pt-kill-$n" ] && { kill -TERM $pid; break; }
			sleep 0.2
		done
		wait $pid
		echo "exit $?" >> "$RKDAPL_SYNC/pt-a-$n.txt"
		rkdapl_signal "pt-done-$n"
		n=$((n + 1))
	done
}

main() {
	local top=$RKDAPL_TOP rc=0 r
	. "$top/qemu/guest-setup.sh" || return 1
	set_mtu
	insmod "$top/rkdapl.ko" && insmod "$top/samples/rkdapl_perf.ko" &&
		insmod "$top/samples/raw_perf.ko" || { say "insmod failed"; return 1; }
	start_kservers || rc=1
	rkdapl_signal a.ready
	say "kernel servers listening; serving perftest requests"
	perftest_loop || rc=1
	say "perftest done; waiting for the kernel servers (B sends op=stop)"
	rkdapl_wait b.kdone 3600 || { rc=1; kill -TERM $KPID1 $KPID2 2>/dev/null; }
	wait $KPID1 $KPID2
	for r in rkdapl raw; do
		[ "$(cat /run/bench-$r-server.rc 2>/dev/null)" = 0 ] || { say "$r server failed"; rc=1; }
	done
	dmesg | grep -E 'rkdapl_perf: server|raw_perf: server' | tail -n 200 > "$RKDAPL_SYNC/servers-a.txt"
	rmmod raw_perf rkdapl_perf rkdapl || rc=1
	say "done, rc $rc"
	return $rc
}

main "$@"
exit $?
