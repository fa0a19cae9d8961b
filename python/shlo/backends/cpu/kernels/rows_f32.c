/* Row-wise f32 work for shlo's CPU code: reductions and softmax. Compiled with the
 * matrix products (matmul_f32.c, whose thread entry points, vector types and KERNEL
 * this uses) and called by the code of every program with such an op
 * (shlo-mark-precompiled-row-kernels), which so leaves LLVM nothing to generate for
 * it: XLA calls a library (YNNPACK) for the same ops.
 *
 * Each result is computed by one thread, in an order that does not depend on the
 * thread count. Nothing here may contract a product and a sum into one FMA that the
 * op rounds twice: exp is shlo-approximate-math's, step for step, so its bits are
 * the generated code's, and a scaled input is rounded before it is used. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

typedef int32_t i32v __attribute__((vector_size(4 * LANES)));
typedef uint32_t u32v __attribute__((vector_size(4 * LANES)));

enum { SUM = 0, MAXIMUM = 1, MINIMUM = 2 };             /* shlo_reduce_f32's kinds */
enum { UNSCALED = 0, MULTIPLIED = 1, DIVIDED = 2 };      /* shlo_softmax_f32's inputs */

static inline f32v vload(const float *p) { return *(const f32v_unaligned *)p; }
static inline void vstore(float *p, f32v v) { *(f32v_unaligned *)p = v; }
/* v in every lane (v - +0.0 is v, -0.0 included; +0.0 + -0.0 would be +0.0). */
static inline f32v splat(float v) { return v - (f32v){0}; }

/* Whether any lane of a comparison's mask is set. */
static inline int vany(i32v mask) {
#ifdef __AVX512F__
  return _mm512_test_epi32_mask((__m512i)mask, (__m512i)mask) != 0;
#elif defined(__AVX2__)
  return !_mm256_testz_si256((__m256i)mask, (__m256i)mask);
#else
  int any = 0;
  for (int l = 0; l < LANES; l++) any |= mask[l] != 0;
  return any;
#endif
}
static inline f32v vselect(i32v mask, f32v yes, f32v no) {
  return (f32v)((mask & (i32v)yes) | (~mask & (i32v)no));
}
static inline float bits_to_float(int64_t bits) {
  union { uint32_t u; float f; } value = {(uint32_t)bits};
  return value.f;
}

static inline f32v vfma(f32v a, f32v b, f32v c) {
#ifdef __AVX512F__
  return (f32v)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
  return (f32v)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  f32v r;
  for (int l = 0; l < LANES; l++) r[l] = __builtin_fmaf(a[l], b[l], c[l]);
  return r;
#endif
}

/* arith.maximumf and arith.minimumf: NaN if either is, and -0.0 below +0.0. */
static inline __attribute__((always_inline)) f32v vcombine(int kind, f32v a, f32v b) {
  if (kind == SUM) return a + b;
#ifdef __AVX512F__
  /* vmaxps, then the zeros (both bits' and for max, or for min) and NaN (a + b) fixed. */
  __m512 x = (__m512)a, y = (__m512)b;
  __m512i r = (__m512i)(kind == MAXIMUM ? _mm512_max_ps(x, y) : _mm512_min_ps(x, y));
  __mmask16 equal = _mm512_cmp_ps_mask(x, y, _CMP_EQ_OQ);
  __m512i zeros = kind == MAXIMUM ? _mm512_and_epi32((__m512i)x, (__m512i)y)
                                  : _mm512_or_epi32((__m512i)x, (__m512i)y);
  r = _mm512_mask_mov_epi32(r, equal, zeros);
  __mmask16 nan = _mm512_cmp_ps_mask(x, y, _CMP_UNORD_Q);
  return (f32v)_mm512_mask_add_ps((__m512)r, nan, x, y);
#else
  i32v ia = (i32v)a, ib = (i32v)b;
  i32v pick_a, zeros; /* +0.0 and -0.0: max takes the bits both have, min either's */
  if (kind == MAXIMUM) {
    pick_a = a > b;
    zeros = ia & ib;
  } else {
    pick_a = a < b;
    zeros = ia | ib;
  }
  i32v r = (pick_a & ia) | (~pick_a & ib);
  i32v equal = a == b;
  r = (equal & zeros) | (~equal & r);
  return vselect((a != a) | (b != b), a + b, (f32v)r);
#endif
}

