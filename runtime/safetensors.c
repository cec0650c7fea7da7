/* safetensors.c — see safetensors.h for the format and what is accepted.
 *
 * Reading: the 8-byte length and the header are read first; the header is
 * walked with the strict pull parser of runtime/json.h along exactly the
 * safetensors schema (so JSON nesting never goes deeper than
 * object/object/array, and anything deeper is rejected at its first
 * bracket, without recursion); then the entries are checked
 * against each other and the buffer size, and only then is tensor data
 * allocated (one block per tensor, so each is aligned) and read in file
 * order.  Allocations are therefore bounded by the size of the input.
 * Every failure path frees what was built and leaves one message.
 *
 * Writing: tensors and metadata are checked, the header is built in memory,
 * and the bytes go through rt_write_parts_atomic (rt_file.h): a temporary
 * file, fsync, rename over the target, fsync of the directory. */
#include "safetensors.h"

#include "json.h"
#include "rt_err.h"
#include "rt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this file assumes a little-endian host"
#endif

/* ---- dtypes ------------------------------------------------------------ */

static const struct {
  const char *name;
  size_t size;
} dtypes[] = {
    [RT_DT_F64] = {"F64", 8}, [RT_DT_F32] = {"F32", 4}, [RT_DT_F16] = {"F16", 2},
    [RT_DT_BF16] = {"BF16", 2}, [RT_DT_I64] = {"I64", 8}, [RT_DT_I32] = {"I32", 4},
    [RT_DT_I16] = {"I16", 2}, [RT_DT_I8] = {"I8", 1}, [RT_DT_U8] = {"U8", 1},
    [RT_DT_BOOL] = {"BOOL", 1},
};
enum { NDTYPES = sizeof dtypes / sizeof dtypes[0] };

static int dtype_ok(rt_dtype t) { return (unsigned)t < NDTYPES; }

const char *rt_dtype_name(rt_dtype t) { return dtype_ok(t) ? dtypes[t].name : "?"; }

size_t rt_dtype_size(rt_dtype t) { return dtype_ok(t) ? dtypes[t].size : 0; }

int rt_dtype_parse(const char *s, rt_dtype *out) {
  for (int i = 0; s && i < NDTYPES; i++)
    if (strcmp(s, dtypes[i].name) == 0) {
      *out = (rt_dtype)i;
      return 0;
    }
  return -1;
}

/* ---- messages ---------------------------------------------------------- */

typedef struct {
  const char *file; /* printed first in every message */
  rt_err *err;      /* may be NULL */
  rt_err_kind kind; /* of fail()'s errors: RT_ERR_FORMAT reading, RT_ERR_ARGUMENT writing */
} errctx;

/* s made safe for a one-line message: control bytes (and every non-ASCII
 * byte unless s is valid UTF-8) as \xNN, cut after about 60 bytes. */
static const char *shown(const char *s, char *out, size_t cap) {
  int raw_utf8 = rt_json_utf8_valid(s);
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (o + 8 > cap || o >= 60) {
      while (o > 0 && raw_utf8 && ((unsigned char)out[o - 1] & 0xc0) == 0x80) o--;
      while (o > 0 && raw_utf8 && (unsigned char)out[o - 1] >= 0xc0) o--;
      memcpy(out + o, "...", 4);
      return out;
    }
    if (*p < 0x20 || *p == 0x7f || (*p >= 0x80 && !raw_utf8))
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", *p);
    else
      out[o++] = (char)*p;
  }
  out[o] = 0;
  return out;
}

/* Sets "FILE: [tensor 'NAME': ]message" of the given kind; returns -1. */
static int vfail(errctx *e, rt_err_kind kind, const char *tensor, const char *fmt, va_list ap) {
  if (!e->err) return -1;
  char msg[512], name[96];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (tensor) return rt_fail(e->err, kind, "%s: tensor '%s': %s", e->file, shown(tensor, name, sizeof name), msg);
  return rt_fail(e->err, kind, "%s: %s", e->file, msg);
}

/* An error of the context's kind (the file's contents, the caller's tensors). */
__attribute__((format(printf, 3, 4))) static int fail(errctx *e, const char *tensor, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(e, e->kind, tensor, fmt, ap);
  va_end(ap);
  return rc;
}

/* An error of another kind: the system's (RT_ERR_IO, with strerror) or memory. */
__attribute__((format(printf, 4, 5))) static int fail_as(errctx *e, rt_err_kind kind, const char *tensor,
                                                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = vfail(e, kind, tensor, fmt, ap);
  va_end(ap);
  return rc;
}

