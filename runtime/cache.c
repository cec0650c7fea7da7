/* cache.c — see cache.h.  Sections: SHA-256; keys and paths; entries
 * (encode, decode, load, store); dumps; rt_compile; directory stats. */
#include "cache.h"

#include "support/env.h"
#include "support/name.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------- */

typedef struct {
  uint32_t h[8];
  uint64_t total;
  unsigned char block[64];
  size_t used;
} sha256_ctx;

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(sha256_ctx *c, const unsigned char *p) {
  uint32_t w[64], s[8];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  memcpy(s, c->h, sizeof s);
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = s[7] + (ror(s[4], 6) ^ ror(s[4], 11) ^ ror(s[4], 25)) + ((s[4] & s[5]) ^ (~s[4] & s[6])) + K[i] + w[i];
    uint32_t t2 = (ror(s[0], 2) ^ ror(s[0], 13) ^ ror(s[0], 22)) + ((s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]));
    memmove(s + 1, s, 7 * sizeof s[0]);
    s[4] += t1;
    s[0] = t1 + t2;
  }
  for (int i = 0; i < 8; i++) c->h[i] += s[i];
}

static void sha256_init(sha256_ctx *c) {
  static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, h0, sizeof h0);
  c->total = 0;
  c->used = 0;
}

static void sha256_update(sha256_ctx *c, const void *data, size_t n) {
  const unsigned char *p = data;
  c->total += n;
  while (n) {
    size_t k = 64 - c->used < n ? 64 - c->used : n;
    memcpy(c->block + c->used, p, k);
    c->used += k, p += k, n -= k;
    if (c->used == 64) sha256_block(c, c->block), c->used = 0;
  }
}

static void sha256_final(sha256_ctx *c, unsigned char out[32]) {
  uint64_t bits = c->total * 8;
  unsigned char pad[72] = {0x80};
  size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
  for (int i = 0; i < 8; i++) pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
  sha256_update(c, pad, padlen + 8);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++) out[4 * i + j] = (unsigned char)(c->h[i] >> (24 - 8 * j));
}

void rt_sha256(const void *data, size_t n, unsigned char digest[32]) {
  sha256_ctx c;
  sha256_init(&c);
  sha256_update(&c, data, n);
  sha256_final(&c, digest);
}

static void to_hex(const unsigned char *d, size_t n, char *hex) {
  for (size_t i = 0; i < n; i++) sprintf(hex + 2 * i, "%02x", d[i]);
  hex[2 * n] = 0;
}

void rt_sha256_hex(const void *data, size_t n, char hex[65]) {
  unsigned char d[32];
  rt_sha256(data, n, d);
  to_hex(d, 32, hex);
}

/* ---- keys and paths -------------------------------------------------------- */

static void hash_field(sha256_ctx *c, const char *s) {
  uint64_t n = s ? strlen(s) : UINT64_MAX;
  sha256_update(c, &n, sizeof n);
  if (s) sha256_update(c, s, (size_t)n);
}

void rt_key_of_fields(const char *const *fields, int n, char key[RT_KEY_HEX + 1]) {
  sha256_ctx c;
  sha256_init(&c);
  for (int i = 0; i < n; i++) hash_field(&c, fields[i]);
  unsigned char d[32];
  sha256_final(&c, d);
  to_hex(d, RT_KEY_HEX / 2, key);
}

int rt_cache_key(const rt_compile_req *req, char key[RT_KEY_HEX + 1], rt_err *err) {
  int major = 0, minor = 0;
  if (rt_nvrtc_version(&major, &minor, err) < 0) return -1;
  kbc_buf opts = {0}, ver = {0};
  if (rt_nvrtc_options(req->arch, req->opts, req->n_opts, &opts, err) < 0) return -1;
  kbc_buf_printf(&ver, "nvrtc %d.%d", major, minor);
  const char *fields[] = {"kbc cubin key 1", req->kbc_version ? req->kbc_version : "unknown",
                          ver.data, req->arch, kbc_buf_str(&opts), req->name, req->src};
  rt_key_of_fields(fields, 7, key);
  kbc_buf_free(&opts), kbc_buf_free(&ver);
  return 0;
}

