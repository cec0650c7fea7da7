/* fuzz_safetensors.c — libFuzzer target for runtime/safetensors.c.
 *
 * Any input must either be rejected with a "<memory>: ..." message or load;
 * a loaded file must re-encode, and the encoding must load back to the same
 * tensors and re-encode to the same bytes (a fixed point).  A violated
 * property aborts, which the fuzzer reports as a crash.
 *
 *   clang -g -fsanitize=fuzzer,address,undefined -I. runtime/safetensors.c \
 *     runtime/json.c tests/fuzz/fuzz_safetensors.c -o fuzz_st
 *   ./fuzz_st -dict=tests/fuzz/safetensors.dict -max_total_time=600 \
 *     WORK_DIR tests/fuzz/corpus/safetensors
 *
 * With -DKBC_FUZZ_MAIN (any C compiler) it is a plain program that runs
 * every file named on the command line, or in a directory named there,
 * through the same function: the corpus replay for CI.
 *
 * The corpus: *.safetensors seeds from tests/fuzz/gen_safetensors_corpus.py,
 * plus fuzz-<sha1> inputs the fuzzer found that cover more, kept small with
 *   ./fuzz_st -set_cover_merge=1 -use_counters=0 tests/fuzz/corpus/safetensors NEW_FINDINGS
 * Add any crasher, minimized (-minimize_crash=1), the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                 \
    }                                                                          \
  } while (0)

static void check_tensors(const rt_st_file *f) {
  for (int i = 0; i < rt_st_count(f); i++) {
    const rt_st_tensor *t = rt_st_get(f, i);
    CHECK(t && t->name && t->name[0] && t->data);
    CHECK(rt_st_find(f, t->name) == t);
    CHECK(t->rank >= 0 && t->rank <= RT_ST_MAX_RANK);
    CHECK((uint64_t)rt_st_numel(t) * rt_dtype_size(t->dtype) == t->nbytes);
    if (t->nbytes <= 4096) {
      double out[4096];
      CHECK(rt_st_to_f64(t, out) == 0);
    }
  }
  CHECK(rt_st_get(f, rt_st_count(f)) == NULL);
}

/* Encodes f, with its tensors in file order and its metadata. */
static void encode(const rt_st_file *f, void **out, size_t *len) {
  int n = rt_st_count(f), nm = rt_st_meta_count(f);
  rt_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
  const char **k = calloc((size_t)nm + 1, sizeof *k), **v = calloc((size_t)nm + 1, sizeof *v);
  rt_err err = {0};
  CHECK(ts && k && v);
  for (int i = 0; i < n; i++) ts[i] = *rt_st_get(f, i);
  for (int i = 0; i < nm; i++) CHECK(rt_st_meta_get(f, i, &k[i], &v[i]) == 0);
  if (rt_st_encode(ts, n, k, v, nm, out, len, &err) != 0) {
    fprintf(stderr, "re-encoding a loaded file failed: %s\n", rt_err_msg(&err));
    abort();
  }
  free(ts), free(k), free(v);
  rt_err_free(&err);
}

static void check_same(const rt_st_file *a, const rt_st_file *b) {
  CHECK(rt_st_count(a) == rt_st_count(b) && rt_st_meta_count(a) == rt_st_meta_count(b));
  for (int i = 0; i < rt_st_count(a); i++) {
    const rt_st_tensor *x = rt_st_get(a, i), *y = rt_st_get(b, i);
    CHECK(strcmp(x->name, y->name) == 0 && x->dtype == y->dtype && x->rank == y->rank);
    CHECK(memcmp(x->shape, y->shape, sizeof x->shape) == 0 && x->nbytes == y->nbytes);
    CHECK(memcmp(x->data, y->data, x->nbytes) == 0);
  }
  for (int i = 0; i < rt_st_meta_count(a); i++) {
    const char *k1, *v1, *k2, *v2;
    CHECK(rt_st_meta_get(a, i, &k1, &v1) == 0 && rt_st_meta_get(b, i, &k2, &v2) == 0);
    CHECK(strcmp(k1, k2) == 0 && strcmp(v1, v2) == 0);
    CHECK(rt_st_meta_find(a, k1) == v1);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rt_err err = {0};
  rt_st_file *f, *g;
  if (rt_st_parse(data, size, &f, &err) != 0) {
    const char *m = rt_err_msg(&err);
    CHECK(f == NULL && strncmp(m, "<memory>: ", 10) == 0 && strlen(m) > 10 && !strchr(m, '\n'));
    CHECK(err.kind == RT_ERR_FORMAT || err.kind == RT_ERR_MEMORY);
    rt_err_free(&err);
    return 0;
  }
  check_tensors(f);
  void *e1, *e2;
  size_t n1, n2;
  encode(f, &e1, &n1);
  if (rt_st_parse(e1, n1, &g, &err) != 0) {
    fprintf(stderr, "the re-encoded file does not load: %s\n", rt_err_msg(&err));
    abort();
  }
  check_same(f, g);
  encode(g, &e2, &n2);
  CHECK(n1 == n2 && memcmp(e1, e2, n1) == 0);
  free(e1), free(e2);
  rt_st_free(f), rt_st_free(g);
  return 0;
}

#ifdef KBC_FUZZ_MAIN
#define KBC_FUZZ_NAME "fuzz_safetensors"
#include "replay_main.h"
#endif
