/* f32 matrix products for shlo's CPU code: compiled once per machine by the
 * system's C compiler (shlo.backends.cpu.precompiled), then called by the code
 * of every program with a matmul (shlo-call-precompiled-kernels), which so
 * leaves LLVM nothing to generate for it.
 *
 * The method is the usual one for caches (Goto and van de Geijn): blocks of
 * the rhs (KC x NC) and of the lhs (MC x KC) are copied into contiguous
 * panels, and a register tile of MR x NR results takes an outer product per
 * step of k. Strides are free: a transposed operand is only another order of
 * copying. Threads come from the OpenMP runtime the generated code uses,
 * through its GNU entry point, when the process has one.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Vectors of the host's width, LANES floats: zmm registers with AVX-512, else ymm. A
 * register tile is MR rows of two vectors: 16 of AVX-512's 32 registers, 12 of AVX2's
 * 16 (vectors twice the host's width split through memory: the 1024^3 product took
 * 534 ms on a Zen 3 with 8 x 32 tiles of 16 lanes). MC is whole register tiles. */
#ifdef __AVX512F__
#define LANES 16
#define MR 8
#define MC 128
#else
#define LANES 8
#define MR 6
#define MC 120
#endif
/* Columns from which contiguous rows of a are packed all the same, for the register
 * tiles' many passes over them. On the Zen 3 (AVX2) the 1024^3 product took 12.0-12.4
 * instead of 13.0-13.2 ms so (fastest of 80 calls); Zen 4 read them in place always. */
#ifdef __AVX512F__
#define PACKED_A_MIN_COLUMNS INT64_MAX
#else
#define PACKED_A_MIN_COLUMNS (8 * 2 * LANES)
#endif
enum { NR = 2 * LANES, KC = 256, NC = 1024 };

typedef float f32v __attribute__((vector_size(4 * LANES)));
typedef float f32v_unaligned __attribute__((vector_size(4 * LANES), aligned(4)));

/* The OpenMP runtime's libgomp entry points (libiomp5 implements them). The host gives
 * those of the runtime the generated code uses (shlo_kernels_use_openmp): a process may
 * hold libgomp too (torch's), whose own threads spun against libiomp5's and made GPT-2
 * 7x slower when the kernel found libgomp's by name. Otherwise (code compiled ahead of
 * time) the symbols the program links, weak: without any, one thread computes all. */
typedef void (*ParallelEntry)(void (*fn)(void *), void *data, unsigned threads, unsigned flags);
typedef int (*ThreadNumber)(void);
extern void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads, unsigned flags)
    __attribute__((weak));
extern int omp_get_thread_num(void) __attribute__((weak));
static ParallelEntry parallel_entry;
static ThreadNumber thread_number;

void shlo_kernels_use_openmp(ParallelEntry parallel, ThreadNumber number) {
  parallel_entry = parallel;
  thread_number = number;
}

void *shlo_kernels_parallel_entry(void) { return (void *)parallel_entry; }

/* The entry points a kernel's threads start with: the host's, else the program's own. */
static void openmp_entries(ParallelEntry *parallel, ThreadNumber *number) {
  *parallel = parallel_entry;
  *number = thread_number;
  if (*parallel == NULL || *number == NULL) {
    *parallel = GOMP_parallel;
    *number = omp_get_thread_num;
  }
}

typedef struct {
  const float *a, *b;
  float *c;
  int64_t batch, m, n, k;
  int64_t a_batch, a_row, a_col, b_batch, b_row, b_col;
  int64_t threads;
  ThreadNumber thread_number;
} Problem;

/* c[rows x NR] (row stride ldc) = a register tile's sums, or += them unless first. */
static inline __attribute__((always_inline)) void store_tile(const int rows, f32v acc[][2],
                                                             float *restrict c, int64_t ldc,
                                                             int first) {
  for (int i = 0; i < rows; i++) {
    f32v_unaligned *c0 = (f32v_unaligned *)(c + i * ldc);
    f32v_unaligned *c1 = (f32v_unaligned *)(c + i * ldc + LANES);
    if (first) {
      *c0 = acc[i][0];
      *c1 = acc[i][1];
    } else {
      *c0 += acc[i][0];
      *c1 += acc[i][1];
    }
  }
}

