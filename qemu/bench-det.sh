#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE the one guest of `make bench` (scripts/bench.sh -> qemu/run-guests.sh --one),
# which QEMU runs with -icount shift=0,sleep=off: every guest instruction advances the virtual
# clock by 1 ns, idle time is skipped, and ktime in the guest counts instructions executed
# (by all vCPUs together) instead of host time. Both ends of every connection are in this
# guest (rxe loops packets to its own address back without the NIC), so no host I/O lands
# inside a measurement: the figures repeat.
#
# Per pass, per size: samples/rkdapl_perf.ko (tool=rkdapl), samples/raw_perf.ko (tool=raw)
# and rkdapl_rust_perf.ko (tool=rkdapl-rust: the same client on rkdapl's Rust API, against
# rkdapl_perf's server) run RDMA WRITE/READ/SEND bandwidth and latency (mode=event: the client sleeps
# until its completion comes, as a kernel ULP does; a spinning client would burn virtual
# time), then perftest's ib_send_bw with -e (sleeping on CQ events, for the same reason; its
# WRITE and READ tools spin, see main). The guest has 4 vCPUs: idle ones cost no
# virtual time, and perftest's user-space polling between its runs' phases leaves rxe room. Then the extra runs (RKDAPL_BENCH_EXTRA, one per line, the
# tool's ctl arguments after "tool op kind size"): the fast paths before and after, and the
# READ-gap test (raw_perf with rkdapl's completion context, IB_POLL_WORKQUEUE). Last, outside
# the measured passes, one traced READ run of each tool for the READ-gap evidence
# (rdma_core:cq_schedule/cq_process/cq_poll).
#
# Output in $RKDAPL_SYNC: kresults.txt (result lines with rep=<pass>, "fail ..." lines),
# pt-b-<n>.txt (perftest client output), ceiling.txt, trace-<tool>.txt.
# scripts/bench_report.py turns them into the CSV, the plot and the tables.
#
# Env (defaults): RKDAPL_BENCH_SIZES ("64 4096 65536 1048576 4194304"), RKDAPL_BENCH_BYTES
# (bytes a bandwidth run moves, 16 MiB), RKDAPL_BENCH_ITERS (most iterations, 1000; latency
# runs at most 200), RKDAPL_BENCH_TXDEPTH (16), RKDAPL_BENCH_REPEAT (3),
# RKDAPL_BENCH_WARMUP (2 passes before those, not reported),
# RKDAPL_BENCH_TOOLS ("rkdapl raw rkdapl-rust"; add perftest for ib_send_bw -e, see main),
# RKDAPL_BENCH_PERFTEST_OPS ("send"; see main),
# RKDAPL_BENCH_PERFTEST_TIMEOUT_S (5), RKDAPL_BENCH_PERFTEST_MAX (largest size, 1 MiB),
# RKDAPL_BENCH_EXTRA (see extra_runs),
# RKDAPL_BENCH_TRACE (1), RKDAPL_BENCH_TIMEOUT_S (each run, 600 virtual seconds),
# RKDAPL_BENCH_BASELINE (a directory holding another revision's rkdapl.ko and
# samples/rkdapl_perf.ko, built for the same kernel: each pass then also runs the rkdapl runs
# with those modules, reported as tool rkdapl-base, so that before and after are measured in
# one boot; across boots 64-byte figures differ by up to 4%, within one by 0.1%).
#
# Everything is in functions that bash reads before running them.
set -u

. "$RKDAPL_TOP/qemu/bench-lib.sh"

# ctl CPU LINE FILE: writes LINE to a tool's control file from a task pinned to CPU: the
# kernel tools run their command in the writing task, and a client or server that moved
# between CPUs from run to run would change which wake-ups cross CPUs (seen: 64-byte latency
# runs moving 4% between passes).
ctl() {
	taskset -c "$1" sh -c 'echo "$1" > "$2"' ctl "$2" "$3"
}

