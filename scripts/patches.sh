#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make patches: the Rust RDMA layer in its upstream form, a `git am`-able patch series that adds
# `kernel::rdma` to Linux $KVER, written to out/patches/ (0000-cover-letter.patch, 0001-...).
#
#   scripts/patches.sh [outdir]
#
# The series is generated from the layer's one source, the files rkdapl.ko compiles in:
# rust/kernel/rdma.rs, rust/kernel/rdma/**, rust/helpers/rdma.c, and the #include lines of
# rust/rkdapl/rdma_bindings.h; its KUnit configuration, rust/kernel/rdma/.kunitconfig; and its
# user, samples/rust/rust_rdma_loopback.rs (which reaches the layer as `kernel::rdma` in the
# series, as `rkdapl::rdma` here). A last patch adds kernel::block::mq::owned
# (rust/kernel/block/mq/owned.rs, rust/kernel/block/mq/owned/), the blk-mq disks rkdblk.ko
# compiles in, whose requests' pages the layer maps (its SgOwner). A throw-away git repository holds the pristine files the
# series changes (MAINTAINERS, rust/bindings/bindings_helper.h, rust/helpers/helpers.c,
# rust/kernel/lib.rs, rust/kernel/block/mq.rs, samples/rust/Kconfig and Makefile, from Debian's
# linux-source-$KVER);
# each patch below is a commit on it and `git format-patch` writes them. The split is listed
# in SERIES. A module file with submodules (rust/kernel/rdma.rs, and PARENTS) grows with it: a
# patch declares only the submodules the series has added so far (and keeps only the docs
# that link to them), rdma.rs only those SERIES lists; NO_ITEMS_UNTIL brings a parent's
# own items after its first submodules. Crate-internal items only a later patch uses carry
# #[expect(dead_code)] until then (UNUSED_UNTIL), so that every patch builds without a warning.
# The script stops if a layer file is in no patch, or if the last patch does not reproduce the
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
	rust/kernel/block/mq/owned.rs rust/kernel/block/mq/owned scripts/patches.sh)
when=$(git -C "$top" log -1 --format=%ad --date=raw -- "${layer_paths[@]}" 2> /dev/null || true)
when=${when:-$(date +'%s +0000')}

