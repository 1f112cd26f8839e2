#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE guest A by selftests/guest-a.sh (after blockdev.sh and removal.sh, whose
# helpers it uses): rkdblk reconnects by itself (docs/blockdev.md, "Reconnecting"), as
# nvme-rdma does with reconnect_delay and ctrl_loss_tmo.
#
# blkreconn_suite   ext4 on /dev/rkdblk0 (2 queues, reconnect_delay=1), fio writing and
#                   verifying files on it (crc32c) in a loop while (a) the server is unloaded
#                   and loaded again on the same store and (b) rdma link delete rxe0, then
#                   rxe0 added again: the disk goes connecting and back to live each time, every
#                   fio run exits 0 with no error, no I/O or EXT4 error in dmesg, a file written
#                   before reads back with the same sha256, fsck is clean; then ctrl_loss_tmo=4
#                   with the server gone fails a reader with EIO after about 4 s (state failed);
#                   fast_io_fail_tmo=3 with ctrl_loss_tmo=-1 fails a reader with EIO after about
#                   3 s while the disk stays connecting, and reads work again once the server is
#                   back; a disk connecting forever (ctrl_loss_tmo=-1) is disconnected, and the
#                   module unloaded, while it connects.

BLKR_FIO_STOP=/tmp/blkr-fio.stop
BLKR_FIO_LOG=/tmp/blkr-fio.log

