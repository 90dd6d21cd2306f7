// SPDX-License-Identifier: Apache-2.0
// Timestamp microbenchmark: what a device timestamp costs, by kind of marker, on a stream
// the GPU is kept busy on. Markers: a timing event record (as trainscope's segment and GEMM
// pairs), an event record with timing disabled, and a one-thread "stamp" kernel that
// writes the GPU's %globaltimer into mapped host memory (read with no driver call), a
// stream write of a counter (cuStreamWriteValue32) alone, and that write timed by a
// timing event on a side stream armed beforehand to wait for the value (the timing
// event then costs the busy stream nothing, if the GPU keeps the two apart).
//   1. Device time: each round launches KERNELS kernels of about US microseconds across all
//      SMs, far faster than the GPU runs them; every EVERY-th gap holds a marker. The
//      median round against the plain rounds gives the device time a marker adds.
//   2. Host time of the marker call alone, between short kernels, with warm caches and with
//      8 MB read before each call (cold, as between a framework's launches).
//   3. The stamps against timing events around the same spans: how far they differ.
//   evbubble [KERNELS [US [EVERY [ROUNDS]]]]   (defaults 400 20 4 15)
//   evbubble host                              (parts 2 and 3 only)
#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

__global__ void stamp(unsigned long long *slot)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	*slot = t;
	__threadfence_system();
}

enum { NONE, TIMING, PLAIN, STAMP, WRITE, WSIDE, NVAR };
static const char *name[NVAR] = { "no marker", "timing event", "event, timing off",
				  "stamp kernel", "stream write", "write, side event" };
static const int nev = 512;
static cudaEvent_t timing[nev], plain[nev], side_ev[nev];
static unsigned long long *host_slots, *dev_slots; /* nev stamps, mapped */
static cudaStream_t side;
static CUdeviceptr flag; /* the counter the writes raise, the side stream waits on */
static cuuint32_t flag_value;

/* The side stream, for the next n writes: wait for each value, then a timing event. */
static void arm_side(int n)
{
	for (int k = 1; k <= n; k++) {
		cuStreamWaitValue32((CUstream)side, flag, flag_value + k, CU_STREAM_WAIT_VALUE_GEQ);
		cudaEventRecord(side_ev[(flag_value + k) % nev], side);
	}
}