# --- the split ---------------------------------------------------------------------------------
# One entry per patch: "files (new in this patch: under rust/, or under samples/)|modules
# rust/kernel/rdma.rs declares after it|items" where items=1 means the patch brings rdma.rs's
# own items (Access). The commit messages are msg_<n> below. No patch has more than ~800
# lines (the diffstat's insertions). A new layer file goes into the patch of the part it
# belongs to (or one of its own: then renumber what follows, and msg_<n>).
SERIES=(
	"helpers/rdma.c||0"
	"kernel/rdma.rs kernel/rdma/bound.rs kernel/rdma/device.rs|bound device|0"
	"kernel/rdma/client.rs kernel/rdma/defer.rs|bound client defer device|0"
	"kernel/rdma/event.rs|bound client defer device event|0"
	"kernel/rdma/pd.rs kernel/rdma/cq.rs kernel/rdma/cq/events.rs|bound client cq defer device event pd|0"
	"kernel/rdma/mr.rs kernel/rdma/mr/segs.rs kernel/rdma/mr/sge.rs kernel/rdma/mr/lender.rs|bound client cq defer device event mr pd|0"
	"kernel/rdma/mr/owned.rs kernel/rdma/mr/lent.rs kernel/rdma/mr/frmr.rs|bound client cq defer device event mr pd|1"
	"kernel/rdma/qp.rs kernel/rdma/mr/pool.rs|bound client cq defer device event mr pd qp|1"
	"kernel/rdma/wr.rs kernel/rdma/wr/read_mr.rs|bound client cq defer device event mr pd qp wr|1"
	"kernel/rdma/cm.rs kernel/rdma/cm/sockaddr.rs kernel/rdma/cm/event.rs|bound client cm cq defer device event mr pd qp wr|1"
	"kernel/rdma/cm/id_ref.rs kernel/rdma/cm/access.rs kernel/rdma/cm/qp_state.rs|bound client cm cq defer device event mr pd qp wr|1"
	"kernel/rdma/cm/qp_events.rs|bound client cm cq defer device event mr pd qp wr|1"
	"kernel/rdma/cm/create_qp.rs kernel/rdma/cm/net.rs|bound client cm cq defer device event mr pd qp wr|1"
	"kernel/rdma/srq.rs|bound client cm cq defer device event mr pd qp srq wr|1"
	"kernel/rdma/kunit.rs kernel/rdma/.kunitconfig|bound client cm cq defer device event kunit mr pd qp srq wr|1"
	"samples/rust/rust_rdma_loopback.rs|bound client cm cq defer device event kunit mr pd qp srq wr|1"
	"kernel/block/mq/owned.rs kernel/block/mq/owned/request.rs kernel/block/mq/owned/rdma.rs kernel/block/mq/owned/attr.rs kernel/block/mq/owned/work.rs|bound client cm cq defer device event kunit mr pd qp srq wr|1"
)
# The patch of SERIES that adds kernel::block::mq::owned (the last): it declares the module in
# rust/kernel/block/mq.rs, and its files are the BLOCK LAYER DEVICE DRIVER API [RUST] entry's
# (rust/kernel/block/); the RDMA entry gets the one that makes its requests' pages an SgOwner.
BLOCK_PATCH=${#SERIES[@]}

# Module files whose submodules come in several patches: each patch declares those whose
# files the series has added so far.
PARENTS=(kernel/rdma/mr.rs kernel/rdma/cm.rs)
# "parent file|N": the parent's own items (beyond its docs, submodules and re-exports) come
# in patch N.
NO_ITEMS_UNTIL=(
	"kernel/rdma/cm.rs|12"
)

# Crate-internal items a patch adds for the next ones: until patch N (the one that uses them)
# they carry #[expect(dead_code)], so that every patch builds without a warning (checked by
# selftests/patches.sh, which builds each patch; rustc warns when an expectation is unfulfilled).
# "file under rust/ item...|N" (items: fn, trait, struct, enum or union, the one so named that
# is pub or pub(...), or else the one so named; a struct's expectation covers its fields, a
# trait's its methods)
UNUSED_UNTIL=(
	"kernel/rdma/bound.rs new revoke|3"
	"kernel/rdma/bound.rs track release_now|4"
	"kernel/rdma/bound.rs bound|5"
	"kernel/rdma/bound.rs try_take forget|12"
	"kernel/rdma/bound.rs try_track|13"
	"kernel/rdma/bound.rs Rank|14"
	"kernel/rdma/defer.rs in_work release_later|5"
	"kernel/rdma/cq.rs from_raw from_fn|9"
	"kernel/rdma/mr/sge.rs slice_as_raw|8"
	"kernel/rdma/mr/lender.rs sg|7"
	"kernel/rdma/mr/frmr.rs shared|9"
	"kernel/rdma/qp.rs post_send_raw SendWr|9"
	"kernel/rdma/qp.rs from_c|13"
	"kernel/rdma/mr/pool.rs create_on|13"
	"kernel/rdma/wr.rs AttachedPool|13"
	"kernel/rdma/cm/event.rs to_c|11"
	"kernel/rdma/cm/id_ref.rs from_raw|12"
	"kernel/rdma/cm/access.rs CmIdRes revoke destroy_id_and_qp adoption_class new wait_destroyed device_removal enter live inside mr_pool|12"
	"kernel/rdma/cm/qp_state.rs new accept_locked before_event|12"
	"kernel/rdma/cm/qp_state.rs OwnQp|13"
	"kernel/rdma/cm/qp_events.rs new callback context|13"
)

# The sample's line that reaches the layer through rkdapl, and what the series has instead.
SAMPLE=samples/rust/rust_rdma_loopback.rs
SAMPLE_USE_HERE="use rkdapl::rdma;"
SAMPLE_USE_SERIES="use kernel::rdma;"
# The sample's import of rkdapl's symbol namespace, which the kernel crate's layer has not.
SAMPLE_IMPORT_HERE='    imports_ns: ["RKDAPL"],'

msg_1() {
	cat << 'EOF'
rust: rdma: add bindings and C helpers for ib_core and rdma_cm

Make the RDMA verbs and the RDMA connection manager visible to the
kernel crate: bindgen gets <rdma/ib_verbs.h>, <rdma/rdma_cm.h>,
<rdma/rw.h> and <rdma/mr_pool.h>, and rust/helpers/rdma.c wraps the
static inline functions of those headers that the abstractions in the
following patches call:
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
rust: rdma: add RDMA devices and device bindings

Add the kernel::rdma module, built when CONFIG_INFINIBAND=y, with its
first parts:

- device: Device, a registered ib_device, borrowed in a callback or
  held by reference (ARef), with its name, attributes and port
  attributes, the lookup of the RDMA device behind a net_device, and
  mtu_enum(), the enum ib_mtu of a path MTU in bytes.
- bound: a device as one ib_core client sees it between its add and
  remove callbacks (BoundDevice), the Bound token the layer's objects
  are made from, and the tracking of those objects, so that what a
  client leaves on a device can be revoked when the device goes: its
  methods then fail with -ENODEV and its drop frees only memory, and
  the device's unregistration never waits for it.

The client registration of the next patch makes and revokes the
bindings; until then BoundDevice::new() and revoke() carry an
expectation of dead code, as the tracking does until the objects of the
following patches use it.
EOF
}

msg_3() {
	cat << 'EOF'
rust: rdma: add ib_client registration

- client: the Client trait and its Registration, an ib_client whose
  add and remove callbacks run for every RDMA device that is
  registered or unregistered. add gets the device's Bound token of the
  previous patch; once remove returned, the layer revokes whatever the
  client left on the device, since ib_core waits for that before it
  lets the driver go.
- defer: the layer's deferral workqueue, owned by the client
  Registration, on which an object dropped where its release would
  wait for the caller itself (a CM id in its own event handler, a CQ in
  its own completion work) is released instead, holding a reference on
  its device; dropping the Registration drains it. The next patches use
  it, and it carries #[expect(dead_code)] until then.
EOF
}

msg_4() {
	cat << 'EOF'
rust: rdma: add asynchronous device events

Add event: Registration, an ib_event_handler (INIT_IB_EVENT_HANDLER,
ib_register_event_handler()) registered for as long as it lives, whose
EventHandler gets the device's and its ports' asynchronous events as
typed values (port active/error, GID, LID and P_Key changes, client
reregister, device fatal). ib_dispatch_event() runs handlers from
ib_core's ib_wq workqueue holding the device's event_handler_rwsem for
reading, so a handler runs in process context and the registration's
drop waits for it. The CQ, QP and SRQ events of the following patches
use its EventKind.
EOF
}

msg_5() {
	cat << 'EOF'
rust: rdma: add protection domains and completion queues

Add the first objects a consumer creates on an RDMA device:

- pd: Pd, a protection domain (ib_alloc_pd()) with its local DMA lkey.
  The caller passes the name restrack lists the PD under, as for every
  object of the layer.
- cq: Cq, a completion queue allocated with ib_alloc_cq() and polled
  by ib_core in softirq or workqueue context, and the completions: Wc
  with its status and opcode as enums, and Cqe, the ib_cqe whose done
  callback receives a completion. A CQ dropped in its own completion
  work is released on the layer's deferral workqueue (patch 3).
  The work request patch builds its per-request contexts on Cqe, with
  Wc::from_raw() and Cqe::from_fn(), marked #[expect(dead_code)] until
  then.
- cq/events: Cq::with_events(), a CQ whose asynchronous events
  (IB_EVENT_CQ_ERR), which drivers report in any context, reach a
  CqEventHandler from the system workqueue; the Cq flushes that work
  once the CQ is freed.
EOF
}

msg_6() {
	cat << 'EOF'
rust: rdma: add DMA-mapped memory regions and SGEs

Add mr: DmaRegion, kernel memory mapped for an RDMA device with
ib_dma_map_sg(): a buffer by its address, an array of pages or a
scatterlist the caller built (unsafe constructors: the caller keeps the
memory). The region records its DMA segments (mr/segs.rs) and syncs
them for the CPU or the device, in the kernel::dma::DataDirection it
was mapped with. The SgOwner trait names a value that lends a
scatterlist to be mapped in place; the next patch maps it.

The region reads its mapped entries through the borrowed
scatterlist::SGTable, but builds and maps its table itself: the
SGTable<Owned> constructor maps a driver-bound struct device with
dma_map_sgtable(), where an RDMA device maps through ib_dma_map_sg()
and rxe and siw have no DMA device; its Devres mapping is revoked when
that device's driver unbinds, not when the client's binding of the
ib_device is; and it maps only vmalloc'd memory it owns.

- mr/sge: Sge, a scatter/gather element borrowing the DmaRegion it
  names, so that it cannot outlive the mapping during a post call, and
  the region's SGEs of a byte range (for the local DMA lkey, or inline
  data by kernel virtual address). The queue pair patch uses Sge's raw
  view, marked #[expect(dead_code)] until then.
EOF
}

