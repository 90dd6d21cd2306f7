# SPDX-License-Identifier: Apache-2.0
RELAY_LIB_SRCS := injector/relay/relay.c injector/relay/scan.c injector/relay/side.c \
		  injector/relay/identity.c injector/relay/agg.c injector/relay/batch.c \
		  injector/relay/bundle.c
RELAY_LIB_OBJS := $(RELAY_LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/injector/preload/ring.o
RELAY_BIN := $(BUILD)/bin/trainscope-relay

$(RELAY_BIN): $(BUILD)/obj/injector/relay/main.o $(RELAY_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^)
BINS += $(RELAY_BIN)

$(eval $(call cmocka_test,test_agg,$(BUILD)/obj/injector/relay/tests/test_agg.o \
	$(RELAY_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)))

$(eval $(call cmocka_test,test_bundler,$(BUILD)/obj/injector/relay/tests/test_bundler.o \
	$(RELAY_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)))

$(eval $(call cmocka_test,test_relay,$(BUILD)/obj/injector/relay/tests/test_relay.o \
	$(RELAY_LIB_OBJS) $(TEST_UTIL_OBJ) \
	$(BUILD)/obj/common/tests/natsd.o $(COMMON_OBJS) $(PROTO_OBJ)))
