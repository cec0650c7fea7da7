/* cmd_verify.c — `kbc verify`: a spec's GPU kernels against the CPU
 * reference interpreter, on the same random inputs.
 *
 * Before: a spec, a value for every var axis (--set), a precision and a
 * seed.  After: per output, its relative L2 error and largest absolute
 * error between the GPU's result and the interpreter's (double
 * accumulation, rounded to f32; the program as the spec states it, before
 * the rewriting passes, where that takes at most 4e8 flops: api.c's
 * kbc_program_run_reference), and whether it is within the precision's
 * tolerance (fp32 1e-5, tf32 2e-3), printed as a table or, with --json, as
 * one JSON object on standard output.  Exit 0 when every output matches,
 * 1 on a mismatch or an error, 2 on a usage error.  No file is written.
 * Errors go to standard error as "kbc verify: ..." (spec diagnostics as
 * file:line:col), and standard output then stays empty — with --json,
 * standard output holds the object exactly when the comparison ran.
 * Usage, spec and binding errors are found before the GPU is opened;
 * without a driver or a GPU: "kbc verify: no GPU available: <why>", exit 1.
 *
 * Inputs: uniform in [-1, 1) (or --inputs LO:HI), the sequence of --seed
 * (default 0 in [-1, 1): the inputs of `kbc bench`).  The program is
 * launched VERIFY_LAUNCHES times — plainly, then captured into a CUDA
 * graph, then the graph replayed with the outputs moved to other buffers
 * (its nodes' arguments updated) — and the last launch is compared, so
 * that the differential fuzzer checks the graphs the runtime makes (in
 * branches, and their updates: runtime/exec.c).  Outputs on the GPU are filled with a NaN
 * pattern before each launch, so that an element no kernel writes is found.
 * The comparison of an output is runtime/compare.h's: NaN or infinity at
 * the same element on both sides agree, on one side only they are a
 * mismatch, as is an element the GPU never wrote; over the rest, rel_l2 =
 * ||gpu - cpu|| / ||cpu|| (the absolute ||gpu - cpu|| where ||cpu|| = 0)
 * and max_abs = max |gpu - cpu|. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runtime/compare.h"
#include "runtime/json.h"
#include "runtime/rt_common.h"

static const char verify_help[] =
    "usage: kbc verify [OPTIONS] SPEC [--set AXIS=N]... [--precision fp32|tf32] [--seed N] [--inputs LO:HI] [--json]\n"
    "       kbc verify --batch < LINES\n"
    "\n"
    "Runs SPEC's GPU kernels and the CPU reference interpreter (double\n"
    "accumulation) on the same random inputs (uniform in [LO, HI), default\n"
    "[-1, 1), from --seed, default 0) and compares every output.  The\n"
    "reference interprets the spec as written, before any rewriting pass (a\n"
    "pass that changed its meaning is a mismatch), unless that would take\n"
    "over 4e8 flops at this binding: then the transformed program.  Per\n"
    "output: the relative L2 error ||gpu - cpu|| / ||cpu|| (the absolute\n"
    "||gpu - cpu|| where ||cpu|| = 0) and the largest absolute error; ok within 1e-5 (fp32) or 2e-3 (tf32).  NaN or infinity at\n"
    "the same place on both sides agree; on one side only they are a mismatch,\n"
    "as is an output element no kernel wrote.\n"
    "\n"
    "The tolerance assumes well-conditioned values: where wide sums of\n"
    "products grow large at [-1, 1) (SAM-HQ's attention scores reach the\n"
    "hundreds, and the softmax's gradients then lose 1e-4 in any fp32\n"
    "evaluation), a mismatch can be the inputs' and not the code's; narrow\n"
    "the range (--inputs -0.1:0.1) to tell them apart.\n"
    "\n"
    "With --batch, each line of standard input holds one verification's\n"
    "arguments (SPEC and its options, separated by blanks; empty lines and\n"
    "lines starting with '#' are skipped), and each gets one line of JSON on\n"
    "standard output: the --json object, or {\"spec\", \"ok\": false, \"exit\": N}\n"
    "when it did not run (its messages on standard error).  One process, one\n"
    "GPU context for them all: the differential fuzzer's way of checking\n"
    "thousands of specs, where opening the GPU costs more than a small spec.\n";

static const char verify_tail[] =
    "exit status: 0 every output matches, 1 a mismatch or an error (no GPU\n"
    "included), 2 a usage error (with --batch: the worst of the lines')\n";

enum { V_SET, V_PRECISION, V_SEED, V_INPUTS, V_JSON, V_BATCH, V_N };
enum { VERIFY_LAUNCHES = 3 };
static const cli_option verify_opts[V_N] = {
    [V_SET] = {"set", 0, "AXIS=N", 1, "the value of a var axis (every var axis is needed)"},
    [V_PRECISION] = {"precision", 0, "P", 0, "fp32 (default) or tf32"},
    [V_SEED] = {"seed", 0, "N", 0, "the inputs' random sequence (N >= 0)"},
    [V_INPUTS] = {"inputs", 0, "LO:HI", 0, "the inputs' range (default -1:1)"},
    [V_JSON] = {"json", 0, NULL, 0,
                "one JSON object: {\"spec\", \"kernel\", \"device\", \"precision\",\n"
                "\"seed\", \"tolerance\", \"reference\": \"untransformed\" or\n"
                "\"transformed\", \"axes\": {AXIS: N}, \"outputs\": [{\"name\",\n"
                "\"shape\", \"rel_l2\", \"max_abs\", \"nonfinite_mismatches\",\n"
                "\"unwritten\", \"ok\"}], \"ok\"}; printed only when the comparison\n"
                "ran (errors: standard error only)"},
    [V_BATCH] = {"batch", 0, NULL, 0,
                 "verifications read from standard input, a line of arguments\n"
                 "each, a line of JSON out each (above); no SPEC argument"},
};

/* The elements the CPU reference may hold (8 bytes each, as doubles):
 * inputs, outputs and temporaries together. */
