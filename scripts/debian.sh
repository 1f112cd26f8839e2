#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rkdapl for Debian's stock kernel: the pinned linux-image 7.3.4+deb13-amd64 of trixie-backports.
#
#   scripts/debian.sh kernel          fetch the pinned .debs, make the trixie toolchain chroot and
#                                     the prepared source tree (modules_prepare); print the cache dir
#   scripts/debian.sh modules         build rkdapl.ko, the samples and the selftest modules of this
#                                     worktree for that kernel, into out/debian/ (prints that dir)
#   scripts/debian.sh install         build the shipped modules (rkdapl, rkdblk, rkdblk_srv) from
#                                     the tree `make dkms-src` writes, install them with kbuild's
#                                     modules_install into /lib/modules/$KREL/extra, the consumer
#                                     files into /usr/src/rkdapl/$KREL, depmod (on that kernel, at the
#                                     pinned version; FORCE=1 skips the checks; DESTDIR=dir installs
#                                     under dir instead, without them)
#   scripts/debian.sh uninstall       remove what install installed, depmod
#   scripts/debian.sh dkms-test       make check's install suite: DKMS in the chroot builds and
#                                     installs rkdapl for $KREL, the results checked, and make
#                                     install/uninstall into a DESTDIR; TAP lines on stdout. Leaves
#                                     out/debian/dkms/guest, a module root with the stock modules
#                                     and DKMS's, for the stock guests' modprobe
#   scripts/debian.sh make DIR [TARGET...]
#                                     an rkdapl consumer's own Makefile in DIR (samples/first/c,
#                                     samples/first/rust), run in the chroot for that kernel:
#                                     make KERNEL=debian KDIR=<the prepared tree> RKDAPL=<out/debian/build>
#
# Debian built this kernel with trixie's rustc 1.85.1. A Rust module must be compiled by the same
# rustc build (the `core` and `kernel` crate hashes in the kernel's Rust symbol names depend on the
# exact compiler), so the toolchain lives in a trixie chroot under the cache, made with trixie's
# own debootstrap; nothing of the host changes. The kernel's Rust metadata (rust/*.rmeta) is not in
# any package: Debian's linux-source with the .config of linux-headers is prepared
# (`make modules_prepare`), and Debian's Module.symvers and vmlinux replace the local ones so that
# modpost checks against the real exports and module BTF matches the kernel's.
#
# The kernel has no MODVERSIONS: a module must match its exact build. So the package version is
# pinned below and the downloaded .debs stay in the cache (trixie-backports keeps only the newest
# version); when the pinned version can no longer be fetched, or the chroot's rustc is not the one
# the kernel was built with, this script says so and stops.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)

KREL=7.3.4+deb13-amd64      # uname -r of the stock kernel
PKGVER=7.3.4-1~bpo13+1      # the Debian package version it comes from
KSRC=7.3                    # linux-source-$KSRC
PKGS=(linux-binary-$KREL linux-modules-$KREL linux-headers-$KREL linux-headers-${KREL%-amd64}-common
      linux-source-$KSRC)
TOOLCHAIN=(make gcc-14 gcc libc6-dev bc bison flex libelf-dev libssl-dev dwarves python3 xz-utils
	kmod cpio perl binutils openssl rustc rust-src rustfmt bindgen libclang-19-dev clang-19)

D=$RKDAPL_CACHE/debian/$KREL
C=$D/trixie                 # the chroot
K=/build/linux              # the prepared tree, inside the chroot
MK=(make -C $K ARCH=x86 CROSS_COMPILE=x86_64-linux-gnu- CC=x86_64-linux-gnu-gcc-14 HOSTCC=gcc-14
	KERNELRELEASE=$KREL)
mirror=$(debian_mirror)