static void marker(int v, int e, cudaStream_t s)
{
	if (v == TIMING)
		cudaEventRecord(timing[e % nev], s);
	else if (v == PLAIN)
		cudaEventRecord(plain[e % nev], s);
	else if (v == STAMP)
		stamp<<<1, 1, 0, s>>>(dev_slots + e % nev);
	else if (v == WRITE || v == WSIDE)
		cuStreamWriteValue32((CUstream)s, flag, ++flag_value, 0);
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

static double now_us(void)
{
	return std::chrono::duration<double, std::micro>(
		       std::chrono::steady_clock::now().time_since_epoch()).count();
}

/* Part 1: the device time a marker adds, every EVERY-th gap of KERNELS busy kernels. */
static void device_cost(cudaStream_t s, long long cycles, int kernels, int us, int every,
			int rounds, int sms)
{
	std::vector<double> ms[NVAR];
	int events = (kernels + every - 1) / every;
	for (int r = 0; r < rounds + 1; r++) /* the first round warms up, not counted */
		for (int v = 0; v < NVAR; v++) {
			cudaDeviceSynchronize();
			if (v == WSIDE)
				arm_side(events);
			double t0 = now_us();
			for (int k = 0, e = 0; k < kernels; k++) {
				spin<<<sms, 128, 0, s>>>(cycles);
				if (v != NONE && k % every == 0)
					marker(v, e++, s);
			}
			cudaStreamSynchronize(s);
			if (r)
				ms[v].push_back((now_us() - t0) / 1000);
		}
	double base = median(ms[NONE]);
	for (int v = 0; v < NVAR; v++) {
		double med = median(ms[v]);
		printf("device  %-18s %d kernels of %d us on %d SMs, %d markers: %.3f ms a round, "
		       "%+.2f us a marker\n", name[v], kernels, us, sms, v ? events : 0, med,
		       v ? (med - base) * 1000 / events : 0.0);
	}
}

/* Part 2: the marker call's own host time, between kernels of about 2 us (the GPU keeps
 * up, so no call waits for a full queue); cold: 8 MB read before each call. */
static void host_cost(cudaStream_t s, long long cycles_2us, int calls)
{
	static const size_t evict_bytes = 8u << 20;
	volatile unsigned char *junk = (unsigned char *)malloc(evict_bytes);
	memset((void *)junk, 1, evict_bytes);
	for (int cold = 0; cold < 2; cold++)
		for (int v = TIMING; v < NVAR; v++) {
			std::vector<double> t;
			unsigned sum = 0;
			for (int k = 0; k < calls + 50; k++) { /* 50 to warm up */
				if (v == WSIDE && k % 64 == 0) /* each armed write comes */
					arm_side(std::min(64, calls + 50 - k));
				spin<<<1, 32, 0, s>>>(cycles_2us);
				if (cold)
					for (size_t i = 0; i < evict_bytes; i += 64)
						sum += junk[i];
				double t0 = now_us();
				marker(v, k, s);
				double t1 = now_us();
				if (k >= 50)
					t.push_back(t1 - t0);
				if (k % 64 == 63)
					cudaDeviceSynchronize();
			}
			cudaDeviceSynchronize();
			std::sort(t.begin(), t.end());
			double mean = 0;
			for (double x : t)
				mean += x;
			mean /= t.size();
			printf("host    %-18s %s: median %.2f us, 90th %.2f us, mean %.2f us a call%s\n",
			       name[v], cold ? "cold (8 MB read before)" : "warm", t[t.size() / 2],
			       t[t.size() * 9 / 10], mean, sum == 12345 ? " " : "");
		}
	free((void *)junk);
}

static void print_diff(const char *what, int us, std::vector<double> span,
		       std::vector<double> diff)
{
	std::vector<double> ad;
	for (double d : diff)
		ad.push_back(d < 0 ? -d : d);
	std::sort(ad.begin(), ad.end());
	printf("accuracy %-17s spans of 10 kernels of %d us (event: median %.1f us): minus the "
	       "event median %+.2f us, |diff| 90th %.2f us, max %.2f us\n", what, us,
	       median(span), median(diff), ad[ad.size() * 9 / 10], ad.back());
}

/* Part 3: spans of 10 kernels of US, timed three ways at once: timing events on the
 * stream, stamp kernels, and writes timed by the armed side stream. */
static void accuracy(cudaStream_t s, long long cycles, int us, int sms, int trials)
{
	std::vector<double> span, dstamp, dside;
	for (int i = 0; i < trials; i++) {
		cuuint32_t v0 = flag_value;
		arm_side(2);
		cudaEventRecord(timing[0], s);
		marker(WSIDE, 0, s);
		stamp<<<1, 1, 0, s>>>(dev_slots + 0);
		for (int k = 0; k < 10; k++)
			spin<<<sms, 128, 0, s>>>(cycles);
		cudaEventRecord(timing[1], s);
		marker(WSIDE, 0, s);
		stamp<<<1, 1, 0, s>>>(dev_slots + 1);
		cudaDeviceSynchronize();
		float ms = 0, side_ms = 0;
		cudaEventElapsedTime(&ms, timing[0], timing[1]);
		cudaEventElapsedTime(&side_ms, side_ev[(v0 + 1) % nev], side_ev[(v0 + 2) % nev]);
		span.push_back(ms * 1000.0);
		dstamp.push_back((double)(host_slots[1] - host_slots[0]) / 1000.0 - ms * 1000.0);
		dside.push_back((side_ms - ms) * 1000.0);
	}
	print_diff("stamp kernel", us, span, dstamp);
	print_diff("write, side event", us, span, dside);
}

int main(int argc, char **argv)
{
	bool host_only = argc > 1 && !strcmp(argv[1], "host");
	int kernels = argc > 1 && !host_only ? atoi(argv[1]) : 400;
	int us = argc > 2 ? atoi(argv[2]) : 20, every = argc > 3 ? atoi(argv[3]) : 4;
	int rounds = argc > 4 ? atoi(argv[4]) : 15, sms = 0;
	cudaStream_t s;

	cudaSetDeviceFlags(cudaDeviceMapHost);
	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
	for (int i = 0; i < nev; i++) {
		cudaEventCreate(&timing[i]);
		cudaEventCreate(&side_ev[i]);
		cudaEventCreateWithFlags(&plain[i], cudaEventDisableTiming);
	}
	if (cuMemAlloc(&flag, 4) != CUDA_SUCCESS || cuMemsetD32(flag, 0, 1) != CUDA_SUCCESS) {
		fprintf(stderr, "evbubble: no memory for the counter\n");
		return 1;
	}
	cudaHostAlloc((void **)&host_slots, nev * sizeof(*host_slots), cudaHostAllocMapped);
	cudaHostGetDevicePointer((void **)&dev_slots, host_slots, 0);
	/* the SMs' cycles per microsecond, measured: one kernel of a known count, timed */
	const long long probe = 20000000;
	float probe_ms = 0;
	spin<<<sms, 128, 0, s>>>(probe / 10); /* warm-up */
	stamp<<<1, 1, 0, s>>>(dev_slots);
	cudaEventRecord(timing[0], s);
	spin<<<sms, 128, 0, s>>>(probe);
	cudaEventRecord(timing[1], s);
	cudaEventSynchronize(timing[1]);
	cudaEventElapsedTime(&probe_ms, timing[0], timing[1]);
	cudaError_t err = cudaGetLastError();
	if (err != cudaSuccess || !(probe_ms > 0)) {
		fprintf(stderr, "evbubble: %s\n", cudaGetErrorString(err));
		return 1;
	}
	double per_us = (double)probe / (probe_ms * 1000.0);
	long long cycles = (long long)(per_us * us);
	if (host_only) {
		host_cost(s, (long long)(per_us * 2), 2000);
		accuracy(s, cycles, us, sms, 200);
	} else {
		device_cost(s, cycles, kernels, us, every, rounds, sms);
	}
	err = cudaGetLastError();
	if (err != cudaSuccess) {
		fprintf(stderr, "evbubble: %s\n", cudaGetErrorString(err));
		return 1;
	}
	return 0;
}
