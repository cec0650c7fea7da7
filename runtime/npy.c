/* npy.c — NumPy's .npy and .npz formats, read from bytes and encoded to
 * bytes (what is accepted: tensor_io.h).
 *
 * .npy: "\x93NUMPY", major, minor, the header length (u16 for 1.0, u32 for
 * 2.0 and 3.0, little-endian), the header — a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with
 * spaces and a newline — then the data.  The header is read by a small
 * strict scanner of exactly that form (keys in any order, each once).
 * .npz: a zip; its central directory is read (the end record searched for
 * in the last 64 KiB + 22 bytes), each member located through its local
 * header and CRC-32 checked.  Zip64 sizes and offsets are read from a
 * member's extra field where the 32-bit fields say 0xffffffff.
 * Every failure leaves one message "FILE: problem" in *err and frees what
 * was built. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_file.h"
#include "safetensors.h"
#include "tensor_io.h"
#include "tensor_io_impl.h"

/* ---- .npy header ---------------------------------------------------------- */

static const struct {
  const char *descr; /* without the byte-order character */
  rt_dtype dtype;
} descrs[] = {{"f8", RT_DT_F64}, {"f4", RT_DT_F32}, {"f2", RT_DT_F16}, {"i8", RT_DT_I64}, {"i4", RT_DT_I32},
              {"i2", RT_DT_I16}, {"i1", RT_DT_I8},  {"u1", RT_DT_U8},  {"b1", RT_DT_BOOL}};

typedef struct {
  const char *s, *end;
} scan;

static void skip_ws(scan *c) {
  while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r')) c->s++;
}

static int eat(scan *c, char ch) {
  skip_ws(c);
  if (c->s < c->end && *c->s == ch) return c->s++, 1;
  return 0;
}

/* A quoted Python string of at most cap - 1 bytes into out. */
static int quoted(scan *c, char *out, size_t cap) {
  skip_ws(c);
  if (c->s >= c->end || (*c->s != '\'' && *c->s != '"')) return 0;
  char q = *c->s++;
  size_t n = 0;
  while (c->s < c->end && *c->s != q) {
    if (n + 1 >= cap || *c->s == '\\') return 0;
    out[n++] = *c->s++;
  }
  if (c->s >= c->end) return 0;
  c->s++;
  out[n] = 0;
  return 1;
}

static int word(scan *c, const char *w) {
  skip_ws(c);
  size_t n = strlen(w);
  if ((size_t)(c->end - c->s) >= n && !memcmp(c->s, w, n)) return c->s += n, 1;
  return 0;
}

/* (a, b, ...) of non-negative integers; a trailing comma is allowed. */
static int shape_tuple(scan *c, rt_st_tensor *t, const char **why) {
  if (!eat(c, '(')) return *why = "'shape' is not a tuple", 0;
  t->rank = 0;
  for (;;) {
    skip_ws(c);
    if (eat(c, ')')) return 1;
    if (c->s >= c->end || *c->s < '0' || *c->s > '9') return *why = "'shape' holds something other than integers", 0;
    if (t->rank == RT_ST_MAX_RANK) return *why = "'shape' has more than 8 dimensions", 0;
    int64_t v = 0;
    while (c->s < c->end && *c->s >= '0' && *c->s <= '9') {
      if (v > (INT64_MAX - 9) / 10) return *why = "a dimension of 'shape' is too large", 0;
      v = v * 10 + (*c->s++ - '0');
    }
    if (c->s < c->end && *c->s == 'L') c->s++; /* Python 2's long */
    t->shape[t->rank++] = v;
    if (!eat(c, ',') && !(skip_ws(c), c->s < c->end && *c->s == ')')) return *why = "'shape' is not a tuple", 0;
  }
}

static int descr_dtype(const char *d, rt_tensor_ctx *x, rt_dtype *dt) {
  char order = d[0];
  if (order == '>' && strcmp(d + 1, "i1") && strcmp(d + 1, "u1") && strcmp(d + 1, "b1"))
    return rt_tio_fail(x, RT_ERR_FORMAT, "dtype '%s' is big-endian; kbc reads little-endian data (numpy: "
                                         "a.astype(a.dtype.newbyteorder('<')))", d);
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return rt_tio_fail(x, RT_ERR_FORMAT, "dtype '%s' is not supported", d);
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
    if (!strcmp(d + 1, descrs[i].descr)) return *dt = descrs[i].dtype, 0;
  return rt_tio_fail(x, RT_ERR_FORMAT,
                     "dtype '%s' is not supported (kbc reads f8, f4, f2, i8, i4, i2, i1, u1 and b1 arrays)", d);
}

