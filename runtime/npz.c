/* npz.c — .npz files: a zip of .npy members (np.savez), read through the
 * central directory and written uncompressed (see tensor_io.h).
 *
 * Reading: the end record (the last "PK\5\6" within 64 KiB + 22 bytes of
 * the end; its zip64 form when the counts or offsets overflow), then every
 * central directory entry: method 0 (stored) only — 8 (deflate) is
 * np.savez_compressed's and refused as such —, not encrypted, a name
 * ending ".npy", the member's bytes inside the file past its local header,
 * their CRC-32 right; each member parsed by rt_npy_parse.  Writing: local
 * headers, the members' .npy bytes, the central directory and the end
 * record, times fixed at 1980-01-01 so equal tensors give equal files. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tensor_io.h"
#include "tensor_io_impl.h"

enum { NPZ_MAX_MEMBERS = 65535 };

static uint32_t u16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t u32(const unsigned char *p) { return u16(p) | u16(p + 2) << 16; }
static uint64_t u64(const unsigned char *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

uint32_t rt_crc32(const unsigned char *p, size_t n) {
  static uint32_t table[256];
  if (!table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

typedef struct {
  uint64_t entries, cd_size, cd_off;
} end_record;

static int find_end(rt_tensor_ctx *x, const unsigned char *b, size_t n, end_record *e) {
  size_t lo = n > 65535 + 22 ? n - 65535 - 22 : 0;
  for (size_t i = n >= 22 ? n - 22 + 1 : 0; i-- > lo;) {
    if (memcmp(b + i, "PK\5\6", 4)) continue;
    *e = (end_record){u16(b + i + 10), u32(b + i + 12), u32(b + i + 16)};
    if ((e->entries == 0xffff || e->cd_size == 0xffffffffu || e->cd_off == 0xffffffffu) && i >= 20 &&
        !memcmp(b + i - 20, "PK\6\7", 4)) {
      uint64_t at = u64(b + i - 20 + 8);
      if (at > n || n - at < 56 || memcmp(b + at, "PK\6\6", 4))
        return rt_tio_fail(x, RT_ERR_FORMAT, "the zip64 end record is damaged");
      *e = (end_record){u64(b + at + 32), u64(b + at + 40), u64(b + at + 48)};
    }
    if (e->cd_off > n || e->cd_size > n - e->cd_off)
      return rt_tio_fail(x, RT_ERR_FORMAT, "the zip's central directory lies outside the file (truncated?)");
    return 0;
  }
  return rt_tio_fail(x, RT_ERR_FORMAT, "a zip file without its end record (truncated?)");
}

/* The zip64 extra field's values for the 32-bit fields that overflowed. */
static void zip64_extra(const unsigned char *p, size_t n, uint64_t *usize, uint64_t *csize, uint64_t *off) {
  for (size_t i = 0; i + 4 <= n;) {
    size_t id = u16(p + i), len = u16(p + i + 2), at = i + 4;
    if (at + len > n) return;
    if (id == 1) {
      uint64_t *want[3] = {usize, csize, off};
      for (int k = 0; k < 3; k++)
        if (*want[k] == 0xffffffffu && at + 8 <= i + 4 + len) *want[k] = u64(p + at), at += 8;
      return;
    }
    i += 4 + len;
  }
}

