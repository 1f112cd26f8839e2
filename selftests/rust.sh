#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh (after guest-lib.sh): the Rust consumer.
#
#   rust_suite   loads samples/rust/rkdapl_rust_sample.ko, a Rust module built against rkdapl's
#                crate metadata that uses rkdapl's Rust API (rust/rkdapl/api/), not its C
#                ABI: a loopback connection through a PSP with private data both ways and a CR
#                query, an RMR grant, RDMA WRITE and READ of 64 KiB and a SEND, a chain of two
#                WRITEs (the second with immediate data) seen by an upcall, an RDMA READ into
#                and a WRITE from an LMR over 4 pages, a second connection accepted inside the
#                PSP EVD's upcall (a SEND over it) and a third rejected there, the IA opened
#                again by its netdev's name (and ENODEV for unknown names), an LMR dropped while
#                an RMR grants it (freed when the grant ends), a grant bound with
#                bind_suppressed (a page written through it, no event until its unbind's);
#                every byte compared
#                in the module (insmod fails otherwise). Then unloads it and checks that nothing
#                of it is left in rdma res (its objects freed themselves when dropped: the
#                counts of each kind are back at what they were before the insmod).

rust_suite() {
	local rc=0 line base
	rust_res_counts
	base=$REPLY
	_log "rust: insmod rkdapl_rust_sample.ko addr=$RKDAPL_IP"
	local ip
	ip=$(rkdapl_ip_int "$RKDAPL_IP")
	timeout -k 10 300 insmod "$KO/rkdapl_rust_sample.ko" addr=$ip port=7485 || rc=$?
	line=$(dmesg | grep 'rkdapl_rust_sample: ' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"moved 65536 bytes by RDMA WRITE and READ and a 15-byte SEND, then a chain of two WRITEs (the second with immediate data) completed through an upcall, then an RDMA READ into and a WRITE from an LMR over 4 pages; accepted a connection in an upcall (a SEND over it) and rejected one there; opened rxe0 again by its netdev "*"; a suppressed bind granted a page and reported nothing; a grant bound and unbound and an LMR over lent pages made and dropped under a spinlock; through rkdapl's Rust API, ok"* ]]
	t_check $? "rust: a Rust module on rkdapl's Rust API: loopback connection, grant, 64 KiB RDMA WRITE and READ, SEND, a chain of WRITE + WRITE with immediate seen by an upcall, a page LMR, a connection accepted and one rejected in the PSP EVD's upcall, the IA opened again by netdev name, a suppressed bind (no event, the page written through it), a grant over 8 pages bound and unbound and an LMR over lent pages made with GFP_ATOMIC and dropped, under a spinlock (no sleep); bytes compared" \
		"insmod exit $rc; ${line:-no line from the module}"
	rust_res_back "$base"
	t_check $? "rust: the Rust consumer's objects freed themselves (rdma res back to its baseline)" \
		"before: $base; after: $REPLY"
	rc=0
	module_loaded rkdapl_rust_sample && { rmmod rkdapl_rust_sample || rc=$?; }
	t_check $rc "rust: rmmod of the Rust consumer" "rmmod exit $rc"
	line=$(dmesg | grep 'rkdapl: rkdapl_rust_sample went away with objects open' | tail -n 1)
	[ -z "$line" ]
	t_check $? "rust: rkdapl freed nothing for the Rust consumer at its unload (an LMR dropped under a grant freed itself when the grant ended)" \
		"${line#*rkdapl: }"
}

