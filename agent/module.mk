AGENT_BIN := $(BUILD)/bin/trainscope-agent
AGENT_SRCS := agent/agent.c agent/probe.c agent/ranks.c agent/nvml.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/obj/%.o)
AGENT_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz) -ldl

$(BUILD)/obj/agent/probe.o: $(BUILD)/gen/bpf/hostprobe.skel.h

$(AGENT_BIN): $(BUILD)/obj/agent/main.o $(AGENT_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,$(AGENT_LIBS))
BINS += $(AGENT_BIN)

$(BUILD)/test/test_ranks: $(BUILD)/obj/agent/tests/test_ranks.o $(BUILD)/obj/agent/ranks.o \
		$(COMMON_OBJS)
	$(call link,$^,$(CMOCKA_LIBS))
TESTS += $(BUILD)/test/test_ranks
