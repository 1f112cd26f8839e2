#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make profile`: where the instructions of a data-path run go, per kernel function.
#
#   scripts/profile.sh        (FLAVOUR=release|debug; default release, built if missing)
#
# Boots one guest under QEMU's -icount shift=0,sleep=off (as `make bench`) with the tbprof
# TCG plugin (tools/tbprof/tbprof.c, built here with gcc), which counts how often every
# translated block ran on every vCPU. The guest (qemu/profile.sh) runs one bandwidth run of
# one tool, client on vCPU 1; it boots twice, for N and for 2N DTOs, and the difference of the
# two counts is what N DTOs cost, without the boot and the set-up. scripts/tbprof_report.py
# maps the blocks to the guest's symbols and writes report.txt: instructions per DTO and
# function on the client's vCPU (the post calls and the client's waits) and on all vCPUs (rxe,
# the completions, the server too), and calls per DTO of the kernel's spin lock functions
# (the IRQ-off lock round trips, from every caller: not rkdapl's own alone). Inlined code counts for the function it was inlined into.
# The plugin slows TCG down, not the guest's instruction counts. ~1 min on a built tree.
# With RKDAPL_PROF_LINES=1, rkdapl.ko is built with line tables (the same code) and
# scripts/tbprof_lines.py adds rkdapl's instructions per source file and line to the report.
#
# Env: RKDAPL_PROF_TOOL (rkdapl | raw | rkdapl-rust | rkdblk | nvme), RKDAPL_PROF_OP (write | read | send),
# RKDAPL_PROF_SIZE (64), RKDAPL_PROF_ITERS (20000 DTOs; 4000 I/Os for rkdblk and nvme),
# RKDAPL_PROF_ARGS (e.g. "batch=8"), RKDAPL_PROF_JOB (rkdblk and nvme: a make bench-blk job,
# randread-4k-qd16; qemu/profile-blk.sh), RKDAPL_PROF_LINES (1: the line report, above),
# RKDAPL_OUT (default out/profile-<timestamp>).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"

flavour=${FLAVOUR:-release}
if [ "${RKDAPL_PROF_LINES:-0}" = 1 ]; then
	export RKDAPL_LINE_TABLES=1
else
	unset RKDAPL_LINE_TABLES
fi
kdir=$("$top/scripts/modules.sh" "$flavour")
export RKDAPL_BUILD=$kdir
export RKDAPL_OUT=${RKDAPL_OUT:-$top/out/profile-$(date +%Y%m%d-%H%M%S)}
export RKDAPL_KUNIT=${RKDAPL_KUNIT:-0}
export RKDAPL_CPUS=${RKDAPL_CPUS:-4}
export RKDAPL_APPEND="no_timer_check ${RKDAPL_APPEND:-}"
mkdir -p "$RKDAPL_OUT"
gcc -O2 -Wall -shared -fPIC -o "$RKDAPL_OUT/tbprof.so" "$top/tools/tbprof/tbprof.c"
opts=${RKDAPL_QEMU_OPTS:-}
out=$RKDAPL_OUT
# rkdapl and raw: a bandwidth run of samples/{rkdapl,raw}_perf (qemu/profile.sh); rkdblk and
# nvme: one fio job of make bench-blk on its block device (qemu/profile-blk.sh).
case ${RKDAPL_PROF_TOOL:-rkdapl} in
rkdapl | raw | rkdapl-rust) guest=profile.sh n=${RKDAPL_PROF_ITERS:-20000} ;;
rkdblk | nvme) guest=profile-blk.sh n=${RKDAPL_PROF_ITERS:-4000} ;;
*) die "RKDAPL_PROF_TOOL: rkdapl, raw, rkdapl-rust, rkdblk or nvme" ;;
esac
log "profile: $flavour kernel $kdir, results in $out"
for run in 1 2; do
	export RKDAPL_OUT=$out/run$run RKDAPL_PROF_ITERS=$((n * run))
	export RKDAPL_QEMU_OPTS="-icount shift=0,sleep=off -plugin $out/tbprof.so,out=$RKDAPL_OUT/blocks.txt $opts"
	mkdir -p "$RKDAPL_OUT"
	"$top/qemu/run-guests.sh" --one "$top/qemu/$guest" >"$out/guest$run.log" 2>&1 ||
		die "guest $run failed: $out/guest$run.log"
	[ -s "$RKDAPL_OUT/blocks.txt" ] || die "the plugin wrote no $RKDAPL_OUT/blocks.txt"
done
/usr/bin/python3 "$top/scripts/tbprof_report.py" "$out/run1" "$out/run2" | tee "$out/report.txt"
if [ -n "${RKDAPL_LINE_TABLES:-}" ]; then
	/usr/bin/python3 "$top/scripts/tbprof_lines.py" "$out/run1" "$out/run2" "$top/rkdapl.ko" \
		rkdapl | tee -a "$out/report.txt"
fi
