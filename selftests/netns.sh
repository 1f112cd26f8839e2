#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE a guest by selftests/guest-b.sh after guest-lib.sh: rkdapl across two network
# namespaces in one guest, set up as the kernel's
# tools/testing/selftests/rdma/rxe_rping_between_netns.sh does: namespaces rkdapl-a and
# rkdapl-b joined by a veth pair, each end with its address and an rxe device
# (rkdapl-a: veth-rka 10.88.0.1/24, rxe "rkna"; rkdapl-b: veth-rkb 10.88.0.2/24, rxe "rknb").
#
#   netns_suite   sets them up, then rkdapl_test role=netns (selftests/kmod/rkdapl_test/netns.c)
#                 with the namespaces named by the pid of a process in each: IAs opened in a
#                 namespace, ports per namespace, a PSP unreachable from the other side's
#                 address, the client role's data tests from B to a server thread in A; then
#                 takes it all down again
#
# Test names start with "netns: ". Needs CONFIG_NET_NS and veth (the debug kernel and Debian's
# kernel have both); without them the suite reports one skipped test.

NETNS_A=rkdapl-a NETNS_B=rkdapl-b
NETNS_ADDR_A=10.88.0.1 NETNS_ADDR_B=10.88.0.2
NETNS_PIDS=()

_netns_down() {
	local p
	for p in "${NETNS_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${NETNS_PIDS[@]}"; do wait "$p" 2>/dev/null; done
	NETNS_PIDS=()
	rdma link del rkna 2>/dev/null
	rdma link del rknb 2>/dev/null
	ip netns exec $NETNS_A ip link del veth-rka 2>/dev/null
	ip netns del $NETNS_A 2>/dev/null
	ip netns del $NETNS_B 2>/dev/null
}

# _netns_rxe NS NETDEV RXE: an rxe device on NETDEV, made from inside NS (rxe opens its UDP
# tunnel socket in the netdev's namespace), then ACTIVE.
_netns_rxe() {
	local i
	ip netns exec "$1" rdma link add "$3" type rxe netdev "$2" || return 1
	for ((i = 0; i < 100; i++)); do
		rdma link show "$3/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.2
	done
	return 1
}

_netns_up() {
	ip netns add $NETNS_A && ip netns add $NETNS_B || return 1
	ip link add veth-rka netns $NETNS_A type veth peer name veth-rkb netns $NETNS_B || return 1
	ip -n $NETNS_A addr add $NETNS_ADDR_A/24 dev veth-rka &&
		ip -n $NETNS_B addr add $NETNS_ADDR_B/24 dev veth-rkb &&
		ip -n $NETNS_A link set lo up && ip -n $NETNS_B link set lo up &&
		ip -n $NETNS_A link set veth-rka up && ip -n $NETNS_B link set veth-rkb up ||
		return 1
	_netns_rxe $NETNS_A veth-rka rkna && _netns_rxe $NETNS_B veth-rkb rknb || return 1
	# A process in each namespace, whose pid names it to the test module.
	ip netns exec $NETNS_A sleep 100000 &
	NETNS_PIDS+=($!)
	ip netns exec $NETNS_B sleep 100000 &
	NETNS_PIDS+=($!)
}

netns_suite() {
	local i
	rkdapl_modprobe veth 2>/dev/null
	if [ ! -e /proc/self/ns/net ] ||
		! ip link add rkdapl-probe type veth peer name rkdapl-probe1 2>/dev/null; then
		t_ok "netns: two namespaces joined by veth # SKIP no network namespaces or no veth"
		return 0
	fi
	ip link del rkdapl-probe
	if ! _netns_up; then
		t_fail "netns: namespaces $NETNS_A and $NETNS_B joined by veth, rxe on each end" \
			"set-up failed: $(rdma link show 2>&1 | tr '\n' '|')"
		_netns_down
		return
	fi
	# The sleepers have entered their namespaces once /proc/PID/ns/net differs from ours.
	for ((i = 0; i < 50; i++)); do
		[ "$(readlink /proc/${NETNS_PIDS[0]}/ns/net)" != "$(readlink /proc/self/ns/net)" ] &&
			[ "$(readlink /proc/${NETNS_PIDS[1]}/ns/net)" != "$(readlink /proc/self/ns/net)" ] &&
			break
		sleep 0.1
	done
	t_ok "netns: namespaces $NETNS_A and $NETNS_B joined by veth, rxe on each end"
	run_kmod netns 1500 -- role=netns netns_a="${NETNS_PIDS[0]}" netns_b="${NETNS_PIDS[1]}" \
		addr_a=$NETNS_ADDR_A addr_b=$NETNS_ADDR_B dev_a=rkna ndev_a=veth-rka port=7520 timeout_ms=20000
	_netns_down
	if rdma link show rkna > /dev/null 2>&1 || ip netns list | grep -q rkdapl-; then
		t_fail "netns: taken down (rxe devices, namespaces)" "$(rdma link show | tr '\n' '|')"
	else
		t_ok "netns: taken down (rxe devices, namespaces)"
	fi
}
