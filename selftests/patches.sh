#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side test of `make patches`: the series applies to the pristine linux-source-$KVER with
# `git am`, is checkpatch.pl --strict clean, and builds the kernel crate with kernel::rdma.
#
#   selftests/patches.sh        TAP lines ("ok - patches: ...") on stdout, progress on stderr;
#                               exits non-zero if a test failed
#
# 1. scripts/patches.sh writes the series to out/patches (as `make patches` does).
# 2. The pristine tree's scripts/checkpatch.pl --strict on every patch: 0 errors, warnings, checks.
# 3. `git am` of the series on a git repository holding the files of the pristine tree the
#    series changes (the files it creates must not exist there); the result must be the
#    layer's source.
# 4. The build tree: a hard-linked copy of the pristine tree (cp -al), with a git repository
#    of only the files the series changes (their links broken first; git am replaces files,
#    it never writes through a link), the series applied with `git am`; configured with
#    tinyconfig + qemu/rkdapl.config + CONFIG_INFINIBAND=y (kernel::rdma is cfg'd on =y).
#    Every patch must build on its own, so the tree is built as each patch leaves it, in
#    order (one TAP line per patch, the last one the whole series): `make modules_prepare`,
#    which compiles the kernel crate (rust/kernel.o) with kernel::rdma and its KUnit suite,
#    then rust/doctests_kernel_generated.o (its doctests), and from the patch that adds it
#    the sample, samples/rust/rust_rdma_loopback.o (CONFIG_SAMPLE_RUST_RDMA_LOOPBACK=m), with
#    scripts/kernel.sh's make variables; no compiler warning may point into the layer or
#    the sample. The tree is
#    $RKDAPL_CACHE/src/linux-$KVER-upstream, the build directory
#    $RKDAPL_CACHE/build/$KVER-upstream-<key>, keyed by the series' diffs and the config: a
#    run with unchanged diffs only reports the cached result (seconds); changed diffs take the
#    previous build directory over, and Kbuild rebuilds what the change touches (~30 s a
#    patch). Cold: ~3.5 min on an idle 2-core machine.
# 5. Nothing in the pristine tree is newer than its unpacking (a write through a link).
#
# RKDAPL_PATCHES_EACH=0 builds the whole series only.
# RKDAPL_PATCHES_BUILD=0 stops before the build (steps 1-3 only).
# RKDAPL_PATCHES_SERIES=DIR tests the series in DIR as it is, instead of running make patches.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
t0=$(date +%s)
fail=0
tap() { # tap ok|"not ok" description [reason]
	echo "$1 - patches: $2${3:+ # $3}"
	[ "$1" = ok ] || fail=1
}
finish() {
	log "patches: $(($(date +%s) - t0)) s"
	exit $fail
}

pristine=$("$top/scripts/kernel-source.sh") || { tap "not ok" "linux-source-$KVER unpacked"; finish; }
series=${RKDAPL_PATCHES_SERIES:-$top/out/patches}

# --- 1. make patches ---------------------------------------------------------------------------
if [ -n "${RKDAPL_PATCHES_SERIES:-}" ]; then
	log "patches: testing the series in $series as it is (RKDAPL_PATCHES_SERIES)"
elif ! RKDAPL_PATCHES_CHECKPATCH=0 "$top/scripts/patches.sh" "$series" > /dev/null; then
	tap "not ok" "make patches writes the series" "scripts/patches.sh failed (above)"
	finish
fi
patches=()
for p in "$series"/0*.patch; do
	[ "${p##*/}" = 0000-cover-letter.patch ] || patches+=("$p")
