#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE a guest by selftests/guest-{a,b}.sh after guest-lib.sh and rping.sh: the
# two-guest suites over IPv6.
#
#   ip6_guest_a   adds fd00:77::1/64 (nodad) to rxe0's NIC; rkdapl_test role=server with its
#                 IA opened by that address (rkdapl_ia_open_addr), peer= the client's address
#                 (checked against rkdapl_cr_query and rkdapl_ep_query); then the kernel rping
#                 as server for B's `rping -c -a fd00:77::1`, and as client of B's
#                 `rping -s -a fd00:77::2` (samples/rkdapl_rping.ko addr=<IPv6>)
#   ip6_guest_b   adds fd00:77::2/64; rkdapl_test role=client, IA opened by its IPv6 address,
#                 connecting to [fd00:77::1]: every DTO kind (SEND/RECV, RDMA WRITE, READ, WRITE
#                 with immediate, chains, SEND with invalidate, RMR grants), every byte
#                 verified; the rdma-core side of the rpings
#
# Test names start with "ip6: ". Barriers ($RKDAPL_SYNC): ip6-a.listening (A's server),
# ip6-b.done (B's client ended: A stops its server a minute later if it still waits),
# ip6-rping-<port>.listening/.ready/.done as in rping.sh.
# Before rkdapl's PSPs listened on IPv6 too, B's connect came back PEER_REJECTED with status 28
# (the IB CM's "consumer defined", from rdma_cm finding no listener for an IPv6 request on
# an IPv4-only PSP's port).

IP6_PREFIX=fd00:77::
IP6_PORT=7482
IP6_RPING_CONFIG=${RKDAPL_RPING6:-"4096:5"}

# The guest's and the peer's IPv6 address: fd00:77:: plus the last byte of the IPv4 address.
ip6_self() { echo "$IP6_PREFIX${RKDAPL_IP##*.}"; }
ip6_peer() { echo "$IP6_PREFIX${RKDAPL_PEER_IP##*.}"; }

# ip6_up: the ULA on rxe0's NIC (nodad: usable at once), and its RoCEv2 GID in rxe0's table.
ip6_up() {
	local nic a i gid
	a=$(ip6_self)
	nic=$(rdma link show rxe0/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
	if [ -z "$nic" ] || ! ip -6 addr add "$a/64" dev "$nic" nodad; then
		t_fail "ip6: $a/64 on rxe0's netdev" "netdev '${nic:-none}'"
		return 1
	fi
	# rxe0's GID of the address (fd00:0077:0000:...:000N), as ib_core adds it.
	gid=$(printf 'fd00:0077:0000:0000:0000:0000:0000:%04x' "${RKDAPL_IP##*.}")
	for ((i = 0; i < 100; i++)); do
		grep -qx "$gid" /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null && break
		sleep 0.2
	done
	if grep -qx "$gid" /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null; then
		t_ok "ip6: $a/64 on $nic, its GID in rxe0's table"
	else
		t_fail "ip6: $a/64 on $nic, its GID in rxe0's table" "no GID $gid after 20 s"
		return 1
	fi
}

ip6_guest_a() {
	local pid i=0 pidf=/run/rkdapl-test-insmod-ip6.pid self peer cfg size count port
	self=$(ip6_self) peer=$(ip6_peer)
	ip6_up || { rkdapl_signal ip6-a.failed; return; }
	rm -f "$pidf"
	run_kmod ip6 1500 -- role=server dev=rxe0 local="$self" peer="$peer" port=$IP6_PORT \
		listen_ms=600000 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_test: # listening on port $IP6_PORT" && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal ip6-a.listening
	# If B's client is done (or B ended), the server has 60 s to see the disconnect.
	i=0
	while kill -0 $pid 2>/dev/null; do
		if { [ -e "$RKDAPL_SYNC/ip6-b.done" ] || [ -e "$RKDAPL_SYNC/rc-b" ]; } &&
			[ $((i++)) -ge 60 ] && [ -s "$pidf" ]; then
			echo "rkdapl-selftest: guest B's IPv6 client ended, stopping the server"
			kill -TERM "$(< "$pidf")" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait $pid

	cfg=$IP6_RPING_CONFIG size=${cfg%:*} count=${cfg#*:} port=7194
	_rping_kmod "ip6: rping: kernel server against rdma-core rping -c -a $self ($count pings of $size bytes, validated)" \
		server "$count" dev=rxe0 port=$port size="$size" validate=1 verbose=1 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -qF "rkdapl_rping: server: listening on rxe0 port $port " && break
		kill -0 $pid 2>/dev/null || break
		sleep 1
	done
	rkdapl_signal "ip6-rping-$port.listening"
	wait $pid
	rkdapl_signal "ip6-rping-$port.done"
	port=$((port + 1))
	if rkdapl_wait "ip6-rping-$port.ready" $RPING_TMO; then
		_rping_kmod "ip6: rping: kernel client addr=$peer against rdma-core rping -s ($count pings of $size bytes, validated)" \
			client "$count" dev=rxe0 addr="$peer" port=$port size="$size" validate=1 \
			verbose=1 timeout_ms=60000
	else
		t_fail "ip6: rping: kernel client addr=$peer against rdma-core rping -s" \
			"B's rping -s never became ready"
	fi
	rkdapl_signal "ip6-rping-$port.done"
}

ip6_guest_b() {
	local self peer cfg size count port pid n
	self=$(ip6_self) peer=$(ip6_peer)
	ip6_up
	if rkdapl_wait ip6-a.listening 2400; then
		run_kmod ip6 1500 -- role=client dev=rxe0 local="$self" peer="$peer" \
			port=$IP6_PORT connect_ms=120000
	else
		t_fail "ip6: guest A's server is listening" "no $RKDAPL_SYNC/ip6-a.listening"
	fi
	rkdapl_signal ip6-b.done

	cfg=$IP6_RPING_CONFIG size=${cfg%:*} count=${cfg#*:} port=7194
	if rkdapl_wait "ip6-rping-$port.listening" $RPING_TMO; then
		_rping_user "ip6: rping: rdma-core rping -c -a $peer against kernel server ($count pings of $size bytes, -V, counted)" \
			$port "$count" '^ping data: rdma-ping-[0-9]+: ' \
			-c -a "$peer" -p $port -C "$count" -S "$size" -V -v
	else
		t_fail "ip6: rping: rdma-core rping -c -a $peer against kernel server" \
			"A's kernel server never listened"
	fi
	rkdapl_wait "ip6-rping-$port.done" $RPING_TMO
	port=$((port + 1))
	rm -f /run/rping-$port.pid
	_rping_user "ip6: rping: rdma-core rping -s -a $self serving the kernel client ($count pings of $size bytes, counted)" \
		$port "$count" '^server ping data: rdma-ping-[0-9]+: ' \
		-s -a "$self" -p $port -C "$count" -S "$size" -v &
	pid=$!
	for ((n = 0; n < 100; n++)); do
		rdma res show cm_id 2>/dev/null | grep LISTEN | grep -qF ":$port " && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.2
	done
	rkdapl_signal "ip6-rping-$port.ready"
	while kill -0 $pid 2>/dev/null; do
		if [ -e "$RKDAPL_SYNC/ip6-rping-$port.done" ] || [ -e "$RKDAPL_SYNC/rc-a" ]; then
			for ((n = 0; n < 30; n++)); do
				kill -0 $pid 2>/dev/null || break
				sleep 1
			done
			[ -s /run/rping-$port.pid ] && kill -TERM "$(< /run/rping-$port.pid)" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait $pid
}
