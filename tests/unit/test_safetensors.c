/* test_safetensors.c — runtime/safetensors.c: round trips, the reference
 * byte layout, every class of malformed file (each must fail with a message
 * naming the input and the problem), and atomic saving.
 *
 * Hermetic: files live in a fresh mkdtemp directory under /tmp, removed at
 * the end. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/safetensors.h"

static char dir[64];
static rt_err st_err; /* the last call's error */
#define err rt_err_msg(&st_err)

static int make_dir(void **state) {
  (void)state;
  strcpy(dir, "/tmp/kbc_test_st_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

/* Removes dir/path recursively (only what the tests made). */
static void remove_tree(const char *path) {
  DIR *d = opendir(path);
  struct dirent *de;
  char sub[512];
  while (d && (de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
    struct stat st;
    if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(sub);
    else unlink(sub);
  }
  if (d) closedir(d);
  rmdir(path);
}

static int remove_dir(void **state) {
  (void)state;
  remove_tree(dir);
  return 0;
}

/* A fresh empty subdirectory of dir for one test. */
static const char *subdir(const char *name) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  remove_tree(path);
  assert_int_equal(mkdir(path, 0777), 0);
  return path;
}

static int count_entries(const char *path) {
  DIR *d = opendir(path);
  struct dirent *de;
  int n = 0;
  assert_non_null(d);
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  closedir(d);
  return n;
}

static unsigned char *read_whole(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
  fclose(fp);
  *len = (size_t)n;
  return b;
}

static void write_whole(const char *path, const void *b, size_t n) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(b, 1, n, fp), n);
  fclose(fp);
}

/* A file image: length, hlen header bytes, dlen data bytes 0, 1, 2, ... */
static unsigned char *image(const char *hdr, size_t hlen, size_t dlen, size_t *len) {
  unsigned char *b = malloc(8 + hlen + dlen + 1);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hlen >> 8 * i);
  memcpy(b + 8, hdr, hlen);
  for (size_t i = 0; i < dlen; i++) b[8 + hlen + i] = (unsigned char)i;
  *len = 8 + hlen + dlen;
  return b;
}

static rt_st_file *parse_ok(const char *hdr, size_t hlen, size_t dlen) {
  size_t len;
  unsigned char *b = image(hdr, hlen, dlen, &len);
  rt_st_file *f = NULL;
  rt_err_clear(&st_err);
  int rc = rt_st_parse(b, len, &f, &st_err);
  free(b);
  if (rc != 0) fail_msg("unexpected error: %s", err);
  assert_non_null(f);
  return f;
}

static void parse_err(const char *hdr, size_t hlen, size_t dlen, const char *phrase) {
  size_t len;
  unsigned char *b = image(hdr, hlen, dlen, &len);
  rt_st_file *f = (rt_st_file *)1;
  rt_err_clear(&st_err);
  int rc = rt_st_parse(b, len, &f, &st_err);
  free(b);
  if (rc == 0) fail_msg("accepted: %.*s", (int)hlen, hdr);
  assert_null(f);
  if (strncmp(err, "<memory>: ", 10) != 0 || !strstr(err, phrase))
    fail_msg("for %.*s\n  message: %s\n  wanted:  %s", (int)hlen, hdr, err, phrase);
}

#define OK(hdr, dlen) parse_ok(hdr, sizeof hdr - 1, dlen)
#define BAD(hdr, dlen, phrase) parse_err(hdr, sizeof hdr - 1, dlen, phrase)
#define T1(body) "{\"x\":" body "}"

/* ---- dtypes and round trips -------------------------------------------- */

static void test_dtype_table(void **state) {
  (void)state;
  static const char *names[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"};
  static const size_t sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
  for (int i = 0; i < 10; i++) {
    rt_dtype t;
    assert_string_equal(rt_dtype_name((rt_dtype)i), names[i]);
    assert_int_equal(rt_dtype_size((rt_dtype)i), sizes[i]);
    assert_int_equal(rt_dtype_parse(names[i], &t), 0);
    assert_int_equal(t, i);
  }
  rt_dtype t;
  assert_int_equal(rt_dtype_parse("f32", &t), -1);
  assert_int_equal(rt_dtype_parse("U16", &t), -1);
  assert_int_equal(rt_dtype_parse(NULL, &t), -1);
  assert_string_equal(rt_dtype_name((rt_dtype)99), "?");
  assert_int_equal(rt_dtype_size((rt_dtype)99), 0);
}

static rt_st_tensor tensor(const char *name, rt_dtype dt, int rank, const int64_t *shape,
                           void *data) {
  rt_st_tensor t = {.name = (char *)name, .dtype = dt, .rank = rank, .data = data};
  if (rank > 0) memcpy(t.shape, shape, sizeof(int64_t) * (size_t)rank);
  t.nbytes = (size_t)rt_st_numel(&t) * rt_dtype_size(dt);
  return t;
}

static void assert_same(const rt_st_tensor *a, const rt_st_tensor *b) {
  assert_non_null(a);
  assert_non_null(b);
  assert_string_equal(a->name, b->name);
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->rank, b->rank);
  for (int i = 0; i < a->rank; i++) assert_int_equal(a->shape[i], b->shape[i]);
  assert_int_equal(a->nbytes, b->nbytes);
  if (a->nbytes) assert_memory_equal(a->data, b->data, a->nbytes);
}

