#!/bin/bash
# Sourced by qemu/bench-a.sh and qemu/bench-b.sh (make bench) inside the guests.

# say TEXT: a progress line on the guest's output and in its kernel log.
say() {
	local who=${RKDAPL_ROLE^^}
	echo "rkdapl-bench: [$who ${SECONDS}s] $*"
	echo "rkdapl-bench: [$who] $*" > /dev/kmsg 2>/dev/null || true
}

# set_mtu: the test NIC (the one with RKDAPL_MAC) gets RKDAPL_MTU (9000: rxe then uses
# 4096-byte packets).
set_mtu() {
	local f nic="" mtu=${RKDAPL_MTU:-9000}
	for f in /sys/class/net/*/address; do
		[ "$(cat "$f")" = "$RKDAPL_MAC" ] && nic=$(basename "$(dirname "$f")")
	done
	[ -n "$nic" ] && [ "$mtu" != 1500 ] && ip link set dev "$nic" mtu "$mtu"
	say "$nic mtu $(cat "/sys/class/net/$nic/mtu")"
}