msg_7() {
	cat << 'EOF'
rust: rdma: add owned and lent regions and fast registration MRs

Complete the memory of the layer:

- mr/owned: regions that own the memory they map (a vector of bytes or
  of pages, freed only after the unmapping), which the CPU then reaches
  with bounds checks through CpuAccess, with no unsafe code in the
  caller.
- mr/lent: DmaRegion::from_sg_owner(), a region over the pages an
  SgOwner keeps (such as a block request's token), which it drops only
  after unmapping them: zero copy without unsafe code in the caller.
- mr/frmr: FrMr, a fast registration memory region (FRWR,
  IB_MR_TYPE_MEM_REG) mapped with ib_map_mr_sg() over part of a
  region, with a fresh key for every registration so that a stale rkey
  is refused; its ib_mr (MrRef) is shared with a REG_MR work request in
  flight, so that it is deregistered only after both let go.
- Access, the access rights of a memory registration.

The work request patch uses the shared MrRef, which carries an
expectation of dead code until then.
EOF
}

msg_8() {
	cat << 'EOF'
rust: rdma: add queue pairs and send work requests

Add qp: Qp, a reliable connected queue pair borrowed from the CM id
that owns it (created through the connection manager, added later),
its capacities (QpCap), the send flags and operations of SEND-queue
work requests (SEND, with immediate or invalidate, RDMA WRITE, with
immediate, RDMA READ, atomics), SendWr over SGEs that borrow their
memory, the path MTU the QP got, and ib_drain_qp(). Sge's raw view (mr/sge)
is used now and loses its expectation of dead code.
mr/pool adds MrPool, a pool of FRWR MRs on a QP's lists
(ib_mr_pool_init(), ib_mr_pool_get(), ib_mr_pool_put(),
ib_mr_pool_destroy()), from which one I/O takes an MR (PoolMr) and
maps it in any context, without sleeping or allocating, as nvme-rdma
does; the QP's owner destroys the pool after draining the QP and before
destroying it, putting back the MRs still taken out first, so that the
QP counts none in use. Until the CM id patches create pools,
MrPool::create_on() carries an expectation of dead code.
Until the work request pools of the next patch use the crate-internal
posting path (Qp::post_send_raw() and SendWr's internals), it carries
an expectation of dead code, as QpCap::from_c() does until QP creation.
EOF
}

msg_9() {
	cat << 'EOF'
rust: rdma: add work request pools

Add wr: WrPool, the per-work-request contexts of one queue of a QP,
owned by the layer, through which SEND, RECV, RDMA WRITE, RDMA READ,
REG_MR and LOCAL_INV are posted without unsafe code: the ib_cqe of each
context stays valid until its completion, flushed ones included,
because a pool is attached to one QP, which is drained before the pool
is released; the owner's WrCompletion gets each completion with its
context number. The REG_MR of a pooled MR (post_reg_pool_mr()) may be
unsignalled, as nvme-rdma posts it, when a later signalled work request
covers it. wr/read_mr adds the RDMA READ into a fast-registered
sink that iWARP wants (rdma_rw's way: REG_MR, READ, LOCAL_INV).

Wc::from_raw(), Cqe::from_fn(), the shared MrRef and the posting path
of the previous patch are used now and lose their expectation of dead
code. The connection manager attaches
pools to the QPs it creates; until then, that part (AttachedPool) is
marked with #[expect(dead_code)].
EOF
}

msg_10() {
	cat << 'EOF'
rust: rdma: add the connection manager's addresses and events

Add the cm module with its value types: SockAddr (cm/sockaddr), the
IPv4 and IPv6 socket addresses rdma_cm takes, and (cm/event) CmEvent
and CmEventKind, rdma_cm's events, ConnParam, the connection
parameters, and the private data limits of each message. The CM ids
that use them come next; until then, ConnParam's C form carries an
expectation of dead code.
EOF
}

msg_11() {
	cat << 'EOF'
rust: rdma: add borrowed CM ids and consumer-owned QP transitions

Add what the CM ids of the next patch are reached through:

- cm/id_ref: CmIdRef, an rdma_cm_id borrowed for the duration of a
  call (what a CM event handler gets), with address and route
  resolution, bind, listen, connect, reject and disconnect.
- cm/access: CmIdAccess and QpAccess, an owner's access to its CM id
  and the id's QP that the device's removal waits for, after which the
  owner's calls fail with -ENODEV; what the device's binding keeps of
  an id with a QP (CmIdRes) and of a connect-request callback the id
  was adopted in (Adoption).
- cm/qp_state: a consumer may own its QP's transitions, as rdma_cm
  allows ULPs (and librdmacm does for every user-space QP): the layer
  moves such a QP with rdma_init_qp_attr()'s attributes (INIT at
  creation; RTR and RTS before the REP on the passive side; on the
  REP's RDMA_CM_EVENT_CONNECT_RESPONSE the handler calls
  CmIdRef::establish(), which moves the QP and sends the RTU; ERR on a
  disconnect or REJ, where rdma_cm moves its own). The consumer may
  lower the path MTU at RTR: RoCE has no subnet manager, and rdma_cm
  gives both QPs the connecting side's MTU. Refused on iWARP, whose CM
  moves the QP itself.

ConnParam's C form is used now and loses its expectation of dead code.
What only the CmId of the next patch calls carries one until then.
EOF
}

msg_12() {
	cat << 'EOF'
rust: rdma: add CM ids

Add CmId, an rdma_cm_id of the TCP port space whose events reach a
CmHandler as typed events, with accept and reject; a listener's
connection requests are adopted as new CmIds. A CmId owns the queue
pair it creates (next patch) together with the QP's CQs and context
pools, and its drop drains the QP, destroys the MR pool on it (if any),
the id, then the QP, and only then releases the pools and the CQs, so
that no completion reaches a freed context and no handler runs
afterwards. Dropped inside one of its own handlers (where
rdma_destroy_id() would wait for the handler under rdma_cm's handler
lock) or in its CQs' completion work, it is released on the deferral
workqueue. At the device's removal, the
binding releases an id that has a QP (CmIdRes): it waits for the
connect-request callback the id was adopted in, revokes the owner's
access, then destroys the MR pool, the id and the QP.

- cm/qp_events: the QP's asynchronous events (QP fatal, request and
  access errors, COMM_EST, ...), which drivers report in any context,
  are recorded and handed to CmHandler::qp_event() from the system
  workqueue; the CmId flushes that work once its QP is destroyed.

The parts of the previous patch that the CmId uses lose their
expectation of dead code; what creating the id's QP uses (the pools'
attachment, the QP event callback, the consumer's QP state) carries
one until the next patch.
EOF
}

msg_13() {
	cat << 'EOF'
rust: rdma: create QPs on CM ids, and CM ids in a network namespace

- cm/create_qp: CmId::create_qp() creates the id's RC QP from a
  QpInit (its CQs and the WrPools of its two queues), through one path
  that installs the QP's event handler and attaches the pools (the SRQ
  patch creates QPs on an SRQ through it too): with rdma_create_qp(),
  or, after CmId::own_qp_transitions(), as a QP its consumer moves
  (ib_create_qp(), then INIT). CmId::create_mr_pool() creates an
  MrPool on the id's QP, which the id destroys before the QP, on drop
  and at its device's removal. QpCap::from_c() and the parts of the
  previous patches that QP creation uses lose their expectation of
  dead code.
- cm/net: NetNs, a network namespace held as ARef<NetNs> (get_net(),
  put_net()), and CmId::new_in(), which creates an id in a given
  namespace (rdma_cm then binds, resolves and listens there);
  CmIdRef::set_afonly() for IPv6 listeners that should not take IPv4
  requests.
EOF
}

