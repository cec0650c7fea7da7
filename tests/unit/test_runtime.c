/* test_runtime.c — the runtime layer without a GPU: NVRTC compilation for
 * every kbc target with register/spill reports, compile errors, the
 * on-disk cache (hits, keys, corrupt entries, bypass, unusable directory),
 * dumps, the forked-child compile mode, and the no-driver error path.
 *
 * Hermetic: KBC_CACHE_DIR and every other file live in a fresh mkdtemp
 * directory under /tmp, removed at the end.  Tests that need NVRTC skip
 * (visibly, through cmocka) when it cannot be loaded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache.h"
#include "runtime/cuda_api.h"
#include "runtime/device.h"
#include "runtime/nvrtc.h"

#if defined(__SANITIZE_ADDRESS__)
/* Where a real driver is present, it needs the shadow gap and leaks by design. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "protect_shadow_gap=0:detect_leaks=0"; }
#endif

static char dir[64];

static const char VADD[] =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n";

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

static int setup(void **state) {
  (void)state;
  strcpy(dir, "/tmp/kbc_test_rt_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  char cache[128];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  setenv("KBC_CACHE_DIR", cache, 1);
  unsetenv("KBC_ALWAYS_COMPILE");
  unsetenv("KBC_DUMP_DIR");
  unsetenv("KBC_DEBUG");
  unsetenv("KBC_NVRTC_ISOLATE");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  remove_tree(dir);
  return 0;
}

/* A fresh cache directory for one test, set as KBC_CACHE_DIR. */
static const char *fresh_cache(const char *name) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  remove_tree(path);
  setenv("KBC_CACHE_DIR", path, 1);
  return path;
}

static void need_nvrtc(void) {
  if (rt_nvrtc_available(NULL) < 0) {
    rt_err err = {0};
    rt_nvrtc_available(&err);
    print_message("NVRTC not available, skipping: %s\n", rt_err_msg(&err));
    rt_err_free(&err);
    skip();
  }
}

static rt_compile_req vadd_req(const char *arch) {
  rt_compile_req r = {VADD, "vadd", arch, NULL, 0, "test-1", 0};
  return r;
}

/* rt_compile that must succeed. */
static void compile_ok(const rt_compile_req *req, rt_compiled *out) {
  rt_err err = {0};
  if (rt_compile(req, out, &err) != 0) fail_msg("rt_compile failed: %s", rt_err_msg(&err));
  rt_err_free(&err);
  assert_non_null(out->cubin.data);
  assert_true(out->cubin.len > 0);
}

static void entry_path(const char *cache, const char *key, kbc_buf *path) {
  rt_cache_entry_path(cache, key, path);
}

static long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* ---- NVRTC ------------------------------------------------------------------ */

static void test_compile_every_target(void **state) {
  (void)state;
  need_nvrtc();
  for (int i = 0; rt_kbc_archs[i]; i++) {
    rt_blob cubin = {0}, ptx = {0};
    rt_resources res = {0};
    kbc_buf log = {0};
    rt_err err = {0};
    const char *arch = rt_kbc_archs[i];
    if (rt_nvrtc_compile(VADD, "vadd", arch, NULL, 0, &cubin, &ptx, &res, &log, &err) != 0)
      fail_msg("%s: %s", arch, rt_err_msg(&err));
    assert_true(cubin.len > 64);
    assert_memory_equal(cubin.data, "\177ELF", 4);
    assert_non_null(strstr((const char *)ptx.data, ".entry vadd"));
    assert_non_null(strstr(kbc_buf_str(&log), "ptxas info"));
    assert_int_equal(res.n, 1);
    const rt_kernel_resources *k = rt_resources_find(&res, "vadd");
    assert_non_null(k);
    assert_true(k->registers > 0 && k->registers < 64);
    assert_int_equal(k->spill_stores, 0);
    assert_int_equal(k->spill_loads, 0);
    assert_int_equal(k->stack_frame, 0);
    print_message("%-7s vadd: %d registers, cubin %zu bytes, PTX %zu bytes\n", arch, k->registers,
                  cubin.len, ptx.len);
    rt_blob_free(&cubin), rt_blob_free(&ptx), rt_resources_free(&res);
    kbc_buf_free(&log), rt_err_free(&err);
  }
}

