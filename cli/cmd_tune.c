/* cmd_tune.c — `kbc tune`: the code generation switches' candidate
 * settings for one spec at one binding timed on the GPU, the fastest kept
 * as the program's tune record (runtime/tune.h), which every later
 * compilation of it at that binding, target and precision uses (`kbc run`,
 * `bench`, `verify`, the API and the Python package alike).
 *
 * The search: from the defaults, one switch at a time in the order of
 * `knobs`, each of its other values tried over the best settings so far
 * and kept where its median is below the best's by more than TUNE_MARGIN
 * (a coordinate descent: the switches mostly act on different kernels);
 * the winner is timed again against the defaults side by side (D B B D:
 * the defaults ran first, while the clocks warmed up) and stored only
 * where it still wins by the margin (else the record says "the defaults").
 * A candidate whose generated CUDA is the same as one already timed is not
 * run again: most switches do not touch most programs.  Every candidate's
 * outputs are compared with the defaults' on the same inputs (relative L2
 * within twice the precision's tolerance, as two results each within it
 * of the truth may differ); one that differs is reported and never kept.
 *
 * Without a GPU only --show, --clear and --store with an explicit
 * --target work (they need no timing). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kbc.h"
#include "runtime/cache.h"
#include "runtime/compare.h"
#include "runtime/device.h"
#include "runtime/json.h"

#define TUNE_MARGIN 0.02

/* The switches tried and the values other than their defaults
 * (docs/ARCHITECTURE.md, "Switches"); the testing values (KBC_GEMM_WGMMA
 * 2 and 3, KBC_GEMM_FOLD 2) are not among them, but KBC_PERSIST 2 is: the
 * persistent kernel wherever it can be, its rule aside (timed here); so is
 * KBC_GEMM_PREP 2, every TF32 wgmma operand copied rounded, and
 * KBC_GEMM_PACK 2, every x-major wgmma operand packed k-major, and
 * KBC_ROWS_ACROSS 2, every rows team whose loads allow it a warp apart,
 * and KBC_GEMM_GATHER 2, a padded convolution's input on wgmma at fp32 too,
 * and KBC_GEMM_SMALL 2, the GEMM family from 2 rows.  (KBC_CLUSTER is not:
 * 2.8-35x slower wherever timed, docs/PERSISTENT.md "Session 41".) */
static const struct {
  const char *name;
  const char *values[3];
  int fp32_only;
} knobs[] = {
    {"KBC_GEMM_WGMMA", {"0"}, 0},   {"KBC_GEMM_WGMMA_T", {"1"}, 0}, {"KBC_FP32_MMA", {"0", "1"}, 1}, {"KBC_GEMM_STAGES", {"2", "3", "4"}, 0},
    {"KBC_GEMM_MIN_BLOCKS", {"1", "2"}, 0}, {"KBC_GEMM_WIN", {"0", "2"}, 0},  {"KBC_GEMM_FOLD", {"0"}, 0},
    {"KBC_GEMM_TAIL", {"0"}, 0},    {"KBC_GEMM_SPLIT", {"0"}, 0},     {"KBC_STREAM_SPLIT", {"1"}, 0},   {"KBC_ROWS_PARTS", {"1"}, 0},
    {"KBC_NO_ATTN", {"1"}, 0},      {"KBC_ATTN_MIN_BLOCKS", {"1", "2"}, 0}, {"KBC_UNROLL", {"1", "8"}, 0},
    {"KBC_POINT_UNROLL", {"2", "4"}, 0}, {"KBC_IDX32", {"0"}, 0},  {"KBC_PERSIST", {"2"}, 0},
    {"KBC_PDL", {"1"}, 0},          {"KBC_GEMM_PREP", {"0", "2"}, 0},
    {"KBC_GEMM_PACK", {"0", "2"}, 0}, {"KBC_ROWS_ACROSS", {"0", "2"}, 0}, {"KBC_CONV_FFMA", {"1"}, 1},
    {"KBC_GEMM_GATHER", {"0", "2"}, 0}, {"KBC_GEMM_SMALL", {"0", "2"}, 0},
};
enum { N_KNOBS = sizeof knobs / sizeof knobs[0], MAX_CANDIDATES = 64 };