static const char *fmt_shape(const int64_t *shape, int rank, char *buf, size_t cap) {
  size_t o = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? ", " : "", shape[i]);
  if (o < cap) snprintf(buf + o, cap - o, "]");
  return buf;
}

/* Bytes of a tensor; -1 if an extent is negative or the byte count of the
 * non-zero extents exceeds INT64_MAX. */
static int shape_bytes(const int64_t *shape, int rank, rt_dtype dt, uint64_t *bytes) {
  uint64_t b = rt_dtype_size(dt);
  int zero = 0;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] == 0) zero = 1;
    else if (b > (uint64_t)INT64_MAX / (uint64_t)shape[i]) return -1;
    else b *= (uint64_t)shape[i];
  }
  *bytes = zero ? 0 : b;
  return 0;
}

/* ---- the loaded file --------------------------------------------------- */

typedef struct {
  rt_st_tensor t;
  uint64_t begin, end; /* data_offsets */
  int index;           /* position in the header */
} entry;

typedef struct {
  const char *name;
  int idx;
} named;

struct rt_st_file {
  entry *ents; /* sorted by data offset once checked */
  int n, cap;
  named *by_name; /* ents' names, sorted */
  char **meta;  /* key, value, key, value, ... */
  int nmeta, metacap;
};

static int grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int c = *cap ? *cap : 8;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}

void rt_st_free(rt_st_file *f) {
  if (!f) return;
  for (int i = 0; i < f->n; i++) {
    free(f->ents[i].t.name);
    free(f->ents[i].t.data);
  }
  for (int i = 0; i < 2 * f->nmeta; i++) free(f->meta[i]);
  free(f->ents);
  free(f->by_name);
  free(f->meta);
  free(f);
}

int rt_st_count(const rt_st_file *f) { return f ? f->n : 0; }

const rt_st_tensor *rt_st_get(const rt_st_file *f, int i) {
  return f && i >= 0 && i < f->n ? &f->ents[i].t : NULL;
}

const rt_st_tensor *rt_st_find(const rt_st_file *f, const char *name) {
  int lo = 0, hi = f && name ? f->n : 0;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    int c = strcmp(name, f->by_name[mid].name);
    if (c == 0) return &f->ents[f->by_name[mid].idx].t;
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return NULL;
}

int rt_st_meta_count(const rt_st_file *f) { return f ? f->nmeta : 0; }

int rt_st_meta_get(const rt_st_file *f, int i, const char **key, const char **value) {
  if (!f || i < 0 || i >= f->nmeta) return -1;
  *key = f->meta[2 * i];
  *value = f->meta[2 * i + 1];
  return 0;
}

const char *rt_st_meta_find(const rt_st_file *f, const char *key) {
  for (int i = 0; f && key && i < f->nmeta; i++)
    if (strcmp(f->meta[2 * i], key) == 0) return f->meta[2 * i + 1];
  return NULL;
}

/* ---- the header schema ------------------------------------------------- */

typedef struct {
  rt_json_reader j;
  errctx *e;
  const char *tensor; /* context for messages, or NULL */
  const char *field;  /* "shape: " etc., or "" */
} hreader;

/* Reports the JSON reader's error in context. */
static int jfail(hreader *h) { return fail(h->e, h->tensor, "%s%s", h->field, h->j.msg); }

static int parse_dtype(hreader *h, entry *t) {
  char *s, buf[64];
  size_t len;
  if (rt_json_peek(&h->j) != '"') return fail(h->e, t->t.name, "dtype must be a string");
  if (rt_json_string(&h->j, &s, &len) < 0) return jfail(h);
  int bad = len != strlen(s) || rt_dtype_parse(s, &t->t.dtype) < 0;
  if (bad)
    fail(h->e, t->t.name,
         "unknown dtype '%s' (kbc reads F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)",
         shown(s, buf, sizeof buf));
  free(s);
  return bad ? -1 : 0;
}

static int parse_shape(hreader *h, entry *t) {
  uint64_t v[RT_ST_MAX_RANK];
  if (rt_json_peek(&h->j) != '[')
    return fail(h->e, t->t.name, "shape must be an array of integers");
  h->field = "shape: ";
  int rc = rt_json_uints(&h->j, INT64_MAX, v, RT_ST_MAX_RANK, &t->t.rank);
  if (rc == -1) return jfail(h);
  h->field = "";
  if (rc == -2)
    return fail(h->e, t->t.name, "shape has more than %d dimensions", RT_ST_MAX_RANK);
  for (int i = 0; i < t->t.rank; i++) t->t.shape[i] = (int64_t)v[i];
  return 0;
}

