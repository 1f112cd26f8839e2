#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by a guest script (after guest-lib.sh): the rkdblk remote block device
# (docs/blockdev.md), server and client in one guest over rxe0's loopback.
#
#   blockdev_suite   rkdblk_srv.ko exports a 16 MiB brd RAM disk, /dev/ram0 (both kernels
#                    build brd; a 16 MiB file on tmpfs where brd is missing); rkdblk.ko (Rust,
#                    rkdapl's Rust API) connects $BLK_QUEUES queues and adds /dev/rkdblk0. mkfs.ext4, a
#                    tree of files written, rmmod and disconnect refused while mounted, unmount,
#                    the device read back with O_DIRECT equal to the server's file; through
#                    /dev/rkdblk-ctl: the listing, disconnect, bad commands refused with their
#                    errnos, reconnect, a second disk on the same server read back equal to the
#                    first; mount, every checksum verified; fio with crc32c
#                    verify at 4 KiB and 128 KiB, QD1 and QD16 (blk_fio); the device read
#                    with 4 KiB and 1536-byte reads (in-capsule) equal to the store; then the
#                    server unloaded under a reader (its unload line must count in-capsule
#                    WRITEs, written from its RECV buffers, and in-capsule READs):
#                    the reader gets I/O errors, nothing hangs, the client unloads. First,
#                    inline_data_size=1000 is refused.
#   blockdev_send_queue
#                    the server's send queue holds 4 DTOs (max_request_dtos=4) against 16
#                    commands in flight per queue: fio with crc32c verify at QD16, 4 KiB and
#                    128 KiB; the server's RDMA READs and responses wait for send-queue slots
#                    (the unload line counts them) and every block verifies. max_request_dtos=1 is refused.
#   blockdev_file_export
#                    the export is a regular file on ext4 (on brd), opened with O_DIRECT: fio
#                    with crc32c verify at 4 KiB QD16 and 128 KiB QD1, and the server's unload
#                    line counts the reads it did from the DTO upcall (IOCB_NOWAIT kiocbs): at
#                    least 100 not redone in the work.
#   blockdev_timeout the server stops answering (its `stall` hook, a debugfs file): a read
#                    fails with an I/O error once the client's 5 s request timeout fails its
#                    queue. Then
#                    selftests/kmod/rkdblk_peer.ko sends two commands for one tag, the second
#                    while the first is in flight (stalled): the server disconnects it (and
#                    counts it in its unload line). rkdblk_peer.ko mode=inread: an in-capsule
#                    READ on the wire equals what it wrote; three malformed ones are ignored,
#                    each with a log line, and a FLUSH after them is answered. Both unload.
#   blockdev_access  the server for real use: its test hook is no module parameter (modinfo);
#                    rkdblk.ko's addresses are text; an allow-list (allow=) without the guest's
#                    address refuses its client with the reject reason (-EACCES at the client)
#                    and one log line naming the address; one with it (a /24 prefix) lets the
#                    same client connect; a read-only
#                    export (read_only=1): the disk is read-only (its ro attribute, a write
#                    refused), reads equal the store, rkdblk_peer.ko's WRITE gets -EROFS on the
#                    wire; read_only set at run time: a write through a writable disk fails
#                    with an I/O error, reads go on; an export named nqn=: a connect naming
#                    another is refused with ENXIO and a log line, one naming it or none
#                    connects; the store is unchanged by all of it.
#   blockdev_removal `rdma link delete` of the RDMA device under a writer (server and client
#                    both lose it in the loopback): the removal completes, the writer gets I/O
#                    errors, both modules unload, the device is added again (rm_rxe_up of
#                    selftests/removal.sh).

BLK_STORE=/run/rkdblk-store
# The backing store (blk_store): /dev/ram0 or $BLK_STORE/disk.img.
BLK_IMG=
BLK_KIND=
BLK_MNT=/run/rkdblk-mnt
BLK_QUEUES=${BLK_QUEUES:-2}

# blk_ctl COMMAND...: one write of COMMAND to /dev/rkdblk-ctl (rkdblk.ko's control device);
# the shell's error, if any, in /tmp/blk-ctl.txt.
blk_ctl() {
	timeout -k 10 120 bash -c 'echo "$1" > /dev/rkdblk-ctl' _ "$*" 2> /tmp/blk-ctl.txt
}

# blk_ctl_refuses COMMAND ERROR WHAT [SHOWN]: the write must fail with strerror text ERROR;
# the test names the command as SHOWN if given, and begins with $BLK_SUITE (blockdev if unset).
blk_ctl_refuses() {
	local rc=0
	blk_ctl "$1" && rc=1
	grep -q "$2" /tmp/blk-ctl.txt || rc=${rc/#0/2}
	t_check $rc "${BLK_SUITE:-blockdev}: /dev/rkdblk-ctl refuses '${4:-$1}' ($3) with $2" \
		"rc $rc (1: accepted): $(head -c 200 /tmp/blk-ctl.txt)"
}

# The listing's line of rkdblkN (empty if none).
blk_ctl_line() {
	grep "^$1 " /dev/rkdblk-ctl
}

# The number of disks the listing has (its first line is the usage line).
blk_ctl_disks() {
	grep -c '^rkdblk' /dev/rkdblk-ctl
}

# blk_attr N FILE: rkdblkN's sysfs file FILE (/sys/block/rkdblkN/FILE).
blk_attr() {
	cat "/sys/block/rkdblk$1/$2" 2>&1
}

# rkdblk.ko's KUnit suites ran at its insmod, every case passed: rkdblk_ctl (the control
# device's parser) and rkdblk_proto (the completions a SEND carries).
blk_kunit() {
	local suite what n bad cmd f
	read -r cmd < /proc/cmdline
	for suite in rkdblk_ctl rkdblk_proto; do
		f=/sys/kernel/debug/kunit/$suite/results
		case $suite in
		rkdblk_ctl) what="the control device's commands parsed and refused" n=4 ;;
		*) what="single and coalesced completions taken, malformed ones refused" n=3 ;;
		esac
		if ! [ -d /sys/kernel/debug/kunit ] || [[ " $cmd " == *" kunit.enable=0 "* ]]; then
			t_ok "blockdev: rkdblk.ko's KUnit suite $suite # SKIP KUnit is not built or off"
			continue
		fi
		if ! [ -r "$f" ]; then
			t_fail "blockdev: rkdblk.ko's KUnit suite $suite" "KUnit is on and $f is missing"
			continue
		fi
		bad=$(grep -E '^    not ok [0-9]+ ' "$f" | tr '\n' ' ')
		[ "$(grep -cE '^    ok [0-9]+ ' "$f")" -ge "$n" ] && [ -z "$bad" ]
		t_check $? "blockdev: rkdblk.ko's KUnit suite $suite ($what): $(grep -cE '^    ok [0-9]+ ' "$f") cases passed" \
			"${bad:-too few cases passed}"
	done
}

