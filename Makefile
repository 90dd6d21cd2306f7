# SPDX-License-Identifier: Apache-2.0
# trainscope: one non-recursive GNU Makefile; each folder adds its parts in module.mk.
# make [all|test|demo|e2e|bench|deps|lint|docs-check|docs-ref|clean|arm64-test|
#       update-exports|scale-san|scale-tsan|faults-tsan|tsan]   SAN=1 builds with ASan+UBSan into build/san,
#       SAN=thread with ThreadSanitizer into build/tsan.

# make ARCH=aarch64 cross-builds into build/aarch64 with Debian's aarch64-linux-gnu-gcc:
# the preload library and its tests only (make arm64-test runs them under qemu-user).
# Honoured from the command line only: an ARCH in the environment (some CI images set
# one) does not switch compilers.
ifeq ($(origin ARCH)/$(ARCH),command line/aarch64)
CROSS := aarch64-linux-gnu-
override SAN := 0
BUILD ?= build/aarch64
CC := $(CROSS)gcc
endif

SAN   ?= 0
ifeq ($(SAN),1)
BUILD ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
else ifeq ($(SAN),thread)
# ThreadSanitizer: the analyzer's threads (nats.c's, the HTTP server's, the Kubernetes
# writer's) against its mutexes. libnats and libmicrohttpd are not instrumented: a report
# within them alone would be named in scripts/tsan.supp (none is, so far).
BUILD ?= build/tsan
SANFLAGS := -fsanitize=thread -fno-omit-frame-pointer
export TSAN_OPTIONS ?= suppressions=$(CURDIR)/scripts/tsan.supp second_deadlock_stack=1
else
BUILD ?= build
SANFLAGS :=
endif

CC      ?= cc
PKGS    := libnats libprotobuf-c yaml-0.1 jansson libmicrohttpd libcurl
# The host's flags (-I/usr/include/x86_64-linux-gnu) must not reach a cross build, which
# needs none of these libraries.
PKG_CFLAGS := $(if $(CROSS),,$(shell pkg-config --cflags $(PKGS) 2>/dev/null))
PKG_LIBS   := $(if $(CROSS),,$(shell pkg-config --libs $(PKGS) 2>/dev/null))
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null || echo -lcmocka)

WARN    := -Wall -Wextra -Werror -Wno-missing-field-initializers
INCS    := -I$(BUILD)/gen -I. -Icommon -Iinjector/preload/include -Iinjector/preload
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) $(INCS) $(PKG_CFLAGS) $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) $(if $(CROSS),,-lz) -lpthread -lm $(LDLIBS)
GEN_HDRS   := $(if $(CROSS),,$(BUILD)/gen/proto/trainscope.pb-c.h $(BUILD)/gen/proto/otlp_trace.pb-c.h)

# Objects for executables/tests (sanitizers apply) and for the preload library (never
# sanitized: it is injected into programs that do not carry the ASan runtime).
$(BUILD)/obj/%.o: %.c | $(GEN_HDRS)
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

# One cmocka test: $(eval $(call cmocka_test,NAME,OBJECTS,LIBS,ORDER-ONLY,LIST)) links
# $(BUILD)/test/NAME from OBJECTS with cmocka and LIBS, after ORDER-ONLY (what it loads
# or runs when it runs: the preload library, test doubles), and adds it to LIST: TESTS
# (make unit), the default, or ITESTS (make integration).
define cmocka_test
$(BUILD)/test/$(1): $(2) $(if $(strip $(4)),| $(4))
	$$(call link,$$^,$$(CMOCKA_LIBS) $(3))
$(or $(strip $(5)),TESTS) += $(BUILD)/test/$(1)
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

.PHONY: all scale-san scale-tsan faults-tsan tsan test test-lane unit integration demo e2e e2e-node bench detect-bench real-bench deps lint clean image-root fuzz fuzz-deps \
	arm64-test arm64-run docs-check docs-ref
.DEFAULT_GOAL := all

ifdef CROSS
all: $(LIBS) $(PRELOAD_CROSS_TESTS)
else
all: $(LIBS) $(BINS)
endif

deps:
	@scripts/deps.sh

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
	@TRAINSCOPE_LIB=$(PRELOAD_LIB) scripts/run-tests.sh $(TESTS)

integration: all $(ITESTS)
	@scripts/run-tests.sh $(ITESTS)

