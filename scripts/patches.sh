#!/bin/bash
# make patches: the Rust RDMA layer in its upstream form, a `git am`-able patch series that adds
# `kernel::rdma` to Linux $KVER, written to out/patches/ (0000-cover-letter.patch, 0001-...).
#
#   scripts/patches.sh [outdir]
#
# The series is generated from the layer's one source, the files rkdapl.ko compiles in:
# rust/kernel/rdma.rs, rust/kernel/rdma/**, rust/helpers/rdma.c, and the #include lines of
# rust/rkdapl/rdma_bindings.h. A throw-away git repository holds the pristine files the series
# changes (MAINTAINERS, rust/bindings/bindings_helper.h, rust/helpers/helpers.c,
# rust/kernel/lib.rs, from Debian's linux-source-$KVER); each patch below is a commit on it and
# `git format-patch` writes them. The split is listed in SERIES; rust/kernel/rdma.rs grows with
# it (a patch declares only its own modules and keeps only the docs that link to them), and
# crate-internal items only a later patch uses carry #[expect(dead_code)] until then
# (UNUSED_UNTIL), so that every patch builds without a warning. The script stops if a layer file is in no patch, or if the last patch does not reproduce the
# source byte for byte. Dates are those of the last commit that touched the layer or this
# script, so the output is reproducible. Every patch must be clean under the kernel's
# `scripts/checkpatch.pl --strict` (0 errors, warnings and checks); the script stops otherwise
# (RKDAPL_PATCHES_CHECKPATCH=0 skips that, for selftests/patches.sh, which checks it itself).
# selftests/patches.sh applies the series to the pristine tree with `git am` and builds it.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
outdir=${1:-$top/out/patches}
command -v git > /dev/null || die "git is needed to write the series (apt-get install git)"
command -v python3 > /dev/null || die "python3 is needed to write the series"

pristine=$("$top/scripts/kernel-source.sh")
debver=$(sed -E 's/^linux-source-[^_]*_([^_]*)_.*/\1/' "$pristine/.rkdapl-unpacked")

