#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh): observability of a live
# rkdapl consumer (guest B needs only its helpers, for removal.sh).
#
#   observe_suite    loads selftests/kmod/rkdapl_observe.ko (a loopback connection that stays
#                    up: 1 SEND, 1 RMR bind, $OBS_WRITES RDMA WRITEs), then checks what
#                    people look at: `rdma res show` lists its CM ids, CQs, PDs and MRs under
#                    the consumer's module name (and its QPs, as rdma_cm names them); /sys/kernel/debug/rkdapl shows the IA and both EPs
#                    with state, peer and exact counters; the rkdapl trace events saw every post,
#                    completion and CM event; with its PSP freed, the accepted EP's CM id
#                    (named after the listener by ib_core) still shows the name. Unloading the
#                    consumer removes all of it.
#
# Copies of the outputs go to $RKDAPL_SYNC/observe-*.txt (docs/observability.md quotes them).

OBS_KO=$KO/selftests/kmod/rkdapl_observe.ko
OBS_WRITES=640	# more than one EP's 512 send-queue slots
OBS_PORT=7520
OBS_DBG=/sys/kernel/debug/rkdapl
OBS_TR=/sys/kernel/tracing

# obs_file PATH: the file's content in $REPLY ("" if missing).
obs_file() {
	REPLY=
	[ -r "$1" ] && REPLY=$(< "$1")
}

# obs_count PATTERN FILE: lines of FILE matching the bash regex PATTERN, in $REPLY.
obs_count() {
	local l n=0
	local -a all
	mapfile -t all < "$2"
	for l in "${all[@]}"; do [[ $l =~ $1 ]] && n=$((n + 1)); done
	REPLY=$n
}