msg_14() {
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

msg_15() {
	cat << 'EOF'
rust: rdma: add a KUnit suite

Add the rust_kernel_rdma KUnit suite for the value types of the layer
that need no RDMA device: access rights, send flags and socket
addresses, and a .kunitconfig, so that

  ./tools/testing/kunit/kunit.py run --kunitconfig=rust/kernel/rdma

runs it with the layer's doctests. The verbs themselves need a device;
the sample of the next patch exercises them.
EOF
}

msg_16() {
	cat << 'EOF'
samples: rust: add an RDMA loopback sample

Add rust_rdma_loopback, a user of the kernel::rdma abstractions: it
registers an ib_client and, on the RDMA device that has the IPv4
address given as a module parameter, connects to itself through the
RDMA connection manager (a listener adopts and accepts the request,
the active side resolves the address and route and connects); the
passive side grants a buffer with a fast registration MR, the active
side RDMA WRITEs into it, RDMA READs it back and SENDs a message into
a RECV, and every byte is compared. Loading the module returns 0 when
all of that worked, or the failing step's error.

With leak=1 it keeps one object of each kind (PD, CQs, the connected
QPs and CM ids, the listener, the FRWR MR, DMA regions, an SRQ) until
it is unloaded, also across its ib_client's remove callback: a way to
test what happens to objects that outlive their device.

It runs on Soft-RoCE, for example:

  rdma link add rxe0 type rxe netdev eth0
  insmod rust_rdma_loopback.ko addr=0x0a4d0001
EOF
}

msg_17() {
	cat << 'EOF'
rust: block: mq: add disks whose driver owns its requests

The Operations and Request of kernel::block::mq give a request no
driver data, no operation, sector or length, no data pages, end it only
with success and have no timeout callback: enough for rnull, not for a
driver that moves a request's data itself (a network or RDMA block
device, as nvme-rdma, rnbd or nbd in C).

Add kernel::block::mq::owned for those: a Disk owns its tag set and
gendisk, and blk-mq hands each request to Driver::queue_rq() as an
OwnedRequest, a token that ends the request exactly once, with a status
(OwnedRequest::end(), from any context; an unended token fails the
request with BLK_STS_IOERR when dropped). The token reads the request's
operation, FUA flag, sector, length and tag; the driver's own typed
data (Driver::RequestData) lives in blk-mq's PDU, made when blk-mq
allocates the request (init_request) and dropped when it frees it
(exit_request); Driver::timeout() gets it with the tag and returns
TimeoutReturn::Done or ResetTimer. The disk may be BLK_MQ_F_BLOCKING
or not, may have a volatile write cache (flushes and FUA writes), and
may be read-only (set_disk_ro(), at creation or later).

A driver may give the disk files of its own in its sysfs directory
(Driver::ATTRIBUTES, filled by Driver::show() and taken by
Driver::store()), added with the disk and removed when it is deleted;
a store may delete the very disk its file belongs to, after
AttrFile::remove_self() (device_remove_file_self()), as nvme's
delete_controller does.

The request's data is reached through a scatterlist in its PDU, mapped
with blk_rq_map_sg() when first used: copy_out_with() hands its pieces,
mapped with sg_miter, to a closure, and pages() lends the list and its
pages (RequestPages), so that the request ends only once both its token
was ended and the RequestPages dropped, whichever comes last (nvme-rdma
keeps a request reference for the same reason). With CONFIG_INFINIBAND=y,
RequestPages is a kernel::rdma::mr::SgOwner: an RDMA region maps the
request's pages in place, with no copy and no unsafe code in the driver.

For a driver that recovers from a lost connection by itself, as
nvme-rdma's error recovery does: RequestQueue stops and restarts
dispatch (blk_mq_quiesce_queue(), blk_mq_unquiesce_queue(), each call on
its own) and kicks the requeue list; OwnedRequest::requeue_later() gives
the request back to blk-mq's requeue list once its RequestPages went
too; and each Disk has a delayed work (DiskWork, on system_long_wq) that
runs Driver::work() with the disk's RequestQueue, scheduled from any
context through a handle the driver keeps, and disabled
(disable_delayed_work_sync()) before the disk is deleted.
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
tear it down in the order ib_core expects. Its user is a sample,
samples/rust/rust_rdma_loopback.rs, which connects to itself and moves
data with RDMA WRITE, RDMA READ and SEND.

Patch 1 adds the bindings and C helpers, patches 2 to $((n - 2)) the layer,
one part each (listed below), patch $((n - 2)) a KUnit suite with its
.kunitconfig, patch $((n - 1)) the sample, and patch $n
kernel::block::mq::owned, blk-mq disks whose driver owns its requests,
ends them with a status and lends their pages to an RDMA region without
a copy, for RDMA block devices. The kernel crate can call into
ib_core only when it is built in, so the module is built with
CONFIG_INFINIBAND=y.

It was tested on rdma_rxe (Soft-RoCE) and siw in QEMU guests, under
KASAN, lockdep and kmemleak: connection set-up and teardown, SEND/RECV,
RDMA WRITE and READ, FRWR registration and invalidation, RDMA device
removal while connected, a killed peer, and allocation failure
injection.

Based on Linux $KVER, as in Debian's linux-source-$KVER
($debver). Each patch is clean under checkpatch.pl --strict and
builds on its own (make modules_prepare with CONFIG_RUST=y and
CONFIG_INFINIBAND=y; the sample with CONFIG_SAMPLE_RUST_RDMA_LOOPBACK=m).
EOF
}

