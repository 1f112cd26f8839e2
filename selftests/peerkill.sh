#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh and soak.sh): the peer
# guest is killed in the middle of a transfer.
#
#   peerkill_victim_b  guest B, after it has reported its own results (qemu/guest-report.sh):
#                      loads rkdapl again and serves one soak connection (rkdapl_soak.ko
#                      role=server), then waits to be killed.
#   peerkill_guest_a   guest A streams RDMA WRITE + READ-back rounds to B over that connection
#                      (rkdapl_soak.ko role=client rounds=...); once 100 rounds are verified it
#                      asks the host to kill B's QEMU (sync/kill-b, see qemu/run-guests.sh).
#                      The WRITE or READ in flight must then complete with
#                      RKDAPL_DTO_TRANSPORT_ERROR (RC retries exhausted: the peer is gone;
#                      retry_count 6, as rxe never gives up with 7, see rkdapl_ep_attr)
#                      within $PEERKILL_SECS s, the EP must be freed without waiting for the
#                      dead peer, and nothing may be left in rdma res. What guest A does after
#                      this (device removal, unload) shows its provider still works.

PEERKILL_PORT=7640
PEERKILL_SECS=60

peerkill_guest_a() {
	local S=$RKDAPL_SYNC i pid rc=0 t0 secs res0 n
	for ((i = 0; i < 3000; i++)); do
		[ -e "$S/peerkill.listening" ] || [ -e "$S/peerkill.failed" ] && break
		[ -e "$S/rc-b" ] && [ ! -e "$S/peerkill.victim" ] && break
		sleep 0.2
	done
	if [ ! -e "$S/peerkill.listening" ]; then
		t_fail "peerkill: guest B serves a connection to be killed in" "no $S/peerkill.listening"
		return
	fi
	soak_res
	res0=$REPLY
	_log "peerkill: streaming RDMA WRITE/READ rounds to guest B"
	timeout -k 10 600 insmod "$SOAK_KO" role=client dev=rxe0 peer="$RKDAPL_PEER_IP" \
		port=$PEERKILL_PORT cycles=1 rounds=100000000 timeout_ms=30000 retry_count=6 &
	pid=$!
	for ((i = 0; i < 600; i++)); do
		dmesg | grep -q 'rkdapl_soak: client: streaming' && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.2
	done
	if ! dmesg | grep -q 'rkdapl_soak: client: streaming'; then
		t_fail "peerkill: 100 rounds verified before the kill" "no 'client: streaming' line"
		rkdapl_signal kill-b
		wait $pid
		module_loaded rkdapl_soak && rmmod rkdapl_soak
		return
	fi
	t_ok "peerkill: 100 RDMA WRITE/READ rounds verified, guest B killed mid-transfer"
	rkdapl_signal kill-b
	t0=$SECONDS
	wait $pid || rc=$?
	secs=$((SECONDS - t0))
	faults_last_soak_line
	_log "peerkill: $REPLY"
	# Event 1 is a DTO completion, status 8 RKDAPL_DTO_TRANSPORT_ERROR.
	[ $rc != 0 ] && [[ $REPLY =~ FAILED:\ rdma\ (write|read):\ event\ 1\ status\ 8\  ]] &&
		[ $secs -le $PEERKILL_SECS ]
	t_check $? "peerkill: the DTO in flight completes with TRANSPORT_ERROR and the EP is freed within $PEERKILL_SECS s ($secs s)" \
		"insmod exit $rc after $secs s: ${REPLY:-no summary line}"
	module_loaded rkdapl_soak && rmmod rkdapl_soak
	soak_res
	[ "$REPLY" = "$res0" ]
	t_check $? "peerkill: nothing left in rdma res afterwards" "before '$res0', after '$REPLY'"
	n=$(dmesg | grep -cE 'rkdapl: [a-z0-9_]+ ep[0-9]+ qpn [1-9][0-9]*: [A-Z_]+ cookie 0x[0-9a-f]+ failed: TRANSPORT_ERROR \(transport retry counter exceeded\)')
	[ "$n" -ge 1 ]
	t_check $? "peerkill: the failed DTO is logged with its device, QP number, operation and status names" \
		"no '<device> ep<M> qpn <N>: <OP> cookie ... failed: TRANSPORT_ERROR (transport retry counter exceeded)' line"
}

# Never returns if the kill comes; returns after 15 minutes if it does not.
peerkill_victim_b() {
	local i S=$RKDAPL_SYNC
	if ! insmod "$KO/rkdapl.ko"; then
		rkdapl_signal peerkill.failed
		return 1
	fi
	_log "peerkill: serving one connection on port $PEERKILL_PORT, to be killed in"
	timeout -k 10 900 insmod "$SOAK_KO" role=server dev=rxe0 port=$PEERKILL_PORT cycles=1 \
		timeout_ms=900000 &
	for ((i = 0; i < 300; i++)); do
		dmesg | grep -q "rkdapl_soak: server: listening on port $PEERKILL_PORT" && break
		sleep 1
	done
	rkdapl_signal peerkill.listening
	wait
	rkdapl_signal peerkill.failed
	return 1
}
