#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host side: checks the harness itself. A pair rping and a --one loopback rping
# must pass; a failing script, a fake kernel WARNING and a fake "Disabling lock debugging"
# must make run-guests.sh fail. Prints the wall-clock time of each run.
#   RKDAPL_BUILD=<kernel build dir> qemu/smoke/selftest.sh
here=$(cd "$(dirname "$0")" && pwd)
run=$here/../run-guests.sh
bad=0
check() { # expected-status name run-guests-args...
	local want=$1 name=$2 t0=$SECONDS st
	shift 2
	RKDAPL_OUT= "$run" "$@"
	st=$?
	if { [ "$want" = 0 ] && [ $st = 0 ]; } || { [ "$want" != 0 ] && [ $st != 0 ]; }; then
		echo "ok - $name ($((SECONDS - t0)) s, exit $st)"
	else
		echo "not ok - $name ($((SECONDS - t0)) s, exit $st)"
		bad=1
	fi
}
check 0 "pair rping" "$here/rping-a.sh" "$here/rping-b.sh"
check 0 "one-guest loopback rping" --one "$here/rping-one.sh"
check 1 "failing script fails the run" --one "$here/fail.sh"
check 1 "fake WARNING fails the run" --one "$here/warn.sh"
check 1 "lock debugging turned off fails the run" --one "$here/lockoff.sh"
exit $bad
