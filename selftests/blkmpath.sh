#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE guest A by selftests/guest-a.sh (after blockdev.sh, removal.sh and
# blkreconn.sh, whose helpers it uses): rkdblk's multipath (docs/blockdev.md, "Multipath"), a
# disk over two paths as nvme's native multipath has a namespace over two controllers.
#
# blkmpath_suite   a second rxe link, $BLKMP_DEV over a veth end with $BLKMP_IP (guest A's
#                  loopback paths: each connects from and to its own link's address, so the
#                  two paths are two RDMA devices); rkdblk_srv listening on both devices
#                  (dev=rxe0,$BLKMP_DEV: ports 4421 and 4422); two connects with one nqn= make
#                  one disk of two paths (sysfs paths, the listing's two lines); refusals: a
#                  path whose nr_io_queues differs (EINVAL), a path the server's accept says
#                  is read-only while the disk is not (EPROTO), the same path again
#                  (EALREADY), a third path (ENOSPC), reconnect of a disk whose paths are all
#                  live (EISCONN). Then ext4 on the disk and fio --verify=crc32c in a loop
#                  while (a) rdma link delete $BLKMP_DEV: path 1 connecting, the disk live
#                  throughout, a reconnect command fails (the device is gone) and leaves it
#                  live, path 0 alone takes the I/O; the link added again: path 1 live
#                  and taking I/O again; (b) the same with rxe0 and path 0. Every fio run exits 0
#                  with no error, no I/O or EXT4 error in dmesg, a file written before reads
#                  back the same, fsck is clean. Last, two connects with one new nqn= at
#                  once make one disk (the second joins it or gets EBUSY), never two.

BLKMP_DEV=rxemp
BLKMP_NIC=rkmpa
BLKMP_PEER=rkmpb
BLKMP_IP=10.78.0.1
BLKMP_NQN=nqn.2026-12.org.rkdapl:blkmpath

# Path $1's line of /sys/block/rkdblk0/paths ("P STATE REQUESTS ADDRESS"), field $2.
blkmp_field() {
	awk -v p="$1" -v f="$2" '$1 == p { print $f }' /sys/block/rkdblk0/paths 2>/dev/null
}

