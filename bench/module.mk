# SPDX-License-Identifier: Apache-2.0
BENCH_CORE := $(BUILD)/bench/bench_core
$(BENCH_CORE): $(BUILD)/obj/bench/bench_core.o $(ANALYSIS_LIB_OBJS) $(RELAY_LIB_OBJS) \
		$(COMMON_OBJS) $(PROTO_OBJ) | $(PRELOAD_LIB)
	$(call link,$^,-ldl)
BENCHES += $(BENCH_CORE)

PINGPONG := $(BUILD)/bench/pingpong
$(PINGPONG): $(BUILD)/plain/bench/pingpong.o
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) -o $@ $^

BENCH_WEBHOOK := $(BUILD)/bench/bench_webhook
$(BENCH_WEBHOOK): $(BUILD)/obj/bench/bench_webhook.o $(BUILD)/obj/injector/webhook/server.o \
		$(BUILD)/obj/injector/webhook/events.o \
		$(WEBHOOK_LIB_OBJS) $(COMMON_OBJS)
	$(call link,$^,$(shell pkg-config --libs libcurl))

# make detect-bench: the analyzer's detection matrix (bench/results/detect.md).
DETECT_BENCH := $(BUILD)/bench/detect_bench
$(DETECT_BENCH): $(BUILD)/obj/bench/detect_bench.o $(BUILD)/obj/bench/detect_sim.o $(ANALYSIS_LIB_OBJS) \
		$(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)

# make real-bench: the recorded real training programs (bench/data) replayed and judged.
REAL_BENCH := $(BUILD)/bench/real_bench
$(REAL_BENCH): $(BUILD)/obj/bench/real_bench.o $(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)

# Simulated relays of large jobs (e2e/test-otlp.sh, the scale benchmark).
LOADGEN := $(BUILD)/bin/trainscope-loadgen
$(LOADGEN): $(BUILD)/obj/bench/loadgen.o $(RELAY_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,-lm)
BINS += $(LOADGEN)

# A connect storm against NATS with auth callout (bench/bench_connstorm.sh builds it).
CONNSTORM := $(BUILD)/bench/connstorm
$(CONNSTORM): $(BUILD)/obj/bench/connstorm.o $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)
connstorm: $(CONNSTORM)
.PHONY: connstorm
