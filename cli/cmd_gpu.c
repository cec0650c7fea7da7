/* cmd_gpu.c — the commands that use a GPU: `kbc run --backend cuda`,
 * `kbc bench` and `kbc info`, and the pieces `kbc verify` (cmd_verify.c)
 * shares with them (cli.h: the device, compiling, random inputs).
 *
 * They go through the public API (include/kbc.h) for compiling and
 * launching, and through runtime/device.h for device memory and timing.
 * Without a driver or a GPU they fail at once with the driver's message,
 * write nothing, and exit 1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ir/bind.h"
#include "ir/cost.h"
#include "kbc.h"
#include "runtime/device.h"
#include "runtime/json.h"
#include "runtime/safetensors.h"
#include "runtime/tensor_io.h"
#include "support/version.h"

/* ---- shared ------------------------------------------------------------- */

int cli_open_device(rt_device **dev) {
  rt_err err = {0};
  int rc = rt_device_open(0, dev, &err);
  if (rc) cli_error("no GPU available: %s", rt_err_msg(&err));
  rt_err_free(&err);
  return rc ? CLI_FAIL : CLI_OK;
}

double cli_tolerance(const char *precision) { return precision && !strcmp(precision, "tf32") ? 2e-3 : 1e-5; }

int cli_compile_api(const char *spec, const char *precision, kbc_program **p) {
  return cli_compile_api_with(spec, precision, NULL, NULL, p);
}

int cli_compile_api_with(const char *spec, const char *precision, const char *target, const char *config,
                         kbc_program **p) {
  kbc_options opt = {.target = target ? target : "auto",
                     .precision = precision && !strcmp(precision, "tf32") ? KBC_PRECISION_TF32 : KBC_PRECISION_FP32,
                     .config = config};
  return cli_compile_spec(spec, &opt, p) == CLI_OK ? CLI_OK : CLI_FAIL;
}

cli_random cli_random_start(uint64_t seed, double lo, double hi) {
  return (cli_random){.state = 0x9e3779b97f4a7c15ULL ^ seed, .lo = lo, .hi = hi};
}

void cli_random_uniform(float *h, size_t n, cli_random *r) {
  uint64_t x = r->state;
  for (size_t k = 0; k < n; k++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    h[k] = (float)(r->lo + (r->hi - r->lo) * ((double)(x >> 11) / 9007199254740992.0));
  }
  r->state = x;
}

void cli_dev_args_free(rt_device *dev, cli_dev_args *g) {
  for (int i = 0; i < g->n; i++) {
    if (g->dptr && g->dptr[i]) rt_mem_free(dev, g->dptr[i], NULL);
    if (g->host) free(g->host[i]);
  }
  free(g->args);
  free(g->dptr);
  free(g->host);
  free(g->shape);
  free(g->numel);
  memset(g, 0, sizeof *g);
}

