#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make bench`: rkdapl against raw verbs and perftest over Soft-RoCE, in QEMU guests.
#
#   scripts/bench.sh [det|blk|wall]  (FLAVOUR=release|debug; default release, built if missing)
#
# det (`make bench`, the default): the deterministic benchmark. One guest under QEMU's
# -icount shift=0,sleep=off (one guest instruction = one virtual ns, idle time skipped, single-
# threaded TCG), both ends of every connection in that guest (rxe loopback), every tool
# measured there: samples/rkdapl_perf.ko, rkdapl_rust_perf.ko (its client on rkdapl's Rust
# API), samples/raw_perf.ko (the same work on ib_core and rdma_cm directly), perftest (-e) and
# the crc32 + memcpy ceiling; three passes. Its figures
# are virtual-time rates and instruction counts, and they repeat (the report shows max/min
# over the passes). See qemu/bench-det.sh.
#
# blk (`make bench-blk`, and `make bench` after det): rkdapl's block device against
# nvme-rdma. One guest under the same -icount: fio's jobs (4 KiB random read/write at QD1 and
# QD16, 128 KiB sequential at QD16) on /dev/rkdblk0 (rkdapl) and /dev/nvme0n1 (nvme-rdma to
# nvmet-rdma), both over rxe loopback onto a brd RAM disk, interleaved passes; see
# qemu/bench-blk.sh. scripts/bench_blk_report.py prints the ratio table and draws blk-plot.png.
#
# wall (`make bench-wall`): the indicative two-guest wall-clock matrix (guest A serves,
# guest B measures; qemu/bench-a.sh, qemu/bench-b.sh). Under TCG its figures move 1.6-3.7x
# between passes: it shows that things work between two machines, not ratios.
#
# scripts/bench_report.py writes out/bench-<ts>/results.csv and plot.png and prints the
# tables (for det: the ratio table with each target met or MISSED).
#
# Env: FLAVOUR, RKDAPL_OUT (default out/bench-<timestamp>), the guests' RKDAPL_BENCH_* knobs
# (see qemu/bench-det.sh and qemu/bench-b.sh), RKDAPL_MTU (9000), and run-guests.sh's
# RKDAPL_* settings.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
t0=$(date +%s)

# Benchmarks run on the release kernel (qemu/release.config: no KASAN, lockdep, kmemleak);
# scripts/kernel.sh builds it once (~15-25 min on 2 cores) and caches it beside the debug one.
# FLAVOUR=debug measures the test kernel instead (slow; for checking the tools only).
kind=${1:-det}
case "$kind" in det|blk|wall) ;; *) die "usage: $0 [det|blk|wall]" ;; esac
flavour=${FLAVOUR:-release}
kdir=$("$top/scripts/modules.sh" "$flavour")
for f in rkdapl.ko samples/rkdapl_perf.ko samples/raw_perf.ko rkdapl_rust_perf.ko rkdblk.ko \
	rkdblk_srv.ko; do
	[ -f "$top/$f" ] || die "no $f after scripts/modules.sh"
done

export RKDAPL_BUILD=$kdir
export RKDAPL_OUT=${RKDAPL_OUT:-$top/out/bench-$(date +%Y%m%d-%H%M%S)}
export RKDAPL_KUNIT=${RKDAPL_KUNIT:-0}
export RKDAPL_TIMEOUT=${RKDAPL_TIMEOUT:-3600}
export RKDAPL_APPEND="no_timer_check ${RKDAPL_APPEND:-}"
mkdir -p "$RKDAPL_OUT"
echo "$flavour" > "$RKDAPL_OUT/flavour"
echo "$kind" > "$RKDAPL_OUT/kind"
log "bench ($kind): $flavour kernel $kdir, results in $RKDAPL_OUT"
st=0
if [ "$kind" = det ] || [ "$kind" = blk ]; then
	# icount forces single-threaded TCG; sleep=off skips idle time instead of waiting for
	# the host clock, so nothing the host does enters a figure.
	export RKDAPL_QEMU_OPTS="-icount shift=0,sleep=off ${RKDAPL_QEMU_OPTS:-}"
	export RKDAPL_CPUS=${RKDAPL_CPUS:-4}
	"$top/qemu/run-guests.sh" --one "$top/qemu/bench-$kind.sh" || st=$?
else
	"$top/qemu/run-guests.sh" "$top/qemu/bench-a.sh" "$top/qemu/bench-b.sh" || st=$?
fi
# Debian's python3 (python3-matplotlib), not whatever python3 comes first in PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
report=bench_report.py
[ "$kind" = det ] && report=bench_det_report.py
[ "$kind" = blk ] && report=bench_blk_report.py
"$py" "$top/scripts/$report" "$RKDAPL_OUT" | tee "$RKDAPL_OUT/report.txt"
[ "${PIPESTATUS[0]}" = 0 ] || st=1
echo "bench ($kind) wall time: $(( $(date +%s) - t0 )) s ($flavour kernel)"
exit "$st"
