# SPDX-License-Identifier: GPL-2.0
# Sourced by scripts/debian.sh (`scripts/debian.sh dkms-test`, make check's host suite
# `install`): rkdapl installed for Debian's stock kernel the ways a user or a packager does,
# in the trixie toolchain chroot, each result a TAP line on stdout ("ok - install: ...").
#
#   1. DKMS: `make dkms-src`'s tree as /usr/src/rkdapl-<version>, then dkms add, build (PRE_BUILD's
#      check first) and install for $KREL against the prepared tree (--kernelsourcedir), into a
#      copy of the stock kernel's /usr/lib/modules/$KREL (hard links); the installed modules,
#      their version, vermagic and dependencies, the exports against the tested build, the
#      consumer files, and a C and a Rust consumer built against those files alone;
#   2. the module root the stock guests modprobe from: out/debian/dkms/guest (the stock modules
#      and DKMS's updates/dkms), kept for selftests/run.sh;
#   3. dkms remove: nothing of rkdapl left;
#   4. make install / make uninstall (scripts/debian.sh install, uninstall) with a DESTDIR.
#
# /usr/src/rkdapl-<version>, /usr/src/rkdapl, /var/lib/dkms and /usr/lib/modules/$KREL of the
# chroot are bound from out/debian/dkms/root for these commands only: the shared chroot keeps
# none of it. The chroot gets DKMS itself once, with apt (DKMS_TOOLS), recorded apart from the
# build toolchain.

DKMS_TOOLS=(dkms)

# dkms_tools: DKMS in the chroot (apt, once; its version recorded in $C/.rkdapl-dkms).
dkms_tools() {
	chroot_packages "${DKMS_TOOLS[*]}" dkms "${DKMS_TOOLS[@]}"
}

# tap OK NAME [REASON]: one result line.
tap() {
	if [ "$1" = 0 ]; then echo "ok - install: $2"; else echo "not ok - install: $2 # ${3:-failed}"; fi
}

