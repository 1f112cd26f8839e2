#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE a guest by selftests/guest-{a,b}.sh after guest-lib.sh: the kernel rping
# (samples/rkdapl_rping.ko, on guest A) against rdma-core's rping (on guest B), both ways.
#
#   rping_guest_a   for each SIZE:COUNT in RKDAPL_RPING (default "64:10 65535:3";
#                   4096-byte pings run over IPv6, selftests/ip6.sh, and in selftests/mtu.sh):
#                     kernel server (role=server), B runs `rping -c -V -v`
#                     kernel client (role=client), B runs `rping -s -v`
#   rping_guest_b   the rdma-core side of the same runs
#
# Tests (each direction on both guests, so either side can fail it):
#   A: insmod exit status 0 and the summary line "<role>: COUNT pings, COUNT validated"
#   B: rping's exit status 0 and exactly COUNT "ping data:" lines of -v (rping -c prints one
#      per ping after its -V check passed; rping -s one per RDMA READ it served)
# Barriers ($RKDAPL_SYNC): rping-<port>.listening (A's kernel server), rping-<port>.ready
# (B's rping -s), rping-<port>.done (either side finished, so the other one stops waiting).
# Ports: 7174 + 2 i for the kernel server of configuration i, + 1 for B's rping -s.

RPING_KO=$KO/samples/rkdapl_rping.ko
RPING_CONFIGS=${RKDAPL_RPING:-"64:10 65535:3"}
RPING_TMO=600

# Summary lines of rkdapl_rping role $1 in dmesg.
_rping_summaries() { dmesg | grep -E "rkdapl_rping: $1: [0-9]+ pings, "; }

