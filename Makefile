# rkdapl: a kDAPL-style RDMA provider in Rust for Linux.
#
#   make demo    set everything up, build, boot two QEMU guests and move verified bytes
#   make check   the same set-up, then the selftests; ends with "N passed, N failed"
#   make bench   rkdapl vs raw verbs vs perftest, bandwidth and latency, in out/bench-<ts>
#                (release kernel if built, else debug; FLAVOUR=release|debug to choose)
#   make docs    C API reference (kernel-doc), the Rust layer's rustdoc and the guide, in out/docs
#
# Everything is cached under $(RKDAPL_CACHE) (default ~/.cache/rkdapl); KDIR=/path uses an
# already built kernel tree instead of the Debian one.

SHELL := /bin/bash
export RKDAPL_CACHE ?= $(HOME)/.cache/rkdapl
FLAVOUR ?= debug

# Inside Kbuild (make -C $KDIR M=...), only the Kbuild file matters.
ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

.PHONY: all deps kernel modules demo check bench docs clean
all: modules

deps:
	scripts/deps.sh

kernel: deps
	scripts/kernel.sh $(FLAVOUR) >/dev/null

modules: deps
	scripts/modules.sh $(FLAVOUR) >/dev/null

demo: modules
	qemu/demo.sh

check: modules
	selftests/run.sh

bench: deps
	scripts/bench.sh

docs: deps
	scripts/docs.sh $(FLAVOUR)

clean:
	rm -rf out
	find . -name '*.o' -o -name '*.ko' -o -name '*.mod' -o -name '*.mod.c' -o -name '.*.cmd' \
		-o -name 'modules.order' -o -name 'Module.symvers' -o -name '*.rmeta' -o -name '*_generated.h' | xargs rm -f
endif
