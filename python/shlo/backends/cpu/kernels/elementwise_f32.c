/* Fused elementwise f32 ops for shlo's CPU code: a small program of chains of vector
 * steps, run block by block. Compiled after rows_f32.c (whose vector helpers and exp this
 * uses) and called by the code of every program with such an op
 * (shlo-mark-precompiled-elementwise), which so leaves LLVM nothing to generate
 * for it.
 *
 * The program is an array of int64 words, written by the pass:
 *   rank, inputs, constants, slots, chains, result,
 *   sizes[rank], strides[inputs][rank] (in elements; 0: broadcast),
 *   constants' f32 bits[constants],
 *   then each chain: slot, start, steps, steps x {op, operand, reversed}.
 * An operand v is input v (v < inputs), constant v - inputs, or else slot
 * v - inputs - constants. A chain computes a value from its start by steps, each
 * combining it with an operand (-2: the value itself; -1: none, for a unary op),
 * and writes it to its slot; the last chain's is the result, unless `result` names
 * another operand. The result is dense, of `sizes`. Each block of up to BLOCK values
 * of a row (the last dimension) goes through every chain before the next block
 * starts, so the values between chains stay in the L1 cache, and within a chain in
 * registers.
 *
 * Every step rounds as the generated code does: no product and sum contracted into
 * an FMA, exp and tanh as shlo-approximate-math computes them, op for op. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

enum { EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MAX, EW_MIN, EW_NEG, EW_ABS, EW_SQRT, EW_RSQRT,
       EW_EXP, EW_TANH };
/* Values of a block, and how many a run of cheap steps takes at once in registers: 4 zmm
 * or 8 ymm registers, so that each step's dispatch pays for as many values with AVX2 as
 * with AVX-512. */
enum { BLOCK = 256, GROUP = 64, VECTORS = GROUP / LANES };
/* The pass's limits (shlo-mark-precompiled-elementwise). */
enum { MAX_RANK = 6, MAX_INPUTS = 8, MAX_CONSTANTS = 16, MAX_SLOTS = 8, MAX_STEPS = 64 };

/* tanh(a) = expm1(2a) / (expm1(2a) + 2) for a = |x| <= 8.6, copied sign; 1 from
 * 9.010914 up (approximate_tanh). */
static inline f32v vtanh(f32v x) {
  f32v a = (f32v)((i32v)x & 0x7fffffff);
  f32v clamped = vselect(a > splat(0x1.133334p+3f), splat(0x1.133334p+3f), a);
  f32v t = vfma(clamped, splat(0x1.715476p+1f), splat(MAGIC)); /* 2 / ln(2) */
  i32v n = (i32v)t - MAGIC_BITS;
  f32v minus_n = -(t - MAGIC);
  f32v r = vfma(minus_n, splat(0x1.62e430p-2f), clamped); /* ln(2) / 2 */
  f32v p = splat(EXPM1[5] * 64.0f);
  for (int i = 4; i >= 0; i--) p = vfma(p, r, splat(EXPM1[i] * (float)(2 << i)));
  f32v half_expm1 = vfma(r * r, p, r);
  f32v twice_scale = pow2(n + 1);
  f32v expm1 = vfma(twice_scale, half_expm1, vfma(twice_scale, splat(0.5f), splat(-1.0f)));
  f32v quotient = expm1 / (expm1 + 2.0f);
  f32v magnitude = vselect(a >= splat(0x1.205968p+3f), splat(1.0f), quotient);
  return (f32v)(((i32v)magnitude & 0x7fffffff) | ((i32v)x & INT32_MIN));
}

static inline f32v vsqrt(f32v x) {
#ifdef __AVX512F__
  return (f32v)_mm512_sqrt_ps((__m512)x);
#elif defined(__AVX__)
  return (f32v)_mm256_sqrt_ps((__m256)x);
#else
  f32v r;
  for (int l = 0; l < LANES; l++) r[l] = __builtin_sqrtf(x[l]);
  return r;
#endif
}