observe_suite() {
	local rc=0 ia= d ep c_ep= s_ep= out=$RKDAPL_SYNC l n
	local -a lines
	# The badarg suite (run before) makes DTOs fail with remote access errors on purpose:
	# each failure is logged with rkdapl's prefix (pr_warn_ratelimited: at most 10 per 5 s).
	mapfile -t lines < <(dmesg)
	n=0
	for l in "${lines[@]}"; do
		[[ $l =~ \]\ rkdapl:\ [a-z0-9_]+\ ep[0-9]+\ qpn\ [1-9][0-9]*:\ [A-Z_]+\ cookie\ 0x[0-9a-f]+\ failed:\ REMOTE_ACCESS_ERROR\ \(remote\ access\ error\) ]] &&
			n=$((n + 1))
	done
	if suite_selected badarg; then
		[ "$n" -ge 1 ]
		t_check $? "observe: a DTO failed by the badarg suite is logged as 'rkdapl: <device> ep<M> qpn <N>: <OP> cookie ... failed: REMOTE_ACCESS_ERROR'" \
			"no such line in dmesg"
	else
		t_skip "observe: a DTO failed by the badarg suite is logged as 'rkdapl: <device> ep<M> qpn <N>: <OP> cookie ... failed: REMOTE_ACCESS_ERROR'" \
			"the badarg suite did not run in this boot"
	fi
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	mountpoint -q $OBS_TR || mount -t tracefs none $OBS_TR
	if [ -d $OBS_TR/events/rkdapl ]; then
		t_ok "observe: trace events rkdapl:* are registered"
		echo 0 > $OBS_TR/tracing_on
		echo 4096 > $OBS_TR/buffer_size_kb
		echo > $OBS_TR/trace
		echo 1 > $OBS_TR/events/rkdapl/enable
		echo 1 > $OBS_TR/tracing_on
	else
		t_fail "observe: trace events rkdapl:* are registered" "no $OBS_TR/events/rkdapl"
	fi

	_log "observe: insmod rkdapl_observe.ko"
	timeout -k 10 600 insmod "$OBS_KO" peer="$RKDAPL_IP" port=$OBS_PORT writes=$OBS_WRITES ||
		rc=$?
	echo 0 > $OBS_TR/tracing_on 2>/dev/null
	t_check $rc "observe: a consumer connects a loopback pair, sends, binds, writes $OBS_WRITES x 64 B (more than the send queue's slots)" \
		"insmod exit $rc (see dmesg rkdapl_observe:)"
	if [ $rc != 0 ]; then
		module_loaded rkdapl_observe && rmmod rkdapl_observe
		return
	fi

	# rdma res: every object under the consumer's name.
	rdma res show > "$out/observe-rdma-res.txt" 2>&1
	{
		echo "# rdma res show cm_id"; rdma res show cm_id
		echo "# rdma res show qp"; rdma res show qp
		echo "# rdma res show cq"; rdma res show cq
		echo "# rdma res show pd"; rdma res show pd
		echo "# rdma res show mr"; rdma res show mr
	} > "$out/observe-rdma-res-objects.txt" 2>&1
	# On RoCE the RDMA layer creates the QPs itself (rust/kernel/rdma/cm/qp_state.rs) under the
	# CM id's owner name; rdma_create_qp() (iWARP) would list them as [rdma_cm].
	for kind in cm_id:3 qp:2 cq:4 pd:1 mr:1; do
		rdma res show "${kind%:*}" > /tmp/obs-res.txt 2>&1
		obs_count 'rkdapl_observe' /tmp/obs-res.txt
		[ "$REPLY" -ge "${kind#*:}" ]
		t_check $? "observe: rdma res show ${kind%:*} lists the consumer's ${kind%:*}s as rkdapl_observe (at least ${kind#*:})" \
			"$REPLY lines name rkdapl_observe: $(tr '\n' '|' < /tmp/obs-res.txt | cut -c1-300)"
	done
	rdma res show qp > /tmp/obs-res.txt 2>&1
	obs_count 'type RC state RTS' /tmp/obs-res.txt
	[ "$REPLY" -ge 2 ]
	t_check $? "observe: rdma res show qp lists the pair's 2 RC QPs in RTS" \
		"$REPLY RC QPs in RTS: $(tr '\n' '|' < /tmp/obs-res.txt | cut -c1-300)"

	# debugfs: the IA of this consumer and its two EPs.
	for d in $OBS_DBG/ia*; do
		obs_file "$d/info"
		[[ $REPLY == *"owner rkdapl_observe"* ]] && ia=$d
	done
	[ -n "$ia" ]
	t_check $? "observe: debugfs $OBS_DBG/ia<N>/info names device and owner" \
		"no ia*/info with 'owner rkdapl_observe' under $OBS_DBG"
	: > "$out/observe-debugfs.txt"
	if [ -n "$ia" ]; then
		for f in "$ia"/info "$ia"/ep*/*; do
			obs_file "$f"
			printf '==> %s <==\n%s\n' "${f#/sys/kernel/debug/}" "$REPLY" >> "$out/observe-debugfs.txt"
		done
		for ep in "$ia"/ep*; do
			obs_file "$ep/counters"
			# Each EP's counters have a "recv queue:" line: tell them apart by the
			# operations only one of them posted (and not by glob order: ep99 sorts
			# after ep100).
			[[ $REPLY == *"rdma_write posted"* ]] && c_ep=$ep
			[[ $REPLY == *"rmr_bind   posted"* ]] && s_ep=$ep
		done
	fi
	n=0
	for ep in "$c_ep" "$s_ep"; do
		[ -n "$ep" ] || continue
		obs_file "$ep/state"
		[ "$REPLY" = CONNECTED ] && n=$((n + 1))
	done
	[ $n = 2 ]
	t_check $? "observe: debugfs ep<M>/state of both EPs is CONNECTED" \
		"client ep '${c_ep##*/}', server ep '${s_ep##*/}', $n CONNECTED"
	# debugfs ep<M>/qp: the device and the QP number, which rdma res lists (lqpn).
	local qpns=() q
	rdma res show qp > /tmp/obs-res.txt 2>&1
	n=0
	for ep in "$c_ep" "$s_ep"; do
		[ -n "$ep" ] || continue
		obs_file "$ep/qp"
		q=
		[[ $REPLY =~ ^device\ ([a-z0-9_]+)\ qpn\ ([1-9][0-9]*)$ ]] && q=${BASH_REMATCH[2]}
		qpns+=("${q:-none}")
		[ -n "$q" ] && grep -qE "lqpn $q .*rkdapl_observe" /tmp/obs-res.txt && n=$((n + 1))
	done
	[ $n = 2 ]
	t_check $? "observe: debugfs ep<M>/qp names the device and a QP number rdma res show qp lists (lqpn)" \
		"qpn client ${qpns[0]:-?}, server ${qpns[1]:-?}; rdma res: $(tr '\n' '|' < /tmp/obs-res.txt | cut -c1-300)"
	obs_file "$c_ep/peer"
	[[ $REPLY == "$RKDAPL_IP:$OBS_PORT" ]]
	t_check $? "observe: debugfs ep<M>/peer of the client is $RKDAPL_IP:$OBS_PORT" "peer '$REPLY'"
	obs_file "$c_ep/counters"
	l=$REPLY
	[[ $l == *"send       posted 1 completed 1 bytes 1000"* &&
		$l == *"rdma_write posted $OBS_WRITES completed $OBS_WRITES bytes $((OBS_WRITES * 64))"* &&
		$l == *"send queue: in_flight 0 errors 0 flushed 0 refused 0"* ]]
	t_check $? "observe: debugfs client counters: 1 send (1000 B), $OBS_WRITES rdma_write ($((OBS_WRITES * 64)) B), nothing in flight" \
		"counters: ${l//$'\n'/ | }"
	obs_file "$s_ep/counters"
	l=$REPLY
	[[ $l == *"recv       posted 1 completed 1 bytes 1000"* &&
		$l == *"rmr_bind   posted 2 completed 2"* &&
		$l == *"recv queue: in_flight 0 errors 0"* ]]
	t_check $? "observe: debugfs server counters: 1 recv (1000 B), 2 rmr_bind (an RMR, a pooled grant)" \
		"counters: ${l//$'\n'/ | }"
	obs_file "$c_ep/evd"
	[[ $REPLY == *"dto_evd: queued 0 size 1024 overflows 0"* && $REPLY == *"conn_evd: queued 0 size 16 overflows 0"* ]]
	t_check $? "observe: debugfs ep<M>/evd shows the EVDs' depth, size and overflows" "evd: ${REPLY//$'\n'/ | }"

	# Trace events: one post and one completion per DTO, the CM events of both EPs.
	if [ -r $OBS_TR/trace ]; then
		cp $OBS_TR/trace /tmp/obs-trace.txt
		# Every RDMA WRITE is the client's: its trace events carry the QP number of its
		# debugfs qp file.
		obs_count "rkdapl_post: ${c_ep##*/} qpn=${qpns[0]:-none} RDMA_WRITE .* ret=0" /tmp/obs-trace.txt
		local posts=$REPLY
		obs_count "rkdapl_completion: ${c_ep##*/} qpn=${qpns[0]:-none} RDMA_WRITE .* SUCCESS len=64" /tmp/obs-trace.txt
		local comps=$REPLY
		[ "$posts" = $OBS_WRITES ] && [ "$comps" = $OBS_WRITES ]
		t_check $? "observe: trace rkdapl_post and rkdapl_completion once per RDMA WRITE ($OBS_WRITES each), with the client's EP and QP number" \
			"$posts posts, $comps completions traced"
		obs_count 'rkdapl_cm_event: ep[0-9]+ qpn=[1-9][0-9]* established status=0' /tmp/obs-trace.txt
		[ "$REPLY" = 2 ]
		t_check $? "observe: trace rkdapl_cm_event ESTABLISHED on both EPs" "$REPLY traced"
		{
			grep -m 3 'rkdapl_cm_event' /tmp/obs-trace.txt
			grep -m 2 'rkdapl_post: .* SEND\|rkdapl_post: .* RECV' /tmp/obs-trace.txt
			grep -m 2 'rkdapl_completion: .* RECV\|rkdapl_completion: .* SEND' /tmp/obs-trace.txt
			grep -m 2 'RDMA_WRITE' /tmp/obs-trace.txt
		} > "$out/observe-trace.txt"
		echo 0 > $OBS_TR/events/rkdapl/enable
		echo > $OBS_TR/trace
	fi

	# ib_core names a CM id a listener's connect request creates after the listener (the
	# pointer, not a copy): with the PSP freed, the accepted EP's id must still show the name.
	rc=0
	echo 1 > /sys/module/rkdapl_observe/parameters/free_psp || rc=$?
	rdma res show cm_id > /tmp/obs-res.txt 2>&1
	obs_count 'rkdapl_observe' /tmp/obs-res.txt
	n=$REPLY
	obs_count 'LISTEN.*rkdapl_observe' /tmp/obs-res.txt
	[ $rc = 0 ] && [ "$n" -ge 2 ] && [ "$REPLY" = 0 ]
	t_check $? "observe: with its PSP freed, rdma res show cm_id still names both EPs' CM ids rkdapl_observe (the accepted one after the freed listener)" \
		"free_psp write exit $rc; $n lines name rkdapl_observe, $REPLY of them LISTEN: $(tr '\n' '|' < /tmp/obs-res.txt | cut -c1-300)"
	rc=0
	rmmod rkdapl_observe || rc=$?
	t_check $rc "observe: rmmod rkdapl_observe (frees its objects)" "rmmod exit $rc"
	{ rdma res show cm_id; rdma res show cq; rdma res show pd; rdma res show mr; } > /tmp/obs-res.txt 2>&1
	obs_count 'rkdapl_observe' /tmp/obs-res.txt
	n=$REPLY
	[ "$n" = 0 ] && [ -n "$ia" ] && [ ! -e "$ia" ]
	t_check $? "observe: after unload no object is listed for it and its debugfs directory is gone" \
		"$n objects listed, ${ia:-?} exists: $([ -e "$ia" ] && echo yes || echo no)"
}
