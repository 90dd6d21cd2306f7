# SPDX-License-Identifier: Apache-2.0
# libtrainscope.so: the preload library (position-independent, never sanitized).
PRELOAD_SRCS := $(addprefix injector/preload/,api.c real.c dlsym.c driver.c gpu.c graph.c cuda.c \
		cublas.c comms.c coll.c nccl.c ncclprof.c ncclprof_compat.c ncclchain.c acl.c aclnn.c \
		selftime.c \
		hccl.c ring.c) \
		common/ident.c common/visible.c common/numparse.c
PRELOAD_LIB  := $(BUILD)/lib/libtrainscope.so
RING_OBJS    := $(BUILD)/obj/injector/preload/ring.o $(BUILD)/obj/common/ident.o \
		$(BUILD)/obj/common/visible.o $(BUILD)/obj/common/numparse.o

PRELOAD_PIC  := $(PRELOAD_SRCS:%.c=$(BUILD)/pic/%.o)
PRELOAD_COMPAT := injector/preload/glibc_compat.h

# Old glibc versions of what the library imports (glibc_compat.h); libdl and libpthread
# by file name: before 2.34 the old dlopen and pthread_create live there, not in libc.
$(PRELOAD_PIC): CFLAGS_ALL += -include $(PRELOAD_COMPAT)
$(PRELOAD_PIC): $(PRELOAD_COMPAT)
PRELOAD_LDLIBS := -Wl,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2

$(PRELOAD_LIB): $(PRELOAD_PIC)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ $(PRELOAD_LDLIBS) -Wl,--no-undefined -Wl,-z,now
LIBS += $(PRELOAD_LIB)

# What the library exports, against the committed list: an entry point added, removed or
# re-typed is an ABI change (the rule is in trainscope.h), made on purpose or not at all.
# Checked by make unit and make arm64-test; make update-exports rewrites the list (its
# '#' lines kept). nm -D names a versioned symbol with its version; the section markers
# older linkers export (__bss_start, _edata, _end) and _init/_fini are not ours. The
# stamp is kept out of $(BUILD)/lib, which image-root ships.
PRELOAD_SYM    := injector/preload/libtrainscope.sym
PRELOAD_SYM_OK := $(BUILD)/test/libtrainscope.sym.ok
define preload_exports
	$(CROSS)nm -D --defined-only --format=posix $(1) | \
		awk '$$1 !~ /^(__bss_start|_edata|_end|_init|_fini)$$/ { print $$1, $$2 }' | \
		LC_ALL=C sort
endef
$(PRELOAD_SYM_OK): $(PRELOAD_LIB) $(PRELOAD_SYM)
	@mkdir -p $(dir $@)
	@echo "  CHECK   exports of $(PRELOAD_LIB)"
	@$(call preload_exports,$<) > $@.now
	@if ! grep -v '^#' $(PRELOAD_SYM) | diff -u --label $(PRELOAD_SYM) --label $< - $@.now; then \
		echo "libtrainscope.so's exports differ from $(PRELOAD_SYM) (- listed, + built)."; \
		echo "If the change is meant (trainscope.h's ABI rule: add, never remove or"; \
		echo "change an entry point), run: make BUILD=$(BUILD) update-exports"; \
		echo "and commit $(PRELOAD_SYM)."; \
		exit 1; fi
	@touch $@
unit: $(PRELOAD_SYM_OK)

.PHONY: update-exports
update-exports: $(PRELOAD_LIB)
	@{ grep '^#' $(PRELOAD_SYM); $(call preload_exports,$<); } > $(PRELOAD_SYM).new
	@mv $(PRELOAD_SYM).new $(PRELOAD_SYM)
	@echo "  WROTE   $(PRELOAD_SYM)"

