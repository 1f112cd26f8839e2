#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced inside the one guest of `make bench-blk` (qemu/bench-blk.sh) and of `make profile`
# with RKDAPL_PROF_TOOL=rkdblk|nvme (qemu/profile-blk.sh): the two block devices of the
# comparison over the rxe loopback, and the fio jobs. The caller sources qemu/bench-lib.sh
# first.
#
#   blk_env        the knobs from the environment (qemu/bench-blk.sh's list)
#   setup_rkdblk   rkdblk_srv.ko exporting /dev/ram0, rkdblk.ko connected: /dev/rkdblk0
#   setup_nvme     nvmet-rdma exporting /dev/ram1 (configfs), nvme-rdma connected: /dev/nvme0n1
#   fill_ram       brd's two 64 MiB RAM disks, written once (reads then find pages)
#   job NAME       fio's arguments of job NAME (one of $JOBS)

NQN=nqn.2026-12.org.rkdapl:bench
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:2c6a5b2e-7d1f-4b3a-9a51-0d1e0f2a3b4c
KO=$RKDAPL_TOP
MODPROBE="modprobe -d $RKDAPL_MODROOT"

blk_env() {
	IOS4=${RKDAPL_BENCH_BLK_IOS_4K:-8192}
	IOS128=${RKDAPL_BENCH_BLK_IOS_128K:-384}
	QUEUES=${RKDAPL_BENCH_BLK_QUEUES:-4}
	DEPTH=${RKDAPL_BENCH_BLK_DEPTH:-32}
	INLINE=${RKDAPL_BENCH_BLK_INLINE:-4096}
	DIRECT=${RKDAPL_BENCH_BLK_DIRECT:-1}
}

# The guest's set-up helpers (qemu/guest-setup.sh).
. "$RKDAPL_TOP/qemu/guest-setup.sh" || exit 1

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
		insmod "$KO/rkdblk_srv.ko" path=/dev/ram0 dev=rxe0 inline_data_size="$INLINE" \
			direct="$DIRECT" &&
		insmod "$KO/rkdblk.ko" server="$RKDAPL_IP" queues="$QUEUES" depth="$DEPTH" &&
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

# fill_ram: brd's /dev/ram0 and /dev/ram1, 64 MiB each, filled with random bytes, on CPU 0
# (make profile's per-vCPU table counts CPU 1, fio's).
fill_ram() {
	local i
	$MODPROBE brd rd_nr=2 rd_size=65536 || { say "modprobe brd failed"; return 1; }
	for i in 0 1; do
		taskset -c 0 dd if=/dev/urandom of=/dev/ram$i bs=1M count=64 oflag=direct status=none ||
			{ say "filling /dev/ram$i failed"; return 1; }
	done
}