/* x / b for a b that every lane shares, by its normal reciprocal r (normal_reciprocal):
 * products, as shlo-reciprocal-division computes them (and XLA: A / broadcast(B) is
 * A * broadcast(1 / B)); a lane whose product reaches the largest float is divided.
 * (The generated code divides its whole vector then: 16 to 128 lanes.) */
static inline f32v divide_by_shared(f32v x, float b, float r) {
  f32v z = x * r;
  i32v huge = (z >= splat(FLOAT_MAX)) | (z <= splat(-FLOAT_MAX));
  return vany(huge) ? vselect(huge, x / b, z) : z;
}

/* A step's op, the start of its operand (NULL: none, or the value itself), its order
 * and a shared divisor and its reciprocal (0: none). */
typedef struct {
  int64_t op, reversed;
  const float *other;
  float divisor, reciprocal;
  int shared; /* every lane of `other` holds one value (a constant, a per-row input) */
} Step;

static inline int expensive(int64_t op) { return op == EW_EXP || op == EW_TANH; }

/* d = steps[0, n) applied in turn to x, none of them expensive, for `count` values (a
 * multiple of GROUP): a group of vectors goes through every step in registers. */
static void run_cheap_steps(const Step *step, int64_t n, const float *x, float *d,
                            int64_t count) {
  for (int64_t i = 0; i < count; i += GROUP) {
    f32v v[VECTORS];
    for (int j = 0; j < VECTORS; j++) v[j] = vload(x + i + j * LANES);
    for (int64_t k = 0; k < n; k++) {
      const Step *s = step + k;
      const float *other = s->other;
      /* No pointer to v: it stays in registers. y is the operand's vector j: the value
       * itself, one register for a shared operand (not a load per vector), or a load.
       * (Add, multiply, max and min give the same value either way round: NaN's
       * payload aside.) */
#define BINARY(EXPR)                                   \
  if (other == NULL) {                                 \
    for (int j = 0; j < VECTORS; j++) {                \
      f32v y = v[j];                                   \
      v[j] = EXPR;                                     \
    }                                                  \
  } else if (s->shared) {                              \
    f32v y = splat(other[0]);                          \
    for (int j = 0; j < VECTORS; j++) v[j] = EXPR;     \
  } else {                                             \
    for (int j = 0; j < VECTORS; j++) {                \
      f32v y = vload(other + i + j * LANES);           \
      v[j] = EXPR;                                     \
    }                                                  \
  }                                                    \
  break
#define UNARY(EXPR) \
  for (int j = 0; j < VECTORS; j++) v[j] = EXPR; \
  break
      switch (s->op) {
        case EW_ADD: BINARY(v[j] + y);
        case EW_SUB:
          if (s->reversed) {
            BINARY(y - v[j]);
          }
          BINARY(v[j] - y);
        case EW_MUL: BINARY(v[j] * y);
        case EW_DIV:
          if (s->reversed) {
            BINARY(y / v[j]);
          }
          if (s->reciprocal != 0.0f) {
            UNARY(divide_by_shared(v[j], s->divisor, s->reciprocal));
          }
          BINARY(v[j] / y);
        case EW_MAX: BINARY(vcombine(MAXIMUM, v[j], y));
        case EW_MIN: BINARY(vcombine(MINIMUM, v[j], y));
        case EW_NEG: UNARY(-v[j]);
        case EW_ABS: UNARY((f32v)((i32v)v[j] & 0x7fffffff));
        case EW_SQRT: UNARY(vsqrt(v[j]));
        case EW_RSQRT: UNARY(1.0f / vsqrt(v[j]));
#undef UNARY
#undef BINARY
        default: break;
      }
    }
    for (int j = 0; j < VECTORS; j++) vstore(d + i + j * LANES, v[j]);
  }
}

/* d = exp or tanh of x, for `count` values (a multiple of GROUP): a long chain of
 * dependent ops per vector, in a loop over the whole block (exp four vectors at a time,
 * for its fast path's test). */