# The webhook preloads lib/$PLATFORM/libtrainscope.so, a literal $PLATFORM: glibc expands
# it (x86_64, haswell, xeon_phi, aarch64) and finds one of these links; musl does not,
# finds no such file and skips the preload, where it would fail to start the program
# on the glibc library's imports.
PRELOAD_PLATFORMS := x86_64 haswell xeon_phi aarch64
PRELOAD_LINKS := $(PRELOAD_PLATFORMS:%=$(dir $(PRELOAD_LIB))%/libtrainscope.so)
$(PRELOAD_LINKS): | $(PRELOAD_LIB)
	@mkdir -p $(dir $@)
	@ln -sfn ../libtrainscope.so $@
LIBS += $(PRELOAD_LINKS)

$(eval $(call cmocka_test,test_ring,$(BUILD)/obj/injector/preload/tests/test_ring.o $(RING_OBJS)))

# A user's program under the $PLATFORM preload: glibc, and musl where musl-gcc is
# (Debian package musl-tools; without it the musl test says it is skipped).
MUSL_CC := $(if $(CROSS),,$(shell command -v musl-gcc 2>/dev/null))
PLAT_HELLO := $(BUILD)/test/plat/hello-glibc $(if $(MUSL_CC),$(BUILD)/test/plat/hello-musl)
$(BUILD)/test/plat/hello-glibc: injector/preload/tests/plat_hello.c
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) -std=c11 -O2 $(WARN) -o $@ $<
$(BUILD)/test/plat/hello-musl: injector/preload/tests/plat_hello.c
	@mkdir -p $(dir $@)
	@echo "  LD.musl $@"
	@$(MUSL_CC) -std=c11 -O2 $(WARN) -o $@ $<

$(eval $(call cmocka_test,test_preload,$(BUILD)/obj/injector/preload/tests/test_preload.o \
	$(RING_OBJS) $(TEST_UTIL_OBJ),-ldl,\
	$(PRELOAD_LIB) $(PRELOAD_LINKS) $(PLAT_HELLO)))

$(eval $(call cmocka_test,test_abi,$(BUILD)/obj/injector/preload/tests/test_abi.o \
	$(TEST_UTIL_OBJ),,$(PRELOAD_LIB)))

# TEST DOUBLES of the CUDA driver, runtime, cuBLAS and NCCL (tests/double/double.h),
# under the vendors' library names, and the scenario driver that runs under the preload.
# Never sanitized: the preload library is injected into the driver.
DOUBLE_DIR := $(BUILD)/test/double
DOUBLE_LIBS := $(addprefix $(DOUBLE_DIR)/,libcuda.so.1 libcudart.so.13 libcublas.so.13 \
		libnccl.so.2 libtsd_user.so)
HOOKDRIVE := $(DOUBLE_DIR)/hookdrive
DOUBLE_RPATH := -Wl,-rpath,'$$ORIGIN'

$(BUILD)/dpic/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC.dbl  $<"
	@$(CC) $(CFLAGS_ALL) -fPIC -MMD -MP -c $< -o $@

# $(call double_lib,object,soname,extra link arguments)
define double_lib
	@mkdir -p $(dir $@)
	@echo "  LD.dbl  $@"
	@$(CC) -shared -Wl,-soname,$(2) -o $@ $(1) $(3) -ldl -lpthread
endef

$(DOUBLE_DIR)/libcuda.so.1: $(BUILD)/dpic/injector/preload/tests/double/cuda_double.o
	$(call double_lib,$<,libcuda.so.1)
$(DOUBLE_DIR)/libcudart.so.13: $(BUILD)/dpic/injector/preload/tests/double/cudart_double.o
	$(call double_lib,$<,libcudart.so.13)
$(DOUBLE_DIR)/libcublas.so.13: $(BUILD)/dpic/injector/preload/tests/double/cublas_double.o
	$(call double_lib,$<,libcublas.so.13)
$(DOUBLE_DIR)/libnccl.so.2: $(BUILD)/dpic/injector/preload/tests/double/nccl_double.o
	$(call double_lib,$<,libnccl.so.2)
