#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh and observe.sh): device
# removal (guest B runs it over siw0 in the siw phase, selftests/transport.sh).
#
#   removal_suite   loads rkdapl_observe.ko traffic=1 (a connected loopback pair, RECVs posted on
#                   both EPs, a kthread running RDMA WRITEs and READs), deletes rxe0 under it
#                   with `rdma link delete`, and checks that the removal completes within
#                   $RM_LIMIT s, that the consumer saw BROKEN on both EPs, every RECV flushed
#                   and -ENODEV/-ENOTCONN from later calls, that nothing of it is left in
#                   `rdma res`, that the consumer then frees every handle without error, and
#                   that rxe0 re-added can be opened again (a full rkdapl_observe run).
#   removal_free_suite  an EP freed from a work item while the removal's BROKEN event is in
#                   its upcall (rkdapl_test role=removal_free), then rxe0 re-added.
#   unload_suite    loads rkdapl_observe.ko leak=1 (connected pair, grant, LMRs, PSP, EVDs) and
#                   unloads it without any free: rkdapl frees everything it left open when the
#                   module goes (module notifier), nothing is left in rdma res or debugfs.

RM_LIMIT=30
RM_PORT=7530

# rm_dmesg_line PATTERN: the last dmesg line containing PATTERN, in $REPLY.
rm_dmesg_line() {
	local l
	local -a lines
	REPLY=
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"$1"* ]] && REPLY=$l; done
}

rm_rxe_up() {
	local i nic= f
	for f in /sys/class/net/*/address; do
		[ "$(< "$f")" = "$RKDAPL_MAC" ] && nic=${f%/address} && nic=${nic##*/}
	done
	rdma link add "$RKDAPL_DEV" type "${RKDAPL_DEV%%[0-9]*}" netdev "$nic" || return 1
	for ((i = 0; i < 100; i++)); do
		rdma link show "$RKDAPL_DEV/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.2
	done
	return 1
}

removal_suite() {
	local rc=0 t0 secs n stop=
	_log "removal: insmod rkdapl_observe.ko traffic=1"
	timeout -k 10 300 insmod "$OBS_KO" dev="$RKDAPL_DEV" peer="$RKDAPL_IP" port=$RM_PORT writes=64 traffic=1 || rc=$?
	t_check $rc "removal: a consumer connects a loopback pair, posts RECVs and runs RDMA WRITE/READ traffic" \
		"insmod exit $rc"
	if [ $rc != 0 ]; then
		module_loaded rkdapl_observe && rmmod rkdapl_observe
		return
	fi
	sleep 2
	rm_dmesg_line "rkdapl_observe: removal:"
	[ -z "$REPLY" ]
	t_check $? "removal: traffic is still running before the removal" "already stopped: $REPLY"

	_log "removal: rdma link delete $RKDAPL_DEV"
	t0=$SECONDS
	rc=0
	timeout -k 5 $((RM_LIMIT * 4)) rdma link delete $RKDAPL_DEV || rc=$?
	secs=$((SECONDS - t0))
	[ $rc = 0 ] && [ $secs -le $RM_LIMIT ]
	t_check $? "removal: rdma link delete $RKDAPL_DEV under live traffic completes within $RM_LIMIT s (took $secs s)" \
		"exit $rc after $secs s"

	for ((n = 0; n < 60; n++)); do
		rm_dmesg_line "rkdapl_observe: removal:"
		[ -n "$REPLY" ] && break
		sleep 1
	done
	# What stopped the traffic: the removal (in-flight DTOs FLUSHED, or a post refused with
	# -ENOTCONN/-ENODEV), not an error of the data path before it (then the EPs may be
	# DISCONNECTED already and no BROKEN is due: siw run 2, an RDMA READ finished early).
	# On siw the link's going away can fail the WR being transmitted before the flush: siw's
	# transmit path completes it with IB_WC_LOC_QP_OP_ERR (siw_qp_sq_process(), "processing
	# failed"), rkdapl's LOCAL_EP_ERROR (3); a removal, not a data path error.
	local ok_status='0|1' how='a DTO FLUSHED or a post refused with -ENOTCONN/-ENODEV'
	[[ $RKDAPL_DEV == siw* ]] && ok_status='0|1|3' \
		how='a DTO FLUSHED or failed by the lost link, or a post refused with -ENOTCONN/-ENODEV'
	[[ $REPLY =~ \(post\ (-?[0-9]+),\ status\ (-?[0-9]+)\) ]] &&
		stop="${BASH_REMATCH[1]} ${BASH_REMATCH[2]}"
	[[ $stop =~ ^(0|-107|-19)\ ($ok_status)$ ]] && [ "$stop" != "0 0" ]
	t_check $? "removal: the traffic ran until the removal stopped it ($how)" \
		"${REPLY:-no 'rkdapl_observe: removal:' line in dmesg}"
	[[ $REPLY == *": ok" ]]
	t_check $? "removal: the consumer gets IA_CATASTROPHIC on its async EVD and BROKEN on both EPs (-ENODEV), every posted RECV FLUSHED, -ENODEV/-ENOTCONN after" \
		"${REPLY:-no 'rkdapl_observe: removal:' line in dmesg}"
	rm_dmesg_line "rkdapl: device $RKDAPL_DEV: revoked"
	[[ $REPLY == *"revoked 1 IA(s), 2 EP(s), 1 PSP(s)"* ]]
	t_check $? "removal: rkdapl revoked the consumer's objects on $RKDAPL_DEV" "${REPLY:-no 'rkdapl: device $RKDAPL_DEV: revoked' line}"

	{ rdma res show cm_id; rdma res show cq; rdma res show pd; rdma res show mr; } > /tmp/rm-res.txt 2>&1
	obs_count 'rkdapl_observe' /tmp/rm-res.txt
	[ "$REPLY" = 0 ]
	t_check $? "removal: no object of the consumer is left in rdma res" "$REPLY lines name rkdapl_observe"

	rc=0
	rmmod rkdapl_observe || rc=$?
	rm_dmesg_line "rkdapl_observe: freed,"
	[ $rc = 0 ] && [[ $REPLY == *"freed, 0 errors"* ]]
	t_check $? "removal: the consumer then frees every handle without an error" \
		"rmmod exit $rc, ${REPLY:-no 'freed' line}"

	rm_rxe_up
	t_check $? "removal: $RKDAPL_DEV re-added and ACTIVE" "$(rdma link show 2>&1)"
	rc=0
	timeout -k 10 300 insmod "$OBS_KO" dev="$RKDAPL_DEV" peer="$RKDAPL_IP" port=$RM_PORT writes=64 || rc=$?
	t_check $rc "removal: an IA on the re-added $RKDAPL_DEV connects and moves data again" "insmod exit $rc"
	module_loaded rkdapl_observe && rmmod rkdapl_observe
}