int cli_dev_args_random(rt_device *dev, kbc_program *p, cli_random *r, int keep_host, cli_dev_args *g) {
  memset(g, 0, sizeof *g);
  int n = kbc_program_num_args(p);
  rt_err err = {0};
  g->args = calloc((size_t)n + 1, sizeof *g->args);
  g->dptr = calloc((size_t)n + 1, sizeof *g->dptr);
  g->host = calloc((size_t)n + 1, sizeof *g->host);
  g->shape = calloc((size_t)n + 1, sizeof *g->shape);
  g->numel = calloc((size_t)n + 1, sizeof *g->numel);
  if (!g->args || !g->dptr || !g->host || !g->shape || !g->numel) goto oom;
  for (int i = 0; i < n; i++) {
    g->n = i + 1; /* counted before its buffers, so that a failure frees them */
    kbc_arg_info info;
    if (kbc_program_arg_info(p, i, &info) != KBC_OK || kbc_program_arg_shape(p, i, g->shape[i]) != KBC_OK) {
      cli_error("%s", kbc_last_error());
      cli_dev_args_free(dev, g);
      return CLI_FAIL;
    }
    g->numel[i] = 1;
    for (int k = 0; k < info.rank; k++) g->numel[i] *= g->shape[i][k];
    size_t bytes = sizeof(float) * (size_t)g->numel[i]; /* kbc_program_binding: at most 2^40 elements, at least 1 */
    g->args[i] = (kbc_arg){info.name, NULL, info.rank, g->shape[i], KBC_F32};
    if (rt_mem_alloc(dev, bytes, &g->dptr[i], &err)) goto cuda_fail;
    g->args[i].data = (void *)(uintptr_t)g->dptr[i];
    if (info.role != KBC_ROLE_INPUT && !keep_host) continue;
    if (!keep_host && (size_t)g->numel[i] > CLI_RANDOM_CHUNK) {
      /* timing only: one chunk of values, copied over the tensor (drawing
       * a 6.4 GB input a value at a time took seconds a spec) */
      size_t chunk = CLI_RANDOM_CHUNK * sizeof(float);
      float *h = malloc(chunk);
      if (!h) goto oom;
      cli_random_uniform(h, CLI_RANDOM_CHUNK, r);
      int bad = 0;
      for (size_t at = 0; at < bytes && !bad; at += chunk)
        bad = rt_memcpy_htod(dev, g->dptr[i] + at, h, bytes - at < chunk ? bytes - at : chunk, &err);
      free(h);
      if (bad) goto cuda_fail;
      continue;
    }
    float *h = g->host[i] = malloc(bytes);
    if (!h) goto oom;
    if (info.role != KBC_ROLE_INPUT) continue;
    cli_random_uniform(h, (size_t)g->numel[i], r);
    int bad = rt_memcpy_htod(dev, g->dptr[i], h, bytes, &err);
    if (!keep_host) {
      free(h);
      g->host[i] = NULL;
    }
    if (bad) goto cuda_fail;
  }
  return CLI_OK;
oom:
  cli_error("out of host memory for the arguments");
  cli_dev_args_free(dev, g);
  return CLI_FAIL;
cuda_fail:
  cli_error("%s", rt_err_msg(&err));
  rt_err_free(&err);
  cli_dev_args_free(dev, g);
  return CLI_FAIL;
}

