/* cmd_run.c — `kbc run`: a spec on tensors from a file.
 *
 * Before: a spec, an inputs file (safetensors, .npy, .npz or a directory
 * of .npy files, told apart by content: runtime/tensor_io.h), an outputs
 * path whose extension names its format, optional --set/--scalar/--cast.
 * After: one line on standard error saying where it runs (unless -q), the
 * outputs written atomically, or an error naming the file, tensor or axis
 * at fault and the outputs untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kbc.h"
#include "runtime/device.h"
#include "runtime/safetensors.h"
#include "runtime/tensor_io.h"

static const char run_help[] =
    "usage: kbc run [OPTIONS] SPEC --inputs IN --outputs OUT\n"
    "\n"
    "Runs SPEC on the tensors of IN (one per input of the spec, by name, f32)\n"
    "and writes the outputs (f32) to OUT, atomically: on any error an existing\n"
    "OUT is left untouched.  IN is a safetensors file, a .npy file (one array,\n"
    "named by the file), an uncompressed .npz (np.savez) or a directory of .npy\n"
    "files, recognised by content.  OUT's format is its extension's:\n"
    ".safetensors, .npy (a spec with one output), .npz, or a directory (a path\n"
    "ending in '/', or an existing directory; one NAME.npy per output).\n"
    "Prints the backend and device it runs on (unless -q).\n";

enum { R_INPUTS, R_OUTPUTS, R_BACKEND, R_PRECISION, R_SET, R_SCALAR, R_CAST, R_N };
static const cli_option run_opts[R_N] = {
    [R_INPUTS] = {"inputs", 'i', "IN", 0, "the inputs (required)"},
    [R_OUTPUTS] = {"outputs", 'o', "OUT", 0, "where the outputs go (required)"},
    [R_BACKEND] = {"backend", 0, "B", 0,
                   "cuda: generated kernels on the GPU (the default where one is present)\n"
                   "cpu: the reference interpreter (accumulates in double)"},
    [R_PRECISION] = {"precision", 0, "P", 0, "fp32 (default; <= 1e-5 error) or tf32 (GPU only; faster, ~1e-3)"},
    [R_SET] = {"set", 0, "AXIS=N", 1,
               "the value of a var axis (otherwise inferred from the input\n"
               "shapes; a given value is checked against them)"},
    [R_SCALAR] = {"scalar", 0, "NAME=V", 1, "a scalar input (else a 0-d tensor NAME in IN)"},
    [R_CAST] = {"cast", 0, NULL, 0, "convert F64, F16 and BF16 inputs to f32 (without it they are an error)"},
};

typedef struct {
  const char *spec, *inputs, *outputs, *backend, *precision;
  const char *const *sets, *const *scalars;
  int n_sets, n_scalars, cast;
  char why_cpu[300]; /* why the CPU was chosen without --backend */
} run_args;

static int parse(int argc, char **argv, cli_value *v, run_args *r) {
  char **args;
  int n_args, rc = cli_parse("run", run_opts, R_N, argc, argv, v, &args, &n_args);
  if (rc < 0) {
    cli_help(run_help, run_opts, R_N, NULL);
    return -1;
  }
  if (rc != CLI_OK || (rc = cli_one_spec("run", args, n_args, &r->spec)) != CLI_OK) return rc;
  r->inputs = v[R_INPUTS].value, r->outputs = v[R_OUTPUTS].value, r->backend = v[R_BACKEND].value;
  r->precision = v[R_PRECISION].value, r->cast = v[R_CAST].count;
  r->sets = v[R_SET].values, r->n_sets = v[R_SET].count;
  r->scalars = v[R_SCALAR].values, r->n_scalars = v[R_SCALAR].count;
  if (!r->inputs) return cli_usage("run", "--inputs FILE is required");
  if (!r->outputs) return cli_usage("run", "--outputs FILE is required");
  rt_tensor_format fmt;
  rt_err err = {0};
  if (rt_tensors_output_format(r->outputs, &fmt, &err)) {
    cli_rt_error(r->outputs, rt_err_msg(&err));
    rt_err_free(&err);
    return CLI_USAGE;
  }
  if (r->precision && strcmp(r->precision, "fp32") && strcmp(r->precision, "tf32"))
    return cli_usage("run", "--precision takes fp32 or tf32, not '%s'", r->precision);
  if (r->backend && strcmp(r->backend, "cpu") && strcmp(r->backend, "cuda"))
    return cli_usage("run", "--backend takes cpu or cuda, not '%s'", r->backend);
  if (!r->backend) {
    /* The GPU where there is one, else the CPU interpreter. */
    int n = 0;
    int bad = rt_device_count(&n, &err);
    snprintf(r->why_cpu, sizeof r->why_cpu, "%s", bad ? rt_err_msg(&err) : "no CUDA device");
    rt_err_free(&err);
    r->backend = !bad && n > 0 ? "cuda" : "cpu";
  }
  int tf32 = r->precision && !strcmp(r->precision, "tf32");
  if (tf32 && !strcmp(r->backend, "cpu"))
    return cli_usage("run", "--precision tf32 applies to the GPU only, %s; the CPU interpreter computes in double",
                     r->why_cpu[0] ? "and there is no GPU here" : "not to --backend cpu");
  return 0;
}

int cli_check_outputs_path(const kbc_program *p, const char *outputs) {
  int n = 0;
  for (int i = 0; i < kbc_program_num_args(p); i++) {
    kbc_arg_info info;
    kbc_program_arg_info(p, i, &info);
    n += info.role == KBC_ROLE_OUTPUT;
  }
  size_t len = strlen(outputs);
  if (n == 1 || len < 4 || strcmp(outputs + len - 4, ".npy")) return CLI_OK;
  cli_file_error(outputs, "a .npy file holds one array, but the spec has %d outputs; write .npz, .safetensors or a "
                          "directory (a path ending in '/')", n);
  return CLI_USAGE;
}

