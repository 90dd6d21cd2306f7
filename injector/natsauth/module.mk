# SPDX-License-Identifier: Apache-2.0
# trainscope-natsauth: the NATS auth callout (TokenReview-backed roles).
NATSAUTH_LIB_OBJS := $(BUILD)/obj/injector/natsauth/rights.o $(BUILD)/obj/injector/natsauth/callout.o \
	$(BUILD)/obj/injector/natsauth/keep.o $(BUILD)/obj/injector/natsauth/cache.o \
	$(BUILD)/obj/injector/natsauth/review.o $(NKEYS_OBJS)
NATSAUTH_BIN := $(BUILD)/bin/trainscope-natsauth

$(NATSAUTH_BIN): $(BUILD)/obj/injector/natsauth/main.o $(NATSAUTH_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ)
	$(call link,$^,$(CRYPTO_LIBS))
BINS += $(NATSAUTH_BIN)

$(eval $(call cmocka_test,test_natsauth,$(BUILD)/obj/injector/natsauth/tests/test_natsauth.o \
	$(NATSAUTH_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ),$(CRYPTO_LIBS)))
$(eval $(call cmocka_test,test_storm,$(BUILD)/obj/injector/natsauth/tests/test_storm.o \
	$(NATSAUTH_LIB_OBJS) $(COMMON_OBJS) $(PROTO_OBJ),$(CRYPTO_LIBS)))