static int parse_offsets(hreader *h, entry *t) {
  uint64_t v[2];
  int n;
  if (rt_json_peek(&h->j) != '[')
    return fail(h->e, t->t.name, "data_offsets must be an array [begin, end]");
  h->field = "data_offsets: ";
  int rc = rt_json_uints(&h->j, UINT64_MAX, v, 2, &n);
  if (rc == -1) return jfail(h);
  h->field = "";
  if (rc == -2 || n != 2)
    return fail(h->e, t->t.name, "data_offsets must have 2 entries [begin, end], not %s",
                rc == -2 ? "more" : n ? "1" : "0");
  t->begin = v[0], t->end = v[1];
  return 0;
}

static int parse_tensor_fields(hreader *h, entry *t) {
  static const char *const names[] = {"dtype", "shape", "data_offsets"};
  int (*const parse[])(hreader *, entry *) = {parse_dtype, parse_shape, parse_offsets};
  int first = 1, seen = 0, k;
  char *field, buf[64];
  size_t len;
  if (rt_json_peek(&h->j) != '{')
    return fail(h->e, t->t.name, "expected an object {\"dtype\", \"shape\", \"data_offsets\"}");
  h->j.pos++;
  while ((k = rt_json_member(&h->j, &first, &field, &len)) == 1) {
    int i = 0;
    while (i < 3 && strcmp(field, names[i]) != 0) i++;
    if (i == 3 || seen & 1 << i)
      fail(h->e, t->t.name, "%s field '%s'", i == 3 ? "unknown" : "duplicate",
           shown(field, buf, sizeof buf));
    free(field);
    if (i == 3 || seen & 1 << i || parse[i](h, t) < 0) return -1;
    seen |= 1 << i;
  }
  if (k < 0) return jfail(h);
  for (int i = 0; i < 3; i++)
    if (!(seen & 1 << i)) return fail(h->e, t->t.name, "missing field '%s'", names[i]);
  return 0;
}

/* Takes ownership of name. */
static int parse_tensor(hreader *h, rt_st_file *f, char *name, size_t len) {
  if (grow((void **)&f->ents, &f->cap, f->n + 1, sizeof(entry)) < 0)
    return free(name), fail_as(h->e, RT_ERR_MEMORY, NULL, "out of memory");
  entry *t = &f->ents[f->n];
  memset(t, 0, sizeof *t);
  t->t.name = name;
  t->index = f->n++;
  if (!*name && !len) return fail(h->e, NULL, "a tensor has an empty name");
  if (len != strlen(name)) return fail(h->e, name, "the name contains a NUL character");
  h->tensor = name;
  int rc = parse_tensor_fields(h, t);
  h->tensor = NULL;
  return rc;
}

static int parse_meta(hreader *h, rt_st_file *f) {
  int first = 1, k;
  char *key, *val;
  size_t klen, vlen;
  if (f->meta) return fail(h->e, NULL, "duplicate \"__metadata__\" entry");
  if (rt_json_peek(&h->j) != '{')
    return fail(h->e, NULL, "__metadata__ must be an object of strings");
  h->j.pos++;
  f->meta = malloc(sizeof(char *));
  if (!f->meta) return fail_as(h->e, RT_ERR_MEMORY, NULL, "out of memory");
  h->field = "__metadata__: ";
  while ((k = rt_json_member(&h->j, &first, &key, &klen)) == 1) {
    if (rt_json_peek(&h->j) != '"') {
      char buf[64];
      fail(h->e, NULL, "__metadata__: the value of '%s' must be a string",
           shown(key, buf, sizeof buf));
      return free(key), -1;
    }
    if (rt_json_string(&h->j, &val, &vlen) < 0) return free(key), jfail(h);
    if (grow((void **)&f->meta, &f->metacap, 2 * f->nmeta + 2, sizeof(char *)) < 0)
      return free(key), free(val), fail_as(h->e, RT_ERR_MEMORY, NULL, "out of memory");
    f->meta[2 * f->nmeta] = key, f->meta[2 * f->nmeta + 1] = val;
    f->nmeta++;
    if (klen != strlen(key) || vlen != strlen(val))
      return fail(h->e, NULL, "__metadata__: an entry contains a NUL character");
  }
  if (k < 0) return jfail(h);
  h->field = "";
  return 0;
}