# Run a command in the chroot with /proc and /dev mounted in a private mount namespace (the
# mounts vanish with the command), the module build directory MOUNT_M bound to /build/m and a
# consumer's directory MOUNT_X to /build/x. BINDS, a space-separated list of HOSTDIR=CHROOTDIR,
# binds more directories (the DKMS test's /usr/src, /var/lib/dkms and /usr/lib/modules/$KREL:
# nothing of it stays in the shared chroot).
in_chroot() {
	unshare -m --propagation private sh -euc '
		C=$1; M=$2; X=$3; B=$4; shift 4
		mount -t proc proc "$C/proc"; mount --bind /dev "$C/dev"
		if [ -n "$M" ]; then mkdir -p "$C/build/m"; mount --bind "$M" "$C/build/m"; fi
		if [ -n "$X" ]; then mkdir -p "$C/build/x"; mount --bind "$X" "$C/build/x"; fi
		for b in $B; do mkdir -p "$C${b#*=}"; mount --bind "${b%%=*}" "$C${b#*=}"; done
		exec chroot "$C" /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
			DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"' sh "$C" "${MOUNT_M:-}" "${MOUNT_X:-}" "${BINDS:-}" "$@"
}

# --- the pinned packages ----------------------------------------------------------------------
fetch_debs() {
	local apt=$D/apt p missing=()
	mkdir -p "$D/debs"
	# The debug kernel's source (scripts/kernel-source.sh) is the same package: no second download.
	for p in "$RKDAPL_CACHE"/apt/linux-source-${KSRC}_${PKGVER}_all.deb; do
		{ [ -e "$p" ] && [ ! -e "$D/debs/${p##*/}" ] && ln "$p" "$D/debs/"; } 2>/dev/null || true
	done
	for p in "${PKGS[@]}"; do
		compgen -G "$D/debs/${p}_${PKGVER//\~/%7e}_*.deb" >/dev/null ||
			compgen -G "$D/debs/${p}_${PKGVER}_*.deb" >/dev/null || missing+=("$p=$PKGVER")
	done
	compgen -G "$D/debs/debootstrap_*.deb" >/dev/null || missing+=(debootstrap)
	[ ${#missing[@]} = 0 ] && return 0
	apt_private "$apt"
	local opts=("${APT_OPTS[@]}")
	printf 'deb %s trixie main\ndeb %s trixie-backports main\n' "$mirror" "$mirror" > "$apt/sources.list"
	log "downloading ${missing[*]} (private apt state in $apt)"
	apt-get -q "${opts[@]}" update >&2
	(cd "$D/debs" && apt-get -q "${opts[@]}" download "${missing[@]}" >&2) || die \
		"cannot download ${missing[*]}: Debian no longer offers the pinned $PKGVER (trixie-backports
		keeps only the newest build). Modules for $KREL need that exact build: copy its .debs into
		$D/debs, or move the pin in scripts/debian.sh to the kernel Debian now ships."
}

unpack_debs() {
	[ -f "$D/img/.ok" ] && return 0
	log "unpacking the stock kernel and its headers into $D/img"
	rm -rf "$D/img"; mkdir -p "$D/img"
	local p
	for p in linux-binary-$KREL linux-modules-$KREL linux-headers-$KREL linux-headers-${KREL%-amd64}-common; do
		dpkg-deb -x "$D"/debs/"$p"_*.deb "$D/img"
	done
	# Debian's packages leave modules.dep to the installer; the guests' modprobe -d needs it.
	depmod -b "$D/img/usr" "$KREL" 2>/dev/null
	touch "$D/img/.ok"
}

# --- the toolchain chroot ---------------------------------------------------------------------
make_chroot() {
	if [ ! -f "$C/.rkdapl-debootstrap" ]; then
		log "creating the trixie toolchain chroot $C (debootstrap: ~1-3 min)"
		rm -rf "$C" "$D/dbs"; mkdir -p "$D/dbs"
		dpkg-deb -x "$D"/debs/debootstrap_*.deb "$D/dbs"
		DEBOOTSTRAP_DIR=$D/dbs/usr/share/debootstrap "$D/dbs/usr/sbin/debootstrap" --variant=minbase \
			--keyring=/usr/share/keyrings/debian-archive-keyring.gpg trixie "$C" "$mirror" \
			> "$D/debootstrap.log" 2>&1 || die "debootstrap failed, see $D/debootstrap.log"
		printf 'deb %s trixie main\n' "$mirror" > "$C/etc/apt/sources.list"
		touch "$C/.rkdapl-debootstrap"
	fi
	chroot_packages "the toolchain (apt: ~1-3 min)" toolchain "${TOOLCHAIN[@]}"
}

# chroot_packages WHAT NAME PKG...: PKG installed in the chroot with apt, once. The installed
# list (package and version) is recorded in $C/.rkdapl-NAME; a changed list is installed anew.
chroot_packages() {
	local what=$1 name=$2
	shift 2
	[ "$(cut -f1 "$C/.rkdapl-$name" 2>/dev/null | sed 's/:amd64$//' | sort)" = \
		"$(printf '%s\n' "$@" | sort)" ] && return 0
	log "installing $what in the chroot"
	cp /etc/resolv.conf "$C/etc/resolv.conf"
	{ in_chroot apt-get update -q && in_chroot apt-get install -y -q --no-install-recommends "$@"
	} > "$D/apt-$name.log" 2>&1 || die "installing $what in the chroot failed, see $D/apt-$name.log"
	in_chroot dpkg-query -W "$@" > "$C/.rkdapl-$name"
}

# The Rust compiler must be the very build the kernel was made with (its version text is in the
# kernel's .config): otherwise the symbol hashes differ and the module cannot link.
check_rustc() {
	local want have
	want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"$/\1/p' "$D/img/usr/src/linux-headers-$KREL/.config")
	have=$(in_chroot rustc --version)
	[ "$want" = "$have" ] || die "the kernel $KREL was built with '$want', the chroot has '$have':
		Rust modules for it cannot be built with another compiler build (trixie's rustc changed?)"
}

# --- the prepared tree ------------------------------------------------------------------------
prepare_tree() {
	local hdr=$D/img/usr/src/linux-headers-$KREL
	[ -f "$C$K/.rkdapl-prepared" ] && return 0
	log "preparing Debian's linux-source-$KSRC with the stock .config (modules_prepare: ~2-5 min)"
	rm -rf "$C$K" "$C/build/linux-source-$KSRC"; mkdir -p "$C/build"
	dpkg-deb --fsys-tarfile "$D"/debs/linux-source-${KSRC}_*.deb |
		tar -xO "./usr/src/linux-source-$KSRC.tar.xz" | tar -xJ -C "$C/build"
	mv "$C/build/linux-source-$KSRC" "$C$K"
	cp "$hdr/.config" "$C$K/.config"
	in_chroot "${MK[@]}" -s olddefconfig >&2
	# The .config records the toolchain (CONFIG_CC_VERSION_TEXT, CONFIG_RUSTC_VERSION_TEXT,
	# CONFIG_BINDGEN_VERSION_TEXT, CONFIG_PAHOLE_VERSION, ...) and what it can do: olddefconfig
	# must leave it as Debian built it.
	if ! cmp -s <(grep -v '^#' "$hdr/.config") <(grep -v '^#' "$C$K/.config"); then
		diff <(grep -v '^#' "$hdr/.config") <(grep -v '^#' "$C$K/.config") | head -20 >&2
		rm -f "$C$K/.config"
		die "olddefconfig changed Debian's .config (above: < Debian's, > here): the chroot's
		toolchain or the source is not what $KREL was built with"
	fi
	in_chroot "${MK[@]}" -s rustavailable >&2
	in_chroot "${MK[@]}" -j"$(( $(nproc) + 1 ))" modules_prepare > "$D/modules_prepare.log" 2>&1 ||
		die "modules_prepare failed, see $D/modules_prepare.log"
	cp "$hdr/Module.symvers" "$C$K/Module.symvers"
	cp "$hdr/vmlinux" "$C$K/vmlinux" 2>/dev/null || true
	touch "$C$K/.rkdapl-prepared"
}

kernel() {
	fetch_debs
	unpack_debs
	make_chroot
	check_rustc
	prepare_tree
	echo "$D"
}

# --- this worktree's modules ------------------------------------------------------------------
modules() {
	kernel >/dev/null
	exec 9>"$RKDAPL_CACHE/debian.lock"
	flock -n 9 || { log "another run holds $RKDAPL_CACHE/debian.lock (a build for the stock kernel), waiting"; flock 9; }
	# The build happens in a copy of the worktree's files (its own objects, next to the sources
	# as Kbuild wants them), so the debug kernel's objects in the worktree stay untouched.
	local m=$top/out/debian/build out=$top/out/debian
	mkdir -p "$m"
	(cd "$top" && git ls-files -co --exclude-standard -- Kbuild Makefile include rust samples selftests) |
		tar -cf - -T - | tar -xf - -C "$m"
	local d flags=()
	for d in . samples selftests/kmod selftests/layout; do
		[ -f "$m/$d/Kbuild" ] || continue
		log "building $([ "$d" = . ] && echo rkdapl.ko || echo "$d") for $KREL"
		[ "$d" = . ] || flags=(KBUILD_EXTRA_SYMBOLS=/build/m/Module.symvers)
		MOUNT_M=$m in_chroot "${MK[@]}" -s M=/build/m/$d "${flags[@]}" modules >&2 ||
			die "building $d for $KREL failed"
	done
	# The modules a user installs (not the layout check's rkdapl_layout.ko, which does nothing,
	# nor the first consumers of samples/first/, which `make check` builds with their own
	# Makefiles: scripts/debian.sh make).
	find "$m" -path "$m/samples/first" -prune -o -name '*.ko' ! -name rkdapl_layout.ko \
		-exec cp -t "$out" {} +
	echo "$out"
}

# A consumer built out of tree for the stock kernel, as a user builds it: its own Makefile, run
# in the chroot (gcc-14, trixie's rustc) with KERNEL=debian, the prepared tree as KDIR and
# rkdapl's build for the kernel (out/debian/build: Module.symvers, include/, the crate metadata
# rust/rkdapl/librkdapl.rmeta) as RKDAPL. The objects land in DIR.
ext_make() {
	local dir
	dir=$(cd "${1:?usage: $0 make DIR [TARGET...]}" && pwd) || die "no directory $1"
	shift
	[ -f "$top/out/debian/build/Module.symvers" ] ||
		die "no rkdapl build for $KREL in out/debian/build: run make KERNEL=debian first"
	kernel >/dev/null
	exec 9>"$RKDAPL_CACHE/debian.lock"
	flock -n 9 || { log "another run holds $RKDAPL_CACHE/debian.lock (a build for the stock kernel), waiting"; flock 9; }
	log "make $* in $dir for $KREL (in the toolchain chroot)"
	MOUNT_M=$top/out/debian/build MOUNT_X=$dir in_chroot make -s -C /build/x KERNEL=debian \
		KDIR=$K RKDAPL=/build/m "$@" >&2 || die "make in $dir failed"
	local ko
	ko=$(cd "$dir" && find . -maxdepth 1 -name '*.ko' | sort | tr '\n' ' ')
	log "done; modules in $dir: ${ko:-none}"
}

# The shipped modules, built by kbuild from the tree DKMS gets (scripts/dkms-src.sh: what the
# packager's `make -C $KDIR M=$PWD RKDAPL_MODULES=shipped` sees), in out/debian/ship; the
# source tree's path on stdout.
ship_build() {
	local src
	src=$("$top/scripts/dkms-src.sh" "$top/out/debian/ship")
	log "building rkdapl.ko, rkdblk.ko, rkdblk_srv.ko for $KREL (RKDAPL_MODULES=shipped)"
	MOUNT_M=$src in_chroot "${MK[@]}" -s -j"$(( $(nproc) + 1 ))" M=/build/m RKDAPL_MODULES=shipped modules >&2 ||
		die "building the shipped modules for $KREL failed"
	echo "$src"
}

# The root install and uninstall work on: DESTDIR, or the system.
install_root() {
	local r=${DESTDIR:-/}
	[ "$r" = / ] && return 0
	mkdir -p "$r"
	(cd "$r" && pwd)
}

install_modules() {
	local root src stage m n f
	root=$(install_root)
	if [ -z "$root" ]; then
		local run
		run=$(uname -r)
		[ -d "/lib/modules/$KREL" ] || die "/lib/modules/$KREL does not exist: install linux-image-$KREL ($PKGVER) first"
		[ "$run" = "$KREL" ] || [ "${FORCE:-0}" = 1 ] || die "the running kernel is $run, these modules are for $KREL
		only: boot $KREL ($PKGVER) first, or FORCE=1 to install them for it anyway"
		[ "$(dpkg-query -W -f='${Version}' "linux-image-$KREL" 2>/dev/null)" = "$PKGVER" ] || [ "${FORCE:-0}" = 1 ] ||
			die "linux-image-$KREL is not installed at version $PKGVER, the build these modules match
		(no MODVERSIONS: another build of the same release would not load them); FORCE=1 to install anyway"
	fi
	kernel >/dev/null
	exec 9>"$RKDAPL_CACHE/debian.lock"
	flock -n 9 || { log "another run holds $RKDAPL_CACHE/debian.lock (a build for the stock kernel), waiting"; flock 9; }
	src=$(ship_build)
	# kbuild's modules_install (compressed as the kernel's own, signing skipped without the
	# kernel's key; no System.map, so no depmod) into a staging root, then copied.
	stage=$top/out/debian/ship-root
	rm -rf "$stage"
	mkdir -p "$stage"
	MOUNT_M=$src BINDS="$stage=/build/dest" in_chroot "${MK[@]}" -s M=/build/m RKDAPL_MODULES=shipped \
		INSTALL_MOD_PATH=/build/dest INSTALL_MOD_DIR=extra modules_install >&2 ||
		die "modules_install failed"
	m=$(cd "$stage" && find . -path "*/modules/$KREL/extra/*.ko*" | sort)
	n=$(wc -l <<< "$m")
	[ "$n" = 3 ] || die "modules_install installed $n modules, not 3: $m"
	# File by file: on a merged-/usr system /lib is a link, which cp -r of a lib/ would not follow.
	for f in $m; do
		$SUDO install -D -m 644 "$stage/$f" "$root/$f"
	done
	(cd "$src" && mkdir -p "$top/out/debian/ship-files" &&
		cp Module.symvers rust/rkdapl/librkdapl.rmeta "$top/out/debian/ship-files/" &&
		$SUDO env DESTDIR="$root" scripts/devfiles.sh install "$KREL" "$top/out/debian/ship-files") >&2
	# depmod where the kernel is installed (a package's staging DESTDIR leaves it to the package).
	if [ -z "$root" ]; then
		$SUDO depmod "$KREL"
	elif [ -e "$root/lib/modules/$KREL/modules.dep" ]; then
		depmod -b "$root" "$KREL"
	fi
	log "installed ${m//$'\n'/, } under ${root:-/}, consumer files in ${root}/usr/src/rkdapl/$KREL"
}

uninstall_modules() {
	local root d f n=0
	root=$(install_root)
	for d in "$root/lib/modules/$KREL/extra" "$root/usr/lib/modules/$KREL/extra"; do
		for f in "$d"/{rkdapl,rkdblk,rkdblk_srv}.ko{,.xz,.gz,.zst}; do
			[ -e "$f" ] || continue
			$SUDO rm -f "$f"
			n=$((n + 1))
		done
		[ -d "$d" ] && $SUDO rmdir --ignore-fail-on-non-empty "$d"
	done
	$SUDO env DESTDIR="$root" "$top/scripts/devfiles.sh" remove "$KREL"
	if [ -e "$root/lib/modules/$KREL/modules.dep" ]; then
		if [ -z "$root" ]; then $SUDO depmod "$KREL"; else depmod -b "$root" "$KREL"; fi
	fi
	log "removed $n modules of rkdapl for $KREL and ${root}/usr/src/rkdapl/$KREL"
}

case "${1:-}" in
kernel) kernel ;;
modules) modules ;;
install) install_modules ;;
uninstall) uninstall_modules ;;
dkms-test) . "$top/scripts/dkms-test.sh"; dkms_test ;;
make) shift; ext_make "$@" ;;
*) die "usage: $0 kernel|modules|install|uninstall|dkms-test|make DIR [TARGET...]" ;;
esac
