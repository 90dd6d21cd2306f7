CLI_BIN := $(BUILD)/bin/trainscope
CLI_SRCS := cli/main.c cli/run.c cli/report.c cli/timeline.c cli/stream.c cli/plot.c

$(CLI_BIN): $(CLI_SRCS:%.c=$(BUILD)/obj/%.o) $(ANALYSIS_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)
BINS += $(CLI_BIN)
