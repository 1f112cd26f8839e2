#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh and rping.sh): peers whose
# netdev MTUs differ. Cases 1 and 2 with selftests/kmod/rkdapl_mtu.ko (server on guest A,
# client on guest B): one connection each way round, the path MTU both EPs report
# (rkdapl_ep_query()), and RDMA WRITEs (client -> server) and READs (server -> client) of
# 4 KiB, 64 KiB and 1 MiB, every byte checked on the side that received it. Cases 3 and 4 put
# rdma-core's rping on the side with MTU 4000. The MTUs go back to 1500 afterwards.
#
#   1. server (A) at MTU 4000 (rxe active MTU 2048), client (B) at 1500 (1024): the REQ
#      carries the client's 1024, both QPs use it, everything moves.
#   2. server (A) at 1500, client (B) at 4000: the REQ carries 2048; the server's QP takes
#      its own 1024 and its REP says so, the client's QP follows (rkdapl's path-MTU agreement
#      moves RoCE QPs itself: rust/rkdapl/mtu.rs); everything moves through 1024. The server
#      still warns (once) that the request's MTU is over its own.
#   3. samples/rkdapl_rping.ko server (A) at 1500, rdma-core `rping -c` (B) at 4000: the
#      kernel server's QP takes 1024, rping's keeps 2048 (it does not read the REP's
#      trailer). Tested: 64-byte pings (one packet each way) pass and the server reports 1024;
#      a 4 KiB ping is logged (docs/guide.md, "Path MTU": it fails).
#   4. rdma-core `rping -s` (A) at 1500, samples/rkdapl_rping.ko client (B) at 4000: rping's
#      REP has no trailer, so the kernel client keeps its route's 2048, as rping's QP does.
#      Tested: 64-byte pings pass and the client reports 2048; a 4 KiB ping is logged.
#   5. the opt-out: guest A's rkdapl.ko reloaded with mtu_agreement=0; samples/rkdapl_rping.ko
#      server (A) at 1500 against its client (B, agreement on) at 4000: the server's QP keeps
#      the REQ's 2048 and its REP has no trailer, so the client keeps 2048 too (with one, it
#      would take 1024). Tested: 64-byte pings pass, both report 2048, A's warning says so.
#   6. the opt-out on both sides (B reloaded too), both at 1500: rkdapl_mtu's case with rdma_cm
#      moving the QPs; 4 KiB, 64 KiB and 1 MiB verified, both EPs at 1024. Both guests then
#      reload rkdapl.ko with its defaults.

MTU_KO=$KO/selftests/kmod/rkdapl_mtu.ko
MTU_PORT=7580
MTU_TMO=600
MTU_BIG=4000

# mtu_nic: this guest's test NIC (by MAC), in $REPLY.
mtu_nic() {
	local f
	REPLY=
	for f in /sys/class/net/*/address; do
		[ "$(< "$f")" = "$RKDAPL_MAC" ] && REPLY=${f%/address} && REPLY=${REPLY##*/}
	done
}

# mtu_set MTU: sets the test NIC's MTU (rxe0 follows at once: its netdev notifier sets the
# port's active MTU, which the modules report) and waits until the port is ACTIVE.
mtu_set() {
	local i
	mtu_nic
	ip link set dev "$REPLY" mtu "$1" || return 1
	for ((i = 0; i < 50; i++)); do
		[[ $(< /sys/class/infiniband/rxe0/ports/1/state) == *ACTIVE* ]] && return 0
		sleep 0.2
	done
	return 1
}

# mtu_line ROLE: the module's summary line for ROLE, in $REPLY.
mtu_line() {
	local l
	local -a lines
	REPLY=
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_mtu: $1: path MTU "*" sizes verified"* ]] && REPLY=${l#*rkdapl_mtu: }; done
}

