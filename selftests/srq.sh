#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Shared receive queues: selftests/kmod/rkdapl_srq.ko (rkdapl_srq/main.c says what each role checks).
# Sourced by guest-a.sh / guest-b.sh after guest-lib.sh (and removal.sh, for rm_rxe_up).
#   srq_guest_a:   badarg; loopback (8 EPs over the guest's own address)
#   srq_serve_a:   the server of one SRQ for guest B's 8 EPs (two-guest); srq_clients_b: B's side
#   srq_removal:   rdma link delete rxe0 with an SRQ alive (A; rxe0 is added back)
# Every TAP line of the module becomes one test "srq: <suite>: <name>".

# The module under test: this tree's build or $RKDAPL_KO's (guest-lib.sh's KO).
SRQ_KO=$KO/selftests/kmod/rkdapl_srq.ko

# srq_kmod SUITE TIMEOUT insmod-args...: runs rkdapl_srq.ko and records its TAP lines; then a
# test that the run completed and insmod's status matches its results (0 iff all passed).
srq_kmod() {
	local suite=$1 tmo=$2 mark=0 rc=0 l got=0 done=0 failed=0 ok buf= reason
	local -a lines
	shift 2
	_tap_sync
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_srq: "* ]] && mark=$((mark + 1)); done
	_log "srq: $suite: insmod rkdapl_srq.ko $*"
	timeout -s TERM -k 30 "$tmo" insmod "$SRQ_KO" "$@" || rc=$?
	_log "srq: $suite: insmod returned $rc"
	[ "${SRQ_KEEP:-0}" = 1 ] && return $rc
	module_loaded rkdapl_srq && rmmod rkdapl_srq
	srq_collect "$suite" $mark $rc
}

# srq_collect SUITE MARK RC: the module's TAP lines after the first MARK ones (RC -: the results
# were printed at rmmod, there is no insmod status to compare).
srq_collect() {
	local suite=$1 mark=$2 rc=$3 l got=0 done=0 failed=0 ok buf= reason
	local -a lines
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do
		[[ $l == *"rkdapl_srq: "* ]] || continue
		if [ $mark -gt 0 ]; then
			mark=$((mark - 1))
			continue
		fi
		l=${l#*rkdapl_srq: }
		if [[ $l =~ ^(not\ ok|ok)\ [0-9]+\ -\ (.*)$ ]]; then
			got=$((got + 1))
			ok=${BASH_REMATCH[1]}
			[ "$ok" = ok ] || failed=1
			TAPN=$((TAPN + 1))
			buf+="$ok $TAPN - srq: $suite: ${BASH_REMATCH[2]}"$'\n'
		elif [[ $l == "#"* ]]; then
			[[ $l == "# done "* ]] && done=1
			_log "srq: $suite: $l"
		fi
	done
	printf '%s' "$buf" >> "$TAP"
	printf '%s' "$buf"
	if [ $done = 1 ] && [ $got -gt 0 ]; then
		reason="insmod exit $rc"
		[ "$rc" = 124 ] && reason="insmod timed out"
		if [ "$rc" = - ]; then
			t_ok "srq: $suite: module run completed"
		else
			if [ $failed = 1 ]; then [ $rc != 0 ]; else [ $rc = 0 ]; fi
			t_check $? "srq: $suite: module run completed, insmod status matches" "$reason"
		fi
	else
		t_fail "srq: $suite: module run completed" "insmod exit $rc, $got results, no '# done' line"
	fi
}

# The device goes away (rdma link delete) with an SRQ holding 16 RECVs and an EP on it; the
# module reports at rmmod (IA catastrophic, each RECV flushed once, the frees), then rxe0 is
# added again.
srq_removal() {
	local mark=0 rc=0 l
	local -a lines
	_tap_sync
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_srq: "* ]] && mark=$((mark + 1)); done
	insmod "$SRQ_KO" role=removal dev=rxe0 || rc=$?
	t_check $rc "srq: removal: SRQ, RECVs and an EP set up" "insmod exit $rc"
	[ $rc = 0 ] || return 1
	timeout -k 5 60 rdma link delete rxe0
	t_check $? "srq: removal: rdma link delete rxe0 with an SRQ alive"
	rmmod rkdapl_srq
	srq_collect removal $mark -
	rm_rxe_up
	t_check $? "srq: removal: rxe0 back"
}

srq_guest_a() {
	srq_kmod badarg 300 role=badarg dev=rxe0
	srq_kmod loopback 600 role=loopback dev=rxe0 peer="$RKDAPL_IP" port=7580
}

# Two guests: A serves 8 EPs on one SRQ (port 7581) once B waits for it; B opens them.
srq_serve_a() {
	rkdapl_signal a.srq
	srq_kmod two-guest 900 role=server dev=rxe0 port=7581 listen_ms=600000
}

srq_clients_b() {
	if rkdapl_wait a.srq 1200; then
		srq_kmod two-guest 900 role=client dev=rxe0 peer="$RKDAPL_PEER_IP" port=7581 \
			connect_ms=600000
	else
		t_fail "srq: two-guest: guest A serves" "no $RKDAPL_SYNC/a.srq"
	fi
}
