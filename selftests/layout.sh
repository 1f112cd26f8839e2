#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The layout selftest's result as one TAP line (host side; nothing is booted).
#
#   selftests/layout.sh DIR LABEL
#
# DIR: where selftests/layout was built for a kernel (the module tree, e.g. out/debian/build,
# or its selftests/layout). LABEL names that kernel in the line.
#
# rkdapl.ko's Rust code sees the RDMA structs as libclang lays them out (bindgen); the kernel's
# C compiler decides their real layout. selftests/layout/Kbuild turns libclang's numbers for
# the structs the layer uses into static assertions and compiles them with the kernel's
# compiler and flags into rkdapl_layout.ko: that module exists only if every size, alignment
# and field offset agreed. This checks that the module was built from the current assertions
# and prints what it compared (its modinfo `layout`), e.g.
#   ok - layout: libclang 19.1.7 == gcc 14.2.0 for 34 structs, 435 sizes/alignments/offsets
#   (Debian 7.3.4+deb13-amd64)
# on one line, or "not ok - layout: ... # why". Exit status 0 on ok, 1 otherwise.
set -uo pipefail
[ $# = 2 ] || { echo "usage: $0 DIR LABEL" >&2; exit 2; }
dir=$1 label=$2
[ -f "$dir/selftests/layout/Kbuild" ] && dir=$dir/selftests/layout
ko=$dir/rkdapl_layout.ko h=$dir/layout_generated.h
failed="its build failed: a static assertion names the struct and field"

fail() {
	echo "not ok - layout: libclang == the C compiler ($label) # $*"
	exit 1
}
[ -f "$h" ] || fail "no $h: selftests/layout was not built for this kernel"
[ -f "$ko" ] || fail "no $ko: $failed"
[ "$ko" -nt "$h" ] || fail "$ko is older than $h: $failed"
# The module's .modinfo strings (what modinfo -F layout prints), without needing kmod.
summary=$(tr '\0' '\n' < "$ko" | sed -n 's/^layout=//p' | head -n 1)
want=$(sed -n 's/^#define RKDAPL_LAYOUT_SUMMARY "\(.*\)"$/\1/p' "$h")
[ -n "$summary" ] || fail "$ko has no modinfo layout"
[ "$summary" = "$want" ] || fail "$ko says '$summary', $h '$want': not built from it"
n=$(grep -c '^_Static_assert(' "$h")
[[ $summary == *" $n sizes/alignments/offsets "* ]] ||
	fail "$h has $n assertions, its summary says otherwise: '$summary'"
echo "ok - layout: ${summary%% (*} ($label)"
