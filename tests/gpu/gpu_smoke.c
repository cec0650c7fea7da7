/* gpu_smoke.c — the runtime layer end to end on a real GPU: device 0's
 * primary context, NVRTC for the device's own target ("auto"), the cache
 * (second compile must hit), module loading, launches on a created stream
 * (plain, 64 KB of dynamic shared memory, thread-block cluster, cooperative),
 * copies, events, and the error messages of a wrong-arch cubin and of an
 * impossible shared-memory request.
 *
 * Exit status: 0 all checks passed, 1 a check failed, 77 no driver or no
 * GPU (ctest's SKIP_RETURN_CODE), with a one-line reason on stdout.
 * The cache goes to a fresh temporary KBC_CACHE_DIR unless one is set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/cache.h"
#include "runtime/device.h"
#include "runtime/nvrtc.h"

#if defined(__SANITIZE_ADDRESS__)
/* The CUDA driver needs the shadow gap, and leaks by design. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "protect_shadow_gap=0:detect_leaks=0"; }
#endif

static const char SRC[] =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n"
    "\n"
    "/* Each block reverses 16384 floats (64 KB) through dynamic shared memory. */\n"
    "extern \"C\" __global__ void reverse_smem(const float *in, float *out) {\n"
    "  extern __shared__ float tile[];\n"
    "  const int n = 16384;\n"
    "  const float *src = in + (size_t)blockIdx.x * n;\n"
    "  float *dst = out + (size_t)blockIdx.x * n;\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = src[i];\n"
    "  __syncthreads();\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x) dst[i] = 2.0f * tile[n - 1 - i];\n"
    "}\n";

static int checks, failures;
static rt_err err;

static void check(int ok, const char *what) {
  checks++;
  if (!ok) failures++;
  printf("  [%s] %s", ok ? "ok" : "FAIL", what);
  if (!ok && err.msg.len) printf(": %s", rt_err_msg(&err));
  printf("\n");
  rt_err_clear(&err);
}