int rt_cache_dir_path(kbc_buf *dir, rt_err *err) {
  const char *env = kbc_env_str("KBC_CACHE_DIR"), *xdg = kbc_env_str("XDG_CACHE_HOME"), *home = kbc_env_str("HOME");
  rt_buf_clear(dir);
  if (env) kbc_buf_puts(dir, env);
  else if (xdg) kbc_buf_printf(dir, "%s/kbc", xdg);
  else if (home) kbc_buf_printf(dir, "%s/.cache/kbc", home);
  else return rt_fail(err, RT_ERR_IO, "no cache directory: none of KBC_CACHE_DIR, XDG_CACHE_HOME, HOME is set");
  return 0;
}

int rt_cache_dir(kbc_buf *dir, rt_err *err) {
  if (rt_cache_dir_path(dir, err) < 0) return -1;
  return rt_mkdir_p(dir->data, 0700, err);
}

void rt_cache_entry_path(const char *dir, const char *key, kbc_buf *path) {
  rt_buf_clear(path);
  kbc_buf_printf(path, "%s/%s.cubin", dir, key);
}

/* ---- entries ---------------------------------------------------------------- */

enum { ENTRY_VERSION = 1, HEADER_BYTES = 8 + 4 + 4 + RT_KEY_HEX + 8 + 32 };
static const char MAGIC[8] = {'K', 'B', 'C', 'C', 'U', 'B', 'I', 'N'};

static void put_u32(kbc_buf *b, uint32_t v) { kbc_buf_putn(b, (const char *)&v, sizeof v); }
static void put_u64(kbc_buf *b, uint64_t v) { kbc_buf_putn(b, (const char *)&v, sizeof v); }
static void put_sized(kbc_buf *b, const void *p, uint64_t n) {
  put_u64(b, n);
  if (n && n != UINT64_MAX) kbc_buf_putn(b, p, (size_t)n);
}

static void encode_entry(const char *key, const rt_compiled *c, int with_ptx, kbc_buf *out) {
  kbc_buf payload = {0}, res = {0};
  rt_resources_serialize(&c->res, &res);
  put_sized(&payload, c->cubin.data, c->cubin.len);
  put_sized(&payload, c->ptx.data, with_ptx ? c->ptx.len : UINT64_MAX);
  put_sized(&payload, res.data, res.len);
  unsigned char sum[32];
  rt_sha256(payload.data, payload.len, sum);
  kbc_buf_putn(out, MAGIC, sizeof MAGIC);
  put_u32(out, ENTRY_VERSION);
  put_u32(out, 0);
  kbc_buf_putn(out, key, RT_KEY_HEX);
  put_u64(out, payload.len);
  kbc_buf_putn(out, (const char *)sum, sizeof sum);
  kbc_buf_putn(out, payload.data, payload.len);
  kbc_buf_free(&payload), kbc_buf_free(&res);
}

/* Takes one sized field at *pos of b; 0 or -1 when it overruns. */
static int take_sized(const rt_blob *b, size_t *pos, const unsigned char **p, uint64_t *n) {
  if (b->len - *pos < 8) return -1;
  memcpy(n, b->data + *pos, 8);
  *pos += 8;
  *p = b->data + *pos;
  if (*n == UINT64_MAX) return 0;
  if (*n > b->len - *pos) return -1;
  *pos += (size_t)*n;
  return 0;
}