# rust_typed_suite: samples/rust/rkdapl_rust_typed.ko, typed EPs (rkdapl::api::TypedEp): 64
# messages SENT into RECVs posted before the connection, single and chained, some suppressed,
# each DTO carrying a KBox context that comes back in its completion (the server's handler
# compares every byte in the completion context); refused posts give their contexts back; RECVs
# left posted complete FLUSHED to the handler on the disconnect; every context made is dropped
# once (counted in the module: made == dropped). A timed run of 4096 SENDs prints the time per
# DTO of the typed EPs and of untyped EPs with EVD upcalls (not checked: the debug kernel's figures
# are for comparison only). Nothing of it is left in rdma res; rmmod.
rust_typed_suite() {
	local rc=0 line ip base n0 made dropped
	rust_res_counts
	base=$REPLY
	n0=$(dmesg | wc -l)
	ip=$(rkdapl_ip_int "$RKDAPL_IP")
	_log "rust: insmod rkdapl_rust_typed.ko addr=$RKDAPL_IP"
	timeout -k 10 300 insmod "$KO/rkdapl_rust_typed.ko" addr=$ip port=7486 || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rkdapl_rust_typed: typed EPs: ' | tail -n 1)
	made=$(sed -n 's/.*contexts made \([0-9]*\), dropped \([0-9]*\), ok$/\1/p' <<< "$line")
	dropped=$(sed -n 's/.*contexts made \([0-9]*\), dropped \([0-9]*\), ok$/\2/p' <<< "$line")
	[ $rc = 0 ] && [[ $line == *"typed EPs: 64 messages (RECVs posted before the connection, SENDs single and chained, 16 suppressed) with boxed contexts, every byte compared in the handler (65 RECVs in all, "*"refused posts gave their contexts back (a chain after one posted, a SEND, a RECV); 64 RECVs flushed by the disconnect; contexts made "*", ok" ]] &&
		[ -n "$made" ] && [ "$made" -gt 0 ] && [ "$made" = "$dropped" ]
	t_check $? "rust: typed EPs: 64 messages with KBox contexts (chains, suppressed), bytes compared in the handler; refused posts return their contexts; RECVs flushed on disconnect; contexts made == dropped" \
		"insmod exit $rc; ${line:-no line from the module}"
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rkdapl_rust_typed: timed ' | tail -n 1)
	[ -n "$line" ] && _log "rust: ${line#*rkdapl_rust_typed: }"
	rust_res_back "$base"
	t_check $? "rust: the typed sample's objects freed themselves (rdma res back to its baseline)" \
		"before: $base; after: $REPLY"
	rc=0
	module_loaded rkdapl_rust_typed && { rmmod rkdapl_rust_typed || rc=$?; }
	t_check $rc "rust: rmmod of the typed sample" "rmmod exit $rc"
}

# rust_typed_removal: the typed sample with hold=1 keeps its connection with 64 RECVs posted
# (KBox contexts); `rdma link delete` must flush them to the handler, which reports once it
# dropped the last context (made == dropped); rmmod then frees the rest, rkdapl frees nothing
# for it, and rdma res is back to its baseline.
rust_typed_removal() {
	local rc=0 line ip n0 base made dropped
	ip=$(rkdapl_ip_int "$RKDAPL_IP")
	rust_res_counts
	base=$REPLY
	n0=$(dmesg | wc -l)
	timeout -k 10 300 insmod "$KO/rkdapl_rust_typed.ko" addr="$ip" port=7487 hold=1 || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rkdapl_rust_typed: hold: 64 RECVs posted' | tail -n 1)
	[ $rc = 0 ] && [ -n "$line" ]
	t_check $? "rust: typed removal: the sample keeps a connection with 64 RECVs posted" "insmod exit $rc; ${line:-no line}"
	[ $rc = 0 ] || return
	_log "rust: typed removal: rdma link delete $RKDAPL_DEV under the typed EPs"
	rc=0
	timeout -k 5 60 rdma link delete "$RKDAPL_DEV" || rc=$?
	t_check $rc "rust: typed removal: rdma link delete $RKDAPL_DEV completes" "exit $rc"
	for _ in $(seq 20); do
		line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rkdapl_rust_typed: hold: 64 RECVs flushed to the handler' | tail -n 1)
		[ -n "$line" ] && break
		sleep 0.5
	done
	made=$(sed -n 's/.*contexts made \([0-9]*\), dropped \([0-9]*\)$/\1/p' <<< "$line")
	dropped=$(sed -n 's/.*contexts made \([0-9]*\), dropped \([0-9]*\)$/\2/p' <<< "$line")
	[ -n "$made" ] && [ "$made" -gt 0 ] && [ "$made" = "$dropped" ]
	t_check $? "rust: typed removal: the 64 RECVs completed FLUSHED to the handler and every context was dropped (made == dropped)" \
		"${line:-no flush line from the handler}"
	rc=0
	timeout -k 10 120 rmmod rkdapl_rust_typed || rc=$?
	t_check $rc "rust: typed removal: rmmod after the device went away" "rmmod exit $rc"
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rkdapl: rkdapl_rust_typed went away with objects open' | tail -n 1)
	[ -z "$line" ]
	t_check $? "rust: typed removal: rkdapl freed nothing for the typed sample at its unload" "${line#*rkdapl: }"
	rdma link show "$RKDAPL_DEV" > /dev/null 2>&1 || rm_rxe_up
	t_check $? "rust: typed removal: $RKDAPL_DEV added back"
	rust_res_back "$base"
	t_check $? "rust: typed removal: rdma res back to its baseline" "before: $base; after: $REPLY"
	rust_layer_splat "$n0"
	[ -z "$REPLY" ]
	t_check $? "rust: typed removal: no kernel warning, KASAN, lockdep or kmemleak report, no hung task" "$REPLY"
}

