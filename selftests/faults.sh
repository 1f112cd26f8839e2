#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-b.sh (after guest-lib.sh and soak.sh): connection faults, with
# rkdapl_soak.ko as the consumer (guest A's soak server is still listening when these run).
#
#   faults_guest_b   connect to an address nobody answers (10.77.0.99): the connect ends in an
#                    UNREACHABLE or TIMED_OUT event within its timeout, and nothing is left;
#                    then 10 soak cycles with 5% and 5 with 30% packet loss on the wire (tc netem on
#                    guest B's NIC): every cycle either completes verified or ends in a clean
#                    error event, within the timeouts, and nothing is left in rdma res.
#   faults_guest_a   serves those cycles: rkdapl_soak.ko role=server for the lossy runs.

FAULT_TMO_MS=5000

# faults_nic: guest B's test NIC (by MAC), in $REPLY.
faults_nic() {
	local f
	REPLY=
	for f in /sys/class/net/*/address; do
		[ "$(< "$f")" = "$RKDAPL_MAC" ] && REPLY=${f%/address} && REPLY=${REPLY##*/}
	done
}

# faults_last_soak_line: the last "rkdapl_soak: client:" summary line, in $REPLY.
faults_last_soak_line() {
	local l
	local -a lines
	REPLY=
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_soak: client: "*" cycles, "* ]] && REPLY=$l; done
}

faults_unreachable() {
	local rc=0 t0=$SECONDS secs res0
	soak_res
	res0=$REPLY
	_log "faults: connect to 10.77.0.99 (nobody there), timeout $FAULT_TMO_MS ms"
	timeout -k 10 120 insmod "$SOAK_KO" role=client dev=rxe0 peer=10.77.0.99 port=$SOAK_PORT \
		cycles=1 timeout_ms=$FAULT_TMO_MS || rc=$?
	secs=$((SECONDS - t0))
	faults_last_soak_line
	# Event 7 is UNREACHABLE, 8 TIMED_OUT (enum rkdapl_event_type).
	[ $rc != 0 ] && [[ $REPLY =~ FAILED:\ connect:\ event\ (7|8)\ status\ -[0-9]+ ]] &&
		[ $secs -le $((FAULT_TMO_MS / 1000 * 2 + 20)) ]
	t_check $? "faults: connect to an unanswered address ends UNREACHABLE or TIMED_OUT within its timeout ($secs s)" \
		"insmod exit $rc after $secs s: ${REPLY:-no summary line}"
	module_loaded rkdapl_soak && rmmod rkdapl_soak
	soak_res
	[ "$REPLY" = "$res0" ]
	t_check $? "faults: nothing left after the failed connect" "before '$res0', after '$REPLY'"
}

# faults_lossy PERCENT CYCLES: soak cycles against guest A with netem loss on our NIC.
faults_lossy() {
	local loss=$1 n=$2 rc=0 t0 secs res0 nic
	faults_nic
	nic=$REPLY
	rkdapl_wait "faults-$loss.listening" $SOAK_TMO || {
		t_fail "faults: $loss% loss: guest A listening" "no faults-$loss.listening"
		return
	}
	soak_res
	res0=$REPLY
	tc qdisc add dev "$nic" root netem loss "$loss%"
	t_check $? "faults: $loss% packet loss on $nic (tc netem)"
	t0=$SECONDS
	_log "faults: $n soak cycles with $loss% loss"
	timeout -k 10 900 insmod "$SOAK_KO" role=client dev=rxe0 peer="$RKDAPL_PEER_IP" \
		port=$((SOAK_PORT + loss)) cycles=$n timeout_ms=60000 || rc=$?
	secs=$((SECONDS - t0))
	tc qdisc del dev "$nic" root
	faults_last_soak_line
	if [ "$loss" -le 5 ]; then
		# RC retransmits through 5% loss: every cycle must complete.
		[ $rc = 0 ] && [[ $REPLY == *"$n cycles, $n verified" ]]
		t_check $? "faults: $loss% loss: $n cycles complete and verify through retransmissions ($secs s)" \
			"insmod exit $rc after $secs s: ${REPLY:-no summary line}"
	else
		# At 30% a cycle may fail; it must then fail cleanly, with an error event, in time.
		[[ $REPLY == *"$n cycles, $n verified" || $REPLY == *"FAILED: "* ]] && [ $rc != 124 ] &&
			[ $rc != 137 ]
		t_check $? "faults: $loss% loss: cycles complete or end in a clean error, no hang ($secs s: ${REPLY##*client: })" \
			"insmod exit $rc after $secs s: ${REPLY:-no summary line}"
	fi
	module_loaded rkdapl_soak && rmmod rkdapl_soak
	soak_res
	[ "$REPLY" = "$res0" ]
	t_check $? "faults: $loss% loss: nothing left in rdma res afterwards" "before '$res0', after '$REPLY'"
	rkdapl_signal "faults-$loss.done"
}

faults_guest_b() {
	faults_unreachable
	faults_lossy 5 10
	faults_lossy 30 5
}

# The server side of one lossy run; its result is not a test (the client's is): at 30% loss the
# server may see the connection fail. It must end, though, and leave nothing behind.
faults_serve() {
	local loss=$1 n=$2 pid i res0 rc=0
	soak_res
	res0=$REPLY
	timeout -k 10 900 insmod "$SOAK_KO" role=server dev=rxe0 port=$((SOAK_PORT + loss)) \
		cycles=$n timeout_ms=60000 >/dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_soak: server: listening on port $((SOAK_PORT + loss))" && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal "faults-$loss.listening"
	rkdapl_wait "faults-$loss.done" $SOAK_TMO
	# A server still waiting for a cycle the client gave up on ends at its own timeout.
	wait $pid || rc=$?
	module_loaded rkdapl_soak && rmmod rkdapl_soak
	soak_res
	[ "$REPLY" = "$res0" ] && [ $rc != 124 ] && [ $rc != 137 ]
	t_check $? "faults: $loss% loss: the server side ends on its own and leaves nothing in rdma res" \
		"insmod exit $rc; before '$res0', after '$REPLY'"
}

faults_guest_a() {
	faults_serve 5 10
	faults_serve 30 5
}