# mtu_serve N MTU [ARGS...]: guest A's NIC at MTU, the server of case N.
mtu_serve() {
	local n=$1 mine=$2 pid rc=0 i
	shift 2
	mtu_set "$mine"
	t_check $? "mtu: $n: guest A's NIC at MTU $mine"
	timeout -s TERM -k 30 $MTU_TMO insmod "$MTU_KO" role=server dev=rxe0 port=$((MTU_PORT + n)) "$@" &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_mtu: server: listening on port $((MTU_PORT + n))" && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.5
	done
	rkdapl_signal "mtu-$n.listening"
	_log "mtu: $n: server listening at MTU $mine"
	wait $pid || rc=$?
	mtu_line server
	MTU_SERVER=$REPLY MTU_SERVER_RC=$rc
	module_loaded rkdapl_mtu && rmmod rkdapl_mtu
	mtu_set 1500
	rkdapl_wait "mtu-$n.done" $MTU_TMO
}

# mtu_client N MTU [ARGS...]: guest B's NIC at MTU, the client of case N.
mtu_client() {
	local n=$1 mine=$2 rc=0
	shift 2
	rkdapl_wait "mtu-$n.listening" $MTU_TMO || { t_fail "mtu: $n: guest A listening"; return 1; }
	mtu_set "$mine"
	t_check $? "mtu: $n: guest B's NIC at MTU $mine"
	timeout -s TERM -k 30 $MTU_TMO insmod "$MTU_KO" role=client dev=rxe0 \
		peer="$RKDAPL_PEER_IP" port=$((MTU_PORT + n)) "$@" || rc=$?
	mtu_line client
	MTU_CLIENT=$REPLY MTU_CLIENT_RC=$rc
	_log "mtu: $n: client at MTU $mine done: $REPLY"
	module_loaded rkdapl_mtu && rmmod rkdapl_mtu
	mtu_set 1500 && [[ $(< "/sys/class/net/$REPLY/mtu") == 1500 ]]
	t_check $? "mtu: $n: guest B's NIC back at MTU 1500"
	rkdapl_signal "mtu-$n.done"
}

mtu_guest_a() {
	local t0=$SECONDS
	mtu_serve 1 $MTU_BIG
	[ "$MTU_SERVER_RC" = 0 ] && [[ $MTU_SERVER == "server: path MTU 1024 (port active MTU 2048), 3 sizes verified" ]]
	t_check $? "mtu: 1: server at MTU $MTU_BIG, client at 1500: the server's EP settled on the client's 1024; 4 KiB, 64 KiB, 1 MiB written by the client arrived intact" \
		"insmod exit $MTU_SERVER_RC: ${MTU_SERVER:-no summary line}"
	mtu_serve 2 1500 timeout_ms=20000
	dmesg | grep -q "rkdapl: a connect request's path MTU 2048 is over the 1024 of rxe0's netdev: this side uses 1024"
	t_check $? "mtu: 2: server at MTU 1500, client at $MTU_BIG: the server says that the request's path MTU 2048 is over its own 1024"
	[ "$MTU_SERVER_RC" = 0 ] && [[ $MTU_SERVER == "server: path MTU 1024 (port active MTU 1024), 3 sizes verified" ]]
	t_check $? "mtu: 2: server at MTU 1500, client at $MTU_BIG: the server's EP took its own 1024; 4 KiB, 64 KiB, 1 MiB written by the client arrived intact" \
		"insmod exit $MTU_SERVER_RC: ${MTU_SERVER:-no summary line}"
	mtu_rping_a
	mtu_optout_a
	mtu_nic
	[[ $(< "/sys/class/net/$REPLY/mtu") == 1500 ]]
	t_check $? "mtu: guest A's NIC back at MTU 1500 ($((SECONDS - t0)) s for the suite)"
}

mtu_guest_b() {
	mtu_client 1 1500
	[ "$MTU_CLIENT_RC" = 0 ] && [[ $MTU_CLIENT == "client: path MTU 1024 (port active MTU 1024), 3 sizes verified" ]]
	t_check $? "mtu: 1: client at MTU 1500, server at $MTU_BIG: the client's EP settled on 1024; 4 KiB, 64 KiB, 1 MiB read back from the server intact" \
		"insmod exit $MTU_CLIENT_RC: ${MTU_CLIENT:-no summary line}"
	mtu_client 2 $MTU_BIG timeout_ms=20000
	[ "$MTU_CLIENT_RC" = 0 ] && [[ $MTU_CLIENT == "client: path MTU 1024 (port active MTU 2048), 3 sizes verified" ]]
	t_check $? "mtu: 2: client at MTU $MTU_BIG, server at 1500: the client's EP followed the server's 1024 (REP trailer); 4 KiB, 64 KiB, 1 MiB read back from the server intact" \
		"insmod exit $MTU_CLIENT_RC: ${MTU_CLIENT:-no summary line}"
	mtu_rping_b
	mtu_optout_b
}

