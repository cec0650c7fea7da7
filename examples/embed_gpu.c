/* embed_gpu.c — a C program that runs a kbc program on the GPU through the
 * CUDA Driver API, as an application that owns its device memory and
 * stream would:
 *
 *   - the device's primary context made current (the one kbc, PyTorch and
 *     the CUDA runtime share) and a stream of its own;
 *   - inputs copied in with cuMemAlloc / cuMemcpyHtoD;
 *   - kbc_program_launch on that stream (asynchronous), then a copy back;
 *   - the result compared with kbc_program_run_cpu, the reference
 *     interpreter, on the same inputs.
 *
 *   embed_gpu [M K N]   (default 200 96 130)
 *
 * The program is a matmul with bias and GELU; its inputs get
 * pseudo-random values in [-1, 1), and the output's shape comes from
 * kbc_program_output_shape.  Exit status: 0 the GPU matches the CPU (relative L2
 * error <= 1e-5), 1 a mismatch or an error, 77 no GPU (skip).
 * Build: cc embed_gpu.c $(pkg-config --cflags --libs kbc) -lcuda, or with
 * CMake: find_package(kbc), target_link_libraries(... kbc::kbc CUDA::cuda_driver). */
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kbc.h"

static const char default_spec[] =
    "kernel matmul_bias_gelu\n"
    "axis m var\naxis k var\naxis n var\n"
    "input  a    f32[m, k]\n"
    "input  b    f32[k, n]\n"
    "input  bias f32[n]\n"
    "output y    f32[m, n]\n"
    "y[i, j] = gelu(sum(kk: a[i, kk] * b[kk, j]) + bias[j])\n";

enum { N_ARGS = 4, MAX_RANK = 8 };

static int cuda_ok(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 1;
  const char *msg = NULL;
  cuGetErrorString(r, &msg);
  fprintf(stderr, "embed_gpu: %s failed: %s\n", what, msg ? msg : "unknown CUDA error");
  return 0;
}

static int kbc_ok(kbc_status s, const char *what) {
  if (s == KBC_OK) return 1;
  fprintf(stderr, "embed_gpu: %s: %s: %s\n", what, kbc_status_name(s), kbc_last_error());
  return 0;
}

typedef struct {
  kbc_arg_info info;
  int64_t shape[MAX_RANK];
  size_t numel;
  float *host, *check; /* values (inputs) or the GPU's result (outputs); the CPU's result */
  CUdeviceptr dev;
} tensor;

int main(int argc, char **argv) {
  int64_t m = argc > 3 ? atoll(argv[1]) : 200, k = argc > 3 ? atoll(argv[2]) : 96, n = argc > 3 ? atoll(argv[3]) : 130;
  if (m < 1 || k < 1 || n < 1) {
    fprintf(stderr, "usage: embed_gpu [M K N] (positive sizes)\n");
    return 1;
  }
  kbc_program *p = NULL;
  if (!kbc_ok(kbc_compile_string(default_spec, "matmul_bias_gelu.kb", NULL, &p), "compile")) return 1;

  /* The device and its primary context, current on this thread; a stream. */
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  int n_dev = 0;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n_dev) != CUDA_SUCCESS || n_dev == 0) {
    printf("SKIP: no CUDA device\n");
    kbc_program_destroy(p);
    return 77;
  }
  if (!cuda_ok(cuDeviceGet(&dev, 0), "cuDeviceGet") || !cuda_ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !cuda_ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
      !cuda_ok(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
    return 1;

  /* The inputs (random values, copied in), then the output, shaped by
   * the program from the inputs. */
  tensor t[N_ARGS] = {{.info = {"a", KBC_ROLE_INPUT, KBC_F32, 2}, .shape = {m, k}},
                      {.info = {"b", KBC_ROLE_INPUT, KBC_F32, 2}, .shape = {k, n}},
                      {.info = {"bias", KBC_ROLE_INPUT, KBC_F32, 1}, .shape = {n}},
                      {.info = {"y", KBC_ROLE_OUTPUT, KBC_F32, 2}}};
  kbc_arg gpu[N_ARGS], cpu[N_ARGS];
  int ok = 1, rank = 0;
  unsigned seed = 1;
  for (int i = 0; ok && i < N_ARGS; i++) {
    if (t[i].info.role == KBC_ROLE_OUTPUT)
      ok = kbc_ok(kbc_program_output_shape(p, cpu, (size_t)i, t[i].info.name, t[i].shape, &rank), "output shape");
    t[i].numel = 1;
    for (int d = 0; ok && d < t[i].info.rank; d++) t[i].numel *= (size_t)t[i].shape[d];
    t[i].host = ok ? malloc(4 * t[i].numel) : NULL;
    t[i].check = ok ? malloc(4 * t[i].numel) : NULL;
    ok = ok && t[i].host && t[i].check && cuda_ok(cuMemAlloc(&t[i].dev, 4 * t[i].numel), "cuMemAlloc");
    for (size_t e = 0; ok && t[i].info.role == KBC_ROLE_INPUT && e < t[i].numel; e++) {
      seed = seed * 1103515245u + 12345u;
      t[i].host[e] = t[i].check[e] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    if (ok && t[i].info.role == KBC_ROLE_INPUT)
      ok = cuda_ok(cuMemcpyHtoDAsync(t[i].dev, t[i].host, 4 * t[i].numel, stream), "cuMemcpyHtoDAsync");
    gpu[i] = (kbc_arg){t[i].info.name, (void *)(uintptr_t)t[i].dev, t[i].info.rank, t[i].shape, KBC_F32};
    cpu[i] = (kbc_arg){t[i].info.name, t[i].check, t[i].info.rank, t[i].shape, KBC_F32};
  }

  /* The GPU run on our stream, the copy back, and the CPU reference. */
  ok = ok && kbc_ok(kbc_program_launch(p, gpu, N_ARGS, stream), "launch");
  for (int i = 0; ok && i < N_ARGS; i++)
    if (t[i].info.role == KBC_ROLE_OUTPUT)
      ok = cuda_ok(cuMemcpyDtoHAsync(t[i].host, t[i].dev, 4 * t[i].numel, stream), "cuMemcpyDtoHAsync");
  ok = ok && cuda_ok(cuStreamSynchronize(stream), "cuStreamSynchronize");
  ok = ok && kbc_ok(kbc_program_run_cpu(p, cpu, N_ARGS), "run on the CPU");
  for (int i = 0; ok && i < N_ARGS; i++) {
    if (t[i].info.role != KBC_ROLE_OUTPUT) continue;
    double num = 0, den = 0;
    for (size_t e = 0; e < t[i].numel; e++) {
      double d = (double)t[i].host[e] - t[i].check[e];
      num += d * d;
      den += (double)t[i].check[e] * t[i].check[e];
    }
    double rel = sqrt(num / (den > 0 ? den : 1));
    printf("%s %s: %zu elements, relative L2 error %.2e against the CPU\n", rel <= 1e-5 ? "ok  " : "FAIL",
           t[i].info.name, t[i].numel, rel);
    ok = rel <= 1e-5;
  }

  for (int i = 0; i < N_ARGS; i++) {
    if (t[i].dev) cuMemFree(t[i].dev);
    free(t[i].host);
    free(t[i].check);
  }
  cuStreamDestroy(stream);
  cuDevicePrimaryCtxRelease(dev);
  kbc_program_destroy(p);
  return ok ? 0 : 1;
}
