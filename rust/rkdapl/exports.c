// SPDX-License-Identifier: GPL-2.0
/*
 * Exports rkdapl's C ABI (the Rust `extern "C"` functions of rust/rkdapl/abi) to other
 * modules. Declarations and documentation: include/rkdapl.h.
 *
 * Every symbol is exported in the symbol namespace "RKDAPL": a consumer module declares
 * MODULE_IMPORT_NS("RKDAPL") (C) or `imports_ns: ["RKDAPL"]` in its module! (Rust), or modpost
 * refuses to link it and the kernel refuses to load it.
 */
#include <linux/export.h>
#include <linux/module.h>
#include "../../include/rkdapl.h"

MODULE_VERSION(RKDAPL_VERSION);

EXPORT_SYMBOL_NS_GPL(__rkdapl_ia_open, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ia_close, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ia_query, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(__rkdapl_ia_open_addr, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(__rkdapl_ia_open_netdev, "RKDAPL");
/* IAs in a given network namespace */
EXPORT_SYMBOL_NS_GPL(__rkdapl_ia_open_net, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(__rkdapl_ia_open_addr_net, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ia_query_port, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ia_set_async_evd, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_pz_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_pz_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_create_pages, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_create_sg, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_alloc, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_sync_rdma_read, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_lmr_sync_rdma_write, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_rmr_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_rmr_bind, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_rmr_unbind, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_rmr_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_pooled_rmr_bind, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_pooled_rmr_unbind, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_evd_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_evd_dequeue, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_evd_wait, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_evd_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_evd_modify_upcall, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_connect, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_connect_from, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_disconnect, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_get_state, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_query, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_reset, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_psp_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_psp_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_cr_accept, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_cr_reject, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_cr_query, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_send, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_send_sg, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_recv, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_rdma_write, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_rdma_read, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_fetch_add, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_cmp_swap, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_rdma_write_imm, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_send_with_invalidate, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_send_imm, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_post_chain, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_srq_create, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_srq_post_recv, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_srq_set_lw, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_srq_query, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_srq_free, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_ep_create_with_srq, "RKDAPL");
/* Names of the API's values, for messages */
EXPORT_SYMBOL_NS_GPL(rkdapl_status_msg, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_event_msg, "RKDAPL");
EXPORT_SYMBOL_NS_GPL(rkdapl_op_msg, "RKDAPL");

/* The Rust API (rust/rkdapl/api/) for Rust consumer modules: rkdapl's Rust symbols, listed at build. */
#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_NS_GPL(sym, "RKDAPL")
#include "exports_rkdapl_generated.h"

/*
 * The Rust side declares these structures again (rust/rkdapl/abi/, the only place) and checks
 * the same sizes, so that a field added on one side only fails the build.
 */
static_assert(sizeof(struct rkdapl_event) == 128);
static_assert(offsetof(struct rkdapl_event, flags) == 56);
static_assert(offsetof(struct rkdapl_event, private_data) == 68);
static_assert(offsetof(struct rkdapl_event, port) == 124);
static_assert(sizeof(struct rkdapl_dto) == 64);
/* Values the Rust side spells again (DtoOp, abi/evd.rs's event flags). */
static_assert(RKDAPL_DTO_SEND_IMM == 11);
static_assert(RKDAPL_EVENT_MORE == 1 << 3);
static_assert(offsetof(struct rkdapl_dto, remote) == 24);
static_assert(offsetof(struct rkdapl_dto, cookie) == 56);
static_assert(offsetof(struct rkdapl_ep_attr, max_rdma_read_in) == 16);
static_assert(offsetof(struct rkdapl_ep_attr, rnr_retry_count) == 28);
static_assert(offsetof(struct rkdapl_ep_attr, max_pooled_rmrs) == 32);
static_assert(offsetof(struct rkdapl_ep_attr, remote_addr) == 40);
static_assert(offsetof(struct rkdapl_ep_attr, path_mtu) == 168);
static_assert(sizeof(struct rkdapl_ep_attr) == 176);
static_assert(offsetof(struct rkdapl_cr_param, local_port) == 128);
static_assert(sizeof(struct rkdapl_cr_param) == 136);
static_assert(sizeof(struct rkdapl_ia_attr) == 120);
static_assert(offsetof(struct rkdapl_ia_attr, transport) == 104);
static_assert(offsetof(struct rkdapl_ia_attr, max_read_iov) == 112);
static_assert(sizeof(struct rkdapl_port_attr) == 32);
static_assert(sizeof(struct rkdapl_srq_attr) == 24);
static_assert(offsetof(struct rkdapl_srq_attr, low_watermark) == 8);
static_assert(offsetof(struct rkdapl_srq_attr, max_srq_iov) == 20);
