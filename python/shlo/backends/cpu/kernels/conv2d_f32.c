/* f32 2-D convolutions (NHWC input, HWIO filter, NHWC output) for shlo's CPU code,
 * compiled with the matrix products (matmul_f32.c, whose thread entry points, vector
 * types and matmul it uses) into one object built once per machine. 1-D convolutions
 * come as 2-D ones of height 1.
 *
 * Output rows of 28 columns or more are computed directly: a register tile of CONV_MR
 * output columns x NR channels (14 x 32 with AVX-512) takes, for each tap (kh, kw) and
 * input channel, one broadcast input per column and two vectors of the filter, which is
 * first copied into blocks of NR channels so that those vectors are contiguous. Padding
 * is made where the rows are: each output row reads KH input rows, and a row that needs
 * padding is copied into a zeroed scratch row, kept while the next output rows read it.
 * The threads share the tiles.
 *
 * Shorter rows fill too few of a tile's columns (7 x 7 images ran at 0.6x the generated
 * code's speed, one-column 1-D convolutions at 0.4x): each position's window becomes a
 * row of a matrix (im2col), which the matmul kernel multiplies by the filter, itself a
 * [kh * kw * c, f] matrix. Either way the padding's zeros are multiplied as the op
 * multiplies them (0 x inf is NaN).
 */
#include <string.h>

/* 14 columns x 2 vectors: 28 of the 32 zmm registers accumulate (8 columns: 150
 * against 165 GFLOP/s on one thread, 56 x 56 x 64 -> 64, 3 x 3); with AVX2, 6 columns:
 * 12 of the 16 ymm registers. */
#ifdef __AVX512F__
#define CONV_MR 14
#else
#define CONV_MR 6
#endif

/* Output rows this wide or wider are computed directly (windows against direct tiles,
 * 3 x 3, ms: 56 x 56 x 64 0.87 against 0.64; 28 x 28 x 128 0.71 against 0.68;
 * 14 x 14 x 256 0.80 against 1.34). */
enum { DIRECT_MIN_COLUMNS = 28 };

/* Windows at least this deep are multiplied in place when they are contiguous
 * (windows_in_place). */
enum { WINDOWS_IN_PLACE_MIN_DEPTH = 256 };

typedef struct {
  const float *x, *w;
  float *y;
  int64_t n, h, width, c;       /* the input, unpadded */
  int64_t kh, kw, f;            /* the filter */
  int64_t oh, ow;               /* the output */
  int64_t pad_top, pad_left;    /* zero rows and columns before the input's */
  int64_t sh, sw, dh, dw;       /* strides and dilations */
  const float *blocks;          /* direct: the filter in blocks of NR channels (below) */
  int64_t threads;
  ThreadNumber thread_number;
  int method;
  const float *windows; /* by_channels: every position's window, made before the threads */
} Conv;

/* How the threads share the work: output rows computed directly (register tiles along
 * ow); or each position's window copied into a row (im2col) and multiplied by the filter,
 * a [kh * kw * c, f] matrix, by the matmul kernel, the positions or the channels shared. */
enum { DIRECT, BY_POSITIONS, BY_CHANNELS };

/* Columns of the input that the output's columns read, padding included. */
static int64_t read_width(const Conv *p) { return (p->ow - 1) * p->sw + (p->kw - 1) * p->dw + 1; }

/* y[rows x NR] at out (row stride f) = the taps of `in` (KH rows, each read from its
 * column start) with one block of the filter: [kh][kw][c][NR], NR channels contiguous.
 * Inlined for rows = CONV_MR. */
static inline __attribute__((always_inline)) void conv_tile(
    const Conv *p, int rows, const float *const *in, const float *restrict block, float *out,
    int64_t columns) {
  f32v acc[CONV_MR][2];
  for (int i = 0; i < CONV_MR; i++) acc[i][0] = acc[i][1] = (f32v){0};
  int64_t c = p->c, across = p->sw * c;
  for (int64_t kh = 0; kh < p->kh; kh++)
    for (int64_t kw = 0; kw < p->kw; kw++) {
      const float *a = in[kh] + kw * p->dw * c;
      const float *b = block + (kh * p->kw + kw) * c * NR;
      for (int64_t q = 0; q < c; q++) {
        f32v b0 = *(const f32v *)(b + q * NR), b1 = *(const f32v *)(b + q * NR + LANES);
        for (int i = 0; i < rows; i++) {
          float s = a[i * across + q];
          acc[i][0] += s * b0;
          acc[i][1] += s * b1;
        }
      }
    }
  if (columns == NR) {
    for (int i = 0; i < rows; i++) {
      *(f32v_unaligned *)(out + i * p->f) = acc[i][0];
      *(f32v_unaligned *)(out + i * p->f + LANES) = acc[i][1];
    }
    return;
  }
  float tile[CONV_MR * NR] __attribute__((aligned(64)));
  for (int i = 0; i < rows; i++) {
    *(f32v *)(tile + i * NR) = acc[i][0];
    *(f32v *)(tile + i * NR + LANES) = acc[i][1];
  }
  for (int i = 0; i < rows; i++)
    for (int64_t j = 0; j < columns; j++) out[i * p->f + j] = tile[i * NR + j];
}

