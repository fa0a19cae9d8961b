/* f32 matrix products for shlo's CPU code: compiled once per machine by the
 * system's C compiler (shlo.backends.cpu.precompiled), then called by the code
 * of every program with a matmul (shlo-call-precompiled-matmuls), which so
 * leaves LLVM nothing to generate for it.
 *
 * The method is the usual one for caches (Goto and van de Geijn): blocks of
 * the rhs (KC x NC) and of the lhs (MC x KC) are copied into contiguous
 * panels, and a register tile of MR x NR results takes an outer product per
 * step of k. Strides are free: a transposed operand is only another order of
 * copying. Threads come from the OpenMP runtime the generated code uses,
 * through its GNU entry point, when the process has one.
 */
#include <stdint.h>
#include <stdlib.h>

enum { MR = 8, NR = 32, KC = 256, MC = 128, NC = 1024 };

typedef float f32x16 __attribute__((vector_size(64)));
typedef float f32x16_unaligned __attribute__((vector_size(64), aligned(4)));

/* libiomp5 implements libgomp's entry points; weak, so that no OpenMP runtime
 * is needed where none is loaded (then one thread computes everything). */
extern void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads, unsigned flags)
    __attribute__((weak));
extern int omp_get_thread_num(void) __attribute__((weak));

typedef struct {
  const float *a, *b;
  float *c;
  int64_t batch, m, n, k;
  int64_t a_batch, a_row, a_col, b_batch, b_row, b_col;
  int64_t threads;
} Problem;

/* One register tile: c[MR x NR] (row stride ldc) = a (MR x kc, a[p * a_step + i * a_row])
 * @ b panel (kc x NR), added to c unless first. Inlined for each way of reading a. */
static inline __attribute__((always_inline)) void register_tile(
    int64_t kc, const float *restrict a, int64_t a_step, int64_t a_row,
    const float *restrict b, float *restrict c, int64_t ldc, int first) {
  f32x16 acc[MR][2];
  for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = (f32x16){0};
  for (int64_t p = 0; p < kc; p++) {
    f32x16 b0 = *(const f32x16 *)(b + p * NR), b1 = *(const f32x16 *)(b + p * NR + 16);
    for (int i = 0; i < MR; i++) {
      float s = a[p * a_step + i * a_row];
      acc[i][0] += s * b0;
      acc[i][1] += s * b1;
    }
  }
  for (int i = 0; i < MR; i++) {
    f32x16_unaligned *c0 = (f32x16_unaligned *)(c + i * ldc);
    f32x16_unaligned *c1 = (f32x16_unaligned *)(c + i * ldc + 16);
    if (first) {
      *c0 = acc[i][0];
      *c1 = acc[i][1];
    } else {
      *c0 += acc[i][0];
      *c1 += acc[i][1];
    }
  }
}

/* This thread's panels: MC x KC of the lhs and KC x NC of the rhs, kept between calls. */
static __thread float *panels;

static float *thread_panels(void) {
  if (panels == NULL) panels = aligned_alloc(64, sizeof(float) * (MC * KC + KC * NC));
  return panels;
}

/* panel[p * width + j] = x[p * step + j * across] for p < depth, j < count; 0 for
 * count <= j < width. The loop along the operand's contiguous side is innermost. */
static void pack(const float *x, int64_t step, int64_t across, int64_t depth, int64_t count,
                 int64_t width, float *restrict panel) {
  if (across == 1 || step != 1) {
    for (int64_t p = 0; p < depth; p++)
      for (int64_t j = 0; j < width; j++)
        panel[p * width + j] = j < count ? x[p * step + j * across] : 0.f;
    return;
  }
  for (int64_t j = 0; j < width; j++)
    for (int64_t p = 0; p < depth; p++)
      panel[p * width + j] = j < count ? x[p + j * across] : 0.f;
}

