#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh and the suites' files):
# the second transport. rxe0 (RoCEv2) gives way to siw0 (iWARP, drivers/infiniband/sw/siw) on
# the same NIC, and the suites whose behaviour depends on the transport run again over it,
# their TAP names prefixed "siw: " (TAP_PREFIX), with RKDAPL_DEV=siw0:
#
#   guest A: siw: setup, two-guest (server), rping both ways (kernel side), soak (server,
#            $SIW_SOAK_CYCLES cycles), then rxe0 back for the later suites
#   guest B: siw: setup, badarg (loopback pair), loopback, removal (rdma link delete siw0
#            under traffic; siw0 re-added), all while guest A runs its single-guest suites;
#            then two-guest (client), rping (rdma-core side), soak (client)
#   one guest (RKDAPL_PAIR=0): guest A runs B's single-guest part.
#
# Barriers ($RKDAPL_SYNC): siw.a-up, siw.b-up (each guest's siw0 ACTIVE: only then can the
# two-guest suites connect; the guests leave RoCE at different times), siw.done (A no longer
# needs B's siw0). Debian's stock kernel has no siw (CONFIG_RDMA_SIW is not set in its
# config): with RKDAPL_SUITES=stock the phase is skipped, with no test recorded.
#
# RKDAPL_SIW=0 leaves the phase out (docs/testing.md "The siw phase": it ran behind
# RKDAPL_SIW=1 until the two siw bugs of qemu/kernel-patches/0003 and 0004 were fixed; 0005
# fixes a third, found later).
# RKDAPL_SIW_SOAK_CYCLES sets the soak's cycles (default 100).

SIW_SOAK_CYCLES=${RKDAPL_SIW_SOAK_CYCLES:-100}
SIW_T0=0
SIW_UP=0

# siw_nic: the name of the guest's NIC (the one with $RKDAPL_MAC), in $REPLY.
siw_nic() {
	local f
	REPLY=
	for f in /sys/class/net/*/address; do
		[ "$(< "$f")" = "$RKDAPL_MAC" ] && REPLY=${f%/address} && REPLY=${REPLY##*/}
	done
}

# siw_link DEV TYPE: replaces the other RDMA link of the NIC (rxe0 or siw0: two devices on
# one netdev would share its addresses, and rdma_cm would pick either) by DEV of TYPE (rxe or
# siw), and waits until its port is ACTIVE.
siw_link() {
	local dev=$1 type=$2 i l
	siw_nic
	[ -n "$REPLY" ] || return 1
	for l in rxe0 siw0; do
		[ "$l" = "$dev" ] && continue
		rdma link show "$l/1" > /dev/null 2>&1 && { rdma link delete "$l" || return 1; }
		rdma link show "$l/1" > /dev/null 2>&1 && return 1
	done
	rdma link show "$dev/1" > /dev/null 2>&1 ||
		rdma link add "$dev" type "$type" netdev "$REPLY" || return 1
	for ((i = 0; i < 100; i++)); do
		rdma link show "$dev/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.2
	done
	return 1
}

# siw_enter: siw0 instead of rxe0; records "siw: setup". Fails (and the phase is left out) if
# the kernel has no siw.
siw_enter() {
	local rc=0
	SIW_T0=$SECONDS
	_log "siw: phase start"
	rkdapl_modprobe siw || rc=$?
	[ $rc = 0 ] && { siw_link siw0 siw || rc=$?; }
	export RKDAPL_DEV=siw0 TAP_PREFIX="siw: " RKDAPL_SYNC_PREFIX=siw- TWO_PORT=7680
	[ $rc = 0 ] && SIW_UP=1
	t_check $rc "setup: rxe0 deleted, siw loaded, siw0 on the NIC and ACTIVE" \
		"exit $rc: $(rdma link show 2>&1 | tr '\n' '|')"
	return $rc
}

# siw_leave: rxe0 back for the later suites; logs the phase's duration.
siw_leave() {
	local rc=0
	siw_link rxe0 rxe || rc=$?
	t_check $rc "teardown: siw0 deleted, rxe0 back and ACTIVE" "$(rdma link show 2>&1 | tr '\n' '|')"
	export RKDAPL_DEV=rxe0 TAP_PREFIX= RKDAPL_SYNC_PREFIX= TWO_PORT=7480
	_log "siw: phase took $((SECONDS - SIW_T0)) s"
}

# siw_skip: true if the phase does not run in this boot (RKDAPL_SIW=0, or a stock kernel).
siw_skip() {
	[ "${RKDAPL_SUITES:-all}" = stock ] || [ "${RKDAPL_SIW:-1}" = 0 ]
}

# siw_single: the single-guest suites over siw0: badarg (a loopback pair), loopback, removal
# (siw0 deleted under traffic, then re-added). On guest B while guest A runs its own
# single-guest suites (B would otherwise wait for A there), on guest A with one guest.
siw_single() {
	run_kmod badarg 1200 -- role=badarg dev=siw0 peer="$RKDAPL_IP" port=7690
	run_kmod loopback 1200 -- role=loopback dev=siw0 peer="$RKDAPL_IP" port=7700
	removal_suite
}

siw_phase_a() {
	local pair=${RKDAPL_PAIR:-1}
	siw_skip && return 0
	siw_enter
	if [ "$pair" = 1 ]; then
		rkdapl_signal siw.a-up
		if rkdapl_wait siw.b-up 2400 && [ $SIW_UP = 1 ]; then
			serve_two_guest
			rping_guest_a
			SOAK_CYCLES=$SIW_SOAK_CYCLES SOAK_PORT=7760 soak_guest_a
		fi
		rkdapl_signal siw.done
	elif [ $SIW_UP = 1 ]; then
		siw_single
	fi
	siw_leave
}

siw_phase_b() {
	siw_skip && return 0
	if siw_enter; then
		siw_single
		rkdapl_signal siw.b-up
		if rkdapl_wait siw.a-up 2400; then
			two_guest_client
			rping_guest_b
			SOAK_CYCLES=$SIW_SOAK_CYCLES SOAK_PORT=7760 soak_guest_b
		fi
	else
		rkdapl_signal siw.b-up
	fi
	rkdapl_wait siw.done 2400
	siw_leave
}