void cli_gpu_session_close(cli_gpu_session *s) {
  cli_dev_args_free(s->dev, &s->g); /* device memory before the device */
  kbc_program_destroy(s->p);
  rt_device_close(s->dev);
  rt_err_free(&s->err);
  kbc_arena_destroy(s->ar);
  memset(s, 0, sizeof *s);
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int cli_time_launches(rt_device *dev, kbc_program *p, const kbc_arg *const *sets, int n_sets, int n, int64_t iters,
                      int64_t repeat, double *median_us, double *min_us) {
  int64_t turn = 0; /* launches so far: the next takes set turn % n_sets */
  rt_err err = {0};
  void *ev[2] = {NULL, NULL};
  float *times = calloc((size_t)iters, sizeof *times);
  int rc = CLI_FAIL;
  if (!times) {
    cli_error("out of host memory for the timings");
    return CLI_FAIL;
  }
  for (int w = 0; w < 3; w++)
    if (kbc_program_launch(p, sets[turn++ % n_sets], (size_t)n, NULL) != KBC_OK) {
      fprintf(stderr, "%s\n", kbc_last_error());
      goto done;
    }
  if (rt_device_sync(dev, &err) || rt_event_create(dev, &ev[0], &err) || rt_event_create(dev, &ev[1], &err))
    goto cuda_fail;
  for (int64_t it = 0; it < iters; it++) {
    if (rt_event_record(dev, ev[0], NULL, &err)) goto cuda_fail;
    for (int64_t r = 0; r < repeat; r++)
      if (kbc_program_launch(p, sets[turn++ % n_sets], (size_t)n, NULL) != KBC_OK) {
        fprintf(stderr, "%s\n", kbc_last_error());
        goto done;
      }
    if (rt_event_record(dev, ev[1], NULL, &err) || rt_event_sync(dev, ev[1], &err) ||
        rt_event_elapsed_ms(dev, ev[0], ev[1], &times[it], &err))
      goto cuda_fail;
    times[it] /= (float)repeat;
  }
  qsort(times, (size_t)iters, sizeof *times, cmp_float);
  *median_us = times[iters / 2] * 1e3;
  if (min_us) *min_us = times[0] * 1e3;
  rc = CLI_OK;
  goto done;
cuda_fail:
  cli_error("%s", rt_err_msg(&err));
done:
  for (int i = 0; i < 2; i++)
    if (ev[i]) rt_event_destroy(dev, ev[i], NULL);
  rt_err_free(&err);
  free(times);
  return rc;
}

/* ---- run --backend cuda ---------------------------------------------------- */

typedef struct {
  int n;
  kbc_arg *args;
  rt_dptr *dptr;
  int64_t (*shape)[8];
} gpu_args;

static void free_args(rt_device *dev, gpu_args *g) {
  for (int i = 0; i < g->n; i++)
    if (g->dptr[i]) rt_mem_free(dev, g->dptr[i], NULL);
  free(g->args);
  free(g->dptr);
  free(g->shape);
}

int cli_run_cuda(const char *spec, const char *inputs, const char *outputs, const char *precision, int cast,
                 const char *const *sets, int n_sets) {
  kbc_program *p = NULL;
  rt_device *dev = NULL;
  rt_st_file *in = NULL;
  gpu_args g = {0};
  rt_err err = {0};
  kbc_arena *ar = kbc_arena_create();
  int rc = CLI_FAIL;
  if (cli_open_device(&dev) || cli_compile_api(spec, precision, &p)) goto done;
  if ((rc = cli_check_outputs_path(p, outputs)) != CLI_OK) goto done;
  rc = CLI_FAIL;
  for (int i = 0; i < n_sets; i++) {
    const char *name = NULL;
    int64_t v = 0;
    if ((rc = cli_parse_set("run", ar, sets[i], &name, &v)) != CLI_OK) goto done;
    rc = CLI_FAIL;
    if (kbc_program_bind_axis(p, name, v) != KBC_OK) {
      cli_error("--set %s: %s", sets[i], kbc_last_error());
      goto done;
    }
  }
  kbc_program_set_args_origin(p, inputs); /* binding messages name the inputs file, as on the CPU */
  if (cli_load_inputs(inputs, cast, &in) != CLI_OK) goto done;
  const rt_device_props *dp = rt_device_info(dev);
  cli_info("running on the GPU: %s (sm_%d%d), %s", dp->name, dp->cc_major, dp->cc_minor, precision ? precision : "fp32");
  int n_in = rt_st_count(in), n_all = kbc_program_num_args(p);
  g.args = calloc((size_t)n_all + (size_t)n_in + 1, sizeof *g.args);
  g.dptr = calloc((size_t)n_all + (size_t)n_in + 1, sizeof *g.dptr);
  g.shape = calloc((size_t)n_all + (size_t)n_in + 1, sizeof *g.shape);
  if (!g.args || !g.dptr || !g.shape) goto done;
  for (int i = 0; i < n_in; i++, g.n++) {
    const rt_st_tensor *t = rt_st_get(in, i); /* f32: cli_load_inputs */
    for (int k = 0; k < t->rank; k++) g.shape[i][k] = t->shape[k];
    if (rt_mem_alloc(dev, t->nbytes ? t->nbytes : 4, &g.dptr[i], &err) ||
        rt_memcpy_htod(dev, g.dptr[i], t->data, t->nbytes, &err)) {
      cli_error("%s", rt_err_msg(&err));
      goto done;
    }
    g.args[i] = (kbc_arg){t->name, (void *)(uintptr_t)g.dptr[i], t->rank, g.shape[i], KBC_F32};
  }
  /* Outputs, shaped by the inputs. */
  int first_out = g.n;
  for (int i = 0; i < n_all; i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    if (info.role != KBC_ROLE_OUTPUT) continue;
    int rank;
    if (kbc_program_output_shape(p, g.args, (size_t)n_in, info.name, g.shape[g.n], &rank) != KBC_OK) {
      cli_api_error();
      goto done;
    }
    int64_t numel = 1;
    for (int k = 0; k < rank; k++) numel *= g.shape[g.n][k];
    if (rt_mem_alloc(dev, (size_t)(numel > 0 ? numel : 1) * 4, &g.dptr[g.n], &err)) {
      cli_error("%s", rt_err_msg(&err));
      goto done;
    }
    g.args[g.n] = (kbc_arg){info.name, (void *)(uintptr_t)g.dptr[g.n], rank, g.shape[g.n], KBC_F32};
    g.n++;
  }
  if (kbc_program_launch(p, g.args, (size_t)g.n, NULL) != KBC_OK) {
    cli_api_error();
    goto done;
  }
  if (rt_device_sync(dev, &err)) {
    cli_error("%s", rt_err_msg(&err));
    goto done;
  }
  int n_out = g.n - first_out;
  rt_st_tensor *ot = calloc((size_t)n_out + 1, sizeof *ot);
  int ok = ot != NULL;
  for (int i = 0; ok && i < n_out; i++) {
    const kbc_arg *a = &g.args[first_out + i];
    int64_t numel = 1;
    for (int k = 0; k < a->rank; k++) numel *= a->shape[k];
    ot[i] = (rt_st_tensor){.name = (char *)a->name, .dtype = RT_DT_F32, .rank = a->rank,
                           .nbytes = (size_t)numel * 4, .data = malloc((size_t)(numel > 0 ? numel : 1) * 4)};
    for (int k = 0; k < a->rank; k++) ot[i].shape[k] = a->shape[k];
    ok = ot[i].data && !rt_memcpy_dtoh(dev, ot[i].data, g.dptr[first_out + i], ot[i].nbytes, &err);
  }
  if (!ok) cli_error("%s", err.msg.len ? rt_err_msg(&err) : "out of memory");
  else if (rt_tensors_save(outputs, ot, n_out, &err)) cli_rt_error(outputs, rt_err_msg(&err));
  else rc = CLI_OK;
  for (int i = 0; ot && i < n_out; i++) free(ot[i].data);
  free(ot);
done:
  kbc_arena_destroy(ar);
  free_args(dev, &g);
  rt_st_free(in);
  kbc_program_destroy(p);
  rt_device_close(dev);
  rt_err_free(&err);
  return rc;
}

/* ---- bench ---------------------------------------------------------------- */

static const char bench_help[] =
    "usage: kbc bench [OPTIONS] SPEC --set AXIS=N... [--iters N] [--repeat N] [--precision fp32|tf32] [--json]\n"
    "       kbc bench --batch < LINES\n"
    "\n"
    "Runs SPEC on random inputs (every var axis given with --set) on the GPU:\n"
    "warm-up, then N timed launches (CUDA events, default 100); prints the\n"
    "median time, achieved GFLOP/s and GB/s, and the roofline: FLOPs, the\n"
    "fewest bytes (inputs read and outputs written once), the floor time at\n"
    "the device's ceilings, and the % of that floor reached.  With --repeat R,\n"
    "each timed sample is R launches back to back, over R: the GPU's time per\n"
    "run with the host's launch work overlapped (programs of a few us, whose\n"
    "single launch times the host as much as the GPU).  With --rotate N, N\n"
    "sets of random inputs and outputs taken in turn, launch by launch, as a\n"
    "harness defeating the L2 would (bench/compare.py): every launch then has\n"
    "other tensors than the one before.\n";

enum { B_SET, B_ITERS, B_REPEAT, B_ROTATE, B_PRECISION, B_JSON, B_BATCH, B_N };
enum { BENCH_MAX_ROTATE = 64 }; /* --rotate's most argument sets */
static const cli_option bench_opts[B_N] = {
    [B_SET] = {"set", 0, "AXIS=N", 1, "the value of a var axis (every var axis is needed)"},
    [B_ITERS] = {"iters", 0, "N", 0, "timed samples, 1 to 1000000 (default 100)"},
    [B_REPEAT] = {"repeat", 0, "N", 0, "launches back to back per sample, 1 to 10000 (default 1)"},
    [B_ROTATE] = {"rotate", 0, "N", 0, "argument sets taken in turn, 1 to 64 (default 1)"},
    [B_PRECISION] = {"precision", 0, "P", 0, "fp32 (default) or tf32"},
    [B_JSON] = {"json", 0, NULL, 0,
                "one JSON object: {\"spec\", \"kernel\", \"device\", \"precision\", \"iters\", \"repeat\",\n"
                "\"kernels\", \"median_us\", \"min_us\", \"flops\", \"bytes\", \"gflops\", \"gbps\",\n"
                "\"floor_us\", \"pct_of_floor\"} (a number that is not finite: null)"},
    [B_BATCH] = {"batch", 0, NULL, 0,
                 "timings read from standard input, a line of arguments each\n"
                 "(SPEC and its options), a line of JSON out each (the --json\n"
                 "object, or {\"spec\", \"ok\": false, \"exit\": N} when it did not\n"
                 "run); one GPU context for all; no SPEC argument"},
};

/* bench --json through the escaping writers (runtime/json.h). */
static void bench_json(const char *spec, const char *kernel, const char *device, const char *precision, int64_t iters,
                       int64_t repeat, int kernels, const double *num, int n_num) {
  static const char *const keys[] = {"median_us", "min_us", "flops", "bytes", "gflops", "gbps", "floor_us",
                                     "pct_of_floor"};
  kbc_buf j = {0};
  kbc_buf_puts(&j, "{\"spec\": ");
  rt_json_put_string(&j, spec);
  kbc_buf_puts(&j, ", \"kernel\": ");
  rt_json_put_string(&j, kernel);
  kbc_buf_puts(&j, ", \"device\": ");
  rt_json_put_string(&j, device);
  kbc_buf_puts(&j, ", \"precision\": ");
  rt_json_put_string(&j, precision);
  kbc_buf_printf(&j, ", \"iters\": %lld, \"repeat\": %lld, \"kernels\": %d", (long long)iters, (long long)repeat,
                 kernels);
  for (int i = 0; i < n_num && i < 8; i++) {
    kbc_buf_printf(&j, ", \"%s\": ", keys[i]);
    rt_json_put_number(&j, num[i]);
  }
  kbc_buf_puts(&j, "}\n");
  fputs(kbc_buf_str(&j), stdout);
  kbc_buf_free(&j);
}

/* Ceilings: measured on an H200 (PERFORMANCE.md), else datasheet-style
 * estimates from the SM count. */
static void ceilings(const rt_device_props *d, int tf32, double *flops, double *bw) {
  if (strstr(d->name, "H200") || strstr(d->name, "H100")) {
    *flops = tf32 ? 368e12 : 51e12;
    *bw = strstr(d->name, "H200") ? 4.3e12 : 3.0e12;
  } else {
    *flops = d->sm_count * 128.0 * 2 * 1.5e9 * (tf32 ? 4 : 1);
    *bw = 1.0e12;
  }
}

typedef struct {
  const char *spec, *precision;
  const char *const *sets;
  int n_sets, json, batch;
  int64_t iters, repeat, rotate;
  int reported; /* set by bench(): the timing ran and was printed */
} bench_args;

/* 0 to go on, -1 after --help, else the usage error's exit status. */
static int bench_parse(int argc, char **argv, cli_value *v, bench_args *b) {
  char **rest;
  int n_rest, rc = cli_parse("bench", bench_opts, B_N, argc, argv, v, &rest, &n_rest);
  if (rc < 0) {
    cli_help(bench_help, bench_opts, B_N, NULL);
    return -1;
  }
  if (rc != CLI_OK) return rc;
  if ((b->batch = v[B_BATCH].count)) {
    if (n_rest) return cli_usage("bench", "--batch reads its specs from standard input, not '%s'", rest[0]);
    return 0;
  }
  if ((rc = cli_one_spec("bench", rest, n_rest, &b->spec)) != CLI_OK) return rc;
  b->precision = v[B_PRECISION].count ? v[B_PRECISION].value : "fp32";
  b->sets = v[B_SET].values, b->n_sets = v[B_SET].count, b->json = v[B_JSON].count;
  if (v[B_ITERS].count && (!cli_parse_i64(v[B_ITERS].value, &b->iters) || b->iters < 1 || b->iters > 1000000))
    return cli_usage("bench", "--iters takes a number from 1 to 1000000, not '%s'", v[B_ITERS].value);
  if (v[B_REPEAT].count && (!cli_parse_i64(v[B_REPEAT].value, &b->repeat) || b->repeat < 1 || b->repeat > 10000))
    return cli_usage("bench", "--repeat takes a number from 1 to 10000, not '%s'", v[B_REPEAT].value);
  if (v[B_ROTATE].count &&
      (!cli_parse_i64(v[B_ROTATE].value, &b->rotate) || b->rotate < 1 || b->rotate > BENCH_MAX_ROTATE))
    return cli_usage("bench", "--rotate takes a number from 1 to %d, not '%s'", BENCH_MAX_ROTATE, v[B_ROTATE].value);
  if (strcmp(b->precision, "fp32") && strcmp(b->precision, "tf32"))
    return cli_usage("bench", "--precision takes fp32 or tf32, not '%s'", b->precision);
  return 0;
}

static int bench(bench_args *b) {
  const char *spec = b->spec, *precision = b->precision;
  /* Shapes from the spec and --set, on the CPU side first (clear errors). */
  cli_gpu_session s = {.ar = kbc_arena_create()};
  kbc_binding_info cost;
  cli_random rnd = cli_random_start(0, -1, 1);
  double us, min_us;
  cli_dev_args more[BENCH_MAX_ROTATE - 1] = {{0}}; /* --rotate's sets after the first */
  const kbc_arg *sets[BENCH_MAX_ROTATE];
  int n_more = (int)b->rotate - 1;
  int rc = cli_bind_spec("bench", spec, precision, b->sets, b->n_sets, &s.p, &cost);
  if (rc != CLI_OK) goto done;
  rc = CLI_FAIL;
  if (cli_open_device(&s.dev) || cli_dev_args_random(s.dev, s.p, &rnd, 0, &s.g)) goto done;
  sets[0] = s.g.args;
  for (int i = 0; i < n_more; i++) {
    if (cli_dev_args_random(s.dev, s.p, &rnd, 0, &more[i])) goto done;
    sets[i + 1] = more[i].args;
  }
  if (cli_time_launches(s.dev, s.p, sets, n_more + 1, s.g.n, b->iters, b->repeat, &us, &min_us)) goto done;
  double peak, bw;
  ceilings(rt_device_info(s.dev), !strcmp(precision, "tf32"), &peak, &bw);
  double floor_us = fmax(cost.flops / peak, cost.bytes / bw) * 1e6;
  if (b->json) {
    double num[] = {us, min_us, cost.flops, cost.bytes, cost.flops / us * 1e-3, cost.bytes / us * 1e-3,
                    floor_us, 100.0 * floor_us / us};
    bench_json(cli_spec_name(spec), kbc_program_name(s.p), rt_device_info(s.dev)->name, precision, b->iters,
               b->repeat, kbc_program_num_kernels(s.p), num, 8);
  }
  else {
    char back_to_back[96] = "";
    if (b->repeat > 1) snprintf(back_to_back, sizeof back_to_back, " of %lld back to back", (long long)b->repeat);
    if (b->rotate > 1)
      snprintf(back_to_back + strlen(back_to_back), sizeof back_to_back - strlen(back_to_back),
               ", %lld argument sets in turn", (long long)b->rotate);
    printf("%s on %s (%s): %d kernel%s, median %.1f us over %lld runs%s (min %.1f)\n"
           "  %.4g FLOP, %.4g bytes: %.1f GFLOP/s, %.1f GB/s\n"
           "  floor %.1f us (%.0f TFLOP/s, %.1f TB/s): %.1f%% of floor\n",
           kbc_program_name(s.p), rt_device_info(s.dev)->name, precision, kbc_program_num_kernels(s.p),
           kbc_program_num_kernels(s.p) == 1 ? "" : "s", us, (long long)b->iters, back_to_back, min_us, cost.flops,
           cost.bytes, cost.flops / us * 1e-3, cost.bytes / us * 1e-3, floor_us, peak * 1e-12, bw * 1e-12,
           100.0 * floor_us / us);
  }
  fflush(stdout);
  b->reported = 1;
  rc = CLI_OK;
done:
  for (int i = 0; i < n_more; i++) cli_dev_args_free(s.dev, &more[i]); /* before the device */
  cli_gpu_session_close(&s);
  return rc;
}

/* One line of --batch: its arguments parsed and timed, as --json. */
static int bench_line(int argc, char **argv, const char **spec, int *reported) {
  bench_args b = {.iters = 100, .repeat = 1, .rotate = 1};
  cli_value v[B_N];
  int rc = bench_parse(argc, argv, v, &b);
  *spec = b.spec;
  if (rc) return rc < 0 ? CLI_OK : rc;
  if (b.batch) return cli_usage("bench", "--batch inside a --batch line");
  b.json = 1;
  rc = bench(&b);
  *reported = b.reported;
  return rc;
}

int cmd_bench(int argc, char **argv) {
  cli_set_command("bench");
  bench_args b = {.iters = 100, .repeat = 1, .rotate = 1};
  cli_value v[B_N];
  int rc = bench_parse(argc, argv, v, &b);
  if (rc) return rc < 0 ? CLI_OK : rc;
  return b.batch ? cli_batch("bench", bench_line) : bench(&b);
}

/* ---- info ------------------------------------------------------------------- */

static const cli_option info_opts[] = {
    {"json", 0, NULL, 0, "one JSON object: {\"kbc\", \"nvrtc\", \"kbc_targets\", \"driver\",\n"
                         "\"devices\", \"cache\", ...} (see runtime/info_json.c)"},
};

int cmd_info(int argc, char **argv) {
  cli_value v[1];
  char **rest;
  int n_rest, rc = cli_parse("info", info_opts, 1, argc, argv, v, &rest, &n_rest);
  if (rc < 0) {
    cli_help("usage: kbc info [--json]\n\nkbc and NVRTC versions, targets, the CUDA driver and devices, the kernel "
             "cache.\n",
             info_opts, 1, NULL);
    return CLI_OK;
  }
  if (rc != CLI_OK) return rc;
  if (n_rest) return cli_usage("info", "unexpected argument '%s'", rest[0]);
  kbc_buf out = {0};
  if (v[0].count) rt_info_json(KBC_VERSION, &out);
  else rt_info(KBC_VERSION, &out);
  fputs(kbc_buf_str(&out), stdout);
  kbc_buf_free(&out);
  return CLI_OK;
}
