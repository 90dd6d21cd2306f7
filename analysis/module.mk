# SPDX-License-Identifier: Apache-2.0
# The analyzer's parts (analysis/README.md): each part may include the parts above it in
# this list, never one below it (make lint checks).
ANALYSIS_DETECT_SRCS := $(addprefix analysis/detect/,stats.c dbscan.c ksigma.c failslow.c \
	params.c peers.c change.c traceid.c snapdiff.c job.c job_rows.c job_ranks.c job_eval.c \
	job_verdict.c job_waits.c job_peers.c job_change.c job_hang.c job_lost.c job_unranked.c \
	job_history.c job_net.c job_net_place.c job_links.c job_snap.c)
ANALYSIS_SINKS_SRCS := $(addprefix analysis/sinks/,report.c k8s.c k8s_writer.c k8s_nodes.c \
	otlp.c otlp_send.c otlp_env.c metrics.c nodehealth.c node_sync.c)
ANALYSIS_INGEST_SRCS := $(addprefix analysis/ingest/,refusals.c analyzer.c analyzer_ingest.c \
	analyzer_snap.c)
ANALYSIS_STATE_SRCS := $(addprefix analysis/state/,snapshot.c snapstate.c snapstate_load.c)
ANALYSIS_LIB_SRCS := $(ANALYSIS_DETECT_SRCS) $(ANALYSIS_SINKS_SRCS) $(ANALYSIS_INGEST_SRCS) \
	$(ANALYSIS_STATE_SRCS)
ANALYSIS_LIB_OBJS := $(ANALYSIS_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
ANALYZER_BIN := $(BUILD)/bin/trainscope-analyzer
# The daemon around the library (main_impl.h): its loop, options, HTTP and exporters.
ANALYZER_MAIN_SRCS := analysis/main.c analysis/main_options.c analysis/main_http.c \
	analysis/main_export.c analysis/main_lease.c \
	analysis/main_keeper.c

$(ANALYZER_BIN): $(ANALYZER_MAIN_SRCS:%.c=$(BUILD)/obj/%.o) $(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) \
		$(PROTO_OBJ)
	$(call link,$^)
BINS += $(ANALYZER_BIN)

# test_limits, test_snapshot and test_bundle feed the analyzer batches they pack
# (TEST_BATCH_OBJ).
$(foreach t,test_dbscan test_ksigma test_failslow test_job test_net test_otlp test_limits \
	test_bundle test_floors,$(eval $(call cmocka_test,$(t),$(BUILD)/obj/analysis/tests/$(t).o \
	$(if $(filter test_limits test_bundle,$(t)),$(TEST_BATCH_OBJ)) \
	$(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ))))
# test_snapshot and test_nodehealth store in a bucket in memory (tests/fakekv.c) in
# place of JetStream's.
$(foreach t,test_snapshot test_nodehealth,$(eval $(call cmocka_test,$(t),\
	$(BUILD)/obj/analysis/tests/$(t).o $(BUILD)/obj/analysis/tests/fakekv.o \
	$(if $(filter test_snapshot,$(t)),$(TEST_BATCH_OBJ)) $(ANALYSIS_LIB_OBJS) \
	$(filter-out %/natskv.o,$(COMMON_OBJS)) $(PROTO_OBJ))))

# make fuzz: the batch ingestion with evaluation, reports and /metrics (every source the
# analyzer links but its main*.c), and the YAML configuration. make fuzz-seeds writes the
# ingestion's seeds (analysis/tests/fuzz_seeds.c).
FUZZ_HDRS := $(wildcard analysis/*.h analysis/*/*.h common/*.h)
$(BUILD)/fuzz/fuzz_ingest: analysis/tests/fuzz_ingest.c $(ANALYSIS_LIB_SRCS) $(COMMON_SRCS) \
		$(PROTO_SRC) $(PROTO_WIRE_SRC) $(OTLP_SRC) $(FUZZ_HDRS) | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) $(INCS) $(PKG_CFLAGS) $(filter %.c,$^) -o $@ $(LDLIBS_ALL)
FUZZERS += ingest
FUZZ_SEEDS_ingest := analysis/tests/corpus/ingest
FUZZ_ARGS_ingest := -max_len=16384

$(BUILD)/fuzz/fuzz_params: analysis/tests/fuzz_params.c analysis/detect/params.c common/config.c \
		common/numparse.c \
		$(FUZZ_HDRS) | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) $(INCS) $(PKG_CFLAGS) $(filter %.c,$^) -o $@ $(shell pkg-config --libs yaml-0.1) -lm
FUZZERS += params
FUZZ_SEEDS_params := analysis/tests/corpus/params
FUZZ_ARGS_params := -max_len=4096

.PHONY: fuzz-seeds
$(BUILD)/fuzz/fuzz_seeds: $(BUILD)/obj/analysis/tests/fuzz_seeds.o $(TEST_BATCH_OBJ) $(PROTO_OBJ)
	$(call link,$^)
fuzz-seeds: $(BUILD)/fuzz/fuzz_seeds
	@mkdir -p $(FUZZ_SEEDS_ingest)
	@$< $(FUZZ_SEEDS_ingest)

# Integration tests: a real nats-server on loopback.
$(eval $(call cmocka_test,test_nats_it,$(BUILD)/obj/analysis/tests/test_nats_it.o \
	$(BUILD)/obj/common/tests/natsd.o $(ANALYSIS_LIB_OBJS) $(RELAY_LIB_OBJS) \
	$(COMMON_OBJS) $(PROTO_OBJ),,,ITESTS))
