#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE a guest by selftests/guest-a.sh and guest-b.sh (after guest-lib.sh and the
# suites' files): the suites of `make check`, their order, and the loop that runs them.
#
# One row per step. A suite is one or more steps with the same name (srq: a single-guest part,
# a two-guest part and a removal part), and `make check T=<suite>[,<suite>...]` (RKDAPL_T)
# runs every step of the suites named, in this order, whatever order T= gives. Every step sets
# up and tears down what it needs (its modules, its links, its namespaces), so any selection
# runs alone.
#
#   kind   one   a single-guest step: runs on guest A
#          b     a single-guest step that runs on guest B when there are two guests (while
#                guest A runs its own single-guest steps), on guest A when there is one
#          pair  a two-guest step: guest A runs the first function, guest B the second; a
#                selection with one boots two guests (selftests/run.sh), and with one guest
#                (run.sh --one, FLAVOUR=kcsan) it is left out
#          pair1 the same, but with one guest, guest A's function runs its one-guest form
#                (it reads RKDAPL_PAIR)
#   stock  yes if the step also runs on Debian's stock kernel (RKDAPL_SUITES=stock: no KUnit,
#          no fault injection, no siw, no debug options to catch what the long suites look for)
#
# The order keeps guest A's single-guest steps first (guest B runs its own meanwhile) and
# guest A's link-changing steps (removal, ports) after every two-guest step.
#
#  name          kind  stock  guest A               guest B
SUITE_ROWS=(
	"kunit        one   no     kunit_suite           -"
	"badarg       one   yes    suite_badarg          -"
	"loopback     one   yes    suite_loopback        -"
	"fuzz         one   yes    fuzz_suite            -"
	"reset        one   yes    reset_suite           -"
	"rust         one   yes    rust_suite            -"
	"rust         one   yes    rust_layer_suite      -"
	"rust         one   yes    rust_layer_leak       -"
	"rust         one   yes    rust_typed_suite      -"
	"rust         one   yes    rust_typed_removal    -"
	"first        one   yes    first_suite           -"
	"blockdev     one   yes    suite_blockdev        -"
	"blkreconn    one   yes    blkreconn_suite       -"
	"blkmpath     one   yes    blkmpath_suite        -"
	"inject       b     no     inject_suite          inject_suite"
	"netns        b     yes    netns_suite           netns_suite"
	"observe      one   yes    observe_suite         -"
	"siw          pair1 no     siw_phase_a           siw_phase_b"
	"srq          one   yes    srq_guest_a           -"
	"two-guest    pair  yes    serve_two_guest       two_guest_client"
	"rping        pair  yes    rping_guest_a         rping_guest_b"
	"srq          pair  yes    srq_serve_a           srq_clients_b"
	"ip6          pair  yes    ip6_guest_a           ip6_guest_b"
	"soak         pair  no     soak_guest_a          soak_guest_b"
	"faults       pair  no     faults_guest_a        faults_guest_b"
	"mtu          pair  no     mtu_guest_a           mtu_guest_b"
	"conn         pair  no     conn_guest_a          conn_guest_b"
	"scale        pair  no     suite_scale_a         suite_scale_b"
	"peerkill     pair  no     peerkill_guest_a      suite_peerkill_b"
	"removal      one   yes    removal_suite         -"
	"removal_free one   yes    removal_free_suite    -"
	"srq          one   yes    srq_removal           -"
	"ports        one   yes    ports_suite           -"
	"unload       one   yes    unload_suite          -"
)

# The host-side suites: selftests/run.sh runs them on the host, not in a guest, and they are
# named in T= like the others. hygiene (selftests/hygiene.sh: SPDX lines, no build-machine paths,
# no issue numbers in the committed files) runs first, before anything is built; layout (the
# module graph and the C/Rust struct layouts) after the guests; patches (make patches and its
# build) beside the debug guests; install (scripts/dkms-test.sh: DKMS, make install and make
# uninstall for Debian's stock kernel, in its toolchain chroot) beside the debug guests too, and
# the stock guests then modprobe the rkdapl.ko DKMS installed (T=install needs KERNEL=debian).
HOST_SUITES="hygiene layout patches install"