$(DOUBLE_DIR)/libtsd_user.so: $(BUILD)/dpic/injector/preload/tests/double/user_double.o \
		$(DOUBLE_DIR)/libnccl.so.2 $(DOUBLE_DIR)/libcublas.so.13
	$(call double_lib,$^,libtsd_user.so,$(DOUBLE_RPATH))

# The runtime before the driver: the search order RTLD_NEXT is tested against.
$(HOOKDRIVE): $(BUILD)/plain/injector/preload/tests/double/hookdrive.o \
		$(BUILD)/plain/injector/preload/tests/double/drive.o \
		$(BUILD)/plain/injector/preload/ring.o $(BUILD)/plain/common/ident.o \
		$(BUILD)/plain/common/visible.o $(BUILD)/plain/common/numparse.o \
		$(DOUBLE_DIR)/libcudart.so.13 $(DOUBLE_DIR)/libcuda.so.1 | $(DOUBLE_DIR)/libtsd_user.so
	@echo "  LD      $@"
	@$(CC) -o $@ $(filter %.o,$^) $(DOUBLE_DIR)/libcudart.so.13 $(DOUBLE_DIR)/libcuda.so.1 \
		$(DOUBLE_RPATH) -ldl -lpthread

# The ACL runtime, aclnn and HCCL doubles (tests/double/npu_double.h) and their driver: unit
# scenarios for test_hooks and the multi-rank NPU job of e2e/test-npu.sh.
NPUDRIVE := $(DOUBLE_DIR)/npudrive
$(DOUBLE_DIR)/libascendcl.so: $(BUILD)/dpic/injector/preload/tests/double/acl_double.o
	$(call double_lib,$<,libascendcl.so)
$(DOUBLE_DIR)/libhccl.so: $(BUILD)/dpic/injector/preload/tests/double/hccl_double.o \
		$(DOUBLE_DIR)/libascendcl.so
	$(call double_lib,$^,libhccl.so,$(DOUBLE_RPATH))
$(DOUBLE_DIR)/libopapi.so: $(BUILD)/dpic/injector/preload/tests/double/opapi_double.o \
		$(DOUBLE_DIR)/libascendcl.so
	$(call double_lib,$^,libopapi.so,$(DOUBLE_RPATH))
$(NPUDRIVE): $(BUILD)/plain/injector/preload/tests/double/npudrive.o \
		$(BUILD)/plain/injector/preload/tests/double/drive.o \
		$(BUILD)/plain/injector/preload/ring.o $(BUILD)/plain/common/ident.o \
		$(BUILD)/plain/common/visible.o $(BUILD)/plain/common/numparse.o \
		$(DOUBLE_DIR)/libhccl.so $(DOUBLE_DIR)/libascendcl.so | $(DOUBLE_DIR)/libopapi.so
	@echo "  LD      $@"
	@$(CC) -o $@ $(filter %.o,$^) $(DOUBLE_DIR)/libhccl.so $(DOUBLE_DIR)/libascendcl.so \
		$(DOUBLE_RPATH) -ldl -lpthread

$(eval $(call cmocka_test,test_hooks,$(BUILD)/obj/injector/preload/tests/test_hooks.o \
	$(TEST_UTIL_OBJ) $(BUILD)/obj/common/ident.o $(BUILD)/obj/common/visible.o \
	$(BUILD)/obj/common/numparse.o,,$(PRELOAD_LIB) $(HOOKDRIVE) $(NPUDRIVE)))

# A second NCCL profiler plugin (tests/double/profiler2_double.c), the stand-in for a
# user's own that the library chains behind its own, built once per ABI: v5 under the
# name NCCL's loader makes of the short name tsd2, v4, and v3 (which the chain refuses).
PROF2_ABIS := 5 4 3
PROF2_LIBS := $(DOUBLE_DIR)/libnccl-profiler-tsd2.so $(DOUBLE_DIR)/libnccl-profiler-tsd2v4.so \
		$(DOUBLE_DIR)/libnccl-profiler-tsd2v3.so