# ctrl_loss_tmo=0: a lost server fails the I/O at once, as these cases expect (blkreconn.sh
# has the reconnects by themselves).
blk_connect() {
	timeout -k 10 120 insmod "$KO/rkdblk.ko" server="$RKDAPL_IP" queues=$BLK_QUEUES depth=16 \
		timeout_ms=${BLK_TIMEOUT_MS:-20000} ctrl_loss_tmo=0
}

# Indicative figures (a log line, not a test): dd with O_DIRECT, queue depth 1, on the debug
# kernel under TCG; overwrites the filesystem. Runs only with RKDAPL_BLK_SPEED=1.
blk_speed() {
	local spec op bs n t0 t1 i
	for spec in "read 128k 32" "write 128k 32" "read 4k 256" "write 4k 256"; do
		read -r op bs n <<< "$spec"
		t0=$EPOCHREALTIME
		if [ "$op" = read ]; then
			dd if=/dev/rkdblk0 of=/dev/null bs=$bs count=$n iflag=direct status=none
		else
			dd if=/dev/zero of=/dev/rkdblk0 bs=$bs count=$n oflag=direct status=none
		fi
		t1=$EPOCHREALTIME
		_log "blockdev: indicative, QD1 O_DIRECT (debug kernel, TCG): $op bs=$bs x $n: $(awk -v a="$t0" -v b="$t1" -v n="$n" -v bs="${bs%k}" \
			'BEGIN { s = b - a; printf "%.2f s, %.0f IOPS, %.1f KiB/s", s, n / s, n * bs / s }')"
	done
	# Eight dd at once, 4 KiB each: about QD8 across the queues.
	for op in read write; do
		t0=$EPOCHREALTIME
		for i in 0 1 2 3 4 5 6 7; do
			if [ "$op" = read ]; then
				dd if=/dev/rkdblk0 of=/dev/null bs=4k count=64 skip=$((i * 512)) iflag=direct status=none &
			else
				dd if=/dev/zero of=/dev/rkdblk0 bs=4k count=64 seek=$((i * 512)) oflag=direct status=none &
			fi
		done
		wait
		t1=$EPOCHREALTIME
		_log "blockdev: indicative, 8 x dd O_DIRECT (about QD8; debug kernel, TCG): $op bs=4k x 512: $(awk -v a="$t0" -v b="$t1" \
			'BEGIN { s = b - a; printf "%.2f s, %.0f IOPS, %.1f KiB/s", s, 512 / s, 512 * 4 / s }')"
	done
}

