WORKLOAD_BIN := $(BUILD)/bin/workload
$(WORKLOAD_BIN): $(BUILD)/plain/e2e/workload/workload.o
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) -o $@ $^
BINS += $(WORKLOAD_BIN)