static void test_version_and_archs(void **state) {
  (void)state;
  need_nvrtc();
  int major = 0, minor = -1, archs[128];
  assert_int_equal(rt_nvrtc_version(&major, &minor, NULL), 0);
  assert_true(major >= 12 && minor >= 0);
  int n = rt_nvrtc_supported_archs(archs, 128, NULL);
  assert_true(n > 0);
  int has90 = 0;
  for (int i = 0; i < n && i < 128; i++) has90 |= archs[i] == 90;
  assert_true(has90);
  char a[16];
  rt_arch_of_cc(9, 0, a, sizeof a);
  assert_string_equal(a, "sm_90a");
  rt_arch_of_cc(8, 6, a, sizeof a);
  assert_string_equal(a, "sm_86");
}

static void test_syntax_error(void **state) {
  (void)state;
  need_nvrtc();
  static const char bad[] = "extern \"C\" __global__ void k(float *o) {\n  o[0] = undefined_x;\n}\n";
  for (int isolate = 0; isolate < 2; isolate++) {
    if (isolate) setenv("KBC_NVRTC_ISOLATE", "1", 1);
    rt_blob cubin = {0};
    rt_err err = {0};
    assert_int_equal(rt_nvrtc_compile(bad, "broken", "sm_90", NULL, 0, &cubin, NULL, NULL, NULL, &err), -1);
    const char *m = rt_err_msg(&err);
    if (!strstr(m, "NVRTC failed to compile broken for sm_90: NVRTC_ERROR_COMPILATION") ||
        !strstr(m, "broken.cu(2): error: identifier \"undefined_x\" is undefined"))
      fail_msg("unexpected message: %s", m);
    assert_int_equal(err.kind, RT_ERR_CUDA); /* through the isolated child's reply too */
    assert_null(cubin.data);
    rt_err_free(&err);
    /* the same through the cache layer: nothing stored */
    rt_compile_req req = {bad, "broken", "sm_90", NULL, 0, "test-1", 0};
    rt_compiled out;
    assert_int_equal(rt_compile(&req, &out, &err), -1);
    assert_non_null(strstr(rt_err_msg(&err), "undefined_x"));
    assert_null(out.cubin.data);
    rt_err_free(&err);
  }
  unsetenv("KBC_NVRTC_ISOLATE");
}

static void test_invalid_arch(void **state) {
  (void)state;
  need_nvrtc();
  const char *bad[] = {"sm_91", "sm_9", "compute_90", "auto", "banana", "sm_90b", ""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    rt_blob cubin = {0};
    rt_err err = {0};
    assert_int_equal(rt_nvrtc_compile(VADD, "vadd", bad[i], NULL, 0, &cubin, NULL, NULL, NULL, &err), -1);
    char want[64];
    snprintf(want, sizeof want, "unknown target '%s'", bad[i]);
    if (!strstr(rt_err_msg(&err), want) || !strstr(rt_err_msg(&err), "sm_90a"))
      fail_msg("for %s: %s", bad[i], rt_err_msg(&err));
    assert_int_equal(err.kind, RT_ERR_ARGUMENT);
    rt_err_free(&err);
  }
  /* extra options: a bad one is NVRTC's error, reported */
  const char *opt[] = {"--no-such-option"};
  rt_blob cubin = {0};
  rt_err err = {0};
  assert_int_equal(rt_nvrtc_compile(VADD, "vadd", "sm_80", opt, 1, &cubin, NULL, NULL, NULL, &err), -1);
  assert_non_null(strstr(rt_err_msg(&err), "NVRTC_ERROR_INVALID_OPTION"));
  rt_err_free(&err);
}