static int64_t tiles_per_row(const Conv *p) { return (p->ow + CONV_MR - 1) / CONV_MR; }

/* Tiles [first, last) of the output, tiles_per_row(p) per row of the flattened (n, oh),
 * every channel. `scratch` holds KH slots of read_width(p) x c floats for padded input
 * rows, then one such row of zeros. */
static void conv_tiles(const Conv *p, int64_t first, int64_t last, float *scratch) {
  int64_t c = p->c, span = read_width(p) * c, depth = p->kh * p->kw * c;
  int64_t left = p->pad_left < read_width(p) ? p->pad_left : read_width(p);
  int64_t inside = p->width < read_width(p) - left ? p->width : read_width(p) - left;
  float *zeros = scratch + p->kh * span;
  for (int64_t j = 0; j < span; j++) zeros[j] = 0.f;
  const float *in[p->kh], *at[p->kh];
  int64_t held[p->kh]; /* the input row (n * h + ih) each slot holds, -1 for none */
  for (int64_t s = 0; s < p->kh; s++) held[s] = -1;
  int64_t row = -1;
  for (int64_t unit = first; unit < last; unit++) {
    if (unit / tiles_per_row(p) != row) {
      row = unit / tiles_per_row(p);
      int64_t n = row / p->oh, oh = row % p->oh;
      for (int64_t kh = 0; kh < p->kh; kh++) {
        int64_t ih = oh * p->sh + kh * p->dh - p->pad_top, source_row = n * p->h + ih;
        const float *source = p->x + source_row * p->width * c;
        if (ih < 0 || ih >= p->h) {
          in[kh] = zeros;
          continue;
        }
        if (p->pad_left == 0 && read_width(p) <= p->width) {
          in[kh] = source;
          continue;
        }
        /* A padded row is copied once and kept while the next output rows read it. */
        int64_t slot = -1;
        for (int64_t s = 0; s < p->kh && slot < 0; s++)
          if (held[s] == source_row) slot = s;
        if (slot < 0) {
          for (int64_t s = 0; s < p->kh && slot < 0; s++) {
            int64_t needed = 0; /* by this output row */
            for (int64_t k = 0; k < p->kh; k++) {
              int64_t other = oh * p->sh + k * p->dh - p->pad_top;
              needed |= other >= 0 && other < p->h && held[s] == n * p->h + other;
            }
            if (!needed) slot = s;
          }
          float *padded = scratch + slot * span;
          memset(padded, 0, sizeof(float) * left * c);
          memcpy(padded + left * c, source, sizeof(float) * inside * c);
          memset(padded + (left + inside) * c, 0,
                 sizeof(float) * (span - (left + inside) * c));
          held[slot] = source_row;
        }
        in[kh] = scratch + slot * span;
      }
    }
    int64_t ow0 = unit % tiles_per_row(p) * CONV_MR;
    int rows = p->ow - ow0 < CONV_MR ? (int)(p->ow - ow0) : CONV_MR;
    for (int64_t kh = 0; kh < p->kh; kh++) at[kh] = in[kh] + ow0 * p->sw * c;
    float *y = p->y + (row * p->ow + ow0) * p->f;
    /* The input tile stays in L1 while every block of the filter passes. */
    for (int64_t f0 = 0; f0 < p->f; f0 += NR) {
      int64_t columns = p->f - f0 < NR ? p->f - f0 : NR;
      const float *block = p->blocks + f0 * depth;
      if (rows == CONV_MR)
        conv_tile(p, CONV_MR, at, block, y + f0, columns);
      else
        conv_tile(p, rows, at, block, y + f0, columns);
    }
  }
}

/* Positions [first, last) of the flattened (n, oh, ow), one result at a time: only where
 * the buffers the other ways need could not be allocated. */
