/* cmd_run.c — `kbc run`: a spec on tensors from a safetensors file.
 *
 * Before: a spec, an inputs file, optional --set/--scalar.  After: the
 * outputs written atomically to the outputs file, or an error naming the
 * tensor/axis at fault and the outputs file untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kbc.h"
#include "runtime/device.h"
#include "runtime/safetensors.h"

static const char run_help[] =
    "usage: kbc run SPEC --inputs IN.safetensors --outputs OUT.safetensors\n"
    "               [--backend cuda|cpu] [--precision fp32|tf32] [--set AXIS=N]...\n"
    "               [--scalar NAME=V]...\n"
    "\n"
    "Runs SPEC on the tensors of IN (one per input of the spec, by name, f32)\n"
    "and writes the outputs to OUT (f32), atomically: on any error an existing\n"
    "OUT is left untouched.\n"
    "\n"
    "  --backend cuda   generated kernels on the GPU (the default where one is present)\n"
    "  --backend cpu    the reference interpreter (accumulates in double)\n"
    "  --precision P    fp32 (default; <= 1e-5 error) or tf32 (GPU; faster, ~1e-3)\n"
    "  --set AXIS=N     the value of a var axis (otherwise inferred from the\n"
    "                   input shapes; a given value is checked against them)\n"
    "  --scalar NAME=V  a scalar input (else a 0-d tensor NAME in IN)\n";

enum { MAX_ARGS = 256 };

typedef struct {
  const char *spec, *inputs, *outputs, *backend, *precision;
  const char *sets[MAX_ARGS], *scalars[MAX_ARGS];
  int n_sets, n_scalars;
} run_args;

static int parse(int argc, char **argv, run_args *r) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(run_help, stdout);
      return -1;
    }
    if (!strcmp(a, "--inputs") || !strcmp(a, "--outputs") || !strcmp(a, "--backend") || !strcmp(a, "--set") ||
        !strcmp(a, "--scalar") || !strcmp(a, "--precision")) {
      if (i + 1 >= argc) return cli_usage("run", "%s needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--inputs")) r->inputs = v;
      else if (!strcmp(a, "--outputs")) r->outputs = v;
      else if (!strcmp(a, "--backend")) r->backend = v;
      else if (!strcmp(a, "--precision")) r->precision = v;
      else if (!strcmp(a, "--set")) {
        if (r->n_sets >= MAX_ARGS) return cli_usage("run", "too many --set options");
        r->sets[r->n_sets++] = v;
      } else if (!strcmp(a, "--scalar")) {
        if (r->n_scalars >= MAX_ARGS) return cli_usage("run", "too many --scalar options");
        r->scalars[r->n_scalars++] = v;
      }
      continue;
    }
    if (a[0] == '-' && a[1]) return cli_usage("run", "unknown option '%s'", a);
    if (r->spec) return cli_usage("run", "more than one spec given ('%s' and '%s')", r->spec, a);
    r->spec = a;
  }
  if (!r->spec) return cli_usage("run", "no spec file given");
  if (!r->inputs) return cli_usage("run", "--inputs FILE is required");
  if (!r->outputs) return cli_usage("run", "--outputs FILE is required");
  if (r->precision && strcmp(r->precision, "fp32") && strcmp(r->precision, "tf32"))
    return cli_usage("run", "--precision takes fp32 or tf32, not '%s'", r->precision);
  if (!r->backend) {
    /* The GPU where there is one, else the CPU interpreter. */
    int n = 0;
    r->backend = rt_device_count(&n, NULL) == 0 && n > 0 ? "cuda" : "cpu";
  }
  if (strcmp(r->backend, "cpu") && strcmp(r->backend, "cuda"))
    return cli_usage("run", "--backend takes cpu or cuda, not '%s'", r->backend);
  return 0;
}

/* Splits "NAME=VALUE"; returns the value part or NULL. */
static const char *split_eq(kbc_arena *a, const char *s, const char **name) {
  const char *eq = strchr(s, '=');
  if (!eq || eq == s) return NULL;
  *name = kbc_arena_strndup(a, s, (size_t)(eq - s));
  return eq + 1;
}

/* --set values as presets of p. */
static int apply_sets(kbc_program *p, kbc_arena *a, const run_args *r) {
  for (int i = 0; i < r->n_sets; i++) {
    const char *name = NULL;
    int64_t v = 0;
    int rc = cli_parse_set("run", a, r->sets[i], &name, &v);
    if (rc != CLI_OK) return rc;
    if (kbc_program_bind_axis(p, name, v) != KBC_OK) {
      cli_error("--set %s: %s", r->sets[i], kbc_last_error());
      return CLI_FAIL;
    }
  }
  return CLI_OK;
}

/* The caller's tensors: --scalar values (as f32, like every input; their
 * values in sv), then the file's tensors, into args; their count, or -1
 * after an error (printed; *rc its exit status). */
