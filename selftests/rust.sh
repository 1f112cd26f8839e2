#!/bin/bash
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
#                of it is left in rdma res (its objects freed themselves when dropped).

rust_suite() {
	local rc=0 line
	_log "rust: insmod rkdapl_rust_sample.ko addr=$RKDAPL_IP"
	local ip
	ip=$(rkdapl_ip_int "$RKDAPL_IP")
	timeout -k 10 300 insmod "$KO/rkdapl_rust_sample.ko" addr=$ip port=7485 || rc=$?
	line=$(dmesg | grep 'rkdapl_rust_sample: ' | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"moved 65536 bytes by RDMA WRITE and READ and a 15-byte SEND, then a chain of two WRITEs (the second with immediate data) completed through an upcall, then an RDMA READ into and a WRITE from an LMR over 4 pages; accepted a connection in an upcall (a SEND over it) and rejected one there; opened rxe0 again by its netdev "*"; a suppressed bind granted a page and reported nothing; through rkdapl's Rust API, ok"* ]]
	t_check $? "rust: a Rust module on rkdapl's Rust API: loopback connection, grant, 64 KiB RDMA WRITE and READ, SEND, a chain of WRITE + WRITE with immediate seen by an upcall, a page LMR, a connection accepted and one rejected in the PSP EVD's upcall, the IA opened again by netdev name, a suppressed bind (no event, the page written through it); bytes compared" \
		"insmod exit $rc; ${line:-no line from the module}"
	rdma res show cm_id > /tmp/rust-res.txt 2>&1
	rdma res show pd >> /tmp/rust-res.txt 2>&1
	rdma res show mr >> /tmp/rust-res.txt 2>&1
	! grep -q rkdapl_rust_sample /tmp/rust-res.txt
	t_check $? "rust: the Rust consumer's objects freed themselves (nothing of it in rdma res)" \
		"$(grep -c rkdapl_rust_sample /tmp/rust-res.txt) rdma res lines name it"
	rc=0
	module_loaded rkdapl_rust_sample && { rmmod rkdapl_rust_sample || rc=$?; }
	t_check $rc "rust: rmmod of the Rust consumer" "rmmod exit $rc"
	line=$(dmesg | grep 'rkdapl: rkdapl_rust_sample went away with objects open' | tail -n 1)
	[ -z "$line" ]
	t_check $? "rust: rkdapl freed nothing for the Rust consumer at its unload (an LMR dropped under a grant freed itself when the grant ended)" \
		"${line#*rkdapl: }"
}
