#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh): the scale test.
#
#   scale_guest_a   rkdapl_scale.ko role=server: $SCALE_EPS EPs accepted on 4 PSPs, spread
#                   over 8 EVDs and 2 PZs; each EP's grant ($SCALE_BYTES, 16 KiB) is
#                   RDMA-written by the client and every byte compared
#   scale_guest_b   rkdapl_scale.ko role=client: connects the $SCALE_EPS EPs (32 set-ups at a
#                   time), and once all are up, writes and notifies, 64 EPs at a time; then
#                   disconnects them all at once
#   scale_drop_guest_a, scale_drop_guest_b
#                   the same with 64 EPs of 64 KiB while each side's NIC has a netem qdisc that refuses
#                   a packet (NET_XMIT_DROP) when 4 wait, each held 2 ms: rdma_rxe must treat
#                   a refused packet as lost, for RC to resend, not fail the QP (it did until
#                   qemu/kernel-patches/0002; Debian's rdma_rxe still does, so debug kernel
#                   only). Passes if every EP verified and the qdiscs refused packets.
#
# Each side checks insmod's status and the module's "N EPs, N verified" line, then that the
# device's object counts in `rdma res` (pd, cq, qp, cm_id, mr) are back at what they were
# before, and SUnreclaim within $SCALE_SLAB_KB KiB (a coarse bound: KASAN's quarantine holds
# freed objects; kmemleak, in the splat scan, checks for leaks exactly). The figures (set-up
# rate, memory per EP, data rate, teardown time) are TAP diagnostics and are kept in
# $RKDAPL_SYNC/scale-<side>-<EPs>.txt.
# Each side also prints what rxe0's transport counters (sysfs hw_counters) and its network
# device's qdisc drops did during the run ("# scale: <side>: counters during the run: ..."):
# rdma_rxe without qemu/kernel-patches/0002 (e.g. Debian's) moves a QP whose packet the qdisc
# refused (send_err) to the error state without an async event, and the test then sees only
# FLUSHED completions (docs/testing.md, "Scale at 1024 EPs"); with it, send_err still counts
# the packet and RC resends it.
# RKDAPL_SCALE_EPS overrides the number of EPs (default 1024: make check's, and the figures
# of docs/testing.md), RKDAPL_SCALE_BYTES the bytes per EP (default 16384: at 64 KiB
# the 1024 EPs' data took 2 of the suite's 8 minutes, on both guests, and showed nothing 16 KiB
# does not; docs/testing.md's memory-per-EP figures were measured at 64 KiB).

SCALE_KO=$KO/selftests/kmod/rkdapl_scale.ko
SCALE_EPS=${RKDAPL_SCALE_EPS:-1024}
SCALE_BYTES=${RKDAPL_SCALE_BYTES:-16384}
SCALE_PORT=7600
SCALE_SLAB_KB=32768
SCALE_TMO=${RKDAPL_SCALE_TMO:-2400}
# Names the barriers of one run (runs of several counts can follow each other in one boot).
SCALE_TAG=
# The TAP names' prefix of one run.
SCALE_NAME=

# scale_res: the `rdma res` summary line of rxe0 (object counts), in $REPLY.
scale_res() {
	REPLY=$(rdma res show 2>&1 | grep rxe0)
}

# scale_slab: SUnreclaim in KiB, in $REPLY.
scale_slab() {
	local k v u
	REPLY=0
	while read -r k v u; do
		[ "$k" = SUnreclaim: ] && REPLY=$v
	done < /proc/meminfo
}

# scale_counters: rxe0's error counters and its netdev's qdisc drops, as "name=value ...", in
# $REPLY.
scale_counters() {
	local d=/sys/class/infiniband/rxe0/ports/1 c nic= v drop=0
	REPLY=
	for c in send_err retry_exceeded_err retry_rnr_exceeded_err completer_retry_err \
		rcvd_seq_err out_of_seq_request duplicate_request send_rnr_err rcvd_rnr_err; do
		[ -r "$d/hw_counters/$c" ] && REPLY+="$c=$(<"$d/hw_counters/$c") "
	done
	[ -r "$d/gid_attrs/ndevs/0" ] && nic=$(<"$d/gid_attrs/ndevs/0")
	if [ -n "$nic" ]; then
		for v in $(tc -s qdisc show dev "$nic" 2>/dev/null | grep -o 'dropped [0-9]*' |
			grep -o '[0-9]*'); do
			drop=$((drop + v))
		done
		REPLY+="qdisc_dropped=$drop"
	fi
}