/* Saves ts, loads them back, checks order, contents and alignment. */
static rt_st_file *round_trip(const char *file, const rt_st_tensor *ts, int n) {
  char path[256];
  rt_st_file *f;
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (rt_st_save(path, ts, n, &st_err) != 0) fail_msg("save: %s", err);
  if (rt_st_load(path, &f, &st_err) != 0) fail_msg("load: %s", err);
  assert_int_equal(rt_st_count(f), n);
  for (int i = 0; i < n; i++) {
    assert_same(rt_st_get(f, i), &ts[i]);
    assert_ptr_equal(rt_st_find(f, ts[i].name), rt_st_get(f, i));
    assert_non_null(rt_st_get(f, i)->data);
    assert_int_equal((uintptr_t)rt_st_get(f, i)->data % 8, 0);
  }
  assert_null(rt_st_get(f, n));
  assert_null(rt_st_get(f, -1));
  return f;
}

static void test_round_trip_all_dtypes(void **state) {
  (void)state;
  unsigned char bytes[10][48];
  rt_st_tensor ts[10];
  static const char *names[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u8", "b"};
  int64_t shape[2] = {2, 3};
  for (int d = 0; d < 10; d++) {
    for (int i = 0; i < 48; i++) bytes[d][i] = (unsigned char)(d * 31 + i * 7);
    ts[d] = tensor(names[d], (rt_dtype)d, 2, shape, bytes[d]);
  }
  rt_st_free(round_trip("dtypes.safetensors", ts, 10));
}

static void test_round_trip_scalar_and_empty(void **state) {
  (void)state;
  double pi = 3.25;
  float none[1];
  int64_t s0[1] = {0}, s302[3] = {3, 0, 2}, s2[1] = {2};
  int32_t two[2] = {7, -7};
  rt_st_tensor ts[] = {
      tensor("empty", RT_DT_F32, 1, s0, NULL), tensor("scalar", RT_DT_F64, 0, NULL, &pi),
      tensor("empty3", RT_DT_I64, 3, s302, none), tensor("v", RT_DT_I32, 1, s2, two),
      tensor("empty_end", RT_DT_U8, 1, s0, NULL)};
  rt_st_file *f = round_trip("scalar.safetensors", ts, 5);
  const rt_st_tensor *s = rt_st_find(f, "scalar");
  assert_int_equal(s->rank, 0);
  assert_int_equal(rt_st_numel(s), 1);
  assert_int_equal(rt_st_numel(rt_st_find(f, "empty3")), 0);
  rt_st_free(f);
}

static void test_round_trip_many(void **state) {
  (void)state;
  enum { N = 1500 };
  rt_st_tensor *ts = calloc(N, sizeof *ts);
  char(*names)[16] = calloc(N, 16);
  float *vals = calloc(N, sizeof(float) * 3);
  for (int i = 0; i < N; i++) {
    int64_t shape[1] = {i % 4}; /* includes zero-sized ones */
    snprintf(names[i], 16, "t%d", (i * 7919) % N); /* not in name order */
    for (int k = 0; k < 3; k++) vals[3 * i + k] = (float)(i * 3 + k);
    ts[i] = tensor(names[i], RT_DT_F32, 1, shape, &vals[3 * i]);
  }
  rt_st_file *f = round_trip("many.safetensors", ts, N);
  assert_null(rt_st_find(f, "nope"));
  assert_null(rt_st_find(f, ""));
  rt_st_free(f);
  free(ts), free(names), free(vals);
}

static void test_round_trip_escaped_names(void **state) {
  (void)state;
  static const char *names[] = {"q\"uote", "back\\slash", "new\nline\ttab\r\b\f", "\x01\x1f",
                                "caf\xc3\xa9", "emoji \xf0\x9f\x98\x80", "sl/ash", "__meta__",
                                "{\"x\":1}", " ", "\x7f"};
  enum { N = sizeof names / sizeof names[0] };
  rt_st_tensor ts[N];
  uint8_t b[N];
  int64_t one[1] = {1};
  for (int i = 0; i < N; i++) b[i] = (uint8_t)i, ts[i] = tensor(names[i], RT_DT_U8, 1, one, &b[i]);
  rt_st_free(round_trip("names.safetensors", ts, N));
}

static void test_round_trip_metadata(void **state) {
  (void)state;
  char path[256];
  const char *keys[] = {"format", "k\"ey", "empty"}, *vals[] = {"pt", "v\\al\n", ""};
  float x = 1.5f;
  int64_t one[1] = {1};
  rt_st_tensor t = tensor("x", RT_DT_F32, 1, one, &x);
  rt_st_file *f;
  const char *k, *v;
  snprintf(path, sizeof path, "%s/meta.safetensors", dir);
  assert_int_equal(rt_st_save_meta(path, &t, 1, keys, vals, 3, &st_err), 0);
  assert_int_equal(rt_st_load(path, &f, &st_err), 0);
  assert_int_equal(rt_st_meta_count(f), 3);
  assert_int_equal(rt_st_meta_get(f, 1, &k, &v), 0);
  assert_string_equal(k, "k\"ey");
  assert_string_equal(v, "v\\al\n");
  assert_string_equal(rt_st_meta_find(f, "format"), "pt");
  assert_string_equal(rt_st_meta_find(f, "empty"), "");
  assert_null(rt_st_meta_find(f, "x"));
  assert_int_equal(rt_st_meta_get(f, 3, &k, &v), -1);
  rt_st_free(f);
}

/* ---- the reference (Rust) implementation's byte layout ----------------- */

/* serialize({"attn.0": f32 [1,2,3] = 0..5}) from the reference test suite. */
static const unsigned char ref_attn[] =
    "@\0\0\0\0\0\0\0{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}"
    "\0\0\0\0\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40\0\0\xa0\x40";
/* The same with a shorter name: padded with spaces to 8 bytes. */
static const unsigned char ref_padded[] =
    "H\0\0\0\0\0\0\0{\"attn0\":{\"dtype\":\"F32\",\"shape\":[1,1,2,3],\"data_offsets\":[0,24]}}"
    "       \0\0\0\0\0\0\x80\x3f\0\0\0\x40\0\0\x40\x40\0\0\x80\x40\0\0\xa0\x40";
static const unsigned char ref_empty[] = "\x08\0\0\0\0\0\0\0{}      ";
static const unsigned char ref_meta[] =
    "(\0\0\0\0\0\0\0{\"__metadata__\":{\"framework\":\"pt\"}}     ";

static void test_reads_reference_layout(void **state) {
  (void)state;
  rt_st_file *f;
  double v[6];
  assert_int_equal(rt_st_parse(ref_attn, sizeof ref_attn - 1, &f, &st_err), 0);
  const rt_st_tensor *t = rt_st_find(f, "attn.0");
  assert_non_null(t);
  assert_int_equal(t->rank, 3);
  assert_int_equal(rt_st_to_f64(t, v), 0);
  for (int i = 0; i < 6; i++) assert_true(v[i] == i);
  rt_st_free(f);
  assert_int_equal(rt_st_parse(ref_padded, sizeof ref_padded - 1, &f, &st_err), 0);
  assert_int_equal(rt_st_get(f, 0)->shape[3], 3);
  rt_st_free(f);
  assert_int_equal(rt_st_parse(ref_empty, sizeof ref_empty - 1, &f, &st_err), 0);
  assert_int_equal(rt_st_count(f), 0);
  rt_st_free(f);
  assert_int_equal(rt_st_parse(ref_meta, sizeof ref_meta - 1, &f, &st_err), 0);
  assert_string_equal(rt_st_meta_find(f, "framework"), "pt");
  rt_st_free(f);
}

static void expect_encoding(const rt_st_tensor *ts, int n, const char *mk, const char *mv,
                            const unsigned char *want, size_t wantlen) {
  void *out;
  size_t len;
  const char *k[1] = {mk}, *v[1] = {mv};
  assert_int_equal(rt_st_encode(ts, n, k, v, mk ? 1 : 0, &out, &len, &st_err), 0);
  assert_int_equal(len, wantlen);
  assert_memory_equal(out, want, wantlen);
  free(out);
}

static void test_writes_reference_layout(void **state) {
  (void)state;
  float d[6] = {0, 1, 2, 3, 4, 5};
  int64_t s123[3] = {1, 2, 3}, s1123[4] = {1, 1, 2, 3};
  rt_st_tensor a = tensor("attn.0", RT_DT_F32, 3, s123, d);
  rt_st_tensor b = tensor("attn0", RT_DT_F32, 4, s1123, d);
  expect_encoding(&a, 1, NULL, NULL, ref_attn, sizeof ref_attn - 1);
  expect_encoding(&b, 1, NULL, NULL, ref_padded, sizeof ref_padded - 1);
  expect_encoding(NULL, 0, NULL, NULL, ref_empty, sizeof ref_empty - 1);
  expect_encoding(NULL, 0, "framework", "pt", ref_meta, sizeof ref_meta - 1);
}

static void test_whitespace_and_padding(void **state) {
  (void)state;
  rt_st_file *f = OK(" \n{ \"x\" :\t{ \"shape\" : [ 2 ] ,\r\n \"data_offsets\" : [ 0 , 2 ] ,"
                     " \"dtype\" : \"U8\" } }\n        ",
                     2);
  assert_int_equal(rt_st_get(f, 0)->shape[0], 2);
  rt_st_free(f);
  BAD("{}\0\0", 0, "expected nothing after the object, found byte 0x00");
}

static void test_order_is_data_order(void **state) {
  (void)state;
  rt_st_file *f = OK("{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
                     "\"z0\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[1,1]},"
                     "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                     "\"y0\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[1,1]}}",
                     2);
  static const char *want[] = {"a", "z0", "y0", "b"};
  for (int i = 0; i < 4; i++) assert_string_equal(rt_st_get(f, i)->name, want[i]);
  assert_int_equal(*(unsigned char *)rt_st_find(f, "b")->data, 1);
  rt_st_free(f);
}

static void test_escapes_decoded(void **state) {
  (void)state;
  rt_st_file *f = OK("{\"a\\u00e9\\ud83d\\ude00\\n\\/\\\"\":{\"dtype\":\"U8\",\"shape\":[],"
         "\"data_offsets\":[0,1]}}",
         1);
  assert_non_null(rt_st_find(f, "a\xc3\xa9\xf0\x9f\x98\x80\n/\""));
  rt_st_free(f);
}

/* ---- malformed files --------------------------------------------------- */

static void test_truncated(void **state) {
  (void)state;
  rt_st_file *f;
  static const unsigned char shortf[] = {8, 0, 0, 0};
  assert_int_equal(rt_st_parse(shortf, 4, &f, &st_err), -1);
  assert_string_equal(err, "<memory>: file is 4 bytes, too short for the 8-byte header length");
  assert_int_equal(rt_st_parse(NULL, 0, &f, &st_err), -1);
  assert_non_null(strstr(err, "too short"));
  /* header cut short */
  assert_int_equal(rt_st_parse(ref_attn, 40, &f, &st_err), -1);
  assert_string_equal(err, "<memory>: header length 64 exceeds the file size (40 bytes)");
  /* data cut short */
  assert_int_equal(rt_st_parse(ref_attn, sizeof ref_attn - 2, &f, &st_err), -1);
  assert_non_null(strstr(err, "tensor 'attn.0': data_offsets [0, 24] exceed the data buffer (23 bytes)"));
  /* data too long */
  assert_int_equal(rt_st_parse(ref_attn, sizeof ref_attn, &f, &st_err), -1);
  assert_non_null(strstr(err, "1 trailing bytes"));
}

static void test_header_too_large(void **state) {
  (void)state;
  rt_st_file *f;
  unsigned char b[16] = {0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}'}; /* 100000000: the cap */
  assert_int_equal(rt_st_parse(b, 16, &f, &st_err), -1);
  assert_non_null(strstr(err, "header length 100000000 exceeds the file size"));
  b[0] = 1; /* 100000001 */
  assert_int_equal(rt_st_parse(b, 16, &f, &st_err), -1);
  assert_non_null(strstr(err, "header length 100000001 exceeds the limit of 100000000 bytes"));
  memset(b, 0xff, 8);
  assert_int_equal(rt_st_parse(b, 16, &f, &st_err), -1);
  assert_non_null(strstr(err, "header length 18446744073709551615 exceeds the limit"));
}

static void test_not_an_object(void **state) {
  (void)state;
  BAD("", 0, "the header is not a JSON object (invalid JSON at byte 0 of the header: expected '{', found the end)");
  BAD("    ", 0, "not a JSON object");
  BAD("[]", 0, "not a JSON object");
  BAD("\"x\"", 0, "not a JSON object");
  BAD("5", 0, "not a JSON object");
  BAD("null", 0, "not a JSON object");
  BAD("\xef\xbb\xbf{}", 0, "found byte 0xef");
}

static void test_invalid_json(void **state) {
  (void)state;
  BAD("{", 0, "expected a string key, found the end");
  BAD("{\"x\"}", 0, "expected ':', found '}'");
  BAD("{\"x\":", 0, "tensor 'x': expected an object");
  BAD("{}}", 0, "invalid JSON at byte 2 of the header: expected nothing after the object, found '}'");
  BAD("{} x", 0, "expected nothing after the object");
  BAD("{,}", 0, "expected a string key, found ','");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1],}"), 1,
      "tensor 'x': invalid JSON at byte 51 of the header: expected a string key, found '}'");
  BAD("{'x':1}", 0, "expected a string key, found '''");
  BAD(T1("{\"dtype\":\"U8\" \"shape\":[]}"), 0, "expected ',' or '}', found '\"'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1 2]}"), 0, "tensor 'x': shape: invalid JSON at byte 30 of the header: expected ',' or ']', found '2'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1,]}"), 0, "shape: invalid JSON at byte 30 of the header: expected a non-negative integer, found ']'");
  BAD("{\"x\":{\"dtype\":\"U8\",\"shape\":[1", 0, "expected ',' or ']', found the end");
  BAD("{\"x", 0, "unterminated string at byte 1");
  BAD("{\"x\\", 0, "unterminated string");
  BAD("{\"x\\q\":1}", 0, "invalid escape at byte 3");
  BAD("{\"x\\u12g4\":1}", 0, "invalid \\u escape at byte 3");
  BAD("{\"x\\u12\":1}", 0, "invalid \\u escape");
  BAD("{\"x\\ud800\":1}", 0, "unpaired surrogate \\ud800");
  BAD("{\"x\\ud800\\u0041\":1}", 0, "unpaired surrogate \\ud800");
  BAD("{\"x\\udc00\\ud800\":1}", 0, "unpaired surrogate \\udc00");
  BAD("{\"x\ty\":1}", 0, "unescaped control character in a string at byte 3");
  BAD("{\"x\xff\":1}", 0, "invalid UTF-8 in a string at byte 3");
  BAD("{\"x\xc0\xaf\":1}", 0, "invalid UTF-8"); /* overlong '/' */
  BAD("{\"x\xed\xa0\x80\":1}", 0, "invalid UTF-8"); /* encoded surrogate */
  BAD("{\"x\xf4\x90\x80\x80\":1}", 0, "invalid UTF-8"); /* above U+10FFFF */
  BAD("{\"x\xe2\x82\":1}", 0, "invalid UTF-8"); /* cut sequence */
  BAD("{\"x\":1\0}", 0, "tensor 'x': expected an object");
}

