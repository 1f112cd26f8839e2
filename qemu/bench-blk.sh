#!/bin/bash
# Runs INSIDE the one guest of `make bench-blk` (scripts/bench.sh blk -> qemu/run-guests.sh
# --one), under QEMU's -icount shift=0,sleep=off like `make bench` (qemu/bench-det.sh): guest
# time counts instructions, so the figures repeat. Issue 17's comparison: the same fio jobs
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
# Env (defaults): RKDAPL_BENCH_BLK_IOS_4K (fio I/Os of a 4 KiB job, 1024),
# RKDAPL_BENCH_BLK_IOS_128K (of a 128 KiB job, 256), RKDAPL_BENCH_BLK_QUEUES (hardware
# queues of each device, 4), RKDAPL_BENCH_BLK_DEPTH (rkdblk's commands per queue, 32),
# RKDAPL_BENCH_BLK_INLINE (rkdblk_srv's inline_data_size: bytes of write data a command
# carries in-capsule, 4096 as nvmet-rdma's default; 0 sends every write's data by RDMA READ).
set -u

. "$RKDAPL_TOP/qemu/bench-lib.sh"

OUT=$RKDAPL_SYNC/blk
NQN=nqn.2026-12.org.rkdapl:bench
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:2c6a5b2e-7d1f-4b3a-9a51-0d1e0f2a3b4c
KO=$RKDAPL_TOP
MODPROBE="modprobe -d $RKDAPL_MODROOT"

# ip_int A.B.C.D: the address as one integer, host order (rkdblk's server= parameter).
ip_int() {
	local a b c d
	IFS=. read -r a b c d <<< "$1"
	echo $(((a << 24) | (b << 16) | (c << 8) | d))
}

# wait_for PATH SECONDS: PATH exists within SECONDS.
wait_for() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

setup_rkdblk() {
	insmod "$KO/rkdapl.ko" &&
		insmod "$KO/samples/rkdblk_srv.ko" path=/dev/ram0 dev=rxe0 inline_data_size="$INLINE" &&
		insmod "$KO/rkdblk.ko" server="$(ip_int "$RKDAPL_IP")" queues="$QUEUES" depth="$DEPTH" &&
		wait_for /dev/rkdblk0 10
}

setup_nvme() {
	local cfg=/sys/kernel/config/nvmet
	$MODPROBE nvmet-rdma && $MODPROBE nvme-rdma || return 1
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	mkdir -p "$cfg/subsystems/$NQN/namespaces/1" "$cfg/ports/1" || return 1
	echo 1 > "$cfg/subsystems/$NQN/attr_allow_any_host" &&
		echo /dev/ram1 > "$cfg/subsystems/$NQN/namespaces/1/device_path" &&
		echo 1 > "$cfg/subsystems/$NQN/namespaces/1/enable" &&
		echo rdma > "$cfg/ports/1/addr_trtype" &&
		echo ipv4 > "$cfg/ports/1/addr_adrfam" &&
		echo "$RKDAPL_IP" > "$cfg/ports/1/addr_traddr" &&
		echo 4420 > "$cfg/ports/1/addr_trsvcid" &&
		ln -s "$cfg/subsystems/$NQN" "$cfg/ports/1/subsystems/$NQN" || return 1
	nvme connect -t rdma -a "$RKDAPL_IP" -s 4420 -n "$NQN" --hostnqn="$HOSTNQN" \
		--nr-io-queues="$QUEUES" || return 1
	wait_for /dev/nvme0n1 20
}

teardown() {
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	local cfg=/sys/kernel/config/nvmet
	rm -f "$cfg/ports/1/subsystems/$NQN" 2>/dev/null
	echo 0 > "$cfg/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$cfg/subsystems/$NQN/namespaces/1" "$cfg/subsystems/$NQN" "$cfg/ports/1" 2>/dev/null
	rmmod rkdblk rkdblk_srv rkdapl 2>/dev/null
}

# job NAME: fio's arguments of job NAME.
job() {
	case $1 in
	randread-4k-qd1) echo "--rw=randread --bs=4k --iodepth=1 --number_ios=$IOS4" ;;
	randwrite-4k-qd1) echo "--rw=randwrite --bs=4k --iodepth=1 --number_ios=$IOS4" ;;
	randread-4k-qd16) echo "--rw=randread --bs=4k --iodepth=16 --number_ios=$IOS4" ;;
	randwrite-4k-qd16) echo "--rw=randwrite --bs=4k --iodepth=16 --number_ios=$IOS4" ;;
	read-128k-qd16) echo "--rw=read --bs=128k --iodepth=16 --number_ios=$IOS128" ;;
	write-128k-qd16) echo "--rw=write --bs=128k --iodepth=16 --number_ios=$IOS128" ;;
	esac
}
JOBS="randread-4k-qd1 randwrite-4k-qd1 randread-4k-qd16 randwrite-4k-qd16 read-128k-qd16 write-128k-qd16"

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
	IOS4=${RKDAPL_BENCH_BLK_IOS_4K:-1024}
	IOS128=${RKDAPL_BENCH_BLK_IOS_128K:-256}
	QUEUES=${RKDAPL_BENCH_BLK_QUEUES:-4}
	DEPTH=${RKDAPL_BENCH_BLK_DEPTH:-32}
	INLINE=${RKDAPL_BENCH_BLK_INLINE:-4096}
	FAILS=0
	mkdir -p "$OUT"
	# rxe's tasks and the CQ work on CPU 3, as in make bench (qemu/bench-det.sh).
	echo 8 > /sys/devices/virtual/workqueue/cpumask || say "cannot pin unbound workqueues"
	set_mtu
	command -v fio > /dev/null && command -v nvme > /dev/null ||
		{ say "fio or nvme-cli missing on the host (scripts/deps.sh installs both)"; return 1; }
	$MODPROBE brd rd_nr=2 rd_size=65536 || { say "modprobe brd failed"; return 1; }
	for i in 0 1; do
		dd if=/dev/urandom of=/dev/ram$i bs=1M count=64 oflag=direct status=none ||
			{ say "filling /dev/ram$i failed"; return 1; }
	done
	setup_rkdblk || { say "rkdblk setup failed: $(dmesg | grep -E 'rkdblk' | tail -3 | tr '\n' ' ')"; teardown; return 1; }
	setup_nvme || { say "nvme-rdma setup failed: $(dmesg | grep -E 'nvme' | tail -3 | tr '\n' ' ')"; teardown; return 1; }
	{
		echo "rkdblk: queues=$QUEUES depth=$DEPTH inline_data_size=$INLINE, $(cat /sys/block/rkdblk0/queue/nr_requests) requests, max $(cat /sys/block/rkdblk0/queue/max_hw_sectors_kb) KiB"
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