# --- who and when ----------------------------------------------------------------------------
name=$(git -C "$top" config user.name 2> /dev/null || true)
email=$(git -C "$top" config user.email 2> /dev/null || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	name="rkdapl developers"
	email="rkdapl-devel@lists.invalid"
fi
layer_paths=(rust/kernel/rdma.rs rust/kernel/rdma rust/helpers/rdma.c rust/rkdapl/rdma_bindings.h
	scripts/patches.sh)
when=$(git -C "$top" log -1 --format=%ad --date=raw -- "${layer_paths[@]}" 2> /dev/null || true)
when=${when:-$(date +'%s +0000')}

# --- the split ---------------------------------------------------------------------------------
# One entry per patch: "files (under rust/, new in this patch)|modules rust/kernel/rdma.rs
# declares after it|items" where items=1 means the patch brings rdma.rs's own items (Access).
# The commit messages are msg_<n> below. mr, qp and wr refer to each other (an Sge is made by a
# DmaRegion, a REG_MR work request carries an FrMr, a pool posts to a Qp, which holds its pools)
# and do not build apart, so they share patch 4.
SERIES=(
	"helpers/rdma.c||0"
	"kernel/rdma.rs kernel/rdma/client.rs kernel/rdma/defer.rs kernel/rdma/device.rs kernel/rdma/event.rs|client defer device event|0"
	"kernel/rdma/pd.rs kernel/rdma/cq.rs kernel/rdma/cq/events.rs|client cq defer device event pd|0"
	"kernel/rdma/mr.rs kernel/rdma/mr/lent.rs kernel/rdma/mr/owned.rs kernel/rdma/mr/segs.rs kernel/rdma/qp.rs kernel/rdma/wr.rs kernel/rdma/wr/read_mr.rs|client cq defer device event mr pd qp wr|1"
	"kernel/rdma/cm.rs kernel/rdma/cm/create_qp.rs kernel/rdma/cm/event.rs kernel/rdma/cm/qp_events.rs kernel/rdma/cm/qp_state.rs kernel/rdma/cm/sockaddr.rs kernel/rdma/cm/net.rs|client cm cq defer device event mr pd qp wr|1"
	"kernel/rdma/srq.rs|client cm cq defer device event mr pd qp srq wr|1"
	"kernel/rdma/kunit.rs|client cm cq defer device event kunit mr pd qp srq wr|1"
)

# Crate-internal items a patch adds for the next ones: until patch N (the one that uses them)
# they carry #[expect(dead_code)], so that every patch builds without a warning (checked by
# selftests/patches.sh, which builds each patch; rustc warns when an expectation is unfulfilled).
# "file under rust/ item...|N"
UNUSED_UNTIL=(
	"kernel/rdma/defer.rs in_work release_later|3"
	"kernel/rdma/cq.rs from_raw from_fn|4"
	"kernel/rdma/qp.rs from_c to_c|5"
	"kernel/rdma/wr.rs AttachedPool|5"
)

msg_1() {
	cat << 'EOF'
rust: rdma: add bindings and C helpers for ib_core and rdma_cm

Make the RDMA verbs and the RDMA connection manager visible to the
kernel crate: bindgen gets <rdma/ib_verbs.h>, <rdma/rdma_cm.h> and
<rdma/rw.h>, and rust/helpers/rdma.c wraps the static inline functions
of those headers that the abstractions in the following patches call:
posting and polling (ib_post_send(), ib_post_recv(), ib_poll_cq(),
ib_req_notify_cq()), DMA mapping through the RDMA device
(ib_dma_map_sg() and friends), fast registration keys, and a few
scatterlist and net_device accessors.

The kernel image can call into ib_core only when it is built in, so
the RDMA helpers are compiled under IS_REACHABLE(CONFIG_INFINIBAND).

Add a MAINTAINERS entry for the Rust RDMA abstractions; each patch of
the series lists the files it adds.
EOF
}

msg_2() {
	cat << 'EOF'
rust: rdma: add ib_client registration, RDMA devices and their events

Add the kernel::rdma module, built when CONFIG_INFINIBAND=y, with its
first parts:

- client: the Client trait and its Registration, an ib_client whose
  add and remove callbacks run for every RDMA device that is
  registered or unregistered. remove must release everything the
  client created on the device, since ib_core waits for that before it
  lets the driver go.
- device: Device, a registered ib_device, borrowed in a callback or
  held by reference (ARef), with its name, attributes and port
  attributes, and the lookup of the RDMA device behind a net_device.
- defer: the layer's deferral workqueue, owned by the client
  Registration, on which an object dropped where its release would
  wait for the caller itself (a CM id in its own event handler, a CQ in
  its own completion work) is released instead, holding a reference on
  its device; dropping the Registration drains it. The next patches use
  it.
- event: Registration, an ib_event_handler (INIT_IB_EVENT_HANDLER,
  ib_register_event_handler()) registered for as long as it lives,
  whose EventHandler gets the device's and its ports' asynchronous
  events as typed values (port active/error, GID, LID and P_Key
  changes, client reregister, device fatal). ib_dispatch_event() runs
  handlers from ib_core's ib_wq workqueue holding the device's
  event_handler_rwsem for reading, so a handler runs in process
  context and the registration's drop waits for it.
EOF
}

msg_3() {
	cat << 'EOF'
rust: rdma: add protection domains and completion queues

Add the first objects a consumer creates on an RDMA device:

- pd: Pd, a protection domain (ib_alloc_pd()) with its local DMA lkey.
  The caller passes the name restrack lists the PD under, as for every
  object of the layer.
- cq: Cq, a completion queue allocated with ib_alloc_cq() and polled
  by ib_core in the chosen PollContext (softirq, workqueue, unbound
  workqueue, or directly by its owner), and the completions: Wc with
  its status and opcode as enums, and Cqe, the ib_cqe whose done
  callback receives a completion. The next patch builds the
  per-work-request contexts on Cqe, with Wc::from_raw() and
  Cqe::from_fn(), marked #[expect(dead_code)] until then.
- cq/events: Cq::with_events(), a CQ whose asynchronous events
  (IB_EVENT_CQ_ERR), which drivers report in any context, reach a
  CqEventHandler from the system workqueue; the Cq flushes that work
  once the CQ is freed.
EOF
}

msg_4() {
	cat << 'EOF'
rust: rdma: add memory regions, queue pairs and work requests

Add what moves data: memory the device can reach, queue pairs, and the
work requests posted to them.

- mr: DmaRegion, kernel memory mapped for the device with
  ib_dma_map_sg() (by address, as pages or as a scatterlist), or
  owning its memory, which the CPU then reaches with bounds checks
  through CpuAccess (mr/owned.rs), or mapping pages an SgOwner value
  keeps, which it drops only after unmapping them, for zero copy of
  memory such as a block request's (mr/lent.rs), in the DataDirection
  the caller names; FrMr, a fast
  registration memory region (FRWR) mapped with ib_map_mr_sg(), with a
  fresh key for every registration so that a stale rkey is refused.
- qp: Qp, a reliable connected queue pair, its capabilities, send
  flags and send work requests, and ib_drain_qp().
- wr: WrPool, the per-work-request contexts of one queue of a QP,
  owned by the layer, through which SEND, RECV, RDMA WRITE, RDMA READ,
  REG_MR and LOCAL_INV are posted without unsafe code: an Sge borrows
  the DmaRegion it names, and the ib_cqe of each context stays valid
  until its completion, flushed ones included, because the pool is
  released only after the QP has been drained.
- Access, the access rights of a memory registration.

The three refer to each other (an Sge is made by a DmaRegion, a REG_MR
work request carries an FrMr, a pool posts to a Qp, which holds its
pools) and do not build apart, so they come in one patch. Queue pairs
are created through the connection manager, added next, which also
uses the crate-internal parts of qp and wr that this patch marks
with #[expect(dead_code)]. Wc::from_raw() and Cqe::from_fn() of the
previous patch are used now, and lose that mark.
EOF
}

msg_5() {
	cat << 'EOF'
rust: rdma: add the RDMA connection manager

Add connection management, which also creates the queue pairs:

- cm: CmId, an rdma_cm_id of the TCP port space whose events reach a
  CmHandler as typed events, with address and route resolution,
  connect, listen, accept, reject and disconnect; a listener's
  connection requests are adopted as new CmIds. A CmId owns the queue
  pair it creates (rdma_create_qp()) together with the QP's CQs and
  context pools, and its drop drains the QP, destroys the id, then the
  QP, and only then releases the pools and the CQs, so that no
  completion reaches a freed context and no handler runs afterwards.
  Dropped inside one of its own handlers (where rdma_destroy_id() would
  wait for the handler under rdma_cm's handler lock) or in its CQs'
  completion work, it is released on the deferral workqueue.
- cm/event: CmEvent and ConnParam, rdma_cm's events and connection
  parameters.
- cm/create_qp: the id's RC QP through one path that installs the QP's
  event handler and attaches the context pools (the SRQ patch creates
  QPs on an SRQ through it too).
- cm/sockaddr: SockAddr, the IPv4 and IPv6 socket addresses rdma_cm
  takes.
- cm/qp_events: the QP's asynchronous events (QP fatal, request and
  access errors, COMM_EST, ...), which drivers report in any context,
  are recorded and handed to CmHandler::qp_event() from the system
  workqueue; the CmId flushes that work once its QP is destroyed.
  CmIdRef::notify_established() passes COMM_EST on (rdma_notify()).
- cm/qp_state: a consumer may own its QP's transitions, as rdma_cm
  allows ULPs (and librdmacm does for every user-space QP):
  CmId::own_qp_transitions() makes the next QP one the layer creates
  with ib_create_qp() and moves with rdma_init_qp_attr()'s attributes
  (INIT at creation; RTR and RTS in CmId::accept_with_path_mtu() before
  the REP; on the REP's RDMA_CM_EVENT_CONNECT_RESPONSE the handler calls
  CmIdRef::establish(), which moves the QP and sends the RTU; ERR on a
  disconnect or REJ, where rdma_cm moves its own). The consumer may
  lower the path MTU at RTR: RoCE has no subnet manager, and rdma_cm
  gives both QPs the connecting side's MTU. Without the opt-in rdma_cm
  moves the QP. Refused on iWARP, whose CM moves the QP itself.
- cm/net: NetNs, a counted reference to a network namespace, and
  CmId::new_in, which creates an id in a given namespace (rdma_cm then
  binds, resolves and listens there); CmIdRef::set_afonly for IPv6
  listeners that should not take IPv4 requests.

CmId uses the crate-internal parts of qp and wr that the previous
patch marked #[expect(dead_code)], and the marks go.
EOF
}

msg_6() {
	cat << 'EOF'
rust: rdma: add shared receive queues

Add srq: Srq, a shared receive queue (ib_create_srq()) whose RECVs any
QP created on it consumes (CmId::create_qp_on_srq()). RECVs are
consumed by any QP in any order, so unlike a QP's own receive queue an
SRQ cannot hand its per-work-request contexts out in posting order: it
keeps them in a free list, and a completion finds its context through
the ib_cqe that is the context's first field. The owner of the SRQ
(SrqOwner) is told of every posted RECV exactly once: when a QP
consumed it, or when the SRQ is destroyed with it still posted. The
SRQ's asynchronous events (limit reached, SRQ error), which drivers
report in any context, are handed to the owner from the system
workqueue. A QP on the SRQ keeps it alive until the QP is drained.
EOF
}

msg_7() {
	cat << 'EOF'
rust: rdma: add a KUnit suite

Add the rust_kernel_rdma KUnit suite for the value types of the layer
that need no RDMA device: access rights, send flags and socket
addresses. The verbs themselves need a device; the out-of-tree rkdapl
provider exercises them on rdma_rxe (Soft-RoCE).
EOF
}

cover() {
	cat << EOF
rust: add RDMA verbs and connection manager abstractions (kernel::rdma)

This series adds kernel::rdma, safe Rust abstractions over ib_core's
verbs and the RDMA connection manager for kernel consumers (ULPs):
ib_client registration and devices, protection domains, completion
queues polled by ib_core, DMA-mapped kernel memory and fast
registration memory regions, reliable connected queue pairs whose
per-work-request contexts the layer owns, so that posting needs no
unsafe code, and rdma_cm ids with typed events that own their QP and
tear it down in the order ib_core expects.

The layer is used by rkdapl, an out-of-tree kDAPL-style RDMA provider
written in Rust, which carries these files unchanged and compiles them
into its module (distribution kernels build ib_core as a module, which
the kernel crate cannot link against). It is tested there on rdma_rxe
(Soft-RoCE) between two QEMU guests, under KASAN, lockdep and
kmemleak: connection set-up and teardown, SEND/RECV, RDMA WRITE and
READ, FRWR registration and invalidation, RDMA device removal while
connected, a killed peer, and allocation failure injection.

Patch 1 adds the bindings and C helpers, patches 2 to 5 the layer, and
patch 6 a KUnit suite. The kernel crate can call into ib_core only when
it is built in, so the module is built with CONFIG_INFINIBAND=y.

Based on Linux $KVER, as in Debian's linux-source-$KVER
($debver). Each patch is clean under checkpatch.pl --strict and
builds on its own (make modules_prepare with CONFIG_RUST=y and
CONFIG_INFINIBAND=y).
EOF
}

# --- rdma.rs as patch N has it, and the pristine files with the series' lines ----------------
# shape FILE MODE [ARGS]: prints the edited text.
#   rdma-rs MODULES ITEMS   rust/kernel/rdma.rs declaring MODULES only (docs linking elsewhere
#                           dropped), with its own items when ITEMS=1
#   bindings INCFILE        bindings_helper.h + INCFILE's #include <rdma/...> lines
#   helpers                 helpers.c + #include "rdma.c"
#   lib                     lib.rs + #[cfg(CONFIG_INFINIBAND = "y")] pub mod rdma;
#   maintainers FILES       MAINTAINERS + the RUST [RDMA] entry listing FILES
#   expect ITEMS            #[expect(dead_code)] above the pub(crate) fn or trait ITEMS
shape() {
	python3 - "$@" << 'EOF'
import re, sys

path, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(path).read()
lines = text.split("\n")
if lines and lines[-1] == "":
    lines.pop()

def fail(msg):
    sys.exit(f"patches.sh: {path}: {msg}")

def insert_sorted(lines, pattern, key, new, back=None):
    """Insert `new` before the first line matching `pattern` whose group 1 sorts after `key`
    (and before the attribute lines right above it, `back`)."""
    hits = [i for i, l in enumerate(lines) if re.match(pattern, l)]
    if not hits:
        fail(f"no line matches {pattern}")
    if any(re.match(pattern, lines[i]).group(1) == key for i in hits):
        fail(f"{key} is already there")
    after = [i for i in hits if re.match(pattern, lines[i]).group(1) > key]
    at = after[0] if after else hits[-1] + 1
    while back and at > 0 and re.match(back, lines[at - 1]):
        at -= 1
    return lines[:at] + new + lines[at:]

def squeeze(lines):
    """No two blank lines (or empty //! lines) in a row, no empty //! ending a doc block,
    no blank line at the end."""
    out = []
    for l in lines:
        if out and l.strip() in ("", "//!") and out[-1].strip() == l.strip():
            continue
        if out and out[-1] == "//!" and not l.startswith("//!"):
            out.pop()
        out.append(l)
    while out and out[-1] == "":
        out.pop()
    return out

if mode == "rdma-rs":
    mods, items = set(args[0].split()), args[1] == "1"
    moddecl = r"^(?:pub(?:\(crate\))? )?mod (\w+);$"
    declared = {re.match(moddecl, l).group(1) for l in lines if re.match(moddecl, l)}
    if not mods <= declared:
        fail(f"declares no module {' '.join(sorted(mods - declared))}")
    last_mod = max(i for i, l in enumerate(lines) if re.match(moddecl, l))
    out, unit = [], []

    def links_ok(unit):
        segs = re.findall(r"\[`(\w+)(?:::[\w:]*)?`\]", "\n".join(unit))
        return all(s in mods for s in segs if s in declared)

    def flush():
        if unit and links_ok(unit):
            out.extend(unit)
        unit.clear()

    for i, l in enumerate(lines[: last_mod + 1]):
        m = re.match(moddecl, l)
        if m:
            flush()
            if m.group(1) in mods:
                out.append(l)
        elif l.startswith("//! - ") or l in ("//!", "") or not l.startswith("//!"):
            flush()
            (unit if l.startswith("//! - ") else out).append(l)
        elif l.startswith("//!   ") and unit and unit[0].startswith("//! - "):
            unit.append(l)  # continuation of a bullet
        else:
            if unit and unit[0].startswith("//! - "):
                flush()
            unit.append(l)
    flush()
    if items:
        out += lines[last_mod + 1 :]
    lines = squeeze(out)
elif mode == "bindings":
    incs = [l for l in open(args[0]).read().split("\n") if re.match(r"^#include <rdma/", l)]
    if not incs:
        fail(f"{args[0]} has no #include <rdma/...> line")
    lines = insert_sorted(lines, r"^#include <([^>]+)>$", incs[0][10:-1], incs)
elif mode == "helpers":
    lines = insert_sorted(lines, r'^#include "([^"]+)"$', "rdma.c", ['#include "rdma.c"'])
elif mode == "lib":
    lines = insert_sorted(lines, r"^pub mod (\w+);$", "rdma",
                          ['#[cfg(CONFIG_INFINIBAND = "y")]', "pub mod rdma;"], back=r"^#\[")
elif mode == "maintainers":
    name, files = args[0], sorted(args[1:])
    entry = ["RUST [RDMA]", f"M:\t{name}", "L:\tlinux-rdma@vger.kernel.org",
             "L:\trust-for-linux@vger.kernel.org", "S:\tMaintained"]
    entry += [f"F:\t{f}" for f in files] + [""]
    lines = insert_sorted(lines, r"^RUST \[(.+)\]$", "RDMA", entry)
elif mode == "expect":
    for item in args:
        pat = r"^(\s*)pub\(crate\) (?:unsafe )?(?:fn|trait) " + re.escape(item) + r"\b"
        hits = [i for i, l in enumerate(lines) if re.match(pat, l)]
        if len(hits) != 1:
            fail(f"{len(hits)} pub(crate) fn or trait named {item} (UNUSED_UNTIL wants one)")
        at = hits[0]
        lines.insert(at, re.match(pat, lines[at]).group(1) + "#[expect(dead_code)]")
else:
    fail(f"unknown mode {mode}")
sys.stdout.write("\n".join(lines) + "\n")
EOF
}

# The layer's files, relative to the top directory.
layer_files() {
	(cd "$top" && find rust/kernel/rdma.rs rust/kernel/rdma rust/helpers/rdma.c -type f \
		! -name ".*" ! -name "*~" | sort)
}

# --- every layer file in exactly one patch -------------------------------------------------------
declare -A in_patch=()
for entry in "${SERIES[@]}"; do
	for f in ${entry%%|*}; do
		[ -f "$top/rust/$f" ] || die "SERIES names rust/$f, which does not exist"
		[ -z "${in_patch[$f]:-}" ] || die "rust/$f is in two patches of SERIES"
		in_patch[$f]=1
	done
done
while IFS= read -r f; do
	[ -n "${in_patch[${f#rust/}]:-}" ] ||
		die "$f is in no patch: add it to SERIES in scripts/patches.sh"
done < <(layer_files)

# --- the throw-away repository -------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/rkdapl-patches.XXXXXX")
trap 'rm -rf "$work"' EXIT
repo=$work/linux
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$when
export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE=$when
g() { git -C "$repo" "$@"; }
changed=(MAINTAINERS rust/bindings/bindings_helper.h rust/helpers/helpers.c rust/kernel/lib.rs)
mkdir -p "$repo"
g init -q -b rdma
for f in "${changed[@]}"; do
	[ -f "$pristine/$f" ] || die "$pristine has no $f"
	mkdir -p "$(dirname "$repo/$f")"
	cp "$pristine/$f" "$repo/$f"
done
g add -A
g commit -q -m "Linux $KVER (linux-source-$KVER $debver): the files the series changes"
base=$(g rev-parse HEAD)

n=0
maint_files=()
for entry in "${SERIES[@]}"; do
	n=$((n + 1))
	IFS='|' read -r files mods items <<< "$entry"
	for f in $files; do
		mkdir -p "$(dirname "$repo/rust/$f")"
		if [ "$f" = kernel/rdma.rs ]; then
			shape "$top/rust/$f" rdma-rs "$mods" "$items" > "$repo/rust/$f"
		else
			cp "$top/rust/$f" "$repo/rust/$f"
		fi
		maint_files+=("rust/$f")
	done
	if [ "$n" = 1 ]; then
		shape "$pristine/rust/bindings/bindings_helper.h" bindings \
			"$top/rust/rkdapl/rdma_bindings.h" > "$repo/rust/bindings/bindings_helper.h"
		shape "$pristine/rust/helpers/helpers.c" helpers > "$repo/rust/helpers/helpers.c"
	fi
	if [ "$n" = 2 ]; then
		shape "$pristine/rust/kernel/lib.rs" lib > "$repo/rust/kernel/lib.rs"
	fi
	# rdma.rs grows with every patch that adds a module.
	if [ -f "$repo/rust/kernel/rdma.rs" ]; then
		shape "$top/rust/kernel/rdma.rs" rdma-rs "$mods" "$items" > "$repo/rust/kernel/rdma.rs"
	fi
	# Items not used yet carry #[expect(dead_code)] until the patch that uses them.
	for u in "${UNUSED_UNTIL[@]}"; do
		read -r f names <<< "${u%|*}"
		[ -f "$repo/rust/$f" ] || continue
		if [ "$n" -lt "${u##*|}" ]; then
			# shellcheck disable=SC2086 # one argument per item
			shape "$top/rust/$f" expect $names > "$repo/rust/$f"
		else
			cp "$top/rust/$f" "$repo/rust/$f"
		fi
	done
	shape "$pristine/MAINTAINERS" maintainers "$name <$email>" "${maint_files[@]}" \
		> "$repo/MAINTAINERS"
	g add -A
	declare -F "msg_$n" > /dev/null || die "no commit message for patch $n: add msg_$n"
	{
		"msg_$n"
		printf '\nSigned-off-by: %s <%s>\n' "$name" "$email"
	} | g commit -q -F -
done

# The last patch must leave exactly the layer's source.
while IFS= read -r f; do
	cmp -s "$top/$f" "$repo/$f" ||
		die "the series does not reproduce $f (SERIES in scripts/patches.sh is out of date)"
done < <(layer_files)

cover | g config branch.rdma.description "$(cat)"
mkdir -p "$outdir"
rm -f "$outdir"/*.patch
g -c format.useAutoBase=false format-patch -q --cover-letter --cover-from-description=subject \
	--no-signature -o "$outdir" "$base..rdma"
log "wrote $n patches and a cover letter to $outdir (Linux $KVER, $debver)"

# --- checkpatch ----------------------------------------------------------------------------------
if [ "${RKDAPL_PATCHES_CHECKPATCH:-1}" != 0 ]; then
	bad=0
	for p in "$outdir"/0*.patch; do
		[ "${p##*/}" != 0000-cover-letter.patch ] || continue
		total=$(cd "$pristine" && perl scripts/checkpatch.pl --strict "$p" | grep '^total:' || true)
		if [[ $total != "total: 0 errors, 0 warnings, 0 checks,"* ]]; then
			(cd "$pristine" && perl scripts/checkpatch.pl --strict --terse --no-summary "$p") >&2 || true
			bad=1
		fi
	done
	[ $bad = 0 ] || die "checkpatch.pl --strict is not clean on the series (above); fix the layer's source"
	log "checkpatch.pl --strict: 0 errors, 0 warnings, 0 checks on all $n patches"
fi
ls "$outdir"/*.patch
