WEBHOOK_LIB_OBJS := $(BUILD)/obj/injector/webhook/mutate.o $(BUILD)/obj/common/b64.o
# The certificate files and their checks (OpenSSL): the binary and its test only.
WEBHOOK_CERT_OBJ := $(BUILD)/obj/injector/webhook/cert.o
WEBHOOK_CRYPTO_LIBS := $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto)

$(BUILD)/test/test_mutate: $(BUILD)/obj/injector/webhook/tests/test_mutate.o $(WEBHOOK_LIB_OBJS) \
		$(WEBHOOK_CERT_OBJ)
	$(call link,$^,$(CMOCKA_LIBS) $(WEBHOOK_CRYPTO_LIBS))
TESTS += $(BUILD)/test/test_mutate

# make fuzz: the AdmissionReview handling under libFuzzer with ASan + UBSan.
FUZZ_RUNS ?= 1000000
FUZZ_MUTATE := $(BUILD)/fuzz/fuzz_mutate
$(FUZZ_MUTATE): injector/webhook/tests/fuzz_mutate.c injector/webhook/mutate.c common/b64.c | fuzz-deps
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@clang -std=c11 -D_GNU_SOURCE -g -O1 -I. -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -Icommon $^ -o $@ $(shell pkg-config --libs jansson)

# libFuzzer's runtime ships apart from clang in Debian
.PHONY: fuzz fuzz-deps
fuzz-deps:
	@e2e/deps.sh clang libclang-rt-14-dev
fuzz: $(FUZZ_MUTATE)
	@mkdir -p $(BUILD)/fuzz/corpus
	@cp -n injector/webhook/tests/corpus/* $(BUILD)/fuzz/corpus/ 2>/dev/null || true
	@echo "fuzz: $(FUZZ_RUNS) runs of the AdmissionReview handling (log: $(BUILD)/fuzz/log)"
	@$(FUZZ_MUTATE) -runs=$(FUZZ_RUNS) -max_len=8192 -print_final_stats=1 \
		$(BUILD)/fuzz/corpus >$(BUILD)/fuzz/log 2>&1; rc=$$?; \
	grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+ +DONE)|ERROR|SUMMARY" \
		$(BUILD)/fuzz/log; exit $$rc

WEBHOOK_BIN := $(BUILD)/bin/trainscope-webhook
$(WEBHOOK_BIN): $(BUILD)/obj/injector/webhook/main.o $(BUILD)/obj/injector/webhook/server.o \
		$(BUILD)/obj/injector/webhook/bootstrap.o \
		$(WEBHOOK_LIB_OBJS) $(WEBHOOK_CERT_OBJ) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,$(WEBHOOK_CRYPTO_LIBS))
BINS += $(WEBHOOK_BIN)