# make test's stages, each timed (scripts/stage.sh; the table at the end). The servers the
# later suites need (e2e/k8s/tools.sh: Kubernetes, helm, Jaeger, the Collector...) build
# from their Go modules in the background at idle priority from the start: a cold
# cache's 10-15 minutes of Go builds run beside the suites that need none of them (the
# fault suites, the agent e2e), which come first. What the node e2e needs builds first
# (tools.sh node), the rest after (tools-rest: Jaeger, the Collector, Prometheus); the
# node's Debian packages and the images' root filesystems (two minutes of debootstrap)
# are made beside the fault suites: not beside the demo e2e's healthy jobs, nor beside
# the unit tests, whose NPU double runs on real time. tools-wait waits for what the node
# e2e needs. The node e2e, five minutes mostly spent waiting on its cluster, has the
# suites of test-lane beside it; the others run one after the other: beside each other,
# the fault suites' verdicts after a fault (a relay restarted, a flood; a healthy job
# called slow by its transfers) and the agent e2e's CPU hog missed in runs on 2 cores
# (bench/results/make-test.md).
STAGES := $(BUILD)/test-stages.txt
LANE := $(BUILD)/lane
STAGE = @scripts/stage.sh $(STAGES)
test: deps
	@rm -f $(STAGES) && mkdir -p $(BUILD) && date +%s.%N >$(STAGES).t0
	@scripts/background.sh start $(BUILD)/tools bash e2e/k8s/tools.sh node
	@scripts/background.sh start $(BUILD)/tools-rest sh -c \
		'scripts/background.sh wait $(BUILD)/tools >/dev/null; exec bash e2e/k8s/tools.sh'
	$(STAGE) build $(MAKE) --no-print-directory all $(TESTS) $(ITESTS)
	@$(if $(filter 1,$(SAN)),,scripts/background.sh start $(SAN_SCALE).bg $(SAN_BUILD))
	@$(if $(filter thread,$(SAN)),,scripts/background.sh start $(TSAN_SCALE).bg $(TSAN_BUILD))
	$(STAGE) docs-check $(MAKE) --no-print-directory docs-check
	$(STAGE) unit $(MAKE) --no-print-directory unit
	$(STAGE) real-bench $(MAKE) --no-print-directory real-bench
	$(STAGE) arm64-test $(MAKE) --no-print-directory arm64-test
	$(STAGE) integration $(MAKE) --no-print-directory integration
	$(STAGE) demo env BUILD=$(BUILD) e2e/test-demo.sh
	$(STAGE) local env BUILD=$(BUILD) e2e/test-local.sh
	@scripts/background.sh start $(BUILD)/node-prepare env BUILD=$(BUILD) \
		bash e2e/node/test-node.sh --prepare
	$(STAGE) faults env BUILD=$(BUILD) e2e/test-faults.sh
	$(if $(filter thread,$(SAN)),,$(STAGE) faults-tsan $(MAKE) --no-print-directory faults-tsan)
	$(STAGE) agent env BUILD=$(BUILD) e2e/test-agent.sh
	@rm -f $(LANE)/stages.txt && scripts/background.sh start --now $(LANE) \
		$(MAKE) --no-print-directory $(MAKEOVERRIDES) STAGES=$(LANE)/stages.txt test-lane
	@trap 'scripts/background.sh stop $(LANE); exit 130' INT TERM; \
		STAGE_QUIET=1 scripts/stage.sh $(STAGES) tools-wait sh -c 'scripts/background.sh \
		wait $(BUILD)/tools && scripts/background.sh wait $(BUILD)/node-prepare' && \
		STAGE_QUIET=1 scripts/stage.sh $(STAGES) node $(MAKE) --no-print-directory e2e-node; \
		rc=$$?; scripts/background.sh join $(LANE) || rc=1; \
		scripts/stage.sh $(STAGES) --beside $(LANE)/stages.txt; scripts/stage.sh $(STAGES); exit $$rc

# The suites that run beside the node e2e (make test): each starts its own servers on
# loopback (the node's are in a network namespace of their own), and their verdicts are
# of faults well past any load's noise (a rank's compute doubled); the agent e2e, whose
# healthy job must show no preemptor, and the fault suites run alone. Those that need
# none of tools-rest's come first: from an empty cache it is built while they run.
test-lane:
	$(STAGE) webhook env BUILD=$(BUILD) e2e/test-webhook.sh
	$(STAGE) launchers env BUILD=$(BUILD) e2e/test-launchers.sh
	$(STAGE) npu env BUILD=$(BUILD) e2e/test-npu.sh
	$(STAGE) tools-wait scripts/background.sh wait $(BUILD)/tools
	$(STAGE) auth env BUILD=$(BUILD) e2e/k8s/test-auth.sh
	$(STAGE) scale env BUILD=$(BUILD) e2e/test-scale.sh
	$(if $(filter 1,$(SAN)),,$(STAGE) scale-san $(MAKE) --no-print-directory scale-san)
	$(if $(filter thread,$(SAN)),,$(STAGE) scale-tsan $(MAKE) --no-print-directory scale-tsan)
	$(STAGE) tools-rest-wait scripts/background.sh wait $(BUILD)/tools-rest
	$(STAGE) k8s env BUILD=$(BUILD) e2e/k8s/test-k8s.sh
	$(STAGE) observe env BUILD=$(BUILD) e2e/test-observe.sh

