// SPDX-License-Identifier: GPL-2.0
/*
 * Exports rkdapl's C ABI (the Rust `extern "C"` functions of rust/rkdapl/abi) to other
 * modules. Declarations and documentation: include/rkdapl.h.
 */
#include <linux/export.h>
#include <linux/module.h>
#include "../../include/rkdapl.h"

EXPORT_SYMBOL_GPL(__rkdapl_ia_open);
EXPORT_SYMBOL_GPL(rkdapl_ia_close);
EXPORT_SYMBOL_GPL(rkdapl_ia_query);
EXPORT_SYMBOL_GPL(__rkdapl_ia_open_addr);
EXPORT_SYMBOL_GPL(__rkdapl_ia_open_netdev);
/* IAs in a given network namespace */
EXPORT_SYMBOL_GPL(__rkdapl_ia_open_net);
EXPORT_SYMBOL_GPL(__rkdapl_ia_open_addr_net);
EXPORT_SYMBOL_GPL(rkdapl_ia_query_port);
EXPORT_SYMBOL_GPL(rkdapl_ia_set_async_evd);
EXPORT_SYMBOL_GPL(rkdapl_pz_create);
EXPORT_SYMBOL_GPL(rkdapl_pz_free);
EXPORT_SYMBOL_GPL(rkdapl_lmr_create);
EXPORT_SYMBOL_GPL(rkdapl_lmr_free);
EXPORT_SYMBOL_GPL(rkdapl_lmr_create_pages);
EXPORT_SYMBOL_GPL(rkdapl_lmr_create_sg);
EXPORT_SYMBOL_GPL(rkdapl_lmr_alloc);
EXPORT_SYMBOL_GPL(rkdapl_lmr_sync_rdma_read);
EXPORT_SYMBOL_GPL(rkdapl_lmr_sync_rdma_write);
EXPORT_SYMBOL_GPL(rkdapl_rmr_create);
EXPORT_SYMBOL_GPL(rkdapl_rmr_bind);
EXPORT_SYMBOL_GPL(rkdapl_rmr_unbind);
EXPORT_SYMBOL_GPL(rkdapl_rmr_free);
EXPORT_SYMBOL_GPL(rkdapl_ep_pooled_rmr_bind);
EXPORT_SYMBOL_GPL(rkdapl_ep_pooled_rmr_unbind);
EXPORT_SYMBOL_GPL(rkdapl_evd_create);
EXPORT_SYMBOL_GPL(rkdapl_evd_dequeue);
EXPORT_SYMBOL_GPL(rkdapl_evd_wait);
EXPORT_SYMBOL_GPL(rkdapl_evd_free);
EXPORT_SYMBOL_GPL(rkdapl_evd_modify_upcall);
EXPORT_SYMBOL_GPL(rkdapl_ep_create);
EXPORT_SYMBOL_GPL(rkdapl_ep_connect);
EXPORT_SYMBOL_GPL(rkdapl_ep_disconnect);
EXPORT_SYMBOL_GPL(rkdapl_ep_get_state);
EXPORT_SYMBOL_GPL(rkdapl_ep_query);
EXPORT_SYMBOL_GPL(rkdapl_ep_free);
EXPORT_SYMBOL_GPL(rkdapl_ep_reset);
EXPORT_SYMBOL_GPL(rkdapl_psp_create);
EXPORT_SYMBOL_GPL(rkdapl_psp_free);
EXPORT_SYMBOL_GPL(rkdapl_cr_accept);
EXPORT_SYMBOL_GPL(rkdapl_cr_reject);
EXPORT_SYMBOL_GPL(rkdapl_cr_query);
EXPORT_SYMBOL_GPL(rkdapl_post_send);
EXPORT_SYMBOL_GPL(rkdapl_post_recv);
EXPORT_SYMBOL_GPL(rkdapl_post_rdma_write);
EXPORT_SYMBOL_GPL(rkdapl_post_rdma_read);
EXPORT_SYMBOL_GPL(rkdapl_post_fetch_add);
EXPORT_SYMBOL_GPL(rkdapl_post_cmp_swap);
EXPORT_SYMBOL_GPL(rkdapl_post_rdma_write_imm);
EXPORT_SYMBOL_GPL(rkdapl_post_send_with_invalidate);
EXPORT_SYMBOL_GPL(rkdapl_post_send_imm);
EXPORT_SYMBOL_GPL(rkdapl_post_chain);
EXPORT_SYMBOL_GPL(rkdapl_srq_create);
EXPORT_SYMBOL_GPL(rkdapl_srq_post_recv);
EXPORT_SYMBOL_GPL(rkdapl_srq_set_lw);
EXPORT_SYMBOL_GPL(rkdapl_srq_query);
EXPORT_SYMBOL_GPL(rkdapl_srq_free);
EXPORT_SYMBOL_GPL(rkdapl_ep_create_with_srq);

/* The Rust API (rust/rkdapl/api/) for Rust consumer modules: rkdapl's Rust symbols, listed at build. */
#define EXPORT_SYMBOL_RUST_GPL(sym) extern int sym; EXPORT_SYMBOL_GPL(sym)
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