static void test_deep_nesting(void **state) {
  (void)state;
  enum { DEPTH = 1 << 20 };
  char *h = malloc(DEPTH + 64);
  strcpy(h, "{\"x\":{\"shape\":");
  size_t n = strlen(h);
  memset(h + n, '[', DEPTH);
  parse_err(h, n + DEPTH, 0, "tensor 'x': shape: invalid JSON at byte 15 of the header: expected a non-negative integer, found '['");
  memset(h, '{', DEPTH);
  parse_err(h, DEPTH, 0, "expected a string key, found '{'");
  memset(h, '[', DEPTH);
  parse_err(h, DEPTH, 0, "not a JSON object");
  strcpy(h, "{\"x\":");
  memset(h + 5, '[', DEPTH);
  parse_err(h, 5 + DEPTH, 0, "tensor 'x': expected an object");
  strcpy(h, "{\"__metadata__\":{\"k\":");
  memset(h + 21, '{', DEPTH);
  parse_err(h, 21 + DEPTH, 0, "__metadata__: the value of 'k' must be a string");
  free(h);
}

static void test_numbers(void **state) {
  (void)state;
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}"), 0, "tensor 'x': shape: -1 is negative");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,0]}"), 0, "tensor 'x': shape: 1.5 is not an integer");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[2.0],\"data_offsets\":[0,0]}"), 0, "shape: 2.0 is not an integer");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1e3],\"data_offsets\":[0,0]}"), 0, "shape: 1e3 is not an integer");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[01],\"data_offsets\":[0,0]}"), 0, "shape: 01 has a leading zero");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[+1],\"data_offsets\":[0,0]}"), 0, "expected a non-negative integer, found '+'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[\"1\"],\"data_offsets\":[0,0]}"), 0, "expected a non-negative integer, found '\"'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[true],\"data_offsets\":[0,0]}"), 0, "found 't'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[9223372036854775808],\"data_offsets\":[0,0]}"), 0,
      "shape: 9223372036854775808 is too large");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,18446744073709551616]}"), 0,
      "data_offsets: 18446744073709551616 is too large");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,-1]}"), 0, "data_offsets: -1 is negative");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.0]}"), 0, "data_offsets: 1.0 is not an integer");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,123456789012345678901234567890123456789012345]}"), 0,
      "data_offsets: 1234567890123456789012345678901234567890... is too large");
  rt_st_free(OK(T1("{\"dtype\":\"U8\",\"shape\":[0, 9223372036854775807],\"data_offsets\":[0,0]}"), 0));
}

