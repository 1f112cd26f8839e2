// SPDX-License-Identifier: GPL-2.0
/*
 * rkdapl_layout.ko: the layout check of selftests/layout/Kbuild. layout_generated.h holds one
 * _Static_assert per size, alignment and field offset that libclang (through bindgen, with the
 * flags of rkdapl's bindings) reported for the structs the Rust RDMA layer uses; compiling it
 * with the kernel's own C compiler and flags proves the two agree. The module does nothing.
 */
#include <linux/module.h>
#include <linux/stddef.h>
#include "../../rust/rkdapl/rdma_bindings.h"
#include "layout_generated.h"

MODULE_DESCRIPTION("rkdapl: libclang lays out the RDMA structs as the C compiler does");
MODULE_LICENSE("GPL");
/* What was checked, for selftests/layout.sh (modinfo -F layout rkdapl_layout.ko). */
MODULE_INFO(layout, RKDAPL_LAYOUT_SUMMARY);