# blk_fio BS QD SIZE: fio random writes of BS at queue depth QD over the first SIZE of the
# device, each block with a crc32c header, then every block read back and verified
# (--do_verify). O_DIRECT through libaio, so the depth reaches blk-mq.
blk_fio() {
	local bs=$1 qd=$2 size=$3 rc=0 t0=$SECONDS out=/tmp/blk-fio-$1-$2.txt
	timeout -k 10 300 fio --name="rkdblk-$bs-qd$qd" --filename=/dev/rkdblk0 --direct=1 \
		--ioengine=libaio --iodepth="$qd" --rw=randwrite --bs="$bs" --size="$size" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0 \
		--output-format=terse --terse-version=3 > "$out" 2>&1 || rc=$?
	# terse v3: field 5 is the job's error, 6 the KiB read (the verify pass), 47 the KiB written.
	local err rkb wkb
	read -r err rkb wkb < <(awk -F';' '/^3;/ { print $5, $6, $47 }' "$out")
	[ $rc = 0 ] && [ "${err:-1}" = 0 ] && [ "${rkb:-0}" -gt 0 ] && [ "${rkb:-0}" = "${wkb:-1}" ] &&
		! grep -q "verify:" "$out" || rc=${rc/#0/99}
	t_check $rc "blockdev: fio random writes of $bs at queue depth $qd over $size, every block read back and its crc32c verified ($((SECONDS - t0)) s: ${wkb:-?} KiB written, ${rkb:-?} KiB verified)" \
		"fio exit $rc: $(grep -v '^3;' "$out" | tail -n 3 | tr '\n' ' ')"
}

# blk_reader [N]: reads /dev/rkdblkN (default 0) with O_DIRECT from start to end, again and
# again, until a read fails (dd's error in /tmp/blk-dd.txt): exits 1 then, never 0.
blk_reader() {
	while dd if=/dev/rkdblk${1:-0} of=/dev/null bs=4k iflag=direct status=none 2> /tmp/blk-dd.txt; do
		:
	done
	return 1
}

# blk_srv_refuses PARAM=VALUE WHAT: insmod rkdblk_srv.ko with PARAM=VALUE must fail with
# EINVAL (kmod's "Invalid parameters"); the TAP line reads "refuses WHAT".
blk_srv_refuses() {
	local rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV "$1" \
		2> /tmp/blk-badarg.txt && rc=1 && rmmod rkdblk_srv
	grep -q "Invalid parameters" /tmp/blk-badarg.txt || rc=${rc/#0/2}
	t_check $rc "blockdev: rkdblk_srv.ko refuses $2" \
		"rc $rc (1: loaded): $(head -c 200 /tmp/blk-badarg.txt)"
}

blockdev_suite() {
	local rc=0 i n sz line sends
	mkdir -p "$BLK_MNT"
	blk_store
	blk_srv_refuses inline_data_size=1000 \
		"inline_data_size=1000 (not a multiple of 512) with EINVAL (kmod: Invalid parameters)"
	rc=0
	_log "blockdev: insmod rkdblk_srv.ko path=$BLK_IMG"
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV || rc=$?
	t_check $rc "blockdev: the server exports a 16 MiB $BLK_KIND (rkdblk_srv.ko)" "insmod exit $rc"
	[ $rc = 0 ] || return
	rc=0
	blk_connect || rc=$?
	[ $rc = 0 ] && [ -b /dev/rkdblk0 ] && [ "$(blockdev --getsz /dev/rkdblk0)" = 32768 ] || rc=${rc/#0/99}
	t_check $rc "blockdev: rkdblk.ko connects $BLK_QUEUES queues, /dev/rkdblk0 has 32768 sectors" \
		"insmod exit $rc; $(dmesg | grep -E 'rkdblk|rkdblk_srv' | tail -n 3 | tr '\n' '|')"
	[ $rc = 0 ] || { rmmod rkdblk_srv; return; }

	rc=0
	_log "blockdev: mkfs.ext4"
	timeout 300 mkfs.ext4 -F -q /dev/rkdblk0 > /tmp/blk-mkfs.txt 2>&1 || rc=$?
	t_check $rc "blockdev: mkfs.ext4 /dev/rkdblk0" "exit $rc: $(tail -n 2 /tmp/blk-mkfs.txt | tr '\n' ' ')"
	rc=0
	mount -t ext4 /dev/rkdblk0 "$BLK_MNT" || rc=$?
	t_check $rc "blockdev: mount the new filesystem" "mount exit $rc"
	if [ $rc = 0 ]; then
		mkdir -p "$BLK_MNT/tree/a/b" "$BLK_MNT/tree/c"
		for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
			sz=$(( (i * 37 % 13 + 1) * 7 ))
			case $((i % 3)) in 0) d=tree ;; 1) d=tree/a/b ;; 2) d=tree/c ;; esac
			dd if=/dev/urandom of="$BLK_MNT/$d/f$i" bs=1k count=$sz status=none || rc=$?
		done
		dd if=/dev/urandom of="$BLK_MNT/tree/big" bs=64k count=16 status=none || rc=$?
		(cd "$BLK_MNT" && find tree -type f | sort | xargs sha256sum) > /tmp/blk-sums.txt || rc=$?
		sync || rc=$?
		n=$(wc -l < /tmp/blk-sums.txt)
		[ "$n" = 13 ] || rc=${rc/#0/98}
		t_check $rc "blockdev: 13 files (1.2 MiB) written and synced" "rc $rc, $n checksums"
		rc=0
		rmmod rkdblk 2>/dev/null && rc=1
		t_check $rc "blockdev: rmmod rkdblk refused while mounted" "rmmod succeeded"
		blk_ctl_refuses "disconnect rkdblk0" "Device or resource busy" "the disk is mounted"
		rc=0
		echo 1 2> /tmp/blk-del.txt > /sys/block/rkdblk0/delete && rc=1
		grep -q "Device or resource busy" /tmp/blk-del.txt && [ -e /sys/block/rkdblk0/delete ] ||
			rc=${rc/#0/2}
		t_check $rc "blockdev: /sys/block/rkdblk0/delete refuses while mounted (Device or resource busy), the file stays" \
			"rc $rc (1: accepted): $(head -c 200 /tmp/blk-del.txt)"
		rc=0
		umount "$BLK_MNT" || rc=$?
		t_check $rc "blockdev: unmount" "umount exit $rc"
	fi
	rc=0
	timeout 300 cmp <(dd if=/dev/rkdblk0 bs=128k iflag=direct status=none) "$BLK_IMG" || rc=$?
	t_check $rc "blockdev: /dev/rkdblk0 read with O_DIRECT equals the server's $BLK_KIND" "cmp exit $rc"
	# Reads of at most 4 KiB come back in-capsule (in the response's SEND, copied from the
	# client's RECV buffer): every byte compared, at 4 KiB and at 1536 bytes (off the page size).
	rc=0
	timeout 300 cmp <(dd if=/dev/rkdblk0 bs=4k iflag=direct status=none) "$BLK_IMG" || rc=$?
	timeout 300 cmp <(dd if=/dev/rkdblk0 bs=1536 skip=5 count=700 iflag=direct status=none) \
		<(dd if="$BLK_IMG" bs=1536 skip=5 count=700 status=none) || rc=$((rc + 10))
	t_check $rc "blockdev: /dev/rkdblk0 read in-capsule (O_DIRECT, 4 KiB and 1536-byte reads) equals the server's $BLK_KIND" \
		"cmp exit $rc (10 and up: the 1536-byte reads)"

	blk_ctl_cycle
	rc=0
	mount -t ext4 /dev/rkdblk0 "$BLK_MNT" && (cd "$BLK_MNT" && sha256sum --quiet -c /tmp/blk-sums.txt) > /tmp/blk-check.txt 2>&1 || rc=$?
	t_check $rc "blockdev: after reconnect, mount and every checksum verified" \
		"rc $rc: $(head -n 3 /tmp/blk-check.txt | tr '\n' ' ')"
	mountpoint -q "$BLK_MNT" && umount "$BLK_MNT"

	# fio --verify=crc32c at 4 KiB and 128 KiB, queue depth 1 and 16 (overwrites the filesystem).
	blk_fio 4k 1 256k
	blk_fio 4k 16 512k
	blk_fio 128k 1 1m
	blk_fio 128k 16 2m
	# Indicative figures only with RKDAPL_BLK_SPEED=1 (a benchmark, not a test).
	[ "${RKDAPL_BLK_SPEED:-0}" = 1 ] && blk_speed
	# The server goes away under a reader: I/O errors, no hang. The reader reads the device
	# again and again (a fast kernel reads its 16 MiB in less than the 3 s below), and ends
	# only with a failed read (its exit status then 1; 0 is never reached).
	rc=0
	blk_reader &
	local dd_pid=$!
	sleep 3
	rmmod rkdblk_srv || rc=$?
	t_check $rc "blockdev: rmmod rkdblk_srv under a reader" "rmmod exit $rc"
	# The 4 KiB fio writes went in-capsule (inline_data_size 4096), written from the server's
	# RECV buffers; the 128 KiB ones by RDMA READ. The 4 KiB reads came back in-capsule.
	n=$(dmesg | sed -n 's/.*rkdblk_srv: served [0-9]* commands, \([0-9]*\) of them WRITEs with in-capsule data (written from their RECV buffers).*/\1/p' | tail -n 1)
	[ "${n:-0}" -gt 0 ]
	t_check $? "blockdev: the server saw WRITEs with in-capsule data and wrote them from their RECV buffers (${n:-none})" \
		"$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)"
	n=$(dmesg | sed -n 's/.*rkdblk_srv: served .*, \([0-9]*\) READs answered in-capsule;.*/\1/p' | tail -n 1)
	[ "${n:-0}" -gt 4096 ]
	t_check $? "blockdev: the server answered READs in-capsule, the 4096 reads of 4 KiB among them (${n:-none})" \
		"$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)"
	# Most responses went unsignalled (completion suppress): no work completion polled for them.
	n=$(dmesg | sed -n 's/.*rkdblk_srv: served .*; \([0-9]*\) responses posted without a completion event;.*/\1/p' | tail -n 1)
	[ "${n:-0}" -gt 4096 ]
	t_check $? "blockdev: the server posted its responses with completion suppress, more than 4096 of them (${n:-none})" \
		"$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)"
	# A block device opened with O_DIRECT is served from the DTO upcall (IOCB_NOWAIT kiocbs).
	if [ "$BLK_IMG" = /dev/ram0 ]; then
		line=$(dmesg | grep 'rkdblk_srv: .* I/Os submitted from the DTO upcall' | tail -n 1)
		n=$(sed -n 's/.*rkdblk_srv: \([0-9]*\) I\/Os submitted from the DTO upcall.*/\1/p' <<< "$line")
		[ "${n:-0}" -gt 4096 ]
		t_check $? "blockdev: the server submitted its I/O to the brd RAM disk from the DTO upcall, the 4096 reads of 4 KiB among them (${n:-none})" \
			"${line:-no line}"
		# The QD16 writes' completions went out coalesced, several in one SEND (the
		# client's commands said others were in flight, RKDBLK_FLAG_COALESCE), and the
		# client took each (fio verified every block above). Served from the upcall, the
		# completions of the commands polled together are ready together.
		line=$(dmesg | grep 'rkdblk_srv: .* completions went out coalesced' | tail -n 1)
		n=$(sed -n 's/.*rkdblk_srv: \([0-9]*\) completions went out coalesced, in \([0-9]*\) SENDs.*/\1 \2/p' <<< "$line")
		read -r n sends <<< "${n:-0 0}"
		[ "$sends" -gt 0 ] && [ "$n" -gt "$sends" ]
		t_check $? "blockdev: the server coalesced the completions of the QD16 writes, $n of them in $sends SENDs" \
			"${line:-no line}"
	fi
	rc=0
	for ((i = 0; i < 60; i++)); do kill -0 $dd_pid 2>/dev/null || break; sleep 1; done
	if kill -0 $dd_pid 2>/dev/null; then
		rc=1
		pkill -9 -P $dd_pid
		kill -9 $dd_pid
	else
		wait $dd_pid && rc=2
	fi
	t_check $rc "blockdev: the reader ends with an I/O error within 60 s of the server's unload" \
		"rc $rc (1: still running, 2: dd succeeded); $(head -c 200 /tmp/blk-dd.txt)"
	rc=0
	dd if=/dev/rkdblk0 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null && rc=1
	t_check $rc "blockdev: a new read on the dead device fails at once" "it succeeded"
	line=$(blk_ctl_line rkdblk0)
	[[ $line == "rkdblk0 transport=rdma traddr="*" state=failed" ]] && [ "$(blk_attr 0 state)" = failed ]
	t_check $? "blockdev: /dev/rkdblk-ctl lists the dead disk as state=failed, /sys/block/rkdblk0/state says failed" \
		"listed: '${line:-nothing}'; state '$(blk_attr 0 state)'"
	blk_ctl_refuses "reconnect rkdblk0" "Connection refused" "the server is gone"
	# The server back on the same store: the disk reconnects, its data and name kept.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV || rc=$?
	[ $rc = 0 ] && { blk_ctl reconnect rkdblk0 || rc=$?; }
	[ $rc = 0 ] && [[ $(blk_ctl_line rkdblk0) == *" state=live" ]] && [ "$(blk_attr 0 state)" = live ] ||
		rc=${rc/#0/99}
	t_check $rc "blockdev: the server back, reconnect rkdblk0 (echo reconnect rkdblk0 > /dev/rkdblk-ctl): state=live again" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); listed '$(blk_ctl_line rkdblk0)'"
	blk_ctl_refuses "reconnect rkdblk0" "Transport endpoint is already connected" "the disk did not fail"
	rc=0
	timeout 300 cmp <(dd if=/dev/rkdblk0 bs=128k iflag=direct status=none) "$BLK_IMG" || rc=$?
	t_check $rc "blockdev: after the reconnect /dev/rkdblk0 reads the server's $BLK_KIND again, all of it equal" "cmp exit $rc"
	blk_fio 4k 16 256k
	rc=0
	rmmod rkdblk || rc=$?
	t_check $rc "blockdev: rmmod rkdblk after the reconnect" "rmmod exit $rc"
	# READs and the 128 KiB WRITEs went zero copy: a grant of the request's own pages each.
	n=$(dmesg | sed -n 's/.*rkdblk0 removed after [0-9]* completions; \([0-9]*\) requests granted their own pages.*/\1/p' | tail -n 1)
	[ "${n:-0}" -gt 0 ]
	t_check $? "blockdev: the client granted requests' own pages to the server, no copy (${n:-none} requests)" \
		"$(dmesg | grep 'rkdblk0 removed' | tail -n 1)"
	rmmod rkdblk_srv
	blk_store_down
}

# Disconnect and reconnect through /dev/rkdblk-ctl (the disk rkdblk0 of the module's
# parameters goes, and comes back from a connect command), bad commands refused on the way,
# and a second disk of the same server.
blk_ctl_cycle() {
	local rc=0 line want usage
	want="rkdblk0 transport=rdma traddr=$RKDAPL_IP trsvcid=4421 nr_io_queues=$BLK_QUEUES queue_size=16 reconnect_delay=10 ctrl_loss_tmo=0 state=live"
	line=$(blk_ctl_line rkdblk0)
	[ "$line" = "$want" ]
	t_check $? "blockdev: /dev/rkdblk-ctl lists '$want'" "listed: '${line:-nothing}'"
	usage="usage: [connect] transport=rdma,traddr=ADDR[,trsvcid=4421][,host_traddr=ADDR][,nr_io_queues=1][,queue_size=16][,timeout_ms=30000][,reconnect_delay=10][,ctrl_loss_tmo=600][,fast_io_fail_tmo=-1][,nqn=NAME] | disconnect rkdblkN | reconnect rkdblkN"
	line=$(head -n 1 /dev/rkdblk-ctl)
	[ "$line" = "$usage" ]
	t_check $? "blockdev: a read of /dev/rkdblk-ctl starts with the usage line '$usage'" "first line: '${line:-nothing}'"
	blk_kunit
	rc=0
	blk_ctl disconnect rkdblk0 || rc=$?
	! [ -e /dev/rkdblk0 ] && [ "$(blk_ctl_disks)" = 0 ] || rc=${rc/#0/97}
	t_check $rc "blockdev: disconnect (echo disconnect rkdblk0 > /dev/rkdblk-ctl): the disk is gone and the listing empty" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); listing '$(cat /dev/rkdblk-ctl | tr '\n' '|')'"
	blk_ctl_refuses "connect" "Invalid argument" "no server"
	blk_ctl_refuses "connect server=10.77.0.300" "Invalid argument" "not an address"
	blk_ctl_refuses "connect server=$RKDAPL_IP queues=17" "Invalid argument" "more than 16 queues"
	blk_ctl_refuses "connect server=$RKDAPL_IP colour=blue" "Invalid argument" "an unknown option"
	blk_ctl_refuses "transport=tcp,traddr=$RKDAPL_IP" "Invalid argument" "a transport other than rdma"
	blk_ctl_refuses "transport=rdma,trsvcid=4421" "Invalid argument" "no traddr"
	blk_ctl_refuses "frobnicate rkdblk0" "Invalid argument" "an unknown command"
	blk_ctl_refuses "connect server=$RKDAPL_IP $(printf 'queues=1 %.0s' {1..60})" "Argument list too long" \
		"a command over 512 bytes" "connect server=$RKDAPL_IP queues=1 queues=1 ... (600 bytes)"
	blk_ctl_refuses "disconnect rkdblk0" "No such device" "no such disk"
	blk_ctl_refuses "connect server=$RKDAPL_IP port=4999" "Connection refused" "no PSP on that port"
	rc=0
	[ "$(blk_ctl_disks)" = 0 ] && ! [ -e /dev/rkdblk0 ] || rc=1
	t_check $rc "blockdev: after the refused commands no disk is listed or added" \
		"listing '$(cat /dev/rkdblk-ctl | tr '\n' '|')'"
	rc=0
	# nvme-fabrics' form: the options alone, comma-separated, their names.
	line="transport=rdma,traddr=$RKDAPL_IP,trsvcid=4421,nr_io_queues=$BLK_QUEUES,queue_size=16,timeout_ms=${BLK_TIMEOUT_MS:-20000},ctrl_loss_tmo=0"
	blk_ctl "$line" || rc=$?
	[ $rc = 0 ] && [ -b /dev/rkdblk0 ] && [ "$(blockdev --getsz /dev/rkdblk0)" = 32768 ] &&
		[ "$(blk_ctl_line rkdblk0)" = "$want" ] || rc=${rc/#0/99}
	t_check $rc "blockdev: reconnect with nvme-fabrics' option names (echo $line > /dev/rkdblk-ctl): /dev/rkdblk0 is back, 32768 sectors, listed as '$want'" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); $(dmesg | grep 'rkdblk: ' | tail -n 2 | tr '\n' '|'); listed '$(blk_ctl_line rkdblk0)'"
	rc=0
	# The names of earlier versions still work.
	blk_ctl connect server=$RKDAPL_IP || rc=$?
	[ $rc = 0 ] && [ -b /dev/rkdblk1 ] &&
		[ "$(blk_ctl_line rkdblk1)" = "rkdblk1 transport=rdma traddr=$RKDAPL_IP trsvcid=4421 nr_io_queues=1 queue_size=16 state=live" ] &&
		timeout 120 cmp <(dd if=/dev/rkdblk1 bs=64k count=16 iflag=direct status=none) \
			<(dd if=/dev/rkdblk0 bs=64k count=16 iflag=direct status=none) || rc=${rc/#0/99}
	t_check $rc "blockdev: a second disk of the same server (connect server=$RKDAPL_IP, the earlier option name, the defaults): /dev/rkdblk1 reads the same first 1 MiB as /dev/rkdblk0" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); listing '$(cat /dev/rkdblk-ctl | tr '\n' '|')'"
	rc=0
	[ "$(blk_attr 1 state)" = live ] && [ "$(blk_attr 1 address)" = "traddr=$RKDAPL_IP,trsvcid=4421" ] &&
		[ "$(blk_attr 1 transport)" = rdma ] || rc=1
	t_check $rc "blockdev: /sys/block/rkdblk1/: state live, address traddr=$RKDAPL_IP,trsvcid=4421, transport rdma" \
		"state '$(blk_attr 1 state)', address '$(blk_attr 1 address)', transport '$(blk_attr 1 transport)'"
	rc=0
	echo 1 2> /tmp/blk-del.txt > /sys/block/rkdblk1/delete || rc=$?
	! [ -e /dev/rkdblk1 ] && ! [ -e /sys/block/rkdblk1 ] && [ -b /dev/rkdblk0 ] && [ "$(blk_ctl_disks)" = 1 ] ||
		rc=${rc/#0/97}
	t_check $rc "blockdev: echo 1 > /sys/block/rkdblk1/delete deletes rkdblk1 and leaves rkdblk0" \
		"rc $rc: $(head -c 200 /tmp/blk-del.txt); listing '$(cat /dev/rkdblk-ctl | tr '\n' '|')'"
}

# A zeroed 16 MiB backing store: brd's /dev/ram0 where the kernel has brd, else a file on
# tmpfs. blk_store_down removes it (the server must be unloaded).
blk_store() {
	if rkdapl_modprobe -q brd rd_nr=1 rd_size=16384 max_part=0 2>/dev/null && [ -b /dev/ram0 ]; then
		BLK_IMG=/dev/ram0 BLK_KIND="brd RAM disk"
		return
	fi
	BLK_IMG=$BLK_STORE/disk.img BLK_KIND="file on tmpfs"
	mkdir -p "$BLK_STORE"
	mountpoint -q "$BLK_STORE" || mount -t tmpfs -o size=40M rkdblk-store "$BLK_STORE"
	truncate -s 16M "$BLK_IMG"
}

blk_store_down() {
	if [ "$BLK_IMG" = /dev/ram0 ]; then
		rmmod brd 2>/dev/null
	else
		umount "$BLK_STORE" 2>/dev/null
	fi
}

blockdev_send_queue() {
	local rc=0 n
	blk_store
	blk_srv_refuses max_request_dtos=1 "max_request_dtos=1 (a READ's completion is 2 DTOs) with EINVAL"
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV max_request_dtos=4 &&
		blk_connect || rc=$?
	t_check $rc "blockdev: server (a send queue of 4 DTOs per connection) and client (16 commands per queue) up" \
		"insmod exit $rc"
	[ $rc = 0 ] || { rmmod rkdblk_srv 2>/dev/null; blk_store_down; return; }
	blk_fio 4k 16 512k
	blk_fio 128k 16 2m
	rc=0
	rmmod rkdblk && rmmod rkdblk_srv || rc=$?
	t_check $rc "blockdev: both unload after the small send queue's fio runs" "rmmod exit $rc"
	n=$(dmesg | sed -n 's/.*rkdblk_srv: served .*; \([0-9]*\) posts waited for send-queue slots.*/\1/p' | tail -n 1)
	[ "${n:-0}" -gt 0 ]
	t_check $? "blockdev: the server's posts (RDMA READs, responses) waited for send-queue slots and went out as slots came back (${n:-none} waits)" \
		"$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)"
	blk_store_down
}

# A regular file on ext4 (on brd) as the export, opened with O_DIRECT: its reads served from
# the DTO upcall as a block device's are (IOCB_NOWAIT kiocbs), every block verified.
blockdev_file_export() {
	local rc=0 mnt=$BLK_MNT-ext4 img line n m
	if ! rkdapl_modprobe -q brd rd_nr=1 rd_size=65536 max_part=0 2>/dev/null || ! [ -b /dev/ram0 ]; then
		t_skip "blockdev: a regular file on ext4 as the export" "no brd in this kernel"
		return
	fi
	img=$mnt/export.img
	mkdir -p "$mnt"
	# Written in full: a write into a hole or an unwritten extent needs a block allocation,
	# which IOCB_NOWAIT refuses (it would be redone in the work).
	{ mkfs.ext4 -q -F /dev/ram0 && mount /dev/ram0 "$mnt" &&
		dd if=/dev/zero of="$img" bs=1M count=16 conv=fsync status=none &&
		insmod "$KO/rkdblk_srv.ko" path="$img" dev=$RKDAPL_DEV && blk_connect; } \
		> /tmp/blk-file.txt 2>&1 || rc=$?
	t_check $rc "blockdev: rkdblk_srv.ko exports a 16 MiB file on ext4 (O_DIRECT), and the client connects" \
		"rc $rc: $(head -c 200 /tmp/blk-file.txt)"
	if [ $rc = 0 ]; then
		blk_fio 4k 16 512k
		blk_fio 128k 1 1m
		rc=0
		rmmod rkdblk && rmmod rkdblk_srv || rc=$?
		t_check $rc "blockdev: both unload after the file export's fio runs" "rmmod exit $rc"
		# fio's verify passes read 128 + 8 blocks (a regular file's writes go to the work).
		line=$(dmesg | grep 'rkdblk_srv: .* I/Os submitted from the DTO upcall' | tail -n 1)
		n=$(sed -n 's/.*rkdblk_srv: \([0-9]*\) I\/Os submitted from the DTO upcall, \([0-9]*\) of them.*/\1/p' <<< "$line")
		m=$(sed -n 's/.*rkdblk_srv: \([0-9]*\) I\/Os submitted from the DTO upcall, \([0-9]*\) of them.*/\2/p' <<< "$line")
		[ -n "$n" ] && [ -n "$m" ] && [ $((n - m)) -ge 100 ]
		t_check $? "blockdev: the server did the file's reads from the DTO upcall, at least 100 of them, fio's verify reads (${n:-none} submitted, ${m:-?} of them redone in the work)" \
			"${line:-no line}"
	else
		rmmod rkdblk 2>/dev/null
		rmmod rkdblk_srv 2>/dev/null
	fi
	umount "$mnt" 2>/dev/null
	rmmod brd 2>/dev/null
}

blockdev_timeout() {
	local rc=0 t0 secs line n m
	blk_store
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV &&
		BLK_TIMEOUT_MS=5000 blk_connect || rc=$?
	t_check $rc "blockdev: server and client (5 s request timeout) up for the timeout case" \
		"insmod exit $rc"
	[ $rc = 0 ] || { rmmod rkdblk_srv 2>/dev/null; return; }
	echo 1 > /sys/kernel/debug/rkdblk_srv/stall
	t0=$SECONDS
	timeout -k 5 120 dd if=/dev/rkdblk0 of=/dev/null bs=4k skip=1000 count=1 iflag=direct \
		status=none 2> /tmp/blk-dd.txt
	rc=$?
	secs=$((SECONDS - t0))
	[ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && [ $secs -ge 4 ]
	t_check $? "blockdev: the server stops answering: the read fails with an I/O error after the request timeout (took $secs s)" \
		"dd exit $rc (124/137: hung) after $secs s; $(head -c 200 /tmp/blk-dd.txt)"
	rc=0
	rmmod rkdblk || rc=$?
	t_check $rc "blockdev: rmmod rkdblk after the timeout" "rmmod exit $rc"
	# Still stalled: the peer's first command keeps its tag busy.
	rc=0
	timeout -k 5 60 insmod "$KO/selftests/kmod/rkdblk_peer.ko" peer=$RKDAPL_IP port=4421 \
		dev=$RKDAPL_DEV || rc=$?
	line=$(dmesg | grep 'rkdblk_peer: ' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"the server disconnected a client that sent a command for a busy tag"* ]]
	t_check $? "blockdev: a client that sends a command for a busy tag is disconnected by the server" \
		"insmod exit $rc; ${line:-no line from rkdblk_peer}; $(dmesg | grep 'rkdblk_srv: .*busy tag' | tail -n 1)"
	module_loaded rkdblk_peer && rmmod rkdblk_peer
	echo 0 > /sys/kernel/debug/rkdblk_srv/stall
	# The server's side of in-capsule READs, on the wire: one compared byte for byte, three
	# malformed ones ignored (each with a "malformed command" line), the connection still serving.
	rc=0
	n=$(dmesg | grep -c 'rkdblk_srv: .*malformed command')
	timeout -k 5 60 insmod "$KO/selftests/kmod/rkdblk_peer.ko" peer=$RKDAPL_IP port=4421 \
		dev=$RKDAPL_DEV mode=inread || rc=$?
	line=$(dmesg | grep 'rkdblk_peer: ' | tail -n 1)
	m=$(( $(dmesg | grep -c 'rkdblk_srv: .*malformed command') - n ))
	[ $rc = 0 ] && [[ $line == *"in-capsule READs: 512 bytes came back"* ]] && [ $m = 3 ]
	t_check $? "blockdev: on the wire (rkdblk_peer.ko): an in-capsule READ comes back as a SEND with immediate data equal to what was written; malformed ones (too long, with an rkey, empty) are ignored with a line each, and the connection still serves" \
		"insmod exit $rc; ${line:-no line from rkdblk_peer}; $m malformed-command lines"
	module_loaded rkdblk_peer && rmmod rkdblk_peer
	rc=0
	rmmod rkdblk_srv || rc=$?
	t_check $rc "blockdev: rmmod rkdblk_srv after the timeout" "rmmod exit $rc"
	line=$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)
	[[ $line == *"; 1 clients disconnected for breaking the protocol"* ]]
	t_check $? "blockdev: the server's unload line counts the client it disconnected" \
		"${line:-no unload line}"
	blk_store_down
}

# The server for real use (blockdev_access in the header): the test hook's place, text
# parameters, the allow-list and a read-only export.
blockdev_access() {
	local rc=0 line n sum0 sum1 net=${RKDAPL_IP%.*}.0/24
	n=$(modinfo -F parm "$KO/rkdblk_srv.ko" | cut -d: -f1 | tr '\n' ' ')
	[[ " $n " != *" stall "* && " $n " == *" read_only "* && " $n " == *" allow "* ]]
	t_check $? "blockdev: modinfo rkdblk_srv.ko: its test hook stall is no module parameter (a debugfs file), read_only and allow are (parameters: $n)" \
		"parameters: $n"
	line=$(modinfo -F parmtype "$KO/rkdblk.ko" | tr '\n' ' ')
	[[ $line == *"server:string"* && $line == *"local:string"* ]]
	t_check $? "blockdev: modinfo rkdblk.ko: server and local are text (parmtype string)" "parmtype: $line"
	rc=0
	insmod "$KO/rkdblk.ko" server="$(rkdapl_ip_int "$RKDAPL_IP")" 2> /tmp/blk-badarg.txt && rc=1 && rmmod rkdblk
	grep -q "Invalid parameters" /tmp/blk-badarg.txt &&
		dmesg | grep -q "rkdblk: server=$(rkdapl_ip_int "$RKDAPL_IP"): not an IPv4 or IPv6 address" || rc=${rc/#0/2}
	t_check $rc "blockdev: rkdblk.ko refuses server=$(rkdapl_ip_int "$RKDAPL_IP") (the earlier host-order number) with EINVAL and a line saying the address is text" \
		"rc $rc (1: loaded): $(head -c 200 /tmp/blk-badarg.txt); $(dmesg | grep 'rkdblk: server=' | tail -n 1)"
	blk_store
	blk_srv_refuses allow=10.77.0.300 "allow=10.77.0.300 (not an address) with EINVAL (kmod: Invalid parameters)"
	dd if=/dev/urandom of="$BLK_IMG" bs=1M count=16 conv=fsync status=none
	sum0=$(sha256sum < "$BLK_IMG")
	# An allow-list without this guest's address: its client is refused.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV \
		allow="10.77.0.99,fd00:77::/64" && insmod "$KO/rkdblk.ko" || rc=$?
	t_check $rc "blockdev: an export for 10.77.0.99 and fd00:77::/64 only (allow=), and the client, loaded" \
		"insmod exit $rc; $(dmesg | grep 'rkdblk_srv: ' | tail -n 2 | tr '\n' '|')"
	if [ $rc != 0 ]; then
		rmmod rkdblk rkdblk_srv 2>/dev/null
		blk_store_down
		return
	fi
	blk_ctl_refuses "transport=rdma,traddr=$RKDAPL_IP" "Permission denied" \
		"from $RKDAPL_IP, which is not on the server's allow-list"
	n=$(dmesg | grep -c "rkdblk_srv: refused $RKDAPL_IP: not on the allow-list")
	[ "$n" = 1 ] && [ "$(blk_ctl_disks)" = 0 ] &&
		dmesg | grep -q "rkdblk: rkdblk0 queue 0: the server refused the connection: this address is not on its allow-list"
	t_check $? "blockdev: the server logs one line naming $RKDAPL_IP (refused $RKDAPL_IP: not on the allow-list), the client the reject's reason, and no disk is added" \
		"$n server lines; client: $(dmesg | grep 'the server refused' | tail -n 1); $(blk_ctl_disks) disks"
	rc=0
	rmmod rkdblk_srv || rc=$?
	line=$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"; 0 WRITEs refused (read-only); 1 connections refused (allow-list)" ]]
	t_check $? "blockdev: the server's unload line counts the refused connection" \
		"rmmod exit $rc; ${line:-no unload line}"
	# A read-only export, its allow-list with this guest's network: the same client connects.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV read_only=1 \
		allow="10.77.0.99,$net,fd00:77::/64" || rc=$?
	t_check $rc "blockdev: a read-only export (read_only=1) for 10.77.0.99, $net and fd00:77::/64 (allow=) loaded" \
		"insmod exit $rc; $(dmesg | grep 'rkdblk_srv: ' | tail -n 2 | tr '\n' '|')"
	rc=0
	blk_ctl "transport=rdma,traddr=$RKDAPL_IP,nr_io_queues=2" || rc=$?
	[ $rc = 0 ] && [ -b /dev/rkdblk0 ] && [ "$(cat /sys/block/rkdblk0/ro)" = 1 ] &&
		[ "$(blockdev --getro /dev/rkdblk0)" = 1 ] || rc=${rc/#0/99}
	t_check $rc "blockdev: from $RKDAPL_IP, in $net on the allow-list, the connect succeeds, and the read-only export's disk is read-only (/sys/block/rkdblk0/ro 1, blockdev --getro 1)" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); ro '$(cat /sys/block/rkdblk0/ro 2>&1)'"
	rc=0
	dd if=/dev/zero of=/dev/rkdblk0 bs=4k count=1 oflag=direct status=none 2> /tmp/blk-dd.txt && rc=1
	grep -qE "Permission denied|Read-only file system|Operation not permitted" /tmp/blk-dd.txt || rc=${rc/#0/2}
	t_check $rc "blockdev: a write to the read-only disk is refused ($(head -n 1 /tmp/blk-dd.txt | cut -c1-80))" \
		"rc $rc (1: written): $(head -c 200 /tmp/blk-dd.txt)"
	rc=0
	timeout 300 cmp <(dd if=/dev/rkdblk0 bs=128k iflag=direct status=none) "$BLK_IMG" || rc=$?
	t_check $rc "blockdev: the read-only disk reads the server's $BLK_KIND, all of it equal" "cmp exit $rc"
	rc=0
	timeout -k 5 60 insmod "$KO/selftests/kmod/rkdblk_peer.ko" peer=$RKDAPL_IP port=4421 \
		dev=$RKDAPL_DEV mode=readonly || rc=$?
	line=$(dmesg | grep 'rkdblk_peer: ' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"a WRITE got -30 (-EROFS), a FLUSH after it 0"* ]]
	t_check $? "blockdev: on the wire (rkdblk_peer.ko): the read-only export's accept says so, a WRITE is answered -EROFS, a FLUSH after it 0" \
		"insmod exit $rc; ${line:-no line from rkdblk_peer}"
	module_loaded rkdblk_peer && rmmod rkdblk_peer
	rc=0
	rmmod rkdblk && rmmod rkdblk_srv || rc=$?
	line=$(dmesg | grep 'rkdblk_srv: served' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"; 1 WRITEs refused (read-only); 0 connections refused (allow-list)" ]]
	t_check $? "blockdev: both unload; the server's unload line counts the refused WRITE" \
		"rmmod exit $rc; ${line:-no unload line}"
	# read_only set at run time on a writable export: the disk is writable, the server refuses.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV && blk_connect || rc=$?
	[ $rc = 0 ] && [ "$(cat /sys/block/rkdblk0/ro)" = 0 ] || rc=${rc/#0/99}
	t_check $rc "blockdev: a writable export (no allow-list) and its disk (ro 0)" "insmod exit $rc"
	if [ $rc = 0 ]; then
		echo 1 > /sys/module/rkdblk_srv/parameters/read_only
		rc=0
		dd if=/dev/urandom of=/dev/rkdblk0 bs=4k count=1 seek=100 oflag=direct status=none \
			2> /tmp/blk-dd.txt && rc=1
		grep -q "Input/output error" /tmp/blk-dd.txt || rc=${rc/#0/2}
		t_check $rc "blockdev: read_only=1 set at run time: a write fails with an I/O error (the server's -EROFS, BLK_STS_IOERR at the client)" \
			"rc $rc (1: written): $(head -c 200 /tmp/blk-dd.txt)"
		rc=0
		timeout 300 cmp <(dd if=/dev/rkdblk0 bs=128k iflag=direct status=none) "$BLK_IMG" || rc=$?
		[ $rc = 0 ] && [ "$(blk_attr 0 state)" = live ] || rc=${rc/#0/99}
		t_check $rc "blockdev: after the refused write the disk is live and reads the server's $BLK_KIND, all of it equal" \
			"cmp exit $rc; state '$(blk_attr 0 state)'"
		echo 0 > /sys/module/rkdblk_srv/parameters/read_only
	fi
	rmmod rkdblk 2>/dev/null
	rmmod rkdblk_srv 2>/dev/null
	# An export with a name (nqn=): a connect that names another is refused with ENXIO and a
	# log line; one that names it, or none, connects.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV nqn=nqn.2026-12.org.rkdapl:a &&
		insmod "$KO/rkdblk.ko" || rc=$?
	t_check $rc "blockdev: an export named nqn=nqn.2026-12.org.rkdapl:a, and the client module, loaded" \
		"insmod exit $rc"
	if [ $rc = 0 ]; then
		blk_ctl_refuses "traddr=$RKDAPL_IP nqn=nqn.2026-12.org.rkdapl:b" "No such device or address" \
			"a connect naming another export than the server's nqn="
		dmesg | tail -n 20 | grep -q 'rkdblk_srv: connection request for another export than nqn=nqn.2026-12.org.rkdapl:a, rejected'
		t_check $? "blockdev: the server logs the connect for another export" \
			"$(dmesg | grep 'rkdblk_srv: ' | tail -n 2 | tr '\n' '|')"
		rc=0
		blk_ctl connect traddr=$RKDAPL_IP nqn=nqn.2026-12.org.rkdapl:a && [ -b /dev/rkdblk0 ] &&
			! dmesg | tail -n 20 | grep -q 'rkdblk0: .* taken on trust' || rc=${rc/#0/$?}
		t_check $rc "blockdev: a connect naming the server's nqn= makes rkdblk0, the export's name checked" \
			"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); $(dmesg | grep 'rkdblk0: ' | tail -n 1)"
		rc=0
		blk_ctl connect traddr=$RKDAPL_IP && [ -b /dev/rkdblk1 ] || rc=$?
		t_check $rc "blockdev: a connect without nqn= to the named export makes rkdblk1" \
			"rc $rc: $(head -c 200 /tmp/blk-ctl.txt)"
		rc=0
		rmmod rkdblk && rmmod rkdblk_srv || rc=$?
		line=$(dmesg | grep 'rkdblk_srv: .* connections refused for another export' | tail -n 1)
		[ $rc = 0 ] && [[ $line == *"rkdblk_srv: 1 connections refused for another export than nqn=nqn.2026-12.org.rkdapl:a" ]]
		t_check $? "blockdev: both unload; the server's unload line counts the refused connect" \
			"rmmod exit $rc; ${line:-no unload line}"
	fi
	module_loaded rkdblk && rmmod rkdblk
	module_loaded rkdblk_srv && rmmod rkdblk_srv
	sum1=$(sha256sum < "$BLK_IMG")
	[ "$sum0" = "$sum1" ]
	t_check $? "blockdev: the server's $BLK_KIND is unchanged by every refused write (sha256)" \
		"before ${sum0:0:16}, after ${sum1:0:16}"
	blk_store_down
}

blockdev_removal() {
	local rc=0 i t0 secs
	blk_store
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV && blk_connect || rc=$?
	t_check $rc "blockdev: server and client up again for the removal case" "insmod exit $rc"
	[ $rc = 0 ] || { rmmod rkdblk_srv 2>/dev/null; return; }
	dd if=/dev/urandom of=/dev/rkdblk0 bs=64k oflag=direct count=100000 status=none 2> /tmp/blk-dd.txt &
	local dd_pid=$!
	sleep 3
	_log "blockdev: rdma link delete $RKDAPL_DEV under a writer"
	t0=$SECONDS
	timeout -k 5 120 rdma link delete "$RKDAPL_DEV" || rc=$?
	secs=$((SECONDS - t0))
	t_check $rc "blockdev: rdma link delete $RKDAPL_DEV under a writer completes (took $secs s)" "exit $rc"
	rc=0
	for ((i = 0; i < 60; i++)); do kill -0 $dd_pid 2>/dev/null || break; sleep 1; done
	if kill -0 $dd_pid 2>/dev/null; then
		rc=1
		kill -9 $dd_pid
	else
		wait $dd_pid && rc=2
	fi
	t_check $rc "blockdev: the writer ends with an I/O error after the device's removal" \
		"rc $rc (1: still running, 2: dd succeeded); $(head -c 200 /tmp/blk-dd.txt)"
	rc=0
	rmmod rkdblk_srv || rc=$?
	t_check $rc "blockdev: rmmod rkdblk_srv after the device's removal" "rmmod exit $rc"
	rc=0
	rm_rxe_up || rc=$?
	t_check $rc "blockdev: $RKDAPL_DEV added again" "$(rdma link show 2>&1 | tr '\n' ' ')"
	# The disk survives the device's removal: the server on the new device, the disk reconnects
	# (a new IA on it) and reads what the server has.
	rc=0
	insmod "$KO/rkdblk_srv.ko" path=$BLK_IMG dev=$RKDAPL_DEV && blk_ctl reconnect rkdblk0 || rc=$?
	[ $rc = 0 ] && timeout 120 cmp <(dd if=/dev/rkdblk0 bs=64k count=32 iflag=direct status=none) \
		<(dd if="$BLK_IMG" bs=64k count=32 status=none) || rc=${rc/#0/99}
	t_check $rc "blockdev: after $RKDAPL_DEV came back, reconnect rkdblk0 and its first 2 MiB equal the server's" \
		"rc $rc: $(head -c 200 /tmp/blk-ctl.txt); $(dmesg | grep 'rkdblk: ' | tail -n 2 | tr '\n' '|')"
	rc=0
	rmmod rkdblk || rc=$?
	t_check $rc "blockdev: rmmod rkdblk after the device's removal and the reconnect" "rmmod exit $rc"
	rc=0
	rmmod rkdblk_srv || rc=$?
	t_check $rc "blockdev: rmmod rkdblk_srv after the reconnect" "rmmod exit $rc"
	blk_store_down
	blk_nothing_left
}

# rkdapl frees what a module left open when it goes, and says so: neither side may have.
blk_nothing_left() {
	local l n=0 seen=
	local -a lines
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do
		[[ $l == *"rkdapl: rkdblk"*" went away with objects open"* ]] || continue
		n=$((n + 1))
		seen+=" ${l#*rkdapl: }"
	done
	[ $n = 0 ]
	t_check $? "blockdev: rkdblk.ko and rkdblk_srv.ko freed all their rkdapl objects before every unload" \
		"$n 'went away with objects open' lines:${seen}"
}
