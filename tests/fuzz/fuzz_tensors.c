/* fuzz_tensors.c — libFuzzer target for the tensor files of `kbc run`
 * beyond the safetensors reader (runtime/tensor_io.c, npy.c, npz.c):
 * detection by content, .npy and .npz.
 *
 * Any input must either be rejected with one line "<memory>: ..." of kind
 * RT_ERR_FORMAT or RT_ERR_MEMORY, or load; a loaded file whose tensors all
 * have a .npy form (every dtype but BF16) must encode as an .npz that loads
 * back to the same tensors and encodes to the same bytes (a fixed point),
 * and each tensor as a .npy that loads back the same.  A violated property
 * aborts.  Built and replayed as fuzz_safetensors.c is (tests/fuzz/
 * CMakeLists.txt): the corpus tests/fuzz/corpus/tensors, seeds from
 * tests/fuzz/gen_tensors_corpus.py. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/safetensors.h"
#include "runtime/tensor_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                     \
    }                                                                              \
  } while (0)

static void check_same(const rt_st_file *a, const rt_st_file *b) {
  CHECK(rt_st_count(a) == rt_st_count(b));
  for (int i = 0; i < rt_st_count(a); i++) {
    const rt_st_tensor *x = rt_st_get(a, i), *y = rt_st_find(b, x->name);
    CHECK(y && x->dtype == y->dtype && x->rank == y->rank && x->nbytes == y->nbytes);
    CHECK(memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->rank) == 0);
    CHECK(x->nbytes == 0 || memcmp(x->data, y->data, x->nbytes) == 0);
  }
}

/* f's tensors as .npz bytes. */
static void encode(const rt_st_file *f, void **out, size_t *len) {
  int n = rt_st_count(f);
  rt_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
  rt_err err = {0};
  CHECK(ts);
  for (int i = 0; i < n; i++) ts[i] = *rt_st_get(f, i);
  if (rt_npz_encode(ts, n, out, len, &err) != 0) {
    fprintf(stderr, "encoding a loaded file as .npz failed: %s\n", rt_err_msg(&err));
    abort();
  }
  for (int i = 0; i < n; i++) { /* each alone as .npy */
    void *b;
    size_t bl;
    rt_st_file *g;
    CHECK(rt_npy_encode(&ts[i], &b, &bl, &err) == 0);
    CHECK(rt_tensors_parse(b, bl, &g, &err) == 0 && rt_st_count(g) == 1);
    const rt_st_tensor *y = rt_st_get(g, 0);
    CHECK(y->dtype == ts[i].dtype && y->rank == ts[i].rank && y->nbytes == ts[i].nbytes);
    CHECK(ts[i].nbytes == 0 || memcmp(y->data, ts[i].data, ts[i].nbytes) == 0);
    rt_st_free(g);
    free(b);
  }
  free(ts);
  rt_err_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rt_err err = {0};
  rt_st_file *f, *g;
  if (rt_tensors_parse(data, size, &f, &err) != 0) {
    const char *m = rt_err_msg(&err);
    CHECK(f == NULL && strncmp(m, "<memory>: ", 10) == 0 && strlen(m) > 10 && !strchr(m, '\n'));
    CHECK(err.kind == RT_ERR_FORMAT || err.kind == RT_ERR_MEMORY);
    rt_err_free(&err);
    return 0;
  }
  for (int i = 0; i < rt_st_count(f); i++)
    if (rt_st_get(f, i)->dtype == RT_DT_BF16) return rt_st_free(f), 0; /* no .npy form */
  void *e1, *e2;
  size_t n1, n2;
  encode(f, &e1, &n1);
  if (rt_tensors_parse(e1, n1, &g, &err) != 0) {
    fprintf(stderr, "the re-encoded .npz does not load: %s\n", rt_err_msg(&err));
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
#define KBC_FUZZ_NAME "fuzz_tensors"
#include "replay_main.h"
#endif