static void test_dtype_errors(void **state) {
  (void)state;
  BAD(T1("{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[0,2]}"), 2,
      "tensor 'x': unknown dtype 'U16' (kbc reads F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
  BAD(T1("{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4, "unknown dtype 'f32'");
  BAD(T1("{\"dtype\":\"F32\\u0000\",\"shape\":[1],\"data_offsets\":[0,4]}"), 4, "unknown dtype 'F32'");
  BAD(T1("{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]}"), 4, "tensor 'x': dtype must be a string");
  BAD(T1("{\"dtype\":[\"F32\"],\"shape\":[1],\"data_offsets\":[0,4]}"), 4, "dtype must be a string");
}

static void test_shape_errors(void **state) {
  (void)state;
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}"), 1,
      "tensor 'x': shape has more than 8 dimensions");
  rt_st_free(OK(T1("{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}"), 1));
  BAD(T1("{\"dtype\":\"U8\",\"shape\":5,\"data_offsets\":[0,1]}"), 1, "tensor 'x': shape must be an array of integers");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":{},\"data_offsets\":[0,1]}"), 1, "shape must be an array");
  BAD(T1("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}"), 0,
      "tensor 'x': shape [4294967296, 4294967296] of F32 is too large (its byte size overflows)");
  BAD(T1("{\"dtype\":\"F64\",\"shape\":[1152921504606846976],\"data_offsets\":[0,0]}"), 0,
      "shape [1152921504606846976] of F64 is too large");
  BAD(T1("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[0,0]}"), 0,
      "is too large");
}

