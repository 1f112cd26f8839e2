#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE guest B (10.77.0.2) of `make bench` (scripts/bench.sh -> qemu/run-guests.sh):
# the measuring side. For every size: rkdapl_perf and raw_perf clients (write/read/send
# bandwidth, write/read latency) against guest A's kernel servers, then perftest (ib_write_bw,
# ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat) against the perftest server guest A starts
# on request (see qemu/bench-a.sh); finally the crc32 + memcpy ceiling. All in one boot.
#
# Output in $RKDAPL_SYNC: kresults.txt (the kernel tools' result lines, "fail ..." lines for
# runs that failed), pt-b-<n>.txt (perftest client output, first line "# tool op kind size"),
# ceiling.txt. scripts/bench_report.py turns them into results.csv, plot.png and the tables.
#
# Env: RKDAPL_BENCH_SIZES (bytes, default "2 64 4096 65536 1048576 4194304"),
# RKDAPL_BENCH_BYTES (bytes a bandwidth run moves, default 4 MiB; latency runs half of it),
# RKDAPL_BENCH_ITERS (most iterations, default 200), RKDAPL_BENCH_TXDEPTH (16),
# RKDAPL_BENCH_MODE (the kernel tools' modes: "poll", "event" or "poll event"; poll),
# RKDAPL_BENCH_TOOLS ("rkdapl raw perftest"),
# RKDAPL_BENCH_SIGNAL (signalling intervals tried on top for the kernel tools' WRITE bandwidth:
# selective signalling, default "4": a quarter of txdepth, so the window keeps moving; "" for none),
# RKDAPL_BENCH_TIMEOUT_S (each run, 300), RKDAPL_BENCH_REPEAT (passes over the whole matrix,
# 3; every result line carries rep=<pass>, and the report takes the median over passes).
#
# Everything is in functions that bash reads before running them.
set -u

. "$RKDAPL_TOP/qemu/bench-lib.sh"

# krun TOOL OP KIND SIZE ITERS MODE [SIGNAL]: one kernel client run.
krun() {
	local tool=$1 op=$2 kind=$3 size=$4 n=$5 mode=$6 sig=${7:-1} port=7700 d=rkdapl_perf rc=0 t0=$SECONDS
	[ "$tool" = raw ] && { port=7710; d=raw_perf; }
	local cmd="client addr=$RKDAPL_PEER_IP port=$port op=$op kind=$kind size=$size iters=$n txdepth=$TXD signal=$sig mode=$mode timeout_ms=$((TMO * 1000))"
	local pid i
	(echo "$cmd" > /sys/kernel/debug/$d/ctl) &
	pid=$!
	# The tool times out by itself after TMO s; if it does not, show where it is stuck.
	for ((i = 0; i < (TMO + 30) * 5; i++)); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 $pid 2>/dev/null; then
		say "$tool $op $kind $size: still running after $((TMO + 30)) s; its kernel stack:"
		cat /proc/$pid/stack 2>&1 | tee -a "$RKDAPL_SYNC/stuck-b.txt"
		kill -TERM $pid
	fi
	wait $pid || rc=$?
	if [ $rc = 0 ]; then
		echo "$(cat /sys/kernel/debug/$d/result) rep=$REP" >> "$RKDAPL_SYNC/kresults.txt"
		say "$tool $mode $op $kind $size x$n signal $sig: $(cut -d' ' -f13- /sys/kernel/debug/$d/result) ($((SECONDS - t0)) s)"
	else
		echo "fail tool=$tool op=$op kind=$kind size=$size iters=$n mode=$mode rc=$rc rep=$REP" >> "$RKDAPL_SYNC/kresults.txt"
		say "$tool $mode $op $kind $size x$n: FAILED ($rc); $(dmesg | grep "$d:" | tail -3 | tr '\n' ' ')"
		FAILS=$((FAILS + 1))
	fi
}

# ptone PROG ARGS OUT: one perftest client run against a server guest A starts for it; its
# output (and "exit <status>") in OUT. Returns the client's status (99: no server).
ptone() {
	local prog=$1 args=$2 out=$3 rc=0
	echo "$prog $args" > "$RKDAPL_SYNC/pt-req-$PTN.tmp"
	mv "$RKDAPL_SYNC/pt-req-$PTN.tmp" "$RKDAPL_SYNC/pt-req-$PTN"
	if rkdapl_wait "pt-ready-$PTN" 120; then
		# shellcheck disable=SC2086
		timeout -k 5 "$TMO" $prog $args "$RKDAPL_PEER_IP" >> "$out" 2>&1 || rc=$?
		echo "exit $rc" >> "$out"
	else
		rc=99
	fi
	[ $rc = 0 ] || rkdapl_signal "pt-kill-$PTN"
	rkdapl_wait "pt-done-$PTN" $((TMO + 30)) || { [ $rc != 0 ] || rc=98; }
	PTN=$((PTN + 1))
	return $rc
}