/* Decodes and verifies an entry; -1 with the reason in *why. */
static int decode_entry(const rt_blob *b, const char *key, rt_compiled *c, const char **why) {
  uint32_t version;
  uint64_t plen;
  unsigned char sum[32];
  if (b->len < HEADER_BYTES) return *why = "shorter than its header", -1;
  if (memcmp(b->data, MAGIC, 8)) return *why = "bad magic", -1;
  memcpy(&version, b->data + 8, 4);
  if (version != ENTRY_VERSION) return *why = "unknown format version", -1;
  if (memcmp(b->data + 16, key, RT_KEY_HEX)) return *why = "key mismatch", -1;
  memcpy(&plen, b->data + 16 + RT_KEY_HEX, 8);
  if (plen != b->len - HEADER_BYTES) return *why = "truncated or overlong payload", -1;
  rt_sha256(b->data + HEADER_BYTES, (size_t)plen, sum);
  if (memcmp(sum, b->data + HEADER_BYTES - 32, 32)) return *why = "checksum mismatch", -1;
  rt_blob payload = {b->data + HEADER_BYTES, (size_t)plen};
  size_t pos = 0;
  const unsigned char *p[3];
  uint64_t n[3];
  for (int i = 0; i < 3; i++)
    if (take_sized(&payload, &pos, &p[i], &n[i]) < 0) return *why = "malformed payload", -1;
  if (pos != payload.len || n[0] == UINT64_MAX || n[0] == 0 || n[2] == UINT64_MAX)
    return *why = "malformed payload", -1;
  if (rt_resources_deserialize((const char *)p[2], (size_t)n[2], &c->res) < 0)
    return *why = "malformed resource table", -1;
  rt_blob_set(&c->cubin, p[0], (size_t)n[0]);
  if (n[1] != UINT64_MAX) rt_blob_set(&c->ptx, p[1], (size_t)n[1]);
  return 0;
}

/* 1 on a usable hit, 0 on a miss (a bad entry is deleted). */
static int cache_load(const char *dir, const char *key, int want_ptx, rt_compiled *c) {
  kbc_buf path = {0};
  rt_cache_entry_path(dir, key, &path);
  rt_blob b = {0};
  int hit = 0;
  if (access(path.data, F_OK) == 0) {
    rt_err err = {0};
    const char *why = NULL;
    if (rt_read_file(path.data, (size_t)1 << 31, &b, &err) < 0) {
      rt_debug(1, "cache: cannot read %s: %s", path.data, rt_err_msg(&err));
    } else if (decode_entry(&b, key, c, &why) < 0) {
      rt_debug(1, "cache: corrupt entry %s (%s): deleted, rebuilding", path.data, why);
      unlink(path.data);
    } else if (want_ptx && !c->ptx.data) {
      rt_debug(1, "cache: entry %s has no PTX: recompiling", path.data);
    } else {
      hit = 1;
    }
    rt_err_free(&err);
  }
  if (!hit) {
    rt_blob_free(&c->cubin), rt_blob_free(&c->ptx);
    rt_resources_free(&c->res);
  }
  rt_blob_free(&b);
  kbc_buf_free(&path);
  return hit;
}

static void cache_store(const char *dir, const char *key, const rt_compiled *c, int with_ptx) {
  kbc_buf path = {0}, data = {0};
  rt_err err = {0};
  rt_cache_entry_path(dir, key, &path);
  encode_entry(key, c, with_ptx, &data);
  if (rt_write_file_atomic(path.data, data.data, data.len, &err) < 0)
    rt_debug(1, "cache: not stored: %s", rt_err_msg(&err));
  kbc_buf_free(&path), kbc_buf_free(&data), rt_err_free(&err);
}

/* ---- dumps ------------------------------------------------------------------ */

/* KBC_DUMP_DIR/<name>-<key><ext>, the name reduced to [A-Za-z0-9_.-]. */
static void dump(const char *name, const char *key, const char *ext, const void *data, size_t len) {
  const char *dir = kbc_env_str("KBC_DUMP_DIR");
  if (!dir || !data) return;
  kbc_buf path = {0};
  rt_err err = {0};
  if (rt_mkdir_p(dir, 0755, &err) < 0) {
    rt_debug(1, "dump: %s", rt_err_msg(&err));
    rt_err_free(&err);
    return;
  }
  kbc_buf_printf(&path, "%s/", dir);
  size_t at = path.len;
  kbc_buf_puts(&path, name);
  kbc_name_sanitize(path.data + at, KBC_NAME_FILE);
  kbc_buf_printf(&path, "-%s%s", key, ext);
  if (rt_write_file_atomic(path.data, data, len, &err) < 0) rt_debug(1, "dump: %s", rt_err_msg(&err));
  else rt_debug(2, "dumped %s", path.data);
  kbc_buf_free(&path), rt_err_free(&err);
}

/* ---- rt_compile --------------------------------------------------------------- */

void rt_compiled_free(rt_compiled *c) {
  rt_blob_free(&c->cubin);
  rt_blob_free(&c->ptx);
  rt_resources_free(&c->res);
  kbc_buf_free(&c->log);
  memset(c, 0, sizeof *c);
}