static const char tune_help[] =
    "usage: kbc tune [OPTIONS] SPEC --set AXIS=N... [--precision fp32|tf32] [--iters N] [--json]\n"
    "       kbc tune SPEC --set AXIS=N... (--show | --clear | --store SETTINGS) [--target T]\n"
    "\n"
    "Times code generation settings for SPEC at one binding on the GPU (random\n"
    "inputs, median of N launches each, CUDA events): from the defaults, one\n"
    "switch at a time (GEMM stages, wgmma, 3xTF32 or FFMA, occupancy, the\n"
    "window, the fold and its tail, stream split, the attention family,\n"
    "unrolling, 32-bit indices, the persistent kernel, programmatic launch),\n"
    "each value kept where it is faster by more than 2%; settings that\n"
    "generate the same code are not run twice, and every candidate's\n"
    "outputs are checked against the defaults'.  The\n"
    "fastest, timed again against the defaults side by side (defaults, it,\n"
    "it, defaults) and kept only where it still wins by 2%, is stored in\n"
    "the kernel cache's directory as the program's tune record, which every\n"
    "later compilation of the same program (comments and spacing aside) at\n"
    "that binding, target and precision uses, unless KBC_TUNE=0.  Switches\n"
    "set in the environment override the record.\n";

enum { T_SET, T_PRECISION, T_ITERS, T_JSON, T_SHOW, T_CLEAR, T_STORE, T_TARGET, T_N };
static const cli_option tune_opts[T_N] = {
    [T_SET] = {"set", 0, "AXIS=N", 1, "the value of a var axis (every var axis is needed)"},
    [T_PRECISION] = {"precision", 0, "P", 0, "fp32 (default) or tf32: each has records of its own"},
    [T_ITERS] = {"iters", 0, "N", 0, "timed launches per candidate, 3 to 100000 (default 30)"},
    [T_JSON] = {"json", 0, NULL, 0,
                "one JSON object: {\"spec\", \"device\", \"precision\", \"iters\", \"candidates\":\n"
                "[{\"settings\", \"median_us\", \"ratio\", \"status\"}], \"best\", \"best_us\",\n"
                "\"default_us\", \"stored\"}"},
    [T_SHOW] = {"show", 0, NULL, 0, "print the record's settings for this binding (no timing)"},
    [T_CLEAR] = {"clear", 0, NULL, 0, "remove the record for this binding"},
    [T_STORE] = {"store", 0, "SETTINGS", 0, "store SETTINGS (\"KBC_X=V ...\") as the record, untimed"},
    [T_TARGET] = {"target", 0, "T", 0, "with --show, --clear or --store: the target (default: the GPU's)"},
};

typedef struct {
  char settings[512];
  double us;       /* median; NAN when not run */
  double rel;      /* against the defaults' outputs */
  const char *status; /* "ok", "wrong", "failed", or same's text */
  char same[600];     /* "same code as ..." */
} candidate;

typedef struct {
  const char *spec, *precision;
  const char *const *sets;
  int n_sets, iters, json;
  rt_device *dev;
  cli_dev_args g;      /* the arguments, shared by every candidate (one binding) */
  float **want;        /* the defaults' outputs, by argument (NULL for inputs) */
  char (*hash)[65];    /* each candidate's generated CUDA */
  int n;
  candidate c[MAX_CANDIDATES];
} tuner;

static void settings_of(const int *choice, char *out, size_t size) {
  size_t at = 0;
  out[0] = 0;
  for (int k = 0; k < N_KNOBS; k++)
    if (choice[k] >= 0 && at < size)
      at += (size_t)snprintf(out + at, size - at, "%s%s=%s", at ? " " : "", knobs[k].name,
                             knobs[k].values[choice[k]]);
}

/* Times p on the shared arguments: the median in us into *us. */
static int time_program(tuner *t, kbc_program *p, double *us) {
  const kbc_arg *args = t->g.args;
  return cli_time_launches(t->dev, p, &args, 1, t->g.n, t->iters, 1, us, NULL);
}

/* The outputs' worst relative L2 against the defaults' (want; a
 * non-finite mismatch or an unwritten element: infinity), or 0 after
 * storing them as want where it is NULL.  *fail set on a CUDA error or
 * without host memory (printed). */
