/* cmd_run.c — `kbc run`: a spec on tensors from a safetensors file.
 *
 * Before: a spec, an inputs file, optional --set/--scalar.  After: the
 * outputs written atomically to the outputs file, or an error naming the
 * tensor/axis at fault and the outputs file untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ir/bind.h"
#include "interp/interp.h"
#include "runtime/device.h"
#include "runtime/safetensors.h"
#include "support/diag.h"

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

static int apply_sets(const ir_program *p, kbc_arena *a, const run_args *r, int64_t *vars) {
  for (int i = 0; i < r->n_sets; i++) {
    int rc = cli_apply_set("run", p, a, r->sets[i], vars);
    if (rc != CLI_OK) return rc;
  }
  return 0;
}

typedef struct {
  const char *name;
  double value;
} scalar_arg;

static int run(const run_args *r) {
  kbc_arena *a = kbc_arena_create();
  rt_st_file *in = NULL;
  double **data = NULL;
  ir_program *p = cli_compile(a, r->spec, NULL, NULL);
  int rc = CLI_FAIL;
  rt_err err = {0};
  kbc_diag *d = kbc_diag_create(r->inputs, NULL);
  if (!p) goto done;
  if (rt_st_load(r->inputs, &in, &err)) {
    cli_error("%s", rt_err_msg(&err));
    goto done;
  }
  /* The caller's tensors: the file's, plus --scalar values. */
  int n_file = rt_st_count(in), n_args = 0;
  ir_shape_arg *args = KBC_NEW_ARRAY(a, ir_shape_arg, n_file + r->n_scalars + 1);
  scalar_arg *scalars = KBC_NEW_ARRAY(a, scalar_arg, r->n_scalars + 1);
  for (int i = 0; i < r->n_scalars; i++) {
    const char *v = split_eq(a, r->scalars[i], &scalars[i].name);
    if (!v || !cli_parse_f64(v, &scalars[i].value)) {
      rc = cli_usage("run", "--scalar takes NAME=VALUE (a finite number), not '%s'", r->scalars[i]);
      goto done;
    }
    if (rt_st_find(in, scalars[i].name)) {
      cli_error("scalar '%s' is given both by --scalar and in '%s'", scalars[i].name, r->inputs);
      goto done;
    }
    args[n_args++] = (ir_shape_arg){.name = scalars[i].name, .rank = 0, .shape = NULL};
  }
  for (int i = 0; i < n_file; i++) {
    const rt_st_tensor *t = rt_st_get(in, i);
    args[n_args++] = (ir_shape_arg){.name = t->name, .rank = t->rank, .shape = t->shape};
  }
  int64_t *vars = KBC_NEW_ARRAY(a, int64_t, p->vars.len + 1);
  if ((rc = apply_sets(p, a, r, vars)) != 0) goto done;
  rc = CLI_FAIL;
  ir_binding b;
  if (!ir_infer_vars(p, args, n_args, vars, d) || !ir_bind(p, a, vars, &b, d)) {
    fputs(kbc_diag_text(d), stderr);
    goto done;
  }
  /* Inputs as doubles. */
  data = calloc((size_t)p->tensors.len, sizeof *data);
  if (!data) goto done;
  for (int i = 0; i < p->tensors.len; i++) {
    ir_tensor *t = IR_TENSOR(p, i);
    if (t->role != IR_ROLE_INPUT) continue;
    data[i] = malloc(sizeof(double) * (size_t)(b.numel[i] > 0 ? b.numel[i] : 1));
    if (!data[i]) {
      cli_error("out of memory for input '%s'", t->name);
      goto done;
    }
    const rt_st_tensor *st = rt_st_find(in, t->name);
    if (!st) { /* checked by ir_infer_vars: a --scalar */
      for (int k = 0; k < r->n_scalars; k++)
        if (!strcmp(scalars[k].name, t->name)) data[i][0] = scalars[k].value;
      continue;
    }
    if (st->dtype != RT_DT_F32) {
      cli_error("%s: input '%s' has dtype %s, but the spec declares it f32", r->inputs, t->name,
                rt_dtype_name(st->dtype));
      goto done;
    }
    rt_st_to_f64(st, data[i]);
  }
  if (!ir_interp(p, &b, data, d)) {
    fputs(kbc_diag_text(d), stderr);
    goto done;
  }
  /* Outputs as f32, written atomically. */
  ir_tensor *outs[256];
  int n_out = ir_outputs(p, outs, 256);
  if (n_out > 256) {
    cli_error("more than 256 outputs");
    goto done;
  }
  rt_st_tensor *ot = KBC_NEW_ARRAY(a, rt_st_tensor, n_out);
  for (int i = 0; i < n_out; i++) {
    ir_tensor *t = outs[i];
    ot[i].name = (char *)t->name;
    ot[i].dtype = RT_DT_F32;
    ot[i].rank = t->rank;
    for (int k = 0; k < t->rank; k++) ot[i].shape[k] = b.shape[t->id][k];
    ot[i].nbytes = sizeof(float) * (size_t)b.numel[t->id];
    ot[i].data = kbc_arena_alloc(a, ot[i].nbytes);
    rt_st_from_f64(&ot[i], data[t->id]);
  }
  if (rt_st_save(r->outputs, ot, n_out, &err)) {
    cli_error("%s", rt_err_msg(&err));
    goto done;
  }
  rc = CLI_OK;
done:
  if (data) {
    ir_interp_release(p, data);
    for (int i = 0; i < p->tensors.len; i++)
      if (IR_TENSOR(p, i)->role == IR_ROLE_INPUT) free(data[i]);
    free(data);
  }
  rt_st_free(in);
  rt_err_free(&err);
  kbc_diag_destroy(d);
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