static void report_resources(const rt_compiled *c) {
  if (rt_debug_level() < 2) return;
  kbc_buf b = {0};
  rt_resources_format(&c->res, &b);
  if (b.len) b.data[--b.len] = 0;
  if (b.len) rt_debug(2, "resources:\n%s", b.data);
  kbc_buf_free(&b);
}

int rt_compile(const rt_compile_req *req, rt_compiled *out, rt_err *err) {
  memset(out, 0, sizeof *out);
  if (!req || !req->src || !req->arch) return rt_fail(err, RT_ERR_ARGUMENT, "rt_compile: no source or no target");
  const char *name = req->name && *req->name ? req->name : "kernel";
  if (rt_nvrtc_available(err) < 0 || rt_arch_check(req->arch, err) < 0) return -1;
  if (rt_cache_key(req, out->key, err) < 0) return -1;
  dump(name, out->key, ".cu", req->src, strlen(req->src));

  kbc_buf dir = {0};
  rt_err why = {0};
  int have_dir = rt_cache_dir(&dir, &why) == 0;
  if (!have_dir) rt_debug(1, "cache: unusable, compiling without it: %s", rt_err_msg(&why));
  if (have_dir && !kbc_env_flag("KBC_ALWAYS_COMPILE", 0) && cache_load(dir.data, out->key, req->want_ptx, out)) {
    out->from_cache = 1;
    rt_debug(1, "cache hit: %s for %s (%s)", name, req->arch, out->key);
  } else {
    rt_debug(1, "cache %s: %s for %s (%s)", have_dir ? "miss" : "off", name, req->arch, out->key);
    double t0 = rt_now_ms();
    if (rt_nvrtc_compile(req->src, name, req->arch, req->opts, req->n_opts, &out->cubin,
                         req->want_ptx ? &out->ptx : NULL, &out->res, &out->log, err) < 0) {
      kbc_buf_free(&dir), rt_err_free(&why);
      rt_compiled_free(out);
      return -1;
    }
    out->compile_ms = rt_now_ms() - t0;
    rt_debug(1, "compiled %s for %s in %.1f ms", name, req->arch, out->compile_ms);
    if (have_dir) cache_store(dir.data, out->key, out, req->want_ptx);
  }
  report_resources(out);
  dump(name, out->key, ".cubin", out->cubin.data, out->cubin.len);
  if (out->ptx.data) dump(name, out->key, ".ptx", out->ptx.data, out->ptx.len);
  kbc_buf_free(&dir), rt_err_free(&why);
  return 0;
}

/* ---- directory ------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

int rt_cache_stats(const char *dir, long *entries, long long *bytes, rt_err *err) {
  DIR *d = opendir(dir);
  if (!d) return rt_fail(err, RT_ERR_IO, "cannot read %s: %s", dir, strerror(errno));
  *entries = 0, *bytes = 0;
  kbc_buf path = {0};
  struct dirent *de;
  while ((de = readdir(d))) {
    struct stat st;
    if (!ends_with(de->d_name, ".cubin")) continue;
    rt_buf_clear(&path);
    kbc_buf_printf(&path, "%s/%s", dir, de->d_name);
    if (stat(path.data, &st) == 0 && S_ISREG(st.st_mode)) (*entries)++, *bytes += st.st_size;
  }
  closedir(d);
  kbc_buf_free(&path);
  return 0;
}

int rt_cache_clear(const char *dir, rt_err *err) {
  DIR *d = opendir(dir);
  if (!d) return rt_fail(err, RT_ERR_IO, "cannot read %s: %s", dir, strerror(errno));
  kbc_buf path = {0};
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!ends_with(de->d_name, ".cubin") && !strstr(de->d_name, ".cubin.tmp-")) continue;
    rt_buf_clear(&path);
    kbc_buf_printf(&path, "%s/%s", dir, de->d_name);
    if (unlink(path.data) < 0 && errno != ENOENT)
      rc = rt_fail(err, RT_ERR_IO, "cannot remove %s: %s", path.data, strerror(errno));
  }
  closedir(d);
  kbc_buf_free(&path);
  return rc;
}