/* One register tile: c[MR x NR] (row stride ldc) = a (MR x kc, a[p * a_step + i * a_row])
 * @ b panel (kc x NR), added to c unless first. Inlined for each way of reading a. */
static inline __attribute__((always_inline)) void register_tile(
    int64_t kc, const float *restrict a, int64_t a_step, int64_t a_row,
    const float *restrict b, float *restrict c, int64_t ldc, int first) {
  f32v acc[MR][2];
  for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = (f32v){0};
  for (int64_t p = 0; p < kc; p++) {
    f32v b0 = *(const f32v *)(b + p * NR), b1 = *(const f32v *)(b + p * NR + LANES);
    for (int i = 0; i < MR; i++) {
      float s = a[p * a_step + i * a_row];
      acc[i][0] += s * b0;
      acc[i][1] += s * b1;
    }
  }
  store_tile(MR, acc, c, ldc, first);
}

/* This thread's panels: MC x KC of the lhs and KC x NC of the rhs, kept between calls
 * and freed when the thread ends. NULL when they cannot be allocated. */
static pthread_key_t panels_key;
static pthread_once_t panels_key_once = PTHREAD_ONCE_INIT;

static void make_panels_key(void) { pthread_key_create(&panels_key, free); }

static float *thread_panels(void) {
  pthread_once(&panels_key_once, make_panels_key);
  float *panels = pthread_getspecific(panels_key);
  if (panels == NULL) {
    panels = aligned_alloc(64, sizeof(float) * (MC * KC + KC * NC));
    if (panels != NULL) pthread_setspecific(panels_key, panels);
  }
  return panels;
}

/* The product without panels, one result at a time: only where they could not be allocated. */
static void unpacked_matmul(const float *a, int64_t a_row, int64_t a_col, const float *b,
                            int64_t b_row, int64_t b_col, float *c, int64_t ldc, int64_t m,
                            int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      float sum = 0.f;
      for (int64_t p = 0; p < k; p++) sum += a[i * a_row + p * a_col] * b[p * b_row + j * b_col];
      c[i * ldc + j] = sum;
    }
}

#ifdef __AVX512F__
/* r[i][j] becomes r[j][i]: pairs of rows, then pairs of pairs, within 128-bit lanes;
 * then the lanes. */
static inline void transpose_16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 8; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
  }
}
#elif defined(__AVX2__)
/* r[i][j] becomes r[j][i], 8 x 8: pairs of rows, then pairs of pairs, within 128-bit
 * halves; then the halves. */
static inline void transpose_8x8(__m256 r[8]) {
  __m256 t[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    t[i] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(r[i], r[i + 4], 0x31);
  }
  for (int i = 0; i < 8; i++) r[i] = t[i];
}
#endif

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
  int64_t done = 0;
#ifdef __AVX512F__
  /* 16 x 16 blocks transposed in registers: element by element, packing a transposed
   * weight took a third of GPT-2's matmul time (128 x 768 x 3072: 3.5 -> 2.9 ms). */
  if (count == width && width % 16 == 0)
    for (; done + 16 <= depth; done += 16)
      for (int64_t j = 0; j < width; j += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(x + done + (j + i) * across);
        transpose_16x16(r);
        for (int i = 0; i < 16; i++) _mm512_storeu_ps(panel + (done + i) * width + j, r[i]);
      }
#elif defined(__AVX2__)
  if (count == width && width % 8 == 0)
    for (; done + 8 <= depth; done += 8)
      for (int64_t j = 0; j < width; j += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(x + done + (j + i) * across);
        transpose_8x8(r);
        for (int i = 0; i < 8; i++) _mm256_storeu_ps(panel + (done + i) * width + j, r[i]);
      }
#endif
  for (int64_t j = 0; j < width; j++)
    for (int64_t p = done; p < depth; p++)
      panel[p * width + j] = j < count ? x[p + j * across] : 0.f;
}

/* Where the rhs panel that is packed next comes from: `count` runs of `length` contiguous
 * floats, `stride` apart. Prefetched while the current panel's tiles compute, it arrives
 * from memory in their shadow: GPT-2's weights, read once per call, made packing wait. */
typedef struct {
  const float *start;
  int64_t count, stride, length;
} Runs;

