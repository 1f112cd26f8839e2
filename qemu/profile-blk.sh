#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE the guest of `make profile` with RKDAPL_PROF_TOOL=rkdblk or nvme
# (scripts/profile.sh -> qemu/run-guests.sh --one, under -icount with the tbprof plugin): one
# fio job of `make bench-blk` on one of its two block devices, fio pinned to CPU 1 as there,
# then the guest's symbols (/proc/kallsyms, modules included) for the report. io_size lets the
# job wrap around its 48 MiB, so that --number_ios alone ends it. The device is
# set up as qemu/bench-blk.sh sets it up (qemu/blk-lib.sh), with the same knobs.
#
# Env: RKDAPL_PROF_TOOL (rkdblk | nvme), RKDAPL_PROF_JOB (one of qemu/blk-lib.sh's JOBS,
# default randread-4k-qd16), RKDAPL_PROF_ITERS (the job's I/Os, 4000; scripts/profile.sh
# doubles it in its second boot).
set -u
. "$RKDAPL_TOP/qemu/bench-lib.sh"
. "$RKDAPL_TOP/qemu/blk-lib.sh"

tool=${RKDAPL_PROF_TOOL:-rkdblk}
name=${RKDAPL_PROF_JOB:-randread-4k-qd16}
blk_env
IOS4=${RKDAPL_PROF_ITERS:-4000} IOS128=${RKDAPL_PROF_ITERS:-4000}
[ -n "$(job "$name")" ] || { say "unknown RKDAPL_PROF_JOB $name"; exit 1; }
echo 8 > /sys/devices/virtual/workqueue/cpumask || say "cannot pin unbound workqueues"
set_mtu
fill_ram || exit 1
case "$tool" in
rkdblk) setup_rkdblk || { say "rkdblk setup failed"; exit 1; }; dev=/dev/rkdblk0 ;;
nvme) setup_nvme || { say "nvme-rdma setup failed"; exit 1; }; dev=/dev/nvme0n1 ;;
*) say "unknown RKDAPL_PROF_TOOL $tool"; exit 1 ;;
esac
rc=0
# shellcheck disable=SC2046 # job's words are fio's arguments
taskset -c 1 fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio $(job "$name") \
	--size=48m --io_size=64g --randrepeat=0 --norandommap --output-format=terse --terse-version=3 \
	> "$RKDAPL_SYNC/fio.txt" 2>&1 || rc=$?
# The line tbprof_report.py reads: what ran, and how many I/Os (its "iters").
echo "tool=$tool dev=$dev job=$name iters=$(job "$name" | sed 's/.*--number_ios=//') unit=I/O fio_exit=$rc" \
	> "$RKDAPL_SYNC/result.txt"
say "$(cat "$RKDAPL_SYNC/result.txt")"
echo 0 > /proc/sys/kernel/kptr_restrict
cat /proc/kallsyms > "$RKDAPL_SYNC/kallsyms.txt"
exit $rc