# --- a module file as patch N has it, and the pristine files with the series' lines ------------
# shape FILE MODE [ARGS]: prints the edited text.
#   parent MODULES ITEMS    a module file (rust/kernel/rdma.rs, PARENTS) declaring its
#                           submodules MODULES only (their `use` lines and docs linking to the
#                           others dropped), with its own items (and `use` lines) when ITEMS=1
#   bindings INCFILE        bindings_helper.h + INCFILE's #include <rdma/...> lines
#   helpers                 helpers.c + #include "rdma.c"
#   lib                     lib.rs + #[cfg(CONFIG_INFINIBAND = "y")] pub mod rdma;
#   blockmq                 block/mq.rs + pub mod owned;
#   maintainers FILES       MAINTAINERS + the RUST [RDMA] entry listing FILES
#   expect ITEMS            #[expect(dead_code)] above the crate-internal fn, trait, struct or
#                           enum ITEMS
#   sample HERE SERIES [DROP...]
#                           the sample with its line HERE (and the comment above it) replaced
#                           by SERIES, and its lines DROP (and the comments above them) left out
#   kconfig                 samples/rust/Kconfig + SAMPLE_RUST_RDMA_LOOPBACK
#   makefile                samples/rust/Makefile + rust_rdma_loopback.o
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