/* The inputs file's tensors, each F32 — with --cast, F64, F16 and BF16
 * ones converted (into a new file); otherwise any other dtype is an error
 * naming the tensor.  CLI_OK with *in, else CLI_FAIL (printed). */
int cli_load_inputs(const char *path, int cast, rt_st_file **in) {
  rt_err err = {0};
  rt_st_file *f = NULL;
  if (rt_tensors_load(path, &f, &err)) {
    cli_rt_error(path, rt_err_msg(&err));
    rt_err_free(&err);
    return CLI_FAIL;
  }
  int n = rt_st_count(f), need = 0;
  for (int i = 0; i < n; i++) {
    const rt_st_tensor *t = rt_st_get(f, i);
    if (t->dtype == RT_DT_F32) continue;
    int castable = t->dtype == RT_DT_F64 || t->dtype == RT_DT_F16 || t->dtype == RT_DT_BF16;
    if (!cast || !castable) {
      cli_file_error(path, "tensor '%s' has dtype %s, but kbc specs take f32%s", t->name, rt_dtype_name(t->dtype),
                     castable ? "; give --cast to convert it" : "");
      rt_st_free(f);
      return CLI_FAIL;
    }
    need = 1;
  }
  *in = f;
  if (!need) return CLI_OK;
  rt_st_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
  int rc = ts ? CLI_OK : CLI_FAIL;
  for (int i = 0; rc == CLI_OK && i < n; i++) {
    const rt_st_tensor *t = rt_st_get(f, i);
    int64_t numel = t->nbytes / rt_dtype_size(t->dtype);
    double *d = malloc(sizeof(double) * (size_t)(numel ? numel : 1));
    ts[i] = *t;
    ts[i].dtype = RT_DT_F32;
    ts[i].nbytes = sizeof(float) * (size_t)numel;
    ts[i].name = strdup(t->name);
    ts[i].data = malloc(ts[i].nbytes ? ts[i].nbytes : 1);
    if (!d || !ts[i].name || !ts[i].data || rt_st_to_f64(t, d) || rt_st_from_f64(&ts[i], d)) rc = CLI_FAIL;
    free(d);
  }
  rt_st_free(f);
  *in = NULL;
  if (rc == CLI_OK && !rt_st_adopt(path, ts, n, in, &err)) {
    free(ts);
    return CLI_OK;
  }
  if (rc != CLI_OK)
    for (int i = 0; ts && i < n; i++) free(ts[i].name), free(ts[i].data);
  cli_error("out of memory converting the inputs");
  rt_err_free(&err);
  free(ts);
  return CLI_FAIL;
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

/* The outputs shaped by the inputs (binding errors printed); each output
 * appended to args and described in ot[*n_out] (data in the arena).
 * CLI_OK or CLI_FAIL. */
static int output_args(kbc_program *p, kbc_arena *a, const rt_st_file *in, kbc_arg *args, int n_in, rt_st_tensor *ot,
                       int *n_out) {
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
  (void)in;
  return CLI_OK;
}

/* `kbc run --backend cpu`: through the public API (kbc_program_run_cpu). */
static int run(const run_args *r) {
  kbc_arena *a = kbc_arena_create();
  rt_st_file *in = NULL;
  kbc_program *p = NULL;
  rt_err err = {0};
  int rc = cli_compile_spec(r->spec, NULL, &p), n_in, n_out;
  if (rc != CLI_OK || (rc = cli_check_outputs_path(p, r->outputs)) != CLI_OK) goto done;
  rc = CLI_FAIL;
  if (cli_load_inputs(r->inputs, r->cast, &in) != CLI_OK) goto done;
  cli_info("running on the CPU interpreter (%s%s)", r->why_cpu[0] ? "no GPU: " : "",
           r->why_cpu[0] ? r->why_cpu : "--backend cpu");
  int n_all = rt_st_count(in) + r->n_scalars + kbc_program_num_args(p);
  kbc_arg *args = KBC_NEW_ARRAY(a, kbc_arg, n_all + 1);
  float *sv = KBC_NEW_ARRAY(a, float, r->n_scalars + 1);
  rt_st_tensor *ot = KBC_NEW_ARRAY(a, rt_st_tensor, kbc_program_num_args(p) + 1);
  if ((n_in = input_args(r, a, in, args, sv, &rc)) < 0 || (rc = apply_sets(p, a, r)) != CLI_OK) goto done;
  rc = CLI_FAIL;
  kbc_program_set_args_origin(p, r->inputs); /* messages name the inputs file */
  if (output_args(p, a, in, args, n_in, ot, &n_out) != CLI_OK) goto done;
  if (kbc_program_run_cpu(p, args, (size_t)(n_in + n_out)) != KBC_OK) {
    cli_api_error();
    goto done;
  }
  if (rt_tensors_save(r->outputs, ot, n_out, &err)) { /* atomically */
    cli_rt_error(r->outputs, rt_err_msg(&err));
    goto done;
  }
  if (cli_verbosity() > 1) cli_info("wrote %d output%s to %s", n_out, n_out == 1 ? "" : "s", r->outputs);
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
  cli_value v[R_N];
  int rc = parse(argc, argv, v, &r);
  if (rc) return rc < 0 ? CLI_OK : rc;
  if (!strcmp(r.backend, "cuda"))
    return cli_run_cuda(r.spec, r.inputs, r.outputs, r.precision, r.cast, r.sets, r.n_sets);
  return run(&r);
}
