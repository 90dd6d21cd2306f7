# SPDX-License-Identifier: Apache-2.0
ANALYSIS_LIB_SRCS := analysis/stats.c analysis/dbscan.c analysis/ksigma.c analysis/failslow.c \
	analysis/params.c analysis/peers.c analysis/change.c \
	analysis/job.c analysis/job_rows.c analysis/job_ranks.c analysis/job_eval.c \
	analysis/job_verdict.c analysis/job_waits.c analysis/job_peers.c analysis/job_change.c analysis/job_hang.c \
	analysis/job_lost.c analysis/job_unranked.c analysis/job_history.c analysis/job_net.c \
	analysis/job_net_place.c analysis/job_links.c analysis/job_snap.c \
	analysis/report.c analysis/refusals.c analysis/analyzer.c analysis/analyzer_ingest.c analysis/analyzer_snap.c \
	analysis/k8s.c analysis/k8s_writer.c analysis/otlp.c analysis/otlp_send.c analysis/otlp_env.c \
	analysis/metrics.c analysis/snapshot.c analysis/snapdiff.c analysis/snapstate.c \
	analysis/snapstate_load.c analysis/nodehealth.c analysis/k8s_nodes.c \
	analysis/node_sync.c
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
FUZZ_HDRS := $(wildcard analysis/*.h common/*.h)
$(BUILD)/fuzz/fuzz_ingest: analysis/tests/fuzz_ingest.c $(ANALYSIS_LIB_SRCS) $(COMMON_SRCS) \
		$(PROTO_SRC) $(PROTO_WIRE_SRC) $(OTLP_SRC) $(FUZZ_HDRS) | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) $(INCS) $(PKG_CFLAGS) $(filter %.c,$^) -o $@ $(LDLIBS_ALL)
FUZZERS += ingest
FUZZ_SEEDS_ingest := analysis/tests/corpus/ingest
FUZZ_ARGS_ingest := -max_len=16384

$(BUILD)/fuzz/fuzz_params: analysis/tests/fuzz_params.c analysis/params.c common/config.c \
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
