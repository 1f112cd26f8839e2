#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# fuzz: rkdapl_test.ko role=fuzz (selftests/kmod/rkdapl_test/fuzz.c), random sequences of C API
# calls with NULL, freed and foreign handles, random sizes and flags, a second thread freeing
# objects, upcalls trying the calls they must not make, over a loopback PSP. Sourced by the guest
# scripts (selftests/guest-lib.sh first).
#
#   fuzz_suite    one run per seed of $RKDAPL_FUZZ_SEEDS (make check: three fixed seeds, 5000
#                 calls each; RKDAPL_FUZZ_OPS sets the count, make fuzz takes 20000), each
#                 "fuzz: seed N: ...": the module's tests, then rdma res back to what it was
#                 before (no cm_id, QP, CQ, MR or PD of rkdapl_test left) and the module unloads.
#                 With RKDAPL_FUZZ_MINUTES=M (make fuzz), new seeds until M minutes have passed.
# A splat (KASAN, lockdep, kmemleak, a hung task) fails the guest's splat scan.

# The rdma restrack objects rkdapl_test owns, by kind ("cm_id 0 qp 0 ...").
fuzz_res() {
	local k out=
	for k in cm_id qp cq mr pd; do
		out+="$k $(rdma res show "$k" 2>/dev/null | grep -c 'comm \[rkdapl_test\]') "
	done
	echo "${out% }"
}

# fuzz_one SEED: one run (SEED 0: the module picks one and prints it).
fuzz_one() {
	local seed=$1 ops=${RKDAPL_FUZZ_OPS:-5000} before after i rc=0 name l
	local -a lines
	before=$(fuzz_res)
	run_kmod "fuzz" 1800 -- role=fuzz dev=$RKDAPL_DEV peer="$RKDAPL_IP" port=7620 \
		seed="$seed" fuzz_ops="$ops" || rc=$?
	if [ "$seed" = 0 ]; then
		mapfile -t lines < <(dmesg)
		for l in "${lines[@]}"; do
			[[ $l =~ rkdapl_test:\ \#\ fuzz\ seed=([0-9]+) ]] && seed=${BASH_REMATCH[1]}
		done
	fi
	name="fuzz: seed $seed"
	# Released objects leave restrack once their deferred releases ran: give them a moment.
	for ((i = 0; i < 30; i++)); do
		after=$(fuzz_res)
		[ "$after" = "$before" ] && break
		sleep 1
	done
	[ "$after" = "$before" ]
	t_check $? "$name: rdma res back to its baseline" "before: $before; after: $after"
	! module_loaded rkdapl_test
	t_check $? "$name: rkdapl_test unloaded" "still loaded"
	_log "fuzz: seed $seed done (insmod $rc)"
}

fuzz_suite() {
	local s end
	if [ -n "${RKDAPL_FUZZ_MINUTES:-}" ]; then
		end=$((SECONDS + RKDAPL_FUZZ_MINUTES * 60))
		while [ $SECONDS -lt $end ]; do
			fuzz_one 0
		done
		return
	fi
	for s in ${RKDAPL_FUZZ_SEEDS:-1 2 3}; do
		fuzz_one "$s"
	done
}
