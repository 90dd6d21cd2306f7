// SPDX-License-Identifier: Apache-2.0
// Launch-bound microbenchmark: an empty kernel launched N times on one stream; prints
// microseconds per launch and what the preload counted. Run with and without
// LD_PRELOAD=libtrainscope.so (and with TRAINSCOPE_SAMPLE_N=1 for the timed path).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <cstdint>

__global__ void empty_kernel() {}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200000;
	cudaStream_t s;
	cudaStreamCreate(&s);
	for (int i = 0; i < 1000; i++)
		empty_kernel<<<1, 1, 0, s>>>();
	cudaStreamSynchronize(s);
	auto t0 = std::chrono::steady_clock::now();
	for (int i = 0; i < n; i++)
		empty_kernel<<<1, 1, 0, s>>>();
	auto t1 = std::chrono::steady_clock::now();
	cudaStreamSynchronize(s);
	double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
	uint64_t c[64] = {0}; // struct trainscope_device_counters, with room to grow
	void (*get)(uint64_t *) = (void (*)(uint64_t *))dlsym(RTLD_DEFAULT, "trainscope_get_device_counters");
	if (get)
		get(c);
	printf("{\"launches\": %d, \"us_per_launch\": %.4f, \"preload_launches\": %llu, \"samples\": %llu}\n",
	       n, us, (unsigned long long)c[0], (unsigned long long)c[3]);
	return 0;
}
