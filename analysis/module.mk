ANALYSIS_LIB_SRCS := analysis/stats.c analysis/dbscan.c analysis/ksigma.c analysis/failslow.c \
	analysis/params.c analysis/job.c analysis/report.c analysis/analyzer.c analysis/k8s.c analysis/otlp.c
ANALYSIS_LIB_OBJS := $(ANALYSIS_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
ANALYZER_BIN := $(BUILD)/bin/trainscope-analyzer

$(ANALYZER_BIN): $(BUILD)/obj/analysis/main.o $(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)
BINS += $(ANALYZER_BIN)

define analysis_test
$(BUILD)/test/$(1): $(BUILD)/obj/analysis/tests/$(1).o $(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) \
		$(PROTO_OBJ)
	$$(call link,$$^,$(CMOCKA_LIBS))
TESTS += $(BUILD)/test/$(1)
endef
$(foreach t,test_dbscan test_ksigma test_failslow test_job test_otlp,$(eval $(call analysis_test,$(t))))

# Integration tests: a real nats-server on loopback.
$(BUILD)/test/test_nats_it: $(BUILD)/obj/analysis/tests/test_nats_it.o \
		$(BUILD)/obj/common/tests/natsd.o $(ANALYSIS_LIB_OBJS) $(RELAY_LIB_OBJS) \
		$(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,$(CMOCKA_LIBS))
ITESTS += $(BUILD)/test/test_nats_it