static void test_offsets_mismatch(void **state) {
  (void)state;
  size_t len;
  rt_st_file *f;
  static const char h[] = T1("{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}");
  unsigned char *b = image(h, sizeof h - 1, 12, &len);
  char path[256];
  snprintf(path, sizeof path, "%s/IN.safetensors", dir);
  write_whole(path, b, len);
  free(b);
  assert_int_equal(rt_st_load(path, &f, &st_err), -1);
  char want[512];
  snprintf(want, sizeof want,
           "%s: tensor 'x': data_offsets [0, 12] do not match shape [2, 3] of F32 (24 bytes)", path);
  assert_string_equal(err, want);
  assert_null(f);
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,0]}"), 0,
      "data_offsets [0, 0] do not match shape [] of U8 (1 bytes)");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,1]}"), 1,
      "data_offsets [0, 1] do not match shape [0] of U8 (0 bytes)");
}

static void test_offsets_shape(void **state) {
  (void)state;
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}"), 1, "tensor 'x': data_offsets must have 2 entries [begin, end], not 1");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[]}"), 1, "must have 2 entries [begin, end], not 0");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}"), 1, "must have 2 entries [begin, end], not more");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":{}}"), 1, "data_offsets must be an array [begin, end]");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,1]}"), 2, "tensor 'x': data_offsets [2, 1] are reversed");
}

static void test_offsets_outside(void **state) {
  (void)state;
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}"), 3,
      "tensor 'x': data_offsets [0, 4] exceed the data buffer (3 bytes)");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[18446744073709551614,18446744073709551615]}"), 3,
      "exceed the data buffer (3 bytes)");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,4]}"), 3, "data_offsets [4, 4] exceed the data buffer");
  rt_st_free(OK(T1("{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}"), 0));
}

static void test_overlap_gap_trailing(void **state) {
  (void)state;
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}",
      6, "tensor 'b': data_offsets [2, 6] overlap tensor 'a' [0, 4]");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
      4, "tensor 'b': data_offsets [0, 4] overlap tensor 'a' [0, 4]");
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[5,9]}}",
      9, "tensor 'b': data_offsets [5, 9] leave a gap: bytes [4, 5) of the data buffer belong to no tensor");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}"), 6, "leave a gap: bytes [0, 2)");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}"), 7,
      "3 trailing bytes: the data buffer is 7 bytes but the tensors end at 4");
  BAD("{}", 1, "1 trailing bytes");
  /* zero-sized tensors may sit anywhere inside the buffer */
  rt_st_free(OK("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                "\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[2,2]}}",
                4));
}

static void test_names(void **state) {
  (void)state;
  BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
      2, "duplicate tensor name 'a'");
  BAD("{\"a\\u0041\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
      "\"aA\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
      2, "duplicate tensor name 'aA'");
  BAD("{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "a tensor has an empty name");
  BAD("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
      "tensor 'a': the name contains a NUL character");
  BAD("{\"bad\\nname\\u0001\":5}", 0, "tensor 'bad\\x0aname\\x01': expected an object");
}