# ptrun OP KIND SIZE ITERS: one perftest run, server in guest A. A run whose connection is
# refused is repeated once: with -R, perftest's latency tools connect twice (parameter
# exchange, then the test QP) and the server's second listen can come after the client's
# connect (REJECTED, reason 8: no listener); perftest 4.5 then crashes in librdmacm.
ptrun() {
	local op=$1 kind=$2 size=$3 n=$4 prog="ib_${1}_${2}" args rc=0 t0=$SECONDS try
	local out=$RKDAPL_SYNC/pt-b-$PTN.txt
	args="-d rxe0 -R -F -s $size -n $n"
	[ "$kind" = bw ] && args+=" -t $((TXD < n ? TXD : n))"
	echo "# perftest $op $kind $size $n $REP" > "$out"
	for try in 1 2; do
		rc=0
		ptone "$prog" "$args" "$out" || rc=$?
		[ $rc = 0 ] && break
		grep -q REJECTED "$out" || break
		[ $try = 1 ] && say "perftest $op $kind $size: connection refused, once more" &&
			echo "# retry after: REJECTED" >> "$out"
	done
	if [ $rc = 0 ]; then
		say "perftest $op $kind $size x$n: $(grep -E '^ *[0-9]+ +[0-9]+ ' "$out" | tail -1 | tr -s ' ') ($((SECONDS - t0)) s)"
	else
		say "perftest $op $kind $size x$n: FAILED ($rc): $(tail -3 "$out" 2>/dev/null | tr '\n' ' ')"
		FAILS=$((FAILS + 1))
	fi
}

main() {
	local top=$RKDAPL_TOP size op tool mode nb nl rc=0 order
	local sizes=${RKDAPL_BENCH_SIZES:-2 64 4096 65536 1048576 4194304}
	local budget=${RKDAPL_BENCH_BYTES:-4194304} imax=${RKDAPL_BENCH_ITERS:-200}
	local tools=${RKDAPL_BENCH_TOOLS:-rkdapl raw perftest}
	TXD=${RKDAPL_BENCH_TXDEPTH:-16}
	MODES=${RKDAPL_BENCH_MODE:-poll}
	SIGNALS=${RKDAPL_BENCH_SIGNAL-4}
	TMO=${RKDAPL_BENCH_TIMEOUT_S:-300}
	local reps=${RKDAPL_BENCH_REPEAT:-3}
	FAILS=0
	PTN=0
	. "$top/qemu/guest-setup.sh" || return 1
	set_mtu
	: > "$RKDAPL_SYNC/kresults.txt"
	insmod "$top/rkdapl.ko" && insmod "$top/samples/rkdapl_perf.ko" &&
		insmod "$top/samples/raw_perf.ko" || { say "insmod failed"; return 1; }
	echo "ceiling size=1048576 iters=32" > /sys/kernel/debug/rkdapl_perf/ctl &&
		cat /sys/kernel/debug/rkdapl_perf/result > "$RKDAPL_SYNC/ceiling.txt"
	say "$(cat "$RKDAPL_SYNC/ceiling.txt")"
	rkdapl_wait a.ready 600 || return 1
	say "sizes: $sizes; tools: $tools; txdepth $TXD, modes $MODES; $reps passes"
	# Passes over the whole matrix, not repeats of one run: a slow spell of the host then
	# hits every tool alike instead of one tool's figures.
	for ((REP = 1; REP <= reps; REP++)); do
	# The tools' order alternates between passes (rkdapl first, then last, ...): a tool that
	# always ran just before another would carry any drift of the host into their ratio.
	order=$tools
	[ $((REP % 2)) = 0 ] && order=$(echo "$tools" | tr ' ' '\n' | tac | tr '\n' ' ')
	for size in $sizes; do
		nb=$(iters "$size" "$budget" "$imax")
		nl=$(iters "$size" $((budget / 2)) "$imax")
		for tool in $order; do
			if [ "$tool" = perftest ]; then
				for op in write read send; do ptrun $op bw "$size" "$nb"; done
				for op in write read; do ptrun $op lat "$size" "$nl"; done
				continue
			fi
			for mode in $MODES; do
				for op in write read send; do krun "$tool" $op bw "$size" "$nb" "$mode"; done
				for op in write read; do krun "$tool" $op lat "$size" "$nl" "$mode"; done
				for sig in $SIGNALS; do
					krun "$tool" write bw "$size" "$nb" "$mode" "$sig"
				done
			done
		done
	done
	done
	rkdapl_signal pt-end
	for tool in rkdapl_perf raw_perf; do
		port=7700
		[ $tool = raw_perf ] && port=7710
		echo "client addr=$RKDAPL_PEER_IP port=$port op=stop" > /sys/kernel/debug/$tool/ctl ||
			{ say "$tool: stop failed"; rc=1; }
	done
	rkdapl_signal b.kdone
	rdma statistic show link rxe0/1 > "$RKDAPL_SYNC/rxe-stats-b.txt" 2>&1
	rmmod raw_perf rkdapl_perf rkdapl || rc=1
	say "done: $FAILS failed runs"
	[ $FAILS = 0 ] || rc=1
	return $rc
}

main "$@"
exit $?