static void test_options(void **state) {
  (void)state;
  kbc_buf o = {0};
  const char *extra[] = {"-DTILE=64"};
  assert_int_equal(rt_nvrtc_options("sm_90a", extra, 1, &o, NULL), 0);
  assert_string_equal(kbc_buf_str(&o),
                      "--gpu-architecture=sm_90a\n-std=c++17\n-default-device\n--ptxas-options=-v\n-DTILE=64\n");
  assert_null(strstr(kbc_buf_str(&o), "fast_math"));
  kbc_buf_free(&o);
  setenv("KBC_DEBUG", "1", 1);
  assert_int_equal(rt_nvrtc_options("sm_80", NULL, 0, &o, NULL), 0);
  assert_non_null(strstr(kbc_buf_str(&o), "-lineinfo\n"));
  unsetenv("KBC_DEBUG");
  kbc_buf_free(&o);
  const char *nl[] = {"-DA=1\n-DB=2"};
  rt_err err = {0};
  assert_int_equal(rt_nvrtc_options("sm_80", nl, 1, &o, &err), -1);
  assert_non_null(strstr(rt_err_msg(&err), "newline"));
  kbc_buf_free(&o), rt_err_free(&err);
}

static void test_resources_parse(void **state) {
  (void)state;
  static const char log[] =
      "ptxas warning : For profile sm_90a adjusting per thread register count of 16 to lower bound of 24\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z2tkILi3EEvPf' for 'sm_90a'\n"
      "ptxas info    : Function properties for _Z2tkILi3EEvPf\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n"
      "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     64 bytes stack frame, 9 bytes spill stores, 9 bytes spill loads\n"
      "ptxas info    : Function properties for big\n"
      "ptxas         .     12496 bytes stack frame, 12520 bytes spill stores, 27252 bytes spill loads\n"
      "ptxas info    : Used 24 registers, used 1 barriers, 12496 bytes cumulative stack size, 4096 bytes smem\n"
      "ptxas info    : Compile time = 3336.972 ms\n";
  rt_resources r = {0};
  rt_resources_parse(log, &r);
  assert_int_equal(r.n, 2);
  const rt_kernel_resources *a = rt_resources_find(&r, "_Z2tkILi3EEvPf"), *b = rt_resources_find(&r, "big");
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(a->registers, 8);
  assert_int_equal(a->barriers, 0);
  assert_int_equal(a->smem, 0);
  assert_int_equal(b->registers, 24);
  assert_int_equal(b->barriers, 1);
  assert_int_equal(b->stack_frame, 12496);
  assert_int_equal(b->spill_stores, 12520);
  assert_int_equal(b->spill_loads, 27252);
  assert_int_equal(b->smem, 4096);
  kbc_buf text = {0}, human = {0};
  rt_resources_serialize(&r, &text);
  rt_resources back = {0};
  assert_int_equal(rt_resources_deserialize(text.data, text.len, &back), 0);
  assert_int_equal(back.n, 2);
  assert_string_equal(back.k[1].name, "big");
  assert_int_equal(back.k[1].spill_loads, 27252);
  assert_int_equal(back.k[1].smem, 4096);
  assert_int_equal(rt_resources_deserialize("x\t1\t2\n", 6, &back), -1);
  assert_int_equal(back.n, 0);
  rt_resources_format(&r, &human);
  assert_non_null(strstr(human.data, "big: 24 registers, 12520 bytes spill stores, 27252 bytes spill loads"));
  rt_resources_free(&r), rt_resources_free(&back);
  kbc_buf_free(&text), kbc_buf_free(&human);
}

