#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE a guest: brings up the test NIC (found by $RKDAPL_MAC) with
# $RKDAPL_IP/24, loads Soft-RoCE from $RKDAPL_MODROOT, creates rxe0 on the NIC
# and waits until rxe0/1 is ACTIVE. Executed once by guest-run.sh; a test
# script may also source it to get the helpers below (setup is not repeated).
#
#   rkdapl_signal NAME          touch $RKDAPL_SYNC/NAME (a barrier other guest waits on)
#   rkdapl_wait NAME [SECONDS]  wait for $RKDAPL_SYNC/NAME (default 120 s; fails
#                               at once if the other guest's script has ended)
#   rkdapl_modprobe ARGS...     modprobe from $RKDAPL_MODROOT
#   rkdapl_ip_int A.B.C.D       the address as one integer, host order (the IPv4 address
#                               parameters of the Rust samples: addr=, ...)

# RKDAPL_SYNC_PREFIX: a second round of the same suites (selftests/transport.sh) uses barriers
# of its own.
rkdapl_signal() { touch "$RKDAPL_SYNC/${RKDAPL_SYNC_PREFIX:-}$1"; }
rkdapl_wait() {
	local i peer=a
	[ "$RKDAPL_ROLE" = a ] && peer=b
	for ((i = 0; i < ${2:-120} * 5; i++)); do
		[ -e "$RKDAPL_SYNC/${RKDAPL_SYNC_PREFIX:-}$1" ] && return 0
		[ -e "$RKDAPL_SYNC/rc-$peer" ] && { echo "rkdapl: guest $peer ended, no $1" >&2; return 1; }
		sleep 0.2
	done
	echo "rkdapl: timed out waiting for $RKDAPL_SYNC/$1" >&2
	return 1
}
rkdapl_modprobe() { modprobe -d "$RKDAPL_MODROOT" "$@"; }
rkdapl_ip_int() {
	local a b c d
	IFS=. read -r a b c d <<< "$1"
	echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

rkdapl_setup() {
	local nic= f i
	: "${RKDAPL_MAC:?} ${RKDAPL_IP:?} ${RKDAPL_MODROOT:?}"
	[ -e /run/rkdapl-setup-done ] && return 0
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug || return 1
	# Kernel-initiated module loads (request_module, e.g. "rdma-link-rxe") go
	# through this wrapper, since the guest's /lib/modules is the host's.
	printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$RKDAPL_MODROOT" > /run/rkdapl-modprobe
	chmod +x /run/rkdapl-modprobe
	echo /run/rkdapl-modprobe > /proc/sys/kernel/modprobe

	# A distribution kernel has virtio-net as a module (nothing loads it without udev).
	[ -d /sys/bus/virtio/drivers/virtio_net ] || rkdapl_modprobe virtio_net 2>/dev/null
	for f in /sys/class/net/*/address; do
		[ "$(cat "$f")" = "$RKDAPL_MAC" ] && nic=$(basename "$(dirname "$f")")
	done
	[ -n "$nic" ] || { echo "rkdapl: no NIC with MAC $RKDAPL_MAC" >&2; return 1; }
	ip link set lo up
	ip addr add "$RKDAPL_IP/24" dev "$nic"
	ip link set "$nic" up || return 1

	rkdapl_modprobe rdma_rxe || return 1
	# rdma_cm / uverbs for userspace tools (rping, perftest); not fatal.
	for f in rdma_ucm ib_uverbs; do rkdapl_modprobe "$f" 2>/dev/null; done
	rdma link add rxe0 type rxe netdev "$nic" || return 1
	for ((i = 0; i < 100; i++)); do
		rdma link show rxe0/1 | grep -q 'state ACTIVE' && break
		sleep 0.2
	done
	rdma link show rxe0/1 | grep -q 'state ACTIVE' ||
		{ echo "rkdapl: rxe0 not ACTIVE after 20 s: $(rdma link show rxe0/1)" >&2; return 1; }
	echo "rkdapl: $nic $RKDAPL_IP, $(rdma link show rxe0/1)"
	touch /run/rkdapl-setup-done
}

rkdapl_setup