static void test_fields(void **state) {
  (void)state;
  BAD(T1("{\"shape\":[1],\"data_offsets\":[0,1]}"), 1, "tensor 'x': missing field 'dtype'");
  BAD(T1("{\"dtype\":\"U8\",\"data_offsets\":[0,1]}"), 1, "tensor 'x': missing field 'shape'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1]}"), 1, "tensor 'x': missing field 'data_offsets'");
  BAD(T1("{}"), 0, "missing field 'dtype'");
  BAD(T1("{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"strides\":[1]}"), 1,
      "tensor 'x': unknown field 'strides'");
  BAD(T1("{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}"), 1,
      "tensor 'x': duplicate field 'dtype'");
  BAD(T1("5"), 0, "tensor 'x': expected an object {\"dtype\", \"shape\", \"data_offsets\"}");
  BAD(T1("null"), 0, "tensor 'x': expected an object");
}

static void test_metadata_errors(void **state) {
  (void)state;
  BAD("{\"__metadata__\":[]}", 0, "__metadata__ must be an object of strings");
  BAD("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__: the value of 'k' must be a string");
  BAD("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, "duplicate __metadata__ key 'k'");
  BAD("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate \"__metadata__\" entry");
  BAD("{\"__metadata__\":{\"k\":\"a\\u0000\"}}", 0, "__metadata__: an entry contains a NUL character");
  BAD("{\"__metadata__\":{\"k\":\"a\\x\"}}", 0, "__metadata__: invalid escape at byte 23");
  BAD("{\"__metadata__\":{\"k\" \"a\"}}", 0, "__metadata__: invalid JSON at byte 21 of the header: expected ':'");
  rt_st_file *f = OK("{\"__metadata__\":{}}", 0);
  assert_int_equal(rt_st_meta_count(f), 0);
  rt_st_free(f);
}

static void test_message_bounds(void **state) {
  (void)state;
  char name[2000], hdr[2100];
  size_t len;
  rt_st_file *f;
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = 0;
  snprintf(hdr, sizeof hdr, "{\"%s\":5}", name);
  parse_err(hdr, strlen(hdr), 0, "tensor 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...': expected");
  assert_true(strlen(err) < 200);
  unsigned char *b = image(hdr, strlen(hdr), 0, &len);
  assert_int_equal(st_err.kind, RT_ERR_FORMAT);
  assert_int_equal(rt_st_parse(b, len, &f, NULL), -1); /* no error wanted: fine */
  free(b);
}

/* ---- files on disk ----------------------------------------------------- */

static void test_load_errors(void **state) {
  (void)state;
  rt_st_file *f;
  char path[256], want[400];
  snprintf(path, sizeof path, "%s/missing.safetensors", dir);
  assert_int_equal(rt_st_load(path, &f, &st_err), -1);
  snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
  assert_string_equal(err, want);
  assert_int_equal(rt_st_load(dir, &f, &st_err), -1);
  assert_non_null(strstr(err, ": is a directory"));
  snprintf(path, sizeof path, "%s/fifo", dir);
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(rt_st_load(path, &f, &st_err), -1); /* must not block */
  assert_non_null(strstr(err, "fifo: is not a regular file"));
  unlink(path);
  snprintf(path, sizeof path, "%s/trunc.safetensors", dir);
  write_whole(path, ref_attn, sizeof ref_attn - 5);
  assert_int_equal(rt_st_load(path, &f, &st_err), -1);
  snprintf(want, sizeof want, "%s: tensor 'attn.0': data_offsets [0, 24] exceed the data buffer (20 bytes)", path);
  assert_string_equal(err, want);
  write_whole(path, "", 0);
  assert_int_equal(rt_st_load(path, &f, &st_err), -1);
  assert_non_null(strstr(err, "trunc.safetensors: file is 0 bytes, too short"));
}

static void test_save_into_missing_dir(void **state) {
  (void)state;
  char path[256];
  float x = 1;
  int64_t one[1] = {1};
  rt_st_tensor t = tensor("x", RT_DT_F32, 1, one, &x);
  snprintf(path, sizeof path, "%s/no/such/dir/out.safetensors", dir);
  assert_int_equal(rt_st_save(path, &t, 1, &st_err), -1);
  assert_non_null(strstr(err, "out.safetensors: cannot create a temporary file in"));
  assert_non_null(strstr(err, "No such file or directory"));
  assert_int_equal(st_err.kind, RT_ERR_IO);
  struct stat st;
  assert_int_equal(stat(path, &st), -1);
  snprintf(path, sizeof path, "%s/no", dir);
  assert_int_equal(stat(path, &st), -1);
}

static void save_one(const char *path, const char *name, float v) {
  int64_t one[1] = {1};
  rt_st_tensor t = tensor(name, RT_DT_F32, 1, one, &v);
  if (rt_st_save(path, &t, 1, &st_err) != 0) fail_msg("save: %s", err);
}

static void test_save_replaces(void **state) {
  (void)state;
  const char *d = subdir("replace");
  char path[300];
  rt_st_file *f;
  snprintf(path, sizeof path, "%s/out.safetensors", d);
  save_one(path, "old", 1);
  save_one(path, "new", 2);
  assert_int_equal(rt_st_load(path, &f, &st_err), 0);
  assert_int_equal(rt_st_count(f), 1);
  assert_true(*(float *)rt_st_find(f, "new")->data == 2);
  rt_st_free(f);
  assert_int_equal(count_entries(d), 1); /* no temporaries left */
  /* permissions follow the umask like any created file, not mkstemp's 0600 */
  mode_t mask = umask(022);
  umask(mask);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0666 & ~mask);
}