dkms_test() {
	local w=$top/out/debian/dkms r ver src arch=x86_64 t0 rc mods want got lib dk cons g f
	# Each check below is a TAP line, pass or fail: no exit on the first failure.
	set +e
	kernel >/dev/null || die "the stock kernel's set-up failed"

	exec 9>"$RKDAPL_CACHE/debian.lock"
	flock -n 9 || { log "another run holds $RKDAPL_CACHE/debian.lock (a build for the stock kernel), waiting"; flock 9; }
	dkms_tools
	ver=$("$top/scripts/dkms-src.sh" version)
	r=$w/root
	lib=$r/lib/modules/$KREL
	dk=$r/var/lib/dkms/rkdapl/$ver/$KREL/$arch/module
	rm -rf "$w"
	mkdir -p "$r/usr/src" "$r/var/lib/dkms" "$r/lib/modules"
	src=$("$top/scripts/dkms-src.sh" "$r") || die "scripts/dkms-src.sh failed"
	cp -al "$D/img/usr/lib/modules/$KREL" "$lib" 2>/dev/null || cp -a "$D/img/usr/lib/modules/$KREL" "$lib"
	rm -f "$lib/build" "$lib/source"
	mkdir -p "$r/usr/src/rkdapl"
	# (/usr/src itself stays the chroot's: Debian's rust-src lives there.)
	local binds="$src=/usr/src/rkdapl-$ver $r/usr/src/rkdapl=/usr/src/rkdapl"
	binds+=" $r/var/lib/dkms=/var/lib/dkms $lib=/usr/lib/modules/$KREL"

	# 1. dkms add, build, install.
	t0=$(date +%s) rc=0
	log "install: dkms add, build and install rkdapl/$ver for $KREL (log: $w/dkms.log)"
	for f in "add rkdapl/$ver" "build rkdapl/$ver -k $KREL --kernelsourcedir $K" \
		"install rkdapl/$ver -k $KREL --kernelsourcedir $K"; do
		echo "# dkms $f" >> "$w/dkms.log"
		# shellcheck disable=SC2086
		BINDS=$binds in_chroot dkms $f >> "$w/dkms.log" 2>&1 || { rc=$?; break; }
	done
	[ $rc = 0 ] || cat "$r"/var/lib/dkms/rkdapl/"$ver"/build/make.log >> "$w/dkms.log" 2>/dev/null
	tap $rc "dkms add, build (PRE_BUILD's check passed) and install rkdapl/$ver for $KREL, $(( $(date +%s) - t0 )) s" \
		"dkms $f: exit $rc, see $w/dkms.log"
	got=$(BINDS=$binds in_chroot dkms status rkdapl 2>&1)
	[[ $got == *"rkdapl/$ver, $KREL, $arch: installed"* ]]
	tap $? "dkms status: rkdapl/$ver, $KREL, $arch: installed" "dkms status: ${got//$'\n'/ | }"

	# The installed modules: the three shipped ones in updates/dkms, nothing else of rkdapl.
	mods=$(cd "$lib" && find updates -name '*.ko*' 2>/dev/null | sort | tr '\n' ' ')
	want="updates/dkms/rkdapl.ko.xz updates/dkms/rkdblk.ko.xz updates/dkms/rkdblk_srv.ko.xz "
	[ "$mods" = "$want" ]
	tap $? "DKMS installed rkdapl, rkdblk and rkdblk_srv (only those) into updates/dkms" "installed: ${mods:-none}"
	got=$(modinfo -b "$r" -k "$KREL" -F version rkdapl 2>&1)-$(modinfo -b "$r" -k "$KREL" -F vermagic rkdapl 2>&1)
	[ "$got" = "$ver-$KREL SMP preempt mod_unload " ]
	tap $? "the installed rkdapl.ko is version $ver (RKDAPL_VERSION, dkms.conf's PACKAGE_VERSION), vermagic $KREL" \
		"modinfo: version-vermagic '$got'"
	got=$(modprobe -d "$r" -S "$KREL" --show-depends rkdapl 2>&1)
	[[ $(tail -n 1 <<< "$got") == "insmod $lib/updates/dkms/rkdapl.ko.xz"* ]] &&
		grep -q '/kernel/drivers/infiniband/core/rdma_cm.ko' <<< "$got"
	tap $? "depmod: modprobe rkdapl resolves to updates/dkms/rkdapl.ko.xz after ib_core and rdma_cm of the stock kernel" \
		"modprobe --show-depends: ${got//$'\n'/ | }"

	# DKMS's build exports what the build make check's suites load exports (the stock guests'
	# consumers, built in out/debian/build, link to the installed rkdapl.ko by these names).
	local exp_dkms exp_test
	exp_dkms=$(awk -F'\t' '$3 ~ /rkdapl$/ { print $2, $4, $5 }' "$dk/Module.symvers" 2>/dev/null | sort)
	if [ -f "$top/out/debian/build/Module.symvers" ]; then
		exp_test=$(awk -F'\t' '$3 ~ /rkdapl$/ { print $2, $4, $5 }' "$top/out/debian/build/Module.symvers" | sort)
		[ -n "$exp_dkms" ] && [ "$exp_dkms" = "$exp_test" ]
		tap $? "DKMS's rkdapl.ko exports the same $(wc -l <<< "$exp_dkms") symbols as the tested build (names, GPL, namespace RKDAPL)" \
			"$(diff <(echo "$exp_test") <(echo "$exp_dkms") | grep -c '^[<>]') differ"
	else
		echo "ok - install: DKMS's rkdapl.ko exports the same symbols as the tested build # SKIP no out/debian/build (scripts/debian.sh modules)"
	fi

	# The consumer files, and consumers built against them alone.
	cons=$r/usr/src/rkdapl/$KREL
	[ -f "$cons/include/rkdapl.h" ] && cmp -s "$cons/Module.symvers" "$dk/Module.symvers" &&
		[ -s "$cons/librkdapl.rmeta" ] && cmp -s "$cons/librkdapl.rmeta" "$dk/librkdapl.rmeta"
	tap $? "consumer files in /usr/src/rkdapl/$KREL: include/rkdapl.h, the installed build's Module.symvers and librkdapl.rmeta" \
		"$(ls -R "$cons" 2>&1 | tr '\n' ' ')"
	dkms_consumers "$w/consumer" "$binds"

	# 2. The stock guests' module root: this install, kept (dkms remove below deletes it).
	g=$w/guest/lib/modules
	mkdir -p "$g"
	cp -al "$lib" "$g/$KREL" 2>/dev/null || cp -a "$lib" "$g/$KREL"

	# 3. dkms remove.
	rc=0
	BINDS=$binds in_chroot dkms remove "rkdapl/$ver" --all >> "$w/dkms.log" 2>&1 || rc=$?
	mods=$(cd "$lib" && find . -name 'rkdapl*' -o -name 'rkdblk*' | tr '\n' ' ')
	got=$(BINDS=$binds in_chroot dkms status rkdapl 2>&1)
	[ $rc = 0 ] && [ -z "$mods" ] && [ ! -e "$cons" ] && [ -z "$got" ] &&
		! grep -q rkdapl "$lib/modules.dep"
	tap $? "dkms remove rkdapl/$ver --all: no module, no /usr/src/rkdapl/$KREL, nothing in modules.dep or dkms status" \
		"exit $rc; left: ${mods}$([ -e "$cons" ] && echo "$cons ")${got//$'\n'/ | }"

	# 4. make install / make uninstall, into a DESTDIR.
	flock -u 9
	# The DESTDIR is laid out as a Debian root (merged /usr: lib is a link to usr/lib) with the
	# stock kernel's modules (hard links), so that depmod resolves rkdapl's.
	local dd=$w/destdir
	mkdir -p "$dd/usr/lib/modules"
	ln -s usr/lib "$dd/lib"
	cp -al "$D/img/usr/lib/modules/$KREL" "$dd/usr/lib/modules/" 2>/dev/null ||
		cp -a "$D/img/usr/lib/modules/$KREL" "$dd/usr/lib/modules/"
	t0=$(date +%s) rc=0
	DESTDIR=$dd install_modules >> "$w/install.log" 2>&1 || rc=$?
	mods=$(cd "$dd" 2>/dev/null && find . -name 'rkd*.ko*' | sort | tr '\n' ' ')
	[ $rc = 0 ] && [[ $mods == *"/$KREL/extra/rkdapl.ko.xz ./"*"/$KREL/extra/rkdblk.ko.xz ./"*"/$KREL/extra/rkdblk_srv.ko.xz " ]] &&
		[ "$(wc -w <<< "$mods")" = 3 ] && [ -f "$dd/usr/src/rkdapl/$KREL/librkdapl.rmeta" ] &&
		grep -q '^extra/rkdapl.ko.xz: .*kernel/drivers/infiniband/core/rdma_cm.ko' "$dd/lib/modules/$KREL/modules.dep"
	tap $? "make install KERNEL=debian DESTDIR=... (merged /usr): modules_install put rkdapl, rkdblk, rkdblk_srv (only those) in extra/, depmod, consumer files; $(( $(date +%s) - t0 )) s" \
		"exit $rc (see $w/install.log); installed: ${mods:-none}"
	rc=0
	DESTDIR=$dd uninstall_modules >> "$w/install.log" 2>&1 || rc=$?
	mods=$(cd "$dd" && find . -name 'rkd*.ko*' -o -path '*/usr/src/rkdapl*' | tr '\n' ' ')
	[ $rc = 0 ] && [ -z "$mods" ] && ! grep -qE "rkdapl|rkdblk" "$dd/lib/modules/$KREL/modules.dep"
	tap $? "make uninstall KERNEL=debian DESTDIR=...: no module, no consumer files, nothing in modules.dep" \
		"exit $rc; left: $mods"
	[ -f "$g/$KREL/updates/dkms/rkdapl.ko.xz" ] && echo "# install: module root for the stock guests: $w/guest" >&2
	return 0
}

