# SPDX-License-Identifier: Apache-2.0
CLI_BIN := $(BUILD)/bin/trainscope
CLI_SRCS := cli/main.c cli/run.c cli/report.c cli/timeline.c cli/stream.c cli/plot.c cli/report_kube.c \
	cli/local.c cli/record.c

$(CLI_BIN): $(CLI_SRCS:%.c=$(BUILD)/obj/%.o) $(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ) \
	$(BUILD)/obj/injector/preload/ring.o
	$(call link,$^)
BINS += $(CLI_BIN)

# kubectl runs it for "kubectl trainscope report ...": the same binary, reading the
# cluster's SlowNodeReports by default
KUBECTL_PLUGIN := $(BUILD)/bin/kubectl-trainscope
$(KUBECTL_PLUGIN): $(CLI_BIN)
	@ln -sf trainscope $@
BINS += $(KUBECTL_PLUGIN)
