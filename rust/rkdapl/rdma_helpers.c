// SPDX-License-Identifier: GPL-2.0
/*
 * The Rust RDMA layer's C helpers (rust/helpers/rdma.c), compiled into rkdapl.ko. In the
 * kernel, rust/helpers/helpers.c defines __rust_helper (to mark helpers LLVM may inline into
 * Rust); in a module each helper is an ordinary function.
 */
#define __rust_helper
#include "../helpers/rdma.c"
