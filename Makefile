# SPDX-License-Identifier: GPL-2.0
# rkdapl: a kDAPL-style RDMA provider in Rust for Linux.
#
#   make demo    set everything up, build, boot two QEMU guests and move verified bytes
#   make check   the same set-up, then the selftests (KTAP); ends with "N passed, N failed"
#                (T=<suite>[,<suite>] runs only those, in one boot: T=fuzz SEED=N replays a seed;
#                the suites: docs/testing.md)
#   make check-quick  the inner loop: KUnit, layout, badarg, loopback, netns, removal (~4 min)
#   make fuzz    the API fuzzer with new seeds for 30 minutes (FUZZ_MINUTES=), in one guest
#   make bench   rkdapl vs raw verbs vs perftest in one guest under QEMU -icount (deterministic:
#                virtual-time rates, instructions per post and per DTO), in out/bench-<ts>
#   make bench-wall  the indicative two-guest wall-clock matrix (TCG: figures move 2-3x)
#                (both on the release kernel, built if missing; FLAVOUR=debug to measure that)
#   make profile where a data-path run's instructions go, per kernel function (QEMU plugin)
#   make docs    C API reference (kernel-doc), the Rust layer's rustdoc and the guide, in out/docs
#   make patches the Rust RDMA layer as a patch series for Linux 7.3 (kernel::rdma), in out/patches
#
#   make KERNEL=debian           rkdapl.ko, the samples and the selftest modules for Debian's stock
#                                kernel 7.3.4+deb13-amd64 (trixie-backports), in out/debian
#   make install KERNEL=debian   the shipped modules (rkdapl, rkdblk, rkdblk_srv) built for it and
#                                installed by modules_install into /lib/modules/<kernel>/extra, the
#                                header, Module.symvers and the Rust metadata into
#                                /usr/src/rkdapl/<kernel>, depmod (DESTDIR=dir: under dir)
#   make uninstall KERNEL=debian remove them again
#   make dkms-src                the DKMS source tree, $(DESTDIR)/usr/src/rkdapl-<version>
#                                (then: dkms install rkdapl/<version>; docs/install.md)
#
# The packager's build is kbuild's: make -C $KDIR M=$PWD RKDAPL_MODULES=shipped (docs/install.md).
#
# FLAVOUR picks the guest kernel: debug (the default: KASAN, lockdep, kmemleak, ...), release (no
# debug checks, -O2) or kcsan (the debug kernel with KCSAN, the data-race detector, instead of
# KASAN): FLAVOUR=kcsan make check runs the single-guest suites and lists the races it finds.
#
# Everything is cached under $(RKDAPL_CACHE) (default ~/.cache/rkdapl); KDIR=/path uses an
# already built kernel tree instead of the Debian one.

SHELL := /bin/bash
export RKDAPL_CACHE ?= $(HOME)/.cache/rkdapl
FLAVOUR ?= debug
KERNEL ?=

# Inside Kbuild (make -C $KDIR M=...), only the Kbuild file matters.
ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

.PHONY: all deps kernel modules install uninstall dkms-src demo check check-quick fuzz bench bench-blk bench-wall profile docs patches clean
all: modules

deps:
	scripts/deps.sh

ifeq ($(KERNEL),debian)
kernel: deps
	scripts/debian.sh kernel >/dev/null

modules: deps
	scripts/debian.sh modules

install:
	scripts/debian.sh install

uninstall:
	scripts/debian.sh uninstall
else ifeq ($(KERNEL),)
kernel: deps
	scripts/kernel.sh $(FLAVOUR) >/dev/null

modules: deps
	scripts/modules.sh $(FLAVOUR) >/dev/null

install uninstall:
	@echo "make $@ is for a distribution kernel: make $@ KERNEL=debian (others: docs/install.md)" >&2; exit 1
else
$(error KERNEL=$(KERNEL): the kernels rkdapl builds for are the project's own (no KERNEL) and debian)
endif

DESTDIR ?=
dkms-src:
	scripts/dkms-src.sh "$(if $(DESTDIR),$(DESTDIR),/)"

demo: modules
	qemu/demo.sh

# check builds the modules itself (selftests/run.sh): Debian's stock kernel is set up beside
# the debug kernel's build, not after it.
check: deps
	T="$(T)" SEED="$(SEED)" KERNEL="$(KERNEL)" selftests/run.sh

# The inner loop (docs/testing.md): the suites most likely to catch a regression, in one guest.
QUICK := kunit,layout,badarg,loopback,netns,removal
check-quick: deps
	T="$(QUICK)" KERNEL="$(KERNEL)" selftests/run.sh

FUZZ_MINUTES ?= 30
fuzz: modules
	T=fuzz RKDAPL_FUZZ_MINUTES=$(FUZZ_MINUTES) RKDAPL_FUZZ_OPS=20000 selftests/run.sh

bench: deps
	scripts/bench.sh det
	scripts/bench.sh blk

bench-blk: deps
	scripts/bench.sh blk

bench-wall: deps
	scripts/bench.sh wall

profile: deps
	scripts/profile.sh

docs: deps
	scripts/docs.sh $(FLAVOUR)

patches: deps
	scripts/patches.sh

clean:
	rm -rf out
	find . -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' -o -name '.*.cmd' \
		-o -name 'modules.order' -o -name 'Module.symvers' -o -name '*.rmeta' -o -name '*_generated.h' | xargs rm -f
endif
