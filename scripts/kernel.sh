#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Prepare and build the guest kernel rkdapl runs on.
#
#   scripts/kernel.sh [debug|release|kcsan]     prints the build directory (O=) on stdout
#
# debug: tinyconfig + qemu/rkdapl.config (KASAN, lockdep, kmemleak, ...); release: + qemu/release.config
# (no debug checks, -O2); kcsan: + qemu/kcsan.config (the debug kernel with KCSAN instead of KASAN).
# Debian's source is unpacked once and built with only the upstream fixes of qemu/kernel-patches
# (O=): rkdapl.ko carries the Rust RDMA layer itself, as it must on a distribution kernel
# (scripts/debian.sh), and make patches writes the layer's upstream form. Build directories are keyed by kernel version + config
# fragments; Kbuild rebuilds only what changed inside one.
# KDIR=/path skips all of this and uses an already built tree.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-debug}

if [ -n "${KDIR:-}" ]; then echo "$KDIR"; exit 0; fi

pristine=$("$top/scripts/kernel-source.sh")
frags=("$top/qemu/rkdapl.config")
case $flavour in
debug) ;;
release | kcsan) frags+=("$top/qemu/$flavour.config") ;;
*) die "unknown kernel flavour '$flavour' (debug, release or kcsan)" ;;
esac

# --- source: Debian's pristine tree, plus qemu/kernel-patches/*.patch -----------------
# Fixes carried until upstream has them (each is a `git format-patch` file, ready to send). The
# patched tree is a hard-linked copy of the pristine one at a fixed path (build directories record
# their source path): a patched file is a copy of its own, so the pristine tree stays pristine for
# scripts/debian.sh and make patches. A changed series restores the files the previous one touched
# and applies the new one; Kbuild then rebuilds what those files feed.
tree=$pristine
kpatches=("$top"/qemu/kernel-patches/*.patch)
if [ -e "${kpatches[0]}" ]; then
	tree=$RKDAPL_CACHE/src/linux-source-$KVER-rkdapl
	stamp=$(cat "${kpatches[@]}" | sha1sum | cut -c1-12)
	if [ "$(cat "$tree/.rkdapl-patches" 2>/dev/null)" != "$stamp" ]; then
		log "applying ${#kpatches[@]} kernel patch(es) from qemu/kernel-patches to $tree"
		[ -d "$tree" ] || cp -al "$pristine" "$tree" || die "cannot copy $pristine to $tree"
		rm -f "$tree/.rkdapl-patches"
		while read -r f; do
			[ -n "$f" ] && cp --remove-destination "$pristine/$f" "$tree/$f"
		done < <(cat "$tree/.rkdapl-patched-files" 2>/dev/null)
		files=$(sed -n 's|^+++ b/||p' "${kpatches[@]}" | sort -u)
		printf '%s\n' "$files" > "$tree/.rkdapl-patched-files"
		for f in $files; do
			cp --remove-destination "$pristine/$f" "$tree/$f" || die "$f: not in $pristine"
		done
		for p in "${kpatches[@]}"; do
			patch -s -p1 -N -d "$tree" < "$p" || die "${p##*/} does not apply to $pristine"
		done
		echo "$stamp" > "$tree/.rkdapl-patches"
	fi
fi