if mode == "parent":
    mods, items = set(args[0].split()), args[1] == "1"
    moddecl = r"^(?:pub(?:\(crate\))? )?mod (\w+);$"
    declared = {re.match(moddecl, l).group(1) for l in lines if re.match(moddecl, l)}
    if not mods <= declared:
        fail(f"declares no module {' '.join(sorted(mods - declared))}")
    # `use` statements (one or more lines): those of a module left out go, and without the
    # items every one but the re-exports of the modules kept.
    kept, stmt = [], None
    for l in lines:
        if stmt is None and re.match(r"^(?:pub(?:\(crate\))? )?use ", l):
            stmt = []
        if stmt is None:
            kept.append(l)
            continue
        stmt.append(l)
        if l.rstrip().endswith(";"):
            m = re.match(r"^(?:pub(?:\(crate\))? )?use (\w+)::", stmt[0])
            if m and m.group(1) in declared:
                ok = m.group(1) in mods and (items or stmt[0].startswith("pub "))
            else:
                ok = items
            if ok:
                kept += stmt
            stmt = None
    lines = kept
    last_mod = max(i for i, l in enumerate(lines) if re.match(moddecl, l))
    if not items:
        # One-line items above the submodules (a `const`), with their docs, go too.
        item1 = r"^(?:pub(?:\([^)]*\))? )?(?:const|static|type) .*;$"
        kept, pend = [], []
        for i, l in enumerate(lines):
            if i <= last_mod and (l.startswith("///") or l.startswith("#[")):
                pend.append(l)
                continue
            if not (i <= last_mod and re.match(item1, l)):
                kept += pend + [l]
            pend = []
        lines = kept
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
elif mode == "blockmq":
    lines = insert_sorted(lines, r"^(?:pub )?mod (\w+);$", "owned", ["pub mod owned;"])
