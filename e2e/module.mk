# SPDX-License-Identifier: Apache-2.0
WORKLOAD_BIN := $(BUILD)/bin/workload
$(WORKLOAD_BIN): $(BUILD)/plain/e2e/workload/workload.o
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) -o $@ $^
BINS += $(WORKLOAD_BIN)

# e2e/test-faults.sh's hand-made batches (a buggy or hostile producer); test-only
FORGE_BIN := $(BUILD)/bin/forge
$(FORGE_BIN): $(BUILD)/obj/e2e/faults/forge.o $(TEST_BATCH_OBJ) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)
BINS += $(FORGE_BIN)