static int parse_header(hreader *h, rt_st_file *f) {
  int first = 1, k;
  char *key;
  size_t len;
  if (rt_json_peek(&h->j) != '{') {
    rt_json_syntax(&h->j, "'{'");
    return fail(h->e, NULL, "the header is not a JSON object (%s)", h->j.msg);
  }
  h->j.pos++;
  while ((k = rt_json_member(&h->j, &first, &key, &len)) == 1) {
    int rc;
    if (strcmp(key, "__metadata__") == 0) rc = parse_meta(h, f), free(key);
    else rc = parse_tensor(h, f, key, len);
    if (rc < 0) return -1;
  }
  if (k == 0 && rt_json_peek(&h->j) != -1) k = rt_json_syntax(&h->j, "nothing after the object");
  return k < 0 ? jfail(h) : 0;
}

/* ---- checks across entries --------------------------------------------- */

static int check_entry(errctx *e, const entry *t, uint64_t bufsize) {
  char sh[256];
  uint64_t bytes;
  if (shape_bytes(t->t.shape, t->t.rank, t->t.dtype, &bytes) < 0)
    return fail(e, t->t.name, "shape %s of %s is too large (its byte size overflows)",
                fmt_shape(t->t.shape, t->t.rank, sh, sizeof sh), rt_dtype_name(t->t.dtype));
  if (t->begin > t->end)
    return fail(e, t->t.name, "data_offsets [%" PRIu64 ", %" PRIu64 "] are reversed", t->begin,
                t->end);
  if (t->end - t->begin != bytes)
    return fail(e, t->t.name,
                "data_offsets [%" PRIu64 ", %" PRIu64 "] do not match shape %s of %s (%" PRIu64
                " bytes)",
                t->begin, t->end, fmt_shape(t->t.shape, t->t.rank, sh, sizeof sh),
                rt_dtype_name(t->t.dtype), bytes);
  if (t->end > bufsize)
    return fail(e, t->t.name,
                "data_offsets [%" PRIu64 ", %" PRIu64 "] exceed the data buffer (%" PRIu64
                " bytes)",
                t->begin, t->end, bufsize);
  return 0;
}