# The steps that are more than one function call.
suite_badarg() { run_kmod badarg 1200 -- role=badarg dev=$RKDAPL_DEV peer="$RKDAPL_IP" port=7490; }
suite_loopback() { run_kmod loopback 1200 -- role=loopback dev=$RKDAPL_DEV peer="$RKDAPL_IP" port=7500; }
# blockdev_removal deletes and re-adds rxe0: it runs last of the four.
suite_blockdev() {
	blockdev_suite
	blockdev_send_queue
	blockdev_file_export
	blockdev_timeout
	blockdev_access
	blockdev_removal
}
suite_scale_a() {
	scale_guest_a
	scale_drop_guest_a
}
suite_scale_b() {
	scale_guest_b
	scale_drop_guest_b
}
# Guest B is killed in the middle of peerkill: it serves that connection after it has reported
# its results (selftests/guest-b.sh), so here it only says that it will.
suite_peerkill_b() { SUITE_PEERKILL_VICTIM=1; }

# suite_names: every suite name, once, in order, in $REPLY (space-separated).
suite_names() {
	local row name kind stock a b
	REPLY=
	for row in "${SUITE_ROWS[@]}"; do
		read -r name kind stock a b <<< "$row"
		[[ " $REPLY " == *" $name "* ]] || REPLY+="${REPLY:+ }$name"
	done
}

# suite_pair NAMES: true if one of the comma-separated suites has a two-guest step (selftests/run.sh
# then boots two guests).
suite_pair() {
	local row name kind
	for row in "${SUITE_ROWS[@]}"; do
		read -r name kind _ <<< "$row"
		[[ $kind == pair* ]] && [[ ",$1," == *",$name,"* ]] && return 0
	done
	return 1
}

# suite_steps ROLE: the functions this guest runs, in order, one "name function" per element
# of SUITE_STEPS. Selection: RKDAPL_T (empty: every suite; selftests/run.sh has checked its
# names), RKDAPL_SUITES=stock, RKDAPL_PAIR.
suite_steps() {
	local role=$1 row name kind stock a b fn pair=${RKDAPL_PAIR:-1} want=" ${RKDAPL_T//,/ } "
	SUITE_STEPS=()
	for row in "${SUITE_ROWS[@]}"; do
		read -r name kind stock a b <<< "$row"
		[ -z "${RKDAPL_T:-}" ] || [[ $want == *" $name "* ]] || continue
		[ "${RKDAPL_SUITES:-all}" = stock ] && [ "$stock" != yes ] && continue
		fn=-
		case $kind in
		one) [ "$role" = a ] && fn=$a ;;
		b) if [ "$pair" = 1 ]; then [ "$role" = b ] && fn=$b; else [ "$role" = a ] && fn=$a; fi ;;
		pair) [ "$pair" = 1 ] && { [ "$role" = a ] && fn=$a || fn=$b; } ;;
		pair1) if [ "$pair" = 1 ]; then [ "$role" = a ] && fn=$a || fn=$b; else [ "$role" = a ] && fn=$a; fi ;;
		esac
		[ "$fn" = - ] || SUITE_STEPS+=("$name $fn")
	done
}

# suite_run ROLE: runs this guest's steps (suite_steps), each preceded by a progress line
# "[i/N] <suite> (<function>): <elapsed> s, about <M> min left" and followed by its time. The
# estimate comes from the previous run's times of the same steps ($RKDAPL_TIMES-<role>.txt on
# the host, written by selftests/run.sh from this run's $RKDAPL_SYNC/times-<role>.txt).
suite_run() {
	local role=$1 i=0 n step name fn t0 left k prev=${RKDAPL_TIMES:+$RKDAPL_TIMES-$1.txt}
	local -A est=()
	local -a lines
	suite_steps "$role"
	n=${#SUITE_STEPS[@]}
	if [ -n "$prev" ] && [ -r "$prev" ]; then
		mapfile -t lines < "$prev"
		for k in "${lines[@]}"; do est[${k% *}]=${k#* }; done
	fi
	for step in "${SUITE_STEPS[@]}"; do
		i=$((i + 1))
		name=${step% *} fn=${step#* }
		left=0
		for k in "${SUITE_STEPS[@]:i-1}"; do left=$((left + ${est[${k#* }]:-0})); done
		_log "[$i/$n] $name ($fn): $SECONDS s elapsed$([ $left -gt 0 ] && echo ", about $(((left + 59) / 60)) min left")"
		t0=$SECONDS
		"$fn"
		printf '%s %s\n' "$fn" $((SECONDS - t0)) >> "$RKDAPL_SYNC/times-$role.txt"
	done
	_log "[$n/$n] done: $SECONDS s"
}
