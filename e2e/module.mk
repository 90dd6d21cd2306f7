WORKLOAD_BIN := $(BUILD)/bin/workload
$(WORKLOAD_BIN): $(BUILD)/obj/e2e/workload/workload.o
	$(call link,$^)
BINS += $(WORKLOAD_BIN)