/* One central directory entry at *at: its member's tensor into t. */
static int member(rt_tensor_ctx *x, const unsigned char *b, size_t n, const end_record *e, uint64_t *at,
                  rt_st_tensor *t, char *name, size_t cap) {
  const unsigned char *c = b + *at;
  uint64_t cd_end = e->cd_off + e->cd_size;
  if (cd_end - *at < 46 || memcmp(c, "PK\1\2", 4))
    return rt_tio_fail(x, RT_ERR_FORMAT, "the zip's central directory is damaged");
  uint32_t flags = u16(c + 8), method = u16(c + 10), crc = u32(c + 16);
  uint64_t csize = u32(c + 20), usize = u32(c + 24), off = u32(c + 42);
  size_t nl = u16(c + 28), xl = u16(c + 30), cl = u16(c + 32);
  if (cd_end - *at - 46 < nl + xl + cl) return rt_tio_fail(x, RT_ERR_FORMAT, "the zip's central directory is damaged");
  snprintf(name, cap, "%.*s", (int)(nl < cap ? nl : cap - 1), (const char *)c + 46);
  int printable = rt_json_utf8_valid(name);
  for (const char *q = name; *q; q++) printable &= (unsigned char)*q >= 32 && *q != 127;
  if (!printable) return rt_tio_fail(x, RT_ERR_FORMAT, "a member's name is not printable UTF-8 text");
  zip64_extra(c + 46 + nl, xl, &usize, &csize, &off);
  *at += 46 + nl + xl + cl;
  x->member = name;
  size_t len = strlen(name);
  if (len != nl || len < 5 || strcmp(name + len - 4, ".npy"))
    return rt_tio_fail(x, RT_ERR_FORMAT, "not a .npy member; an .npz holds .npy files only%s",
                       strstr(name, "data.pkl") ? " (is this a PyTorch .pt file? save with safetensors or numpy)" : "");
  if (method == 8)
    return rt_tio_fail(x, RT_ERR_FORMAT, "compressed (np.savez_compressed); kbc reads uncompressed .npz files "
                                         "(np.savez)");
  if (method != 0) return rt_tio_fail(x, RT_ERR_FORMAT, "compression method %u is not supported", method);
  if (flags & 1) return rt_tio_fail(x, RT_ERR_FORMAT, "encrypted");
  if (csize != usize) return rt_tio_fail(x, RT_ERR_FORMAT, "stored with different sizes (%" PRIu64 " and %" PRIu64 ")", csize, usize);
  if (off > n || n - off < 30 || memcmp(b + off, "PK\3\4", 4))
    return rt_tio_fail(x, RT_ERR_FORMAT, "its local header is missing (truncated?)");
  uint64_t data = off + 30 + u16(b + off + 26) + u16(b + off + 28);
  if (data > n || n - data < csize) return rt_tio_fail(x, RT_ERR_FORMAT, "its data is truncated");
  if (rt_crc32(b + data, (size_t)csize) != crc) return rt_tio_fail(x, RT_ERR_FORMAT, "CRC-32 mismatch (damaged)");
  name[len - 4] = 0; /* the tensor's name */
  if (rt_npy_parse(x, b + data, (size_t)csize, name, t) < 0) return -1;
  x->member = NULL;
  return 0;
}

int rt_npz_parse(rt_tensor_ctx *x, const unsigned char *b, size_t n, rt_st_file **out) {
  end_record e = {0, 0, 0};
  *out = NULL;
  if (find_end(x, b, n, &e) < 0) return -1;
  if (e.entries > NPZ_MAX_MEMBERS || e.entries > e.cd_size / 46)
    return rt_tio_fail(x, RT_ERR_FORMAT, "the zip claims %" PRIu64 " members, more than its directory holds", e.entries);
  rt_st_tensor *ts = calloc((size_t)e.entries + 1, sizeof *ts);
  if (!ts) return rt_tio_fail(x, RT_ERR_MEMORY, "out of memory");
  uint64_t at = e.cd_off;
  int k = 0, rc = 0;
  char name[256];
  for (; k < (int)e.entries && rc == 0; k++) rc = member(x, b, n, &e, &at, &ts[k], name, sizeof name);
  if (rc < 0) k--; /* the failed one holds nothing */
  x->member = NULL;
  if (rc == 0) rc = rt_st_adopt(x->file, ts, k, out, x->err);
  else
    for (int i = 0; i < k; i++) free(ts[i].name), free(ts[i].data);
  free(ts);
  return rc;
}

/* ---- writing -------------------------------------------------------------- */

static unsigned char *put16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8);
  return p + 2;
}
static unsigned char *put32(unsigned char *p, uint32_t v) { return put16(put16(p, v & 0xffff), v >> 16); }