# mtu_reload NAME [ARGS...]: reloads rkdapl.ko with ARGS (none: its defaults) and checks that it
# says at load whether the agreement is off.
mtu_reload() {
	local name=$1 rc=0 n0 n1
	shift
	n0=$(dmesg | grep -c "rkdapl: loaded (mtu_agreement=0")
	rmmod rkdapl || rc=$?
	[ $rc = 0 ] && { insmod "$KO/rkdapl.ko" "$@" || rc=$?; }
	[ $rc = 0 ] && ! module_loaded rkdapl && rc=99
	n1=$(dmesg | grep -c "rkdapl: loaded (mtu_agreement=0")
	if [ "$*" = mtu_agreement=0 ]; then
		[ $rc = 0 ] && [ $((n1 - n0)) = 1 ]
	else
		[ $rc = 0 ] && [ "$n1" = "$n0" ]
	fi
	t_check $? "$name" "rmmod/insmod exit $rc; 'loaded (mtu_agreement=0' lines $n0 before, $n1 after"
}

# Cases 5 and 6, guest A (at MTU 1500 throughout).
mtu_optout_a() {
	local port=$((MTU_PORT + 7)) pid i
	mtu_reload "mtu: 5: guest A's rkdapl.ko reloaded with mtu_agreement=0, which it logs" mtu_agreement=0
	_rping_kmod "mtu: 5: kernel rping server at MTU 1500 with mtu_agreement=0 against the kernel rping client at $MTU_BIG: 3 pings of 64 bytes, validated" \
		server 3 dev=rxe0 port=$port size=64 validate=1 timeout_ms=60000 &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -qF "rkdapl_rping: server: listening on rxe0 port $port " && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.5
	done
	rkdapl_signal mtu-5.listening
	wait $pid
	mtu_rping_line server
	[ "$REPLY" = 2048 ]
	t_check $? "mtu: 5: with mtu_agreement=0 the server's EP at MTU 1500 keeps the REQ's 2048 (rdma_cm's)" \
		"path MTU '${REPLY:-none}'"
	dmesg | grep -q "rkdapl: a connect request's path MTU 2048 is over the 1024 of rxe0's netdev: this side keeps 2048 (mtu_agreement=0)"
	t_check $? "mtu: 5: the server says that it keeps the request's 2048 with mtu_agreement=0"
	rkdapl_wait mtu-5.done $MTU_TMO
	mtu_serve 6 1500
	[ "$MTU_SERVER_RC" = 0 ] && [[ $MTU_SERVER == "server: path MTU 1024 (port active MTU 1024), 3 sizes verified" ]]
	t_check $? "mtu: 6: both sides at MTU 1500 with mtu_agreement=0: the server's EP at 1024; 4 KiB, 64 KiB, 1 MiB written by the client arrived intact" \
		"insmod exit $MTU_SERVER_RC: ${MTU_SERVER:-no summary line}"
	mtu_reload "mtu: guest A's rkdapl.ko reloaded with its defaults"
}