# _rping_kmod NAME ROLE COUNT ARGS...: insmod rkdapl_rping.ko role=ROLE count=COUNT ARGS,
# then checks its exit status and its one new summary line.
_rping_kmod() {
	local name=$1 role=$2 count=$3 rc=0 before after sum want
	shift 3
	want="rkdapl_rping: $role: $count pings, $count validated"
	before=$(_rping_summaries "$role" | wc -l)
	_log "$name: insmod rkdapl_rping.ko role=$role count=$count $*"
	timeout -s TERM -k 30 $RPING_TMO insmod "$RPING_KO" role="$role" count="$count" \
		"$@" || rc=$?
	module_loaded rkdapl_rping && rmmod rkdapl_rping
	after=$(_rping_summaries "$role" | wc -l)
	sum=$(_rping_summaries "$role" | tail -n 1)
	sum=${sum#*] }
	_log "$name: insmod exit $rc, summary: ${sum:-none}"
	if [ $rc != 0 ]; then
		t_fail "$name" "insmod exit $rc, summary: ${sum:-none}"
	elif [ $((after - before)) != 1 ] || [ "$sum" != "$want" ]; then
		t_fail "$name" "summary '${sum:-none}', want '$want'"
	else
		t_ok "$name"
	fi
}

# _rping_user NAME PORT COUNT WANT_RE ARGS...: runs rping ARGS (the pid of its timeout in
# /run/rping-PORT.pid, its output in $RKDAPL_SYNC/rping-PORT.log), then checks its exit
# status (rping -c also exits 0 when the server disconnects early) and that exactly COUNT
# output lines match WANT_RE.
_rping_user() {
	local name=$1 port=$2 count=$3 re=$4 rc=0 n=0 l out pidf=/run/rping-$2.pid
	local -a lines
	shift 4
	out=$RKDAPL_SYNC/${RKDAPL_SYNC_PREFIX:-}rping-$port.log
	_log "$name: rping $* (output in $out)"
	timeout -s TERM -k 10 $RPING_TMO rping "$@" > "$out" 2>&1 &
	echo $! > "$pidf"
	wait $! || rc=$?
	mapfile -t lines < "$out"
	for l in "${lines[@]}"; do [[ $l =~ $re ]] && n=$((n + 1)); done
	_log "$name: rping exit $rc, $n of ${#lines[@]} output lines match /$re/"
	if [ $rc != 0 ]; then
		t_fail "$name" "rping exit $rc: $(tail -n 3 "$out" | tr '\n' '|')"
	elif [ $n != "$count" ]; then
		t_fail "$name" "$n lines match /$re/, want $count: $(tail -n 3 "$out" | tr '\n' '|')"
	else
		t_ok "$name"
	fi
}

rping_guest_a() {
	local cfg size count port i=0 pid n
	for cfg in $RPING_CONFIGS; do
		size=${cfg%:*} count=${cfg#*:} port=$((7174 + 2 * i)) i=$((i + 1))

		# 1. kernel server, rdma-core rping -c on B
		_rping_kmod "rping: kernel server against rdma-core rping -c ($count pings of $size bytes, validated)" \
			server "$count" dev=$RKDAPL_DEV port=$port size="$size" validate=1 verbose=1 &
		pid=$!
		for ((n = 0; n < 300; n++)); do
			dmesg | grep -qF "rkdapl_rping: server: listening on $RKDAPL_DEV port $port " && break
			kill -0 $pid 2>/dev/null || break
			sleep 1
		done
		rkdapl_signal "rping-$port.listening"
		wait $pid
		rkdapl_signal "rping-$port.done"

		# 2. rdma-core rping -s on B, kernel client
		port=$((port + 1))
		if rkdapl_wait "rping-$port.ready" $RPING_TMO; then
			_rping_kmod "rping: kernel client against rdma-core rping -s ($count pings of $size bytes, validated)" \
				client "$count" dev=$RKDAPL_DEV addr="$RKDAPL_PEER_IP" port=$port \
				size="$size" validate=1 verbose=1 timeout_ms=60000
		else
			t_fail "rping: kernel client against rdma-core rping -s ($count pings of $size bytes, validated)" \
				"B's rping -s never became ready"
		fi
		rkdapl_signal "rping-$port.done"
	done
}

rping_guest_b() {
	local cfg size count port i=0 pid n
	for cfg in $RPING_CONFIGS; do
		size=${cfg%:*} count=${cfg#*:} port=$((7174 + 2 * i)) i=$((i + 1))

		# 1. rping -c against A's kernel server
		if rkdapl_wait "rping-$port.listening" $RPING_TMO; then
			_rping_user "rping: rdma-core rping -c against kernel server ($count pings of $size bytes, -V, counted)" \
				$port "$count" '^ping data: rdma-ping-[0-9]+: ' \
				-c -a "$RKDAPL_PEER_IP" -p $port -C "$count" -S "$size" -V -v
		else
			t_fail "rping: rdma-core rping -c against kernel server ($count pings of $size bytes, -V, counted)" \
				"A's kernel server never listened"
		fi
		rkdapl_wait "rping-$port.done" $RPING_TMO

		# 2. rping -s for A's kernel client
		port=$((port + 1))
		rm -f /run/rping-$port.pid
		_rping_user "rping: rdma-core rping -s serving kernel client ($count pings of $size bytes, counted)" \
			$port "$count" '^server ping data: rdma-ping-[0-9]+: ' \
			-s -a "$RKDAPL_IP" -p $port -C "$count" -S "$size" -v &
		pid=$!
		for ((n = 0; n < 100; n++)); do
			rdma res show cm_id 2>/dev/null | grep LISTEN | grep -qF ":$port " && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.2
		done
		rkdapl_signal "rping-$port.ready"
		# rping -s ends when the client disconnects; stop it if A finished without connecting
		while kill -0 $pid 2>/dev/null; do
			if [ -e "$RKDAPL_SYNC/${RKDAPL_SYNC_PREFIX:-}rping-$port.done" ] || [ -e "$RKDAPL_SYNC/rc-a" ]; then
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
	done
}