static double check_outputs(tuner *t, kbc_program *p, int *fail) {
  double worst = 0;
  rt_err err = {0};
  *fail = 0;
  for (int i = 0; i < t->g.n && !*fail; i++) {
    kbc_arg_info info;
    if (kbc_program_arg_info(p, i, &info) != KBC_OK || info.role != KBC_ROLE_OUTPUT) continue;
    size_t bytes = sizeof(float) * (size_t)t->g.numel[i];
    float *got = malloc(bytes);
    if (!got || rt_memcpy_dtoh(t->dev, got, t->g.dptr[i], bytes, &err)) {
      cli_error("%s", got ? rt_err_msg(&err) : "out of host memory for the outputs");
      free(got);
      *fail = 1;
      break;
    }
    if (!t->want[i]) {
      t->want[i] = got;
      continue;
    }
    rt_compare_result r = rt_compare_f32(got, t->want[i], t->g.numel[i], INFINITY);
    double e = r.nonfinite || r.unwritten ? INFINITY : r.rel_l2;
    if (e > worst) worst = e;
    free(got);
  }
  rt_err_free(&err);
  return worst;
}

/* Runs candidate settings s: its entry in t->c, CLI_OK unless the GPU
 * failed in a way that stops the search (CLI_FAIL). */
static int run_candidate(tuner *t, const char *s) {
  candidate *c = &t->c[t->n];
  snprintf(c->settings, sizeof c->settings, "%s", s);
  c->us = NAN, c->rel = NAN, c->status = "failed";
  kbc_program *p = NULL;
  kbc_binding_info info;
  int idx = t->n++;
  if (cli_bind_spec_with("tune", t->spec, t->precision, NULL, s, t->sets, t->n_sets, &p, &info) != CLI_OK)
    return CLI_OK; /* reported; the search goes on */
  char *cuda = NULL;
  size_t len = 0;
  if (kbc_program_emit(p, "cuda", &cuda, &len) != KBC_OK) {
    cli_error("%s", kbc_last_error());
    kbc_program_destroy(p);
    return CLI_OK;
  }
  rt_sha256_hex(cuda, len, t->hash[idx]);
  kbc_free(cuda);
  for (int j = 0; j < idx; j++)
    if (!strcmp(t->hash[j], t->hash[idx])) {
      snprintf(c->same, sizeof c->same, "same code as %s", j ? t->c[j].settings : "the defaults");
      c->status = c->same;
      c->us = t->c[j].us, c->rel = t->c[j].rel;
      kbc_program_destroy(p);
      return CLI_OK;
    }
  int fail = 0;
  int rc = time_program(t, p, &c->us);
  if (rc == CLI_OK) c->rel = check_outputs(t, p, &fail);
  kbc_program_destroy(p);
  if (rc != CLI_OK || fail) {
    c->us = NAN;
    return idx == 0 ? CLI_FAIL : CLI_OK; /* without the defaults there is nothing to compare */
  }
  double tol = 2 * cli_tolerance(t->precision);
  c->status = c->rel <= tol ? "ok" : "wrong";
  if (c->rel > tol)
    cli_error("%s: outputs %.3g off the defaults' (relative L2; the tolerance is %.1g): this is a bug in kbc",
              s[0] ? s : "the defaults", c->rel, tol);
  return CLI_OK;
}

/* The defaults and settings s timed side by side, D S S D: the means of
 * each pair into *d_us and *s_us. */
static int confirm(tuner *t, const char *s, double *d_us, double *s_us) {
  kbc_program *p[2] = {NULL, NULL};
  kbc_binding_info info;
  double us[4];
  int rc = CLI_FAIL;
  if (cli_bind_spec_with("tune", t->spec, t->precision, NULL, "", t->sets, t->n_sets, &p[0], &info) != CLI_OK ||
      cli_bind_spec_with("tune", t->spec, t->precision, NULL, s, t->sets, t->n_sets, &p[1], &info) != CLI_OK)
    goto done;
  static const int order[4] = {0, 1, 1, 0};
  for (int i = 0; i < 4; i++)
    if (time_program(t, p[order[i]], &us[i]) != CLI_OK) goto done;
  *d_us = (us[0] + us[3]) / 2, *s_us = (us[1] + us[2]) / 2;
  rc = CLI_OK;
done:
  kbc_program_destroy(p[0]);
  kbc_program_destroy(p[1]);
  return rc;
}

