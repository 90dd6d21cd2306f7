# libtrainscope.so: the preload library (position-independent, never sanitized).
PRELOAD_SRCS := $(addprefix injector/preload/,api.c real.c dlsym.c driver.c gpu.c cuda.c \
		cublas.c nccl.c ncclprof.c ring.c) common/ident.c
PRELOAD_LIB  := $(BUILD)/lib/libtrainscope.so
RING_OBJS    := $(BUILD)/obj/injector/preload/ring.o $(BUILD)/obj/common/ident.o

$(PRELOAD_LIB): $(PRELOAD_SRCS:%.c=$(BUILD)/pic/%.o)
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ $^ -lpthread -ldl -Wl,--no-undefined -Wl,-z,now
LIBS += $(PRELOAD_LIB)

$(BUILD)/test/test_ring: $(BUILD)/obj/injector/preload/tests/test_ring.o $(RING_OBJS)
	$(call link,$^,$(CMOCKA_LIBS))
TESTS += $(BUILD)/test/test_ring

$(BUILD)/test/test_preload: $(BUILD)/obj/injector/preload/tests/test_preload.o $(RING_OBJS) \
		| $(PRELOAD_LIB)
	$(call link,$^,$(CMOCKA_LIBS) -ldl)
TESTS += $(BUILD)/test/test_preload
