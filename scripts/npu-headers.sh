#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fetches the Ascend headers the NPU hooks are built against: the ACL runtime's
# (acl/acl_rt.h and the files it includes) and HCCL's (hccl/hccl.h), as the torch-npu
# wheel on PyPI ships them under torch_npu/include/. Nothing of CANN is linked: the
# headers only give the hooks' prototypes and constants.
#
#   scripts/npu-headers.sh DIR     leaves DIR/acl/, DIR/third_party/hccl/ and DIR/.done
#
# One wheel, pinned by version and checksum (the headers are the same in every
# Python build of it).
set -eu
DEST=${1:?usage: npu-headers.sh INCLUDE_DIR}
WHEEL=torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl
URL=https://files.pythonhosted.org/packages/48/cd/e0aa75f418ff943f228f096f341a0b3353258bac80880d08ea58c68efc16/$WHEEL
SHA256=7736f7d82cf9f16c7dfc4537f7e7c638153da760273a193455e70857f912189e

[ -f "$DEST/.done" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "npu-headers: fetching $WHEEL (43 MB) for the Ascend headers"
if ! curl -fsSL --retry 3 -o "$tmp/$WHEEL" "$URL"; then
	echo "npu-headers: could not download $URL" >&2
	echo "npu-headers: the NPU hooks are built against its headers; fetch it by hand into $DEST" >&2
	exit 1
fi
echo "$SHA256  $tmp/$WHEEL" | sha256sum -c --quiet - || {
	echo "npu-headers: $WHEEL does not have the pinned checksum" >&2
	exit 1
}
python3 - "$tmp/$WHEEL" "$tmp/out" <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
keep = ("torch_npu/include/acl/", "torch_npu/include/third_party/hccl/")
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(keep) and not n.endswith("/")]
    if not any(n.endswith("acl/acl_rt.h") for n in names) or \
       not any(n.endswith("hccl/hccl.h") for n in names):
        sys.exit("npu-headers: the wheel has no acl/acl_rt.h or hccl/hccl.h")
    for n in names:
        z.extract(n, out)
PY
mkdir -p "$DEST"
rm -rf "$DEST/acl" "$DEST/third_party"
cp -r "$tmp/out/torch_npu/include/acl" "$tmp/out/torch_npu/include/third_party" "$DEST/"
touch "$DEST/.done"
echo "npu-headers: $DEST"
