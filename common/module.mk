# SPDX-License-Identifier: Apache-2.0
COMMON_SRCS := common/log.c common/config.c common/natsw_conn.c common/natsw_outbox.c common/natsw_stream.c \
	common/natsw_sub.c common/natsw_env.c common/natskv.c common/names.c common/httpd.c common/buf.c \
	common/ident.c common/visible.c common/kube.c common/kube_secret.c common/signals.c common/b64.c \
	common/numparse.c common/recording.c common/opts.c common/metric.c
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/obj/%.o)

# Helpers the tests share: running programs, the preload library and its doubles
# (common/tests/testutil.c, cmocka tests only), and trainscope.v1.Batch messages built by
# hand (common/tests/testbatch.c, with $(PROTO_OBJ)).
TEST_UTIL_OBJ  := $(BUILD)/obj/common/tests/testutil.o
TEST_BATCH_OBJ := $(BUILD)/obj/common/tests/testbatch.o

$(eval $(call cmocka_test,test_config,$(BUILD)/obj/common/tests/test_config.o $(COMMON_OBJS)))
$(eval $(call cmocka_test,test_names,$(BUILD)/obj/common/tests/test_names.o $(COMMON_OBJS)))
$(eval $(call cmocka_test,test_opts,$(BUILD)/obj/common/tests/test_opts.o $(COMMON_OBJS)))
$(eval $(call cmocka_test,test_metric,$(BUILD)/obj/common/tests/test_metric.o $(COMMON_OBJS)))

$(eval $(call cmocka_test,test_numparse,$(BUILD)/obj/common/tests/test_numparse.o \
	$(BUILD)/obj/common/numparse.o))

$(eval $(call cmocka_test,test_recording,$(BUILD)/obj/common/tests/test_recording.o \
	$(BUILD)/obj/common/recording.o))

$(eval $(call cmocka_test,test_httpd,$(BUILD)/obj/common/tests/test_httpd.o $(COMMON_OBJS)))

# make fuzz, target names: any name from the wire through every mapping (k8s_rules.h).
$(BUILD)/fuzz/fuzz_names: common/tests/fuzz_names.c common/names.c common/tests/k8s_rules.h \
		common/names.h | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) $(INCS) -Icommon/tests $(filter %.c,$^) -o $@
FUZZERS += names
FUZZ_SEEDS_names := common/tests/corpus/names
FUZZ_ARGS_names := -max_len=600

# make fuzz, target recording: any file as a recording (common/recording.h).
$(BUILD)/fuzz/fuzz_recording: common/tests/fuzz_recording.c common/recording.c \
		common/recording.h | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) $(INCS) $(filter %.c,$^) -o $@ -lz
FUZZERS += recording
FUZZ_SEEDS_recording := common/tests/corpus/recording
FUZZ_ARGS_recording := -max_len=4096

# nkeys and JWTs (OpenSSL): for the NATS auth callout and its test only.
NKEYS_OBJS := $(BUILD)/obj/common/nkeys.o
CRYPTO_LIBS := $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)

$(eval $(call cmocka_test,test_nkeys,$(BUILD)/obj/common/tests/test_nkeys.o $(NKEYS_OBJS),\
	$(CRYPTO_LIBS)))

$(eval $(call cmocka_test,test_ident,$(BUILD)/obj/common/tests/test_ident.o \
	$(BUILD)/obj/common/ident.o $(BUILD)/obj/common/visible.o $(BUILD)/obj/common/numparse.o))