/* A failing save must leave the old file byte-identical and no temporaries. */
static void expect_failed_save(const char *path, const char *d, const rt_st_tensor *ts, int n,
                               const char *phrase) {
  size_t before_len, after_len;
  unsigned char *before = read_whole(path, &before_len);
  assert_int_equal(rt_st_save(path, ts, n, &st_err), -1);
  if (!strstr(err, phrase) || strncmp(err, path, strlen(path)) != 0)
    fail_msg("message: %s\nwanted: %s", err, phrase);
  unsigned char *after = read_whole(path, &after_len);
  assert_int_equal(before_len, after_len);
  assert_memory_equal(before, after, before_len);
  assert_int_equal(count_entries(d), 1);
  free(before), free(after);
}

static void test_failed_save_keeps_file(void **state) {
  (void)state;
  const char *d = subdir("keep");
  char path[300];
  float v[4] = {1, 2, 3, 4};
  int64_t s1[1] = {1}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, neg[2] = {2, -2},
          huge[2] = {INT64_MAX, 2};
  snprintf(path, sizeof path, "%s/out.safetensors", d);
  save_one(path, "keep", 42);
  rt_st_tensor dup[2] = {tensor("a", RT_DT_F32, 1, s1, v), tensor("a", RT_DT_F32, 1, s1, v + 1)};
  expect_failed_save(path, d, dup, 2, ": duplicate tensor name 'a'");
  rt_st_tensor t = tensor("", RT_DT_F32, 1, s1, v);
  expect_failed_save(path, d, &t, 1, ": tensor 0 has an empty name");
  t.name = NULL;
  expect_failed_save(path, d, &t, 1, ": tensor 0 has no name");
  t.name = "bad\xff";
  expect_failed_save(path, d, &t, 1, ": tensor 'bad\\xff': the name is not valid UTF-8");
  t.name = "__metadata__";
  expect_failed_save(path, d, &t, 1, "the name is reserved for the metadata");
  t = tensor("x", RT_DT_F32, 1, s1, v);
  t.dtype = (rt_dtype)42;
  expect_failed_save(path, d, &t, 1, "tensor 'x': invalid dtype 42");
  t = tensor("x", RT_DT_F32, 1, s1, v);
  t.rank = 9;
  memcpy(t.shape, s9, sizeof t.shape);
  expect_failed_save(path, d, &t, 1, "tensor 'x': rank 9 is not in 0..8");
  t.rank = -1;
  expect_failed_save(path, d, &t, 1, "rank -1 is not in 0..8");
  t = tensor("x", RT_DT_F32, 2, neg, v);
  expect_failed_save(path, d, &t, 1, "shape [2, -2] of F32 has a negative extent or is too large");
  t = tensor("x", RT_DT_F32, 2, huge, v);
  expect_failed_save(path, d, &t, 1, "has a negative extent or is too large");
  t = tensor("x", RT_DT_F32, 1, s1, v);
  t.nbytes = 8;
  expect_failed_save(path, d, &t, 1, "tensor 'x': nbytes 8 does not match shape [1] of F32 (4 bytes)");
  t.nbytes = 4, t.data = NULL;
  expect_failed_save(path, d, &t, 1, "tensor 'x': data is NULL");
  expect_failed_save(path, d, NULL, 1, "invalid arguments (1 tensors, 0 metadata entries)");
  expect_failed_save(path, d, &t, -1, "invalid arguments");
  /* a save that fails at the rename: the path is now a directory */
  char dpath[300];
  snprintf(dpath, sizeof dpath, "%s/sub", d);
  assert_int_equal(mkdir(dpath, 0777), 0);
  t = tensor("x", RT_DT_F32, 1, s1, v);
  assert_int_equal(rt_st_save(dpath, &t, 1, &st_err), -1);
  assert_non_null(strstr(err, "cannot replace it with the temporary file"));
  assert_int_equal(count_entries(d), 2);
  assert_int_equal(count_entries(dpath), 0);
  snprintf(dpath, sizeof dpath, "%s/", d);
  assert_int_equal(rt_st_save(dpath, &t, 1, &st_err), -1);
  assert_non_null(strstr(err, "the path names a directory"));
}

static void test_save_metadata_errors(void **state) {
  (void)state;
  void *out;
  size_t len;
  const char *k2[2] = {"k", "k"}, *v2[2] = {"a", "b"}, *kn[1] = {NULL}, *bad[1] = {"\xc3"};
  assert_int_equal(rt_st_encode(NULL, 0, k2, v2, 2, &out, &len, &st_err), -1);
  assert_string_equal(err, "<memory>: duplicate __metadata__ key 'k'");
  assert_null(out);
  assert_int_equal(rt_st_encode(NULL, 0, kn, v2, 1, &out, &len, &st_err), -1);
  assert_non_null(strstr(err, "__metadata__ entry 0 has a NULL key or value"));
  assert_int_equal(rt_st_encode(NULL, 0, bad, v2, 1, &out, &len, &st_err), -1);
  assert_non_null(strstr(err, "__metadata__ entry 0 is not valid UTF-8"));
  assert_int_equal(rt_st_encode(NULL, 0, NULL, NULL, 1, &out, &len, &st_err), -1);
  assert_non_null(strstr(err, "invalid arguments"));
  assert_int_equal(rt_st_save(NULL, NULL, 0, &st_err), -1);
  assert_string_equal(err, "(null): no path");
}