/* A kernel that spills under a register cap: the report must say so. */
static void test_spills_reported(void **state) {
  (void)state;
  need_nvrtc();
  static const char src[] =
      "extern \"C\" __global__ void heavy(float *o) {\n"
      "  float v[48];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 48; i++) v[i] = o[i * blockDim.x + threadIdx.x];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 48; i++) o[i * blockDim.x + threadIdx.x + 4096] = v[i] * v[47 - i];\n"
      "}\n";
  const char *opt[] = {"--maxrregcount=24"};
  rt_blob cubin = {0};
  rt_resources res = {0};
  rt_err err = {0};
  if (rt_nvrtc_compile(src, "heavy", "sm_80", opt, 1, &cubin, NULL, &res, NULL, &err) != 0)
    fail_msg("%s", rt_err_msg(&err));
  const rt_kernel_resources *k = rt_resources_find(&res, "heavy");
  assert_non_null(k);
  assert_true(k->registers <= 24);
  assert_true(k->spill_stores > 0 && k->spill_loads > 0 && k->stack_frame > 0);
  rt_blob_free(&cubin), rt_resources_free(&res);
  rt_err_free(&err);
}

/* ---- hashing and keys -------------------------------------------------------- */

static void test_sha256(void **state) {
  (void)state;
  char hex[65];
  rt_sha256_hex("", 0, hex);
  assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  rt_sha256_hex("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  static const char m[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  rt_sha256_hex(m, sizeof m - 1, hex);
  assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  char *million = malloc(1000000);
  memset(million, 'a', 1000000);
  rt_sha256_hex(million, 1000000, hex);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(million);
}

static void test_keys(void **state) {
  (void)state;
  need_nvrtc();
  char base[RT_KEY_HEX + 1], k[RT_KEY_HEX + 1], again[RT_KEY_HEX + 1];
  rt_compile_req r = vadd_req("sm_90");
  assert_int_equal(rt_cache_key(&r, base, NULL), 0);
  assert_int_equal((int)strlen(base), RT_KEY_HEX);
  assert_int_equal(rt_cache_key(&r, again, NULL), 0);
  assert_string_equal(base, again);

  rt_compile_req v = r;
  v.src = "extern \"C\" __global__ void vadd(float *c) { c[0] = 1; }\n";
  assert_int_equal(rt_cache_key(&v, k, NULL), 0);
  assert_string_not_equal(base, k);
  v = r, v.arch = "sm_90a";
  assert_int_equal(rt_cache_key(&v, k, NULL), 0);
  assert_string_not_equal(base, k);
  const char *opt[] = {"-DX=1"};
  v = r, v.opts = opt, v.n_opts = 1;
  assert_int_equal(rt_cache_key(&v, k, NULL), 0);
  assert_string_not_equal(base, k);
  v = r, v.kbc_version = "test-2";
  assert_int_equal(rt_cache_key(&v, k, NULL), 0);
  assert_string_not_equal(base, k);
  v = r, v.name = "vadd2";
  assert_int_equal(rt_cache_key(&v, k, NULL), 0);
  assert_string_not_equal(base, k);
  setenv("KBC_DEBUG", "1", 1); /* -lineinfo changes the cubin, so the key */
  assert_int_equal(rt_cache_key(&r, k, NULL), 0);
  unsetenv("KBC_DEBUG");
  assert_string_not_equal(base, k);
}

/* ---- the cache ------------------------------------------------------------------ */

static void test_cache_miss_store_hit(void **state) {
  (void)state;
  need_nvrtc();
  const char *cache = fresh_cache("hit");
  rt_compile_req req = vadd_req("sm_86");
  rt_compiled a, b;
  compile_ok(&req, &a);
  assert_int_equal(a.from_cache, 0);
  assert_true(a.compile_ms > 0);
  assert_non_null(strstr(kbc_buf_str(&a.log), "ptxas info"));
  kbc_buf path = {0};
  entry_path(cache, a.key, &path);
  assert_true(file_size(path.data) > (long)a.cubin.len);
  struct stat st;
  assert_int_equal(stat(cache, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);

  compile_ok(&req, &b);
  assert_int_equal(b.from_cache, 1);
  assert_string_equal(a.key, b.key);
  assert_int_equal(a.cubin.len, b.cubin.len);
  assert_memory_equal(a.cubin.data, b.cubin.data, a.cubin.len);
  assert_int_equal(b.res.n, 1);
  assert_string_equal(b.res.k[0].name, "vadd");
  assert_int_equal(b.res.k[0].registers, a.res.k[0].registers);
  assert_int_equal(b.res.k[0].spill_stores, 0);
  assert_null(b.ptx.data);
  rt_compiled_free(&b);

  /* wanting PTX: the entry without it is a miss, then a hit with PTX */
  req.want_ptx = 1;
  compile_ok(&req, &b);
  assert_int_equal(b.from_cache, 0);
  assert_non_null(b.ptx.data);
  rt_compiled_free(&b);
  compile_ok(&req, &b);
  assert_int_equal(b.from_cache, 1);
  assert_non_null(strstr((const char *)b.ptx.data, ".entry vadd"));

  long entries = 0;
  long long bytes = 0;
  assert_int_equal(rt_cache_stats(cache, &entries, &bytes, NULL), 0);
  assert_int_equal(entries, 1);
  assert_true(bytes > 0);
  assert_int_equal(rt_cache_clear(cache, NULL), 0);
  assert_int_equal(rt_cache_stats(cache, &entries, &bytes, NULL), 0);
  assert_int_equal(entries, 0);
  rt_compiled_free(&a), rt_compiled_free(&b);
  kbc_buf_free(&path);
}

/* Damages the entry of req in one way, then checks that it is detected,
 * rebuilt, and good again afterwards. */
static void damage_and_rebuild(const char *cache, const rt_compile_req *req, long offset,
                               long truncate_to) {
  rt_compiled a, b, c;
  compile_ok(req, &a); /* makes sure the entry exists and is good */
  kbc_buf path = {0};
  entry_path(cache, a.key, &path);
  long size = file_size(path.data);
  assert_true(size > 100);
  if (truncate_to >= 0) {
    assert_int_equal(truncate(path.data, truncate_to), 0);
  } else {
    FILE *f = fopen(path.data, "r+b");
    assert_non_null(f);
    long at = offset >= 0 ? offset : size + offset;
    fseek(f, at, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
  }
  compile_ok(req, &b);
  assert_int_equal(b.from_cache, 0); /* detected */
  assert_int_equal(b.cubin.len, a.cubin.len);
  assert_memory_equal(b.cubin.data, a.cubin.data, a.cubin.len);
  assert_int_equal(file_size(path.data), size); /* rebuilt */
  compile_ok(req, &c);
  assert_int_equal(c.from_cache, 1);
  rt_compiled_free(&a), rt_compiled_free(&b), rt_compiled_free(&c);
  kbc_buf_free(&path);
}

static void test_cache_corrupt_entries(void **state) {
  (void)state;
  need_nvrtc();
  const char *cache = fresh_cache("corrupt");
  rt_compile_req req = vadd_req("sm_89");
  damage_and_rebuild(cache, &req, 0, 500); /* truncated payload */
  damage_and_rebuild(cache, &req, 0, 10);  /* truncated header */
  damage_and_rebuild(cache, &req, 0, 0);   /* empty */
  damage_and_rebuild(cache, &req, -200, -1); /* flipped payload byte (the cubin) */
  damage_and_rebuild(cache, &req, -3, -1);   /* flipped byte in the resource table */
  damage_and_rebuild(cache, &req, 2, -1);    /* magic */
  damage_and_rebuild(cache, &req, 8, -1);    /* format version */
  damage_and_rebuild(cache, &req, 20, -1);   /* key */
  damage_and_rebuild(cache, &req, 50, -1);   /* payload length */
  damage_and_rebuild(cache, &req, 70, -1);   /* checksum */
}

static void test_always_compile(void **state) {
  (void)state;
  need_nvrtc();
  const char *cache = fresh_cache("always");
  rt_compile_req req = vadd_req("sm_80");
  rt_compiled a, b;
  compile_ok(&req, &a);
  kbc_buf path = {0};
  entry_path(cache, a.key, &path);
  assert_int_equal(unlink(path.data), 0);
  setenv("KBC_ALWAYS_COMPILE", "1", 1);
  compile_ok(&req, &b);
  assert_int_equal(b.from_cache, 0);
  assert_true(file_size(path.data) > 0); /* still written */
  rt_compiled_free(&b);
  compile_ok(&req, &b);
  assert_int_equal(b.from_cache, 0); /* never read */
  rt_compiled_free(&b);
  setenv("KBC_ALWAYS_COMPILE", "0", 1);
  compile_ok(&req, &b);
  assert_int_equal(b.from_cache, 1);
  unsetenv("KBC_ALWAYS_COMPILE");
  rt_compiled_free(&a), rt_compiled_free(&b);
  kbc_buf_free(&path);
}

static void test_unusable_cache_dir(void **state) {
  (void)state;
  need_nvrtc();
  char file[128], sub[160];
  snprintf(file, sizeof file, "%s/plainfile", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(sub, sizeof sub, "%s/cache", file); /* under a regular file: never creatable */
  setenv("KBC_CACHE_DIR", sub, 1);
  kbc_buf d = {0};
  rt_err err = {0};
  assert_int_equal(rt_cache_dir(&d, &err), -1);
  assert_non_null(strstr(rt_err_msg(&err), "cannot create directory"));
  assert_int_equal(err.kind, RT_ERR_IO);
  rt_compile_req req = vadd_req("sm_90");
  rt_compiled a, b;
  compile_ok(&req, &a);
  compile_ok(&req, &b);
  assert_int_equal(a.from_cache, 0);
  assert_int_equal(b.from_cache, 0);
  rt_compiled_free(&a), rt_compiled_free(&b);
  kbc_buf_free(&d), rt_err_free(&err);

  /* default locations */
  unsetenv("KBC_CACHE_DIR");
  char xdg[128];
  snprintf(xdg, sizeof xdg, "%s/xdg", dir);
  setenv("XDG_CACHE_HOME", xdg, 1);
  assert_int_equal(rt_cache_dir(&d, NULL), 0);
  snprintf(xdg, sizeof xdg, "%s/xdg/kbc", dir);
  assert_string_equal(kbc_buf_str(&d), xdg);
  unsetenv("XDG_CACHE_HOME");
  kbc_buf_free(&d);
  fresh_cache("after-unusable");
}

static int count_with_suffix(const char *path, const char *prefix, const char *suffix) {
  DIR *d = opendir(path);
  int n = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    size_t len = strlen(de->d_name), sl = strlen(suffix);
    if (!strncmp(de->d_name, prefix, strlen(prefix)) && len > sl && !strcmp(de->d_name + len - sl, suffix))
      n++;
  }
  if (d) closedir(d);
  return n;
}

static void test_dump_dir(void **state) {
  (void)state;
  need_nvrtc();
  fresh_cache("dump-cache");
  char dump[128];
  snprintf(dump, sizeof dump, "%s/dumps/nested", dir);
  setenv("KBC_DUMP_DIR", dump, 1);
  rt_compile_req req = vadd_req("sm_90a");
  req.name = "my kernel/1";
  req.want_ptx = 1;
  rt_compiled a;
  compile_ok(&req, &a);
  char path[256];
  snprintf(path, sizeof path, "%s/my_kernel_1-%s.cu", dump, a.key);
  assert_int_equal(file_size(path), (long)strlen(VADD));
  snprintf(path, sizeof path, "%s/my_kernel_1-%s.cubin", dump, a.key);
  assert_int_equal(file_size(path), (long)a.cubin.len);
  snprintf(path, sizeof path, "%s/my_kernel_1-%s.ptx", dump, a.key);
  assert_int_equal(file_size(path), (long)a.ptx.len);
  rt_compiled_free(&a);

  /* a failing compile still leaves its source for inspection */
  rt_compile_req bad = {"this is not CUDA", "bad", "sm_90", NULL, 0, "test-1", 0};
  rt_err err = {0};
  assert_int_equal(rt_compile(&bad, &a, &err), -1);
  assert_int_equal(count_with_suffix(dump, "bad-", ".cu"), 1);
  assert_int_equal(count_with_suffix(dump, "bad-", ".cubin"), 0);
  unsetenv("KBC_DUMP_DIR");
  rt_err_free(&err);
}

static void test_isolated_compile(void **state) {
  (void)state;
  need_nvrtc();
  fresh_cache("isolate");
  rt_blob c1 = {0}, c2 = {0}, p2 = {0};
  rt_resources r1 = {0}, r2 = {0};
  rt_err err = {0};
  assert_int_equal(rt_nvrtc_compile(VADD, "vadd", "sm_90", NULL, 0, &c1, NULL, &r1, NULL, &err), 0);
  setenv("KBC_NVRTC_ISOLATE", "1", 1);
  if (rt_nvrtc_compile(VADD, "vadd", "sm_90", NULL, 0, &c2, &p2, &r2, NULL, &err) != 0)
    fail_msg("%s", rt_err_msg(&err));
  unsetenv("KBC_NVRTC_ISOLATE");
  assert_int_equal(c1.len, c2.len);
  assert_memory_equal(c1.data, c2.data, c1.len);
  assert_non_null(strstr((const char *)p2.data, ".entry vadd"));
  assert_int_equal(r2.n, 1);
  assert_int_equal(r2.k[0].registers, r1.k[0].registers);
  rt_blob_free(&c1), rt_blob_free(&c2), rt_blob_free(&p2);
  rt_resources_free(&r1), rt_resources_free(&r2);
  rt_err_free(&err);
}

/* ---- the one atomic writer (rt_file.h) ------------------------------------------------ */

/* The entries of d other than "." and "..". */
static int count_entries(const char *d) {
  DIR *h = opendir(d);
  int n = 0;
  for (struct dirent *de; h && (de = readdir(h));) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
  if (h) closedir(h);
  return n;
}

static void test_write_atomic(void **state) {
  (void)state;
  char sub[128], path[160], bad[200];
  snprintf(sub, sizeof sub, "%s/atomic", dir);
  snprintf(path, sizeof path, "%s/out.txt", sub);
  rt_err err = {0};
  assert_int_equal(rt_mkdir_p(sub, 0700, &err), 0);
  rt_span parts[3] = {{"one ", 4}, {NULL, 0}, {"two\n", 4}};
  assert_int_equal(rt_write_parts_atomic(path, parts, 3, &err), 0);
  assert_int_equal(rt_write_file_atomic(path, "replaced\n", 9, &err), 0);
  rt_blob b = {0};
  assert_int_equal(rt_read_file(path, 100, &b, &err), 0);
  assert_int_equal(b.len, 9);
  assert_memory_equal(b.data, "replaced\n", 9);
  rt_blob_free(&b);
  assert_int_equal(count_entries(sub), 1); /* no temporary left */
  /* failures: the kind, a message starting with the path and naming the cause, nothing left */
  snprintf(bad, sizeof bad, "%s/no/such/dir/x", sub);
  assert_int_equal(rt_write_file_atomic(bad, "x", 1, &err), -1);
  assert_int_equal(err.kind, RT_ERR_IO);
  assert_int_equal(strncmp(rt_err_msg(&err), bad, strlen(bad)), 0);
  assert_non_null(strstr(rt_err_msg(&err), "No such file or directory"));
  snprintf(bad, sizeof bad, "%s/", sub);
  assert_int_equal(rt_write_file_atomic(bad, "x", 1, &err), -1);
  assert_int_equal(err.kind, RT_ERR_ARGUMENT);
  assert_int_equal(rt_write_file_atomic(sub, "x", 1, &err), -1); /* a directory in the way */
  assert_non_null(strstr(rt_err_msg(&err), "cannot replace it with the temporary file"));
  assert_int_equal(count_entries(sub), 1);
  rt_err_free(&err);
}

/* ---- the driver -------------------------------------------------------------------- */

static void test_no_driver(void **state) {
  (void)state;
  kbc_buf info = {0};
  rt_err err = {0};
  rt_info("test-1", &info);
  print_message("%s", kbc_buf_str(&info));
  assert_non_null(strstr(kbc_buf_str(&info), "kbc test-1"));
  assert_non_null(strstr(kbc_buf_str(&info), "cache: "));
  if (rt_cuda(NULL)) {
    print_message("a CUDA driver is loadable here: the no-driver checks are skipped\n");
    kbc_buf_free(&info);
    skip();
  }
  rt_device *dev = (rt_device *)1;
  assert_int_equal(rt_device_open(0, &dev, &err), -1);
  assert_null(dev);
  const char *m = rt_err_msg(&err);
  static const char want[] = "no CUDA driver: libcuda.so.1 could not be loaded (";
  if (strncmp(m, want, sizeof want - 1) != 0 &&
      !strstr(m, "cuInit: CUDA_ERROR_"))
    fail_msg("unexpected message: %s", m);
  assert_int_equal(err.kind, RT_ERR_NO_DEVICE); /* a kind set where raised, not read from the text */
  int n = 5;
  assert_int_equal(rt_device_count(&n, &err), -1);
  assert_int_equal(n, 0);
  assert_non_null(strstr(kbc_buf_str(&info), "CUDA driver: none ("));
  rt_device_close(NULL);
  rt_module_unload(NULL);
  rt_err_free(&err), kbc_buf_free(&info);
}

static void test_cu_messages(void **state) {
  (void)state;
  rt_err err = {0};
  rt_cuda(NULL); /* error strings come from the driver when there is one */
  assert_int_equal(rt_cu_check(CUDA_SUCCESS, "cuInit", &err), 0);
  assert_int_equal(err.msg.len, 0);
  assert_int_equal(err.kind, RT_ERR_NONE);
  assert_int_equal(rt_cu_check(CUDA_ERROR_INVALID_PTX, "cuModuleLoadData", &err), -1);
  assert_non_null(strstr(rt_err_msg(&err), "cuModuleLoadData: CUDA_ERROR_INVALID_PTX"));
  assert_int_equal(err.kind, RT_ERR_CUDA);
  assert_int_equal(rt_cu_check(CUDA_ERROR_NO_DEVICE, "cuInit", &err), -1);
  assert_int_equal(err.kind, RT_ERR_NO_DEVICE);
  assert_int_equal(rt_cu_check(987654, "cuX", &err), -1);
  assert_non_null(strstr(rt_err_msg(&err), "cuX: "));
  rt_err_free(&err);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compile_every_target),
      cmocka_unit_test(test_version_and_archs),
      cmocka_unit_test(test_syntax_error),
      cmocka_unit_test(test_invalid_arch),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_resources_parse),
      cmocka_unit_test(test_spills_reported),
      cmocka_unit_test(test_sha256),
      cmocka_unit_test(test_keys),
      cmocka_unit_test(test_cache_miss_store_hit),
      cmocka_unit_test(test_cache_corrupt_entries),
      cmocka_unit_test(test_always_compile),
      cmocka_unit_test(test_unusable_cache_dir),
      cmocka_unit_test(test_dump_dir),
      cmocka_unit_test(test_isolated_compile),
      cmocka_unit_test(test_write_atomic),
      cmocka_unit_test(test_no_driver),
      cmocka_unit_test(test_cu_messages),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