static inline __attribute__((always_inline)) float combine1(int kind, float a, float b) {
  if (kind == SUM) return a + b;
  if (a != a || b != b) return a + b;
  if (a == b) {
    union { float f; uint32_t u; } x = {a}, y = {b};
    x.u = kind == MAXIMUM ? x.u & y.u : x.u | y.u;
    return x.f;
  }
  return (kind == MAXIMUM) == (a > b) ? a : b;
}

/* The value that leaves the others as they are: -0.0 for sums (+0.0 + -0.0 is +0.0). */
static inline float identity(int kind) {
  return kind == SUM ? -0.0f : kind == MAXIMUM ? -__builtin_inff() : __builtin_inff();
}

/* The lanes of v combined, in a tree of halves. */
static inline __attribute__((always_inline)) float vfold(int kind, f32v v) {
#if LANES == 16
  static const i32v halves[] = {
      {8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7},
      {4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
      {2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13},
      {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14},
  };
#else
  static const i32v halves[] = {
      {4, 5, 6, 7, 0, 1, 2, 3}, {2, 3, 0, 1, 6, 7, 4, 5}, {1, 0, 3, 2, 5, 4, 7, 6}};
#endif
  for (int h = 0; h < (int)(sizeof halves / sizeof halves[0]); h++) {
#ifdef __clang__
    f32v other;
    for (int l = 0; l < LANES; l++) other[l] = v[halves[h][l]];
#else
    f32v other = __builtin_shuffle(v, halves[h]);
#endif
    v = vcombine(kind, v, other);
  }
  return v[0];
}

/* init combined with every x[j]: in four vectors of partial results, or one for a row
 * shorter than four. */
static inline __attribute__((always_inline)) float reduce_row(int kind, const float *x,
                                                              int64_t n, float init) {
  f32v acc = splat(identity(kind));
  int64_t j = 0;
  if (n >= 4 * LANES) {
    f32v more[3] = {acc, acc, acc};
    for (; j + 4 * LANES <= n; j += 4 * LANES) {
      acc = vcombine(kind, acc, vload(x + j));
      for (int a = 0; a < 3; a++)
        more[a] = vcombine(kind, more[a], vload(x + j + (a + 1) * LANES));
    }
    acc = vcombine(kind, vcombine(kind, acc, more[0]), vcombine(kind, more[1], more[2]));
  }
  for (; j + LANES <= n; j += LANES) acc = vcombine(kind, acc, vload(x + j));
  float total = vfold(kind, acc);
  for (; j < n; j++) total = combine1(kind, total, x[j]);
  return combine1(kind, init, total);
}

enum { COLUMN_VECTORS = 8 }; /* a block of columns: 128 results in registers */

/* y[i] = init combined with x[r * inner + i] for r in order, for i in [start, end). */
static inline __attribute__((always_inline)) void reduce_columns(
    int kind, const float *x, float *y, int64_t reduced, int64_t inner, int64_t start,
    int64_t end, float init) {
  int64_t i = start;
  for (; i + COLUMN_VECTORS * LANES <= end; i += COLUMN_VECTORS * LANES) {
    f32v acc[COLUMN_VECTORS];
    for (int a = 0; a < COLUMN_VECTORS; a++) acc[a] = splat(init);
    for (int64_t r = 0; r < reduced; r++)
      for (int a = 0; a < COLUMN_VECTORS; a++)
        acc[a] = vcombine(kind, acc[a], vload(x + r * inner + i + a * LANES));
    for (int a = 0; a < COLUMN_VECTORS; a++) vstore(y + i + a * LANES, acc[a]);
  }
  for (; i + LANES <= end; i += LANES) {
    f32v acc = splat(init);
    for (int64_t r = 0; r < reduced; r++) acc = vcombine(kind, acc, vload(x + r * inner + i));
    vstore(y + i, acc);
  }
  for (; i < end; i++) {
    float acc = init;
    for (int64_t r = 0; r < reduced; r++) acc = combine1(kind, acc, x[r * inner + i]);
    y[i] = acc;
  }
}

typedef struct {
  const float *x;
  float *y;
  int64_t outer, reduced, inner, kind;
  float init;
  int64_t threads;
  ThreadNumber thread_number;
} Reduction;

/* The work is `outer` rows (inner == 1) or outer x blocks of columns, shared evenly. */
static int64_t reduction_units(const Reduction *p) {
  int64_t block = COLUMN_VECTORS * LANES;
  return p->inner == 1 ? p->outer : p->outer * ((p->inner + block - 1) / block);
}

static inline __attribute__((always_inline)) void reduce_part_of(int kind, const Reduction *p,
                                                                 int64_t part, int64_t parts) {
  int64_t units = reduction_units(p);
  int64_t first = units * part / parts, last = units * (part + 1) / parts;
  if (p->inner == 1) {
    for (int64_t o = first; o < last; o++)
      p->y[o] = reduce_row(kind, p->x + o * p->reduced, p->reduced, p->init);
    return;
  }
  int64_t block = COLUMN_VECTORS * LANES, blocks = (p->inner + block - 1) / block;
  for (int64_t u = first; u < last; u++) {
    int64_t o = u / blocks, start = u % blocks * block;
    int64_t end = start + block < p->inner ? start + block : p->inner;
    reduce_columns(kind, p->x + o * p->reduced * p->inner, p->y + o * p->inner, p->reduced,
                   p->inner, start, end, p->init);
  }
}

static void reduce_part(const Reduction *p, int64_t part, int64_t parts) {
  switch (p->kind) {
    case SUM: reduce_part_of(SUM, p, part, parts); break;
    case MAXIMUM: reduce_part_of(MAXIMUM, p, part, parts); break;
    default: reduce_part_of(MINIMUM, p, part, parts); break;
  }
}

static void run_reduction_thread(void *data) {
  const Reduction *p = data;
  reduce_part(p, p->thread_number(), p->threads);
}

/* y[outer, inner] = init combined with x[outer, r, inner] over r (x dense): a sum,
 * arith.maximumf or arith.minimumf (`kind`); `init_bits` is init's f32 bits. On up
 * to `threads` threads. */
KERNEL void shlo_reduce_f32(const float *x, float *y, int64_t outer, int64_t reduced,
                            int64_t inner, int64_t kind, int64_t init_bits, int64_t threads) {
  ParallelEntry parallel;
  ThreadNumber number;
  openmp_entries(&parallel, &number);
  Reduction p = {x, y, outer, reduced, inner, kind, bits_to_float(init_bits), threads, number};
  /* A thread needs 2^15 values of its own: entering a parallel region costs microseconds. */
  int64_t units = reduction_units(&p), worth = outer * reduced * inner >> 15;
  if (p.threads > units) p.threads = units;
  if (p.threads > worth) p.threads = worth;
  if (p.threads > 1 && parallel != NULL && number != NULL)
    parallel(run_reduction_thread, &p, (unsigned)p.threads, 0);
  else
    reduce_part(&p, 0, 1);
}

/* exp as shlo-approximate-math computes it (passes/cpu/approximate_math.py), with its
 * constants rounded to f32 as there: the same ops in the same order, so the same bits. */
static const float EXPM1[] = {0.5f, 0.1666666716337204f, 0.04166647046804428f,
                              0.008333193138241768f, 0.0013934571761637926f,
                              0.0001995737402467057f};
#define LOG2E ((float)1.4426950408889634)
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
#define MAGIC 12582912.0f
#define MAGIC_BITS 0x4B400000

static inline f32v pow2(i32v n) { return (f32v)((n + 127) << 23); }

/* r + r^2 EXPM1(r), by Horner's rule. */
static inline f32v expm1_of_reduced(f32v r) {
  f32v p = splat(EXPM1[5]);
  for (int i = 4; i >= 0; i--) p = vfma(p, r, splat(EXPM1[i]));
  return vfma(r * r, p, r);
}

/* x = n ln(2) + r, |r| <= ln(2) / 2: Cody-Waite reduction, n from the magic sum's bits. */
static inline f32v reduce_by_ln2(f32v x, i32v *n) {
  f32v t = vfma(x, splat(LOG2E), splat(MAGIC));
  *n = (i32v)t - MAGIC_BITS;
  f32v minus_n = -(t - MAGIC);
  return vfma(minus_n, splat(LN2_LO), vfma(minus_n, splat(LN2_HI), x));
}

/* exp(x) for any x: clamped to [-104, 89] (NaN stays NaN), then q 2^n in two normal
 * factors, so a denormal result rounds once. */
static inline f32v exp_general(f32v x) {
  x = vselect(x > splat(89.0f), splat(89.0f), x);
  x = vselect(x < splat(-104.0f), splat(-104.0f), x);
  i32v n;
  f32v q = expm1_of_reduced(reduce_by_ln2(x, &n)) + 1.0f;
  i32v half = n >> 1;
  return q * pow2(half) * pow2(n - half);
}

/* exp of four vectors: 2^n + 2^n expm1(r) in one FMA when every n is in [-125, 127]
 * (x in about [-86.9, 88.3], where softmax's x - max lies but for its extremes). */
static inline void exp4(f32v x[4]) {
  f32v r[4];
  i32v n[4], outside = {0};
  for (int a = 0; a < 4; a++) {
    r[a] = reduce_by_ln2(x[a], &n[a]);
    outside |= (u32v)(n[a] + 125) > 252u;
  }
  if (!vany(outside)) {
    for (int a = 0; a < 4; a++) {
      f32v scale = pow2(n[a]);
      x[a] = vfma(expm1_of_reduced(r[a]), scale, scale);
    }
  } else {
    for (int a = 0; a < 4; a++) x[a] = exp_general(x[a]);
  }
}

static inline f32v vexp(f32v x) {
  i32v n;
  f32v r = reduce_by_ln2(x, &n);
  if (vany((u32v)(n + 125) > 252u)) return exp_general(x);
  f32v scale = pow2(n);
  return vfma(expm1_of_reduced(r), scale, scale);
}

typedef struct {
  const float *x;
  float *y;
  int64_t rows, columns, scaling;
  float factor, reciprocal; /* reciprocal: 1 / factor when it is normal, else 0 */
  /* z's bias, or NULL. Row r is three indices, by these sizes (the last fastest); the
   * bias's row and the result's are at their offsets by these strides. The result's
   * row is dense, or a column of a transposed result when column_stride is not 1. */
  const float *bias;
  int64_t row_sizes[3], bias_strides[3], result_strides[3], column_stride;
  int64_t threads;
  ThreadNumber thread_number;
} Softmax;

#define FLOAT_MAX 3.40282347e38f
/* Floats ahead of the max's loads that it prefetches: 4 KB (512x4096 softmax 3% faster). */
enum { PREFETCH_DISTANCE = 1024 };

/* 1 / b where that is a normal number (2^-126 <= |b| <= 2^126, as shlo-reciprocal-division
 * requires), else 0. */
static inline float normal_reciprocal(float b) {
  float magnitude = __builtin_fabsf(b);
  return magnitude >= 0x1p-126f && magnitude <= 0x1p126f ? 1.0f / b : 0.0f;
}

/* z = x, x * factor or x / factor: a division by a normal reciprocal's product, as
 * shlo-reciprocal-division computes it, unless a product reaches the largest float. */
static inline __attribute__((always_inline)) f32v scaled(int scaling, const Softmax *p,
                                                           f32v x) {
  if (scaling == MULTIPLIED) return x * p->factor;
  if (scaling == UNSCALED) return x;
  if (p->reciprocal != 0.0f) {
    f32v z = x * p->reciprocal;
    if (!vany((z >= splat(FLOAT_MAX)) | (z <= splat(-FLOAT_MAX)))) return z;
  }
  return x / p->factor;
}

/* The larger of each lane, either when one is NaN and either
 * zero when both are: vmaxps where there is one. */
static inline f32v larger(f32v a, f32v b) {
#ifdef __AVX512F__
  return (f32v)_mm512_max_ps((__m512)a, (__m512)b);
#elif defined(__AVX__)
  return (f32v)_mm256_max_ps((__m256)a, (__m256)b);
#else
  return vselect(a > b, a, b);
#endif
}

/* The last, partial vector of a row of n: its lanes past the end are `pad`. */
static inline f32v load_tail(const float *x, int64_t n, float pad) {
  int64_t full = n / LANES * LANES;
#ifdef __AVX512F__
  __mmask16 lanes = (__mmask16)((1u << (n - full)) - 1);
  return (f32v)_mm512_mask_loadu_ps(_mm512_set1_ps(pad), lanes, x + full);
#else
  f32v v = splat(pad);
  for (int64_t j = full; j < n; j++) v[j - full] = x[j];
  return v;
#endif
}

static inline void store_tail(float *y, int64_t n, f32v v) {
  int64_t full = n / LANES * LANES;
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(y + full, (__mmask16)((1u << (n - full)) - 1), (__m512)v);
#else
  for (int64_t j = full; j < n; j++) y[j] = v[j - full];
#endif
}

/* The lanes of v summed (SUM) or their largest (MAXIMUM), for the softmax: AVX-512's
 * reductions where there are (their max skips NaN, as the softmax's may), else vfold. */
static inline float softmax_lanes(int kind, f32v v) {
#ifdef __AVX512F__
  return kind == SUM ? _mm512_reduce_add_ps((__m512)v) : _mm512_reduce_max_ps((__m512)v);
#else
  return vfold(kind, v);
#endif
}

/* z at x[j:j + LANES], and in a row's partial last vector (0 past the end). */
static inline __attribute__((always_inline)) f32v z_at(int scaling, int biased, const Softmax *p,
                                                          const float *x, const float *b,
                                                          int64_t j) {
  f32v z = scaled(scaling, p, vload(x + j));
  return biased ? z + vload(b + j) : z;
}

static inline __attribute__((always_inline)) f32v z_tail(int scaling, int biased,
                                                            const Softmax *p, const float *x,
                                                            const float *b, int64_t n) {
  f32v z = scaled(scaling, p, load_tail(x, n, 0.0f));
  return biased ? z + load_tail(b, n, 0.0f) : z;
}

/* A row's max. A NaN is skipped, whose e and so sum are NaN, and every result NaN then
 * as when the max is NaN. Its zero's sign does not matter: z - max is the same for
 * either but when z is a zero, and exp(+-0) is 1. */
static inline __attribute__((always_inline)) f32v row_max(int scaling, int biased,
                                                             const Softmax *p, const float *x,
                                                             const float *b) {
  int64_t n = p->columns, full = n / LANES * LANES;
  f32v most[4];
  for (int a = 0; a < 4; a++) most[a] = splat(-__builtin_inff());
  int64_t j = 0;
  for (; j + 4 * LANES <= full; j += 4 * LANES) {
    /* The row comes from memory: a few KB ahead of the loads */
    for (int a = 0; a < 4; a++) __builtin_prefetch(x + j + PREFETCH_DISTANCE + a * LANES);
    for (int a = 0; a < 4; a++)
      most[a] = larger(z_at(scaling, biased, p, x, b, j + a * LANES), most[a]);
  }
  for (; j < full; j += LANES) most[0] = larger(z_at(scaling, biased, p, x, b, j), most[0]);
  if (full < n) { /* the lanes past the end -inf */
    f32v z = z_tail(scaling, biased, p, x, b, n);
    most[1] = larger(load_tail((const float *)&z - full, n, -__builtin_inff()), most[1]);
  }
  f32v largest = larger(larger(most[0], most[1]), larger(most[2], most[3]));
  return splat(softmax_lanes(MAXIMUM, largest));
}

/* e = exp(z - max) into y, and its sum, from +0.0 as the op's. */
static inline __attribute__((always_inline)) float row_exp(int scaling, int biased,
                                                           const Softmax *p, const float *x,
                                                           const float *b, f32v max,
                                                           float *y) {
  int64_t n = p->columns, full = n / LANES * LANES, j = 0;
  f32v sums[4] = {splat(-0.0f), splat(-0.0f), splat(-0.0f), splat(-0.0f)};
  for (; j + 4 * LANES <= full; j += 4 * LANES) {
    f32v e[4];
    for (int a = 0; a < 4; a++) e[a] = z_at(scaling, biased, p, x, b, j + a * LANES) - max;
    exp4(e);
    for (int a = 0; a < 4; a++) {
      sums[a] += e[a];
      vstore(y + j + a * LANES, e[a]);
    }
  }
  for (; j < full; j += LANES) {
    f32v e = vexp(z_at(scaling, biased, p, x, b, j) - max);
    vstore(y + j, e);
    sums[0] += e;
  }
  if (full < n) {
    store_tail(y, n, vexp(z_tail(scaling, biased, p, x, b, n) - max));
    sums[1] += load_tail(y, n, -0.0f);
  }
  return 0.0f + softmax_lanes(SUM, (sums[0] + sums[1]) + (sums[2] + sums[3]));
}

/* e / sum, as shlo-reciprocal-division computes it, by the reciprocal: sum is in
 * [1, columns] (e is 1 at the max) and its reciprocal normal, and no product reaches
 * the largest float (e <= 1); or sum is NaN, and so is every result either way. */
static inline __attribute__((always_inline)) void row_divide(const Softmax *p, float sum,
                                                             float *y) {
  int64_t n = p->columns, full = n / LANES * LANES, j = 0;
  f32v reciprocal = splat(1.0f / sum);
  for (; j < full; j += LANES) vstore(y + j, vload(y + j) * reciprocal);
  if (full < n) store_tail(y, n, load_tail(y, n, 0.0f) * reciprocal);
}

/* `count` rows (1, 2 or 4) into y: each step for every row before the next step, so
 * that short rows' steps, each waiting on the one before, overlap. */
static inline __attribute__((always_inline)) void softmax_rows(
    int scaling, int biased, int count, const Softmax *p, const float *const *x,
    const float *const *b, float *const *y) {
  f32v max[4];
  float sum[4];
  for (int k = 0; k < count; k++) max[k] = row_max(scaling, biased, p, x[k], b[k]);
  for (int k = 0; k < count; k++) sum[k] = row_exp(scaling, biased, p, x[k], b[k], max[k], y[k]);
  for (int k = 0; k < count; k++) row_divide(p, sum[k], y[k]);
}

/* A row's three indices, by p's row sizes (the last fastest): found once by division,
 * then stepped row by row. Divided for every row, softmax over [65536, 16] took 0.99 ms
 * on one thread instead of 0.88. */
typedef struct {
  int64_t index[3];
} RowIndices;

static RowIndices row_indices(const Softmax *p, int64_t r) {
  RowIndices at;
  for (int d = 2; d >= 0; d--) {
    at.index[d] = r % p->row_sizes[d];
    r /= p->row_sizes[d];
  }
  return at;
}

static void next_row(const Softmax *p, RowIndices *at) {
  for (int d = 2; d >= 0 && ++at->index[d] == p->row_sizes[d]; d--) at->index[d] = 0;
}

static int64_t row_offset(const RowIndices *at, const int64_t strides[3]) {
  return at->index[0] * strides[0] + at->index[1] * strides[1] + at->index[2] * strides[2];
}

enum { MOST_TRANSPOSED_COLUMNS = 4096 }; /* rows of a transposed result: on the stack */
/* Rows up to this long go two at a time, and up to 64 four at a time: softmax over
 * [8192, 64] took 0.136 ms one at a time, 0.119 in twos, 0.117 in fours (generated code:
 * 0.110-0.116), [1536, 128] 0.042 and 0.037. Rows of 512 in twos were slower (0.318 ->
 * 0.353 ms for [4096, 512]). */
enum { MOST_PAIRED_COLUMNS = 256, MOST_COLUMNS_IN_FOURS = 64 };

static inline __attribute__((always_inline)) void softmax_rows_of(
    int count, const Softmax *p, const float *const *x, const float *const *b,
    float *const *y) {
  switch (p->scaling + 3 * (b[0] != NULL)) {
    case UNSCALED: softmax_rows(UNSCALED, 0, count, p, x, b, y); break;
    case MULTIPLIED: softmax_rows(MULTIPLIED, 0, count, p, x, b, y); break;
    case DIVIDED: softmax_rows(DIVIDED, 0, count, p, x, b, y); break;
    case 3 + UNSCALED: softmax_rows(UNSCALED, 1, count, p, x, b, y); break;
    case 3 + MULTIPLIED: softmax_rows(MULTIPLIED, 1, count, p, x, b, y); break;
    default: softmax_rows(DIVIDED, 1, count, p, x, b, y); break;
  }
}

static void softmax_part(const Softmax *p, int64_t part, int64_t parts) {
  int64_t n = p->columns, last = p->rows * (part + 1) / parts;
  /* A transposed result's row is computed here, then written as a column of it. */
  float row[p->column_stride == 1 ? 1 : MOST_TRANSPOSED_COLUMNS];
  int paired = p->column_stride == 1 && n <= MOST_PAIRED_COLUMNS;
  int64_t first = p->rows * part / parts;
  RowIndices at = row_indices(p, first);
  for (int64_t r = first; r < last;) {
    int count = paired && r + 1 < last ? 2 : 1;
    if (paired && n <= MOST_COLUMNS_IN_FOURS && r + 3 < last) count = 4;
    const float *x[4], *b[4];
    float *y[4], *out[4];
    for (int k = 0; k < count; k++) {
      x[k] = p->x + (r + k) * n;
      b[k] = p->bias == NULL ? NULL : p->bias + row_offset(&at, p->bias_strides);
      y[k] = p->y + row_offset(&at, p->result_strides);
      out[k] = p->column_stride == 1 ? y[k] : row;
      next_row(p, &at);
    }
    if (count == 4)
      softmax_rows_of(4, p, x, b, out);
    else if (count == 2)
      softmax_rows_of(2, p, x, b, out);
    else
      softmax_rows_of(1, p, x, b, out);
    if (out[0] != y[0])
      for (int64_t j = 0; j < n; j++) y[0][j * p->column_stride] = row[j];
    r += count;
  }
}

static void run_softmax_thread(void *data) {
  const Softmax *p = data;
  softmax_part(p, p->thread_number(), p->threads);
}

static void softmax(Softmax *p) {
  ParallelEntry parallel;
  ThreadNumber number;
  openmp_entries(&parallel, &number);
  p->thread_number = number;
  float magnitude = __builtin_fabsf(p->factor);
  p->reciprocal = normal_reciprocal(p->factor);
  if (p->scaling == DIVIDED && p->reciprocal != 0.0f && magnitude >= 1.0f) {
    /* |x / factor| <= |x|: no product reaches the largest float, but for x infinite or
     * the largest and factor 1, where the product is the quotient. */
    p->scaling = MULTIPLIED;
    p->factor = p->reciprocal;
  }
  int64_t worth = p->rows * p->columns >> 13; /* exp makes a value worth more than a sum's */
  if (p->threads > p->rows) p->threads = p->rows;
  if (p->threads > worth) p->threads = worth;
  if (p->threads > 1 && parallel != NULL && number != NULL)
    parallel(run_softmax_thread, p, (unsigned)p->threads, 0);
  else
    softmax_part(p, 0, 1);
}

/* y = softmax of each row of z, rows x columns: z = x, x * factor or x / factor
 * (`scaling`; `factor_bits` is the factor's f32 bits), plus the bias when `biased`. Row r
 * is three indices by sizes s0 x s1 x s2 (s2 fastest); its bias is at that offset by
 * strides t0, t1, t2 (0: broadcast), and its result by u0, u1, u2, the columns
 * `column_stride` apart (1 but for a transposed result, whose rows have at most
 * MOST_TRANSPOSED_COLUMNS). On up to `threads` threads. */
KERNEL void shlo_softmax_f32(const float *x, const float *bias, float *y, int64_t rows,
                             int64_t columns, int64_t scaling, int64_t factor_bits,
                             int64_t biased, int64_t s0, int64_t s1, int64_t s2, int64_t t0,
                             int64_t t1, int64_t t2, int64_t u0, int64_t u1, int64_t u2,
                             int64_t column_stride, int64_t threads) {
  Softmax p = {x, y, rows, columns, scaling, bits_to_float(factor_bits), 0.0f,
               biased ? bias : NULL, {s0, s1, s2}, {t0, t1, t2}, {u0, u1, u2},
               column_stride, threads, NULL};
  softmax(&p);
}

#pragma GCC pop_options
