#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The host-side suite `hygiene` of `make check` (selftests/suites.sh, HOST_SUITES): what the
# committed files say about themselves. Three tests, as TAP lines on stdout:
#
#   - every committed file carries an SPDX-License-Identifier line in its first 5 lines, except
#     the files that cannot: COPYING (the licence itself), the kernel patches of
#     qemu/kernel-patches/ (git-am input), the kernel config fragments qemu/*.config and
#     .kunitconfig files (their bytes key the kernel build cache, and the kernel's own
#     .kunitconfig files carry none) and the generated data of docs/bench/ (CSV, report, plot);
#   - no committed file names a build machine's paths (under /work, /root or /home/<user>, and
#     under /tmp in documentation);
#   - no committed file refers to an issue by number (no tracker is public);
#   - every export of rkdapl.ko (rust/rkdapl/exports.c) is in the symbol namespace RKDAPL
#     (EXPORT_SYMBOL_NS_GPL(sym, "RKDAPL")): a plain export would work for every consumer
#     and so would not be noticed otherwise.
#
# NEWS.md, the history, may name what it likes and is left out of the last two, and so are the
# kernel config fragments qemu/*.config, whose every byte keys the kernel build cache (a
# changed comment rebuilds the kernel; they change with the next change to the config). The files are
# git's (git ls-files: tracked ones, as they are in the work tree), so a file is checked from
# the moment it is added.
#
#   selftests/hygiene.sh [TOP]        TOP: the checkout (default: this script's)
set -uo pipefail
top=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$top" || exit 1

if ! files=$(git ls-files 2> /dev/null) || [ -z "$files" ]; then
	echo "ok - hygiene: committed files # SKIP not a git checkout"
	exit 0
fi
mapfile -t files <<< "$files"

# report NAME BAD...: one TAP line for test NAME, failing with the first offenders.
report() {
	local name=$1
	shift
	if [ $# = 0 ]; then
		echo "ok - hygiene: $name"
	else
		echo "not ok - hygiene: $name # $# offending: $(printf '%s; ' "${@:1:5}" | cut -c1-400)"
	fi
}

# SPDX.
spdx_exempt='^(COPYING|qemu/kernel-patches/.*\.patch|qemu/[^/]*\.config|(.*/)?\.kunitconfig|docs/bench/.*\.(csv|txt|png))$'
bad=() n=0 nx=0
for f in "${files[@]}"; do
	[ -f "$f" ] || continue
	if [[ $f =~ $spdx_exempt ]]; then
		nx=$((nx + 1))
		continue
	fi
	n=$((n + 1))
	head -n 5 "$f" | grep -q 'SPDX-License-Identifier: ' || bad+=("$f")
done
report "$n committed files carry an SPDX-License-Identifier ($nx exempt)" "${bad[@]+"${bad[@]}"}"

# Build-machine paths and issue numbers: every text file but NEWS.md, line by line. The
# patterns are spelled so that this file does not match them itself.
text=()
for f in "${files[@]}"; do
	[ -f "$f" ] && [ "$f" != NEWS.md ] && [[ ! $f =~ ^qemu/[^/]*\.config$ ]] && grep -Iq '' "$f" &&
		text+=("$f")
done
bad=()
while IFS= read -r l; do
	bad+=("$l")
done < <(grep -HnE '/(work|root)/|/home/[a-z_][a-z0-9_-]*/' "${text[@]}" | cut -c1-120
	grep -HnE '/tmp/' $(printf '%s\n' "${text[@]}" | grep -E '\.(md|txt)$') < /dev/null | cut -c1-120)
report "no build-machine paths in ${#text[@]} committed text files (NEWS.md, qemu/*.config aside)" "${bad[@]+"${bad[@]}"}"

bad=()
while IFS= read -r l; do
	bad+=("$l")
done < <(grep -HnEi '\b(issue|bug|ticket)s? ?#?[0-9]+\b|\bissues? [0-9]+(,| and) [0-9]+' "${text[@]}" | cut -c1-120)
report "no issue numbers in ${#text[@]} committed text files (NEWS.md, qemu/*.config aside)" "${bad[@]+"${bad[@]}"}"

bad=()
if [ -f rust/rkdapl/exports.c ]; then
	while IFS= read -r l; do
		bad+=("$l")
	done < <(grep -nE '^[^*/]*EXPORT_SYMBOL' rust/rkdapl/exports.c | grep -vE 'EXPORT_SYMBOL_NS_GPL\([A-Za-z0-9_]+, "RKDAPL"\)' |
		grep -v '^[0-9]*:#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_NS_GPL(sym, "RKDAPL")$')
	n=$(grep -c 'EXPORT_SYMBOL_NS_GPL([A-Za-z0-9_]*, "RKDAPL")' rust/rkdapl/exports.c)
	report "rkdapl's $n exports in rust/rkdapl/exports.c are in namespace RKDAPL" "${bad[@]+"${bad[@]}"}"
fi
exit 0