static void run_expensive_step(int64_t op, const float *x, float *d, int64_t count) {
  if (op == EW_EXP) {
    for (int64_t i = 0; i < count; i += 4 * LANES) {
      f32v v[4];
      for (int j = 0; j < 4; j++) v[j] = vload(x + i + j * LANES);
      exp4(v);
      for (int j = 0; j < 4; j++) vstore(d + i + j * LANES, v[j]);
    }
    return;
  }
  /* One vector at a time: four at once (the generated code's eight) ran 10-20% slower. */
  for (int64_t i = 0; i < count; i += LANES) vstore(d + i, vtanh(vload(x + i)));
}

/* d = a chain of steps on a value that starts as `start`, for `count` values (a
 * multiple of GROUP): each step combines it with another operand (before it, when
 * `reversed`), or is unary. Runs of cheap steps keep the value in registers; exp and
 * tanh go through a block of the L1 cache, whose whole length gives their polynomials
 * independent work. */
static void run_chain(const int64_t *chain, const float *const *operand, const char *shared,
                      float *d, int64_t count) {
  int64_t steps = chain[2];
  Step step[MAX_STEPS];
  for (int64_t k = 0; k < steps; k++) {
    const int64_t *s = chain + 3 + 3 * k;
    int64_t o = s[1];
    int shared_operand = o >= 0 && shared[o];
    int shared_divisor = s[0] == EW_DIV && !s[2] && shared_operand;
    float divisor = shared_divisor ? operand[o][0] : 0.0f;
    step[k] = (Step){s[0], s[2], o >= 0 ? operand[o] : NULL, divisor,
                     shared_divisor ? normal_reciprocal(divisor) : 0.0f, shared_operand};
  }
  float value[BLOCK] __attribute__((aligned(64)));
  const float *x = operand[chain[1]];
  for (int64_t k = 0; k < steps;) {
    int64_t end = k;
    while (end < steps && !expensive(step[end].op)) end++;
    int64_t last = end == steps || (end == k && k + 1 == steps);
    float *to = last ? d : value;
    if (end > k) {
      run_cheap_steps(step + k, end - k, x, to, count);
      k = end;
    } else {
      run_expensive_step(step[k].op, x, to, count);
      k++;
    }
    x = to;
  }
}

typedef struct {
  const float *inputs[MAX_INPUTS];
  float *y;
  const int64_t *program;
  int64_t threads;
  ThreadNumber thread_number;
} Elementwise;

typedef struct {
  int64_t rank, inputs, constants, slots, chains, result;
  const int64_t *sizes, *strides, *bits, *chain;
  int64_t rows, row_blocks, units;
} Program;

static Program read_program(const int64_t *w) {
  Program g = {.rank = w[0], .inputs = w[1], .constants = w[2], .slots = w[3], .chains = w[4],
               .result = w[5]};
  g.sizes = w + 6;
  g.strides = g.sizes + g.rank;
  g.bits = g.strides + g.inputs * g.rank;
  g.chain = g.bits + g.constants;
  g.rows = 1;
  for (int64_t d = 0; d + 1 < g.rank; d++) g.rows *= g.sizes[d];
  int64_t columns = g.sizes[g.rank - 1];
  g.row_blocks = (columns + BLOCK - 1) / BLOCK;
  g.units = g.rows * g.row_blocks;
  return g;
}