# Cases 5 and 6, guest B.
mtu_optout_b() {
	local port=$((MTU_PORT + 7))
	mtu_set $MTU_BIG
	t_check $? "mtu: 5: guest B's NIC at MTU $MTU_BIG"
	rkdapl_wait mtu-5.listening $MTU_TMO || t_fail "mtu: 5: guest A's kernel rping server listening"
	_rping_kmod "mtu: 5: kernel rping client at MTU $MTU_BIG against the kernel rping server at 1500 with mtu_agreement=0: 3 pings of 64 bytes, validated" \
		client 3 dev=rxe0 addr="$RKDAPL_PEER_IP" port=$port size=64 validate=1 timeout_ms=60000
	mtu_rping_line client
	[ "$REPLY" = 2048 ]
	t_check $? "mtu: 5: the client's EP (agreement on) keeps its route's 2048: the REP of a server with mtu_agreement=0 has no MTU trailer" \
		"path MTU '${REPLY:-none}'"
	mtu_set 1500 && [[ $(< "/sys/class/net/$REPLY/mtu") == 1500 ]]
	t_check $? "mtu: 5: guest B's NIC back at MTU 1500"
	rkdapl_signal mtu-5.done
	mtu_reload "mtu: 6: guest B's rkdapl.ko reloaded with mtu_agreement=0, which it logs" mtu_agreement=0
	mtu_client 6 1500
	[ "$MTU_CLIENT_RC" = 0 ] && [[ $MTU_CLIENT == "client: path MTU 1024 (port active MTU 1024), 3 sizes verified" ]]
	t_check $? "mtu: 6: both sides at MTU 1500 with mtu_agreement=0: the client's EP at 1024; 4 KiB, 64 KiB, 1 MiB read back from the server intact" \
		"insmod exit $MTU_CLIENT_RC: ${MTU_CLIENT:-no summary line}"
	mtu_reload "mtu: guest B's rkdapl.ko reloaded with its defaults"
}