elif mode == "maintainers":
    name, files = args[0], sorted(args[1:])
    entry = ["RUST [RDMA]", f"M:\t{name}", "L:\tlinux-rdma@vger.kernel.org",
             "L:\trust-for-linux@vger.kernel.org", "S:\tMaintained"]
    entry += [f"F:\t{f}" for f in files] + [""]
    lines = insert_sorted(lines, r"^RUST \[(.+)\]$", "RDMA", entry)
elif mode == "expect":
    for item in args:
        kind = (r'(?:const )?(?:unsafe )?(?:extern "C" )?(?:fn|trait|struct|enum|union) '
                + re.escape(item) + r"\b")
        pat = r"^(\s*)pub(?:\((?:crate|super|in [\w:]+)\))? " + kind
        hits = [i for i, l in enumerate(lines) if re.match(pat, l)]
        if not hits:
            pat = r"^(\s*)" + kind
            hits = [i for i, l in enumerate(lines) if re.match(pat, l)]
        if len(hits) != 1:
            fail(f"{len(hits)} crate-internal fn, trait, struct or enum named {item} "
                 "(UNUSED_UNTIL wants one)")
        at = hits[0]
        lines.insert(at, re.match(pat, lines[at]).group(1) + "#[expect(dead_code)]")
elif mode == "sample":
    here, series, *drops = args
    hits = [i for i, l in enumerate(lines) if l == here]
    if len(hits) != 1:
        fail(f"{len(hits)} lines '{here}'")
    at = hits[0]
    while at > 0 and lines[at - 1].startswith("//"):
        at -= 1
    lines = lines[:at] + [series] + lines[hits[0] + 1 :]
    for drop in drops:
        hits = [i for i, l in enumerate(lines) if l == drop]
        if len(hits) != 1:
            fail(f"{len(hits)} lines '{drop}'")
        at = hits[0]
        while at > 0 and lines[at - 1].lstrip().startswith("//"):
            at -= 1
        lines = lines[:at] + lines[hits[0] + 1 :]
elif mode == "kconfig":
    entry = """config SAMPLE_RUST_RDMA_LOOPBACK
\ttristate "RDMA loopback"
\tdepends on INFINIBAND=y && INFINIBAND_ADDR_TRANS
\thelp
\t  This option builds the Rust RDMA loopback sample, a user of the
\t  kernel::rdma abstractions: it connects to itself through the RDMA
\t  connection manager on the RDMA device that has a given IPv4
\t  address, and moves data with RDMA WRITE, RDMA READ and SEND.

\t  To compile this as a module, choose M here:
\t  the module will be called rust_rdma_loopback.

\t  If unsure, say N.
""".split("\n")
    hits = [i for i, l in enumerate(lines) if l == "config SAMPLE_RUST_DEBUGFS"]
    if len(hits) != 1:
        fail("no 'config SAMPLE_RUST_DEBUGFS' to put the sample before")
    lines = lines[: hits[0]] + entry + lines[hits[0] :]
elif mode == "makefile":
    hits = [i for i, l in enumerate(lines) if l.startswith("obj-$(CONFIG_SAMPLE_RUST_DMA)")]
    if len(hits) != 1:
        fail("no obj-$(CONFIG_SAMPLE_RUST_DMA) line to put the sample after")
    lines.insert(hits[0] + 1, "obj-$(CONFIG_SAMPLE_RUST_RDMA_LOOPBACK)\t+= rust_rdma_loopback.o")
else:
    fail(f"unknown mode {mode}")
sys.stdout.write("\n".join(lines) + "\n")
EOF
}

# The layer's files, relative to the top directory.
layer_files() {
	(cd "$top" && find rust/kernel/rdma.rs rust/kernel/rdma rust/helpers/rdma.c \
		rust/kernel/block/mq/owned.rs rust/kernel/block/mq/owned -type f \
		! -name ".*" ! -name "*~" | sort)
}