# The scale test again with the analyzer, loadgen and the daemons under ASan+UBSan, at a
# reduced size: an analyzer once aborted in the scale bench with "double free or
# corruption" (most likely nats.c 3.4.1's subscription use-after-free, worked around in
# common/natsw_sub.c; bench/results/scale.md). `make SAN=1 test` runs every test so;
# this part runs in every `make test`.
# make test starts the sanitizer builds in the background (scripts/background.sh) once its
# own build is done, with the command line's variables (CC=, CFLAGS=); these targets wait
# for one that still runs before building there.
NPROC := $(shell nproc 2>/dev/null || echo 2)
SAN_SCALE := $(BUILD)/san-scale
SAN_BUILD = $(MAKE) --no-print-directory -j$(NPROC) $(MAKEOVERRIDES) SAN=1 BUILD=$(SAN_SCALE) all
bg_wait = @[ ! -e $(1).bg/bg.log ] || scripts/background.sh wait $(1).bg
scale-san: deps
	$(call bg_wait,$(SAN_SCALE))
	@$(MAKE) --no-print-directory SAN=1 BUILD=$(SAN_SCALE) all
	@BUILD=$(SAN_SCALE) RANKS=16 STEPS=200 e2e/test-scale.sh

# The same under ThreadSanitizer (built into $(BUILD)/tsan-scale), in every `make test`
# too (a minute or two): the analyzers' threads (nats.c's, the HTTP server's) against the
# main one, /metrics scraped back to back while a restarted analyzer restores its
# snapshot (that restore once ran unlocked). Every report is kept in
# $(BUILD)/tsan-scale/reports (scripts/tsan-run.sh); any one fails the target.
TSAN_SCALE := $(BUILD)/tsan-scale
TSAN_BUILD = $(MAKE) --no-print-directory -j$(NPROC) $(MAKEOVERRIDES) SAN=thread \
	BUILD=$(TSAN_SCALE) all
scale-tsan: deps
	$(call bg_wait,$(TSAN_SCALE))
	@$(MAKE) --no-print-directory SAN=thread BUILD=$(TSAN_SCALE) all
	@BUILD=$(TSAN_SCALE) RANKS=16 STEPS=200 scripts/tsan-run.sh $(TSAN_SCALE)/reports \
		e2e/test-scale.sh

# The fault suite (NATS killed, made slow, a full store, analyzers and relays killed
# mid-job, floods) the same way, in every `make test` too (some 4 minutes on 2 cores): the
# analyzer's keeper, HTTP and nats.c threads against its consume loop under every fault.
# Its reports are kept in $(TSAN_SCALE)/reports-faults. The floods are 3,000 jobs there,
# not 10,000: the instrumented analyzer takes minutes over 10,000 new jobs. make tsan: both.
faults-tsan: deps
	$(call bg_wait,$(TSAN_SCALE))
	@$(MAKE) --no-print-directory SAN=thread BUILD=$(TSAN_SCALE) all
	@BUILD=$(TSAN_SCALE) E2E_FLOOD_JOBS=3000 scripts/tsan-run.sh $(TSAN_SCALE)/reports-faults \
		e2e/test-faults.sh
tsan: scale-tsan faults-tsan

# The preload library for aarch64 (Grace Hopper nodes): cross-built into $(BUILD)/aarch64,
# its tests that need no Python and no network run under qemu-user. No -L sysroot: the
# cross libc (libc6-arm64-cross) and the arm64 libc that libcmocka0:arm64 pulls in are
# different builds, and qemu -L would pair one's loader with the other's libc.so.6.
# Children the tests spawn run under qemu too ($TS_TEST_QEMU, common/tests/testutil.c): registering
# a binfmt_misc handler is privileged and machine-wide, which a CI container may refuse.
# The compiler and flags are reset for the cross build: a host CC or CFLAGS given on the
# command line would reach it through MAKEFLAGS.
ARM64_DEPS := gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64
arm64-test:
	@if [ "$$(uname -m)" = aarch64 ]; then \
		echo "SKIP arm64-test: the host is aarch64, make unit tests the native build"; \
		exit 0; fi; \
	if ! scripts/deps.sh $(ARM64_DEPS); then \
		echo "SKIP arm64-test: cannot install $(ARM64_DEPS)"; exit 0; fi; \
	$(MAKE) --no-print-directory ARCH=aarch64 CC=aarch64-linux-gnu-gcc CFLAGS= LDLIBS= \
		BUILD=$(BUILD)/aarch64 arm64-run