static const int64_t MAX_ELEMENTS = (int64_t)1 << 31;

typedef struct {
  const char *spec, *precision;
  const char *const *sets;
  int n_sets, json, batch;
  uint64_t seed;
  double lo, hi; /* the inputs' range */
  int reported;  /* set by verify(): the comparison ran and was printed */
} verify_args;

/* 0 to go on, -1 after --help, else the usage error's exit status. */
static int parse(int argc, char **argv, cli_value *val, verify_args *v) {
  char **rest;
  int n_rest, rc = cli_parse("verify", verify_opts, V_N, argc, argv, val, &rest, &n_rest);
  if (rc < 0) {
    cli_help(verify_help, verify_opts, V_N, verify_tail);
    return -1;
  }
  if (rc != CLI_OK) return rc;
  if ((v->batch = val[V_BATCH].count)) {
    if (n_rest) return cli_usage("verify", "--batch reads its specs from standard input, not '%s'", rest[0]);
    return 0;
  }
  if ((rc = cli_one_spec("verify", rest, n_rest, &v->spec)) != CLI_OK) return rc;
  v->sets = val[V_SET].values, v->n_sets = val[V_SET].count, v->json = val[V_JSON].count;
  if (val[V_INPUTS].count) {
    char end;
    const char *in = val[V_INPUTS].value;
    if (sscanf(in, "%lf:%lf%c", &v->lo, &v->hi, &end) != 2 || !(v->lo < v->hi) || !isfinite(v->lo) ||
        !isfinite(v->hi))
      return cli_usage("verify", "--inputs takes LO:HI with LO < HI, not '%s'", in);
  }
  if (val[V_PRECISION].count) {
    v->precision = val[V_PRECISION].value;
    if (strcmp(v->precision, "fp32") && strcmp(v->precision, "tf32"))
      return cli_usage("verify", "--precision takes fp32 or tf32, not '%s'", v->precision);
  }
  int64_t n;
  if (val[V_SEED].count) {
    if (!cli_parse_i64(val[V_SEED].value, &n) || n < 0)
      return cli_usage("verify", "--seed takes a number >= 0, not '%s'", val[V_SEED].value);
    v->seed = (uint64_t)n;
  }
  return 0;
}

static void put_shape(kbc_buf *o, int rank, const int64_t *shape) {
  kbc_buf_putc(o, '[');
  for (int k = 0; k < rank; k++) kbc_buf_printf(o, "%s%lld", k ? ", " : "", (long long)shape[k]);
  kbc_buf_putc(o, ']');
}