static void elementwise_part(const Elementwise *p, int64_t part, int64_t parts) {
  Program g = read_program(p->program);
  int64_t columns = g.sizes[g.rank - 1];
  /* 32 KB of stack: OpenMP's threads have megabytes. */
  float constants[MAX_CONSTANTS][BLOCK] __attribute__((aligned(64)));
  float slots[MAX_SLOTS][BLOCK] __attribute__((aligned(64)));
  float staged[MAX_INPUTS][BLOCK] __attribute__((aligned(64)));
  const float *operand[MAX_INPUTS + MAX_CONSTANTS + MAX_SLOTS];
  for (int64_t c = 0; c < g.constants; c++) {
    float value = bits_to_float(g.bits[c]);
    for (int64_t i = 0; i < BLOCK; i++) constants[c][i] = value;
    operand[g.inputs + c] = constants[c];
  }
  for (int64_t s = 0; s < g.slots; s++) operand[g.inputs + g.constants + s] = slots[s];
  /* Operands whose lanes all hold one value: constants and inputs broadcast along rows. */
  char shared[MAX_INPUTS + MAX_CONSTANTS + MAX_SLOTS] = {0};
  for (int64_t i = 0; i < g.inputs; i++) shared[i] = g.strides[i * g.rank + g.rank - 1] == 0;
  for (int64_t c = 0; c < g.constants; c++) shared[g.inputs + c] = 1;
  int64_t first = g.units * part / parts, last = g.units * (part + 1) / parts;
  for (int64_t u = first; u < last; u++) {
    int64_t row = u / g.row_blocks, start = u % g.row_blocks * BLOCK;
    int64_t n = columns - start < BLOCK ? columns - start : BLOCK;
    int64_t count = (n + GROUP - 1) / GROUP * GROUP;
    /* Each input's offset: the row's indices (the last dimension's fastest) by its strides. */
    int64_t offsets[MAX_INPUTS] = {0};
    for (int64_t d = g.rank - 2, rest = row; d >= 0; d--) {
      int64_t index = rest % g.sizes[d];
      rest /= g.sizes[d];
      for (int64_t i = 0; i < g.inputs; i++) offsets[i] += index * g.strides[i * g.rank + d];
    }
    for (int64_t i = 0; i < g.inputs; i++) {
      const float *x = p->inputs[i] + offsets[i];
      if (g.strides[i * g.rank + g.rank - 1] == 0) {
        for (int64_t k = 0; k < count; k++) staged[i][k] = x[0];
        operand[i] = staged[i];
      } else if (n == BLOCK) {
        operand[i] = x + start;
      } else {
        for (int64_t k = 0; k < count; k++) staged[i][k] = k < n ? x[start + k] : 0.0f;
        operand[i] = staged[i];
      }
    }
    float *y = p->y + row * columns + start;
    int64_t result_slot = g.result - g.inputs - g.constants;
    const float *result = operand[g.result];
    const int64_t *chain = g.chain;
    for (int64_t c = 0; c < g.chains; c++) {
      /* A full block's last chain writes the result in place. */
      int direct = c == g.chains - 1 && n == BLOCK && chain[0] == result_slot;
      run_chain(chain, operand, shared, direct ? y : slots[chain[0]], count);
      if (direct) result = y;
      chain += 3 + 3 * chain[2];
    }
    if (result != y)
      for (int64_t k = 0; k < n; k++) y[k] = result[k];
  }
}

static void run_elementwise_thread(void *data) {
  const Elementwise *p = data;
  elementwise_part(p, p->thread_number(), p->threads);
}

/* y = the program's result, on up to `threads` threads; x0..x7 are its inputs (those
 * past its count unread). */
KERNEL void shlo_elementwise_f32(const float *x0, const float *x1, const float *x2,
                                 const float *x3, const float *x4, const float *x5,
                                 const float *x6, const float *x7, const int64_t *program,
                                 float *y, int64_t threads) {
  ParallelEntry parallel;
  ThreadNumber number;
  openmp_entries(&parallel, &number);
  Elementwise p = {{x0, x1, x2, x3, x4, x5, x6, x7}, y, program, threads, number};
  Program g = read_program(program);
  int64_t values = g.units * BLOCK, worth = values * g.chains >> 15;
  if (p.threads > g.units) p.threads = g.units;
  if (p.threads > worth) p.threads = worth;
  if (p.threads > 1 && parallel != NULL && number != NULL)
    parallel(run_elementwise_thread, &p, (unsigned)p.threads, 0);
  else
    elementwise_part(&p, 0, 1);
}

#pragma GCC pop_options