ifdef CROSS
arm64-run: $(PRELOAD_LIB) $(PRELOAD_LINKS) $(PRELOAD_SYM_OK) $(PRELOAD_CROSS_TESTS)
	@TRAINSCOPE_LIB=$(PRELOAD_LIB) TS_TEST_QEMU=qemu-aarch64 scripts/run-tests.sh \
		$(PRELOAD_CROSS_TESTS)
else
arm64-run:
	@echo "arm64-run runs in the cross build: make arm64-test"; exit 1
endif

# A one-node cluster from real parts (kubelet, containerd): the chart and injected pods run.
e2e-node: deps
	@$(MAKE) --no-print-directory image-root
	@BUILD=$(BUILD) e2e/node/test-node.sh

FAULT ?= compute
RANKS ?= 8
demo: deps
	@$(MAKE) --no-print-directory all
	@BUILD=$(BUILD) FAULT=$(FAULT) RANKS=$(RANKS) scripts/demo.sh

e2e: deps
	@$(MAKE) --no-print-directory image-root
	@BUILD=$(BUILD) e2e/test-demo.sh
	@BUILD=$(BUILD) e2e/test-local.sh
	@BUILD=$(BUILD) e2e/test-faults.sh
	@BUILD=$(BUILD) e2e/test-agent.sh
	@BUILD=$(BUILD) e2e/test-webhook.sh
	@BUILD=$(BUILD) e2e/k8s/test-k8s.sh
	@BUILD=$(BUILD) e2e/k8s/test-auth.sh
	@BUILD=$(BUILD) e2e/node/test-node.sh

bench: deps
	@$(MAKE) --no-print-directory all $(BENCHES) $(PINGPONG) $(BENCH_WEBHOOK) $(HOOKDRIVE)
	@for b in $(BENCHES); do $$b $(PRELOAD_LIB) || exit 1; done
	@BUILD=$(BUILD) bench/bench_launch.sh
	@BUILD=$(BUILD) bench/bench_agent.sh
	@BUILD=$(BUILD) bench/bench_scale.sh
	@BUILD=$(BUILD) bench/bench_100k.sh
	@BUILD=$(BUILD) bench/bench_missed.sh
	@d=$$(mktemp -d) && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout $$d/key.pem \
		-out $$d/cert.pem -days 1 -subj /CN=localhost \
		-addext "subjectAltName=IP:127.0.0.1" 2>/dev/null && \
		$(BENCH_WEBHOOK) $$d; rc=$$?; rm -rf $$d; exit $$rc

detect-bench: deps
	@$(MAKE) --no-print-directory $(DETECT_BENCH)
	@$(DETECT_BENCH) $(DETECT_ARGS)

# The corpus of recorded real programs, each replayed into a fresh analyzer of the
# defaults and held to its label (bench/data/README.md): a gate of make test.
real-bench: deps
	@$(MAKE) --no-print-directory $(REAL_BENCH)
	@env $$(env | sed -n 's/^\(TRAINSCOPE_ANALYZER_[A-Z_]*\)=.*/-u \1/p') \
		$(REAL_BENCH) --data bench/data --min-healthy 20

lint: | $(NPU_STAMP)
	@NPU_INC=$(NPU_INC) scripts/lint.sh

# The docs against the tree, in seconds: every relative link and #anchor of README.md,
# CONTRIBUTING.md and docs/*.md resolves, docs/reference.md is what the programs say
# now (their --help, variables, metrics, --print-config, the chart's values, the CRD),
# and every source file starts with its SPDX licence line (scripts/spdx-check.sh).
# make docs-ref rewrites docs/reference.md.
DOCS_MD := README.md $(wildcard CONTRIBUTING.md) $(wildcard docs/*.md)
docs-check: $(BINS)
	@python3 scripts/docs-links.py $(DOCS_MD)
	@python3 scripts/docs-ref.py --check --bin $(BUILD)/bin
	@sh scripts/spdx-check.sh
	@python3 scripts/parts-check.py
docs-ref: $(BINS)
	@python3 scripts/docs-ref.py --bin $(BUILD)/bin

# Every fuzzer, one after the other, $(FUZZ_RUNS) runs each; one line each, and a failure
# once all have run if any failed (scripts/fuzz.sh: corpus, log and failing input in
# $(BUILD)/fuzz/NAME/). libFuzzer's runtime ships apart from clang in Debian.
fuzz-deps:
	@scripts/deps.sh clang libclang-rt-14-dev
fuzz: $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
	@rc=0; $(foreach t,$(FUZZERS),scripts/fuzz.sh $(t) $(BUILD)/fuzz $(FUZZ_RUNS) $(FUZZ_TIMEOUT) \
		$(FUZZ_SEEDS_$(t)) $(FUZZ_ARGS_$(t)) || rc=1;) exit $$rc

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