typedef struct {
  const char *name;
  int rank;
  const int64_t *shape;
  int64_t numel;
  int arg; /* its index among the program's arguments */
  rt_compare_result r;
} out_row;

static void report_text(const verify_args *v, const kbc_program *p, const char *device, double tol,
                        const out_row *rows, int n, int as_stated) {
  printf("verify %s (%s) for ", kbc_program_name(p), v->spec);
  int nv = kbc_program_num_var_axes(p);
  if (!nv) printf("its constant axes");
  for (int i = 0; i < nv; i++) {
    const char *name;
    int64_t value;
    kbc_program_var_axis(p, i, &name, &value);
    printf("%s%s=%lld", i ? " " : "", name, (long long)value);
  }
  printf(" on %s: %s, seed %llu, tolerance %g, against the %s program\n", device, v->precision,
         (unsigned long long)v->seed, tol, as_stated ? "untransformed" : "transformed");
  /* column widths */
  int wn = 6, ws = 5;
  kbc_buf shape = {0};
  for (int i = 0; i < n; i++) {
    rt_buf_clear(&shape);
    put_shape(&shape, rows[i].rank, rows[i].shape);
    if ((int)strlen(rows[i].name) > wn) wn = (int)strlen(rows[i].name);
    if ((int)shape.len > ws) ws = (int)shape.len;
  }
  printf("  %-*s  %-*s  %-10s  %-10s  %s\n", wn, "output", ws, "shape", "rel_l2", "max_abs", "result");
  int bad = 0;
  for (int i = 0; i < n; i++) {
    const rt_compare_result *r = &rows[i].r;
    rt_buf_clear(&shape);
    put_shape(&shape, rows[i].rank, rows[i].shape);
    printf("  %-*s  %-*s  %-10.3e  %-10.3e  %s", wn, rows[i].name, ws, kbc_buf_str(&shape), r->rel_l2, r->max_abs,
           r->ok ? "ok" : "MISMATCH");
    if (r->nonfinite) printf(" (%lld NaN or infinity on one side only)", (long long)r->nonfinite);
    if (r->unwritten) printf(" (%lld elements never written by the GPU)", (long long)r->unwritten);
    putchar('\n');
    bad += !r->ok;
  }
  kbc_buf_free(&shape);
  if (bad) printf("MISMATCH: %d of %d output%s differ%s\n", bad, n, n == 1 ? "" : "s", bad == 1 ? "s" : "");
  else printf("ok: %s match%s within the %s tolerance\n", n == 1 ? "the output" : "all outputs", n == 1 ? "es" : "",
              v->precision);
}

static void report_json(const verify_args *v, const kbc_program *p, const char *device, double tol,
                        const out_row *rows, int n, int as_stated) {
  kbc_buf o = {0};
  int all_ok = 1;
  kbc_buf_puts(&o, "{\"spec\": ");
  rt_json_put_string(&o, cli_spec_name(v->spec));
  kbc_buf_puts(&o, ", \"kernel\": ");
  rt_json_put_string(&o, kbc_program_name(p));
  kbc_buf_puts(&o, ", \"device\": ");
  rt_json_put_string(&o, device);
  kbc_buf_printf(&o, ", \"precision\": \"%s\", \"seed\": %llu, \"tolerance\": ", v->precision,
                 (unsigned long long)v->seed);
  rt_json_put_number(&o, tol);
  kbc_buf_printf(&o, ", \"reference\": \"%s\"", as_stated ? "untransformed" : "transformed");
  kbc_buf_puts(&o, ", \"axes\": {");
  for (int i = 0; i < kbc_program_num_var_axes(p); i++) {
    const char *name;
    int64_t value;
    kbc_program_var_axis(p, i, &name, &value);
    if (i) kbc_buf_puts(&o, ", ");
    rt_json_put_string(&o, name);
    kbc_buf_printf(&o, ": %lld", (long long)value);
  }
  kbc_buf_puts(&o, "}, \"outputs\": [");
  for (int i = 0; i < n; i++) {
    const rt_compare_result *r = &rows[i].r;
    kbc_buf_puts(&o, i ? ", {\"name\": " : "{\"name\": ");
    rt_json_put_string(&o, rows[i].name);
    kbc_buf_puts(&o, ", \"shape\": ");
    put_shape(&o, rows[i].rank, rows[i].shape);
    kbc_buf_puts(&o, ", \"rel_l2\": ");
    rt_json_put_number(&o, r->rel_l2);
    kbc_buf_puts(&o, ", \"max_abs\": ");
    rt_json_put_number(&o, r->max_abs);
    kbc_buf_printf(&o, ", \"nonfinite_mismatches\": %lld, \"unwritten\": %lld, \"ok\": %s}", (long long)r->nonfinite,
                   (long long)r->unwritten, r->ok ? "true" : "false");
    all_ok &= r->ok;
  }
  kbc_buf_printf(&o, "], \"ok\": %s}\n", all_ok ? "true" : "false");
  fputs(kbc_buf_str(&o), stdout);
  kbc_buf_free(&o);
}