done
n=${#patches[@]}
if [ "$n" -gt 0 ] && [ -f "$series/0000-cover-letter.patch" ]; then
	tap ok "make patches writes the series ($n patches and a cover letter)"
else
	tap "not ok" "make patches writes the series" "$n patches in $series, cover letter: $(ls "$series"/0000-* 2> /dev/null)"
	finish
fi

# --- 2. checkpatch --strict ----------------------------------------------------------------------
bad=()
for p in "${patches[@]}"; do
	total=$(cd "$pristine" && perl scripts/checkpatch.pl --strict "$p" | grep '^total:')
	if [[ $total != "total: 0 errors, 0 warnings, 0 checks,"* ]]; then
		bad+=("${p##*/}: ${total:-no total}")
		(cd "$pristine" && perl scripts/checkpatch.pl --strict --terse --no-summary "$p") >&2
	fi
done
if [ ${#bad[@]} = 0 ]; then
	tap ok "checkpatch --strict clean ($n patches)"
else
	tap "not ok" "checkpatch --strict clean ($n patches)" "$(IFS=';'; echo "${bad[*]}")"
fi

# --- 3. git am on the pristine files ---------------------------------------------------------------
# The files the series creates, and the pristine files it changes (every other file a diff
# names), from the patches' own headers.
mapfile -t creates < <(awk '/^diff --git a\//{ f = substr($3, 3) } /^new file mode/{ print f }' \
	"${patches[@]}" | sort -u)
mapfile -t changes < <(awk '/^diff --git a\//{ print substr($3, 3) }' "${patches[@]}" | sort -u |
	comm -23 - <(printf '%s\n' "${creates[@]}"))
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=rkdapl GIT_AUTHOR_EMAIL=rkdapl@localhost
export GIT_COMMITTER_NAME=rkdapl GIT_COMMITTER_EMAIL=rkdapl@localhost
# apply DIR: DIR holds the pristine tree's files (all of them, or only those the series
# changes); git am the series there. Prints git's complaint on failure.
apply() {
	local d=$1 f
	for f in "${changes[@]}"; do
		[ -f "$d/$f" ] || { echo "$f is not in linux-source-$KVER"; return 1; }
		# A fresh copy: no write can reach the pristine tree through a link.
		cp "$d/$f" "$d/$f.rkdapl-tmp" && mv "$d/$f.rkdapl-tmp" "$d/$f" || return 1
	done
	for f in "${creates[@]}"; do
		[ ! -e "$pristine/$f" ] || { echo "$f already exists in linux-source-$KVER"; return 1; }
	done
	git -C "$d" init -q -b rdma &&
		git -C "$d" add -f -- "${changes[@]}" 2>&1 &&
		git -C "$d" commit -q -m "linux-source-$KVER: the files the series changes" 2>&1 &&
		git -C "$d" tag pristine &&
		git -C "$d" am -q "${patches[@]}" 2>&1 || { git -C "$d" am --abort > /dev/null 2>&1; return 1; }
}
# What went wrong, from apply's output in $why.
am_why() { grep -E '^(error|fatal|Patch failed)|linux-source' <<< "$why" | head -3 | tr '\n' ' '; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rkdapl-am.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for f in "${changes[@]}"; do
	mkdir -p "$(dirname "$scratch/$f")"
	cp "$pristine/$f" "$scratch/$f" 2> /dev/null || true
done
if why=$(apply "$scratch"); then
	# The result must be the layer's source (the series is made from it).
	# (The sample reaches the layer as kernel::rdma there, as rkdapl::rdma here: make patches
	# checks that one line.)
	diff=$(for f in "${creates[@]}"; do
		[[ $f != MAINTAINERS && $f != samples/* && -f $top/$f ]] && ! cmp -s "$top/$f" "$scratch/$f" && echo "$f"
	done)
	if [ -z "$diff" ]; then
		ncommits=$(git -C "$scratch" rev-list --count pristine..HEAD)
		tap ok "series applies to linux-source-$KVER with git am ($n patches, $ncommits commits)"
	else
		tap "not ok" "series applies to linux-source-$KVER with git am" "applied, but differs from the source: $diff"
	fi
else
	tap "not ok" "series applies to linux-source-$KVER with git am" "$(am_why)"
	finish
fi

# --- 4. the build ---------------------------------------------------------------------------------
frag_text="# kernel::rdma is built into the kernel crate only when ib_core is built in.
CONFIG_INFINIBAND=y
# The series' sample (its symbol exists from the last patch on: build() sets it then).
CONFIG_SAMPLES=y
CONFIG_SAMPLES_RUST=y
CONFIG_SAMPLE_RUST_RDMA_LOOPBACK=m"
cfgkey=$({
	cat "$top/qemu/rkdapl.config"
	echo "$frag_text"
} | sha1sum | cut -c1-12)
# The build depends on the diffs only, not on dates or commit messages.
key=$({
	awk 'FNR == 1 { d = 0 } /^diff --git / { d = 1 } d' "${patches[@]}"
	echo "$cfgkey"
	cat "$pristine/.rkdapl-unpacked"
} | sha1sum | cut -c1-12)
# One tree, at a fixed path (Kbuild's dependency files name it), and one build directory, named
# after the series it holds: a new series takes the previous directory over, so only what the
# series changed is rebuilt.
tree=$RKDAPL_CACHE/src/linux-$KVER-upstream
out=$RKDAPL_CACHE/build/$KVER-upstream-$key
export LLVM=-19 LIBCLANG_PATH=/usr/lib/llvm-19/lib
MAKEARGS=(-C "$tree" O="$out" LLVM=-19 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	BINDGEN="$BINDGEN" ARCH=x86_64)
jobs=$(($(nproc) + 1))

# build LOG RDMA KCRATE: make modules_prepare into $out; checks that the kernel crate was
# compiled (when KCRATE=1: the patch changes it), with no warning in the layer's files, and
# when RDMA=1 that kernel::rdma is in it; builds the sample when the tree has it. Prints the
# time, or the reason of a failure.
build() {
	local logf=$1 rdma=$2 kcrate=$3 s w
	s=$(date +%s)
	if ! make "${MAKEARGS[@]}" -j"$jobs" modules_prepare > "$logf" 2>&1; then
		grep -E 'error|Error' "$logf" | head -5
		echo "make modules_prepare failed, see $logf"
		return 1
	fi
	# Quiet Kbuild prints "RUSTC L rust/kernel.o" when it compiles the kernel crate.
	[ "$kcrate" = 0 ] || grep -qE '^ *RUSTC L rust/kernel\.o$' "$logf" ||
		{ echo "$logf does not show rust/kernel.o being built"; return 1; }
	# modules_prepare extracts the kernel crate's doctests; vmlinux would compile them.
	if grep -qx CONFIG_RUST_KERNEL_DOCTESTS=y "$out/.config" &&
		! make "${MAKEARGS[@]}" -j"$jobs" rust/doctests_kernel_generated.o >> "$logf" 2>&1; then
		grep -E 'error' "$logf" | head -5
		echo "the kernel crate's doctests do not compile, see $logf"
		return 1
	fi
	if [ "$rdma" = 1 ]; then
		# Every public function of the kernel crate is exported to modules.
		grep -q 'kernel.*4rdma' "$out/rust/exports_kernel_generated.h" ||
			{ echo "no kernel::rdma symbol in $out/rust/exports_kernel_generated.h"; return 1; }
		if grep -qx CONFIG_RUST_KERNEL_DOCTESTS=y "$out/.config" &&
			grep -rqs '```' "$tree/rust/kernel/rdma.rs" "$tree/rust/kernel/rdma"; then
			grep -q rust_doctest_kernel_rdma "$out/rust/doctests_kernel_generated.rs" ||
				{ echo "the layer's doctests are not among the kernel's"; return 1; }
		fi
	fi
	# The sample, from the patch that adds it: its Kconfig symbol is new there (syncconfig
	# dropped it from .config on the patches before), so it is set again first.
	if [ -f "$tree/samples/rust/rust_rdma_loopback.rs" ]; then
		"$tree/scripts/config" --file "$out/.config" -e SAMPLES -e SAMPLES_RUST \
			-m SAMPLE_RUST_RDMA_LOOPBACK &&
			make "${MAKEARGS[@]}" olddefconfig >> "$logf" 2>&1 &&
			grep -qx CONFIG_SAMPLE_RUST_RDMA_LOOPBACK=m "$out/.config" ||
			{ echo "CONFIG_SAMPLE_RUST_RDMA_LOOPBACK=m does not stick, see $out/.config"; return 1; }
		if ! make "${MAKEARGS[@]}" -j"$jobs" modules_prepare samples/rust/rust_rdma_loopback.o \
			>> "$logf" 2>&1; then
			grep -E 'error' "$logf" | head -5
			echo "samples/rust/rust_rdma_loopback.o does not build, see $logf"
			return 1
		fi
		[ -f "$out/samples/rust/rust_rdma_loopback.o" ] ||
			{ echo "no $out/samples/rust/rust_rdma_loopback.o after its build, see $logf"; return 1; }
	fi
	# No compiler warning in the series' files (rustc: "--> file:line:col", clang: "file:...",
	# objtool: the mangled name).
	w=$(grep -cE -- '--> [^ ]*(rust/kernel/rdma[./]|samples/rust/rust_rdma_loopback)|rust/helpers/rdma\.c:[0-9]+:[0-9]+: warning|objtool: .*4rdma' "$logf")
	[ "$w" = 0 ] || { echo "$w compiler warning(s) in the layer's files, see $logf"; return 1; }
	echo "$(($(date +%s) - s)) s"
}

if [ "${RKDAPL_PATCHES_BUILD:-1}" = 0 ]; then
	log "patches: RKDAPL_PATCHES_BUILD=0: no build"
else
	exec 9> "$RKDAPL_CACHE/upstream.lock"
	flock 9
fi
if [ "${RKDAPL_PATCHES_BUILD:-1}" = 0 ]; then
	:
elif [ -f "$out/.rkdapl-upstream-ok" ] && [ "$(cat "$tree/.rkdapl-upstream" 2> /dev/null)" = "$key" ] &&
	[ "$(head -1 "$out/.rkdapl-upstream-ok")" = "each=${RKDAPL_PATCHES_EACH:-1}" ]; then
	log "patches: $out was built from this series (key $key)"
	while IFS=$'\t' read -r what when; do
		tap ok "$what" "cached: $when, $out"
	done < <(tail -n +2 "$out/.rkdapl-upstream-ok")
else
	prev=
	for old in "$RKDAPL_CACHE/build/$KVER-upstream-"*; do
		[ -d "$old" ] || continue
		if [ -z "$prev" ]; then
			prev=$old
		else
			log "patches: removing $old (another series' build)"
			rm -rf "$old"
		fi
	done
	if [ -n "$prev" ] && [ "$prev" != "$out" ]; then
		log "patches: $prev, built from an earlier series, becomes $out"
		mv "$prev" "$out"
	fi
	rm -f "$out/.rkdapl-upstream-ok"
	# A new hard-linked copy: the pristine files keep their times, so Kbuild rebuilds only
	# what depends on the files the series changes or adds.
	rm -rf "$tree"
	log "patches: hard-linked copy of $pristine in $tree"
	cp -al "$pristine" "$tree" || { tap "not ok" "build tree: cp -al $pristine $tree"; finish; }
	if ! why=$(apply "$tree"); then
		tap "not ok" "series applies to the hard-linked tree" "$(am_why)"
		finish
	fi
	echo "$key" > "$tree/.rkdapl-upstream"
	mkdir -p "$out"
	if [ "$(cat "$out/.rkdapl-upstream-config" 2> /dev/null)" != "$cfgkey" ]; then
		printf '%s\n' "$frag_text" > "$out/rkdapl-upstream.config"
		log "patches: configuring $out (tinyconfig + rkdapl.config + CONFIG_INFINIBAND=y)"
		if make -s "${MAKEARGS[@]}" tinyconfig > "$out/config.log" 2>&1 &&
			KCONFIG_CONFIG="$out/.config" "$tree/scripts/kconfig/merge_config.sh" -m -O "$out" \
				"$out/.config" "$top/qemu/rkdapl.config" "$out/rkdapl-upstream.config" \
				>> "$out/config.log" 2>&1 &&
			make -s "${MAKEARGS[@]}" olddefconfig >> "$out/config.log" 2>&1 &&
			grep -qx CONFIG_INFINIBAND=y "$out/.config" && grep -qx CONFIG_RUST=y "$out/.config" &&
			grep -qx CONFIG_MODULES=y "$out/.config"; then
			echo "$cfgkey" > "$out/.rkdapl-upstream-config"
		else
			tap "not ok" "kernel crate with kernel::rdma builds (modules_prepare)" \
				"configuration failed or CONFIG_RUST/INFINIBAND/MODULES not =y, see $out/config.log"
			finish
		fi
	fi

	# The tree of each patch in order (the last one is the whole series), or the whole series.
	commits=(HEAD)
	[ "${RKDAPL_PATCHES_EACH:-1}" = 0 ] || mapfile -t commits < <(git -C "$tree" rev-list --reverse pristine..rdma)
	passed=()
	i=0
	for c in "${commits[@]}"; do
		i=$((i + 1))
		git -C "$tree" checkout -q "$c" || { tap "not ok" "checkout of $c in $tree"; finish; }
		if [ ${#commits[@]} = 1 ]; then
			what="kernel crate with kernel::rdma builds (modules_prepare)"
			logf=$out/build.log
		elif [ "$i" = ${#commits[@]} ]; then
			what="patch $i/$n: the kernel crate with kernel::rdma and the sample build (modules_prepare)"
			logf=$out/build.log
		else
			what="patch $i/$n builds on its own ($(git -C "$tree" log -1 --format=%s "$c"))"
			logf=$out/build-$i.log
		fi
		log "patches: make modules_prepare in $out: $what (the first one ~1-2 min, ~20-30 s each after it)"
		# kernel::rdma exists from the patch that adds rust/kernel/rdma.rs on.
		rdma=0
		git -C "$tree" cat-file -e "$c:rust/kernel/rdma.rs" 2> /dev/null && rdma=1
		# A patch that changes nothing under rust/ (the sample's) does not rebuild the crate.
		kcrate=1
		[ ${#commits[@]} = 1 ] || [ -n "$(git -C "$tree" diff --name-only "$c~1" "$c" -- rust)" ] ||
			kcrate=0
		if why=$(build "$logf" "$rdma" "$kcrate"); then
			tap ok "$what" "$why"
			passed+=("$what"$'\t'"built in $why on $(date -u +'%F %T')")
		else
			tap "not ok" "$what" "$(tr '\n' ' ' <<< "$why")"
		fi
	done
	git -C "$tree" checkout -q rdma
	[ $fail = 0 ] && printf '%s\n' "each=${RKDAPL_PATCHES_EACH:-1}" "${passed[@]}" > "$out/.rkdapl-upstream-ok"
fi
# Nothing of the pristine tree may have changed since it was unpacked (a write through one of
# the build tree's hard links would show here).
changed=$(find "$pristine" -newer "$pristine/.rkdapl-unpacked" | head -3)
if [ -z "$changed" ]; then
	tap ok "pristine linux-source-$KVER unchanged"
else
	tap "not ok" "pristine linux-source-$KVER unchanged" "newer than its unpacking: $(tr '\n' ' ' <<< "$changed")"
fi
finish
