#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest of `make check T=<suite>[,<suite>...]` (selftests/run.sh -> qemu/run-guests.sh
# --one), 10.77.0.1: loads rkdapl.ko, runs only the named suites, in the order given, and
# unloads it. Each suite sets up and tears down what it needs. The suites it knows:
#   badarg     rkdapl_test role=badarg (bad arguments, then state errors on loopback pairs)
#   loopback   rkdapl_test role=loopback (the data tests over the guest's own address)
#   fuzz       rkdapl_test role=fuzz, one run per seed of RKDAPL_FUZZ_SEEDS (SEED= of make
#              check), or new seeds for RKDAPL_FUZZ_MINUTES minutes (make fuzz): selftests/fuzz.sh
#   removal_free  an EP freed while the removal of rxe0 delivers BROKEN (selftests/removal.sh)
# TAP lines go to $RKDAPL_SYNC/tap-a.txt; exits non-zero if any test failed.
set -u
. "$RKDAPL_TOP/selftests/guest-lib.sh" || exit 1
. "$RKDAPL_TOP/selftests/fuzz.sh" || exit 1
. "$RKDAPL_TOP/selftests/observe.sh" || exit 1
. "$RKDAPL_TOP/selftests/removal.sh" || exit 1

_log "guest A: suites ${RKDAPL_T:-}"
if load_provider; then
	IFS=, read -r -a suites <<< "${RKDAPL_T:-}"
	for s in "${suites[@]}"; do
		case $s in
		badarg) run_kmod badarg 1200 -- role=badarg dev=$RKDAPL_DEV peer="$RKDAPL_IP" port=7490 ;;
		loopback) run_kmod loopback 1200 -- role=loopback dev=$RKDAPL_DEV peer="$RKDAPL_IP" port=7500 ;;
		fuzz) fuzz_suite ;;
		removal_free) removal_free_suite ;;
		*) t_fail "make check T=: suite '$s'" "unknown here (badarg, loopback, fuzz, removal_free)" ;;
		esac
	done
	unload_provider
fi
finish
