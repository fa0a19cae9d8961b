/* Permuted copies of f32 arrays for shlo's CPU code: a transpose that fusion leaves on its
 * own (shlo-mark-precompiled-transposes) calls this kernel instead of having code
 * generated for it, whose 16 x 16 tiles of shuffles cost LLVM 15-20 ms per transpose.
 * Compiled after matmul_f32.c, whose OpenMP entry points and thread shares it uses.
 *
 * out, dense, of sizes[TRANSPOSE_RANK] (leading sizes of 1 pad a lower rank), holds at
 * index i the value in[offset + sum over k of i[k] strides[k]] (strides in elements).
 * Three ways, after dimensions of size 1 are dropped and dimensions that stay adjacent
 * in `in` are merged:
 *   - the last dimension is contiguous in `in`: rows copied whole;
 *   - another dimension is: tiles of SIDE x SIDE values of it and the last one (a
 *     vector's lanes: 16 with AVX-512, 8 with AVX2), each read as SIDE vectors of
 *     `in`, transposed in registers, written as SIDE vectors of `out`;
 *   - else one value at a time. */

enum { TRANSPOSE_RANK = 6, SIDE = LANES }; /* SIDE: of a square tile, a vector's */

typedef struct {
  const float *in;
  float *out;
  int64_t rank, tile_dimension; /* -1: no tiles */
  int64_t sizes[TRANSPOSE_RANK], strides[TRANSPOSE_RANK], out_strides[TRANSPOSE_RANK];
  /* The units of work, a row of the last dimension each (with tiles: SIDE rows of the
   * tile dimension), counted by an odometer whose first wheel turns fastest. */
  int64_t wheels, counts[TRANSPOSE_RANK], in_steps[TRANSPOSE_RANK], out_steps[TRANSPOSE_RANK];
  int64_t units, threads;
  ThreadNumber thread_number;
} Transpose;

#ifdef __AVX512F__
/* `rows` (up to 16) vectors of `lanes` values (up to 16) of `in`, a row apart, written
 * transposed: `lanes` vectors of `rows` values of `out`, by matmul_f32.c's
 * transpose_16x16 (as fast as a plain copy of the tile on Zen 4; vpermt2ps took three
 * times as long). */
static inline void transpose_tile(const float *in, int64_t in_row, float *out, int64_t out_row,
                                  int rows, int lanes) {
  __mmask16 read = (__mmask16)((1u << lanes) - 1), written = (__mmask16)((1u << rows) - 1);
  __m512 r[SIDE];
  for (int a = 0; a < SIDE; a++)
    r[a] = a < rows ? _mm512_maskz_loadu_ps(read, in + a * in_row) : _mm512_setzero_ps();
  transpose_16x16(r);
  for (int b = 0; b < lanes; b++) _mm512_mask_storeu_ps(out + b * out_row, written, r[b]);
}

/* A row of `length` contiguous values. */
static inline void copy_row(const float *in, float *out, int64_t length) {
  int64_t i = 0;
  for (; i + SIDE <= length; i += SIDE) _mm512_storeu_ps(out + i, _mm512_loadu_ps(in + i));
  if (i < length) {
    __mmask16 rest = (__mmask16)((1u << (length - i)) - 1);
    _mm512_mask_storeu_ps(out + i, rest, _mm512_maskz_loadu_ps(rest, in + i));
  }
}
#elif defined(__AVX2__)
/* Lanes below `count` set, the others clear. */
static inline __m256i first_lanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* As AVX-512's, 8 x 8 (matmul_f32.c's transpose_8x8). A partial tile's rows are read
 * through masks, and its columns written through a copy: masked stores are microcoded on
 * AMD's cores (with them for every tile, a Zen 3 took twice the generated code's time). */
static inline void transpose_tile(const float *in, int64_t in_row, float *out, int64_t out_row,
                                  int rows, int lanes) {
  __m256 r[SIDE];
  if (rows == SIDE && lanes == SIDE) {
    for (int a = 0; a < SIDE; a++) r[a] = _mm256_loadu_ps(in + a * in_row);
    transpose_8x8(r);
    for (int b = 0; b < SIDE; b++) _mm256_storeu_ps(out + b * out_row, r[b]);
    return;
  }
  __m256i read = first_lanes(lanes);
  for (int a = 0; a < SIDE; a++)
    r[a] = a < rows ? _mm256_maskload_ps(in + a * in_row, read) : _mm256_setzero_ps();
  transpose_8x8(r);
  for (int b = 0; b < lanes; b++) {
    float column[SIDE];
    _mm256_storeu_ps(column, r[b]);
    memcpy(out + b * out_row, column, sizeof(float) * (size_t)rows);
  }
}

static void copy_row(const float *in, float *out, int64_t length) {
  memcpy(out, in, (size_t)length * sizeof(float));
}
#else
static void transpose_tile(const float *in, int64_t in_row, float *out, int64_t out_row,
                           int rows, int lanes) {
  for (int a = 0; a < rows; a++)
    for (int b = 0; b < lanes; b++) out[b * out_row + a] = in[a * in_row + b];
}

static void copy_row(const float *in, float *out, int64_t length) {
  memcpy(out, in, (size_t)length * sizeof(float));
}
#endif

