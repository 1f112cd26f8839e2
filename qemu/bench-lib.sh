#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced inside the guests by qemu/bench-det.sh (make bench) and qemu/bench-a.sh and
# qemu/bench-b.sh (make bench-wall).

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

# iters SIZE BUDGET MAX: BUDGET / SIZE clamped to 5..MAX (perftest wants at least 5).
iters() {
	local n=$(($2 / $1))
	[ $n -gt "$3" ] && n=$3
	[ $n -lt 5 ] && n=5
	echo $n
}

# listening PORT: an rdma_cm id listens on PORT.
listening() {
	rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$1\b"
}
