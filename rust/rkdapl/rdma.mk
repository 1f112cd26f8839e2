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

# As rust/Makefile: with GCC, libclang parses the headers with GCC's flags minus those it does
# not know (the list follows rust/Makefile's bindgen_skip_c_flags of Linux 7.3).
rkdapl_bindgen_skip_c_flags := -mno-fp-ret-in-387 -mpreferred-stack-boundary=% \
	-mskip-rax-setup -mgeneral-regs-only -msign-return-address=% \
	-mindirect-branch=thunk-extern -mindirect-branch-register \
	-mfunction-return=thunk-extern -mrecord-mcount -mabi=lp64 \
	-mindirect-branch-cs-prefix -mstack-protector-guard% -mtraceback=no \
	-mno-pointers-to-nested-functions -mno-string \
	-mno-strict-align -mstrict-align -mdirect-extern-access \
	-mexplicit-relocs -mno-check-zero-division \
	-fconserve-stack -falign-jumps=% -falign-loops=% \
	-femit-struct-debug-baseonly -fno-ipa-cp-clone -fno-ipa-sra \
	-fno-partial-inlining -fplugin-arg-arm_ssp_per_task_plugin-% \
	-fno-reorder-blocks -fno-allow-store-data-races -fasan-shadow-offset=% \
	-fzero-call-used-regs=% -fno-stack-clash-protection \
	-fno-inline-functions-called-once -fsanitize=bounds-strict \
	-fstrict-flex-arrays=% -fmin-function-alignment=% \
	-fzero-init-padding-bits=% -mno-fdpic \
	-fdiagnostics-show-context -fdiagnostics-show-context=% \
	--param=% --param asan-% -fno-isolate-erroneous-paths-dereference \
	-ffixed-r2 -mmultiple -mno-readonly-in-sdata
ifdef CONFIG_CC_IS_CLANG
rkdapl_bindgen_c_flags = $(filter-out $(CC_FLAGS_LTO), $(c_flags))
else
rkdapl_bindgen_c_flags = $(filter-out $(rkdapl_bindgen_skip_c_flags), $(c_flags)) -w \
	--target=x86_64-linux-gnu
endif

# The kernel's bindgen parameters, without #[cfi_encoding] (an attribute a module may not
# enable; it matters only with CONFIG_CFI).
rkdapl_bindgen_params = $(shell grep -Ev '^\#|^$$|cfi_encoding' $(srctree)/rust/bindgen_parameters)

# Only the RDMA items, and the few types of their headers that kernel::bindings lacks.
rkdapl_bindgen_select = --allowlist-function '(__)?(ib|rdma)_.*' \
	--allowlist-type '(ib|rdma|iw|ib_uverbs|uverbs)_.*' \
	--allowlist-var '(IB|RDMA)_.*' --allowlist-item 'init_net' \
	--allowlist-function 'dev_get_by_name_rcu' \
	--allowlist-type 'sa_path_rec.*|sa_service_rec.*|opa_.*|roce_ah_attr|dim|dim_.*|auto_mode_param' \
	--allowlist-type 'packed_ulong|iphdr.*|irq_poll.*|port_pkey_state|tph_mem_type|ifla_vf_.*' \
	--allowlist-type 'uapi_definition.*|rdmacg_device|hw_stats_device_data' \
	--allowlist-type '(__)?[us](8|16|32|64)_?|bool_?|__(be|le)(16|32|64)|__wsum|dma_addr_t|phys_addr_t|gfp_t' \
	--no-recursive-allowlist

rkdapl_bindgen_common = --rust-target 1.85 --use-core --with-derive-default --ctypes-prefix ffi \
	--no-layout-tests --no-debug '.*' --enable-function-attribute-detection

quiet_cmd_rkdapl_bindgen = BINDGEN $@
      cmd_rkdapl_bindgen = \
	$(BINDGEN) $< $(rkdapl_bindgen_params) $(rkdapl_bindgen_select) $(rkdapl_bindgen_common) \
		-o $@ -- $(rkdapl_bindgen_c_flags) -fno-builtin -D__BINDGEN__ -DMODULE

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