static int by_offset(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The non-empty tensors, in offset order, must tile [0, bufsize). */
static int check_tiling(errctx *e, rt_st_file *f, uint64_t bufsize) {
  const entry *prev = NULL;
  uint64_t at = 0;
  for (int i = 0; i < f->n; i++) {
    const entry *t = &f->ents[i];
    if (t->begin == t->end) continue;
    char pn[96];
    if (t->begin < at)
      return fail(e, t->t.name,
                  "data_offsets [%" PRIu64 ", %" PRIu64 "] overlap tensor '%s' [%" PRIu64
                  ", %" PRIu64 "]",
                  t->begin, t->end, shown(prev->t.name, pn, sizeof pn), prev->begin, prev->end);
    if (t->begin > at)
      return fail(e, t->t.name,
                  "data_offsets [%" PRIu64 ", %" PRIu64 "] leave a gap: bytes [%" PRIu64
                  ", %" PRIu64 ") of the data buffer belong to no tensor",
                  t->begin, t->end, at, t->begin);
    at = t->end, prev = t;
  }
  if (at != bufsize)
    return fail(e, NULL,
                "%" PRIu64 " trailing bytes: the data buffer is %" PRIu64
                " bytes but the tensors end at %" PRIu64,
                bufsize - at, bufsize, at);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

/* Sorts v by name; returns a name that occurs twice, or NULL. */
static const char *sort_names(named *v, int n) {
  if (n > 1) qsort(v, (size_t)n, sizeof *v, by_name);
  for (int i = 1; i < n; i++)
    if (strcmp(v[i - 1].name, v[i].name) == 0) return v[i].name;
  return NULL;
}

/* Header order has been checked entry by entry; now names and offsets. */
static int check_file(errctx *e, rt_st_file *f, uint64_t bufsize) {
  char buf[96];
  for (int i = 0; i < f->n; i++)
    if (check_entry(e, &f->ents[i], bufsize) < 0) return -1;
  if (f->n > 1) qsort(f->ents, (size_t)f->n, sizeof(entry), by_offset);
  f->by_name = malloc(sizeof(named) * (size_t)(f->n + 1));
  named *keys = malloc(sizeof(named) * (size_t)(f->nmeta + 1));
  if (!f->by_name || !keys) return free(keys), fail_as(e, RT_ERR_MEMORY, NULL, "out of memory");
  for (int i = 0; i < f->n; i++) f->by_name[i] = (named){f->ents[i].t.name, i};
  for (int i = 0; i < f->nmeta; i++) keys[i] = (named){f->meta[2 * i], i};
  const char *dup = sort_names(f->by_name, f->n), *dupkey = sort_names(keys, f->nmeta);
  free(keys);
  if (dup) return fail(e, NULL, "duplicate tensor name '%s'", shown(dup, buf, sizeof buf));
  if (dupkey) return fail(e, NULL, "duplicate __metadata__ key '%s'", shown(dupkey, buf, sizeof buf));
  return check_tiling(e, f, bufsize);
}

int rt_st_adopt(const char *file, rt_st_tensor *ts, int n, rt_st_file **out, rt_err *err) {
  errctx e = {file ? file : "(null)", err, RT_ERR_FORMAT};
  *out = NULL;
  rt_st_file *f = calloc(1, sizeof *f);
  if (!f || grow((void **)&f->ents, &f->cap, n + 1, sizeof(entry)) < 0) {
    for (int i = 0; i < n; i++) free(ts[i].name), free(ts[i].data);
    if (f) rt_st_free(f);
    return fail_as(&e, RT_ERR_MEMORY, NULL, "out of memory");
  }
  uint64_t at = 0;
  for (int i = 0; i < n; i++, f->n++) {
    f->ents[i] = (entry){.t = ts[i], .begin = at, .end = at + ts[i].nbytes, .index = i};
    at += ts[i].nbytes;
  }
  for (int i = 0; i < n; i++)
    if (!f->ents[i].t.name || !f->ents[i].t.name[0] || !f->ents[i].t.data)
      return rt_st_free(f), fail(&e, NULL, "tensor %d has no name or data", i);
  char buf[96];
  f->by_name = malloc(sizeof(named) * (size_t)(n + 1));
  if (!f->by_name) return rt_st_free(f), fail_as(&e, RT_ERR_MEMORY, NULL, "out of memory");
  for (int i = 0; i < n; i++) f->by_name[i] = (named){f->ents[i].t.name, i};
  const char *dup = sort_names(f->by_name, n);
  if (dup) {
    fail(&e, NULL, "duplicate tensor name '%s'", shown(dup, buf, sizeof buf));
    return rt_st_free(f), -1;
  }
  *out = f;
  return 0;
}

/* ---- reading ----------------------------------------------------------- */

_Static_assert(sizeof(size_t) >= sizeof(uint64_t), "kbc needs a 64-bit size_t");

typedef struct {
  int fd; /* -1: read from mem */
  const unsigned char *mem;
  uint64_t size, pos;
} source;

static int src_read(errctx *e, source *s, void *dst, size_t n) {
  if (n > s->size - s->pos)
    return fail(e, NULL, "file is truncated at byte %" PRIu64, s->size);
  if (s->fd < 0) {
    memcpy(dst, s->mem + s->pos, n);
    s->pos += n;
    return 0;
  }
  for (char *p = dst; n > 0;) {
    ssize_t k = read(s->fd, p, n < (1u << 30) ? n : (1u << 30));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return fail_as(e, RT_ERR_IO, NULL, "read error at byte %" PRIu64 ": %s", s->pos, strerror(errno));
    if (k == 0)
      return fail(e, NULL, "file is truncated at byte %" PRIu64 " (did it change while being read?)",
                  s->pos);
    p += k, n -= (size_t)k, s->pos += (uint64_t)k;
  }
  return 0;
}

/* Entries are in offset order and tile the buffer, so reads are sequential. */
static int read_data(errctx *e, rt_st_file *f, source *src) {
  for (int i = 0; i < f->n; i++) {
    rt_st_tensor *t = &f->ents[i].t;
    t->nbytes = (size_t)(f->ents[i].end - f->ents[i].begin);
    t->data = malloc(t->nbytes ? t->nbytes : 1);
    if (!t->data) return fail_as(e, RT_ERR_MEMORY, t->name, "out of memory for %zu bytes of data", t->nbytes);
    if (t->nbytes && src_read(e, src, t->data, t->nbytes) < 0) return -1;
  }
  return 0;
}

static int load_from(errctx *e, source *src, rt_st_file **out) {
  unsigned char b[8];
  uint64_t n = 0;
  if (src->size < 8)
    return fail(e, NULL, "file is %" PRIu64 " bytes, too short for the 8-byte header length",
                src->size);
  if (src_read(e, src, b, 8) < 0) return -1;
  for (int i = 7; i >= 0; i--) n = n << 8 | b[i];
  if (n > RT_ST_MAX_HEADER)
    return fail(e, NULL, "header length %" PRIu64 " exceeds the limit of %d bytes", n,
                RT_ST_MAX_HEADER);
  if (n > src->size - 8)
    return fail(e, NULL, "header length %" PRIu64 " exceeds the file size (%" PRIu64 " bytes)", n,
                src->size);
  char *hdr = malloc(n ? n : 1);
  rt_st_file *f = calloc(1, sizeof *f);
  int rc = hdr && f ? src_read(e, src, hdr, n) : fail_as(e, RT_ERR_MEMORY, NULL, "out of memory");
  if (rc == 0) {
    hreader h = {.e = e, .field = ""};
    rt_json_init(&h.j, hdr, n, "the header");
    rc = parse_header(&h, f);
  }
  free(hdr);
  if (rc == 0) rc = check_file(e, f, src->size - 8 - n);
  if (rc == 0) rc = read_data(e, f, src);
  if (rc < 0) return rt_st_free(f), -1;
  *out = f;
  return 0;
}

int rt_st_parse(const void *bytes, size_t len, rt_st_file **out, rt_err *err) {
  errctx e = {"<memory>", err, RT_ERR_FORMAT};
  source src = {-1, bytes, len, 0};
  *out = NULL;
  if (!bytes && len) return fail_as(&e, RT_ERR_ARGUMENT, NULL, "no bytes");
  return load_from(&e, &src, out);
}

int rt_st_load(const char *path, rt_st_file **out, rt_err *err) {
  errctx e = {path ? path : "(null)", err, RT_ERR_FORMAT};
  struct stat st;
  *out = NULL;
  if (!path) return fail_as(&e, RT_ERR_ARGUMENT, NULL, "no path");
  /* O_NONBLOCK: opening a FIFO must not hang; it is then rejected. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fail_as(&e, RT_ERR_IO, NULL, "cannot open: %s", strerror(errno));
  int rc;
  if (fstat(fd, &st) < 0) rc = fail_as(&e, RT_ERR_IO, NULL, "cannot stat: %s", strerror(errno));
  else if (!S_ISREG(st.st_mode))
    rc = fail_as(&e, RT_ERR_IO, NULL, "%s", S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file");
  else {
    source src = {fd, NULL, (uint64_t)st.st_size, 0};
    rc = load_from(&e, &src, out);
  }
  close(fd);
  return rc;
}

/* ---- writing ----------------------------------------------------------- */

typedef struct {
  char *p;
  size_t len, cap;
  int oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->len + n + 1) c *= 2;
    char *q = realloc(b->p, c);
    if (!q) {
      b->oom = 1;
      return;
    }
    b->p = q, b->cap = c;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

__attribute__((format(printf, 2, 3))) static void sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  sb_put(b, tmp, (size_t)k); /* only used for short numbers */
}

/* s as a JSON string, escaped the way serde_json does. */
static void sb_json(sbuf *b, const char *s) {
  sb_put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    const char *esc = NULL;
    switch (*p) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\b': esc = "\\b"; break;
    case '\f': esc = "\\f"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    }
    if (esc) sb_put(b, esc, 2);
    else if (*p < 0x20) sb_printf(b, "\\u%04x", *p);
    else sb_put(b, (const char *)p, 1);
  }
  sb_put(b, "\"", 1);
}