static void copy_units(const Transpose *t, int64_t first, int64_t end) {
  int64_t last = t->rank - 1, length = t->sizes[last], step = t->strides[last];
  int64_t d = t->tile_dimension, index[TRANSPOSE_RANK], in = 0, out = 0;
  for (int64_t w = 0, unit = first; w < t->wheels; w++) {
    index[w] = unit % t->counts[w];
    unit /= t->counts[w];
    in += index[w] * t->in_steps[w];
    out += index[w] * t->out_steps[w];
  }
  for (int64_t unit = first; unit < end; unit++) {
    const float *from = t->in + in;
    float *to = t->out + out;
    if (step == 1) {
      copy_row(from, to, length);
    } else if (d < 0) {
      for (int64_t i = 0; i < length; i++) to[i] = from[i * step];
    } else {
      /* Tiles of up to SIDE values of the tile dimension (contiguous in `in`) by up to
       * SIDE of the last one. */
      int64_t lanes = t->sizes[d] - index[0] * SIDE;
      if (lanes > SIDE) lanes = SIDE;
      for (int64_t i = 0; i < length; i += SIDE) {
        int64_t rows = length - i < SIDE ? length - i : SIDE;
        transpose_tile(from + i * step, step, to + i, t->out_strides[d], (int)rows, (int)lanes);
      }
    }
    /* The next unit: turn the first wheel, carrying into the next ones. */
    for (int64_t w = 0; w < t->wheels; w++) {
      in += t->in_steps[w];
      out += t->out_steps[w];
      if (++index[w] < t->counts[w]) break;
      in -= t->counts[w] * t->in_steps[w];
      out -= t->counts[w] * t->out_steps[w];
      index[w] = 0;
    }
  }
}

static void transpose_thread(void *data) {
  const Transpose *t = data;
  int64_t part = t->thread_number(), parts = t->threads;
  copy_units(t, share(t->units, 1, part, parts), share(t->units, 1, part + 1, parts));
}

KERNEL void shlo_transpose_f32(const float *in, float *out, int64_t offset, int64_t size0,
                               int64_t size1, int64_t size2, int64_t size3, int64_t size4,
                               int64_t size5, int64_t stride0, int64_t stride1, int64_t stride2,
                               int64_t stride3, int64_t stride4, int64_t stride5,
                               int64_t threads) {
  int64_t sizes[TRANSPOSE_RANK] = {size0, size1, size2, size3, size4, size5};
  int64_t strides[TRANSPOSE_RANK] = {stride0, stride1, stride2, stride3, stride4, stride5};
  Transpose t = {.in = in + offset, .out = out, .rank = 0, .tile_dimension = -1, .wheels = 0};
  int64_t elements = 1;
  for (int k = 0; k < TRANSPOSE_RANK; k++) {
    elements *= sizes[k];
    if (sizes[k] == 1) continue;
    int64_t r = t.rank;
    if (r > 0 && t.strides[r - 1] == strides[k] * sizes[k]) { /* adjacent in `in` too */
      t.sizes[r - 1] *= sizes[k];
      t.strides[r - 1] = strides[k];
    } else {
      t.sizes[r] = sizes[k];
      t.strides[r] = strides[k];
      t.rank++;
    }
  }
  if (elements == 0) return;
  if (t.rank == 0) { /* one value */
    t.rank = 1;
    t.sizes[0] = 1;
    t.strides[0] = 1;
  }
  int64_t last = t.rank - 1;
  t.out_strides[last] = 1;
  for (int64_t k = last - 1; k >= 0; k--) t.out_strides[k] = t.out_strides[k + 1] * t.sizes[k + 1];
  for (int64_t k = 0; k < last && t.strides[last] != 1; k++)
    if (t.strides[k] == 1) t.tile_dimension = k;
  t.units = 1;
  if (t.tile_dimension >= 0) { /* the tiles of the tile dimension turn fastest */
    int64_t d = t.tile_dimension;
    t.counts[0] = (t.sizes[d] + SIDE - 1) / SIDE;
    t.in_steps[0] = SIDE * t.strides[d];
    t.out_steps[0] = SIDE * t.out_strides[d];
    t.wheels = 1;
  }
  for (int64_t k = last - 1; k >= 0; k--) {
    if (k == t.tile_dimension) continue;
    t.counts[t.wheels] = t.sizes[k];
    t.in_steps[t.wheels] = t.strides[k];
    t.out_steps[t.wheels] = t.out_strides[k];
    t.wheels++;
  }
  for (int64_t w = 0; w < t.wheels; w++) t.units *= t.counts[w];
  ParallelEntry parallel;
  openmp_entries(&parallel, &t.thread_number);
  /* Copies are bound by memory: a second thread pays from about 2^15 values. */
  t.threads = threads;
  if (t.threads > t.units) t.threads = t.units;
  if (t.threads > (elements >> 15)) t.threads = elements >> 15;
  if (t.threads > 1 && parallel != NULL && t.thread_number != NULL)
    parallel(transpose_thread, &t, (unsigned)t.threads, 0);
  else
    copy_units(&t, 0, t.units);
}
