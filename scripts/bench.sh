#!/bin/bash
# `make bench`: RDMA bandwidth and latency of rkdapl against raw verbs and perftest, between
# two QEMU guests over Soft-RoCE, all in one boot.
#
#   scripts/bench.sh            (FLAVOUR=release|debug; default release, built if missing)
#
# Guest A serves (qemu/bench-a.sh), guest B measures (qemu/bench-b.sh): for each size,
# samples/rkdapl_perf.ko (tool=rkdapl) and samples/raw_perf.ko (tool=raw, ib_core + rdma_cm
# directly) run RDMA WRITE/READ/SEND bandwidth and RDMA WRITE/READ latency, then perftest runs
# ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat and ib_read_lat; B also measures the CPU
# ceiling of rxe's per-byte work (crc32 + memcpy over 1 MiB). scripts/bench_report.py writes
# out/bench-<ts>/results.csv and plot.png and prints the tables.
#
# Env: FLAVOUR, RKDAPL_OUT (default out/bench-<timestamp>), the guests' RKDAPL_BENCH_* knobs
# (sizes, bytes per run, iterations, txdepth, mode, tools, per-run timeout; see
# qemu/bench-b.sh), RKDAPL_MTU (9000), and run-guests.sh's RKDAPL_* settings.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
t0=$(date +%s)

# Benchmarks run on the release kernel (qemu/release.config: no KASAN, lockdep, kmemleak);
# scripts/kernel.sh builds it once (~15-25 min on 2 cores) and caches it beside the debug one.
# FLAVOUR=debug measures the test kernel instead (slow; for checking the tools only).
flavour=${FLAVOUR:-release}
kdir=$("$top/scripts/modules.sh" "$flavour")
for f in rkdapl.ko samples/rkdapl_perf.ko samples/raw_perf.ko; do
	[ -f "$top/$f" ] || die "no $f after scripts/modules.sh"
done

export RKDAPL_BUILD=$kdir
export RKDAPL_OUT=${RKDAPL_OUT:-$top/out/bench-$(date +%Y%m%d-%H%M%S)}
export RKDAPL_KUNIT=${RKDAPL_KUNIT:-0}
export RKDAPL_TIMEOUT=${RKDAPL_TIMEOUT:-3600}
export RKDAPL_APPEND="no_timer_check ${RKDAPL_APPEND:-}"
mkdir -p "$RKDAPL_OUT"
echo "$flavour" > "$RKDAPL_OUT/flavour"
log "bench: $flavour kernel $kdir, results in $RKDAPL_OUT"
st=0
"$top/qemu/run-guests.sh" "$top/qemu/bench-a.sh" "$top/qemu/bench-b.sh" || st=$?
# Debian's python3 (python3-matplotlib), not whatever python3 comes first in PATH.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" "$top/scripts/bench_report.py" "$RKDAPL_OUT" || st=1
echo "bench wall time: $(( $(date +%s) - t0 )) s ($flavour kernel)"
exit "$st"
