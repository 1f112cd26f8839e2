#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced by selftests/guest-a.sh (after guest-lib.sh and rust.sh): the first consumers of
# samples/first/ (docs/getting-started.md), which selftests/run.sh built on the host out of
# tree, each by its own Makefile (for the stock kernel through scripts/debian.sh make).
#
#   first_suite   loads rkdapl_first.ko (C) and rkdapl_first_rust.ko (Rust) in turn: each opens
#                 the IA of this guest's address, connects an EP to its own PSP, grants the
#                 server's LMR through an RMR, RDMA-WRITEs 64 KiB into it, RDMA-READs it back
#                 and compares both copies with what it wrote, frees everything, and says so in
#                 one line; insmod must succeed with that line. Then rmmod, rdma res back to its
#                 baseline, and rkdapl freed nothing for the module at its unload.

# first_one LABEL KO MODULE INSMOD-ARGS...
first_one() {
	local label=$1 ko=$2 mod=$3 rc=0 n0 line base
	shift 3
	if [ ! -f "$ko" ]; then
		t_fail "first: $label: connects, RDMA-WRITEs 64 KiB, READs it back, bytes compared" \
			"no $ko: its build failed (the line 'first: ... builds out of tree')"
		return
	fi
	rust_res_counts
	base=$REPLY
	n0=$(dmesg | wc -l)
	_log "first: insmod ${ko#"$KO"/} $*"
	timeout -k 10 120 insmod "$ko" "$@" || rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep "$mod: " | tail -n 1)
	[ $rc = 0 ] && [[ $line == *"$mod: 65536 bytes RDMA WRITTEN and READ back over $RKDAPL_DEV, compared: ok" ]]
	t_check $? "first: $label: connects, RDMA-WRITEs 64 KiB, READs it back, bytes compared" \
		"insmod exit $rc; ${line:-no line from the module}"
	rc=0
	module_loaded "$mod" && { rmmod "$mod" || rc=$?; }
	t_check $rc "first: $label: rmmod" "rmmod exit $rc"
	rust_res_back "$base"
	rc=$?
	line=$(dmesg | tail -n +$((n0 + 1)) | grep "rkdapl: $mod went away with objects open" | tail -n 1)
	[ $rc = 0 ] && [ -z "$line" ]
	t_check $? "first: $label: freed everything itself (rdma res at its baseline, rkdapl freed nothing at its unload)" \
		"rdma res before: $base, after: $REPLY; ${line#*rkdapl: }"
}

first_suite() {
	first_one "the C consumer" "$KO/samples/first/c/rkdapl_first.ko" rkdapl_first \
		addr="$RKDAPL_IP"
	first_one "the Rust consumer" "$KO/samples/first/rust/rkdapl_first_rust.ko" rkdapl_first_rust \
		addr="$(rkdapl_ip_int "$RKDAPL_IP")"
}