static void unpacked_conv(const Conv *p, int64_t first, int64_t last) {
  for (int64_t position = first; position < last; position++) {
    int64_t ow = position % p->ow, row = position / p->ow, n = row / p->oh, oh = row % p->oh;
    for (int64_t o = 0; o < p->f; o++) {
      float sum = 0.f;
      for (int64_t kh = 0; kh < p->kh; kh++)
        for (int64_t kw = 0; kw < p->kw; kw++) {
          int64_t ih = oh * p->sh + kh * p->dh - p->pad_top;
          int64_t iw = ow * p->sw + kw * p->dw - p->pad_left;
          int inside = ih >= 0 && ih < p->h && iw >= 0 && iw < p->width;
          for (int64_t q = 0; q < p->c; q++) {
            float x = inside ? p->x[((n * p->h + ih) * p->width + iw) * p->c + q] : 0.f;
            sum += x * p->w[((kh * p->kw + kw) * p->c + q) * p->f + o];
          }
        }
      p->y[position * p->f + o] = sum;
    }
  }
}

/* Row r of `windows` = the window of position first + r: x[n, ih, iw, :] for each (kh,
 * kw), in the filter's order, zeros where (ih, iw) is padding. */
static void copy_windows(const Conv *p, int64_t first, int64_t last, float *windows) {
  int64_t c = p->c, depth = p->kh * p->kw * c;
  for (int64_t position = first; position < last; position++) {
    int64_t ow = position % p->ow, row = position / p->ow, n = row / p->oh, oh = row % p->oh;
    float *window = windows + (position - first) * depth;
    for (int64_t kh = 0; kh < p->kh; kh++) {
      int64_t ih = oh * p->sh + kh * p->dh - p->pad_top;
      for (int64_t kw = 0; kw < p->kw; kw++) {
        int64_t iw = ow * p->sw + kw * p->dw - p->pad_left;
        float *tap = window + (kh * p->kw + kw) * c;
        if (ih < 0 || ih >= p->h || iw < 0 || iw >= p->width)
          memset(tap, 0, sizeof(float) * c);
        else
          memcpy(tap, p->x + ((n * p->h + ih) * p->width + iw) * c, sizeof(float) * c);
      }
    }
  }
}

static int64_t positions(const Conv *p) { return p->n * p->oh * p->ow; }

/* Whether every position's window is a contiguous run of the input, a row of the
 * im2col matrix already: one filter row (kh = 1), taps side by side (dw = 1), no padding,
 * so that the matmul kernel reads the windows in place, rows sw * c apart. Deep windows
 * only: at 512 -> 512 channels, 3 taps, stride 2 (wav2vec2's 1-D convolutions) the
 * direct tiles, which reread a tile's input for each block of the filter, took 38 ms
 * against 25 (shallow ones, its first convolution's 10 taps of 1 channel, stay direct).
 * The windows of all positions are evenly apart (windows_evenly_spaced) or those of a
 * row are, and then rows of fewer than DIRECT_MIN_COLUMNS positions, a product each,
 * would pack the filter too often for their work. */
static int windows_evenly_spaced(const Conv *p) {
  return p->sh * p->width == p->ow * p->sw && (p->n == 1 || p->h == p->oh * p->sh);
}

static int windows_in_place(const Conv *p) {
  return p->kh == 1 && p->dw == 1 && p->pad_top == 0 && p->pad_left == 0 &&
         read_width(p) <= p->width && (p->oh - 1) * p->sh < p->h &&
         p->kw * p->c >= WINDOWS_IN_PLACE_MIN_DEPTH &&
         (windows_evenly_spaced(p) || p->ow >= DIRECT_MIN_COLUMNS);
}

static void conv_part(const Conv *p, int64_t part, int64_t parts) {
  int64_t depth = p->kh * p->kw * p->c;
  if (p->method == BY_CHANNELS) {
    int64_t first = share(p->f, NR, part, parts), last = share(p->f, NR, part + 1, parts);
    matmul(p->windows, depth, 1, p->w + first, p->f, 1, p->y + first, p->f, positions(p),
           last - first, depth);
    return;
  }
  if (p->method == BY_POSITIONS) {
    int64_t first = share(positions(p), MR, part, parts);
    int64_t last = share(positions(p), MR, part + 1, parts);
    float *windows = malloc(sizeof(float) * ((last - first) * depth + 1));
    if (windows == NULL) {
      unpacked_conv(p, first, last);
      return;
    }
    copy_windows(p, first, last, windows);
    matmul(windows, depth, 1, p->w, p->f, 1, p->y + first * p->f, p->f, last - first, p->f,
           depth);
    free(windows);
    return;
  }
  int64_t units = p->n * p->oh * tiles_per_row(p);
  int64_t first = units * part / parts, last = units * (part + 1) / parts;
  int64_t span = read_width(p) * p->c;
  float *scratch = malloc(sizeof(float) * (p->kh + 1) * (span > 0 ? span : 1));
  if (scratch == NULL) {
    /* Each tile is a run of positions of one row. */
    for (int64_t unit = first; unit < last; unit++) {
      int64_t row = unit / tiles_per_row(p), ow0 = unit % tiles_per_row(p) * CONV_MR;
      int64_t end = ow0 + CONV_MR < p->ow ? ow0 + CONV_MR : p->ow;
      unpacked_conv(p, row * p->ow + ow0, row * p->ow + end);
    }
    return;
  }
  conv_tiles(p, first, last, scratch);
  free(scratch);
}

