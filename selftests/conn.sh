#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh): connection robustness,
# with selftests/kmod/rkdapl_conn.ko (its header comment has the cycle kinds).
#
#   conn_guest_a   rkdapl_conn.ko role=server: accepts every request by upcall, on a new EP,
#                  and checks that each EP ends exactly once (ESTABLISHED + DISCONNECTED, or
#                  one failure event, or an accept refused because the client gave up)
#   conn_guest_b   rkdapl_conn.ko role=client: $CONN_CYCLES fast cycles (connect, disconnect
#                  at once, free; some while the server's accept upcall sleeps after or before
#                  accepting, the latter abandoned by the client), then $CONN_LOSSY_CYCLES
#                  cycles with $CONN_LOSS% loss on guest B's NIC (tc netem: RTUs lost, so the
#                  DREQ reaches the server before the connection is established there), then
#                  one last cycle without loss
#
# Both sides check insmod's status, the module's summary line and that `rdma res` is back at
# its baseline. RKDAPL_CONN_CYCLES overrides the number of fast cycles (default 200),
# RKDAPL_CONN_ARGS adds module parameters to both sides (e.g. timeout_ms=30000).

CONN_KO=$KO/selftests/kmod/rkdapl_conn.ko
CONN_CYCLES=${RKDAPL_CONN_CYCLES:-200}
CONN_LOSSY_CYCLES=12
CONN_LOSS=30
CONN_PORT=7570
CONN_TMO=1500
CONN_ARGS=${RKDAPL_CONN_ARGS:-}

# conn_res: the `rdma res` summary line of rxe0 (object counts), in $REPLY.
conn_res() {
	REPLY=$(rdma res show 2>&1 | grep rxe0)
}

# conn_line ROLE: the module's last summary line for ROLE, in $REPLY.
conn_line() {
	local l
	local -a lines
	REPLY=
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_conn: $1: "*" cycles: "* ]] && REPLY=${l#*rkdapl_conn: }; done
}

# conn_nic: guest B's test NIC (by MAC), in $REPLY.
conn_nic() {
	local f
	REPLY=
	for f in /sys/class/net/*/address; do
		[ "$(< "$f")" = "$RKDAPL_MAC" ] && REPLY=${f%/address} && REPLY=${REPLY##*/}
	done
}

conn_guest_a() {
	local pid i rc=0 res0 t0=$SECONDS
	conn_res
	res0=$REPLY
	_log "conn: insmod rkdapl_conn.ko role=server"
	timeout -s TERM -k 30 $CONN_TMO insmod "$CONN_KO" role=server dev=rxe0 port=$CONN_PORT $CONN_ARGS &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_conn: server: listening on port $CONN_PORT" && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal conn.listening
	wait $pid || rc=$?
	conn_line server
	[ $rc = 0 ] && [[ $REPLY == *"every EP ended once" ]]
	t_check $? "conn: server: every accepted EP ended exactly once, within its timeout ($((SECONDS - t0)) s: ${REPLY#server: })" \
		"insmod exit $rc: ${REPLY:-no summary line}"
	module_loaded rkdapl_conn && rmmod rkdapl_conn
	conn_res
	[ "$REPLY" = "$res0" ]
	t_check $? "conn: server: rdma res counts back at their baseline" "before '$res0', after '$REPLY'"
	rkdapl_wait conn.done $CONN_TMO
}

# conn_client NAME ARGS...: one client run; its summary line is checked.
conn_client() {
	local name=$1 rc=0 t0=$SECONDS
	shift
	_log "conn: insmod rkdapl_conn.ko role=client $*"
	timeout -s TERM -k 30 $CONN_TMO insmod "$CONN_KO" role=client dev=rxe0 \
		peer="$RKDAPL_PEER_IP" port=$CONN_PORT $CONN_ARGS "$@" || rc=$?
	conn_line client
	[ $rc = 0 ] && [[ $REPLY == *"every EP ended once" ]]
	t_check $? "conn: client: $name, every EP ended exactly once ($((SECONDS - t0)) s: ${REPLY#client: })" \
		"insmod exit $rc: ${REPLY:-no summary line}"
	module_loaded rkdapl_conn && rmmod rkdapl_conn
}

conn_guest_b() {
	local res0 nic
	if ! rkdapl_wait conn.listening $CONN_TMO; then
		t_fail "conn: client: guest A's server is listening" "no $RKDAPL_SYNC/conn.listening"
		return
	fi
	conn_res
	res0=$REPLY
	conn_client "$CONN_CYCLES fast connect/disconnect cycles (some with the server's accept upcall sleeping, some abandoned)" \
		cycles=$CONN_CYCLES last=0
	conn_nic
	nic=$REPLY
	tc qdisc add dev "$nic" root netem loss "$CONN_LOSS%"
	t_check $? "conn: $CONN_LOSS% packet loss on $nic (tc netem)"
	conn_client "$CONN_LOSSY_CYCLES fast cycles through $CONN_LOSS% loss" \
		cycles=$CONN_LOSSY_CYCLES first=$CONN_CYCLES last=0 lossy=1
	tc qdisc del dev "$nic" root
	conn_client "a last cycle without loss" cycles=1 first=$((CONN_CYCLES + CONN_LOSSY_CYCLES))
	conn_res
	[ "$REPLY" = "$res0" ]
	t_check $? "conn: client: rdma res counts back at their baseline" "before '$res0', after '$REPLY'"
	rkdapl_signal conn.done
}

# conn_reset: forgets the barriers of an earlier conn run in this boot (selftests only run
# the suite once; a run by hand that repeats it calls this on both guests first).
conn_reset() {
	rm -f "$RKDAPL_SYNC/conn.listening" "$RKDAPL_SYNC/conn.done"
}
