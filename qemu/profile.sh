#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE the guest of `make profile` (scripts/profile.sh -> qemu/run-guests.sh --one,
# under -icount with the tbprof plugin): one bandwidth run of one tool, client pinned to CPU 1
# and server to CPU 2 as in qemu/bench-det.sh, then the guest's symbols (/proc/kallsyms,
# modules included) for the report.
#
# Env: RKDAPL_PROF_TOOL (rkdapl | raw | rkdapl-rust: rkdapl_rust_perf's client against
# rkdapl_perf's server), RKDAPL_PROF_OP (write | read | send),
# RKDAPL_PROF_SIZE (bytes, 64), RKDAPL_PROF_ITERS (20000), RKDAPL_PROF_ARGS (more ctl keys,
# e.g. "batch=8"; see samples/perf_common.h).
set -u
. "$RKDAPL_TOP/qemu/bench-lib.sh"

tool=${RKDAPL_PROF_TOOL:-rkdapl}
case "$tool" in
rkdapl) d=rkdapl_perf port=7700 mods="rkdapl.ko samples/rkdapl_perf.ko" ;;
raw) d=raw_perf port=7710 mods="samples/raw_perf.ko" ;;
rkdapl-rust) d=rkdapl_perf port=7700 mods="rkdapl.ko samples/rkdapl_perf.ko rkdapl_rust_perf.ko" ;;
*) say "unknown RKDAPL_PROF_TOOL $tool"; exit 1 ;;
esac
cd "$RKDAPL_TOP" || exit 1
set_mtu
# As in qemu/bench-det.sh: unbound workqueues (rxe's tasks, the CQ work they queue) on CPU 3.
echo 8 > /sys/devices/virtual/workqueue/cpumask || say "cannot pin unbound workqueues"
for m in $mods; do insmod "$m" || { say "insmod $m failed"; exit 1; }; done
taskset -c 2 sh -c "echo 'server port=$port size=4194304 timeout_ms=3600000' > /sys/kernel/debug/$d/ctl" &
spid=$!
for ((i = 0; i < 300; i++)); do
	listening $port && break
	sleep 0.2
done
cmd="client addr=$RKDAPL_IP port=$port op=${RKDAPL_PROF_OP:-write} kind=bw size=${RKDAPL_PROF_SIZE:-64}"
cmd+=" iters=${RKDAPL_PROF_ITERS:-20000} txdepth=16 mode=event ${RKDAPL_PROF_ARGS:-}"
rc=0
c=$d
[ "$tool" = rkdapl-rust ] && c=rkdapl_rust_perf
taskset -c 1 sh -c "echo '$cmd' > /sys/kernel/debug/$c/ctl" || rc=$?
cat /sys/kernel/debug/$c/result > "$RKDAPL_SYNC/result.txt"
say "$(cat "$RKDAPL_SYNC/result.txt")"
echo 0 > /proc/sys/kernel/kptr_restrict
cat /proc/kallsyms > "$RKDAPL_SYNC/kallsyms.txt"
taskset -c 1 sh -c "echo 'client addr=$RKDAPL_IP port=$port op=stop' > /sys/kernel/debug/$d/ctl"
wait $spid
exit $rc