static void print_json(const tuner *t, const char *best, double best_us, double default_us, int stored) {
  kbc_buf j = {0};
  kbc_buf_puts(&j, "{\"spec\": ");
  rt_json_put_string(&j, cli_spec_name(t->spec));
  kbc_buf_puts(&j, ", \"device\": ");
  rt_json_put_string(&j, rt_device_info(t->dev)->name);
  kbc_buf_puts(&j, ", \"precision\": ");
  rt_json_put_string(&j, t->precision);
  kbc_buf_printf(&j, ", \"iters\": %d, \"candidates\": [", t->iters);
  for (int i = 0; i < t->n; i++) {
    kbc_buf_puts(&j, i ? ", {\"settings\": " : "{\"settings\": ");
    rt_json_put_string(&j, t->c[i].settings);
    kbc_buf_puts(&j, ", \"median_us\": ");
    rt_json_put_number(&j, t->c[i].us);
    kbc_buf_puts(&j, ", \"ratio\": ");
    rt_json_put_number(&j, t->c[i].us / t->c[0].us);
    kbc_buf_puts(&j, ", \"status\": ");
    rt_json_put_string(&j, t->c[i].status);
    kbc_buf_puts(&j, "}");
  }
  kbc_buf_puts(&j, "], \"best\": ");
  rt_json_put_string(&j, best);
  kbc_buf_puts(&j, ", \"best_us\": ");
  rt_json_put_number(&j, best_us);
  kbc_buf_puts(&j, ", \"default_us\": ");
  rt_json_put_number(&j, default_us);
  kbc_buf_printf(&j, ", \"stored\": %s}\n", stored ? "true" : "false");
  fputs(kbc_buf_str(&j), stdout);
  kbc_buf_free(&j);
}

static int search(tuner *t) {
  int choice[N_KNOBS], best_choice[N_KNOBS];
  for (int k = 0; k < N_KNOBS; k++) choice[k] = best_choice[k] = -1;
  char s[512];
  if (run_candidate(t, "") != CLI_OK) return CLI_FAIL; /* the defaults ("": not the record) */
  int best = 0;
  for (int k = 0; k < N_KNOBS; k++) {
    if (knobs[k].fp32_only && !strcmp(t->precision, "tf32")) continue;
    for (int v = 0; v < 3 && knobs[k].values[v] && t->n < MAX_CANDIDATES; v++) {
      memcpy(choice, best_choice, sizeof choice);
      choice[k] = v;
      settings_of(choice, s, sizeof s);
      if (run_candidate(t, s) != CLI_OK) return CLI_FAIL;
      const candidate *c = &t->c[t->n - 1];
      if (!strcmp(c->status, "ok") && c->us < t->c[best].us * (1 - TUNE_MARGIN)) {
        best = t->n - 1;
        memcpy(best_choice, choice, sizeof choice);
      }
    }
  }
  /* the best settings timed again against the defaults side by side, in
   * the order D B B D (the defaults ran first, while the clocks warmed
   * up): kept only where they still win by the margin */
  settings_of(best_choice, s, sizeof s);
  double d_us = t->c[0].us, b_us = t->c[best].us;
  int kept = 0;
  if (best) {
    if (confirm(t, s, &d_us, &b_us) != CLI_OK) return CLI_FAIL;
    kept = b_us < d_us * (1 - TUNE_MARGIN);
  }
  char chosen[512];
  snprintf(chosen, sizeof chosen, "%s", kept ? s : "");
  kbc_program *p = NULL;
  kbc_binding_info info;
  int stored = 0;
  if (cli_bind_spec_with("tune", t->spec, t->precision, NULL, "", t->sets, t->n_sets, &p, &info) == CLI_OK) {
    char comment[1024];
    snprintf(comment, sizeof comment,
             "kbc tune %s on %s, %s, median of %d launches, side by side: %.1f us (the defaults %.1f us)",
             cli_spec_name(t->spec), rt_device_info(t->dev)->name, t->precision, t->iters, b_us, d_us);
    if (kbc_program_tune_store(p, chosen, comment) == KBC_OK) stored = 1;
    else cli_error("%s", kbc_last_error());
    kbc_program_destroy(p);
  }
  if (t->json) {
    print_json(t, chosen, kept ? b_us : d_us, d_us, stored);
  } else {
    printf("kbc tune: %s on %s (%s), median of %d launches each\n", cli_spec_name(t->spec),
           rt_device_info(t->dev)->name, t->precision, t->iters);
    printf("  %-60s %10s %8s  %s\n", "settings", "median us", "ratio", "");
    for (int i = 0; i < t->n; i++) {
      const candidate *c = &t->c[i];
      printf("  %-60s %10.1f %8.3f  %s\n", i ? c->settings : "(the defaults)", c->us, c->us / t->c[0].us,
             c->status);
    }
    if (best)
      printf("side by side (D B B D): %s %.1f us, the defaults %.1f (%.3fx): %s\n", s, b_us, d_us, b_us / d_us,
             kept ? "kept" : "within the margin, not kept");
    printf("best: %s%s\n", kept ? chosen : "the defaults", stored ? "; stored as the program's tune record" : "");
  }
  return stored ? CLI_OK : CLI_FAIL;
}