/* The dict; fills t's dtype, rank and shape. */
static int parse_dict(rt_tensor_ctx *x, const char *h, size_t n, rt_st_tensor *t) {
  scan c = {h, h + n};
  int seen = 0, fortran = 0;
  const char *why = NULL;
  char key[32], val[32];
  if (!eat(&c, '{')) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header is not a Python dict");
  while (!eat(&c, '}')) {
    if (!quoted(&c, key, sizeof key) || !eat(&c, ':')) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header is malformed");
    int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
    if (k < 0) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header has an unknown key '%s'", key);
    if (seen & 1 << k) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header has '%s' twice", key);
    seen |= 1 << k;
    if (k == 0) {
      if (!quoted(&c, val, sizeof val))
        return rt_tio_fail(x, RT_ERR_FORMAT, "'descr' is not a simple dtype (structured arrays are not supported)");
      if (descr_dtype(val, x, &t->dtype) < 0) return -1;
    } else if (k == 1) {
      if (word(&c, "True")) fortran = 1;
      else if (!word(&c, "False")) return rt_tio_fail(x, RT_ERR_FORMAT, "'fortran_order' is neither True nor False");
    } else if (!shape_tuple(&c, t, &why)) {
      return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header: %s", why);
    }
    if (!eat(&c, ',') && !(skip_ws(&c), c.s < c.end && *c.s == '}'))
      return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header is malformed");
  }
  if (seen != 7) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header lacks '%s'", !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
  skip_ws(&c);
  if (c.s != c.end) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header has text after the dict");
  int big = 0;
  for (int i = 0; i < t->rank; i++) big += t->shape[i] > 1;
  if (fortran && big > 1)
    return rt_tio_fail(x, RT_ERR_FORMAT, "the array is in Fortran order; save it in C order (np.ascontiguousarray)");
  return 0;
}

int rt_npy_parse(rt_tensor_ctx *x, const unsigned char *b, size_t n, const char *name, rt_st_tensor *t) {
  memset(t, 0, sizeof *t);
  if (n < 10 || memcmp(b, "\x93NUMPY", 6)) return rt_tio_fail(x, RT_ERR_FORMAT, "not a .npy file (no \\x93NUMPY magic)");
  int major = b[6];
  size_t hl, at;
  if (major == 1) hl = (size_t)b[8] | (size_t)b[9] << 8, at = 10;
  else if (major == 2 || major == 3) {
    if (n < 12) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy file is truncated in its header");
    hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24, at = 12;
  } else {
    return rt_tio_fail(x, RT_ERR_FORMAT, ".npy version %d.%d is not supported (1.0, 2.0 or 3.0)", b[6], b[7]);
  }
  if (hl > n - at) return rt_tio_fail(x, RT_ERR_FORMAT, "the .npy header (%zu bytes) is truncated at byte %zu", hl, n);
  if (parse_dict(x, (const char *)b + at, hl, t) < 0) return -1;
  at += hl;
  uint64_t bytes = rt_dtype_size(t->dtype);
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] && bytes > (uint64_t)INT64_MAX / (uint64_t)t->shape[i])
      return rt_tio_fail(x, RT_ERR_FORMAT, "the shape is too large (its byte size overflows)");
    bytes *= (uint64_t)t->shape[i];
  }
  if (bytes != n - at)
    return rt_tio_fail(x, RT_ERR_FORMAT, "the data is %zu bytes, but shape and dtype %s make %" PRIu64 "%s", n - at,
                       rt_dtype_name(t->dtype), bytes, bytes > n - at ? " (truncated?)" : "");
  t->nbytes = (size_t)bytes;
  t->data = malloc(bytes ? bytes : 1);
  t->name = malloc(strlen(name) + 1);
  if (!t->data || !t->name) {
    free(t->data), free(t->name);
    t->data = NULL, t->name = NULL;
    return rt_tio_fail(x, RT_ERR_MEMORY, "out of memory for %" PRIu64 " bytes", bytes);
  }
  strcpy(t->name, name);
  if (bytes) memcpy(t->data, b + at, bytes);
  return 0;
}

/* ---- .npy encoding -------------------------------------------------------- */

static const char *npy_descr(rt_dtype dt) {
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
    if (descrs[i].dtype == dt) {
      switch (dt) {
      case RT_DT_I8: return "|i1";
      case RT_DT_U8: return "|u1";
      case RT_DT_BOOL: return "|b1";
      default: break;
      }
      static char buf[sizeof descrs / sizeof descrs[0]][4];
      snprintf(buf[i], sizeof buf[i], "<%s", descrs[i].descr);
      return buf[i];
    }
  return NULL;
}

int rt_npy_encode(const rt_st_tensor *t, void **out, size_t *len, rt_err *err) {
  rt_tensor_ctx x = {"<memory>", NULL, err};
  const char *d = npy_descr(t->dtype);
  *out = NULL, *len = 0;
  if (!d) return rt_tio_fail(&x, RT_ERR_ARGUMENT, "tensor '%s': dtype %s has no .npy form", t->name, rt_dtype_name(t->dtype));
  char dict[400];
  int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", d);
  for (int i = 0; i < t->rank; i++) k += snprintf(dict + k, sizeof dict - (size_t)k, "%" PRId64 ",%s", t->shape[i], t->rank > 1 && i + 1 < t->rank ? " " : "");
  if (t->rank > 1) k--; /* numpy writes (2, 3) but (3,) */
  k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
  size_t hl = (size_t)k + 1; /* the newline */
  size_t pad = (64 - (10 + hl) % 64) % 64;
  hl += pad;
  size_t total = 10 + hl + t->nbytes;
  unsigned char *b = malloc(total);
  if (!b) return rt_tio_fail(&x, RT_ERR_MEMORY, "out of memory for %zu bytes", total);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(hl & 0xff), b[9] = (unsigned char)(hl >> 8);
  memcpy(b + 10, dict, (size_t)k);
  memset(b + 10 + k, ' ', pad);
  b[10 + hl - 1] = '\n';
  if (t->nbytes) memcpy(b + 10 + hl, t->data, t->nbytes);
  *out = b, *len = total;
  return 0;
}
