#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh (after guest-lib.sh): asynchronous port events and EP reuse.
#
#   reset_suite   rkdapl_test role=reset: EPs disconnected, reset and connected again, several
#                 rounds of verified RDMA WRITE/READ; resets refused in the wrong state (-EINVAL)
#                 and while flushed DTOs are unreported (-EBUSY) (ep_reset.c)
#   ports_suite   rkdapl_test role=ports holds a connected loopback pair with an async EVD; once
#                 it says so, the RDMA device's network device goes down and, 3 s later, up again
#                 (`ip link set`): the async EVD must report PORT_ERROR then PORT_ACTIVE for port
#                 1, and the connection must move verified bytes afterwards (port_events.c).
#                 Guest A only, when nothing else uses the link: it runs after the two-guest
#                 suites (guest B is done with the link by then) and restores the link.

PORTS_PORT=7540
RESET_PORT=7550

reset_suite() {
	run_kmod reset 600 -- role=reset dev=rxe0 peer="$RKDAPL_IP" port=$RESET_PORT
}

# The network device of rxe0's port 1, in $REPLY.
ports_netdev() {
	local l
	REPLY=
	l=$(rdma link show rxe0/1 2>/dev/null)
	[[ $l =~ netdev\ ([^ ]+) ]] && REPLY=${BASH_REMATCH[1]}
}

ports_suite() {
	local pid i nic rc=0 mark=0 l
	local -a lines
	ports_netdev
	nic=$REPLY
	if [ -z "$nic" ]; then
		t_fail "ports: rxe0's network device" "rdma link show rxe0/1: no netdev"
		return
	fi
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"# ports: ready for link down"* ]] && mark=$((mark + 1)); done
	run_kmod ports 600 -- role=ports dev=rxe0 peer="$RKDAPL_IP" port=$PORTS_PORT &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		mapfile -t lines < <(dmesg)
		local n=0
		for l in "${lines[@]}"; do [[ $l == *"# ports: ready for link down"* ]] && n=$((n + 1)); done
		[ $n -gt $mark ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	if [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; then
		_log "ports: ip link set dev $nic down"
		ip link set dev "$nic" down || rc=$?
		sleep 3
		_log "ports: ip link set dev $nic up"
		ip link set dev "$nic" up || rc=$?
	fi
	wait $pid
	# The link is restored whatever happened, and rxe0/1 is ACTIVE again for what follows.
	ip link set dev "$nic" up
	for ((i = 0; i < 100; i++)); do
		rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE' && break
		sleep 0.2
	done
	[ $rc = 0 ] && [ $i -lt 100 ]
	t_check $? "ports: the link went down and up (ip link set dev $nic) and rxe0/1 is ACTIVE again" \
		"ip link rc $rc, rxe0/1 $(rdma link show rxe0/1 2>&1)"
}