/* A local (sig PK\3\4) or central (PK\1\2) header's fields from version on. */
static unsigned char *header(unsigned char *p, int central, uint32_t crc, uint64_t size, size_t nl, uint64_t off) {
  memcpy(p, central ? "PK\1\2" : "PK\3\4", 4);
  p += 4;
  if (central) p = put16(p, 20);
  p = put16(p, 20), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0), p = put16(p, 0x21); /* 1980-01-01 */
  p = put32(p, crc), p = put32(p, (uint32_t)size), p = put32(p, (uint32_t)size), p = put16(p, (uint32_t)nl);
  p = put16(p, 0);
  if (central) p = put16(p, 0), p = put16(p, 0), p = put16(p, 0), p = put32(p, 0), p = put32(p, (uint32_t)off);
  return p;
}

int rt_npz_encode(const rt_st_tensor *ts, int n, void **out, size_t *len, rt_err *err) {
  rt_tensor_ctx x = {"<memory>", NULL, err};
  void **npy = calloc((size_t)n + 1, sizeof *npy);
  size_t *sz = calloc((size_t)n + 1, sizeof *sz), total = 22;
  int rc = npy && sz ? 0 : rt_tio_fail(&x, RT_ERR_MEMORY, "out of memory");
  *out = NULL, *len = 0;
  if (n > NPZ_MAX_MEMBERS) rc = rt_tio_fail(&x, RT_ERR_ARGUMENT, "more than %d tensors for an .npz", NPZ_MAX_MEMBERS);
  for (int i = 0; rc == 0 && i < n; i++) {
    rc = rt_npy_encode(&ts[i], &npy[i], &sz[i], err);
    total += 30 + 46 + 2 * (strlen(ts[i].name) + 4) + sz[i];
    if (rc == 0 && (sz[i] >= 0xffffffffu || total >= 0xffffffffu))
      rc = rt_tio_fail(&x, RT_ERR_ARGUMENT, "tensor '%s': over 4 GiB, too large for an .npz; write .safetensors",
                       ts[i].name);
  }
  unsigned char *b = rc == 0 ? malloc(total) : NULL, *p = b;
  if (rc == 0 && !b) rc = rt_tio_fail(&x, RT_ERR_MEMORY, "out of memory for %zu bytes", total);
  uint64_t *offs = rc == 0 ? calloc((size_t)n + 1, sizeof *offs) : NULL;
  if (rc == 0 && !offs) rc = rt_tio_fail(&x, RT_ERR_MEMORY, "out of memory");
  for (int i = 0; rc == 0 && i < n; i++) {
    size_t nl = strlen(ts[i].name) + 4;
    offs[i] = (uint64_t)(p - b);
    p = header(p, 0, rt_crc32(npy[i], sz[i]), sz[i], nl, 0);
    memcpy(p, ts[i].name, nl - 4), memcpy(p + nl - 4, ".npy", 4), p += nl;
    memcpy(p, npy[i], sz[i]), p += sz[i];
  }
  size_t cd = (size_t)(p - b);
  for (int i = 0; rc == 0 && i < n; i++) {
    size_t nl = strlen(ts[i].name) + 4;
    p = header(p, 1, rt_crc32(npy[i], sz[i]), sz[i], nl, offs[i]);
    memcpy(p, ts[i].name, nl - 4), memcpy(p + nl - 4, ".npy", 4), p += nl;
  }
  if (rc == 0) {
    memcpy(p, "PK\5\6", 4), p += 4;
    p = put16(p, 0), p = put16(p, 0), p = put16(p, (uint32_t)n), p = put16(p, (uint32_t)n);
    p = put32(p, (uint32_t)((size_t)(p - b) - 12 - cd)), p = put32(p, (uint32_t)cd), p = put16(p, 0);
    *out = b, *len = (size_t)(p - b), b = NULL;
  }
  for (int i = 0; npy && i < n; i++) free(npy[i]);
  free(npy), free(sz), free(offs), free(b);
  return rc;
}