static int verify(verify_args *v) {
  cli_gpu_session s = {.ar = kbc_arena_create()};
  kbc_binding_info info;
  kbc_arg *cpu = NULL;
  float **cpu_out = NULL;
  out_row *rows = NULL;
  rt_dptr *moved = NULL; /* the outputs' first buffers, once the last launch has moved them */
  double t0 = rt_now_ms();
  /* every var axis preset: axes no input shape determines are known too */
  int rc = cli_bind_spec("verify", v->spec, v->precision, v->sets, v->n_sets, &s.p, &info);
  if (rc != CLI_OK) goto done;
  rc = CLI_FAIL;
  if (info.elements > MAX_ELEMENTS) {
    cli_error("this binding holds %lld elements in all (inputs, outputs, temporaries), more than the %lld the "
              "CPU reference may hold; give smaller --set values",
              (long long)info.elements, (long long)MAX_ELEMENTS);
    goto done;
  }
  if (cli_open_device(&s.dev)) goto done;
  double t_open = rt_now_ms();
  cli_random rnd = cli_random_start(v->seed, v->lo, v->hi);
  if (cli_dev_args_random(s.dev, s.p, &rnd, 1, &s.g)) goto done;
  /* The CPU's arguments: the same inputs, outputs of its own. */
  cpu = calloc((size_t)s.g.n + 1, sizeof *cpu);
  cpu_out = calloc((size_t)s.g.n + 1, sizeof *cpu_out);
  rows = calloc((size_t)s.g.n + 1, sizeof *rows);
  if (!cpu || !cpu_out || !rows) {
    cli_error("out of host memory");
    goto done;
  }
  /* Outputs: the GPU's filled with the RT_UNWRITTEN pattern, the CPU's apart. */
  int n_out = 0;
  for (int i = 0; i < s.g.n; i++) {
    kbc_arg_info a;
    kbc_program_arg_info(s.p, i, &a);
    cpu[i] = s.g.args[i];
    if (a.role == KBC_ROLE_INPUT) {
      cpu[i].data = s.g.host[i];
      continue;
    }
    size_t numel = (size_t)s.g.numel[i];
    cpu[i].data = cpu_out[i] = malloc(numel * sizeof(float));
    if (!cpu_out[i]) {
      cli_error("out of host memory for output '%s'", a.name);
      goto done;
    }
    if (rt_memset_d32(s.dev, s.g.dptr[i], RT_UNWRITTEN, numel, &s.err)) goto cuda_fail;
    rows[n_out++] = (out_row){.name = a.name, .rank = a.rank, .shape = s.g.shape[i], .numel = s.g.numel[i], .arg = i};
  }
  double t_inputs = rt_now_ms();
  /* Three launches, the outputs refilled with the pattern before each: the
   * runtime launches the kernels plainly, then captures them into a CUDA
   * graph (in branches where their order allows: runtime/exec.c), then —
   * the outputs moved to buffers of their own — replays it with its
   * nodes' arguments changed where they write the outputs and kept where
   * their tensors are the graph's (update_graph); the last launch's
   * outputs are the ones checked. */
  moved = calloc((size_t)n_out + 1, sizeof *moved);
  if (!moved) {
    cli_error("out of host memory");
    goto done;
  }
  for (int launch = 0; launch < VERIFY_LAUNCHES; launch++) {
    for (int r = 0; launch == VERIFY_LAUNCHES - 1 && r < n_out; r++) { /* the outputs elsewhere */
      int i = rows[r].arg;
      if (rt_mem_alloc(s.dev, sizeof(float) * (size_t)(rows[r].numel > 0 ? rows[r].numel : 1), &moved[r], &s.err))
        goto cuda_fail;
      rt_dptr was = s.g.dptr[i]; /* swapped: the session frees the new one, moved[] the first */
      s.g.dptr[i] = moved[r];
      moved[r] = was;
      s.g.args[i].data = (void *)(uintptr_t)s.g.dptr[i];
    }
    for (int r = 0; launch > 0 && r < n_out; r++)
      if (rt_memset_d32(s.dev, s.g.dptr[rows[r].arg], RT_UNWRITTEN, (size_t)rows[r].numel, &s.err)) goto cuda_fail;
    if (kbc_program_launch(s.p, s.g.args, (size_t)s.g.n, NULL) != KBC_OK) {
      cli_error("%s", kbc_last_error());
      goto done;
    }
    if (rt_device_sync(s.dev, &s.err)) goto cuda_fail;
  }
  double t_gpu = rt_now_ms();
  for (int r = 0; r < n_out; r++) {
    int i = rows[r].arg;
    if (rt_memcpy_dtoh(s.dev, s.g.host[i], s.g.dptr[i], sizeof(float) * (size_t)rows[r].numel, &s.err)) goto cuda_fail;
  }
  int as_stated = 0;
  if (kbc_program_run_reference(s.p, cpu, (size_t)s.g.n, &as_stated) != KBC_OK) {
    cli_error("the CPU reference failed: %s", kbc_last_error());
    goto done;
  }
  double t_cpu = rt_now_ms();
  /* -v: where the time went (the differential fuzzer's throughput) */
  if (cli_verbosity() >= 2)
    fprintf(stderr,
            "kbc verify: %.0f ms the spec and opening the device, %.0f ms inputs, %.0f ms compiling and running on "
            "the GPU, %.0f ms the CPU reference\n",
            t_open - t0, t_inputs - t_open, t_gpu - t_inputs, t_cpu - t_gpu);
  double tol = cli_tolerance(v->precision);
  int all_ok = 1;
  for (int r = 0; r < n_out; r++) {
    rows[r].r = rt_compare_f32(s.g.host[rows[r].arg], cpu_out[rows[r].arg], rows[r].numel, tol);
    all_ok &= rows[r].r.ok;
  }
  const char *device = rt_device_info(s.dev)->name;
  if (v->json) report_json(v, s.p, device, tol, rows, n_out, as_stated);
  else report_text(v, s.p, device, tol, rows, n_out, as_stated);
  fflush(stdout);
  v->reported = 1;
  rc = all_ok ? CLI_OK : CLI_FAIL;
  goto done;
cuda_fail:
  cli_error("%s", rt_err_msg(&s.err));
done:
  for (int r = 0; moved && r < n_out; r++)
    if (moved[r]) rt_mem_free(s.dev, moved[r], NULL);
  free(moved);
  for (int i = 0; cpu_out && i < s.g.n; i++) free(cpu_out[i]);
  free(cpu_out);
  free(cpu);
  free(rows);
  cli_gpu_session_close(&s);
  return rc;
}

/* One line of --batch: its arguments parsed and verified, as --json. */
static int verify_line(int argc, char **argv, const char **spec, int *reported) {
  verify_args v = {.precision = "fp32", .lo = -1, .hi = 1};
  cli_value val[V_N];
  int rc = parse(argc, argv, val, &v);
  *spec = v.spec;
  if (rc) return rc < 0 ? CLI_OK : rc;
  if (v.batch) return cli_usage("verify", "--batch inside a --batch line");
  v.json = 1;
  rc = verify(&v);
  *reported = v.reported;
  return rc;
}

int cmd_verify(int argc, char **argv) {
  cli_set_command("verify");
  verify_args v = {.precision = "fp32", .lo = -1, .hi = 1};
  cli_value val[V_N];
  int rc = parse(argc, argv, val, &v);
  if (rc) return rc < 0 ? CLI_OK : rc;
  return v.batch ? cli_batch("verify", verify_line) : verify(&v);
}