/* --show, --clear, --store: the record alone. */
static int record_only(const cli_value *v, const char *spec, const char *precision) {
  kbc_program *p = NULL;
  kbc_binding_info info;
  const char *target = v[T_TARGET].count ? v[T_TARGET].value : NULL;
  int rc = cli_bind_spec_with("tune", spec, precision, target, NULL, v[T_SET].values, v[T_SET].count, &p, &info);
  if (rc != CLI_OK) return rc;
  if (v[T_SHOW].count) {
    char *s = NULL;
    if (kbc_program_tune_load(p, &s) != KBC_OK) rc = CLI_FAIL, cli_error("%s", kbc_last_error());
    else if (!s) printf("no tune record\n");
    else printf("settings: %s\n", s[0] ? s : "(the defaults)");
    kbc_free(s);
  } else {
    const char *settings = v[T_STORE].count ? v[T_STORE].value : NULL;
    kbc_status st = kbc_program_tune_store(p, settings, settings ? "stored by kbc tune --store" : NULL);
    if (st != KBC_OK) {
      cli_error("%s", kbc_last_error());
      rc = st == KBC_ERROR_ARGUMENT ? CLI_USAGE : CLI_FAIL; /* settings that do not parse */
    }
  }
  kbc_program_destroy(p);
  return rc;
}

int cmd_tune(int argc, char **argv) {
  cli_set_command("tune");
  cli_value v[T_N];
  char **rest;
  int n_rest, rc = cli_parse("tune", tune_opts, T_N, argc, argv, v, &rest, &n_rest);
  if (rc < 0) {
    cli_help(tune_help, tune_opts, T_N, NULL);
    return CLI_OK;
  }
  if (rc != CLI_OK) return rc;
  const char *spec;
  if ((rc = cli_one_spec("tune", rest, n_rest, &spec)) != CLI_OK) return rc;
  const char *precision = v[T_PRECISION].count ? v[T_PRECISION].value : "fp32";
  if (strcmp(precision, "fp32") && strcmp(precision, "tf32"))
    return cli_usage("tune", "--precision takes fp32 or tf32, not '%s'", precision);
  int modes = v[T_SHOW].count + v[T_CLEAR].count + v[T_STORE].count;
  if (modes > 1) return cli_usage("tune", "--show, --clear and --store exclude each other");
  if (v[T_TARGET].count && !modes)
    return cli_usage("tune", "--target goes with --show, --clear or --store (tuning runs on the GPU's own)");
  if (modes) return record_only(v, spec, precision);
  if (!strcmp(spec, "-")) return cli_usage("tune", "tune compiles the spec once per candidate: give a file, not -");
  int64_t iters = 30;
  if (v[T_ITERS].count && (!cli_parse_i64(v[T_ITERS].value, &iters) || iters < 3 || iters > 100000))
    return cli_usage("tune", "--iters takes a number from 3 to 100000, not '%s'", v[T_ITERS].value);

  tuner *t = calloc(1, sizeof *t);
  if (!t) {
    cli_error("out of memory");
    return CLI_FAIL;
  }
  *t = (tuner){.spec = spec, .precision = precision, .sets = v[T_SET].values, .n_sets = v[T_SET].count,
               .iters = (int)iters, .json = v[T_JSON].count};
  kbc_program *p = NULL;
  kbc_binding_info info;
  cli_random rnd = cli_random_start(0, -1, 1);
  /* the arguments, from the defaults' program (every candidate binds the same) */
  if ((rc = cli_bind_spec_with("tune", spec, precision, NULL, "", t->sets, t->n_sets, &p, &info)) != CLI_OK) goto done;
  rc = CLI_FAIL;
  if (cli_open_device(&t->dev) || cli_dev_args_random(t->dev, p, &rnd, 0, &t->g)) goto done;
  t->want = calloc((size_t)t->g.n + 1, sizeof *t->want);
  t->hash = calloc(MAX_CANDIDATES, sizeof *t->hash);
  if (!t->want || !t->hash) {
    cli_error("out of memory");
    goto done;
  }
  rc = search(t);
done:
  kbc_program_destroy(p);
  for (int i = 0; t->want && i < t->g.n; i++) free(t->want[i]);
  free(t->want);
  free(t->hash);
  if (t->dev) cli_dev_args_free(t->dev, &t->g);
  rt_device_close(t->dev);
  free(t);
  return rc;
}
