// SPDX-License-Identifier: Apache-2.0
// Segment microbenchmark: the host cost of a stream that waits on another's work before
// each of its kernels, as Lightning's gradient stream does (one AccumulateGrad kernel
// between two waits). Stream B waits on an event of stream A, then runs one empty
// kernel, PER times a step (trainscope_step_begin/end, when the preload is there), for
// STEPS steps; prints microseconds per wait-and-launch and the preload's segment
// counters. Run without LD_PRELOAD, with it, and with TRAINSCOPE_SEGMENT_EVERY=1 (every
// segment timed, as before segment sampling).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

__global__ void empty_kernel() {}

typedef void (*step_fn)(uint64_t);

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 2000, per = argc > 2 ? atoi(argv[2]) : 50;
	step_fn begin = (step_fn)dlsym(RTLD_DEFAULT, "trainscope_step_begin");
	step_fn end = (step_fn)dlsym(RTLD_DEFAULT, "trainscope_step_end");
	cudaStream_t a, b;
	cudaEvent_t ev;

	cudaStreamCreate(&a);
	cudaStreamCreate(&b);
	cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	for (int i = 0; i < 1000; i++)
		empty_kernel<<<1, 1, 0, b>>>();
	cudaDeviceSynchronize();
	auto t0 = std::chrono::steady_clock::now();
	for (int s = 0; s < steps; s++) {
		if (begin)
			begin((uint64_t)s);
		for (int i = 0; i < per; i++) {
			empty_kernel<<<1, 1, 0, a>>>();
			cudaEventRecord(ev, a);
			cudaStreamWaitEvent(b, ev, 0);
			empty_kernel<<<1, 1, 0, b>>>();
		}
		if (end)
			end((uint64_t)s);
		if (s % 8 == 7) /* the host runs at most a few steps ahead, as a trainer does */
			cudaStreamSynchronize(b);
	}
	auto t1 = std::chrono::steady_clock::now();
	cudaDeviceSynchronize();
	double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / steps / per;
	uint64_t c[64] = { 0 }; // struct trainscope_device_counters, with room to grow
	int (*get)(uint64_t *, size_t) =
		(int (*)(uint64_t *, size_t))dlsym(RTLD_DEFAULT, "trainscope_get_device_counters_sized");
	if (get)
		get(c, sizeof(c));
	// segments [2], seg_waits [20], seg_untimed [22]
	printf("{\"steps\": %d, \"per_step\": %d, \"us_per_wait_launch\": %.4f, \"segments\": %llu, "
	       "\"seg_waits\": %llu, \"seg_untimed\": %llu}\n",
	       steps, per, us, (unsigned long long)c[2], (unsigned long long)c[20],
	       (unsigned long long)c[22]);
	return 0;
}