static Runs next_panel(const float *b, int64_t b_row, int64_t b_col, int64_t kc) {
  Runs none = {NULL, 0, 0, 0};
  return b_row == 1 ? (Runs){b, NR, b_col, kc} : none;
}

/* Share `part` of `parts` of the runs' cache lines. */
static void prefetch_share(Runs runs, int64_t part, int64_t parts) {
  int64_t lines = (runs.length + 15) / 16;
  for (int64_t r = runs.count * part / parts; r < runs.count * (part + 1) / parts; r++)
    for (int64_t l = 0; l < lines; l++) __builtin_prefetch(runs.start + r * runs.stride + l * 16);
}

/* Products of at most IN_PLACE_ROWS rows (a decoding step's tokens, an LSTM step's
 * batch). The panels cost more than the product there: a copy of all of b, and whole
 * tiles of MR rows for one or two (2 x [512, 2048] took 0.42 ms against the generated
 * code's 0.08; greedy decoding ran at 1.9x XLA's time, the LSTM at 1.3x). Here b is read
 * in place, once: for up to FEW rows a whole row of it at a time, into sums in memory;
 * for more, register tiles, as matmul's. Cold weights stream from memory, and the rows
 * of b are a page apart, which the hardware prefetchers do not follow: the code
 * prefetches about PREFETCH_BYTES ahead, as the generated code does
 * (shlo-prefetch-matmul-rows). */
enum { FEW = 4, PREFETCH_BYTES = 8192 };

/* Rows of a that tile_rows multiplies by b in place: AVX-512's MR. */
enum { IN_PLACE_ROWS = 8 };

/* c[rows x vectors * LANES] = a @ b over kc steps, b's rows b_row apart, summed as
 * register_tile sums. */
static inline __attribute__((always_inline)) void in_place_tile(
    const int rows, const int vectors, int64_t kc, int64_t ahead, int64_t last,
    const float *restrict a, int64_t a_row, int64_t a_col, const float *restrict b, int64_t b_row,
    float *restrict c, int64_t ldc, int first) {
  f32v acc[IN_PLACE_ROWS][2];
  for (int i = 0; i < rows; i++) acc[i][0] = acc[i][1] = (f32v){0};
  for (int64_t p = 0; p < kc; p++) {
    const float *next = b + (p + ahead < last ? p + ahead : last) * b_row;
    __builtin_prefetch(next, 0, 2);
    if (vectors * LANES > 16) __builtin_prefetch(next + 16, 0, 2); /* a second cache line */
    f32v b0 = *(const f32v_unaligned *)(b + p * b_row), b1 = b0;
    if (vectors == 2) b1 = *(const f32v_unaligned *)(b + p * b_row + LANES);
    for (int i = 0; i < rows; i++) {
      float s = a[p * a_col + i * a_row];
      acc[i][0] += s * b0;
      if (vectors == 2) acc[i][1] += s * b1;
    }
  }
  if (vectors == 2) {
    store_tile(rows, acc, c, ldc, first);
    return;
  }
  for (int i = 0; i < rows; i++) {
    f32v_unaligned *out = (f32v_unaligned *)(c + i * ldc);
    *out = first ? acc[i][0] : *out + acc[i][0];
  }
}

/* A tile's vectors of columns for `rows` rows: two up to a register tile's rows, else one. */
#define TILE_VECTORS(rows) ((rows) <= MR ? 2 : 1)

/* FEW < m <= IN_PLACE_ROWS rows times a row-major b (b_col == 1): a block of KC steps at a
 * time, as matmul; the last columns as its partial tiles add them. Rows beyond MR (7 and 8
 * with AVX2's 6-row tiles) take tiles of one vector's columns, so that b is still read
 * once: the LSTM's 8 rows x [512, 2048] packed all of b at every step (the zoo's LSTM at
 * 2.0-2.8x XLA's time, against 1.6-1.75x for the generated code), and two groups of 4 rows
 * read it twice (1.28-1.33x). */