# --- every layer file in exactly one patch -------------------------------------------------------
# A file of SERIES, relative to the top directory.
series_path() { case $1 in samples/*) echo "$1" ;; *) echo "rust/$1" ;; esac; }
declare -A in_patch=()
for entry in "${SERIES[@]}"; do
	for f in ${entry%%|*}; do
		[ -f "$top/$(series_path "$f")" ] || die "SERIES names $(series_path "$f"), which does not exist"
		[ -z "${in_patch[$f]:-}" ] || die "rust/$f is in two patches of SERIES"
		in_patch[$f]=1
	done
done
while IFS= read -r f; do
	[ -n "${in_patch[${f#rust/}]:-}" ] ||
		die "$f is in no patch: add it to SERIES in scripts/patches.sh"
done < <(layer_files)

# The cover letter says: the KUnit suite third to last, the sample second to last, the block
# patch last.
[[ ${SERIES[-2]} == "$SAMPLE|"* && ${SERIES[-3]} == kernel/rdma/kunit.rs\ * &&
	${SERIES[-1]} == kernel/block/* ]] ||
	die "SERIES must end with the KUnit suite's patch, the sample's, then the block one (the cover letter says so)"

# --- the throw-away repository -------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/rkdapl-patches.XXXXXX")
trap 'rm -rf "$work"' EXIT
repo=$work/linux
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_AUTHOR_DATE=$when
export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email GIT_COMMITTER_DATE=$when
g() { git -C "$repo" "$@"; }
changed=(MAINTAINERS rust/bindings/bindings_helper.h rust/helpers/helpers.c rust/kernel/lib.rs
	rust/kernel/block/mq.rs samples/rust/Kconfig samples/rust/Makefile)
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

# emit FILE (under rust/) MODS ITEMS: FILE as patch $n has it, in the repository: a parent
# declares only the submodules added so far (rdma.rs: MODS, with its own items if ITEMS=1),
# and items not used yet carry #[expect(dead_code)].
emit() {
	local f=$1 p u uf names items=1 mods=
	local tmp=$work/emit
	if [ "$f" = kernel/rdma.rs ]; then
		shape "$top/rust/$f" parent "$2" "$3" > "$tmp"
	elif [[ " ${PARENTS[*]} " == *" $f "* ]]; then
		for p in "$repo/rust/${f%.rs}"/*.rs; do
			[ -f "$p" ] && p=${p##*/} && mods+="${p%.rs} "
		done
		for u in "${NO_ITEMS_UNTIL[@]}"; do
			[ "${u%|*}" = "$f" ] && [ "$n" -lt "${u##*|}" ] && items=0
		done
		shape "$top/rust/$f" parent "$mods" "$items" > "$tmp"
		# Without its items, it has none to mark.
		[ $items = 1 ] || { cp "$tmp" "$repo/rust/$f"; return; }
	else
		cp "$top/rust/$f" "$tmp"
	fi
	for u in "${UNUSED_UNTIL[@]}"; do
		read -r uf names <<< "${u%|*}"
		if [ "$uf" = "$f" ] && [ "$n" -lt "${u##*|}" ]; then
			# shellcheck disable=SC2086 # one argument per item
			shape "$tmp" expect $names > "$tmp.new" && mv "$tmp.new" "$tmp"
		fi
	done
	cp "$tmp" "$repo/rust/$f"
}

n=0
maint_files=()
for entry in "${SERIES[@]}"; do
	n=$((n + 1))
	IFS='|' read -r files mods items <<< "$entry"
	for f in $files; do
		path=$(series_path "$f")
		mkdir -p "$(dirname "$repo/$path")"
		if [ "$path" = "$SAMPLE" ]; then
			shape "$top/$path" sample "$SAMPLE_USE_HERE" "$SAMPLE_USE_SERIES" \
				"$SAMPLE_IMPORT_HERE" > "$repo/$path"
			shape "$pristine/samples/rust/Kconfig" kconfig > "$repo/samples/rust/Kconfig"
			shape "$pristine/samples/rust/Makefile" makefile > "$repo/samples/rust/Makefile"
		else
			cp "$top/$path" "$repo/$path"
		fi
		# Of the block patch, only the part that lends pages to kernel::rdma.
		[ "$n" != "$BLOCK_PATCH" ] || [[ $path == */rdma.rs ]] && maint_files+=("$path")
	done
	if [ "$n" = "$BLOCK_PATCH" ]; then
		shape "$pristine/rust/kernel/block/mq.rs" blockmq > "$repo/rust/kernel/block/mq.rs"
	fi
	if [ "$n" = 1 ]; then
		shape "$pristine/rust/bindings/bindings_helper.h" bindings \
			"$top/rust/rkdapl/rdma_bindings.h" > "$repo/rust/bindings/bindings_helper.h"
		shape "$pristine/rust/helpers/helpers.c" helpers > "$repo/rust/helpers/helpers.c"
	fi
	if [ "$n" = 2 ]; then
		shape "$pristine/rust/kernel/lib.rs" lib > "$repo/rust/kernel/lib.rs"
	fi
	# Parents grow with every patch that adds a submodule; items not used yet carry
	# #[expect(dead_code)] until the patch that uses them.
	for f in kernel/rdma.rs "${PARENTS[@]}" $(printf '%s\n' "${UNUSED_UNTIL[@]}" | cut -d' ' -f1 | sort -u); do
		[ -f "$repo/rust/$f" ] && emit "$f" "$mods" "$items"
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

# The last patch must leave exactly the layer's source (and its KUnit configuration).
while IFS= read -r f; do
	cmp -s "$top/$f" "$repo/$f" ||
		{ diff "$top/$f" "$repo/$f" >&2 || true; die "the series does not reproduce $f (SERIES in scripts/patches.sh is out of date)"; }
done < <(layer_files; echo rust/kernel/rdma/.kunitconfig)

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
