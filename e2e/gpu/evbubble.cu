// SPDX-License-Identifier: Apache-2.0
// Event microbenchmark: the device time an event record adds on a stream the GPU is kept
// busy on (a GPU-bound job, where the host's own cost hides and the device's shows).
// Each round launches KERNELS kernels of about US microseconds each, every kernel across
// all SMs, far faster than the GPU runs them; between kernels, every EVERY-th gap holds
// nothing, a timing event record (as trainscope's segment and GEMM pairs), or an event
// record with timing disabled. Prints, per variant, the median round's time and the
// device time added per event record against the plain rounds, side by side.
//   evbubble [KERNELS [US [EVERY [ROUNDS]]]]   (defaults 400 20 4 15)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void spin(long long cycles)
{
	long long t0 = clock64();
	while (clock64() - t0 < cycles)
		;
}

int main(int argc, char **argv)
{
	int kernels = argc > 1 ? atoi(argv[1]) : 400, us = argc > 2 ? atoi(argv[2]) : 20;
	int every = argc > 3 ? atoi(argv[3]) : 4, rounds = argc > 4 ? atoi(argv[4]) : 15;
	int sms = 0;
	cudaStream_t s;
	const int nev = 256;
	cudaEvent_t timing[nev], plain[nev];

	cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	for (int i = 0; i < nev; i++) {
		cudaEventCreate(&timing[i]);
		cudaEventCreateWithFlags(&plain[i], cudaEventDisableTiming);
	}
	/* the SMs' cycles per microsecond, measured: one kernel of a known count, timed */
	const long long probe = 20000000;
	float probe_ms = 0;
	spin<<<sms, 128, 0, s>>>(probe / 10); /* warm-up */
	cudaEventRecord(timing[0], s);
	spin<<<sms, 128, 0, s>>>(probe);
	cudaEventRecord(timing[1], s);
	cudaEventSynchronize(timing[1]);
	cudaEventElapsedTime(&probe_ms, timing[0], timing[1]);
	long long cycles = (long long)((double)probe / (probe_ms * 1000.0) * us);
	const char *name[3] = { "no event", "timing event", "event, timing off" };
	std::vector<double> ms[3];
	for (int r = 0; r < rounds + 1; r++) /* the first round warms up, not counted */
		for (int v = 0; v < 3; v++) {
			cudaDeviceSynchronize();
			auto t0 = std::chrono::steady_clock::now();
			for (int k = 0, e = 0; k < kernels; k++) {
				spin<<<sms, 128, 0, s>>>(cycles);
				if (v && k % every == 0)
					cudaEventRecord((v == 1 ? timing : plain)[e++ % nev], s);
			}
			cudaStreamSynchronize(s);
			double t = std::chrono::duration<double, std::milli>(
					   std::chrono::steady_clock::now() - t0).count();
			if (r)
				ms[v].push_back(t);
		}
	cudaError_t err = cudaGetLastError();
	if (err != cudaSuccess || !(probe_ms > 0)) {
		fprintf(stderr, "evbubble: %s\n", cudaGetErrorString(err));
		return 1;
	}
	int events = (kernels + every - 1) / every;
	double base = 0;
	for (int v = 0; v < 3; v++) {
		std::sort(ms[v].begin(), ms[v].end());
		double med = ms[v][ms[v].size() / 2];
		if (!v)
			base = med;
		printf("%-18s %d kernels of %d us on %d SMs, %d events: %.3f ms a round, %+.2f us "
		       "an event\n", name[v], kernels, us, sms, v ? events : 0, med,
		       v ? (med - base) * 1000 / events : 0.0);
	}
	return 0;
}