/* c[m x n] (row stride ldc) = a[m x k] @ b[k x n], a and b read through their strides. */
static void matmul(const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_row,
                   int64_t b_col, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  if (k == 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0.f;
    return;
  }
  float *apack = thread_panels(), *bpack = apack + MC * KC;
  /* Rows of a that are contiguous are read in place: packing them cost more than it
   * saved where n is small (attention's p @ v: 1.13 -> 0.85 ms). */
  int direct = a_col == 1;
  float tile[MR * NR] __attribute__((aligned(64)));
  for (int64_t jc = 0; jc < n; jc += NC) {
    int64_t nc = n - jc < NC ? n - jc : NC;
    for (int64_t pc = 0; pc < k; pc += KC) {
      int64_t kc = k - pc < KC ? k - pc : KC;
      if (b_col == 1) /* row by row: each row of the block is read once, in order */
        for (int64_t p = 0; p < kc; p++) {
          const float *row = b + (pc + p) * b_row + jc;
          for (int64_t jr = 0; jr < nc; jr += NR)
            for (int64_t j = 0; j < NR; j++)
              bpack[jr * kc + p * NR + j] = jr + j < nc ? row[jr + j] : 0.f;
        }
      else
        for (int64_t jr = 0; jr < nc; jr += NR)
          pack(b + pc * b_row + (jc + jr) * b_col, b_row, b_col, kc,
               nc - jr < NR ? nc - jr : NR, NR, bpack + jr * kc);
      for (int64_t ic = 0; ic < m; ic += MC) {
        int64_t mc = m - ic < MC ? m - ic : MC;
        for (int64_t ir = 0; ir < mc && !direct; ir += MR) {
          pack(a + (ic + ir) * a_row + pc * a_col, a_col, a_row, kc,
               mc - ir < MR ? mc - ir : MR, MR, apack + ir * kc);
        }
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += MR) {
            float *out = c + (ic + ir) * ldc + jc + jr;
            if (ir + MR <= mc && jr + NR <= nc) {
              if (direct)
                register_tile(kc, a + (ic + ir) * a_row + pc, 1, a_row, bpack + jr * kc, out,
                              ldc, pc == 0);
              else
                register_tile(kc, apack + ir * kc, MR, 1, bpack + jr * kc, out, ldc, pc == 0);
              continue;
            }
            int64_t rows = mc - ir < MR ? mc - ir : MR, columns = nc - jr < NR ? nc - jr : NR;
            if (direct) /* this tile's rows only */
              pack(a + (ic + ir) * a_row + pc, 1, a_row, kc, rows, MR, apack + ir * kc);
            register_tile(kc, apack + ir * kc, MR, 1, bpack + jr * kc, tile, NR, 1);
            for (int64_t i = 0; i < rows; i++)
              for (int64_t j = 0; j < columns; j++)
                out[i * ldc + j] = (pc == 0 ? 0.f : out[i * ldc + j]) + tile[i * NR + j];
          }
      }
    }
  }
}

static int64_t share(int64_t size, int64_t unit, int64_t part, int64_t parts) {
  int64_t units = (size + unit - 1) / unit;
  int64_t start = units * part / parts * unit;
  return start < size ? start : size;
}

/* Thread `part` of `parts`: whole batches when there are enough, else a share of
 * every batch's rows or columns (whichever is longer), in whole register tiles. */
static void compute_part(const Problem *p, int64_t part, int64_t parts) {
  int64_t batches[2] = {0, p->batch}, rows[2] = {0, p->m}, columns[2] = {0, p->n};
  if (p->batch >= parts) {
    batches[0] = share(p->batch, 1, part, parts);
    batches[1] = share(p->batch, 1, part + 1, parts);
  } else if (p->m >= p->n) {
    rows[0] = share(p->m, MR, part, parts);
    rows[1] = share(p->m, MR, part + 1, parts);
  } else {
    columns[0] = share(p->n, NR, part, parts);
    columns[1] = share(p->n, NR, part + 1, parts);
  }
  for (int64_t s = batches[0]; s < batches[1]; s++)
    matmul(p->a + s * p->a_batch + rows[0] * p->a_row, p->a_row, p->a_col,
           p->b + s * p->b_batch + columns[0] * p->b_col, p->b_row, p->b_col,
           p->c + s * p->m * p->n + rows[0] * p->n + columns[0], p->n, rows[1] - rows[0],
           columns[1] - columns[0], p->k);
}

static void run_thread(void *data) {
  const Problem *p = data;
  compute_part(p, omp_get_thread_num(), p->threads);
}

/* Weak where joined into code compiled ahead of time: two such objects link together. */
#ifdef SHLO_WEAK_KERNELS
#define KERNEL __attribute__((weak))
#else
#define KERNEL
#endif

/* c[batch, m, n] (dense) = a[batch, m, k] @ b[batch, k, n], a and b read through the
 * given strides (in elements), on up to `threads` threads. */
KERNEL void shlo_matmul_f32(const float *a, const float *b, float *c, int64_t batch, int64_t m,
                     int64_t n, int64_t k, int64_t a_batch, int64_t a_row, int64_t a_col,
                     int64_t b_batch, int64_t b_row, int64_t b_col, int64_t threads) {
  Problem p = {a, b, c, batch, m, n, k, a_batch, a_row, a_col, b_batch, b_row, b_col, threads};
  /* A thread needs at least a register tile's rows, columns or a batch of its own, and
   * 2^17 multiply-adds: entering a parallel region costs microseconds, as the generated
   * code's small loops know (shlo-sequential-small-foralls). */
  int64_t most = batch > 1 ? batch : (m >= n ? (m + MR - 1) / MR : (n + NR - 1) / NR);
  int64_t worth = batch * m * n * k >> 17;
  if (p.threads > most) p.threads = most;
  if (p.threads > worth) p.threads = worth;
  if (p.threads > 1 && GOMP_parallel != NULL && omp_get_thread_num != NULL)
    GOMP_parallel(run_thread, &p, (unsigned)p.threads, 0);
  else
    compute_part(&p, 0, 1);
}
