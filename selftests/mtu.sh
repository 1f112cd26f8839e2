#!/bin/bash
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh): peers whose netdev MTUs
# differ, with selftests/kmod/rkdapl_mtu.ko (server on guest A, client on guest B): one
# connection each way round, the path MTU both EPs report (rkdapl_ep_query()), and RDMA WRITEs
# (client -> server) and READs (server -> client) of 4 KiB, 64 KiB and 1 MiB, every byte
# checked on the side that received it. The MTUs go back to 1500 afterwards.
#
#   1. server (A) at MTU 4000 (rxe active MTU 2048), client (B) at 1500 (1024): rdma_cm gives
#      both QPs the connecting side's 1024, and everything moves.
#   2. server (A) at 1500, client (B) at 4000: both QPs get the client's 2048 (RoCE settles
#      nothing); the server warns about the request. The transfers are logged, not tested:
#      measured, the client's 4 KiB WRITE arrives, its READ back never completes (the
#      server's 2 KiB responses do not leave its 1500-byte netdev). docs/guide.md, "Path MTU".

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
	_log "mtu: case 2 server: rc $MTU_SERVER_RC: $MTU_SERVER"
	dmesg | grep -q "rkdapl: a connect request's path MTU 2048 is over the 1024 of rxe0's netdev"
	t_check $? "mtu: 2: server at MTU 1500, client at $MTU_BIG: the server warns that the request's path MTU 2048 is over its own 1024"
	[[ $MTU_SERVER == "server: path MTU 2048 "* ]]
	t_check $? "mtu: 2: the server's EP reports the path MTU rdma_cm gave it, the client's 2048" \
		"${MTU_SERVER:-no summary line}"
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
	_log "mtu: case 2 client: rc $MTU_CLIENT_RC: $MTU_CLIENT"
	[[ $MTU_CLIENT == "client: path MTU 2048 (port active MTU 2048)"* ]]
	t_check $? "mtu: 2: the client's EP reports the path MTU it offered, 2048" \
		"${MTU_CLIENT:-no summary line}"
}
