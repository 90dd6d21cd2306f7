# trainscope: one non-recursive GNU Makefile; each folder adds its parts in module.mk.
# make [all|test|demo|e2e|bench|deps|lint|clean]   SAN=1 builds with ASan+UBSan into build/san.

SAN   ?= 0
ifeq ($(SAN),1)
BUILD ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else
BUILD ?= build
SANFLAGS :=
endif

CC      ?= cc
PKGS    := libnats libprotobuf-c yaml-0.1 jansson libmicrohttpd libcurl
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

WARN    := -Wall -Wextra -Werror -Wno-missing-field-initializers
INCS    := -I$(BUILD)/gen -I. -Icommon -Iinjector/preload/include -Iinjector/preload
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) $(INCS) $(PKG_CFLAGS) $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lz -lpthread -lm $(LDLIBS)

# Objects for executables/tests (sanitizers apply) and for the preload library (never
# sanitized: it is injected into programs that do not carry the ASan runtime).
$(BUILD)/obj/%.o: %.c | $(BUILD)/gen/proto/trainscope.pb-c.h $(BUILD)/gen/proto/otlp_trace.pb-c.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) $(SANFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC.pic  $<"
	@$(CC) $(CFLAGS_ALL) -fPIC -fvisibility=hidden -MMD -MP -c $< -o $@

# Programs that stand in for a user's training job are never sanitized either: the
# preload library is injected into them.
$(BUILD)/plain/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# Link helper: $(call link,objects,extra libs)
define link
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(SANFLAGS) -o $@ $(1) $(LDLIBS_ALL) $(2)
endef

# make fuzz: libFuzzer targets, ASan + UBSan. A module adds NAME to FUZZERS, a rule for
# $(BUILD)/fuzz/fuzz_NAME built with $(FUZZ_CC) (order-only on fuzz-deps), the folder of its
# committed seeds as FUZZ_SEEDS_NAME and extra libFuzzer flags as FUZZ_ARGS_NAME.
FUZZ_RUNS    ?= 1000000
FUZZ_TIMEOUT ?= 25
FUZZ_CC := clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
FUZZERS :=

BINS   :=
TESTS  :=
ITESTS :=
LIBS   :=
BENCHES :=

include proto/module.mk
include common/module.mk
include injector/preload/module.mk
include injector/relay/module.mk
include injector/webhook/module.mk
include injector/natsauth/module.mk
include analysis/module.mk
include cli/module.mk
include bpf/module.mk
include agent/module.mk
include e2e/module.mk
include bench/module.mk

.PHONY: all test unit integration demo e2e e2e-node bench detect-bench deps lint clean image-root fuzz fuzz-deps
.DEFAULT_GOAL := all

all: $(LIBS) $(BINS)

deps:
	@e2e/deps.sh

# The image's files as the Dockerfile copies them to / (e2e/node/images.sh too): the
# programs, the preload library with its $$PLATFORM links, the Python shim.
IMAGE_ROOT := $(BUILD)/image
image-root: all
	@rm -rf $(IMAGE_ROOT)
	@mkdir -p $(IMAGE_ROOT)/usr/local/bin $(IMAGE_ROOT)/opt/trainscope/lib
	@cp -a $(BUILD)/bin/. $(IMAGE_ROOT)/usr/local/bin/
	@cp -a $(BUILD)/lib/. $(IMAGE_ROOT)/opt/trainscope/lib/
	@cp -a injector/preload/python $(IMAGE_ROOT)/opt/trainscope/python
	@find $(IMAGE_ROOT) -name __pycache__ -prune -exec rm -rf {} +
	@echo "  IMAGE   $(IMAGE_ROOT)"

# Unit tests (cmocka), integration tests (a real nats-server), end to end (real
# processes: workload, relay, NATS, analyzer).
unit: all $(TESTS)
	@TRAINSCOPE_LIB=$(PRELOAD_LIB) e2e/run-tests.sh $(TESTS)

integration: all $(ITESTS)
	@e2e/run-tests.sh $(ITESTS)

test: deps
	@$(MAKE) --no-print-directory all $(TESTS) $(ITESTS)
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory integration
	@BUILD=$(BUILD) e2e/test-demo.sh
	@BUILD=$(BUILD) e2e/test-faults.sh
	@BUILD=$(BUILD) e2e/test-agent.sh
	@BUILD=$(BUILD) e2e/test-webhook.sh
	@BUILD=$(BUILD) e2e/k8s/test-k8s.sh
	@BUILD=$(BUILD) e2e/k8s/test-auth.sh
	@$(MAKE) --no-print-directory e2e-node

# A one-node cluster from real parts (kubelet, containerd): the chart and injected pods run.
e2e-node: deps
	@$(MAKE) --no-print-directory image-root
	@BUILD=$(BUILD) e2e/node/test-node.sh

FAULT ?= compute
RANKS ?= 8
demo: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) FAULT=$(FAULT) RANKS=$(RANKS) e2e/demo.sh

e2e: deps
	@$(MAKE) --no-print-directory image-root
	@BUILD=$(BUILD) e2e/test-demo.sh
	@BUILD=$(BUILD) e2e/test-faults.sh
	@BUILD=$(BUILD) e2e/test-agent.sh
	@BUILD=$(BUILD) e2e/test-webhook.sh
	@BUILD=$(BUILD) e2e/k8s/test-k8s.sh
	@BUILD=$(BUILD) e2e/k8s/test-auth.sh
	@BUILD=$(BUILD) e2e/node/test-node.sh

bench: deps
	@$(MAKE) --no-print-directory all $(BENCHES) $(PINGPONG) $(BENCH_WEBHOOK)
	@for b in $(BENCHES); do $$b $(PRELOAD_LIB) || exit 1; done
	@BUILD=$(BUILD) bench/bench_agent.sh
	@d=$$(mktemp -d) && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout $$d/key.pem \
		-out $$d/cert.pem -days 1 -subj /CN=localhost \
		-addext "subjectAltName=IP:127.0.0.1" 2>/dev/null && \
		$(BENCH_WEBHOOK) $$d; rc=$$?; rm -rf $$d; exit $$rc

detect-bench: deps
	@$(MAKE) --no-print-directory $(DETECT_BENCH)
	@$(DETECT_BENCH) $(DETECT_ARGS)

lint:
	@e2e/lint.sh

# Every fuzzer, one after the other, $(FUZZ_RUNS) runs each; one line each, and a failure
# once all have run if any failed (e2e/fuzz.sh: corpus, log and failing input in
# $(BUILD)/fuzz/NAME/). libFuzzer's runtime ships apart from clang in Debian.
fuzz-deps:
	@e2e/deps.sh clang libclang-rt-14-dev
fuzz: $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
	@rc=0; $(foreach t,$(FUZZERS),e2e/fuzz.sh $(t) $(BUILD)/fuzz $(FUZZ_RUNS) $(FUZZ_TIMEOUT) \
		$(FUZZ_SEEDS_$(t)) $(FUZZ_ARGS_$(t)) || rc=1;) exit $$rc

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