# dkms_consumers DIR BINDS: the first consumers of docs/getting-started.md (samples/first/c and
# samples/first/rust: their Kbuild files and sources as a user copies them), built as
# out-of-tree modules against the prepared kernel tree and /usr/src/rkdapl/$KREL alone
# (RKDAPL=/usr/src/rkdapl/$KREL: -I its include/, --extern rkdapl from its librkdapl.rmeta,
# KBUILD_EXTRA_SYMBOLS its Module.symvers).
dkms_consumers() {
	local d=$1 rc=0 dep x
	rm -rf "$d"
	mkdir -p "$d/c" "$d/rust"
	cp "$top/samples/first/c/Kbuild" "$top/samples/first/c/rkdapl_first.c" "$d/c/"
	cp "$top/samples/first/rust/Kbuild" "$top/samples/first/rust/rkdapl_first_rust.rs" "$d/rust/"
	for x in c rust; do
		MOUNT_M=$d BINDS=$2 in_chroot "${MK[@]}" -s M=/build/m/$x RKDAPL=/usr/src/rkdapl/$KREL \
			KBUILD_EXTRA_SYMBOLS=/usr/src/rkdapl/$KREL/Module.symvers modules >> "$d/build.log" 2>&1 || rc=$?
	done
	local c r
	c=$(modinfo -F depends "$d/c/rkdapl_first.ko" 2>&1)
	r=$(modinfo -F depends "$d/rust/rkdapl_first_rust.ko" 2>&1)
	dep="$c; $r"
	[ $rc = 0 ] && [[ ,$c, == *,rkdapl,* ]] && [[ ,$r, == *,rkdapl,* ]]
	tap $? "the first consumers (samples/first/c and samples/first/rust) build against /usr/src/rkdapl/$KREL alone, and depend on rkdapl" \
		"make exit $rc, depends '$dep' (see $d/build.log)"
}
