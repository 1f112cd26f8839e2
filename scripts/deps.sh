#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install the host packages and tools rkdapl needs. Idempotent: a second run
# only checks. Uses sudo only when not root.
set -euo pipefail
. "$(dirname "$0")/common.sh"

PKGS=(rustc-web rust-web-src clang-19 lld-19 llvm-19 libclang-19-dev
      qemu-system-x86 rdma-core ibverbs-utils rdmacm-utils perftest iproute2 fio nvme-cli
      flex bison bc libelf-dev libssl-dev cpio kmod busybox-static
      python3-pip python3-venv xz-utils make gcc libc6-dev pahole dwarves
      gnuplot-nox python3-docutils python3-markdown python3-matplotlib)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	log "installing Debian packages: ${missing[*]}"
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# bindgen-cli from the crate registry (kernel 7.3 wants >= 0.71.1).
if ! "$BINDGEN" --version >/dev/null 2>&1; then
	log "installing bindgen-cli with cargo"
	cargo install --locked --root "$TOOLS" bindgen-cli
fi

# virtme-ng (PyPI), in its own venv under the cache so the system python stays clean.
if ! "$VNG" --version >/dev/null 2>&1; then
	log "installing virtme-ng into $TOOLS/venv"
	python3 -m venv "$TOOLS/venv"
	"$TOOLS/venv/bin/pip" install -q "virtme-ng==1.42"
fi
log "host dependencies ready"