static int check_tensors(errctx *e, const rt_st_tensor *ts, int n) {
  char sh[256];
  for (int i = 0; i < n; i++) {
    const rt_st_tensor *t = &ts[i];
    uint64_t bytes;
    if (!t->name || !*t->name)
      return fail(e, NULL, "tensor %d has %s name", i, t->name ? "an empty" : "no");
    if (!rt_json_utf8_valid(t->name)) return fail(e, t->name, "the name is not valid UTF-8");
    if (strcmp(t->name, "__metadata__") == 0)
      return fail(e, t->name, "the name is reserved for the metadata");
    if (!dtype_ok(t->dtype)) return fail(e, t->name, "invalid dtype %d", (int)t->dtype);
    if (t->rank < 0 || t->rank > RT_ST_MAX_RANK)
      return fail(e, t->name, "rank %d is not in 0..%d", t->rank, RT_ST_MAX_RANK);
    fmt_shape(t->shape, t->rank, sh, sizeof sh);
    if (shape_bytes(t->shape, t->rank, t->dtype, &bytes) < 0)
      return fail(e, t->name, "shape %s of %s has a negative extent or is too large", sh,
                  rt_dtype_name(t->dtype));
    if (bytes != t->nbytes)
      return fail(e, t->name, "nbytes %zu does not match shape %s of %s (%" PRIu64 " bytes)",
                  t->nbytes, sh, rt_dtype_name(t->dtype), bytes);
    if (!t->data && t->nbytes) return fail(e, t->name, "data is NULL");
  }
  return 0;
}

static int check_meta(errctx *e, const char *const *k, const char *const *v, int n) {
  for (int i = 0; i < n; i++) {
    if (!k[i] || !v[i]) return fail(e, NULL, "__metadata__ entry %d has a NULL key or value", i);
    if (!rt_json_utf8_valid(k[i]) || !rt_json_utf8_valid(v[i]))
      return fail(e, NULL, "__metadata__ entry %d is not valid UTF-8", i);
  }
  return 0;
}

