/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The headers of the Rust RDMA layer's bindings (rust/rkdapl/bindings.rs). Upstream, these
 * lines go into rust/bindings/bindings_helper.h (make patches).
 */
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>
#include <rdma/mr_pool.h>
