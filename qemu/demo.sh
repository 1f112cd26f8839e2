#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make demo`: builds rkdapl.ko and the sample consumer, boots two QEMU guests wired together
# (A 10.77.0.1, B 10.77.0.2, Soft-RoCE rxe0 on each) and has the sample move a verified
# payload: B RDMA WRITEs it into A's memory, READs it back, and both sides check it.
#
#   qemu/demo.sh            (SIZE=<bytes>, default 16777216, at most 67108864)
#
# Env: SIZE, FLAVOUR (debug), RKDAPL_OUT (log dir, default out/demo-<timestamp>), and
# run-guests.sh's RKDAPL_* settings. Exits non-zero on any failure, a kernel splat included.
set -euo pipefail

main() {
	local top t0 kdir f r st=0 ok=0
	top=$(cd "$(dirname "$0")/.." && pwd)
	. "$top/scripts/common.sh"
	t0=$(date +%s)

	SIZE=${SIZE:-16777216}
	[[ $SIZE =~ ^[0-9]+$ ]] && [ "$SIZE" -ge 1 ] && [ "$SIZE" -le 67108864 ] ||
		die "SIZE=$SIZE: want 1..67108864 bytes"

	kdir=$("$top/scripts/modules.sh" "${FLAVOUR:-debug}")
	for f in rkdapl.ko samples/rkdapl_sample.ko; do
		[ -f "$top/$f" ] || die "no $f after scripts/modules.sh"
	done

	export RKDAPL_BUILD=$kdir RKDAPL_SIZE=$SIZE
	# A TCG guest on a busy host can fail the kernel's boot-time timer check ("IO-APIC +
	# timer doesn't work!"): skip it.
	export RKDAPL_APPEND="no_timer_check ${RKDAPL_APPEND:-}"
	export RKDAPL_OUT=${RKDAPL_OUT:-$top/out/demo-$(date +%Y%m%d-%H%M%S)}
	log "demo: $SIZE bytes from guest B (client) to guest A (server), logs in $RKDAPL_OUT"
	"$top/qemu/run-guests.sh" "$top/qemu/demo-guest.sh" "$top/qemu/demo-guest.sh" || st=$?

	echo
	echo "=== rkdapl demo: rkdapl_sample output (A server, B client) ==="
	for r in a b; do
		f=$RKDAPL_OUT/sync/sample-$r.txt
		if [ -s "$f" ]; then
			sed "s/^/[${r^^}] /" "$f"
		else
			echo "[${r^^}] (no rkdapl_sample output)"
		fi
	done
	grep -qs 'rkdapl_sample: server: verified .* ok$' "$RKDAPL_OUT/sync/sample-a.txt" &&
		grep -qs 'rkdapl_sample: client: verified .*server ok' "$RKDAPL_OUT/sync/sample-b.txt" &&
		ok=1
	if [ $ok != 1 ] && [ "$st" = 0 ]; then st=1; fi
	echo
	echo "=== result ==="
	grep -hs 'rkdapl_sample: client: RDMA \|rkdapl_sample: .*: verified ' \
		"$RKDAPL_OUT/sync/sample-a.txt" "$RKDAPL_OUT/sync/sample-b.txt" || true
	echo "demo wall time: $(( $(date +%s) - t0 )) s"
	if [ "$st" = 0 ]; then
		echo "demo: PASS"
	else
		echo "demo: FAIL (logs in $RKDAPL_OUT)"
	fi
	return "$st"
}

main "$@"
exit $?
