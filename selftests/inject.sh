#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-b.sh (after guest-lib.sh and soak.sh): allocation-failure
# injection (failslab and fail_page_alloc) in rkdapl's operations.
#
#   inject_suite   loads selftests/kmod/rkdapl_fault.ko and, for each operation (IA open, PZ,
#                  EVD, EP, LMR and PSP create, a loopback connect with a SEND), runs
#                  selftests/fail_nth.py: every allocation the operation makes in the calling
#                  task is made to fail in turn, and each attempt must end in a clean error
#                  (or succeed), never hang or corrupt data; the attempt after the last one
#                  must succeed. Then nothing may be left in rdma res or under rkdapl's
#                  debugfs, and kmemleak must find nothing (guest B runs this first).
# Allocations rdma_cm and ib_core make in their own workers are outside the calling task and
# are not reached (see rkdapl_fault.c). RKDAPL_INJECT_OPS selects operations,
# RKDAPL_INJECT_VERBOSE=2 logs a stack trace for each injected failure.

INJECT_KO=$KO/selftests/kmod/rkdapl_fault.ko
INJECT_OPS=${RKDAPL_INJECT_OPS:-ia_open pz_create evd_create ep_create lmr_create psp_create connect}
# 2: a stack trace in dmesg for every injected failure (to find the site of a bad result).
INJECT_VERBOSE=${RKDAPL_INJECT_VERBOSE:-0}
INJECT_DBG=/sys/kernel/debug

# inject_knobs on|off: make failslab and fail_page_alloc consider sleeping and order-0
# allocations (fail-nth only; their probability stays 0), quietly; or restore the defaults.
inject_knobs() {
	local a
	for a in failslab fail_page_alloc; do
		if [ "$1" = on ]; then
			echo N > $INJECT_DBG/$a/ignore-gfp-wait
			echo "$INJECT_VERBOSE" > $INJECT_DBG/$a/verbose
		else
			echo Y > $INJECT_DBG/$a/ignore-gfp-wait
			echo 2 > $INJECT_DBG/$a/verbose
		fi
	done
	[ "$1" = on ] && echo 0 > $INJECT_DBG/fail_page_alloc/min-order
	[ "$1" = on ] || echo 1 > $INJECT_DBG/fail_page_alloc/min-order
}

# inject_leaks: kmemleak's report after a fresh scan, in $REPLY (empty: no leak).
inject_leaks() {
	local kml=$INJECT_DBG/kmemleak
	REPLY=
	[ -e $kml ] || return
	echo scan > $kml
	echo scan > $kml
	REPLY=$(grep -A3 'unreferenced object' $kml)
}

inject_suite() {
	local op out rc res0 left level
	if [ ! -d $INJECT_DBG/failslab ] || [ ! -e /proc/self/fail-nth ]; then
		t_fail "inject: failslab, fail_page_alloc and fail-nth are in the kernel" "no $INJECT_DBG/failslab or /proc/self/fail-nth"
		return
	fi
	soak_res
	res0=$REPLY
	insmod "$INJECT_KO" dev=rxe0 peer="$RKDAPL_IP"
	rc=$?
	t_check $rc "inject: load rkdapl_fault.ko"
	[ $rc = 0 ] || return
	inject_knobs on
	# Each failure may log a warning and a memory report; on a TCG serial console those cost
	# more than the sweep. They still go to dmesg.
	read -r level _ < /proc/sys/kernel/printk
	dmesg -n 1
	for op in $INJECT_OPS; do
		_log "inject: $op"
		out=$(python3 "$TOP/selftests/fail_nth.py" "$op" 5000 2>&1)
		rc=$?
		_log "inject: $out"
		t_check $rc "inject: $op: each allocation failure gives a clean error, then it succeeds (${out#*: })" \
			"$out"
	done
	dmesg -n "$level"
	inject_knobs off
	rmmod rkdapl_fault
	t_check $? "inject: unload rkdapl_fault.ko"
	soak_res
	left=$(ls -d $INJECT_DBG/rkdapl/ia* 2>/dev/null)
	[ "$REPLY" = "$res0" ] && [ -z "$left" ]
	t_check $? "inject: nothing left in rdma res or rkdapl's debugfs after the sweeps" \
		"rdma res before '$res0', after '$REPLY'; debugfs: $left"
	sleep 6 # kmemleak reports objects only once they are 5 s old
	inject_leaks
	[ -z "$REPLY" ]
	t_check $? "inject: kmemleak finds no leak after the sweeps" "${REPLY//$'\n'/ | }"
}