# krun TOOL OP KIND SIZE ITERS [KEY=VALUE...]: one kernel client run, in the foreground (a
# background watcher would wake inside the measurement; the tool times out by itself).
krun() {
	local tool=$1 op=$2 kind=$3 size=$4 n=$5 port=7700 d=rkdapl_perf t0=$SECONDS
	shift 5
	[ "$tool" = raw ] && { port=7710; d=raw_perf; }
	# the Rust client talks to rkdapl_perf's server (the same wire protocol)
	[ "$tool" = rkdapl-rust ] && d=rkdapl_rust_perf
	local cmd="client addr=$RKDAPL_IP port=$port op=$op kind=$kind size=$size iters=$n txdepth=$TXD mode=event timeout_ms=$((TMO * 1000)) $*"
	if ctl "$CLIENT_CPU" "$cmd" /sys/kernel/debug/$d/ctl; then
		# the baseline's rkdapl_perf reports as tool=rkdapl-base
		sed "s/ tool=rkdapl / tool=rkdapl$TAG /" /sys/kernel/debug/$d/result |
			sed "s/\$/ rep=$REP/" >> "$RKDAPL_SYNC/kresults.txt"
		say "$tool $op $kind $size x$n $*: $(cut -d' ' -f13- /sys/kernel/debug/$d/result) ($((SECONDS - t0)) s)"
	else
		echo "fail tool=$tool$TAG op=$op kind=$kind size=$size iters=$n $* rep=$REP" >> "$RKDAPL_SYNC/kresults.txt"
		say "$tool $op $kind $size x$n $*: FAILED; $(dmesg | grep "$d:" | tail -3 | tr '\n' ' ')"
		FAILS=$((FAILS + 1))
	fi
}

# ptrun OP SIZE ITERS: one perftest bandwidth run, server and client in this guest, both
# sleeping on CQ events (-e).
ptrun() {
	local op=$1 size=$2 n=$3 prog="ib_${1}_bw" args i spid rc=0 t0=$SECONDS
	local out=$RKDAPL_SYNC/pt-b-$PTN.txt
	# -e (sleep on CQ events) where perftest offers it: it refuses it for WRITE, whose client
	# (and server, in its end-of-test handshake) then spin in user space.
	args="-d rxe0 -R -F -s $size -n $n -t $((TXD < n ? TXD : n))"
	[ "$op" = write ] || args+=" -e"
	echo "# perftest $op bw $size $n $REP" > "$out"
	for ((i = 0; i < 100; i++)); do
		listening 18515 || break
		sleep 0.1
	done
	# shellcheck disable=SC2086  # the command line is split on purpose
	timeout -k 5 "$PTMO" taskset -c "$SERVER_CPU" $prog $args > "$RKDAPL_SYNC/pt-a-$PTN.txt" 2>&1 &
	spid=$!
	for ((i = 0; i < 300; i++)); do
		listening 18515 && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.1
	done
	# shellcheck disable=SC2086
	timeout -k 5 "$PTMO" taskset -c "$CLIENT_CPU" $prog $args "$RKDAPL_IP" >> "$out" 2>&1 || rc=$?
	echo "exit $rc" >> "$out"
	[ $rc = 0 ] || kill -TERM $spid 2>/dev/null
	wait $spid
	if [ $rc = 0 ]; then
		say "perftest $op bw $size x$n: $(grep -E '^ *[0-9]+ +[0-9]+ ' "$out" | tail -1 | tr -s ' ') ($((SECONDS - t0)) s)"
	else
		# Not counted as a failed run: see PTMO in main (the report lists it).
		say "perftest $op bw $size x$n: FAILED ($rc): $(tail -3 "$out" | tr '\n' ' ')"
	fi
	PTN=$((PTN + 1))
}

