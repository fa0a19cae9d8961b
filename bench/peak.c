/* The machine's peak, measured by `python -m bench` (bench/peak.py).
 *
 * fma_gflops: every thread runs independent FMA chains on vectors of a
 * register (zmm with -march=native on AVX-512 machines, else ymm), enough chains to
 * hide the FMA latency, and counts 2 flops per lane per FMA.
 * copy_gbps: a STREAM-like copy of a large array by all threads, counting the
 * bytes read plus the bytes written, timed per chunk.
 * Built at run time with `cc -O3 -march=native -fopenmp -shared -fPIC`.
 */
#include <omp.h>
#include <stddef.h>
#include <string.h>

/* A register's lanes: 16 floats on AVX-512, else 8 (AVX2's ymm registers; 64-byte
 * vectors there are pairs that the asm below cannot keep in one register). */
#ifdef __AVX512F__
#define LANES 16
#else
#define LANES 8
#endif
typedef float vreg __attribute__((vector_size(LANES * 4)));

static double now(void) { return omp_get_wtime(); }

/* Keeps the chains' results alive so the compiler cannot drop the loop. */
volatile float fma_sink;

/* Named accumulators (an array would live on the stack, not in registers): 16,
 * or 12 of AVX2's 16 registers, which leaves room for the multiplier and addend. */
#if LANES == 16
#define CHAINS 16
#else
#define CHAINS 12
#endif
#define FMA4(a, b, c, d) a = a * mul + add; b = b * mul + add; c = c * mul + add; d = d * mul + add
/* An empty asm that "changes" the accumulators stops the compiler from folding
   the loop into a closed form while leaving the FMAs in registers. */
#define KEEP4(a, b, c, d) __asm__ volatile("" : "+v"(a), "+v"(b), "+v"(c), "+v"(d))

/* The best of `runs` timed bursts (or as many as fit in `seconds`) of
   `iterations` FMAs per chain, all threads between two barriers. The threads
   stay in one parallel region: waking them for every burst would be timed
   too. Short bursts, because on a shared machine a long one is always sliced
   by other processes and a short one often is not. */
double fma_gflops(int threads, long iterations, int runs, double seconds) {
  double best = 0, begin = now();
  int stop = 0;
#pragma omp parallel num_threads(threads)
  {
    float seed = 1e-7f * (float)(omp_get_thread_num() + 1);
    vreg mul = {0}, add = {0};
    mul += 0.999999f;
    add += seed;
    vreg a0 = add + 1, a1 = add + 2, a2 = add + 3, a3 = add + 4;
    vreg a4 = add + 5, a5 = add + 6, a6 = add + 7, a7 = add + 8;
    vreg a8 = add + 9, a9 = add + 10, a10 = add + 11, a11 = add + 12;
#if CHAINS == 16
    vreg a12 = add + 13, a13 = add + 14, a14 = add + 15, a15 = add + 16;
#endif
    double start = 0;
    for (int run = 0; !stop; ++run) {
#pragma omp barrier
#pragma omp master
      start = now();
      for (long i = 0; i < iterations; ++i) {
        FMA4(a0, a1, a2, a3);
        FMA4(a4, a5, a6, a7);
        FMA4(a8, a9, a10, a11);
#if CHAINS == 16
        FMA4(a12, a13, a14, a15);
#endif
        KEEP4(a0, a1, a2, a3);
        KEEP4(a4, a5, a6, a7);
        KEEP4(a8, a9, a10, a11);
#if CHAINS == 16
        KEEP4(a12, a13, a14, a15);
#endif
      }
#pragma omp barrier
#pragma omp master
      {
        double rate = (double)threads * iterations * CHAINS * LANES * 2 / (now() - start) / 1e9;
        if (rate > best) best = rate;
        stop = run + 1 >= runs || now() - begin > seconds;
      }
#pragma omp barrier
    }
    vreg sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
#if CHAINS == 16
    sum += a12 + a13 + a14 + a15;
#endif
    float total = 0;
    for (int lane = 0; lane < LANES; ++lane) total += sum[lane];
    fma_sink = total;
  }
  return best;
}

/* Copies src to dst chunk by chunk, `passes` times or for about `seconds`,
   timing each chunk: the best chunk's rate is the bandwidth. The arrays are much larger than the caches and each pass
   walks all of them, so every chunk comes from memory; short chunks make it
   likely that some run while other processes leave the machine alone. As in
   fma_gflops, the threads stay in one parallel region. */
double copy_gbps(int threads, float *dst, const float *src, long count, long chunk,
                 int passes, double seconds) {
  double best = 0, begin_all = now();
  int stop = 0;
#pragma omp parallel num_threads(threads)
  {
    double start = 0;
    for (int pass = 0; !stop; ++pass) {
      for (long begin = 0; begin + chunk <= count; begin += chunk) {
#pragma omp barrier
#pragma omp master
        start = now();
#pragma omp barrier
#pragma omp for schedule(static)
        for (long i = begin; i < begin + chunk; ++i) dst[i] = src[i];
#pragma omp master
        {
          double rate = 2.0 * (double)chunk * sizeof(float) / (now() - start) / 1e9;
          if (rate > best) best = rate;
        }
      }
#pragma omp master
      stop = pass + 1 >= passes || now() - begin_all > seconds;
#pragma omp barrier
    }
  }
  return best;
}