# The disk's state in sysfs reads $1 within $2 seconds.
blkr_wait_state() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		[ "$(blk_attr ${3:-0} state)" = "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

# fio runs one after the other until $BLKR_FIO_STOP exists: two jobs of 4 KiB random writes,
# queue depth 8, O_DIRECT, over 2 MiB files on the mounted ext4, each block with a crc32c
# header, every block read back and verified at the end of each run. One line per run in
# $BLKR_FIO_LOG: "run N exit E errors X".
blkr_fio_loop() {
	local n=0 rc out=/tmp/blkr-fio-run.txt err
	: > "$BLKR_FIO_LOG"
	while ! [ -e "$BLKR_FIO_STOP" ]; do
		n=$((n + 1))
		rc=0
		timeout -k 10 600 fio --name=reconn --directory="$BLK_MNT" --size=2m --bs=4k \
			--rw=randwrite --ioengine=libaio --direct=1 --iodepth=8 --numjobs=2 \
			--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0 \
			--output-format=terse --terse-version=3 > "$out" 2>&1 || rc=$?
		# terse v3: field 5 is the job's error.
		err=$(awk -F';' '/^3;/ { e += ($5 != 0) } END { print e + 0 }' "$out")
		grep -q "verify:" "$out" && err=$((err + 1))
		echo "run $n exit $rc errors $err" >> "$BLKR_FIO_LOG"
		[ $rc = 0 ] && [ "$err" = 0 ] || { grep -v '^3;' "$out" | tail -n 5 >> "$BLKR_FIO_LOG"; }
	done
}

# blkr_fio_check PID WHAT: stops the fio loop PID (its current run finishes), then the test
# "WHAT: N runs, every one exit 0 with no error". The loop starts the next run at once, so a
# run was in flight through every outage before the stop: one run that spanned them all (a
# slow guest) proves as much as several.
blkr_fio_check() {
	local rc=0 i runs bad
	touch "$BLKR_FIO_STOP"
	for ((i = 0; i < 300; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 1; done
	kill -0 "$1" 2>/dev/null && { rc=1; kill "$1"; }
	wait "$1"
	runs=$(grep -c '^run ' "$BLKR_FIO_LOG")
	bad=$(grep '^run ' "$BLKR_FIO_LOG" | grep -vc ' exit 0 errors 0$')
	[ $rc = 0 ] && [ "$runs" -ge 1 ] && [ "$bad" = 0 ] || rc=${rc/#0/2}
	t_check $rc "$2: $runs runs, every one exit 0 with no error" \
		"rc $rc (1: hung); $bad bad runs: $(tail -n 8 "$BLKR_FIO_LOG" | tr '\n' '|')"
}

# blkr_reader_vs_server_gone: a reader of /dev/rkdblk0 (blk_reader), and 2 s later the server
# unloaded; waits up to 60 s for the reader to end. BLKR_SECS: the seconds from the unload.
# Returns 0 if the reader ended with an I/O error, 1 if it still ran (then killed), 2 if its
# read succeeded.
blkr_reader_vs_server_gone() {
	local pid i t0
	blk_reader &
	pid=$!
	sleep 2
	t0=$SECONDS
	rmmod rkdblk_srv
	for ((i = 0; i < 60; i++)); do kill -0 $pid 2>/dev/null || break; sleep 1; done
	BLKR_SECS=$((SECONDS - t0))
	if kill -0 $pid 2>/dev/null; then
		kill -9 $pid
		return 1
	fi
	wait $pid && return 2
	return 0
}

# blkr_fs_check SUM PREFIX: $BLK_MNT/keep still has sha256 SUM, the file system unmounts and
# fsck.ext4 -fn finds /dev/rkdblk0 clean: the test "PREFIX: the file written before ...".
blkr_fs_check() {
	local rc=0
	[ "$1" = "$(sha256sum < "$BLK_MNT/keep")" ] || rc=1
	umount "$BLK_MNT" || rc=${rc/#0/2}
	timeout 300 fsck.ext4 -fn /dev/rkdblk0 > /tmp/blkr-fsck.txt 2>&1 || rc=${rc/#0/3}
	t_check $rc "$2: the file written before reads back the same, unmount, fsck.ext4 -fn clean" \
		"rc $rc (1: checksum, 2: umount, 3: fsck): $(tail -n 3 /tmp/blkr-fsck.txt | tr '\n' ' ')"
}

blkreconn_suite() {
	local rc=0 n0 fio_pid t0 secs line sum0
	mkdir -p "$BLK_MNT"
	blk_store
	n0=$(dmesg | wc -l)
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV &&
		timeout -k 10 120 insmod "$KO/rkdblk.ko" server="$RKDAPL_IP" queues=2 depth=16 \
			timeout_ms=20000 reconnect_delay=1 ctrl_loss_tmo=120 || rc=$?
	line=$(blk_ctl_line rkdblk0)
	[ $rc = 0 ] && [[ $line == *" reconnect_delay=1 ctrl_loss_tmo=120 state=live" ]] || rc=${rc/#0/99}
	t_check $rc "blkreconn: server and client (reconnect_delay=1 ctrl_loss_tmo=120) up, the listing shows both options" \
		"insmod exit $rc; listed '${line:-nothing}'"
	[ $rc = 0 ] || { rmmod rkdblk 2>/dev/null; rmmod rkdblk_srv 2>/dev/null; blk_store_down; return; }
	rc=0
	timeout 300 mkfs.ext4 -F -q /dev/rkdblk0 > /tmp/blk-mkfs.txt 2>&1 && mount -t ext4 /dev/rkdblk0 "$BLK_MNT" &&
		dd if=/dev/urandom of="$BLK_MNT/keep" bs=64k count=16 status=none && sync || rc=$?
	sum0=$(sha256sum < "$BLK_MNT/keep" 2>/dev/null)
	t_check $rc "blkreconn: mkfs.ext4, mount, a 1 MiB file written and synced" "rc $rc: $(tail -n 2 /tmp/blk-mkfs.txt | tr '\n' ' ')"
	[ $rc = 0 ] || { umount "$BLK_MNT" 2>/dev/null; rmmod rkdblk; rmmod rkdblk_srv; blk_store_down; return; }

	rm -f "$BLKR_FIO_STOP"
	blkr_fio_loop &
	fio_pid=$!
	sleep 5

	# (a) The server unloaded and loaded again on the same store.
	_log "blkreconn: rmmod rkdblk_srv under fio"
	rc=0
	rmmod rkdblk_srv || rc=$?
	blkr_wait_state connecting 20 || rc=${rc/#0/98}
	t_check $rc "blkreconn: rmmod rkdblk_srv under fio: the disk is connecting" \
		"rc $rc; state '$(blk_attr 0 state)'"
	sleep 3
	rc=0
	t0=$SECONDS
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV || rc=$?
	blkr_wait_state live 60 || rc=${rc/#0/97}
	secs=$((SECONDS - t0))
	t_check $rc "blkreconn: the server loaded again: the disk reconnects by itself, state live ($secs s)" \
		"rc $rc; state '$(blk_attr 0 state)'; $(dmesg | grep 'rkdblk0: ' | tail -n 2 | tr '\n' '|')"
	sleep 5

	# (b) The RDMA device deleted and added again.
	_log "blkreconn: rdma link delete $RKDAPL_DEV under fio"
	rc=0
	timeout -k 5 120 rdma link delete "$RKDAPL_DEV" || rc=$?
	blkr_wait_state connecting 20 || rc=${rc/#0/98}
	t_check $rc "blkreconn: rdma link delete $RKDAPL_DEV under fio: the disk is connecting" \
		"rc $rc; state '$(blk_attr 0 state)'"
	sleep 2
	rc=0
	t0=$SECONDS
	rm_rxe_up || rc=$?
	blkr_wait_state live 90 || rc=${rc/#0/97}
	secs=$((SECONDS - t0))
	t_check $rc "blkreconn: $RKDAPL_DEV added again: the server listens again, the disk reconnects, state live ($secs s)" \
		"rc $rc; state '$(blk_attr 0 state)'; $(dmesg | grep -E 'rkdblk0: |rkdblk_srv: ' | tail -n 3 | tr '\n' '|')"
	sleep 5

	blkr_fio_check $fio_pid "blkreconn: fio --verify=crc32c on the ext4 through both"
	line=$(dmesg | tail -n +$((n0 + 1)) | grep -E 'I/O error|EXT4-fs (error|warning)|Buffer I/O|blk_update_request|Aborting journal' | head -n 3)
	[ -z "$line" ]
	t_check $? "blkreconn: no I/O error and no EXT4 error in dmesg" "$(echo "$line" | tr '\n' '|')"
	n=$(dmesg | tail -n +$((n0 + 1)) | grep -c 'rkdblk0: reconnected ')
	[ "$n" -ge 2 ]
	t_check $? "blkreconn: dmesg shows the disk's reconnects ($n)" "$(dmesg | grep 'rkdblk0: ' | tail -n 4 | tr '\n' '|')"
	n=$(dmesg | tail -n +$((n0 + 1)) | grep -c 'rkdblk_srv: .* is back: listening on port')
	[ "$n" -ge 1 ]
	t_check $? "blkreconn: the server made its PSP again once $RKDAPL_DEV was back" \
		"$(dmesg | grep 'rkdblk_srv: ' | tail -n 3 | tr '\n' '|')"
	blkr_fs_check "$sum0" blkreconn
	rc=0
	rmmod rkdblk || rc=$?
	t_check $rc "blkreconn: rmmod rkdblk" "rmmod exit $rc"

	# ctrl_loss_tmo expires: the server gone for good, a reader fails with EIO.
	rc=0
	timeout -k 10 120 insmod "$KO/rkdblk.ko" server="$RKDAPL_IP" reconnect_delay=1 ctrl_loss_tmo=4 || rc=$?
	t_check $rc "blkreconn: client with ctrl_loss_tmo=4 up" "insmod exit $rc"
	if [ $rc = 0 ]; then
		blkr_reader_vs_server_gone || rc=$?
		secs=$BLKR_SECS
		[ $rc = 0 ] && [ $secs -ge 3 ] && [ "$(blk_attr 0 state)" = failed ] &&
			dmesg | tail -n 20 | grep -q 'rkdblk0: not reconnected within ctrl_loss_tmo' || rc=${rc/#0/3}
		t_check $rc "blkreconn: server gone, ctrl_loss_tmo=4: the reader fails with an I/O error after $secs s, state failed" \
			"rc $rc (1: still running, 2: dd succeeded, 3: too early or state '$(blk_attr 0 state)'); $(head -c 200 /tmp/blk-dd.txt)"
		rc=0
		dd if=/dev/rkdblk0 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null && rc=1
		t_check $rc "blkreconn: a new read on the failed disk fails at once" "it succeeded"
		rc=0
		rmmod rkdblk || rc=$?
		t_check $rc "blkreconn: rmmod rkdblk of the failed disk" "rmmod exit $rc"
	fi

	# fast_io_fail_tmo expires: the server gone, a reader fails with EIO after about 3 s while
	# the disk goes on reconnecting; the server back, the disk is live and reads work again.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV && insmod "$KO/rkdblk.ko" &&
		blk_ctl connect traddr=$RKDAPL_IP reconnect_delay=1 ctrl_loss_tmo=-1 fast_io_fail_tmo=3 ||
		rc=$?
	line=$(blk_ctl_line rkdblk0)
	[ $rc = 0 ] && [[ $line == *" ctrl_loss_tmo=-1 fast_io_fail_tmo=3 state=live" ]] || rc=${rc/#0/99}
	t_check $rc "blkreconn: client with fast_io_fail_tmo=3 ctrl_loss_tmo=-1 up, the listing shows both" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); listed '${line:-nothing}'"
	if [ $rc = 0 ]; then
		blkr_reader_vs_server_gone || rc=$?
		secs=$BLKR_SECS
		[ $rc = 0 ] && [ $secs -ge 2 ] && [ "$(blk_attr 0 state)" = connecting ] &&
			dmesg | tail -n 20 | grep -q 'rkdblk0: no path reconnected within fast_io_fail_tmo' ||
			rc=${rc/#0/3}
		t_check $rc "blkreconn: server gone, fast_io_fail_tmo=3: the reader fails with an I/O error after $secs s, the disk still connecting" \
			"rc $rc (1: still running, 2: dd succeeded, 3: too early, no log line or state '$(blk_attr 0 state)'); $(head -c 200 /tmp/blk-dd.txt)"
		rc=0
		dd if=/dev/rkdblk0 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null && rc=1
		t_check $rc "blkreconn: a new read fails at once while the disk reconnects past fast_io_fail_tmo" "it succeeded"
		rc=0
		t0=$SECONDS
		insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV || rc=$?
		blkr_wait_state live 60 || rc=${rc/#0/97}
		dd if=/dev/rkdblk0 of=/dev/null bs=4k count=16 iflag=direct status=none 2> /tmp/blk-dd.txt ||
			rc=${rc/#0/96}
		secs=$((SECONDS - t0))
		t_check $rc "blkreconn: the server back: the disk reconnects by itself, state live, and reads work again ($secs s)" \
			"rc $rc (97: not live, 96: read failed); state '$(blk_attr 0 state)'; $(head -c 200 /tmp/blk-dd.txt)"
		rc=0
		rmmod rkdblk && rmmod rkdblk_srv || rc=$?
		t_check $rc "blkreconn: both unload after the fast_io_fail_tmo case" "rmmod exit $rc"
	fi
	module_loaded rkdblk && rmmod rkdblk
	module_loaded rkdblk_srv && rmmod rkdblk_srv

	# Connecting forever (ctrl_loss_tmo=-1): disconnect, and rmmod, while it connects.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV && insmod "$KO/rkdblk.ko" &&
		blk_ctl connect traddr=$RKDAPL_IP reconnect_delay=1 ctrl_loss_tmo=-1 &&
		blk_ctl connect traddr=$RKDAPL_IP reconnect_delay=2 ctrl_loss_tmo=-1 || rc=$?
	[ $rc = 0 ] && rmmod rkdblk_srv && blkr_wait_state connecting 20 0 && blkr_wait_state connecting 20 1 ||
		rc=${rc/#0/98}
	line=$(blk_ctl_line rkdblk0)
	t_check $rc "blkreconn: two disks (ctrl_loss_tmo=-1), the server gone: both connecting" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); listed '${line:-nothing}', rkdblk1 '$(blk_attr 1 state)'"
	sleep 3
	rc=0
	t0=$SECONDS
	timeout -k 5 60 bash -c 'echo disconnect rkdblk0 > /dev/rkdblk-ctl' || rc=$?
	secs=$((SECONDS - t0))
	! [ -e /dev/rkdblk0 ] || rc=${rc/#0/97}
	t_check $rc "blkreconn: disconnect rkdblk0 while it connects: gone in $secs s" "rc $rc (124: hung)"
	rc=0
	t0=$SECONDS
	timeout -k 5 60 rmmod rkdblk || rc=$?
	secs=$((SECONDS - t0))
	t_check $rc "blkreconn: rmmod rkdblk while rkdblk1 connects: done in $secs s" "rmmod exit $rc (124: hung)"
	module_loaded rkdblk_srv && rmmod rkdblk_srv
	blk_store_down
	blk_nothing_left
}
