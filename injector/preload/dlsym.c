// SPDX-License-Identifier: Apache-2.0
/* The dlsym hook. Libraries that reach the CUDA driver look its functions up by name
 * (triton's launchers dlsym cuLaunchKernel; the CUDA runtimes inside cuBLAS and NCCL
 * dlsym cuGetProcAddress), so this is where their launches and allocations become
 * visible: the pointers handed out for those names are the driver.c wrappers. torch_npu
 * finds its aclnn operators the same way (aclnn.c).
 *
 * glibc resolves RTLD_NEXT and RTLD_DEFAULT relative to the object that called dlsym,
 * found from the return address. A C wrapper would make every lookup look like it came
 * from here, so the entry point is a tail-jumping trampoline: names the hook does not
 * want reach the real dlsym with the caller's own return address. */
#include "aclnn.h"
#include "driver.h"
#include "real.h"

#include <dlfcn.h>

TS_HIDDEN int ts_dlsym_route(const char *name);
TS_HIDDEN void *ts_dlsym_wrapped(void *handle, const char *name);

int ts_dlsym_route(const char *name)
{
	ts_real_dlsym_init();
	if (name && name[0] == 'c' && name[1] == 'u')
		ts_drv_debug_name("dlsym", name, 0, 0);
	return name && (ts_drv_wants(name) || ts_aclnn_wants(name));
}

void *ts_dlsym_wrapped(void *handle, const char *name)
{
	void *real = ts_real_dlsym(handle, name);

	if (ts_aclnn_wants(name)) {
		if (!real && (handle == RTLD_NEXT || handle == RTLD_DEFAULT))
			real = ts_find_real("libopapi", name);
		return real ? ts_aclnn_wrap(real) : NULL;
	}
	if (!real && (handle == RTLD_NEXT || handle == RTLD_DEFAULT))
		real = ts_find_real("libcuda", name);
	return real ? ts_drv_wrap_dlsym(name, real) : NULL;
}

#if defined(__x86_64__)
/* rdi = handle, rsi = name. Keeps both across the route call (stack stays 16-aligned),
 * then tail-jumps so the callee sees the original return address. */
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n"
	"	mov %rsi, %rdi\n"
	"	call ts_dlsym_route\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	test %eax, %eax\n"
	"	jnz ts_dlsym_wrapped\n"
	"	jmp *ts_real_dlsym_ptr(%rip)\n"
	".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
/* x0 = handle, x1 = name. Keeps both and the link register across the route call (a
 * 32-byte frame: sp stays 16-aligned), then branches without linking so the callee
 * returns straight to the caller with the caller's lr. The pointer is hidden, so
 * adrp + :lo12: reach it PC-relative: no text relocation, no GOT entry. x16 (IP0) is
 * free to clobber between calls. "bti c" (a hint, a nop before Armv8.5) lets the PLT's
 * indirect branch land here where branch protection is enforced. */
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, %function\n"
	".p2align 2\n"
	"dlsym:\n"
	"	hint #34\n"
	"	stp x0, x1, [sp, #-32]!\n"
	"	str x30, [sp, #16]\n"
	"	mov x0, x1\n"
	"	bl ts_dlsym_route\n"
	"	mov w16, w0\n"
	"	ldr x30, [sp, #16]\n"
	"	ldp x0, x1, [sp], #32\n"
	"	cbnz w16, 1f\n"
	"	adrp x16, ts_real_dlsym_ptr\n"
	"	ldr x16, [x16, #:lo12:ts_real_dlsym_ptr]\n"
	"	br x16\n"
	"1:	b ts_dlsym_wrapped\n"
	".size dlsym, .-dlsym\n");
#else
/* Other architectures have no trampoline: dlsym is not hooked there, so driver
 * functions looked up by name go unseen. */
#endif