# --- configuration -------------------------------------------------------------
cfgsum=$(cat "${frags[@]}" | sha1sum | cut -c1-12)
out=$RKDAPL_CACHE/build/$KVER-$flavour-$cfgsum
mkdir -p "$out"
export LLVM=-19 LIBCLANG_PATH=/usr/lib/llvm-19/lib
MAKEARGS=(-C "$tree" O="$out" LLVM=-19 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	BINDGEN="$BINDGEN" ARCH=x86_64)
if [ ! -f "$out/.config" ] || [ ! -f "$out/.rkdapl-config-ok" ]; then
	log "configuring $out (tinyconfig + ${frags[*]##*/})"
	make -s "${MAKEARGS[@]}" rustavailable >&2 || die "Rust toolchain not usable (run make deps)"
	make -s "${MAKEARGS[@]}" tinyconfig >&2
	KCONFIG_CONFIG="$out/.config" "$tree/scripts/kconfig/merge_config.sh" -m -O "$out" \
		"$out/.config" "${frags[@]}" >/dev/null
	make -s "${MAKEARGS[@]}" olddefconfig >&2
	# Every =y/=m line (and =<number>) of the fragments must have survived Kconfig's dependencies,
	# and every =n / "is not set" line must have ended up off. A symbol named by several fragments
	# is checked against the last one (release.config turns off what rkdapl.config turns on).
	bad=0
	declare -A want=()
	for f in "${frags[@]}"; do
		while IFS= read -r line; do
			if [[ $line =~ ^(CONFIG_[A-Z0-9_]+)=([ymn]|-?[0-9]+|0x[0-9a-fA-F]+)$ ]]; then
				want[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
			elif [[ $line =~ ^#\ (CONFIG_[A-Z0-9_]+)\ is\ not\ set$ ]]; then
				want[${BASH_REMATCH[1]}]=n
			fi
		done < "$f"
	done
	for sym in "${!want[@]}"; do
		if [ "${want[$sym]}" = n ]; then
			! grep -qE "^$sym=[ym]\$" "$out/.config" ||
				{ log "config: $sym is still on"; bad=1; }
		else
			grep -qx "$sym=${want[$sym]}" "$out/.config" ||
				{ log "config: $sym=${want[$sym]} did not stick"; bad=1; }
		fi
	done
	[ $bad = 0 ] || die "config fragment does not apply cleanly"
	touch "$out/.rkdapl-config-ok"
fi

# --- build ---------------------------------------------------------------------
jobs=$(( $(nproc) + 1 ))
log "building kernel in $out (make -j$jobs bzImage modules; the first build takes ~12-25 min)"
start=$(date +%s)
# Progress every 500 objects: the share of a full build's objects (the count of the last full
# build of this flavour, $RKDAPL_CACHE/build/objects-$flavour; 2400 before there is one: the debug kernel's) and
# an estimate of the time left at the rate so far.
total=$(cat "$RKDAPL_CACHE/build/objects-$flavour" 2>/dev/null || echo 2400)
full=0
[ -f "$out/vmlinux" ] || full=1
make "${MAKEARGS[@]}" -j"$jobs" bzImage modules 2>&1 |
	awk -v logf="$out/build.log" -v total="$total" -v t0="$start" -v nf="$out/.rkdapl-objects" '
		{ print > logf; fflush(logf) }
		/^ *(CC|LD|AR|RUSTC|BINDGEN)/ {
			n++
			if (n % 500 == 0) {
				el = systime() - t0; pc = n < total ? int(100 * n / total) : 99
				left = n < total ? int(el * (total - n) / n / 60 + 1) : 1
				printf "[rkdapl] ... %d of ~%d objects (%d%%), %d min so far, about %d min left, at %s\n",
					n, total, pc, int(el / 60), left, $NF > "/dev/stderr"
			}
		}
		/error|Error/ { print > "/dev/stderr" }
		END { print n > nf }'
[ "${PIPESTATUS[0]}" = 0 ] || die "kernel build failed, see $out/build.log"
# A build from scratch gives the next estimate.
[ $full = 1 ] && cp "$out/.rkdapl-objects" "$RKDAPL_CACHE/build/objects-$flavour"
# Guests of another run may be loading modules from $out/modroot right now: install only when a
# module changed since the last install (or there is none), never by habit.
stamp=$out/modroot/.rkdapl-installed
if [ ! -f "$stamp" ] || [ -n "$(find "$out" -name '*.ko' -newer "$stamp" -print -quit)" ]; then
	make -s "${MAKEARGS[@]}" INSTALL_MOD_PATH="$out/modroot" INSTALL_MOD_STRIP=1 modules_install >&2
	touch "$stamp"
fi
log "kernel ready in $(( $(date +%s) - start )) s: $out"
echo "$out"