static void test_encode_parse_identity(void **state) {
  (void)state;
  rt_st_file *f;
  void *out;
  size_t len;
  assert_int_equal(rt_st_parse(ref_padded, sizeof ref_padded - 1, &f, &st_err), 0);
  rt_st_tensor ts[1] = {*rt_st_get(f, 0)};
  assert_int_equal(rt_st_encode(ts, 1, NULL, NULL, 0, &out, &len, &st_err), 0);
  assert_int_equal(len, sizeof ref_padded - 1);
  assert_memory_equal(out, ref_padded, len);
  free(out);
  rt_st_free(f);
}

/* ---- conversions ------------------------------------------------------- */

static void test_to_f64(void **state) {
  (void)state;
  static const uint16_t f16[] = {0x3c00, 0xc000, 0x0001, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x8000, 0x7e00, 0x3555};
  static const double f16_want[] = {1, -2, 5.9604644775390625e-8, 6.103515625e-5, 65504, INFINITY, -INFINITY, -0.0, NAN, 0.333251953125};
  static const uint16_t bf16[] = {0x3f80, 0xc040, 0x7f80, 0x0001};
  static const double bf16_want[] = {1, -3, INFINITY, 9.183549615799121e-41};
  double out[10];
  int64_t s[1] = {10};
  rt_st_tensor t = tensor("h", RT_DT_F16, 1, s, (void *)f16);
  assert_int_equal(rt_st_to_f64(&t, out), 0);
  for (int i = 0; i < 10; i++) {
    if (isnan(f16_want[i])) assert_true(isnan(out[i]));
    else assert_true(out[i] == f16_want[i] && signbit(out[i]) == signbit(f16_want[i]));
  }
  s[0] = 4;
  t = tensor("b", RT_DT_BF16, 1, s, (void *)bf16);
  assert_int_equal(rt_st_to_f64(&t, out), 0);
  for (int i = 0; i < 4; i++) assert_true(out[i] == bf16_want[i]);
  int64_t i64[2] = {-5, INT64_C(1) << 53};
  int32_t i32[2] = {-7, INT32_MAX};
  int16_t i16[2] = {-300, 300};
  int8_t i8[2] = {-128, 127};
  uint8_t u8[2] = {0, 255}, b[2] = {0, 7};
  float f32[2] = {0.5f, -1e30f};
  double f64[2] = {1e300, -0.25};
  void *data[] = {f64, f32, NULL, NULL, i64, i32, i16, i8, u8, b};
  double want[][2] = {{1e300, -0.25}, {0.5, (double)-1e30f}, {0}, {0}, {-5, 9007199254740992.0},
                      {-7, INT32_MAX}, {-300, 300}, {-128, 127}, {0, 255}, {0, 1}};
  s[0] = 2;
  for (int d = 0; d < 10; d++) {
    if (!data[d]) continue;
    t = tensor("x", (rt_dtype)d, 1, s, data[d]);
    assert_int_equal(rt_st_to_f64(&t, out), 0);
    assert_true(out[0] == want[d][0] && out[1] == want[d][1]);
  }
  t.nbytes = 3;
  t.dtype = RT_DT_I16;
  assert_int_equal(rt_st_to_f64(&t, out), -1);
  t.dtype = (rt_dtype)77;
  assert_int_equal(rt_st_to_f64(&t, out), -1);
}

static void test_from_f64(void **state) {
  (void)state;
  double in[3] = {0.1, -2, 1e40};
  float f[3];
  double d[3];
  int32_t i[3];
  int64_t s[1] = {3};
  rt_st_tensor t = tensor("f", RT_DT_F32, 1, s, f);
  assert_int_equal(rt_st_from_f64(&t, in), 0);
  assert_true(f[0] == 0.1f && f[1] == -2 && isinf(f[2]));
  t = tensor("d", RT_DT_F64, 1, s, d);
  assert_int_equal(rt_st_from_f64(&t, in), 0);
  assert_memory_equal(d, in, sizeof d);
  t = tensor("i", RT_DT_I32, 1, s, i);
  assert_int_equal(rt_st_from_f64(&t, in), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_table),
      cmocka_unit_test(test_round_trip_all_dtypes),
      cmocka_unit_test(test_round_trip_scalar_and_empty),
      cmocka_unit_test(test_round_trip_many),
      cmocka_unit_test(test_round_trip_escaped_names),
      cmocka_unit_test(test_round_trip_metadata),
      cmocka_unit_test(test_reads_reference_layout),
      cmocka_unit_test(test_writes_reference_layout),
      cmocka_unit_test(test_whitespace_and_padding),
      cmocka_unit_test(test_order_is_data_order),
      cmocka_unit_test(test_escapes_decoded),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_header_too_large),
      cmocka_unit_test(test_not_an_object),
      cmocka_unit_test(test_invalid_json),
      cmocka_unit_test(test_deep_nesting),
      cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_dtype_errors),
      cmocka_unit_test(test_shape_errors),
      cmocka_unit_test(test_offsets_mismatch),
      cmocka_unit_test(test_offsets_shape),
      cmocka_unit_test(test_offsets_outside),
      cmocka_unit_test(test_overlap_gap_trailing),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_fields),
      cmocka_unit_test(test_metadata_errors),
      cmocka_unit_test(test_message_bounds),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_save_into_missing_dir),
      cmocka_unit_test(test_save_replaces),
      cmocka_unit_test(test_failed_save_keeps_file),
      cmocka_unit_test(test_save_metadata_errors),
      cmocka_unit_test(test_encode_parse_identity),
      cmocka_unit_test(test_to_f64),
      cmocka_unit_test(test_from_f64),
  };
  return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