/* Fails on the first name of names[0..n) that occurs twice. */
static int check_unique(errctx *e, const char *what, const char *(*name)(const void *, int),
                        const void *arr, int n) {
  named *v = malloc(sizeof(named) * (size_t)(n + 1));
  char buf[96];
  if (!v) return fail_as(e, RT_ERR_MEMORY, NULL, "out of memory");
  for (int i = 0; i < n; i++) v[i] = (named){name(arr, i), i};
  const char *dup = sort_names(v, n);
  int rc = dup ? fail(e, NULL, "duplicate %s '%s'", what, shown(dup, buf, sizeof buf)) : 0;
  free(v);
  return rc;
}

static const char *tensor_name(const void *arr, int i) { return ((const rt_st_tensor *)arr)[i].name; }
static const char *string_at(const void *arr, int i) { return ((const char *const *)arr)[i]; }

/* The 8-byte length and the padded header, into hdr. */
static int build_header(errctx *e, const rt_st_tensor *ts, int n, const char *const *mk,
                        const char *const *mv, int nmeta, sbuf *hdr) {
  sb_put(hdr, "\0\0\0\0\0\0\0\0{", 9);
  if (nmeta > 0) sb_put(hdr, "\"__metadata__\":{", 16);
  for (int i = 0; i < nmeta; i++) {
    if (i) sb_put(hdr, ",", 1);
    sb_json(hdr, mk[i]), sb_put(hdr, ":", 1), sb_json(hdr, mv[i]);
  }
  if (nmeta > 0) sb_put(hdr, n ? "}," : "}", n ? 2 : 1);
  uint64_t at = 0;
  for (int i = 0; i < n; i++) {
    const rt_st_tensor *t = &ts[i];
    if (i) sb_put(hdr, ",", 1);
    sb_json(hdr, t->name);
    sb_printf(hdr, ":{\"dtype\":\"%s\",\"shape\":[", rt_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) sb_printf(hdr, "%s%" PRId64, d ? "," : "", t->shape[d]);
    sb_printf(hdr, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at, at + t->nbytes);
    at += t->nbytes;
  }
  sb_put(hdr, "}", 1);
  while (!hdr->oom && hdr->len % 8) sb_put(hdr, " ", 1);
  if (hdr->oom) return fail_as(e, RT_ERR_MEMORY, NULL, "out of memory");
  uint64_t len = hdr->len - 8;
  if (len > RT_ST_MAX_HEADER)
    return fail(e, NULL, "the header would be %" PRIu64 " bytes, over the limit of %d", len,
                RT_ST_MAX_HEADER);
  for (int i = 0; i < 8; i++) hdr->p[i] = (char)(len >> 8 * i);
  return 0;
}

static int prepare(errctx *e, const rt_st_tensor *ts, int n, const char *const *mk,
                   const char *const *mv, int nmeta, sbuf *hdr) {
  if (n < 0 || nmeta < 0 || (n && !ts) || (nmeta && (!mk || !mv)))
    return fail(e, NULL, "invalid arguments (%d tensors, %d metadata entries)", n, nmeta);
  if (check_tensors(e, ts, n) < 0 || check_meta(e, mk, mv, nmeta) < 0 ||
      check_unique(e, "tensor name", tensor_name, ts, n) < 0 ||
      check_unique(e, "__metadata__ key", string_at, mk, nmeta) < 0)
    return -1;
  return build_header(e, ts, n, mk, mv, nmeta, hdr);
}

int rt_st_encode(const rt_st_tensor *tensors, int n, const char *const *meta_keys,
                 const char *const *meta_values, int nmeta, void **out, size_t *outlen,
                 rt_err *err) {
  errctx e = {"<memory>", err, RT_ERR_ARGUMENT};
  sbuf hdr = {0};
  *out = NULL, *outlen = 0;
  if (prepare(&e, tensors, n, meta_keys, meta_values, nmeta, &hdr) < 0) return free(hdr.p), -1;
  size_t total = hdr.len;
  for (int i = 0; i < n && total != SIZE_MAX; i++)
    total = tensors[i].nbytes > SIZE_MAX - total ? SIZE_MAX : total + tensors[i].nbytes;
  char *p = total < SIZE_MAX ? malloc(total) : NULL;
  if (!p) return free(hdr.p), fail_as(&e, RT_ERR_MEMORY, NULL, "out of memory for %zu bytes", total);
  memcpy(p, hdr.p, hdr.len);
  for (size_t at = hdr.len, i = 0; i < (size_t)n; at += tensors[i++].nbytes)
    if (tensors[i].nbytes) memcpy(p + at, tensors[i].data, tensors[i].nbytes);
  free(hdr.p);
  *out = p, *outlen = total;
  return 0;
}

