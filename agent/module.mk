# SPDX-License-Identifier: Apache-2.0
AGENT_BIN := $(BUILD)/bin/trainscope-agent
AGENT_SRCS := agent/agent.c agent/probe.c agent/ranks.c agent/nvml.c agent/dcmi.c agent/nic.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/obj/%.o)
AGENT_LIBS := $(shell pkg-config --libs libbpf 2>/dev/null || echo -lbpf -lelf -lz) -ldl

$(BUILD)/obj/agent/probe.o: $(BUILD)/gen/bpf/hostprobe.skel.h

$(AGENT_BIN): $(BUILD)/obj/agent/main.o $(AGENT_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,$(AGENT_LIBS))
BINS += $(AGENT_BIN)

$(eval $(call cmocka_test,test_ranks,$(BUILD)/obj/agent/tests/test_ranks.o \
	$(BUILD)/obj/agent/ranks.o $(COMMON_OBJS)))

# TEST DOUBLE of Huawei's libdcmi.so (agent/tests/dcmi_double.h), under the vendor's name
# in a folder of its own; the test loads it through TRAINSCOPE_DCMI_LIB. Never sanitized,
# like the preload doubles ($(BUILD)/dpic): it is dlopened, and an ASan test binary loads
# a plain library fine.
DCMI_DOUBLE := $(BUILD)/test/dcmi/libdcmi.so
$(DCMI_DOUBLE): $(BUILD)/dpic/agent/tests/dcmi_double.o
	$(call double_lib,$<,libdcmi.so)

$(eval $(call cmocka_test,test_dcmi,$(BUILD)/obj/agent/tests/test_dcmi.o \
	$(BUILD)/obj/agent/dcmi.o $(COMMON_OBJS),-ldl,$(DCMI_DOUBLE)))

$(eval $(call cmocka_test,test_nic,$(BUILD)/obj/agent/tests/test_nic.o $(BUILD)/obj/agent/nic.o))

# TEST DOUBLE of NVIDIA's libnvidia-ml.so.1 (agent/tests/nvml_double.h), the same way:
# the test loads it through TRAINSCOPE_NVML_LIB.
NVML_DOUBLE := $(BUILD)/test/nvml/libnvidia-ml.so.1
$(NVML_DOUBLE): $(BUILD)/dpic/agent/tests/nvml_double.o
	$(call double_lib,$<,libnvidia-ml.so.1)

$(eval $(call cmocka_test,test_nvml,$(BUILD)/obj/agent/tests/test_nvml.o \
	$(BUILD)/obj/agent/nvml.o $(COMMON_OBJS),-ldl,$(NVML_DOUBLE)))
