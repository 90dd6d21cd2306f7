// SPDX-License-Identifier: Apache-2.0
// Build-time check (never linked, never run): the HCCL declarations the C hooks use
// (hccl_defs.h) against the real hccl.h that torch-npu ships, which compiles only as
// C++. Every hook must take the real function's parameters in number, order and width
// (an enum counts as the integer of its size), and the constants and structs must have
// the real values and layout. A new HCCL that changes any of them fails `make`.
#include <cstddef>
#include <type_traits>

#include <hccl/hccl.h>

extern "C" {
#include "hccl_defs.h"
}

namespace {

template <class T> constexpr bool scalar_v = std::is_integral_v<T> || std::is_enum_v<T>;

// Two parameter types the ABI passes alike.
template <class A, class B> constexpr bool same_abi()
{
	using a = std::remove_cv_t<A>;
	using b = std::remove_cv_t<B>;
	if constexpr (std::is_same_v<a, b>)
		return true;
	else if constexpr (scalar_v<a> && scalar_v<b>)
		return sizeof(a) == sizeof(b);
	else if constexpr (std::is_pointer_v<a> && std::is_pointer_v<b>) {
		using pa = std::remove_pointer_t<a>;
		using pb = std::remove_pointer_t<b>;
		// const-ness of what a pointer points to is the caller's promise, not ABI
		if constexpr (std::is_void_v<std::remove_cv_t<pa>> ||
			      std::is_void_v<std::remove_cv_t<pb>>)
			return std::is_void_v<std::remove_cv_t<pa>> == std::is_void_v<std::remove_cv_t<pb>>;
		else if constexpr (std::is_class_v<pa> || std::is_class_v<pb>)
			return true; // struct layouts are checked below; opaque configs pass
		else
			return same_abi<pa, pb>();
	} else
		return false;
}

template <class R1, class... A1, class R2, class... A2>
constexpr bool same_sig(R1 (*)(A1...), R2 (*)(A2...))
{
	if constexpr (sizeof...(A1) != sizeof...(A2))
		return false;
	else
		return same_abi<R1, R2>() && (same_abi<A1, A2>() && ...);
}

#define CHECK(name, params)                                                             \
	static_assert(same_sig(&::name, static_cast<ts_hccl_result(*) params>(nullptr)), \
		      #name ": hccl_defs.h differs from hccl.h");
TS_HCCL_FNS(CHECK)
#undef CHECK

static_assert(TS_HCCL_SUCCESS == HCCL_SUCCESS && TS_HCCL_E_INTERNAL == HCCL_E_INTERNAL);
static_assert(TS_HCCL_ROOT_INFO_BYTES == HCCL_ROOT_INFO_BYTES);
static_assert(TS_HCCL_COMM_NAME_MAX == COMM_NAME_MAX_LENGTH);
static_assert(TS_HCCL_SEND == HCCL_SEND && TS_HCCL_RECV == HCCL_RECV);
static_assert(sizeof(ts_hccl_root_info) == sizeof(HcclRootInfo));
static_assert(sizeof(ts_hccl_sr_item) == sizeof(HcclSendRecvItem));
static_assert(offsetof(ts_hccl_sr_item, buf) == offsetof(HcclSendRecvItem, buf));
static_assert(offsetof(ts_hccl_sr_item, count) == offsetof(HcclSendRecvItem, count));
static_assert(offsetof(ts_hccl_sr_item, dtype) == offsetof(HcclSendRecvItem, dataType));
static_assert(offsetof(ts_hccl_sr_item, remote_rank) == offsetof(HcclSendRecvItem, remoteRank));
// the element sizes hccl.c's type_size table is indexed by
static_assert(HCCL_DATA_TYPE_INT8 == 0 && HCCL_DATA_TYPE_FP16 == 3 && HCCL_DATA_TYPE_FP32 == 4 &&
	      HCCL_DATA_TYPE_BFP16 == 11 && HCCL_DATA_TYPE_INT128 == 12 &&
	      HCCL_DATA_TYPE_HIF8 == 14 && HCCL_DATA_TYPE_FP8E8M0 == 17);

} // namespace