$(PROF2_ABIS:%=$(BUILD)/dpic/prof2/v%/profiler2_double.o): $(BUILD)/dpic/prof2/v%/profiler2_double.o: \
		injector/preload/tests/double/profiler2_double.c
	@mkdir -p $(dir $@)
	@echo "  CC.dbl  $< (v$*)"
	@$(CC) $(CFLAGS_ALL) -fPIC -DPROF2_ABI=$* -MMD -MP -c $< -o $@
$(DOUBLE_DIR)/libnccl-profiler-tsd2.so: $(BUILD)/dpic/prof2/v5/profiler2_double.o
	$(call double_lib,$<,libnccl-profiler-tsd2.so)
$(DOUBLE_DIR)/libnccl-profiler-tsd2v%.so: $(BUILD)/dpic/prof2/v%/profiler2_double.o
	$(call double_lib,$<,libnccl-profiler-tsd2v$*.so)

$(eval $(call cmocka_test,test_ncclchain,$(BUILD)/obj/injector/preload/tests/test_ncclchain.o \
	$(TEST_UTIL_OBJ) $(RING_OBJS),-ldl,$(PRELOAD_LIB) $(PROF2_LIBS)))

$(eval $(call cmocka_test,test_shim,$(BUILD)/obj/injector/preload/tests/test_shim.o \
	$(TEST_UTIL_OBJ) $(RING_OBJS),,$(PRELOAD_LIB)))

# The public API's ABI: a caller built against the v1 header (tests/abi/v1/, kept
# verbatim) and callers of the current one with smaller and bigger sizes, against this
# library with the CUDA doubles loaded.
$(eval $(call cmocka_test,test_api_abi,$(BUILD)/obj/injector/preload/tests/test_api_abi.o \
	$(BUILD)/obj/injector/preload/tests/abi/v1/caller.o \
	$(TEST_UTIL_OBJ),-ldl,\
	$(PRELOAD_LIB) $(DOUBLE_DIR)/libcuda.so.1 $(DOUBLE_DIR)/libcudart.so.13))

# What make arm64-test runs under qemu-user: the tests that need no Python.
PRELOAD_CROSS_TESTS := $(addprefix $(BUILD)/test/,test_ring test_abi test_api_abi test_preload test_hooks)

# The Ascend headers the NPU hooks are built against, fetched once from the torch-npu
# wheel on PyPI into the tool cache (scripts/npu-headers.sh). acl.c includes the real ACL
# headers; HCCL's header is C++ only, so the hooks' own declarations (hccl_defs.h) are
# compiled beside it as C++ and must match it (tests/hccl_abi_check.cc).
TS_CACHE  ?= $(or $(TRAINSCOPE_TOOLS),$(HOME)/.cache/trainscope)
NPU_INC   := $(TS_CACHE)/npu/torch_npu-2.14.0/include
NPU_STAMP := $(NPU_INC)/.done
$(NPU_STAMP):
	@scripts/npu-headers.sh $(NPU_INC)
$(BUILD)/pic/injector/preload/acl.o: CFLAGS_ALL += -isystem $(NPU_INC)
$(BUILD)/pic/injector/preload/acl.o: | $(NPU_STAMP)

HCCL_ABI_OK := $(BUILD)/test/hccl_abi.ok
$(HCCL_ABI_OK): injector/preload/tests/hccl_abi_check.cc injector/preload/hccl_defs.h | $(NPU_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CHECK   hccl_defs.h against hccl.h"
	@$(CXX) -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Iinjector/preload -I$(NPU_INC) \
		-I$(NPU_INC)/third_party/hccl/inc $<
	@touch $@
LIBS += $(HCCL_ABI_OK)