static void tile_rows(const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_row,
                      float *c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  int64_t row_bytes = b_row * (int64_t)sizeof(float);
  int64_t ahead = row_bytes <= 0 || row_bytes >= PREFETCH_BYTES ? 1 : PREFETCH_BYTES / row_bytes;
  int64_t width = TILE_VECTORS(m) * LANES;
  for (int64_t pc = 0; pc < k; pc += KC) {
    int64_t kc = k - pc < KC ? k - pc : KC, last = k - 1 - pc;
    const float *ap = a + pc * a_col, *bp = b + pc * b_row;
    int64_t j = 0;
    for (; j + width <= n; j += width) {
#define TILE(r)                                                                               \
  in_place_tile(r, TILE_VECTORS(r), kc, ahead, last, ap, a_row, a_col, bp + j, b_row, c + j, \
                ldc, pc == 0)
      switch (m) {
        case 5: TILE(5); break;
        case 6: TILE(6); break;
        case 7: TILE(7); break;
        default: TILE(IN_PLACE_ROWS);
      }
#undef TILE
    }
    for (; j < n; j++) /* FMAs, as the tiles' lanes (GCC left this loop's uncontracted) */
      for (int64_t r = 0; r < m; r++) {
        float sum = 0.f;
        for (int64_t p = 0; p < kc; p++)
          sum = __builtin_fmaf(ap[r * a_row + p * a_col], bp[p * b_row + j], sum);
        c[r * ldc + j] = (pc == 0 ? 0.f : c[r * ldc + j]) + sum;
      }
  }
}
#undef TILE_VECTORS

/* t[r * w + 0:w] += s[r] times a row of b, for each of `rows` rows of a, a vector at a time. */
static inline __attribute__((always_inline)) void add_scaled_row(
    const int rows, const float *restrict s, const float *restrict row,
    const float *restrict ahead, int64_t w, float *restrict t) {
  int64_t v = 0;
  for (; v + LANES <= w; v += LANES) {
    __builtin_prefetch(ahead + v, 0, 2);
    f32v y = *(const f32v_unaligned *)(row + v);
    for (int r = 0; r < rows; r++) *(f32v_unaligned *)(t + r * w + v) += s[r] * y;
  }
  for (; v < w; v++)
    for (int r = 0; r < rows; r++) t[r * w + v] = __builtin_fmaf(s[r], row[v], t[r * w + v]);
}

/* Few rows times a row-major b (b_col == 1), each row of b read once and in order, as
 * many columns at a time as the thread's panels hold (hardware prefetchers stop at
 * pages: runs of 4 KB of each row of [512, 32000] ran at a third of the bandwidth).
 * Summed as matmul sums: from zero over a block of KC steps, then stored or added to
 * c; so a row's results do not depend on how many rows there are. */
static void few_rows(const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_row,
                     float *c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  float *t = thread_panels();
  if (t == NULL) {
    unpacked_matmul(a, a_row, a_col, b, b_row, 1, c, ldc, m, n, k);
    return;
  }
  for (int64_t i = 0; i < m; i += FEW) {
    int rows = m - i < FEW ? (int)(m - i) : FEW;
    int64_t most = (int64_t)(MC * KC + KC * NC) / rows / LANES * LANES;
    for (int64_t j = 0; j < n; j += most) {
      int64_t w = n - j < most ? n - j : most;
      int64_t distance = PREFETCH_BYTES / 4 / w < 1 ? 1 : PREFETCH_BYTES / 4 / w;
      for (int64_t pc = 0; pc < k; pc += KC) {
        int64_t kc = k - pc < KC ? k - pc : KC;
        for (int64_t v = 0; v < rows * w; v++) t[v] = 0.f;
        for (int64_t p = pc; p < pc + kc; p++) {
          float s[FEW];
          for (int r = 0; r < rows; r++) s[r] = a[(i + r) * a_row + p * a_col];
          const float *row = b + p * b_row + j;
          const float *ahead = b + (p + distance < k ? p + distance : k - 1) * b_row + j;
          switch (rows) {
            case 1: add_scaled_row(1, s, row, ahead, w, t); break;
            case 2: add_scaled_row(2, s, row, ahead, w, t); break;
            case 3: add_scaled_row(3, s, row, ahead, w, t); break;
            default: add_scaled_row(4, s, row, ahead, w, t);
          }
        }
        for (int r = 0; r < rows; r++) {
          float *out = c + (i + r) * ldc + j;
          for (int64_t v = 0; v < w; v++) out[v] = pc == 0 ? t[r * w + v] : out[v] + t[r * w + v];
        }
      }
    }
  }
}