static void run_conv_thread(void *data) {
  const Conv *p = data;
  conv_part(p, p->thread_number(), p->threads);
}

/* y[n, oh, ow, f] = sum over kh, kw, c of x[n, oh * sh + kh * dh - pad_top,
 * ow * sw + kw * dw - pad_left, c] * w[kh, kw, c, f], x read as zero outside its
 * [n, h, width, c]; on up to `threads` threads. */
KERNEL void shlo_conv2d_f32(const float *x, const float *w, float *y, int64_t n, int64_t h,
                            int64_t width, int64_t c, int64_t kh, int64_t kw, int64_t f,
                            int64_t oh, int64_t ow, int64_t pad_top, int64_t pad_left,
                            int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t threads) {
  ParallelEntry parallel;
  ThreadNumber number;
  openmp_entries(&parallel, &number);
  Conv p = {x, w, y, n, h, width, c, kh, kw, f, oh, ow, pad_top, pad_left, sh, sw, dh, dw,
            NULL, threads, number, DIRECT, NULL};
  if (positions(&p) * f == 0) return;
  int64_t rows = n * oh, depth = kh * kw * c, worth = positions(&p) * f * depth >> 17;
  if (depth == 0) { /* nothing to sum */
    memset(y, 0, sizeof(float) * positions(&p) * f);
    return;
  }
  if (windows_in_place(&p)) {
    /* The windows times the filter: one product of all positions, or of each row, one
     * batch of rows evenly apart, or a batch per image. */
    int64_t image = h * width * c, row = sh * width * c, window = sw * c;
    if (windows_evenly_spaced(&p))
      shlo_matmul_f32(x, w, y, 1, positions(&p), f, depth, 0, window, 1, 0, f, 1, threads);
    else if (n == 1 || oh == 1)
      shlo_matmul_f32(x, w, y, n * oh, ow, f, depth, oh == 1 ? image : row, window, 1, 0, f, 1,
                      threads);
    else
      for (int64_t i = 0; i < n; i++)
        shlo_matmul_f32(x + i * image, w, y + i * oh * ow * f, oh, ow, f, depth, row, window, 1,
                        0, f, 1, threads);
    return;
  }
  if (p.threads > worth) p.threads = worth;
  if (p.threads < 1) p.threads = 1;
  float *allocated = NULL;
  if (ow < DIRECT_MIN_COLUMNS) {
    /* Rows too short for the direct tiles: the matmul kernel's. Few positions for
     * the threads: they share the channels, of one copy of the windows. */
    p.method = positions(&p) >= p.threads * 4 * MR ? BY_POSITIONS : BY_CHANNELS;
    if (p.method == BY_CHANNELS) {
      int64_t blocks = (f + NR - 1) / NR;
      if (p.threads > blocks) p.threads = blocks;
      allocated = malloc(sizeof(float) * (positions(&p) * depth + 1));
      if (allocated == NULL) {
        unpacked_conv(&p, 0, positions(&p));
        return;
      }
      copy_windows(&p, 0, positions(&p), allocated);
      p.windows = allocated;
    }
  } else {
    /* The filter in blocks of NR channels, each [kh][kw][c][NR] and contiguous, zero past
     * f: read in place, a tile's filter rows were f floats apart, and with f = 512 a 1 x 1
     * convolution ran at 0.56x the generated code's speed. */
    int64_t blocks = (f + NR - 1) / NR;
    allocated = aligned_alloc(64, sizeof(float) * blocks * depth * NR);
    if (allocated == NULL) {
      unpacked_conv(&p, 0, positions(&p));
      return;
    }
    for (int64_t k = 0; k < blocks; k++)
      for (int64_t r = 0; r < depth; r++)
        for (int64_t j = 0; j < NR; j++)
          allocated[(k * depth + r) * NR + j] = k * NR + j < f ? w[r * f + k * NR + j] : 0.f;
    p.blocks = allocated;
    int64_t units = rows * tiles_per_row(&p);
    if (p.threads > units) p.threads = units;
  }
  if (p.threads > 1 && parallel != NULL && number != NULL)
    parallel(run_conv_thread, &p, (unsigned)p.threads, 0);
  else
    conv_part(&p, 0, 1);
  free(allocated);
}
