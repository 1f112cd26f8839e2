#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE each guest of `make demo` (qemu/demo.sh -> run-guests.sh): guest A loads
# samples/rkdapl_sample.ko as the server, guest B as the client of A. Each insmod returns only
# once the transfer is verified (or failed), then both modules are unloaded. The guest's
# rkdapl_sample lines go to stdout and $RKDAPL_SYNC/sample-<role>.txt.
#
# Env (besides run-guests.sh's): RKDAPL_SIZE payload bytes, RKDAPL_SAMPLE_TIMEOUT_MS,
# RKDAPL_PORT, RKDAPL_SAMPLE_ARGS (more module parameters for both sides).
#
# Everything is in functions that bash reads before running them, so editing this file while
# a guest runs it cannot change what the guest executes.
set -u

# Progress goes to stdout and to the kernel log (so the guest console shows it as well).
say() {
	echo "rkdapl-demo: $*"
	echo "rkdapl-demo: $*" > /dev/kmsg 2>/dev/null || true
}

# Waits for the insmod running in the background as $1. If the other guest's script has ended
# and the insmod still runs a minute later (the peer failed), interrupts it: the sample's
# waits are interruptible, so it cleans up and fails instead of waiting out its timeout.
wait_insmod() {
	local pid=$1 n=0 peer=b
	[ "$RKDAPL_ROLE" = b ] && peer=a
	while kill -0 "$pid" 2>/dev/null; do
		if [ -e "$RKDAPL_SYNC/rc-$peer" ]; then
			n=$((n + 1))
			if [ $n = 300 ]; then
				say "guest $peer ended 60 s ago, interrupting insmod"
				kill -TERM "$pid"
			fi
		fi
		sleep 0.2
	done
	wait "$pid"
}

main() {
	local top=$RKDAPL_TOP port=${RKDAPL_PORT:-7471} out=$RKDAPL_SYNC/sample-$RKDAPL_ROLE.txt
	local rc=0 t0 ms pid i
	local -a args
	# shellcheck disable=SC2206  # RKDAPL_SAMPLE_ARGS is split on purpose
	args=(dev=rxe0 port="$port" size="${RKDAPL_SIZE:-16777216}"
		timeout_ms="${RKDAPL_SAMPLE_TIMEOUT_MS:-300000}" ${RKDAPL_SAMPLE_ARGS:-})

	. "$top/qemu/guest-setup.sh" || return 1

	# RoCE over a 1500-byte link runs with a 1024-byte path MTU; jumbo frames give 4096-byte
	# packets, a quarter of the packets for Soft-RoCE to build, checksum and parse (the cost
	# under TCG). Both guests set it before connecting (rdma_cm takes the path MTU from it).
	local nic="" f mtu=${RKDAPL_MTU:-9000}
	for f in /sys/class/net/*/address; do
		[ "$(cat "$f")" = "$RKDAPL_MAC" ] && nic=$(basename "$(dirname "$f")")
	done
	if [ -n "$nic" ] && [ "$mtu" != 1500 ]; then
		ip link set dev "$nic" mtu "$mtu" || say "could not set MTU $mtu on $nic"
	fi
	say "guest $RKDAPL_ROLE: $nic mtu $(cat "/sys/class/net/$nic/mtu"), rxe0 $(ibv_devinfo -d rxe0 2>/dev/null | grep -o 'active_mtu:.*' | tr -s '\t ' ' ')"

	say "guest $RKDAPL_ROLE: loading rkdapl.ko"
	if ! insmod "$top/rkdapl.ko"; then
		say "insmod rkdapl.ko failed"
		dmesg | tail -20
		echo "insmod rkdapl.ko failed" > "$out"
		return 1
	fi

	t0=$(date +%s%N)
	if [ "$RKDAPL_ROLE" = a ]; then
		say "guest a: starting the server (${args[*]})"
		insmod "$top/samples/rkdapl_sample.ko" role=server "${args[@]}" &
		pid=$!
		# The PSP listens once the module has created it; tell guest B (the client retries
		# anyway, so go ahead after a while rather than fail).
		for ((i = 0; i < 300; i++)); do
			rdma res show cm_id 2>/dev/null | grep -q "LISTEN.*:$port" && break
			kill -0 $pid 2>/dev/null || break
			sleep 0.2
		done
		say "guest a: a.ready"
		rkdapl_signal a.ready
	else
		rkdapl_wait a.ready 600 || say "no a.ready from guest A, connecting anyway"
		say "guest b: starting the client of $RKDAPL_PEER_IP (${args[*]})"
		insmod "$top/samples/rkdapl_sample.ko" role=client server="$RKDAPL_PEER_IP" \
			"${args[@]}" &
		pid=$!
	fi
	wait_insmod $pid || rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	[ $rc = 0 ] || say "insmod rkdapl_sample.ko ($RKDAPL_ROLE) failed, exit $rc"
	say "guest $RKDAPL_ROLE: rkdapl_sample ran ${ms} ms"
	# Soft-RoCE's counters (retransmissions, duplicates, sequence errors) explain slow runs.
	echo "rkdapl-demo: $(rdma statistic show link rxe0/1 2>&1 | tr -s ' \n' ' ')"

	# Load addresses, to resolve the modules' frames in kmemleak reports made after rmmod.
	grep -E '^rkdapl(_sample)? ' /proc/modules | sed 's/^/rkdapl-demo: module /'
	if grep -q '^rkdapl_sample ' /proc/modules; then
		rmmod rkdapl_sample || { say "rmmod rkdapl_sample failed"; rc=1; }
	fi
	rmmod rkdapl || { say "rmmod rkdapl failed"; rc=1; }

	{ dmesg | grep -o 'rkdapl_sample: .*' || true; } | tee "$out"
	return $rc
}

main "$@"
exit $?