# rust_layer_suite: samples/rust/rust_rdma_loopback.ko, the RDMA layer's own sample, a module on
# kernel::rdma alone (no rkdapl object): its ib_client sees the device; a loopback connection
# through rdma_cm (a listener adopting and accepting the request), a REG_MR granting 64 KiB, an
# RDMA WRITE into it and an RDMA READ back, a 64-byte SEND into a RECV, every byte compared in
# the module (insmod fails otherwise); a pool of 4 FRWR MRs on a QP emptied (the 5th take is
# EAGAIN) and refilled, and a grant through a pooled MR mapped and posted with interrupts off
# (CONFIG_DEBUG_ATOMIC_SLEEP splats on a sleep there), WRITE and READ back through it; nothing
# of it left in rdma res; rmmod (the client's remove runs). Then size=0 is refused with EINVAL,
# and leak=1 creates one object of each kind (PD, CQ, QP, FRWR MR, an MR pool with an MR taken
# out, CM ids, SRQ), kept in the module until rmmod, which frees them all.
rust_layer_suite() {
	local rc=0 line ip n0 kinds
	ip=$(rkdapl_ip_int "$RKDAPL_IP")
	n0=$(dmesg | wc -l)
	_log "rust: insmod rust_rdma_loopback.ko addr=$RKDAPL_IP"
	timeout -k 10 300 insmod "$KO/rust_rdma_loopback.ko" addr="$ip" port=7520 || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rust_rdma_loopback: ' | grep -v ': client: ' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"rust_rdma_loopback: $RKDAPL_DEV: 65536 bytes RDMA WRITE and READ back, a 64-byte SEND, a pool of 4 MRs emptied (EAGAIN) and refilled, 65536 bytes through a pooled MR bound with interrupts off, every byte compared, path MTU "[1-9]*", ok" ]]
	t_check $? "rust: the layer's sample (kernel::rdma alone): rdma_cm loopback connection, REG_MR, 64 KiB RDMA WRITE and READ back, SEND/RECV, an MR pool emptied (EAGAIN) and refilled, 64 KiB WRITE and READ back through a pooled MR bound with interrupts off; bytes compared" \
		"insmod exit $rc; ${line:-no line from the module}"
	dmesg | tail -n +$((n0 + 1)) | grep -q "rust_rdma_loopback: client: $RKDAPL_DEV added"
	t_check $? "rust: the layer's sample's ib_client was told of $RKDAPL_DEV (add)"
	rust_layer_res
	[ -z "$REPLY" ]
	t_check $? "rust: the layer's sample released everything it made (nothing of it in rdma res)" \
		"rdma res: $REPLY"
	rc=0
	module_loaded rust_rdma_loopback && { rmmod rust_rdma_loopback || rc=$?; }
	t_check $rc "rust: rmmod of the layer's sample" "rmmod exit $rc"
	dmesg | tail -n +$((n0 + 1)) | grep -q "rust_rdma_loopback: client: $RKDAPL_DEV going away"
	t_check $? "rust: the layer's sample's ib_client remove ran for $RKDAPL_DEV at its unregistration"

	rc=0
	n0=$(dmesg | wc -l)
	insmod "$KO/rust_rdma_loopback.ko" addr="$ip" size=0 2> /tmp/rust-layer-insmod.txt || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rust_rdma_loopback: size=0' | tail -n 1)
	[ $rc != 0 ] && grep -q 'Invalid argument\|Invalid parameters' /tmp/rust-layer-insmod.txt && [ -n "$line" ] &&
		! module_loaded rust_rdma_loopback
	t_check $? "rust: the layer's sample refuses size=0 with EINVAL" \
		"insmod exit $rc: $(head -c 200 /tmp/rust-layer-insmod.txt); ${line:-no line}"
	module_loaded rust_rdma_loopback && rmmod rust_rdma_loopback

	rc=0
	n0=$(dmesg | wc -l)
	_log "rust: insmod rust_rdma_loopback.ko leak=1, then rmmod"
	timeout -k 10 300 insmod "$KO/rust_rdma_loopback.ko" addr="$ip" port=7521 leak=1 || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep 'rust_rdma_loopback: leak=1: keeping' | tail -n 1)
	rust_layer_res
	kinds=$REPLY
	# Its QPs are rdma_cm's (the sample does not move them itself): restrack names them after
	# rdma_cm, not the sample.
	[ $rc = 0 ] && [ -n "$line" ] && [[ $kinds == "pd:1 cq:5 mr:5 cm_id:3 srq:1" ]]
	t_check $? "rust: the layer's sample with leak=1 keeps a PD, 5 CQs, an FRWR MR and a pool of 4 (one taken out), 3 CM ids (2 with a QP) and an SRQ" \
		"insmod exit $rc; ${line:-no line}; rdma res: $kinds"
	rc=0
	module_loaded rust_rdma_loopback && { timeout -k 10 120 rmmod rust_rdma_loopback || rc=$?; }
	rust_layer_res
	[ $rc = 0 ] && [ -z "$REPLY" ]
	t_check $? "rust: rmmod of the layer's sample frees what leak=1 kept (nothing of it in rdma res)" \
		"rmmod exit $rc; rdma res: $REPLY"
	rust_layer_splat "$n0"
	[ -z "$REPLY" ]
	t_check $? "rust: no kernel warning while the layer's sample ran" "$REPLY"
}