unload_suite() {
	local rc=0 ia= d
	_log "unload: insmod rkdapl_observe.ko leak=1"
	timeout -k 10 300 insmod "$OBS_KO" peer="$RKDAPL_IP" port=7540 writes=64 leak=1 || rc=$?
	t_check $rc "unload: a consumer connects a pair, grants memory and writes (leak=1)" "insmod exit $rc"
	[ $rc = 0 ] || return
	for d in $OBS_DBG/ia*; do
		obs_file "$d/info"
		[[ $REPLY == *"owner rkdapl_observe"* ]] && ia=$d
	done
	rc=0
	rmmod rkdapl_observe || rc=$?
	t_check $rc "unload: rmmod of a consumer that still holds its objects" "rmmod exit $rc"
	rm_dmesg_line "rkdapl: rkdapl_observe went away with objects open"
	[[ $REPLY == *"freed 1 IA(s), 2 EP(s), 1 PSP(s), 0 CR(s), 1 RMR(s), 2 LMR(s), 1 PZ(s), 6 EVD(s)"* ]]
	t_check $? "unload: rkdapl frees every object the consumer left open (IA, 2 EPs, PSP, RMR, 2 LMRs, PZ, 6 EVDs)" \
		"${REPLY:-no 'went away with objects open' line}"
	{ rdma res show cm_id; rdma res show cq; rdma res show pd; rdma res show mr; } > /tmp/rm-res.txt 2>&1
	obs_count 'rkdapl_observe' /tmp/rm-res.txt
	[ "$REPLY" = 0 ] && [ -n "$ia" ] && [ ! -e "$ia" ]
	t_check $? "unload: nothing of it is left in rdma res or debugfs" \
		"$REPLY rdma res lines, debugfs ${ia:-?} exists: $([ -e "$ia" ] && echo yes || echo no)"
}

# removal_free_suite: rkdapl_test role=removal_free (cm_free.c) holds a connected loopback pair
# whose client EP gets its events by upcall; once it says it is ready, rxe0 is deleted: in the
# BROKEN upcall the calls an upcall must not make are refused and a work item frees the EP while
# the upcall waits. rxe0 is re-added after.
removal_free_suite() {
	local pid i rc=0
	run_kmod removal_free 600 -- role=removal_free dev=$RKDAPL_DEV peer="$RKDAPL_IP" port=7660 &
	pid=$!
	for ((i = 0; i < 240; i++)); do
		rm_dmesg_line "rkdapl_test: # removal_free: ready"
		[ -n "$REPLY" ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.5
	done
	if [ -z "$REPLY" ]; then
		wait $pid
		return
	fi
	_log "removal_free: rdma link delete $RKDAPL_DEV"
	timeout -k 5 $((RM_LIMIT * 4)) rdma link delete $RKDAPL_DEV || rc=$?
	t_check $rc "removal_free: rdma link delete $RKDAPL_DEV during the free test" "exit $rc"
	wait $pid
	rm_rxe_up
	t_check $? "removal_free: $RKDAPL_DEV re-added and ACTIVE" "$(rdma link show 2>&1)"
}
