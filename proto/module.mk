# SPDX-License-Identifier: Apache-2.0
# protobuf-c code generated at build time into $(BUILD)/gen/proto/.
PROTO_SRC := $(BUILD)/gen/proto/trainscope.pb-c.c
PROTO_HDR := $(BUILD)/gen/proto/trainscope.pb-c.h

$(PROTO_SRC) $(PROTO_HDR) &: proto/trainscope.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $<

$(BUILD)/obj/proto/trainscope.pb-c.o: $(PROTO_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Wno-unused-parameter $(SANFLAGS) -c $< -o $@

# proto/wire.c: Bundles packed and taken apart, for every program that links the wire.
PROTO_WIRE_SRC := proto/wire.c
PROTO_OBJ := $(BUILD)/obj/proto/trainscope.pb-c.o $(BUILD)/obj/proto/wire.o

OTLP_SRC := $(BUILD)/gen/proto/otlp_trace.pb-c.c
OTLP_HDR := $(BUILD)/gen/proto/otlp_trace.pb-c.h
$(OTLP_SRC) $(OTLP_HDR) &: proto/otlp_trace.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --c_out=$(BUILD)/gen $<

$(BUILD)/obj/proto/otlp_trace.pb-c.o: $(OTLP_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -Wno-unused-parameter $(SANFLAGS) -c $< -o $@

PROTO_OBJ += $(BUILD)/obj/proto/otlp_trace.pb-c.o
