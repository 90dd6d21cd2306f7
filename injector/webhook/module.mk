# SPDX-License-Identifier: Apache-2.0
WEBHOOK_LIB_OBJS := $(BUILD)/obj/injector/webhook/mutate.o $(BUILD)/obj/common/b64.o
# The certificate files and their checks (OpenSSL): the binary and its test only.
WEBHOOK_CERT_OBJ := $(BUILD)/obj/injector/webhook/cert.o
WEBHOOK_CRYPTO_LIBS := $(CRYPTO_LIBS)

$(eval $(call cmocka_test,test_mutate,$(BUILD)/obj/injector/webhook/tests/test_mutate.o \
	$(WEBHOOK_LIB_OBJS) $(WEBHOOK_CERT_OBJ),$(WEBHOOK_CRYPTO_LIBS)))

# make fuzz: the AdmissionReview handling.
$(BUILD)/fuzz/fuzz_mutate: injector/webhook/tests/fuzz_mutate.c injector/webhook/mutate.c \
		common/b64.c | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(FUZZ_CC) -I. -Icommon $^ -o $@ $(shell pkg-config --libs jansson)
FUZZERS += mutate
FUZZ_SEEDS_mutate := injector/webhook/tests/corpus
FUZZ_ARGS_mutate := -max_len=8192

WEBHOOK_BIN := $(BUILD)/bin/trainscope-webhook
$(WEBHOOK_BIN): $(BUILD)/obj/injector/webhook/main.o $(BUILD)/obj/injector/webhook/server.o \
		$(BUILD)/obj/injector/webhook/bootstrap.o $(BUILD)/obj/injector/webhook/events.o \
		$(BUILD)/obj/injector/webhook/missed.o \
		$(WEBHOOK_LIB_OBJS) $(WEBHOOK_CERT_OBJ) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,$(WEBHOOK_CRYPTO_LIBS))
BINS += $(WEBHOOK_BIN)