# Path $1's state reads $2 within $3 seconds.
blkmp_wait_path() {
	local i
	for ((i = 0; i < $3 * 5; i++)); do
		[ "$(blkmp_field "$1" 2)" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# The veth pair and $BLKMP_DEV on its first end, ACTIVE.
blkmp_link_up() {
	local i
	if ! ip link show "$BLKMP_NIC" > /dev/null 2>&1; then
		rkdapl_modprobe veth 2>/dev/null
		ip link add "$BLKMP_NIC" type veth peer name "$BLKMP_PEER" || return 1
		ip addr add "$BLKMP_IP/24" dev "$BLKMP_NIC" || return 1
		ip link set "$BLKMP_PEER" up && ip link set "$BLKMP_NIC" up || return 1
	fi
	rdma link add "$BLKMP_DEV" type rxe netdev "$BLKMP_NIC" || return 1
	for ((i = 0; i < 100; i++)); do
		rdma link show "$BLKMP_DEV/1" 2>/dev/null | grep -q 'state ACTIVE' && return 0
		sleep 0.2
	done
	return 1
}

blkmp_link_down() {
	rdma link delete "$BLKMP_DEV" 2>/dev/null
	ip link del "$BLKMP_NIC" 2>/dev/null
}

blkmp_teardown() {
	mountpoint -q "$BLK_MNT" && umount "$BLK_MNT"
	module_loaded rkdblk && rmmod rkdblk
	module_loaded rkdblk_srv && rmmod rkdblk_srv
	blkmp_link_down
	rdma link show "$RKDAPL_DEV/1" > /dev/null 2>&1 || rm_rxe_up
	blk_store_down
}

# blkmp_refuses COMMAND ERROR WHAT [SHOWN]: blk_ctl_refuses of blockdev.sh, with this suite's
# test names.
blkmp_refuses() { BLK_SUITE=blkmpath blk_ctl_refuses "$@"; }

# One outage under fio: $1 the path, $2 its link's name, $3 the command that adds the link
# again, $4 the other path.
blkmp_outage() {
	local p=$1 link=$2 up=$3 o=$4 rc=0 st bad=0 i a0 a1 b0 b1 c t0 secs
	_log "blkmpath: rdma link delete $link (path $p) under fio"
	timeout -k 5 120 rdma link delete "$link" || rc=$?
	blkmp_wait_path "$p" connecting 30 || rc=${rc/#0/98}
	# The disk stays live: path $o carries the I/O.
	for ((i = 0; i < 15; i++)); do
		st=$(blk_attr 0 state)
		[ "$st" = live ] || bad=$((bad + 1))
		sleep 0.2
	done
	# A reconnect now tries the dead path (its device is gone: it fails) and leaves the live
	# one as it is.
	blk_ctl reconnect rkdblk0 && rc=${rc/#0/96}
	[ "$(blk_attr 0 state)" = live ] && [ "$(blkmp_field "$o" 2)" = live ] || rc=${rc/#0/95}
	a0=$(blkmp_field "$o" 3) a1=$(blkmp_field "$p" 3)
	sleep 5
	b0=$(blkmp_field "$o" 3) b1=$(blkmp_field "$p" 3)
	[ $rc = 0 ] && [ $bad = 0 ] && [ "$(blkmp_field "$o" 2)" = live ] && [ "$b0" -gt "$a0" ] &&
		[ "$b1" = "$a1" ] || rc=${rc/#0/2}
	t_check $rc "blkmpath: rdma link delete $link under fio: path $p connecting, the disk live throughout, a reconnect refused ($(sed 's/.*: //' /tmp/blk-ctl.txt | head -n 1)) leaving it live, path $o alone takes the I/O ($a0 -> $b0 requests; path $p $a1 -> $b1)" \
		"rc $rc (98: path not connecting, 96: reconnect succeeded, 95: not live after it, 2: counts or state); $bad samples not live; paths: $(tr '\n' '|' < /sys/block/rkdblk0/paths)"
	rc=0
	t0=$SECONDS
	$up || rc=$?
	blkmp_wait_path "$p" live 90 || rc=${rc/#0/97}
	secs=$((SECONDS - t0))
	sleep 5
	c=$(blkmp_field "$p" 3)
	[ $rc = 0 ] && [ "$c" -gt "$b1" ] || rc=${rc/#0/2}
	t_check $rc "blkmpath: $link added again: path $p live again ($secs s) and taking I/O again ($b1 -> $c requests)" \
		"rc $rc (97: not live); paths: $(tr '\n' '|' < /sys/block/rkdblk0/paths); $(dmesg | grep -E 'rkdblk0: |rkdblk_srv: ' | tail -n 3 | tr '\n' '|')"
}

# blkmp_ctl_bg COMMAND ERRFILE: one write of COMMAND to /dev/rkdblk-ctl, the shell's error in
# ERRFILE (blk_ctl's file is one for all: this one runs beside another).
blkmp_ctl_bg() {
	timeout -k 10 120 bash -c 'echo "$1" > /dev/rkdblk-ctl' _ "$1" 2> "$2"
}

blkmpath_suite() {
	local rc=0 n0 line fio_pid sum0 i n p0 p1 common nqn2 pid0 pid1 e0 e1 disks d
	mkdir -p "$BLK_MNT"
	blk_store
	n0=$(dmesg | wc -l)
	blkmp_link_up || rc=$?
	t_check $rc "blkmpath: a second rxe link, $BLKMP_DEV over the veth $BLKMP_NIC ($BLKMP_IP), ACTIVE" \
		"rc $rc: $(rdma link show 2>&1 | tr '\n' '|')"
	[ $rc = 0 ] || { blkmp_teardown; return; }
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV,$BLKMP_DEV || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rkdblk_srv: serving ' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *" on $RKDAPL_DEV port 4421 and on $BLKMP_DEV port 4422 "* ]] || rc=${rc/#0/99}
	t_check $rc "blkmpath: rkdblk_srv dev=$RKDAPL_DEV,$BLKMP_DEV listens on both (ports 4421 and 4422)" \
		"rc $rc; '$line'"
	[ $rc = 0 ] || { blkmp_teardown; return; }
	common="nr_io_queues=2 reconnect_delay=1 ctrl_loss_tmo=120 nqn=$BLKMP_NQN"
	rc=0
	insmod "$KO/rkdblk.ko" &&
		blk_ctl connect traddr=$RKDAPL_IP trsvcid=4421 host_traddr=$RKDAPL_IP $common || rc=$?
	t_check $rc "blkmpath: connect path 0 (traddr=$RKDAPL_IP trsvcid=4421 host_traddr=$RKDAPL_IP nqn=...): /dev/rkdblk0" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt)"
	[ $rc = 0 ] || { blkmp_teardown; return; }

	# Refusals while the disk has one path.
	blkmp_refuses "connect traddr=$BLKMP_IP trsvcid=4422 host_traddr=$BLKMP_IP nr_io_queues=1 nqn=$BLKMP_NQN" \
		"Invalid argument" "a path whose nr_io_queues is not the disk's"
	echo 1 > /sys/module/rkdblk_srv/parameters/read_only
	blkmp_refuses "connect traddr=$BLKMP_IP trsvcid=4422 host_traddr=$BLKMP_IP $common" \
		"Protocol error" "a path whose server's accept says read-only, the disk being writable: not the same export" \
		"connect ... nqn=... (read_only=1 on the server)"
	echo 0 > /sys/module/rkdblk_srv/parameters/read_only

	rc=0
	blk_ctl connect traddr=$BLKMP_IP trsvcid=4422 host_traddr=$BLKMP_IP $common || rc=$?
	line=$(tr '\n' '|' < /sys/block/rkdblk0/paths)
	[ $rc = 0 ] && ! [ -e /dev/rkdblk1 ] && [ "$(blk_ctl_disks)" = 2 ] &&
		[ "$(blkmp_field 0 2)" = live ] && [ "$(blkmp_field 1 2)" = live ] &&
		[ "$(blkmp_field 1 4)" = "traddr=$BLKMP_IP,trsvcid=4422,host_traddr=$BLKMP_IP" ] &&
		[[ $(grep "^rkdblk0 .* path=1 " /dev/rkdblk-ctl) == *"traddr=$BLKMP_IP trsvcid=4422 "*" nqn=$BLKMP_NQN path=1 state=live" ]] ||
		rc=${rc/#0/99}
	t_check $rc "blkmpath: connect with the same nqn= from $BLKMP_IP joins rkdblk0 as path 1 (no rkdblk1; sysfs paths and the listing show both live)" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); paths '$line'; listing '$(tr '\n' '|' < /dev/rkdblk-ctl)'"
	[ $rc = 0 ] || { blkmp_teardown; return; }
	blkmp_refuses "connect traddr=$BLKMP_IP trsvcid=4422 host_traddr=$BLKMP_IP $common" \
		"Operation already in progress" "the same path again"
	blkmp_refuses "connect traddr=$RKDAPL_IP trsvcid=4422 host_traddr=$RKDAPL_IP $common" \
		"No space left on device" "a third path (2 at most)"
	blkmp_refuses "reconnect rkdblk0" "Transport endpoint is already connected" \
		"a disk whose paths are all live"

	rc=0
	timeout 300 mkfs.ext4 -F -q /dev/rkdblk0 > /tmp/blk-mkfs.txt 2>&1 && mount -t ext4 /dev/rkdblk0 "$BLK_MNT" &&
		dd if=/dev/urandom of="$BLK_MNT/keep" bs=64k count=16 status=none && sync || rc=$?
	sum0=$(sha256sum < "$BLK_MNT/keep" 2>/dev/null)
	p0=$(blkmp_field 0 3) p1=$(blkmp_field 1 3)
	[ $rc = 0 ] && [ "$p0" -gt 0 ] && [ "$p1" -gt 0 ] || rc=${rc/#0/2}
	t_check $rc "blkmpath: mkfs.ext4, mount, a 1 MiB file written and synced, over both paths in turn ($p0 and $p1 requests)" \
		"rc $rc: $(tail -n 2 /tmp/blk-mkfs.txt | tr '\n' ' ')"
	[ $rc = 0 ] || { blkmp_teardown; return; }

	rm -f "$BLKR_FIO_STOP"
	blkr_fio_loop &
	fio_pid=$!
	sleep 5
	blkmp_outage 1 "$BLKMP_DEV" blkmp_link_up 0
	blkmp_outage 0 "$RKDAPL_DEV" rm_rxe_up 1

	blkr_fio_check $fio_pid "blkmpath: fio --verify=crc32c on the ext4 through both outages"
	line=$(dmesg | tail -n +$((n0 + 1)) | grep -E 'I/O error|error, dev rkdblk|EXT4-fs (error|warning)|Buffer I/O|blk_update_request|Aborting journal' | head -n 3)
	[ -z "$line" ]
	t_check $? "blkmpath: no I/O error (nor another block error: device offline, ...) and no EXT4 error in dmesg" "$(echo "$line" | tr '\n' '|')"
	n=$(dmesg | tail -n +$((n0 + 1)) | grep -c 'rkdblk0: connection lost (path ')
	[ "$n" -ge 2 ] && ! dmesg | tail -n +$((n0 + 1)) | grep -q 'rkdblk0: not reconnected'
	t_check $? "blkmpath: dmesg shows each path lost and reconnected ($n), the disk never gave up" \
		"$(dmesg | grep 'rkdblk0: ' | tail -n 4 | tr '\n' '|')"
	blkr_fs_check "$sum0" blkmpath

	# Two connects with one new nqn= at once: one disk (the second joined it as its path, or
	# was refused with EBUSY while the first connected), never two disks of one export.
	nqn2=$BLKMP_NQN-2
	blkmp_ctl_bg "connect traddr=$RKDAPL_IP trsvcid=4421 host_traddr=$RKDAPL_IP nr_io_queues=2 nqn=$nqn2" \
		/tmp/blkmp-c0.txt &
	pid0=$!
	blkmp_ctl_bg "connect traddr=$BLKMP_IP trsvcid=4422 host_traddr=$BLKMP_IP nr_io_queues=2 nqn=$nqn2" \
		/tmp/blkmp-c1.txt &
	pid1=$!
	wait $pid0
	e0=$?
	wait $pid1
	e1=$?
	disks=$(grep "nqn=$nqn2 path=" /dev/rkdblk-ctl | awk '{ print $1 }' | sort -u)
	rc=0
	[ "$(grep -c . <<< "$disks")" = 1 ] || rc=1
	[ $e0 = 0 ] || [ $e1 = 0 ] || rc=${rc/#0/2}
	[ $e0 = 0 ] || grep -q 'Device or resource busy' /tmp/blkmp-c0.txt || rc=${rc/#0/3}
	[ $e1 = 0 ] || grep -q 'Device or resource busy' /tmp/blkmp-c1.txt || rc=${rc/#0/3}
	t_check $rc "blkmpath: two connects with one new nqn= at once make one disk ($(echo $disks)): the second joins it or gets EBUSY (exits $e0 and $e1)" \
		"rc $rc (1: not one disk, 2: neither connected, 3: another error): $(cat /tmp/blkmp-c0.txt /tmp/blkmp-c1.txt | tr '\n' '|'); listing '$(tr '\n' '|' < /dev/rkdblk-ctl)'"
	for d in $disks; do blk_ctl disconnect "$d"; done

	rc=0
	rmmod rkdblk || rc=$?
	rmmod rkdblk_srv || rc=${rc/#0/$?}
	t_check $rc "blkmpath: rmmod rkdblk and rkdblk_srv" "rmmod exit $rc"
	blkmp_teardown
	rc=0
	rdma link show "$BLKMP_DEV" > /dev/null 2>&1 && rc=1
	rdma link show "$RKDAPL_DEV/1" 2>/dev/null | grep -q 'state ACTIVE' || rc=${rc/#0/2}
	t_check $rc "blkmpath: $BLKMP_DEV and its veth gone, $RKDAPL_DEV ACTIVE" "rc $rc: $(rdma link show 2>&1 | tr '\n' '|')"
	blk_nothing_left
}