/* Runs vadd on n elements with the given launch options and checks c. */
static void run_vadd(rt_device *dev, rt_function *fn, void *stream, rt_dptr a, rt_dptr b, rt_dptr c,
                     int n, const rt_launch_opts *o, unsigned grid_x, const char *what) {
  float *h = malloc(sizeof(float) * (size_t)n);
  unsigned grid[3] = {grid_x, 1, 1}, block[3] = {256, 1, 1};
  void *args[] = {&a, &b, &c, &n};
  int ok = rt_memset_d32(dev, c, 0, (size_t)n, &err) == 0 &&
           rt_launch_ex(fn, grid, block, 0, stream, args, o, &err) == 0 &&
           rt_stream_sync(dev, stream, &err) == 0 &&
           rt_memcpy_dtoh(dev, h, c, sizeof(float) * (size_t)n, &err) == 0;
  for (int i = 0; ok && i < n; i++)
    if (h[i] != 0.5f * (float)i + (1.0f - (float)i)) {
      rt_fail(&err, RT_ERR_INTERNAL, "c[%d] = %g, expected %g", i, h[i], 0.5f * (float)i + (1.0f - (float)i));
      ok = 0;
    }
  check(ok, what);
  free(h);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char tmp[] = "/tmp/kbc_gpu_smoke_XXXXXX";
  int own_cache = !getenv("KBC_CACHE_DIR");
  if (own_cache) {
    if (!mkdtemp(tmp)) return perror("mkdtemp"), 1;
    setenv("KBC_CACHE_DIR", tmp, 1);
  }
  int count = 0;
  if (rt_device_count(&count, &err) < 0 || count == 0) {
    printf("gpu_smoke: SKIP: %s\n", count == 0 && !err.msg.len ? "no CUDA devices" : rt_err_msg(&err));
    if (own_cache) rmdir(tmp);
    return 77;
  }
  kbc_buf info = {0};
  rt_info("gpu-smoke", &info);
  fputs(kbc_buf_str(&info), stdout);
  kbc_buf_free(&info);

  rt_device *dev = NULL;
  if (rt_device_open(0, &dev, &err) < 0) {
    printf("gpu_smoke: FAIL: %s\n", rt_err_msg(&err));
    return 1;
  }
  const rt_device_props *p = rt_device_info(dev);
  char arch[16];
  rt_arch_of_device(dev, arch, sizeof arch);
  printf("device 0: %s, sm_%d%d, %d SMs, auto target %s\n", p->name, p->cc_major, p->cc_minor,
         p->sm_count, arch);

  /* compile twice: NVRTC, then the cache */
  rt_compile_req req = {SRC, "gpu_smoke", arch, NULL, 0, "gpu-smoke", 0};
  rt_compiled k = {0}, again = {0};
  int ok = rt_compile(&req, &k, &err) == 0;
  check(ok, "NVRTC compile for the device's target");
  if (!ok) return 1;
  kbc_buf res = {0};
  rt_resources_format(&k.res, &res);
  printf("  compiled in %.1f ms; %s", k.compile_ms, kbc_buf_str(&res));
  kbc_buf_free(&res);
  check(rt_compile(&req, &again, &err) == 0 && again.from_cache &&
            again.cubin.len == k.cubin.len && !memcmp(again.cubin.data, k.cubin.data, k.cubin.len),
        "second compile is a cache hit with identical bytes");

  rt_module *mod = NULL;
  rt_function *vadd = NULL, *rev = NULL;
  ok = rt_module_load(dev, &k.cubin, &mod, &err) == 0 && rt_module_function(mod, "vadd", &vadd, &err) == 0 &&
       rt_module_function(mod, "reverse_smem", &rev, &err) == 0;
  check(ok, "module load and kernel lookup");
  if (!ok) return 1;
  rt_function *none = NULL;
  check(rt_module_function(mod, "no_such_kernel", &none, &err) < 0 && strstr(rt_err_msg(&err), "no kernel named"),
        "missing kernel is a clear error");
  rt_err_clear(&err);

  void *stream = NULL;
  check(rt_stream_create(dev, &stream, &err) == 0, "stream create");

  /* vector add, 1M elements */
  const int n = 1 << 20;
  size_t bytes = sizeof(float) * (size_t)n;
  float *ha = malloc(bytes), *hb = malloc(bytes);
  for (int i = 0; i < n; i++) ha[i] = 0.5f * (float)i, hb[i] = 1.0f - (float)i;
  rt_dptr a = 0, b = 0, c = 0;
  ok = rt_mem_alloc(dev, bytes, &a, &err) == 0 && rt_mem_alloc(dev, bytes, &b, &err) == 0 &&
       rt_mem_alloc(dev, bytes, &c, &err) == 0 && rt_memcpy_htod(dev, a, ha, bytes, &err) == 0 &&
       rt_memcpy_htod(dev, b, hb, bytes, &err) == 0;
  check(ok, "alloc and copy in 3 x 4 MB");
  run_vadd(dev, vadd, stream, a, b, c, n, NULL, (unsigned)(n / 256), "vadd on a created stream");
  run_vadd(dev, vadd, NULL, a, b, c, n, NULL, (unsigned)(n / 256), "vadd on the default stream");
  if (p->cc_major >= 9) {
    rt_launch_opts o = {{2, 1, 1}, 0, 0, 0};
    run_vadd(dev, vadd, stream, a, b, c, n, &o, (unsigned)(n / 256), "vadd with clusters of 2 (cuLaunchKernelEx)");
  }
  if (p->cooperative_launch) {
    rt_launch_opts o = {{0, 0, 0}, 1, 0, 0};
    int m = p->sm_count * 256;
    run_vadd(dev, vadd, stream, a, b, c, m, &o, (unsigned)p->sm_count, "vadd as a cooperative launch");
  }

  /* 64 KB of dynamic shared memory: needs the attribute raised */
  const int blocks = 64, per = 16384;
  size_t rbytes = sizeof(float) * (size_t)blocks * per;
  float *hin = malloc(rbytes), *hout = malloc(rbytes);
  for (int i = 0; i < blocks * per; i++) hin[i] = (float)(i % 1000) - 500.0f;
  rt_dptr in = 0, out = 0;
  unsigned grid[3] = {(unsigned)blocks, 1, 1}, block[3] = {256, 1, 1};
  void *rargs[] = {&in, &out};
  ok = rt_mem_alloc(dev, rbytes, &in, &err) == 0 && rt_mem_alloc(dev, rbytes, &out, &err) == 0 &&
       rt_memcpy_htod(dev, in, hin, rbytes, &err) == 0 &&
       rt_launch(rev, grid, block, 65536, stream, rargs, &err) == 0 &&
       rt_stream_sync(dev, stream, &err) == 0 && rt_memcpy_dtoh(dev, hout, out, rbytes, &err) == 0;
  for (int blk = 0; ok && blk < blocks; blk++)
    for (int i = 0; ok && i < per; i++)
      if (hout[blk * per + i] != 2.0f * hin[blk * per + per - 1 - i]) {
        rt_fail(&err, RT_ERR_INTERNAL, "out[%d] wrong", blk * per + i);
        ok = 0;
      }
  check(ok, "64 KB dynamic shared memory kernel");
  ok = rt_launch(rev, grid, block, (size_t)p->smem_per_block_optin + 1024, stream, rargs, &err) < 0 &&
       strstr(rt_err_msg(&err), "exceed");
  check(ok, "too much shared memory is refused with a clear message");
  rt_err_clear(&err);

  /* timing with events: 200 back-to-back launches */
  void *e0 = NULL, *e1 = NULL;
  float ms = 0;
  unsigned vgrid[3] = {(unsigned)(n / 256), 1, 1};
  void *vargs[] = {&a, &b, &c, (void *)&n};
  ok = rt_event_create(dev, &e0, &err) == 0 && rt_event_create(dev, &e1, &err) == 0 &&
       rt_event_record(dev, e0, stream, &err) == 0;
  for (int i = 0; ok && i < 200; i++) ok = rt_launch(vadd, vgrid, block, 0, stream, vargs, &err) == 0;
  ok = ok && rt_event_record(dev, e1, stream, &err) == 0 && rt_event_sync(dev, e1, &err) == 0 &&
       rt_event_elapsed_ms(dev, e0, e1, &ms, &err) == 0 && ms > 0;
  check(ok, "events: timing 200 launches");
  printf("  vadd 1M: %.2f us per launch (%.0f GB/s)\n", ms * 1e3 / 200,
         3.0 * (double)bytes * 200 / (ms * 1e-3) / 1e9);

  /* a cubin for another architecture family is refused with the driver's reason */
  const char *other = p->cc_major == 8 ? "sm_90" : "sm_80";
  rt_compile_req oreq = {SRC, "gpu_smoke_other", other, NULL, 0, "gpu-smoke", 0};
  rt_compiled ok2 = {0};
  rt_module *omod = NULL;
  ok = rt_compile(&oreq, &ok2, &err) == 0 && rt_module_load(dev, &ok2.cubin, &omod, &err) < 0 &&
       strstr(rt_err_msg(&err), "CUDA_ERROR_NO_BINARY_FOR_GPU");
  printf("  (message: %s)\n", rt_err_msg(&err));
  check(ok, "wrong-arch cubin: CUDA_ERROR_NO_BINARY_FOR_GPU");
  rt_module_unload(omod);
  rt_compiled_free(&ok2);

  check(rt_device_sync(dev, &err) == 0, "device sync: no asynchronous errors");
  ok = rt_event_destroy(dev, e0, &err) == 0 && rt_event_destroy(dev, e1, &err) == 0 &&
       rt_mem_free(dev, a, &err) == 0 && rt_mem_free(dev, b, &err) == 0 && rt_mem_free(dev, c, &err) == 0 &&
       rt_mem_free(dev, in, &err) == 0 && rt_mem_free(dev, out, &err) == 0 &&
       rt_stream_destroy(dev, stream, &err) == 0;
  check(ok, "release events, memory, stream");
  rt_module_unload(mod);
  rt_device_close(dev);
  rt_compiled_free(&k), rt_compiled_free(&again);
  free(ha), free(hb), free(hin), free(hout);
  if (own_cache) {
    rt_cache_clear(tmp, NULL);
    rmdir(tmp);
  }
  printf("gpu_smoke: %s (%d checks, %d failed)\n", failures ? "FAIL" : "OK", checks, failures);
  rt_err_free(&err);
  return failures ? 1 : 0;
}