/* Few rows of a contiguous a (a_col == 1) times a transposed b (b_row == 1: each column of
 * b contiguous, b_col apart, as PyTorch's Linear weights are): one dot product per result,
 * a vector of k at a time, FEW rows for each column read. */
static void few_rows_by_columns(const float *a, int64_t a_row, const float *b, int64_t b_col,
                                float *c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; i += FEW) {
    int rows = m - i < FEW ? (int)(m - i) : FEW;
    for (int64_t j = 0; j < n; j++) {
      const float *column = b + j * b_col;
      f32v acc[FEW] = {{0}};
      float tail[FEW] = {0.f};
      int64_t p = 0;
      for (; p + LANES <= k; p += LANES) {
        f32v y = *(const f32v_unaligned *)(column + p);
        for (int r = 0; r < FEW; r++)
          if (r < rows) acc[r] += *(const f32v_unaligned *)(a + (i + r) * a_row + p) * y;
      }
      for (; p < k; p++)
        for (int r = 0; r < rows; r++) tail[r] += a[(i + r) * a_row + p] * column[p];
      for (int r = 0; r < rows; r++) {
        float sum = tail[r];
        for (int l = 0; l < LANES; l++) sum += acc[r][l];
        c[(i + r) * ldc + j] = sum;
      }
    }
  }
}