/* The header, then every tensor's bytes, through the one atomic writer
 * (rt_file.h), whose messages start with the path like ours. */
static int save_atomic(errctx *e, const char *path, const sbuf *hdr, const rt_st_tensor *ts, int n) {
  rt_span *parts = malloc(sizeof *parts * ((size_t)n + 1));
  if (!parts) return fail_as(e, RT_ERR_MEMORY, NULL, "out of memory");
  parts[0] = (rt_span){hdr->p, hdr->len};
  for (int i = 0; i < n; i++) parts[i + 1] = (rt_span){ts[i].data, ts[i].nbytes};
  int rc = rt_write_parts_atomic(path, parts, n + 1, e->err);
  free(parts);
  return rc;
}

int rt_st_save_meta(const char *path, const rt_st_tensor *tensors, int n,
                    const char *const *meta_keys, const char *const *meta_values, int nmeta,
                    rt_err *err) {
  errctx e = {path ? path : "(null)", err, RT_ERR_ARGUMENT};
  sbuf hdr = {0};
  if (!path || !*path) return fail_as(&e, RT_ERR_ARGUMENT, NULL, "no path");
  int rc = prepare(&e, tensors, n, meta_keys, meta_values, nmeta, &hdr);
  if (rc == 0) rc = save_atomic(&e, path, &hdr, tensors, n);
  free(hdr.p);
  return rc;
}

int rt_st_save(const char *path, const rt_st_tensor *tensors, int n, rt_err *err) {
  return rt_st_save_meta(path, tensors, n, NULL, NULL, 0, err);
}

/* ---- conversions ------------------------------------------------------- */

int64_t rt_st_numel(const rt_st_tensor *t) {
  uint64_t n = 1;
  for (int i = 0; i < t->rank && i < RT_ST_MAX_RANK; i++) n *= (uint64_t)t->shape[i];
  return (int64_t)n;
}

static float f32_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, ex = h >> 10 & 31, m = h & 1023;
  if (ex == 31) return f32_bits(sign | 0x7f800000u | m << 13); /* inf, nan */
  if (ex == 0) {
    if (!m) return f32_bits(sign);
    ex = 113; /* subnormal: normalize */
    while (!(m & 1024)) m <<= 1, ex--;
    return f32_bits(sign | ex << 23 | (m & 1023) << 13);
  }
  return f32_bits(sign | (ex + 112) << 23 | m << 13);
}

#define LOAD(T, p) (memcpy(&v.T, (p), sizeof v.T), v.T)

static double load_f64(rt_dtype dt, const unsigned char *p) {
  union {
    double f64;
    float f32;
    uint16_t u16;
    uint32_t u32;
    int64_t i64;
    int32_t i32;
    int16_t i16;
  } v;
  switch (dt) {
  case RT_DT_F64: return LOAD(f64, p);
  case RT_DT_F32: return LOAD(f32, p);
  case RT_DT_F16: return f16_to_f32(LOAD(u16, p));
  case RT_DT_BF16: return f32_bits((uint32_t)LOAD(u16, p) << 16);
  case RT_DT_I64: return (double)LOAD(i64, p);
  case RT_DT_I32: return LOAD(i32, p);
  case RT_DT_I16: return LOAD(i16, p);
  case RT_DT_I8: return (int8_t)*p;
  case RT_DT_U8: return *p;
  case RT_DT_BOOL: return *p != 0;
  }
  return 0;
}

int rt_st_to_f64(const rt_st_tensor *t, double *out) {
  size_t size = rt_dtype_size(t->dtype);
  if (!size || t->nbytes % size || (!t->data && t->nbytes)) return -1;
  const unsigned char *p = t->data;
  for (size_t i = 0; i < t->nbytes / size; i++) out[i] = load_f64(t->dtype, p + i * size);
  return 0;
}

int rt_st_from_f64(rt_st_tensor *t, const double *in) {
  size_t size = rt_dtype_size(t->dtype);
  if ((t->dtype != RT_DT_F64 && t->dtype != RT_DT_F32) || t->nbytes % size ||
      (!t->data && t->nbytes))
    return -1;
  unsigned char *p = t->data;
  for (size_t i = 0; i < t->nbytes / size; i++) {
    float f = (float)in[i];
    memcpy(p + i * size, t->dtype == RT_DT_F64 ? (const void *)&in[i] : &f, size);
  }
  return 0;
}