# mtu_rping_line ROLE: the last "rkdapl_rping: ROLE: path MTU N" line's N, in $REPLY.
mtu_rping_line() {
	REPLY=$(dmesg | grep -o "rkdapl_rping: $1: path MTU [0-9]*" | tail -n 1)
	REPLY=${REPLY##* }
}

# Cases 3 and 4, guest A (at MTU 1500 throughout).
mtu_rping_a() {
	local port=$((MTU_PORT + 3)) pid i sz rc
	# 3. kernel rping server; B's rping -c at 4000: 64-byte pings (tested), then one 4 KiB
	# ping (logged).
	for sz in 64:3 4096:1; do
		if [ "$sz" = 64:3 ]; then
			_rping_kmod "mtu: 3: kernel rping server at MTU 1500 against rdma-core rping -c at $MTU_BIG: 3 pings of 64 bytes, validated" \
				server 3 dev=rxe0 port=$port size=64 validate=1 timeout_ms=60000 &
		else
			timeout -s TERM -k 30 120 insmod "$RPING_KO" role=server dev=rxe0 port=$port \
				size=4096 count=1 validate=1 timeout_ms=20000 &
		fi
		pid=$!
		for ((i = 0; i < 300; i++)); do
			dmesg | grep -qF "rkdapl_rping: server: listening on rxe0 port $port " && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.5
		done
		rkdapl_signal "mtu-3-${sz%:*}.listening"
		wait $pid
		_log "mtu: 3: ${sz%:*}-byte kernel server: $(dmesg | grep -E 'rkdapl_rping: server: [0-9]+ pings' | tail -n 1)"
		if [ "$sz" = 64:3 ]; then
			mtu_rping_line server
			[ "$REPLY" = 1024 ]
			t_check $? "mtu: 3: the kernel rping server's EP at MTU 1500 took its own 1024 (rping -c at $MTU_BIG keeps 2048)" \
				"path MTU '${REPLY:-none}'"
		fi
		module_loaded rkdapl_rping && rmmod rkdapl_rping
		rkdapl_wait "mtu-3-${sz%:*}.done" $MTU_TMO
		port=$((port + 2))
	done
	# 4. rping -s here; B's kernel client at 4000.
	port=$((MTU_PORT + 4))
	for sz in 64:3 4096:1; do
		if [ "$sz" = 64:3 ]; then
			_rping_user "mtu: 4: rdma-core rping -s at MTU 1500 serving the kernel rping client at $MTU_BIG: 3 pings of 64 bytes" \
				$port 3 '^server ping data: rdma-ping-[0-9]+: ' -s -a "$RKDAPL_IP" -p $port -C 3 -S 64 -v &
		else
			timeout -s TERM -k 10 90 rping -s -a "$RKDAPL_IP" -p $port -C 1 -S 4096 -v \
				> "$RKDAPL_SYNC/mtu-rping-s-4096.log" 2>&1 &
		fi
		pid=$!
		for ((i = 0; i < 100; i++)); do
			rdma res show cm_id 2>/dev/null | grep LISTEN | grep -qF ":$port " && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.2
		done
		rkdapl_signal "mtu-4-${sz%:*}.ready"
		rkdapl_wait "mtu-4-${sz%:*}.done" $MTU_TMO
		for ((i = 0; i < 30; i++)); do
			kill -0 $pid 2>/dev/null || break
			sleep 1
		done
		if kill -0 $pid 2>/dev/null; then
			# rping -s waits for a client that gave up: stop it (its timeout's pid).
			[ "$sz" = 64:3 ] && [ -s /run/rping-$port.pid ] && kill -TERM "$(< /run/rping-$port.pid)"
			[ "$sz" = 4096:1 ] && kill -TERM $pid
		fi
		rc=0
		wait $pid || rc=$?
		[ "$sz" = 4096:1 ] && _log "mtu: 4: rping -s, 4096 bytes: exit $rc: $(grep -v '^server ping data' "$RKDAPL_SYNC/mtu-rping-s-4096.log" | tail -n 4 | tr '\n' '|')"
		port=$((port + 2))
	done
}

# Cases 3 and 4, guest B (at MTU 4000 throughout).
mtu_rping_b() {
	local port=$((MTU_PORT + 3)) rc sz
	mtu_set $MTU_BIG
	t_check $? "mtu: 3: guest B's NIC at MTU $MTU_BIG"
	for sz in 64:3 4096:1; do
		rkdapl_wait "mtu-3-${sz%:*}.listening" $MTU_TMO || t_fail "mtu: 3: guest A's kernel rping server listening (${sz%:*} bytes)"
		if [ "$sz" = 64:3 ]; then
			_rping_user "mtu: 3: rdma-core rping -c at MTU $MTU_BIG against the kernel rping server at 1500: 3 pings of 64 bytes, -V" \
				$port 3 '^ping data: rdma-ping-[0-9]+: ' -c -a "$RKDAPL_PEER_IP" -p $port -C 3 -S 64 -V -v
		else
			rc=0
			timeout -s TERM -k 10 60 rping -c -a "$RKDAPL_PEER_IP" -p $port -C 1 -S 4096 -V -v \
				> /tmp/mtu-rping-c-4096.log 2>&1 || rc=$?
			_log "mtu: 3: rping -c, 4096 bytes: exit $rc: $(tr '\n' '|' < /tmp/mtu-rping-c-4096.log | tail -c 300)"
		fi
		rkdapl_signal "mtu-3-${sz%:*}.done"
		port=$((port + 2))
	done
	port=$((MTU_PORT + 4))
	for sz in 64:3 4096:1; do
		rkdapl_wait "mtu-4-${sz%:*}.ready" $MTU_TMO || t_fail "mtu: 4: guest A's rping -s listening (${sz%:*} bytes)"
		if [ "$sz" = 64:3 ]; then
			_rping_kmod "mtu: 4: kernel rping client at MTU $MTU_BIG against rdma-core rping -s at 1500: 3 pings of 64 bytes, validated" \
				client 3 dev=rxe0 addr="$RKDAPL_PEER_IP" port=$port size=64 validate=1 timeout_ms=60000
			mtu_rping_line client
			[ "$REPLY" = 2048 ]
			t_check $? "mtu: 4: the kernel rping client's EP at MTU $MTU_BIG keeps its route's 2048 (rping -s sends no MTU in its REP)" \
				"path MTU '${REPLY:-none}'"
		else
			rc=0
			timeout -s TERM -k 30 90 insmod "$RPING_KO" role=client dev=rxe0 addr="$RKDAPL_PEER_IP" \
				port=$port size=4096 count=1 validate=1 timeout_ms=20000 || rc=$?
			_log "mtu: 4: kernel client, 4096 bytes: insmod exit $rc: $(dmesg | grep -E 'rkdapl_rping: client: [0-9]+ pings' | tail -n 1)"
			module_loaded rkdapl_rping && rmmod rkdapl_rping
		fi
		rkdapl_signal "mtu-4-${sz%:*}.done"
		port=$((port + 2))
	done
	mtu_set 1500 && [[ $(< "/sys/class/net/$REPLY/mtu") == 1500 ]]
	t_check $? "mtu: 3, 4: guest B's NIC back at MTU 1500"
}
