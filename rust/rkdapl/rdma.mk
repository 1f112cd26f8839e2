# SPDX-License-Identifier: GPL-2.0
# The Rust RDMA layer (rust/kernel/rdma.rs, rust/kernel/rdma/, rust/helpers/rdma.c) compiled
# into rkdapl.ko: distribution kernels build ib_core as a module, which the kernel crate cannot
# link against. The layer gets its own bindings of the RDMA headers and of its C helpers,
# generated here as the kernel's rust/Makefile generates kernel::bindings (same bindgen
# parameters, same C flags), limited to the RDMA items: every other type they use is taken from
# kernel::bindings (rust/rkdapl/bindings.rs), so values pass between the layer and the kernel
# crate unchanged. Included by ../../Kbuild.

rkdapl-y += rust/rkdapl/rdma_helpers.o
# The helpers are called from Rust only: no C prototypes (as CFLAGS_REMOVE_helpers.o upstream).
CFLAGS_rust/rkdapl/rdma_helpers.o := -Wno-missing-prototypes -Wno-missing-declarations

# The bindgen flags (shared with selftests/layout, which checks the layout they give).
include $(src)/rust/rkdapl/rdma-bindgen.mk

quiet_cmd_rkdapl_bindgen = BINDGEN $@
      cmd_rkdapl_bindgen = \
	$(BINDGEN) $< $(rkdapl_bindgen_params) $(rkdapl_bindgen_select) $(rkdapl_bindgen_common) \
		-o $@ -- $(rkdapl_bindgen_clang_flags)

$(obj)/rust/rkdapl/rdma_bindings_generated.rs: $(src)/rust/rkdapl/rdma_bindings.h FORCE
	$(call if_changed_dep,rkdapl_bindgen)
targets += rust/rkdapl/rdma_bindings_generated.rs

# The helpers' prototypes, bound as rust/Makefile binds rust/helpers: `rust_helper_X` as `X`.
quiet_cmd_rkdapl_bindgen_helpers = BINDGEN $@
      cmd_rkdapl_bindgen_helpers = \
	$(BINDGEN) $< --blocklist-type '.*' --allowlist-var '' --allowlist-function 'rust_helper_.*' \
		$(rkdapl_bindgen_common) -o $@ -- $(rkdapl_bindgen_c_flags) -fno-builtin -D__BINDGEN__ \
		-DMODULE -Wno-missing-prototypes -Wno-missing-declarations; \
	sed -Ei 's/pub fn rust_helper_([a-zA-Z0-9_]*)/\#[link_name="rust_helper_\1"]\n    pub fn \1/g' $@

$(obj)/rust/rkdapl/rdma_helpers_generated.rs: $(src)/rust/rkdapl/rdma_helpers.c FORCE
	$(call if_changed_dep,rkdapl_bindgen_helpers)
targets += rust/rkdapl/rdma_helpers_generated.rs

$(obj)/rust/rkdapl/rkdapl.o: $(obj)/rust/rkdapl/rdma_bindings_generated.rs \
	$(obj)/rust/rkdapl/rdma_helpers_generated.rs
