# SPDX-License-Identifier: GPL-2.0
# The bindgen flags of the Rust RDMA layer's bindings, shared by rust/rkdapl/rdma.mk (which
# generates the bindings rkdapl.ko is built with) and selftests/layout/Kbuild (which checks that
# libclang, parsing the headers with exactly these flags, lays the RDMA structs out as the
# kernel's C compiler does). Needs Kbuild's c_flags, so it is included from a Kbuild file.

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

# What follows `--` on a bindgen command line: the C flags libclang parses the headers with.
rkdapl_bindgen_clang_flags = $(rkdapl_bindgen_c_flags) -fno-builtin -D__BINDGEN__ -DMODULE