# rust_res_counts: the number of lines of `rdma res show KIND` for each kind, "kind:count ...",
# in $REPLY. Objects are counted, not matched by name: rdma(8) cuts a kernel owner's name to 16
# characters.
rust_res_counts() {
	local k
	REPLY=
	for k in pd cq qp mr cm_id srq; do
		REPLY+="${REPLY:+ }$k:$(rdma res show "$k" 2> /dev/null | wc -l)"
	done
}

# rust_res_back BASE: whether the counts of rust_res_counts are BASE again within 5 s (a release
# may end on a workqueue after the module's init returned); the last counts in $REPLY.
rust_res_back() {
	local i
	for i in $(seq 10); do
		rust_res_counts
		[ "$REPLY" = "$1" ] && return 0
		sleep 0.5
	done
	return 1
}

# rust_layer_res: the objects of rust_rdma_loopback in rdma res, "kind:count ..." for each kind
# it has some of (empty: none), in $REPLY. rdma(8) prints at most 16 characters of a kernel
# owner's name ("comm [rust_rdma_loopba").
rust_layer_res() {
	local k n
	REPLY=
	for k in pd cq qp mr cm_id srq; do
		n=$(rdma res show "$k" 2> /dev/null | grep -c 'comm \[rust_rdma_loop')
		[ "$n" = 0 ] || REPLY+="${REPLY:+ }$k:$n"
	done
}