# scale_delta BEFORE AFTER: "name=after-before ..." of two scale_counters results, in $REPLY.
scale_delta() {
	local -A b
	local kv
	REPLY=
	for kv in $1; do b[${kv%%=*}]=${kv#*=}; done
	for kv in $2; do REPLY+="${kv%%=*}=$((${kv#*=} - ${b[${kv%%=*}]:-0})) "; done
}

# scale_run SIDE ARGS...: insmod rkdapl_scale.ko, then the checks above.
scale_run() {
	local side=$1 rc=0 res0 slab0 l n=0 t0=$SECONDS mark=0 diag= summary= cnt0
	local -a lines
	shift
	scale_res
	res0=$REPLY
	scale_slab
	slab0=$REPLY
	scale_counters
	cnt0=$REPLY
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_scale: $side: "* ]] && mark=$((mark + 1)); done
	_log "scale: insmod rkdapl_scale.ko $*"
	timeout -s TERM -k 30 $SCALE_TMO insmod "$SCALE_KO" "$@" || rc=$?
	_log "scale: insmod returned $rc after $((SECONDS - t0)) s"
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do
		[[ $l == *"rkdapl_scale: $side: "* ]] || continue
		if [ $mark -gt 0 ]; then
			mark=$((mark - 1))
			continue
		fi
		l=${l#*rkdapl_scale: }
		[[ $l == "$side: $SCALE_EPS EPs, $SCALE_EPS verified" ]] && n=$((n + 1))
		[[ $l == "$side: result "* ]] && summary=${l#"$side: result "}
		diag+="# scale: $l"$'\n'
	done
	scale_counters
	scale_delta "$cnt0" "$REPLY"
	diag+="# scale: $side: counters during the run: $REPLY"$'\n'
	printf '%s' "$diag" >> "$TAP"
	printf '%s' "$diag"
	printf 'insmod_s=%s %s\n' $((SECONDS - t0)) "$summary" > "$RKDAPL_SYNC/scale-$side-$SCALE_EPS.txt"
	[ $rc = 0 ] && [ $n = 1 ]
	t_check $? "${SCALE_NAME:-scale}: $side: $SCALE_EPS EPs over 4 PSPs, 8 EVDs and 2 PZs, $SCALE_BYTES bytes each written and verified, all torn down ($((SECONDS - t0)) s)" \
		"insmod exit $rc; $(dmesg | grep 'rkdapl_scale: ' | tail -1)"
	module_loaded rkdapl_scale && rmmod rkdapl_scale
	scale_res
	[ "$REPLY" = "$res0" ]
	t_check $? "${SCALE_NAME:-scale}: $side: rdma res counts back at their baseline" "before '$res0', after '$REPLY'"
	scale_slab
	[ "$REPLY" -le $((slab0 + SCALE_SLAB_KB)) ]
	t_check $? "${SCALE_NAME:-scale}: $side: unreclaimable slab back within $SCALE_SLAB_KB KiB of its baseline (${slab0} -> ${REPLY} KiB)" \
		"${slab0} KiB before, ${REPLY} KiB after"
}

# The module's parameters but role and peer (SCALE_EPS and SCALE_BYTES as they are now).
scale_args() {
	SCALE_ARGS=(dev=rxe0 port=$SCALE_PORT eps=$SCALE_EPS bytes=$SCALE_BYTES psps=4 evds=8 pzs=2)
}

# The barriers are named after the EP count (or $SCALE_TAG), so that runs of several counts
# can follow each other in one boot.
scale_guest_a() {
	local pid i n0 tag=${SCALE_TAG:-$SCALE_EPS}
	n0=$(dmesg | grep -c "rkdapl_scale: server: listening on ports $SCALE_PORT")
	scale_args
	scale_run server role=server "${SCALE_ARGS[@]}" &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		[ "$(dmesg | grep -c "rkdapl_scale: server: listening on ports $SCALE_PORT")" -gt "$n0" ] &&
			break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal scale-$tag.listening
	wait $pid
	rkdapl_signal scale-$tag.done
}

scale_guest_b() {
	local tag=${SCALE_TAG:-$SCALE_EPS}
	scale_args
	if rkdapl_wait scale-$tag.listening $SCALE_TMO; then
		scale_run client role=client peer="$RKDAPL_PEER_IP" "${SCALE_ARGS[@]}"
	else
		t_fail "scale: client: guest A's server is listening" \
			"no $RKDAPL_SYNC/scale-$tag.listening"
	fi
	rkdapl_wait scale-$tag.done $SCALE_TMO
}

# scale_drop SIDE: the scale test of SIDE (a or b) with 64 EPs behind a netem qdisc that
# refuses packets (see the top); each side writes its qdisc's drops to
# $RKDAPL_SYNC/scale-drop-SIDE.txt, and guest A checks their sum.
scale_drop() {
	local side=$1 nic= d=/sys/class/infiniband/rxe0/ports/1 SCALE_EPS=64 SCALE_PORT=7700 SCALE_BYTES=65536
	local SCALE_TAG=drop-64 SCALE_NAME="scale: drop" SCALE_TMO=900 drops=0 v
	[ -r "$d/gid_attrs/ndevs/0" ] && nic=$(<"$d/gid_attrs/ndevs/0")
	if [ -z "$nic" ] || ! tc qdisc replace dev "$nic" root netem delay 2ms limit 4; then
		t_fail "scale: drop: netem on rxe0's network device ($side)" "nic '$nic'"
		return
	fi
	"scale_guest_$side"
	for v in $(tc -s qdisc show dev "$nic" | grep -o 'dropped [0-9]*' | grep -o '[0-9]*'); do
		drops=$((drops + v))
	done
	tc qdisc del dev "$nic" root
	echo "$drops" > "$RKDAPL_SYNC/scale-drop-$side.txt"
	rkdapl_signal "scale-drop-$side.counted"
	[ "$side" = a ] || return 0
	rkdapl_wait scale-drop-b.counted 120
	v=$(cat "$RKDAPL_SYNC/scale-drop-b.txt" 2>/dev/null)
	[ $((drops + ${v:-0})) -gt 0 ]
	t_check $? "scale: drop: the qdiscs refused packets during the run (guest A $drops, guest B ${v:-?}), which rdma_rxe counted as lost" \
		"no packet refused: the test did not exercise the path"
}

scale_drop_guest_a() { scale_drop a; }
scale_drop_guest_b() { scale_drop b; }