# The extra runs, one per line: "TOOL OP KIND SIZE [KEY=VALUE...]" (ITERS from the budget).
# Fast paths: buf=sparse (a DTO over 1 MiB of scattered pages is split into 8 work
# requests, of which rkdapl signals only the last), batch=8 (chained posting), signal=4
# (selective signalling) on 64-byte WRITEs; inline=64 for raw's baseline (rkdapl goes inline
# by itself where the QP allows it). The READ-gap test: raw_perf READs with cq=wq, the
# IB_POLL_WORKQUEUE context rkdapl's EVDs use, once sleeping (mode=event) and once spinning on
# the completion counter (mode=poll) as the issue asks; each next to raw's own softirq figures.
DEFAULT_EXTRA="rkdapl write bw 1048576 buf=sparse
rkdapl read bw 1048576 buf=sparse
rkdapl write bw 262144 buf=sparse
rkdapl write bw 64 batch=8
rkdapl-rust write bw 64 batch=8
raw write bw 64 batch=8
rkdapl write bw 64 signal=4
raw write bw 64 signal=4
raw write bw 64 inline=64
raw send bw 64 inline=64
raw read bw 64 cq=wq
raw read bw 4096 cq=wq
raw read bw 65536 cq=wq
raw read bw 1048576 cq=wq
raw read bw 4194304 cq=wq
raw read bw 65536 cq=wq mode=poll
raw read bw 1048576 cq=wq mode=poll
raw read bw 65536 cq=unbound
raw read bw 1048576 cq=unbound
raw write bw 65536 cq=wq
raw write bw 65536 cq=unbound
raw read lat 64 cq=wq
raw write lat 64 cq=wq
raw send lat 64 cq=wq
raw write lat 64 cq=unbound
raw send lat 64 cq=unbound"

extra_runs() {
	local line tool op kind size rest n only=${1:-}
	while read -r tool op kind size rest; do
		[ -n "$tool" ] || continue
		[ -z "$only" ] || [ "$tool" = "$only" ] || continue
		n=$(iters "$size" "$BUDGET" "$IMAX")
		[ "$kind" = lat ] && n=$(iters "$size" $((BUDGET / 4)) "$LMAX")
		# a later mode= overrides krun's mode=event
		# shellcheck disable=SC2086
		krun "$tool" "$op" "$kind" "$size" "$n" $rest
	done <<< "${RKDAPL_BENCH_EXTRA-$DEFAULT_EXTRA}"
}

# trace_read TOOL SIZE: one READ bandwidth run with ib_core's CQ trace events on, into
# trace-<tool>.txt (not a measurement: tracing costs instructions).
trace_read() {
	local t=/sys/kernel/tracing
	[ -d $t/events/rdma_core ] || mount -t tracefs nodev $t 2>/dev/null
	[ -d $t/events/rdma_core ] || { say "no rdma_core trace events"; return 0; }
	echo 0 > $t/tracing_on
	echo > $t/trace
	echo 16384 > $t/buffer_size_kb
	for e in cq_schedule cq_process cq_poll cq_reschedule cq_modify; do
		[ -e $t/events/rdma_core/$e/enable ] && echo 1 > $t/events/rdma_core/$e/enable
	done
	echo 1 > $t/tracing_on
	REP=trace krun "$1" read bw "$2" "$(iters "$2" "$BUDGET" "$IMAX")" ${3:-}
	echo 0 > $t/tracing_on
	cat $t/trace > "$RKDAPL_SYNC/trace-$1${3:+-${3//=/}}.txt"
	echo 0 > $t/events/rdma_core/enable
}

# rkdapl_load DIR: rkdapl.ko and samples/rkdapl_perf.ko of DIR loaded (and this tree's
# rkdapl_rust_perf.ko, which needs this tree's rkdapl.ko), its server started on port 7700
# (pinned, in the background: KPID1).
rkdapl_load() {
	local i
	insmod "$1/rkdapl.ko" && insmod "$1/samples/rkdapl_perf.ko" || { say "insmod from $1 failed"; return 1; }
	if [ "$1" = "$RKDAPL_TOP" ]; then
		insmod "$1/rkdapl_rust_perf.ko" || { say "insmod rkdapl_rust_perf failed"; return 1; }
	fi
	(ctl "$SERVER_CPU" "server port=7700 size=4194304 timeout_ms=3600000" /sys/kernel/debug/rkdapl_perf/ctl
	 echo $? > /run/bench-rkdapl-server.rc) &
	KPID1=$!
	for ((i = 0; i < 300; i++)); do
		listening 7700 && return 0
		sleep 0.2
	done
	say "rkdapl server from $1 not listening"
	return 1
}