static int input_args(const run_args *r, kbc_arena *a, const rt_st_file *in, kbc_arg *args, float *sv, int *rc) {
  int n = 0;
  for (int i = 0; i < r->n_scalars; i++) {
    const char *name = NULL;
    double v = 0;
    const char *text = split_eq(a, r->scalars[i], &name);
    if (!text || !cli_parse_f64(text, &v)) {
      *rc = cli_usage("run", "--scalar takes NAME=VALUE (a finite number), not '%s'", r->scalars[i]);
      return -1;
    }
    if (rt_st_find(in, name)) {
      cli_error("scalar '%s' is given both by --scalar and in '%s'", name, r->inputs);
      return -1;
    }
    sv[i] = (float)v;
    args[n++] = (kbc_arg){name, &sv[i], 0, NULL, KBC_F32};
  }
  for (int i = 0; i < rt_st_count(in); i++) {
    const rt_st_tensor *t = rt_st_get(in, i); /* its dtype is checked once the binding holds */
    args[n++] = (kbc_arg){t->name, t->data, t->rank, t->shape, KBC_F32};
  }
  return n;
}

/* The outputs shaped by the inputs (binding errors printed), then every
 * input's dtype checked; each output appended to args and described in
 * ot[*n_out] (data in the arena).  CLI_OK or CLI_FAIL. */
static int output_args(kbc_program *p, kbc_arena *a, const run_args *r, const rt_st_file *in, kbc_arg *args,
                       int n_in, rt_st_tensor *ot, int *n_out) {
  int n = kbc_program_num_args(p);
  *n_out = 0;
  for (int i = 0; i < n; i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    if (info.role != KBC_ROLE_OUTPUT) continue;
    rt_st_tensor *t = &ot[*n_out];
    int rank = 0;
    if (kbc_program_output_shape(p, args, (size_t)n_in, info.name, t->shape, &rank) != KBC_OK) {
      cli_api_error();
      return CLI_FAIL;
    }
    int64_t numel = 1;
    for (int k = 0; k < rank; k++) numel *= t->shape[k];
    t->name = (char *)info.name;
    t->dtype = RT_DT_F32;
    t->rank = rank;
    t->nbytes = sizeof(float) * (size_t)numel;
    t->data = kbc_arena_alloc(a, t->nbytes ? t->nbytes : 1);
    args[n_in + (*n_out)++] = (kbc_arg){t->name, t->data, rank, t->shape, KBC_F32};
  }
  for (int i = 0; i < n; i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    const rt_st_tensor *st = info.role == KBC_ROLE_INPUT ? rt_st_find(in, info.name) : NULL;
    if (st && st->dtype != RT_DT_F32) {
      cli_error("%s: input '%s' has dtype %s, but the spec declares it f32", r->inputs, info.name,
                rt_dtype_name(st->dtype));
      return CLI_FAIL;
    }
  }
  return CLI_OK;
}

/* `kbc run --backend cpu`: through the public API (kbc_program_run_cpu). */
static int run(const run_args *r) {
  kbc_arena *a = kbc_arena_create();
  rt_st_file *in = NULL;
  kbc_program *p = NULL;
  rt_err err = {0};
  int rc = cli_compile_spec(r->spec, NULL, &p), n_in, n_out;
  if (rc != CLI_OK) goto done;
  rc = CLI_FAIL;
  if (rt_st_load(r->inputs, &in, &err)) {
    cli_error("%s", rt_err_msg(&err));
    goto done;
  }
  int n_all = rt_st_count(in) + r->n_scalars + kbc_program_num_args(p);
  kbc_arg *args = KBC_NEW_ARRAY(a, kbc_arg, n_all + 1);
  float *sv = KBC_NEW_ARRAY(a, float, r->n_scalars + 1);
  rt_st_tensor *ot = KBC_NEW_ARRAY(a, rt_st_tensor, kbc_program_num_args(p) + 1);
  if ((n_in = input_args(r, a, in, args, sv, &rc)) < 0 || (rc = apply_sets(p, a, r)) != CLI_OK) goto done;
  rc = CLI_FAIL;
  kbc_program_set_args_origin(p, r->inputs); /* messages name the inputs file */
  if (output_args(p, a, r, in, args, n_in, ot, &n_out) != CLI_OK) goto done;
  if (kbc_program_run_cpu(p, args, (size_t)(n_in + n_out)) != KBC_OK) {
    cli_api_error();
    goto done;
  }
  if (rt_st_save(r->outputs, ot, n_out, &err)) { /* atomically */
    cli_error("%s", rt_err_msg(&err));
    goto done;
  }
  rc = CLI_OK;
done:
  rt_st_free(in);
  rt_err_free(&err);
  kbc_program_destroy(p);
  kbc_arena_destroy(a);
  return rc;
}

int cmd_run(int argc, char **argv) {
  run_args r = {0};
  int rc = parse(argc, argv, &r);
  if (rc) return rc < 0 ? CLI_OK : rc;
  if (!strcmp(r.backend, "cuda")) return cli_run_cuda(r.spec, r.inputs, r.outputs, r.precision, r.sets, r.n_sets);
  return run(&r);
}
