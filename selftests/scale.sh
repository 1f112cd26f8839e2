#!/bin/bash
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh): the scale test.
#
#   scale_guest_a   rkdapl_scale.ko role=server: $SCALE_EPS EPs accepted on 4 PSPs, spread
#                   over 8 EVDs and 2 PZs; each EP's 64 KiB grant is RDMA-written by the client
#                   and every byte compared
#   scale_guest_b   rkdapl_scale.ko role=client: connects the $SCALE_EPS EPs (32 set-ups at a
#                   time), and once all are up, writes and notifies, 64 EPs at a time; then
#                   disconnects them all at once
#
# Each side checks insmod's status and the module's "N EPs, N verified" line, then that the
# device's object counts in `rdma res` (pd, cq, qp, cm_id, mr) are back at what they were
# before, and SUnreclaim within $SCALE_SLAB_KB KiB (a coarse bound: KASAN's quarantine holds
# freed objects; kmemleak, in the splat scan, checks for leaks exactly). The figures (set-up
# rate, memory per EP, data rate, teardown time) are TAP diagnostics and are kept in
# $RKDAPL_SYNC/scale-<side>-<EPs>.txt.
# RKDAPL_SCALE_EPS overrides the number of EPs (default 256: make check's; the README's
# figures are of 1024, see docs/testing.md), RKDAPL_SCALE_BYTES the bytes per EP (65536).

SCALE_KO=$KO/selftests/kmod/rkdapl_scale.ko
SCALE_EPS=${RKDAPL_SCALE_EPS:-256}
SCALE_BYTES=${RKDAPL_SCALE_BYTES:-65536}
SCALE_PORT=7600
SCALE_SLAB_KB=32768
SCALE_TMO=${RKDAPL_SCALE_TMO:-2400}

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

# scale_run SIDE ARGS...: insmod rkdapl_scale.ko, then the checks above.
scale_run() {
	local side=$1 rc=0 res0 slab0 l n=0 t0=$SECONDS mark=0 diag= summary=
	local -a lines
	shift
	scale_res
	res0=$REPLY
	scale_slab
	slab0=$REPLY
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
	printf '%s' "$diag" >> "$TAP"
	printf '%s' "$diag"
	printf 'insmod_s=%s %s\n' $((SECONDS - t0)) "$summary" > "$RKDAPL_SYNC/scale-$side-$SCALE_EPS.txt"
	[ $rc = 0 ] && [ $n = 1 ]
	t_check $? "scale: $side: $SCALE_EPS EPs over 4 PSPs, 8 EVDs and 2 PZs, $SCALE_BYTES bytes each written and verified, all torn down ($((SECONDS - t0)) s)" \
		"insmod exit $rc; $(dmesg | grep 'rkdapl_scale: ' | tail -1)"
	module_loaded rkdapl_scale && rmmod rkdapl_scale
	scale_res
	[ "$REPLY" = "$res0" ]
	t_check $? "scale: $side: rdma res counts back at their baseline" "before '$res0', after '$REPLY'"
	scale_slab
	[ "$REPLY" -le $((slab0 + SCALE_SLAB_KB)) ]
	t_check $? "scale: $side: unreclaimable slab back within $SCALE_SLAB_KB KiB of its baseline (${slab0} -> ${REPLY} KiB)" \
		"${slab0} KiB before, ${REPLY} KiB after"
}

# The module's parameters but role and peer (SCALE_EPS and SCALE_BYTES as they are now).
scale_args() {
	SCALE_ARGS=(dev=rxe0 port=$SCALE_PORT eps=$SCALE_EPS bytes=$SCALE_BYTES psps=4 evds=8 pzs=2)
}

# The barriers are named after the EP count, so that runs of several counts can follow each
# other in one boot.
scale_guest_a() {
	local pid i n0
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
	rkdapl_signal scale-$SCALE_EPS.listening
	wait $pid
	rkdapl_signal scale-$SCALE_EPS.done
}

scale_guest_b() {
	scale_args
	if rkdapl_wait scale-$SCALE_EPS.listening $SCALE_TMO; then
		scale_run client role=client peer="$RKDAPL_PEER_IP" "${SCALE_ARGS[@]}"
	else
		t_fail "scale: client: guest A's server is listening" \
			"no $RKDAPL_SYNC/scale-$SCALE_EPS.listening"
	fi
	rkdapl_wait scale-$SCALE_EPS.done $SCALE_TMO
}