# rkdapl_unload: stops the rkdapl_perf server and unloads rkdapl_rust_perf (if loaded),
# rkdapl_perf and rkdapl.
rkdapl_unload() {
	ctl "$CLIENT_CPU" "client addr=$RKDAPL_IP port=7700 op=stop" /sys/kernel/debug/rkdapl_perf/ctl ||
		{ say "rkdapl_perf: stop failed"; return 1; }
	wait $KPID1
	[ "$(cat /run/bench-rkdapl-server.rc 2>/dev/null)" = 0 ] || { say "rkdapl server failed"; return 1; }
	if [ -d /sys/module/rkdapl_rust_perf ]; then rmmod rkdapl_rust_perf || return 1; fi
	rmmod rkdapl_perf rkdapl
}

# baseline_pass SIZES: the rkdapl runs of one pass (and its rkdapl extra runs) with the
# modules of RKDAPL_BENCH_BASELINE, reported as tool rkdapl-base; then back to this tree's.
baseline_pass() {
	local size op nb nl
	rkdapl_unload && rkdapl_load "$BASE" || return 1
	TAG=-base
	for size in $1; do
		nb=$(iters "$size" "$BUDGET" "$IMAX")
		nl=$(iters "$size" $((BUDGET / 4)) "$LMAX")
		for op in write read send; do krun rkdapl $op bw "$size" "$nb"; done
		for op in write read send; do krun rkdapl $op lat "$size" "$nl"; done
	done
	extra_runs rkdapl
	TAG=
	rkdapl_unload && rkdapl_load "$RKDAPL_TOP"
}

