# SPDX-License-Identifier: Apache-2.0
# CO-RE programs: vmlinux.h from the running kernel's BTF, objects by clang, skeletons
# by bpftool, all under $(BUILD)/gen/bpf.
BPF_CLANG ?= clang
BPFTOOL   ?= $(shell command -v bpftool || echo /usr/sbin/bpftool)
BPF_ARCH  := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VMLINUX_H := $(BUILD)/gen/bpf/vmlinux.h

$(VMLINUX_H):
	@mkdir -p $(dir $@)
	@echo "  BTF     $@"
	@$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/gen/bpf/%.bpf.o: bpf/%.bpf.c bpf/%.h $(VMLINUX_H)
	@echo "  BPF     $<"
	@$(BPF_CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/gen/bpf -Ibpf \
		-Wall -Werror -c $< -o $@

$(BUILD)/gen/bpf/%.skel.h: $(BUILD)/gen/bpf/%.bpf.o
	@echo "  SKEL    $@"
	@$(BPFTOOL) gen skeleton $< name $* > $@.tmp && mv $@.tmp $@
.SECONDARY: $(BUILD)/gen/bpf/hostprobe.bpf.o