/* c[m x n] (row stride ldc) = a[m x k] @ b[k x n], a and b read through their strides. */
static void matmul(const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_row,
                   int64_t b_col, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  if (k == 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = 0.f;
    return;
  }
  if (m <= FEW && b_col == 1) {
    few_rows(a, a_row, a_col, b, b_row, c, ldc, m, n, k);
    return;
  }
  if (m <= IN_PLACE_ROWS && b_col == 1) {
    tile_rows(a, a_row, a_col, b, b_row, c, ldc, m, n, k);
    return;
  }
  if (m <= FEW && b_row == 1 && a_col == 1) {
    few_rows_by_columns(a, a_row, b, b_col, c, ldc, m, n, k);
    return;
  }
  float *apack = thread_panels();
  if (apack == NULL) {
    unpacked_matmul(a, a_row, a_col, b, b_row, b_col, c, ldc, m, n, k);
    return;
  }
  float *bpack = apack + MC * KC;
  /* Rows of a that are contiguous are read in place where n is small: packing them cost
   * more than it saved (attention's p @ v: 1.13 -> 0.85 ms on Zen 4). */
  int direct = a_col == 1 && n < PACKED_A_MIN_COLUMNS;
  float tile[MR * NR] __attribute__((aligned(64)));
  for (int64_t jc = 0; jc < n; jc += NC) {
    int64_t nc = n - jc < NC ? n - jc : NC;
    for (int64_t pc = 0; pc < k; pc += KC) {
      int64_t kc = k - pc < KC ? k - pc : KC;
      const float *block = b + pc * b_row + jc * b_col;
      /* Rows of the rhs are packed row by row, each read once in order (a panel at a
       * time, [1024, 4096]'s rows 16 KB apart cost a page each: 8 -> 14.6 ms at
       * [256, 1024] x [1024, 4096]). Columns (a transposed rhs) a panel at a time, as
       * the first row block reaches it, the next one prefetched meanwhile. */
      if (b_col == 1)
        for (int64_t p = 0; p < kc; p++)
          for (int64_t jr = 0; jr < nc; jr += NR)
            for (int64_t j = 0; j < NR; j++)
              bpack[jr * kc + p * NR + j] = jr + j < nc ? block[p * b_row + jr + j] : 0.f;
      for (int64_t ic = 0; ic < m; ic += MC) {
        int64_t mc = m - ic < MC ? m - ic : MC, tiles = (mc + MR - 1) / MR;
        for (int64_t ir = 0; ir < mc && !direct; ir += MR) {
          pack(a + (ic + ir) * a_row + pc * a_col, a_col, a_row, kc,
               mc - ir < MR ? mc - ir : MR, MR, apack + ir * kc);
        }
        for (int64_t jr = 0; jr < nc; jr += NR) {
          Runs next = {NULL, 0, 0, 0};
          if (ic == 0 && b_col != 1) {
            pack(block + jr * b_col, b_row, b_col, kc, nc - jr < NR ? nc - jr : NR, NR,
                 bpack + jr * kc);
            if (jr + 2 * NR <= nc) next = next_panel(block + (jr + NR) * b_col, b_row, b_col, kc);
          }
          for (int64_t ir = 0; ir < mc; ir += MR) {
            if (next.start != NULL) prefetch_share(next, ir / MR, tiles);
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
}

/* XLA computes small products with loops it emits itself, each product rounded and then
 * added in k order, and larger ones with Eigen's FMAs (its dot strategy: naive or tiled
 * LLVM IR when k <= 128 and one side is at most 32, or both at most 3). Where a sum
 * cancels, the two round apart by more than a few ULPs, and StableHLO's conformance
 * data (4 x 3 x 6 complex products) comes from XLA; so small products round as XLA's. */
static int rounded_like_xla(int64_t m, int64_t n, int64_t k) {
  return (m <= 3 && n <= 3) || (k <= 128 && ((m <= 32 && n <= 128) || (m <= 128 && n <= 32)));
}

/* c = a @ b with each product rounded before it is added, in k order: vectors along n. */
__attribute__((optimize("fp-contract=off"))) static void rounded_products(
    const float *a, int64_t a_row, int64_t a_col, const float *b, int64_t b_row,
    int64_t b_col, float *c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
#ifdef __clang__ /* which ignores the attribute */
#pragma STDC FP_CONTRACT OFF
#endif
  float *panels = thread_panels();
  if (b_col != 1 && panels != NULL && k * n <= KC * NC) { /* rows of b made contiguous */
    pack(b, b_row, b_col, k, n, n, panels);
    b = panels;
    b_row = n;
    b_col = 1;
  }
  for (int64_t i = 0; i < m; i++) {
    float *row = c + i * ldc;
    int64_t j = 0;
    for (; b_col == 1 && j + NR <= n; j += NR) { /* NR sums in registers */
      f32v sum0 = {0}, sum1 = {0};
      for (int64_t p = 0; p < k; p++) {
        float x = a[i * a_row + p * a_col];
        const float *y = b + p * b_row + j;
        sum0 = sum0 + x * *(const f32v_unaligned *)y;
        sum1 = sum1 + x * *(const f32v_unaligned *)(y + LANES);
      }
      *(f32v_unaligned *)(row + j) = sum0;
      *(f32v_unaligned *)(row + j + LANES) = sum1;
    }
    for (; j < n; j++) {
      float sum = 0.f;
      for (int64_t p = 0; p < k; p++) {
        float product = a[i * a_row + p * a_col] * b[p * b_row + j * b_col];
        sum = sum + product;
      }
      row[j] = sum;
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
  void (*product)(const float *, int64_t, int64_t, const float *, int64_t, int64_t, float *,
                  int64_t, int64_t, int64_t, int64_t) =
      rounded_like_xla(p->m, p->n, p->k) ? rounded_products : matmul;
  for (int64_t s = batches[0]; s < batches[1]; s++)
    product(p->a + s * p->a_batch + rows[0] * p->a_row, p->a_row, p->a_col,
           p->b + s * p->b_batch + columns[0] * p->b_col, p->b_row, p->b_col,
           p->c + s * p->m * p->n + rows[0] * p->n + columns[0], p->n, rows[1] - rows[0],
           columns[1] - columns[0], p->k);
}

static void run_thread(void *data) {
  const Problem *p = data;
  compute_part(p, p->thread_number(), p->threads);
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
  ParallelEntry parallel;
  ThreadNumber number;
  openmp_entries(&parallel, &number);
  Problem p = {a, b, c, batch, m, n, k, a_batch, a_row, a_col, b_batch, b_row, b_col, threads,
               number};
  /* A thread needs at least a register tile's rows, columns or a batch of its own, and
   * 2^17 multiply-adds: entering a parallel region costs microseconds, as the generated
   * code's small loops know (shlo-sequential-small-foralls). */
  int64_t most = batch > 1 ? batch : (m >= n ? (m + MR - 1) / MR : (n + NR - 1) / NR);
  int64_t worth = batch * m * n * k >> 17;
  if (p.threads > most) p.threads = most;
  if (p.threads > worth) p.threads = worth;
  if (p.threads > 1 && parallel != NULL && number != NULL)
    parallel(run_thread, &p, (unsigned)p.threads, 0);
  else
    compute_part(&p, 0, 1);
}
