#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh): the two-guest soak.
#
#   soak_guest_a   rkdapl_soak.ko role=server: accepts $SOAK_CYCLES connections one after the
#                  other, each with an EP, an RMR grant and a verified client write
#   soak_guest_b   rkdapl_soak.ko role=client: $SOAK_CYCLES times connect, register an LMR,
#                  RDMA WRITE, RDMA READ back and compare, disconnect, free
#
# Each side checks insmod's status and the module's "N cycles, N verified" line, then that the
# device's object counts in `rdma res` are back at what they were before, and that the
# unreclaimable slab (SUnreclaim in /proc/meminfo) is back within $SOAK_SLAB_KB KiB: with
# KASAN, freed objects wait in a quarantine of up to 1/32 of memory, so only a coarse bound is
# meaningful here; kmemleak (in the splat scan) checks for leaked objects exactly.
# RKDAPL_SOAK_CYCLES overrides the number of cycles (default 300, about 0.65 s each on the debug
# kernel under TCG; 1000 for a longer soak).

SOAK_KO=$KO/selftests/kmod/rkdapl_soak.ko
SOAK_CYCLES=${RKDAPL_SOAK_CYCLES:-300}
SOAK_PORT=7560
SOAK_SLAB_KB=16384
SOAK_TMO=3000

# soak_res: the `rdma res` summary line of $RKDAPL_DEV (object counts), in $REPLY.
soak_res() {
	REPLY=$(rdma res show 2>&1 | grep "$RKDAPL_DEV")
}

# soak_slab: SUnreclaim in KiB, in $REPLY.
soak_slab() {
	local k v u
	REPLY=0
	while read -r k v u; do
		[ "$k" = SUnreclaim: ] && REPLY=$v
	done < /proc/meminfo
}

# soak_run SIDE ARGS...: insmod rkdapl_soak.ko, then the checks above.
soak_run() {
	local side=$1 rc=0 res0 slab0 l n=0 t0=$SECONDS
	local -a lines
	shift
	soak_res
	res0=$REPLY
	soak_slab
	slab0=$REPLY
	_log "soak: insmod rkdapl_soak.ko $*"
	timeout -s TERM -k 30 $SOAK_TMO insmod "$SOAK_KO" "$@" || rc=$?
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do
		[[ $l == *"rkdapl_soak: $side: $SOAK_CYCLES cycles, $SOAK_CYCLES verified" ]] && n=$((n + 1))
	done
	[ $rc = 0 ] && [ $n = 1 ]
	t_check $? "soak: $side: $SOAK_CYCLES connect/register/write/read/disconnect/free cycles, all verified ($((SECONDS - t0)) s)" \
		"insmod exit $rc; $(dmesg | grep 'rkdapl_soak: ' | tail -1)"
	module_loaded rkdapl_soak && rmmod rkdapl_soak
	soak_res
	[ "$REPLY" = "$res0" ]
	t_check $? "soak: $side: rdma res counts back at their baseline" "before '$res0', after '$REPLY'"
	soak_slab
	[ "$REPLY" -le $((slab0 + SOAK_SLAB_KB)) ]
	t_check $? "soak: $side: unreclaimable slab back within $SOAK_SLAB_KB KiB of its baseline (${slab0} -> ${REPLY} KiB)" \
		"${slab0} KiB before, ${REPLY} KiB after"
}

soak_guest_a() {
	soak_run server role=server dev=$RKDAPL_DEV port=$SOAK_PORT cycles=$SOAK_CYCLES &
	local pid=$! i
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_soak: server: listening on port $SOAK_PORT" && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal soak.listening
	wait $pid
	rkdapl_signal soak.done
}

soak_guest_b() {
	if rkdapl_wait soak.listening $SOAK_TMO; then
		soak_run client role=client dev=$RKDAPL_DEV peer="$RKDAPL_PEER_IP" port=$SOAK_PORT \
			cycles=$SOAK_CYCLES
	else
		t_fail "soak: client: guest A's server is listening" "no $RKDAPL_SYNC/soak.listening"
	fi
	rkdapl_wait soak.done $SOAK_TMO
}
