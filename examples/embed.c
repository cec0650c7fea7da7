/* embed.c — a C program that embeds kbc: compiles a spec, lists its
 * arguments, runs it on the CPU reference interpreter on generated inputs,
 * and shows how much CUDA C it generates for sm_90 (no GPU needed).
 *
 *   embed_example [SPEC]        (default: a softmax over the middle axis)
 *
 * On the GPU a program is run with kbc_program_launch(p, args, n, stream),
 * where args carry device pointers (from cudaMalloc, or PyTorch tensors'
 * data_ptr()) — see python/kbc.py for a complete binding. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "kbc.h"

static const char default_spec[] =
    "kernel softmax_middle\n"
    "axis a var\naxis b var\naxis c var\n"
    "input  x   f32[a, b, c]\n"
    "output out f32[a, b, c]\n"
    "out = softmax(x, axis=1)\n";

int main(int argc, char **argv) {
  kbc_program *p;
  kbc_options opt = {.target = "sm_90", .precision = KBC_PRECISION_FP32};
  kbc_status s = argc > 1 ? kbc_compile_file(argv[1], &opt, &p) : kbc_compile_string(default_spec, "softmax.kb", &opt, &p);
  if (s != KBC_OK) {
    fprintf(stderr, "%s: %s\n", kbc_status_name(s), kbc_last_error());
    return 1;
  }
  printf("kernel %s (kbc %s)\n", kbc_program_name(p), kbc_version());
  for (int i = 0; i < kbc_program_num_args(p); i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    printf("  %s %s, rank %d\n", info.role == KBC_ROLE_INPUT ? "input " : "output", info.name, info.rank);
  }
  if (argc > 1) {
    kbc_program_destroy(p);
    return 0;
  }
  /* Run the default spec on a 2 x 3 x 4 tensor. */
  int64_t shape[3] = {2, 3, 4};
  float x[24], out[24];
  for (int i = 0; i < 24; i++) x[i] = (float)(i % 5) - 2.0f;
  kbc_arg args[] = {{"x", x, 3, shape, KBC_F32}, {"out", out, 3, shape, KBC_F32}};
  if ((s = kbc_program_run_cpu(p, args, 2)) != KBC_OK) {
    fprintf(stderr, "%s: %s\n", kbc_status_name(s), kbc_last_error());
    kbc_program_destroy(p);
    return 1;
  }
  /* Softmax over axis 1: each (a, c) column sums to 1. */
  double worst = 0;
  for (int a = 0; a < 2; a++)
    for (int c = 0; c < 4; c++) {
      double sum = 0;
      for (int b = 0; b < 3; b++) sum += out[(a * 3 + b) * 4 + c];
      worst = fabs(sum - 1) > worst ? fabs(sum - 1) : worst;
    }
  printf("softmax columns sum to 1 within %.1e\n", worst);
  char *cuda;
  size_t len;
  if (kbc_program_emit(p, "cuda", &cuda, &len) == KBC_OK) {
    printf("generated CUDA C: %zu bytes\n", len);
    kbc_free(cuda);
  } else {
    printf("no CUDA C: %s\n", kbc_last_error());
  }
  kbc_program_destroy(p);
  return worst < 1e-6 ? 0 : 1;
}
