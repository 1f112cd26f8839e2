#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Runs INSIDE the one guest of `make bench-blk` (scripts/bench.sh blk -> qemu/run-guests.sh
# --one), under QEMU's -icount shift=0,sleep=off like `make bench` (qemu/bench-det.sh): guest
# time counts instructions, so the figures repeat. The comparison: the same fio jobs
# on rkdapl's block device and on NVMe over Fabrics, in one boot, over the same rxe loopback
# and the same kind of backing store:
#
#   /dev/rkdblk0   rkdblk.ko (samples/rust/rkdblk, the Rust blk-mq client on rkdapl::api) of
#                  rkdblk_srv.ko (samples/rkdblk_srv) exporting /dev/ram0
#   /dev/nvme0n1   nvme-rdma (the kernel's host) of nvmet-rdma (the kernel's target)
#                  exporting /dev/ram1, set up through nvmet's configfs and `nvme connect`
#
# Both RAM disks are brd's (64 MiB each, written once before the first pass so that reads
# find pages). Jobs (fio, O_DIRECT, libaio, one job): 4 KiB random read and write at queue
# depth 1 and 16, 128 KiB sequential read and write at queue depth 16. Per pass each job runs
# on both devices, the order of the two alternating from pass to pass; RKDAPL_BENCH_WARMUP
# passes (default 1) first, not reported, then RKDAPL_BENCH_REPEAT (default 3).
#
# Output in $RKDAPL_SYNC: blk/<dev>-<job>-<pass>.json (fio's JSON), blk/setup.txt;
# scripts/bench_blk_report.py prints the ratio table.
#
# Env (defaults): RKDAPL_BENCH_BLK_IOS_4K (fio I/Os of a 4 KiB job, 8192; fio times in ms, so
# a job must last about a second of guest time), RKDAPL_BENCH_BLK_IOS_128K (of a 128 KiB job,
# 384: all of the 48 MiB each job covers), RKDAPL_BENCH_BLK_QUEUES (hardware
# queues of each device, 4), RKDAPL_BENCH_BLK_DEPTH (rkdblk's commands per queue, 32),
# RKDAPL_BENCH_BLK_INLINE (rkdblk_srv's inline_data_size: bytes of write data a command
# carries in-capsule, 4096 as nvmet-rdma's default; 0 sends every write's data by RDMA READ),
# RKDAPL_BENCH_BLK_DIRECT (rkdblk_srv's direct: 1 opens /dev/ram0 with O_DIRECT, as nvmet's
# block device backend reaches /dev/ram1; 0 goes through the page cache).
set -u

. "$RKDAPL_TOP/qemu/bench-lib.sh"
. "$RKDAPL_TOP/qemu/blk-lib.sh"

OUT=$RKDAPL_SYNC/blk

# run DEV NAME PASS: one fio job, pinned to CPU 1 (as make bench pins its clients).
run() {
	local dev=$1 name=$2 pass=$3 t0=$SECONDS rc=0 f
	f=$OUT/${dev##*/}-$name-$pass.json
	# shellcheck disable=SC2046 # job's words are fio's arguments
	taskset -c 1 fio --name="$name" --filename="$dev" --direct=1 --ioengine=libaio \
		$(job "$name") --size=48m --randrepeat=0 --norandommap --output-format=json \
		--output="$f" > /dev/null 2>&1 || rc=$?
	if [ $rc = 0 ]; then
		say "$pass ${dev##*/} $name: $(grep -m2 -E '"iops" :' "$f" | tr -d ' \n') ($((SECONDS - t0)) s)"
	else
		say "$pass ${dev##*/} $name: fio FAILED ($rc)"
		FAILS=$((FAILS + 1))
	fi
}

main() {
	local reps=${RKDAPL_BENCH_REPEAT:-3} warm=${RKDAPL_BENCH_WARMUP:-1} pass name d devs i
	blk_env
	FAILS=0
	mkdir -p "$OUT"
	# rxe's tasks and the CQ work on CPU 3, as in make bench (qemu/bench-det.sh).
	echo 8 > /sys/devices/virtual/workqueue/cpumask || say "cannot pin unbound workqueues"
	set_mtu
	command -v fio > /dev/null && command -v nvme > /dev/null ||
		{ say "fio or nvme-cli missing on the host (scripts/deps.sh installs both)"; return 1; }
	fill_ram || return 1
	setup_rkdblk || { say "rkdblk setup failed: $(dmesg | grep -E 'rkdblk' | tail -3 | tr '\n' ' ')"; teardown; return 1; }
	setup_nvme || { say "nvme-rdma setup failed: $(dmesg | grep -E 'nvme' | tail -3 | tr '\n' ' ')"; teardown; return 1; }
	{
		echo "rkdblk: queues=$QUEUES depth=$DEPTH inline_data_size=$INLINE direct=$DIRECT, $(cat /sys/block/rkdblk0/queue/nr_requests) requests, max $(cat /sys/block/rkdblk0/queue/max_hw_sectors_kb) KiB"
		echo "nvme: $(ls -d /sys/block/nvme0n1/mq/* | wc -l) hardware queues, $(cat /sys/block/nvme0n1/queue/nr_requests) requests, max $(cat /sys/block/nvme0n1/queue/max_hw_sectors_kb) KiB"
		echo "icount: $(grep -o 'icount[^ ]*' /proc/cmdline || echo 'see the QEMU command line')"
		echo "ios: 4k $IOS4, 128k $IOS128; passes $reps after $warm"
	} > "$OUT/setup.txt"
	say "$(tr '\n' ';' < "$OUT/setup.txt")"
	for ((pass = 1 - warm; pass <= reps; pass++)); do
		# Alternate which device goes first, so that neither always follows the other.
		devs="/dev/rkdblk0 /dev/nvme0n1"
		[ $((pass % 2)) = 0 ] && devs="/dev/nvme0n1 /dev/rkdblk0"
		for name in $JOBS; do
			for d in $devs; do run "$d" "$name" "$pass"; done
		done
	done
	teardown
	say "done: $FAILS failed runs"
	[ $FAILS = 0 ]
}

main "$@"
exit $?