main() {
	local top=$RKDAPL_TOP size op tool nb nl rc=0 to
	local sizes=${RKDAPL_BENCH_SIZES:-64 4096 65536 1048576 4194304}
	# perftest is opt-in (RKDAPL_BENCH_TOOLS="rkdapl raw perftest"): see PTOPS below.
	local tools=${RKDAPL_BENCH_TOOLS:-rkdapl raw rkdapl-rust}
	local reps=${RKDAPL_BENCH_REPEAT:-3}
	BUDGET=${RKDAPL_BENCH_BYTES:-16777216}
	IMAX=${RKDAPL_BENCH_ITERS:-1000}
	LMAX=200
	TXD=${RKDAPL_BENCH_TXDEPTH:-16}
	TMO=${RKDAPL_BENCH_TIMEOUT_S:-600}
	# perftest polls in user space: ib_write_bw refuses -e, and ib_read_bw -e still spins
	# somewhere (its end-of-test handshake). Under -icount a spinning vCPU's instructions are
	# virtual time and it takes the emulated CPUs from rxe's workers (seen: one 64-byte WRITE
	# per 3.4 ms, a timer tick; ib_write_bw 64 KiB did not finish in 60 virtual s, ib_read_bw
	# -e 1 MiB not in 600), so only ib_send_bw -e runs unless asked for. It too hangs
	# spinning now and then, at its end-of-test handshake: it gets 5 virtual s (a whole run
	# of 16 MiB takes 0.4), since spinning through a timeout costs minutes of real time
	# (20 virtual s took 8 min; once a hung pair outlived its 5 s for over 7 min), which is
	# why perftest is not in the default tools.
	PTOPS=${RKDAPL_BENCH_PERFTEST_OPS:-send}
	PTMO=${RKDAPL_BENCH_PERFTEST_TIMEOUT_S:-5}
	# ib_send_bw -e of 4 MiB messages did not end (spinning) within its 60 s: up to 1 MiB.
	PTMAX=${RKDAPL_BENCH_PERFTEST_MAX:-1048576}
	FAILS=0
	PTN=0
	REP=0
	# Where everything runs is fixed, so that a run cannot take another mix of cross-CPU
	# wake-ups than the next: the client's and the servers' tasks are pinned (ctl), and
	# unbound workqueues (rxe's tasks, and so the CQ work they queue on their CPU) run on CPU
	# 3 only. Seen without it: 64-byte latency runs and median post costs moving between two
	# values (an IPI or not) from pass to pass, by up to 28%.
	CLIENT_CPU=1
	SERVER_CPU=2
	TAG=
	BASE=${RKDAPL_BENCH_BASELINE:-}
	echo 8 > /sys/devices/virtual/workqueue/cpumask || say "cannot pin unbound workqueues"
	set_mtu
	: > "$RKDAPL_SYNC/kresults.txt"
	insmod "$top/rkdapl.ko" && insmod "$top/samples/rkdapl_perf.ko" &&
		insmod "$top/rkdapl_rust_perf.ko" &&
		insmod "$top/samples/raw_perf.ko" || { say "insmod failed"; return 1; }
	echo "ceiling size=1048576 iters=32" > /sys/kernel/debug/rkdapl_perf/ctl &&
		cat /sys/kernel/debug/rkdapl_perf/result > "$RKDAPL_SYNC/ceiling.txt"
	say "$(cat "$RKDAPL_SYNC/ceiling.txt")"
	to=3600000	# the longest the tools take (ms of virtual time)
	(ctl "$SERVER_CPU" "server port=7700 size=4194304 timeout_ms=$to" /sys/kernel/debug/rkdapl_perf/ctl
	 echo $? > /run/bench-rkdapl-server.rc) &
	KPID1=$!
	(ctl "$SERVER_CPU" "server port=7710 size=4194304 timeout_ms=$to" /sys/kernel/debug/raw_perf/ctl
	 echo $? > /run/bench-raw-server.rc) &
	KPID2=$!
	for ((i = 0; i < 300; i++)); do
		listening 7700 && listening 7710 && break
		sleep 0.2
	done
	say "icount: $(grep -o 'icount[^ ]*' /proc/cmdline || echo 'see the QEMU command line'); sizes $sizes; tools $tools; txdepth $TXD; $reps passes"
	# Passes up to 0 warm up (first use of each path: slab growth, kworkers started, cold
	# caches) and are not reported. Seen with one: 64-byte latency runs 2-4% slower in the
	# first reported pass than in the next two, which agreed within 0.3%.
	local warm=${RKDAPL_BENCH_WARMUP:-2}
	for ((REP = 1 - warm; REP <= reps; REP++)); do
		for size in $sizes; do
			nb=$(iters "$size" "$BUDGET" "$IMAX")
			nl=$(iters "$size" $((BUDGET / 4)) "$LMAX")
			for tool in $tools; do
				if [ "$tool" = perftest ]; then
					[ "$size" -le "$PTMAX" ] || continue
					for op in $PTOPS; do ptrun $op "$size" "$nb"; done
					continue
				fi
				for op in write read send; do krun "$tool" $op bw "$size" "$nb"; done
				for op in write read send; do krun "$tool" $op lat "$size" "$nl"; done
			done
		done
		extra_runs
		if [ -n "$BASE" ]; then
			baseline_pass "$sizes" || { say "baseline pass failed"; FAILS=$((FAILS + 1)); BASE=; }
		fi
	done
	if [ "${RKDAPL_BENCH_TRACE:-1}" = 1 ]; then
		trace_read rkdapl 1048576
		trace_read raw 1048576
		trace_read raw 1048576 cq=wq
		trace_read raw 1048576 cq=unbound
	fi
	# One server after the other: a server's shell exiting while the next stop is written
	# would interrupt that write (SIGCHLD: -EINTR).
	ctl "$CLIENT_CPU" "client addr=$RKDAPL_IP port=7700 op=stop" /sys/kernel/debug/rkdapl_perf/ctl ||
		{ say "rkdapl_perf: stop failed"; rc=1; }
	wait $KPID1
	ctl "$CLIENT_CPU" "client addr=$RKDAPL_IP port=7710 op=stop" /sys/kernel/debug/raw_perf/ctl ||
		{ say "raw_perf: stop failed"; rc=1; }
	wait $KPID2
	for r in rkdapl raw; do
		[ "$(cat /run/bench-$r-server.rc 2>/dev/null)" = 0 ] || { say "$r server failed"; rc=1; }
	done
	rdma statistic show link rxe0/1 > "$RKDAPL_SYNC/rxe-stats.txt" 2>&1
	rmmod rkdapl_rust_perf raw_perf rkdapl_perf rkdapl || rc=1
	say "done: $FAILS failed runs"
	[ $FAILS = 0 ] || rc=1
	return $rc
}

main "$@"
exit $?
