# SPDX-License-Identifier: Apache-2.0
# The trainscope image: the preload library and Python shim (copied into training pods
# by the webhook's init container), the relay, agent, webhook and analyzer.
# e2e/node/images.sh builds the same image without a Docker engine: it reads
# RUNTIME_PACKAGES, USER and ENTRYPOINT from this file and the tree of `make image-root`.
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential pkg-config \
      libnats-dev libprotobuf-c-dev protobuf-c-compiler libyaml-dev libjansson-dev \
      libmicrohttpd-dev libcurl4-openssl-dev libssl-dev clang llvm libbpf-dev bpftool \
      libelf-dev zlib1g-dev ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# vmlinux.h must come from a BTF-enabled kernel: pass it in when building on another host
RUN make -j"$(nproc)" image-root

FROM debian:bookworm-slim
ARG RUNTIME_PACKAGES="libnats3.4 libprotobuf-c1 libyaml-0-2 libjansson4 libmicrohttpd12 libcurl4 libbpf1 libelf1 zlib1g ca-certificates"
RUN apt-get update && apt-get install -y --no-install-recommends $RUNTIME_PACKAGES \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/image/ /
USER 65532
ENTRYPOINT ["/usr/local/bin/trainscope"]