# rust_layer_splat N: the first kernel warning, KASAN, lockdep or kmemleak report, or hung task
# in dmesg after its first N lines, in $REPLY (empty: none).
rust_layer_splat() {
	[ -w /sys/kernel/debug/kmemleak ] && echo scan > /sys/kernel/debug/kmemleak 2> /dev/null
	REPLY=$(dmesg | tail -n +$(($1 + 1)) |
		grep -m1 -E 'BUG:|WARNING:|INFO: task .* blocked|possible (circular|recursive) locking|kmemleak: [0-9]+ new suspected|Call Trace' || true)
}

# rust_layer_leak: the device removal case. leak=1 keeps one object of each kind the layer has
# (PD, CQs, QPs with their CM ids, a listening CM id, an FRWR MR, DMA regions, an SRQ);
# `rdma link delete` must then complete (within 60 s) while they are alive, the layer must say
# it revoked them after the client's remove, the module's unload must drop them without
# touching the gone device, and rdma res must be back to what it was before.
rust_layer_leak() {
	local rc=0 ip n0 base t0 secs
	ip=$(rkdapl_ip_int "$RKDAPL_IP")
	n0=$(dmesg | wc -l)
	base=$(for k in pd cq qp mr cm_id srq; do printf '%s:%s ' "$k" "$(rdma res show "$k" 2> /dev/null | wc -l)"; done)
	timeout -k 10 300 insmod "$KO/rust_rdma_loopback.ko" addr="$ip" port=7522 leak=1 || rc=$?
	rust_layer_res
	t_check $rc "rust: leak: the layer's sample keeps one object of each kind" "insmod exit $rc; rdma res: $REPLY"
	[ $rc = 0 ] || return
	_log "rust: leak: rdma link delete $RKDAPL_DEV with the sample's objects alive"
	t0=$SECONDS
	rc=0
	timeout -k 5 60 rdma link delete "$RKDAPL_DEV" || rc=$?
	secs=$((SECONDS - t0))
	t_check $rc "rust: leak: rdma link delete $RKDAPL_DEV completes within 60 s under the sample's objects (took $secs s)" \
		"exit $rc after $secs s"
	REPLY=$(dmesg | tail -n +$((n0 + 1)) | grep -o "rdma: rust_rdma_loopback: revoked [0-9]* object(s) the client left on $RKDAPL_DEV" | tail -n 1)
	[ -n "$REPLY" ]
	t_check $? "rust: leak: the layer revoked what the sample's client left on $RKDAPL_DEV after its remove" "${REPLY:-no revocation line in dmesg}"
	rc=0
	timeout -k 10 120 rmmod rust_rdma_loopback || rc=$?
	t_check $rc "rust: leak: rmmod of the layer's sample after its device went away" "rmmod exit $rc"
	rdma link show "$RKDAPL_DEV" > /dev/null 2>&1 || rm_rxe_up
	t_check $? "rust: leak: $RKDAPL_DEV added back"
	local now
	now=$(for k in pd cq qp mr cm_id srq; do printf '%s:%s ' "$k" "$(rdma res show "$k" 2> /dev/null | wc -l)"; done)
	[ "$now" = "$base" ]
	t_check $? "rust: leak: rdma res back to its baseline" "before: $base; after: $now"
	rust_layer_splat "$n0"
	[ -z "$REPLY" ]
	t_check $? "rust: leak: no kernel warning, KASAN, lockdep or kmemleak report, no hung task" "$REPLY"
}
