/* api.c — the public C API (include/kbc.h) over the compiler and runtime.
 *
 * A kbc_program owns an arena with its IR, the presets of its var axes,
 * and, after the first launch, an rt_exec (device, module, workspace).
 * Errors: every entry point returns a kbc_status and leaves the message in
 * a thread-local buffer read by kbc_last_error(). */
#include "kbc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cg.h"
#include "frontend/ast.h"
#include "ir/bind.h"
#include "ir/cost.h"
#include "interp/interp.h"
#include "passes/pipeline.h"
#include "runtime/cache.h"
#include "runtime/exec.h"
#include "runtime/plan.h"
#include "runtime/special.h"
#include "runtime/tune.h"
#include "support/env.h"
#include "support/name.h"

#include "support/version.h"

/* kbc_program_run_reference: the most flops the untransformed program may take. */
#define KBC_REFERENCE_MAX_FLOPS 4e8
#define KBC_VERSION_STRING KBC_VERSION

/* A launch's arguments as bind_args saw them — their names, ranks and
 * shapes in order — with the binding it made and, by tensor id, the
 * argument that gave each tensor (-1: none).  A launch whose arguments
 * have the same layout reuses the binding: the var axes' inference, the
 * shapes' evaluation and the checks give the same result, and only the
 * pointers differ (a framework's fresh activations, rotated inputs). */
typedef struct {
  kbc_arena *arena; /* NULL: none yet */
  size_t n;
  const char **names;
  int *rank;
  int64_t **shape;
  int *arg_of;
  ir_binding b;
} launch_layout;

struct kbc_program {
  kbc_arena *arena;
  ir_program *ir;
  const char *file, *source, *kname; /* for kbc_program_ir_dump, which runs the pipeline again */
  const char *diagnostics;           /* the compilation's messages ("" when none) */
  kbc_diagnostic *diags;             /* the same as records, in the arena */
  int n_diags;
  const char *args_origin;           /* names the arguments in messages; NULL: the program's name */
  kbc_options opt;
  char *target;
  int64_t *preset; /* by var_id; 0 = infer */
  rt_exec *exec;         /* the generic code's executor, made at the first launch that runs it */
  rt_special *special;   /* KBC_SPECIALIZE=N: executors specialized for the first N bindings */
  const rt_exec *last;   /* the executor of the last launch (generic or specialized) */
  int n_args;
  ir_tensor **args; /* inputs then outputs */
  launch_layout last_layout; /* the last launch's arguments, bound (same_layout) */
};

static _Thread_local char *last_error;
/* The last compile call's diagnostics (kbc_last_diagnostic), in their own arena. */
static _Thread_local kbc_arena *last_diag_arena;
static _Thread_local kbc_diagnostic *last_diags;
static _Thread_local int last_n_diags;

static kbc_status fail(kbc_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kbc_status fail(kbc_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *m = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (m) {
    va_start(ap, fmt);
    vsnprintf(m, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  free(last_error);
  last_error = m;
  return s;
}

/* The one mapping from the runtime's error kinds to the public statuses. */
static kbc_status status_of(rt_err_kind kind) {
  switch (kind) {
  case RT_ERR_ARGUMENT: return KBC_ERROR_ARGUMENT;
  case RT_ERR_IO:
  case RT_ERR_FORMAT: return KBC_ERROR_IO;
  case RT_ERR_NO_DEVICE: return KBC_ERROR_NO_DEVICE;
  case RT_ERR_CUDA: return KBC_ERROR_CUDA;
  case RT_ERR_NONE: /* a failure without a kind is a bug */
  case RT_ERR_MEMORY:
  case RT_ERR_INTERNAL: break;
  }
  return KBC_ERROR_INTERNAL;
}

/* A runtime error as the call's failure: its kind's status, its message. */
static kbc_status fail_rt(const rt_err *e) { return fail(status_of(e->kind), "%s", rt_err_msg(e)); }

/* Code generation settings ("KBC_X=V ...", cg_options_apply) that parse:
 * KBC_OK, else KBC_ERROR_ARGUMENT with "what: <the reason>". */
static kbc_status check_settings(const char *what, const char *settings) {
  cg_options probe = cg_options_default();
  kbc_buf why = {0};
  kbc_status s = cg_options_apply(&probe, settings, &why) ? fail(KBC_ERROR_ARGUMENT, "%s: %s", what, kbc_buf_str(&why))
                                                           : KBC_OK;
  kbc_buf_free(&why);
  return s;
}

const char *kbc_last_error(void) { return last_error ? last_error : ""; }
const char *kbc_version(void) { return KBC_VERSION_STRING; }

const char *kbc_status_name(kbc_status s) {
  static const char *const names[] = {"KBC_OK", "KBC_ERROR_SPEC", "KBC_ERROR_ARGUMENT", "KBC_ERROR_IO",
                                      "KBC_ERROR_NO_DEVICE", "KBC_ERROR_CUDA", "KBC_ERROR_INTERNAL"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "KBC_ERROR_UNKNOWN";
}

/* ---- diagnostics --------------------------------------------------------- */

/* d's records as kbc_diagnostic, copied into a. */
static kbc_diagnostic *diag_records(kbc_arena *a, const kbc_diag *d, int *n) {
  *n = kbc_diag_count(d);
  kbc_diagnostic *r = KBC_NEW_ARRAY(a, kbc_diagnostic, *n + 1);
  const char *file = kbc_arena_strdup(a, kbc_diag_file(d));
  for (int i = 0; i < *n; i++) {
    const kbc_diag_record *x = kbc_diag_get(d, i);
    kbc_diagnostic_kind k = x->kind == KBC_DIAG_WARNING ? KBC_DIAGNOSTIC_WARNING
                            : x->kind == KBC_DIAG_NOTE  ? KBC_DIAGNOSTIC_NOTE
                                                        : KBC_DIAGNOSTIC_ERROR;
    r[i] = (kbc_diagnostic){k, file, x->loc.line, x->loc.line > 0 ? x->loc.col : 0,
                            kbc_arena_strdup(a, x->message), kbc_arena_strdup(a, x->snippet)};
  }
  return r;
}

/* Keeps d's records as the thread's last (d NULL: none). */
static void set_last_diags(const kbc_diag *d) {
  kbc_arena_destroy(last_diag_arena);
  last_diag_arena = NULL, last_diags = NULL, last_n_diags = 0;
  if (!d || !kbc_diag_count(d)) return;
  last_diag_arena = kbc_arena_create();
  last_diags = diag_records(last_diag_arena, d, &last_n_diags);
}

static kbc_status diag_at(const kbc_diagnostic *r, int n, int i, kbc_diagnostic *out) {
  if (!out) return fail(KBC_ERROR_ARGUMENT, "kbc_diagnostic: out is NULL");
  if (i < 0 || i >= n) return fail(KBC_ERROR_ARGUMENT, "diagnostic index %d out of range [0, %d)", i, n);
  *out = r[i];
  return KBC_OK;
}

int kbc_last_num_diagnostics(void) { return last_n_diags; }
kbc_status kbc_last_diagnostic(int i, kbc_diagnostic *out) { return diag_at(last_diags, last_n_diags, i, out); }
int kbc_program_num_diagnostics(const kbc_program *p) { return p ? p->n_diags : 0; }
kbc_status kbc_program_diagnostic(const kbc_program *p, int i, kbc_diagnostic *out) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_diagnostic: program is NULL");
  return diag_at(p->diags, p->n_diags, i, out);
}
int kbc_program_num_warnings(const kbc_program *p) {
  int n = 0;
  for (int i = 0; p && i < p->n_diags; i++) n += p->diags[i].kind == KBC_DIAGNOSTIC_WARNING;
  return n;
}
const char *kbc_diagnostic_kind_name(kbc_diagnostic_kind kind) {
  switch (kind) {
  case KBC_DIAGNOSTIC_ERROR: return "error";
  case KBC_DIAGNOSTIC_WARNING: return "warning";
  case KBC_DIAGNOSTIC_NOTE: return "note";
  }
  return "?";
}

/* ---- compiling ---------------------------------------------------------- */

kbc_status kbc_compile_string(const char *source, const char *name, const kbc_options *opt, kbc_program **out) {
  set_last_diags(NULL);
  if (!out) return fail(KBC_ERROR_ARGUMENT, "kbc_compile_string: out is NULL");
  *out = NULL;
  if (!source) return fail(KBC_ERROR_ARGUMENT, "kbc_compile_string: source is NULL");
  if (opt && opt->precision != KBC_PRECISION_FP32 && opt->precision != KBC_PRECISION_TF32)
    return fail(KBC_ERROR_ARGUMENT, "unknown precision %d", (int)opt->precision);
  if (opt && opt->target && strcmp(opt->target, "auto")) {
    rt_err err = {0};
    int bad = rt_arch_check(opt->target, &err);
    kbc_status s = bad ? fail_rt(&err) : KBC_OK;
    rt_err_free(&err);
    if (bad) return s;
  }
  const char *file = name ? name : "<string>";
  kbc_program *p = calloc(1, sizeof *p);
  if (!p) return fail(KBC_ERROR_INTERNAL, "out of memory");
  p->arena = kbc_arena_create();
  kbc_diag *d = kbc_diag_create(file, source);
  const char *kname = kbc_name_from_path(p->arena, file);
  ir_pipeline_opts po = {.gates = cg_pipeline_gates_from_env()}; /* the passes the GPU code wants, on the CPU too */
  p->ir = ir_pipeline_run(p->arena, d, source, kname, &po);
  p->file = kbc_arena_strdup(p->arena, file);
  p->source = kbc_arena_strdup(p->arena, source);
  p->kname = kname;
  p->diagnostics = kbc_arena_strdup(p->arena, kbc_diag_text(d));
  p->diags = diag_records(p->arena, d, &p->n_diags);
  set_last_diags(d);
  if (!p->ir) {
    kbc_status s = fail(kbc_diag_internal(d) ? KBC_ERROR_INTERNAL : KBC_ERROR_SPEC, "%s", kbc_diag_text(d));
    kbc_diag_destroy(d);
    kbc_program_destroy(p);
    return s;
  }
  kbc_diag_destroy(d);
  if (opt) p->opt = *opt;
  p->target = kbc_arena_strdup(p->arena, p->opt.target ? p->opt.target : "auto");
  p->opt.target = p->target;
  if (p->opt.config) {
    kbc_status s = check_settings("config", p->opt.config);
    if (s != KBC_OK) {
      kbc_program_destroy(p);
      return s;
    }
    p->opt.config = kbc_arena_strdup(p->arena, p->opt.config);
  }
  p->preset = KBC_NEW_ARRAY(p->arena, int64_t, p->ir->vars.len + 1);
  if (kbc_program_set_specialize(p, rt_special_limit_from_env()) != KBC_OK) {
    kbc_program_destroy(p);
    return KBC_ERROR_INTERNAL;
  }
  int ni = ir_inputs(p->ir, NULL, 0), no = ir_outputs(p->ir, NULL, 0);
  p->args = KBC_NEW_ARRAY(p->arena, ir_tensor *, ni + no + 1);
  ir_inputs(p->ir, p->args, ni);
  ir_outputs(p->ir, p->args + ni, no);
  p->n_args = ni + no;
  *out = p;
  return KBC_OK;
}

kbc_status kbc_compile_file(const char *path, const kbc_options *opt, kbc_program **out) {
  set_last_diags(NULL);
  if (!out) return fail(KBC_ERROR_ARGUMENT, "kbc_compile_file: out is NULL");
  *out = NULL;
  if (!path) return fail(KBC_ERROR_ARGUMENT, "kbc_compile_file: path is NULL");
  rt_blob text = {0};
  rt_err err = {0};
  if (rt_read_file(path, 1 << 20, &text, &err)) {
    kbc_status s = fail_rt(&err);
    rt_err_free(&err);
    return s;
  }
  kbc_status s;
  if (memchr(text.data, 0, text.len)) s = fail(KBC_ERROR_SPEC, "%s: a spec is text, but this file has a NUL byte", path);
  else s = kbc_compile_string((const char *)text.data, path, opt, out);
  rt_blob_free(&text);
  return s;
}

void kbc_program_destroy(kbc_program *p) {
  if (!p) return;
  kbc_arena_destroy(p->last_layout.arena);
  rt_exec_destroy(p->exec);
  rt_special_destroy(p->special);
  kbc_arena_destroy(p->arena);
  free(p);
}

/* ---- introspection ------------------------------------------------------ */

int kbc_program_num_args(const kbc_program *p) { return p ? p->n_args : 0; }
const char *kbc_program_name(const kbc_program *p) { return p ? p->ir->name : ""; }

kbc_status kbc_program_arg_info(const kbc_program *p, int i, kbc_arg_info *out) {
  if (!p || !out) return fail(KBC_ERROR_ARGUMENT, "kbc_program_arg_info: NULL argument");
  if (i < 0 || i >= p->n_args) return fail(KBC_ERROR_ARGUMENT, "argument index %d out of range [0, %d)", i, p->n_args);
  const ir_tensor *t = p->args[i];
  *out = (kbc_arg_info){.name = t->name, .role = t->role == IR_ROLE_INPUT ? KBC_ROLE_INPUT : KBC_ROLE_OUTPUT,
                        .dtype = KBC_F32, .rank = t->rank};
  return KBC_OK;
}

int kbc_program_num_kernels(const kbc_program *p) { return p && p->last ? rt_exec_code(p->last)->n_kernels : -1; }
int kbc_program_num_statements(const kbc_program *p) { return p ? p->ir->stmts.len : 0; }
const char *kbc_program_diagnostics(const kbc_program *p) { return p ? p->diagnostics : ""; }

kbc_status kbc_program_set_args_origin(kbc_program *p, const char *origin) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_set_args_origin: program is NULL");
  p->args_origin = origin ? kbc_arena_strdup(p->arena, origin) : NULL;
  return KBC_OK;
}

/* The passes, lowering first (passes/pipeline.c: ir_passes, the one list). */
static const ir_pass *pass_at(int i) {
  for (int k = 0; i >= 0 && ir_passes[k].name; k++)
    if (k == i) return &ir_passes[k];
  return NULL;
}
const char *kbc_pass_name(int i) { return pass_at(i) ? pass_at(i)->name : NULL; }
const char *kbc_pass_help(int i) { return pass_at(i) ? pass_at(i)->help : NULL; }

kbc_status kbc_program_bind_axis(kbc_program *p, const char *axis, int64_t value) {
  if (!p || !axis) return fail(KBC_ERROR_ARGUMENT, "kbc_program_bind_axis: NULL argument");
  const ir_axis *ax = ir_axis_find(p->ir, axis);
  if (!ax) return fail(KBC_ERROR_ARGUMENT, "the spec has no axis '%s'", axis);
  if (ax->kind != IR_AXIS_VAR)
    return fail(KBC_ERROR_ARGUMENT, "axis '%s' is %s; set the var axes it is computed from", axis,
                ax->kind == IR_AXIS_CONST ? "a constant" : "derived");
  if (value < 0) return fail(KBC_ERROR_ARGUMENT, "axis '%s': sizes must be positive, not %lld", axis, (long long)value);
  p->preset[ax->var_id] = value;
  kbc_arena_destroy(p->last_layout.arena); /* a binding made without it */
  p->last_layout = (launch_layout){0};
  return KBC_OK;
}

int kbc_program_num_var_axes(const kbc_program *p) { return p ? p->ir->vars.len : 0; }

kbc_status kbc_program_var_axis(const kbc_program *p, int i, const char **name, int64_t *value) {
  if (!p || !name || !value) return fail(KBC_ERROR_ARGUMENT, "kbc_program_var_axis: NULL argument");
  if (i < 0 || i >= p->ir->vars.len)
    return fail(KBC_ERROR_ARGUMENT, "var axis index %d out of range [0, %d)", i, p->ir->vars.len);
  *name = IR_VAR(p->ir, i)->name;
  *value = p->preset[i];
  return KBC_OK;
}

/* ---- binding ------------------------------------------------------------ */

/* The binding of the presets alone (kbc_program_binding's checks). */
static kbc_status preset_binding(kbc_program *p, kbc_arena *a, ir_binding *b) {
  kbc_buf missing = {0};
  for (int i = 0; i < p->ir->vars.len; i++)
    if (p->preset[i] < 1) kbc_buf_printf(&missing, "%s%s", missing.len ? ", " : "", IR_VAR(p->ir, i)->name);
  if (missing.len) {
    kbc_status s = fail(KBC_ERROR_ARGUMENT, "every var axis needs a value; missing: %s", kbc_buf_str(&missing));
    kbc_buf_free(&missing);
    return s;
  }
  kbc_diag *d = kbc_diag_create(p->file, NULL);
  int ok = ir_bind(p->ir, a, p->preset, b, d);
  kbc_status s = ok ? KBC_OK : fail(KBC_ERROR_ARGUMENT, "%s", kbc_diag_text(d));
  kbc_diag_destroy(d);
  return s;
}

kbc_status kbc_program_binding(kbc_program *p, kbc_binding_info *out) {
  if (!p || !out) return fail(KBC_ERROR_ARGUMENT, "kbc_program_binding: NULL argument");
  kbc_arena *a = kbc_arena_create();
  ir_binding b;
  kbc_status s = preset_binding(p, a, &b);
  if (s == KBC_OK) {
    *out = (kbc_binding_info){0};
    for (int i = 0; i < p->ir->tensors.len; i++) out->elements += b.numel[i];
    ir_cost c = ir_program_cost(p->ir, &b);
    out->flops = c.flops;
    out->bytes = c.bytes;
  }
  kbc_arena_destroy(a);
  return s;
}

kbc_status kbc_program_arg_shape(kbc_program *p, int i, int64_t *shape) {
  if (!p || !shape) return fail(KBC_ERROR_ARGUMENT, "kbc_program_arg_shape: NULL argument");
  if (i < 0 || i >= p->n_args) return fail(KBC_ERROR_ARGUMENT, "argument index %d out of range [0, %d)", i, p->n_args);
  kbc_arena *a = kbc_arena_create();
  ir_binding b;
  kbc_status s = preset_binding(p, a, &b);
  if (s == KBC_OK)
    for (int k = 0; k < p->args[i]->rank; k++) shape[k] = b.shape[p->args[i]->id][k];
  kbc_arena_destroy(a);
  return s;
}

/* Matches args to the spec's tensors (by[t->id]), infers and binds the var
 * axes, and checks the outputs' shapes.  Every argument that is not an
 * output goes to ir_infer_vars, which names unexpected, repeated and
 * missing inputs and wrong ranks and shapes (ir/bind.h) — the same
 * messages as `kbc run`'s, labelled with p->args_origin. */
static kbc_status bind_args(kbc_program *p, kbc_arena *a, const kbc_arg *args, size_t n, int need_outputs,
                            const kbc_arg **by, ir_binding *b) {
  if (n && !args) return fail(KBC_ERROR_ARGUMENT, "args is NULL");
  int n_in = 0;
  ir_shape_arg *sa = KBC_NEW_ARRAY(a, ir_shape_arg, n + 1);
  for (size_t i = 0; i < n; i++) {
    const kbc_arg *g = &args[i];
    if (!g->name) return fail(KBC_ERROR_ARGUMENT, "argument %zu has no name", i);
    if (g->dtype != KBC_F32) return fail(KBC_ERROR_ARGUMENT, "'%s': dtype %d, but the spec declares f32", g->name, (int)g->dtype);
    if (g->rank < 0) return fail(KBC_ERROR_ARGUMENT, "'%s': rank %d", g->name, g->rank);
    if (g->rank > 0 && !g->shape) return fail(KBC_ERROR_ARGUMENT, "'%s': shape is NULL", g->name);
    if (!g->data && need_outputs) return fail(KBC_ERROR_ARGUMENT, "'%s': data is NULL", g->name);
    ir_tensor *t = ir_tensor_find(p->ir, g->name);
    if (t && t->role == IR_ROLE_OUTPUT) {
      if (by[t->id]) return fail(KBC_ERROR_ARGUMENT, "'%s' is given twice", g->name);
      if (g->rank != t->rank)
        return fail(KBC_ERROR_ARGUMENT, "output '%s' has rank %d, but the spec declares rank %d", g->name, g->rank,
                    t->rank);
      by[t->id] = g;
      continue;
    }
    if (t && t->role == IR_ROLE_INPUT && !by[t->id]) by[t->id] = g;
    sa[n_in++] = (ir_shape_arg){.name = g->name, .rank = g->rank, .shape = g->shape};
  }
  for (int i = 0; need_outputs && i < p->n_args; i++)
    if (p->args[i]->role == IR_ROLE_OUTPUT && !by[p->args[i]->id])
      return fail(KBC_ERROR_ARGUMENT, "missing output '%s'", p->args[i]->name);
  int64_t *vars = KBC_NEW_ARRAY(a, int64_t, p->ir->vars.len + 1);
  memcpy(vars, p->preset, sizeof(int64_t) * (size_t)p->ir->vars.len);
  kbc_diag *d = kbc_diag_create(p->args_origin ? p->args_origin : p->ir->name, NULL);
  int ok = ir_infer_vars(p->ir, sa, n_in, vars, d) && ir_bind(p->ir, a, vars, b, d);
  kbc_status s = ok ? KBC_OK : fail(KBC_ERROR_ARGUMENT, "%s", kbc_diag_text(d));
  kbc_diag_destroy(d);
  if (!ok) return s;
  for (int i = 0; i < p->n_args; i++) {
    const ir_tensor *t = p->args[i];
    const kbc_arg *g = by[t->id];
    if (t->role != IR_ROLE_OUTPUT || !g) continue;
    for (int k = 0; k < t->rank; k++)
      if (g->shape[k] != b->shape[t->id][k])
        return fail(KBC_ERROR_ARGUMENT, "output '%s': dimension %d has size %lld, but the inputs make it %lld", t->name,
                    k, (long long)g->shape[k], (long long)b->shape[t->id][k]);
  }
  return KBC_OK;
}

kbc_status kbc_program_output_shape(kbc_program *p, const kbc_arg *inputs, size_t n, const char *name, int64_t *shape,
                                    int *rank) {
  if (!p || !name || !shape || !rank) return fail(KBC_ERROR_ARGUMENT, "kbc_program_output_shape: NULL argument");
  ir_tensor *t = ir_tensor_find(p->ir, name);
  if (!t || t->role != IR_ROLE_OUTPUT) return fail(KBC_ERROR_ARGUMENT, "'%s' is not an output of %s", name, p->ir->name);
  kbc_arena *a = kbc_arena_create();
  const kbc_arg **by = KBC_NEW_ARRAY(a, const kbc_arg *, p->ir->tensors.len + 1);
  ir_binding b;
  kbc_status s = bind_args(p, a, inputs, n, 0, by, &b);
  if (s == KBC_OK) {
    *rank = t->rank;
    for (int k = 0; k < t->rank; k++) shape[k] = b.shape[t->id][k];
  }
  kbc_arena_destroy(a);
  return s;
}

/* ---- running ------------------------------------------------------------ */

static cg_precision precision_of(const kbc_program *p) {
  return p->opt.precision == KBC_PRECISION_TF32 ? CG_PRECISION_TF32 : CG_PRECISION_FP32;
}

/* The generic code's executor, made at its first use. */
static int generic_exec(kbc_program *p, rt_err *err) {
  return p->exec ? 0 : rt_exec_create(p->ir, p->opt.device, p->target, precision_of(p), p->opt.config, &p->exec, err);
}

/* Launches the kernels specialized for binding b where KBC_SPECIALIZE
 * allows (*done = 1), else leaves *done = 0. */
static int launch_special(kbc_program *p, const ir_binding *b, const rt_dptr *ptr, void *stream, int *done,
                          kbc_arena *a, rt_err *err) {
  *done = 0;
  if (!p->special) return 0;
  const rt_specialized *sp;
  if (rt_special_find(p->special, p->ir, b, p->opt.device, p->target, precision_of(p), p->opt.config, &sp, err)) return -1;
  if (!sp) return 0;
  rt_dptr *sptr = KBC_NEW_ARRAY(a, rt_dptr, sp->p->tensors.len + 1);
  for (int i = 0; i < p->ir->tensors.len; i++)
    if (sp->tensor_of[i] >= 0) sptr[sp->tensor_of[i]] = ptr[i];
  *done = 1;
  if (rt_exec_launch(sp->exec, &sp->b, sptr, stream, err)) return -1;
  p->last = sp->exec;
  return 0;
}

kbc_status kbc_program_set_specialize(kbc_program *p, int max_bindings) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_set_specialize: program is NULL");
  if (max_bindings < 0 || max_bindings > 1024)
    return fail(KBC_ERROR_ARGUMENT, "kbc_program_set_specialize: %d bindings (0 to 1024)", max_bindings);
  if (max_bindings == rt_special_limit(p->special)) return KBC_OK;
  rt_special_destroy(p->special);
  p->special = NULL;
  if (max_bindings > 0 && p->ir->vars.len > 0 &&
      !(p->special = rt_special_create(p->source, p->kname, max_bindings)))
    return fail(KBC_ERROR_INTERNAL, "out of memory");
  return KBC_OK;
}

/* Whether args have the layout of the last launch (p->last_layout), their
 * data given. */
static int same_layout(const kbc_program *p, const kbc_arg *args, size_t n) {
  const launch_layout *l = &p->last_layout;
  if (!l->arena || l->n != n || (n && !args)) return 0;
  for (size_t i = 0; i < n; i++) {
    const kbc_arg *g = &args[i];
    if (!g->name || !g->data || g->dtype != KBC_F32 || g->rank != l->rank[i] || (g->rank > 0 && !g->shape) ||
        strcmp(g->name, l->names[i]) ||
        (g->rank > 0 && memcmp(g->shape, l->shape[i], sizeof(int64_t) * (size_t)g->rank)))
      return 0;
  }
  return 1;
}

/* Binds args (bind_args) and keeps their layout and binding as the last
 * launch's; on an error, the last layout stays. */
static kbc_status bind_layout(kbc_program *p, const kbc_arg *args, size_t n) {
  kbc_arena *a = kbc_arena_create();
  const kbc_arg **by = KBC_NEW_ARRAY(a, const kbc_arg *, p->ir->tensors.len + 1);
  launch_layout l = {.arena = a, .n = n};
  kbc_status s = bind_args(p, a, args, n, 1, by, &l.b);
  if (s != KBC_OK) {
    kbc_arena_destroy(a);
    return s;
  }
  l.names = KBC_NEW_ARRAY(a, const char *, n + 1);
  l.rank = KBC_NEW_ARRAY(a, int, n + 1);
  l.shape = KBC_NEW_ARRAY(a, int64_t *, n + 1);
  for (size_t i = 0; i < n; i++) {
    l.names[i] = kbc_arena_strdup(a, args[i].name);
    l.rank[i] = args[i].rank;
    l.shape[i] = KBC_NEW_ARRAY(a, int64_t, args[i].rank + 1);
    if (args[i].rank > 0) memcpy(l.shape[i], args[i].shape, sizeof(int64_t) * (size_t)args[i].rank);
  }
  l.arg_of = KBC_NEW_ARRAY(a, int, p->ir->tensors.len + 1);
  for (int t = 0; t < p->ir->tensors.len; t++) l.arg_of[t] = by[t] ? (int)(by[t] - args) : -1;
  kbc_arena_destroy(p->last_layout.arena);
  p->last_layout = l;
  return KBC_OK;
}

kbc_status kbc_program_launch(kbc_program *p, const kbc_arg *args, size_t n, void *cu_stream) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_launch: program is NULL");
  rt_err err = {0};
  if (!p->special && generic_exec(p, &err)) { /* no device: said before any argument error */
    kbc_status s = fail_rt(&err);
    rt_err_free(&err);
    return s;
  }
  kbc_status s = same_layout(p, args, n) ? KBC_OK : bind_layout(p, args, n);
  if (s == KBC_OK) {
    const launch_layout *l = &p->last_layout;
    kbc_arena *a = kbc_arena_create();
    rt_dptr *ptr = KBC_NEW_ARRAY(a, rt_dptr, p->ir->tensors.len + 1);
    for (int i = 0; i < p->ir->tensors.len; i++)
      if (l->arg_of[i] >= 0) ptr[i] = (rt_dptr)(uintptr_t)args[l->arg_of[i]].data;
    int done;
    if (launch_special(p, &l->b, ptr, cu_stream, &done, a, &err)) s = fail_rt(&err);
    else if (!done) {
      if (generic_exec(p, &err) || rt_exec_launch(p->exec, &l->b, ptr, cu_stream, &err)) s = fail_rt(&err);
      else p->last = p->exec;
    }
    kbc_arena_destroy(a);
  }
  rt_err_free(&err);
  return s;
}

/* Runs program ir (bound by b) on the interpreter: the inputs from
 * by[id]'s data (by tensor id of ir), the outputs into theirs. */
static kbc_status interp_on(const ir_program *ir, const ir_binding *b, const kbc_arg *const *by, const char *origin) {
  kbc_status s = KBC_OK;
  int nt = ir->tensors.len;
  double **data = calloc((size_t)nt + 1, sizeof *data);
  if (!data) return fail(KBC_ERROR_INTERNAL, "out of memory");
  for (int i = 0; s == KBC_OK && i < nt; i++) {
    if (IR_TENSOR(ir, i)->role != IR_ROLE_INPUT) continue;
    data[i] = malloc(sizeof(double) * (size_t)(b->numel[i] > 0 ? b->numel[i] : 1));
    if (!data[i]) s = fail(KBC_ERROR_INTERNAL, "out of memory");
    else
      for (int64_t k = 0; k < b->numel[i]; k++) data[i][k] = ((const float *)by[i]->data)[k];
  }
  if (s == KBC_OK) {
    kbc_diag *d = kbc_diag_create(origin, NULL);
    if (!ir_interp(ir, b, data, d)) s = fail(KBC_ERROR_INTERNAL, "%s", kbc_diag_text(d));
    kbc_diag_destroy(d);
  }
  for (int i = 0; s == KBC_OK && i < nt; i++)
    if (IR_TENSOR(ir, i)->role == IR_ROLE_OUTPUT)
      for (int64_t k = 0; k < b->numel[i]; k++) ((float *)by[i]->data)[k] = (float)data[i][k];
  ir_interp_release(ir, data);
  for (int i = 0; i < nt; i++)
    if (IR_TENSOR(ir, i)->role == IR_ROLE_INPUT) free(data[i]);
  free(data);
  return s;
}

kbc_status kbc_program_run_cpu(kbc_program *p, const kbc_arg *args, size_t n) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_run_cpu: program is NULL");
  kbc_arena *a = kbc_arena_create();
  const kbc_arg **by = KBC_NEW_ARRAY(a, const kbc_arg *, p->ir->tensors.len + 1);
  ir_binding b;
  kbc_status s = bind_args(p, a, args, n, 1, by, &b);
  if (s == KBC_OK) s = interp_on(p->ir, &b, by, p->args_origin ? p->args_origin : p->ir->name);
  kbc_arena_destroy(a);
  return s;
}

kbc_status kbc_program_run_reference(kbc_program *p, const kbc_arg *args, size_t n, int *as_stated) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_run_reference: program is NULL");
  if (as_stated) *as_stated = 0;
  kbc_arena *a = kbc_arena_create();
  const kbc_arg **by = KBC_NEW_ARRAY(a, const kbc_arg *, p->ir->tensors.len + 1);
  ir_binding b;
  kbc_status s = bind_args(p, a, args, n, 1, by, &b);
  const char *origin = p->args_origin ? p->args_origin : p->ir->name;
  if (s != KBC_OK) {
    kbc_arena_destroy(a);
    return s;
  }
  /* The program as the spec states it: lowered and checked, no pass run. */
  kbc_diag *d = kbc_diag_create(p->file, p->source);
  ir_pipeline_opts o = {.stop_after = "check-bounds"};
  ir_program *st = ir_pipeline_run(a, d, p->source, p->kname, &o);
  ir_binding sb;
  int ok = st && st->vars.len == p->ir->vars.len && ir_bind(st, a, b.vars, &sb, d) &&
           ir_program_cost(st, &sb).flops <= KBC_REFERENCE_MAX_FLOPS;
  kbc_diag_destroy(d);
  const kbc_arg **sby = ok ? KBC_NEW_ARRAY(a, const kbc_arg *, st->tensors.len + 1) : NULL;
  for (int i = 0; ok && i < st->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(st, i);
    if (t->role == IR_ROLE_TEMP) continue;
    const ir_tensor *u = ir_tensor_find(p->ir, t->name);
    ok = u && u->role == t->role && by[u->id];
    if (ok) sby[i] = by[u->id];
  }
  if (ok) s = interp_on(st, &sb, sby, origin);
  else s = interp_on(p->ir, &b, by, origin);
  if (as_stated) *as_stated = ok;
  kbc_arena_destroy(a);
  return s;
}

/* ---- emitting ----------------------------------------------------------- */

static kbc_status give(const void *bytes, size_t n, char **out, size_t *len) {
  char *m = malloc(n + 1);
  if (!m) return fail(KBC_ERROR_INTERNAL, "out of memory");
  memcpy(m, bytes, n);
  m[n] = 0;
  *out = m;
  if (len) *len = n;
  return KBC_OK;
}

/* The launch plan's binding: every var axis from the presets. */
/* ir_bind of prog to vars; its message as the call's failure, with status
 * `bad` (the caller's sizes, or a bug where they were already checked). */
static kbc_status bind_program(const ir_program *prog, kbc_arena *a, const int64_t *vars, ir_binding *b,
                               kbc_status bad) {
  kbc_diag *d = kbc_diag_create(prog->name, NULL);
  int ok = ir_bind(prog, a, vars, b, d);
  kbc_status s = ok ? KBC_OK : fail(bad, "%s", kbc_diag_text(d));
  kbc_diag_destroy(d);
  return s;
}

static kbc_status plan_binding(kbc_program *p, kbc_arena *a, ir_binding *b) {
  kbc_buf names = {0}, sets = {0};
  for (int i = 0; i < p->ir->vars.len; i++)
    if (p->preset[i] < 1) {
      kbc_buf_printf(&names, "%s%s", names.len ? ", " : "", IR_VAR(p->ir, i)->name);
      kbc_buf_printf(&sets, "%s--set %s=N", sets.len ? " " : "", IR_VAR(p->ir, i)->name);
    }
  if (names.len) {
    kbc_status s = fail(KBC_ERROR_ARGUMENT,
                        "the launch plan needs every var axis; missing: %s (bind them with "
                        "kbc_program_bind_axis; on the command line: %s)",
                        kbc_buf_str(&names), kbc_buf_str(&sets));
    kbc_buf_free(&names);
    kbc_buf_free(&sets);
    return s;
  }
  return bind_program(p->ir, a, p->preset, b, KBC_ERROR_ARGUMENT);
}

/* *prog: p's program specialized for its presets when KBC_SPECIALIZE is on
 * and every var axis is preset, else p's own. */
static kbc_status specialized_for_presets(kbc_program *p, kbc_arena *a, const ir_program **prog) {
  *prog = p->ir;
  if (!p->special) return KBC_OK;
  for (int i = 0; i < p->ir->vars.len; i++)
    if (p->preset[i] < 1) return KBC_OK;
  kbc_diag *d = kbc_diag_create(p->file, p->source);
  ir_program *sp = rt_specialize(a, d, p->source, p->kname, p->ir, p->preset);
  kbc_status s = sp ? KBC_OK : fail(KBC_ERROR_INTERNAL, "%s specialized for its sizes does not compile (this is "
                                                        "a bug in kbc):\n%s", p->ir->name, kbc_diag_text(d));
  kbc_diag_destroy(d);
  if (sp) *prog = sp;
  return s;
}

/* The target: an explicit one needs no device; "auto" asks the device
 * (*pp then points at props, else NULL). */
static kbc_status resolve_arch(const kbc_program *p, char dev_arch[16], rt_device_props *props, const char **arch,
                               rt_device_props **pp) {
  *arch = p->target;
  *pp = NULL;
  if (strcmp(p->target, "auto")) return KBC_OK;
  rt_err err = {0};
  if (rt_device_query(p->opt.device, props, &err)) {
    /* without a device: no device, whatever the driver's reason */
    kbc_status s =
        fail(KBC_ERROR_NO_DEVICE, "target auto: %s (give an explicit target such as sm_90)", rt_err_msg(&err));
    rt_err_free(&err);
    return s;
  }
  rt_arch_of_cc(props->cc_major, props->cc_minor, dev_arch, 16);
  *arch = dev_arch;
  *pp = props;
  return KBC_OK;
}

/* ---- tune records (runtime/tune.h) ---------------------------------------- */

/* The key of p's record at its presets' binding and its target. */
static kbc_status tune_key(kbc_program *p, kbc_arena *a, char key[RT_KEY_HEX + 1]) {
  const ir_program *prog;
  const char *arch;
  char dev_arch[16];
  rt_device_props props, *pp;
  kbc_status s = specialized_for_presets(p, a, &prog);
  if (s == KBC_OK && prog->vars.len && p->special) {
    for (int i = 0; i < p->ir->vars.len; i++)
      if (p->preset[i] < 1)
        return fail(KBC_ERROR_ARGUMENT, "tune record: var axis '%s' is not bound (kbc_program_bind_axis)",
                    IR_VAR(p->ir, i)->name);
  }
  if (s == KBC_OK) s = resolve_arch(p, dev_arch, &props, &arch, &pp);
  if (s == KBC_OK) rt_tune_key(prog, arch, precision_of(p), key);
  return s;
}

kbc_status kbc_program_tune_store(kbc_program *p, const char *settings, const char *comment) {
  if (!p) return fail(KBC_ERROR_ARGUMENT, "kbc_program_tune_store: NULL program");
  kbc_status bad = settings ? check_settings("tune settings", settings) : KBC_OK;
  if (bad != KBC_OK) return bad;
  kbc_arena *a = kbc_arena_create();
  char key[RT_KEY_HEX + 1];
  kbc_status s = tune_key(p, a, key);
  rt_err err = {0};
  if (s == KBC_OK && (settings ? rt_tune_store(key, comment, settings, &err) : rt_tune_remove(key, &err)) < 0)
    s = fail_rt(&err);
  rt_err_free(&err);
  kbc_arena_destroy(a);
  return s;
}

kbc_status kbc_program_tune_load(kbc_program *p, char **out) {
  if (!p || !out) return fail(KBC_ERROR_ARGUMENT, "kbc_program_tune_load: NULL argument");
  *out = NULL;
  kbc_arena *a = kbc_arena_create();
  char key[RT_KEY_HEX + 1];
  kbc_status s = tune_key(p, a, key);
  kbc_buf settings = {0};
  if (s == KBC_OK && rt_tune_load(key, &settings)) s = give(kbc_buf_str(&settings), settings.len, out, NULL);
  kbc_buf_free(&settings);
  kbc_arena_destroy(a);
  return s;
}

kbc_status kbc_program_emit(kbc_program *p, const char *what, char **out, size_t *len) {
  if (!p || !what || !out) return fail(KBC_ERROR_ARGUMENT, "kbc_program_emit: NULL argument");
  *out = NULL;
  if (!strcmp(what, "ir")) {
    kbc_buf b = {0};
    ir_print(p->ir, &b);
    kbc_status s = give(kbc_buf_str(&b), b.len, out, len);
    kbc_buf_free(&b);
    return s;
  }
  int plan = !strcmp(what, "plan") || !strcmp(what, "plan-json");
  if (strcmp(what, "cuda") && strcmp(what, "ptx") && strcmp(what, "cubin") && strcmp(what, "resources") && !plan)
    return fail(KBC_ERROR_ARGUMENT,
                "kbc_program_emit: '%s' is not one of ir, cuda, ptx, cubin, resources, plan, plan-json", what);
  kbc_arena *a = kbc_arena_create();
  ir_binding bind;
  kbc_status s = plan ? plan_binding(p, a, &bind) : KBC_OK;
  /* What the runtime would run: under KBC_SPECIALIZE, with every var axis
   * preset, the program specialized for those sizes. */
  const ir_program *prog = p->ir;
  if (s == KBC_OK && (s = specialized_for_presets(p, a, &prog)) == KBC_OK && prog != p->ir && plan)
    s = bind_program(prog, a, NULL, &bind, KBC_ERROR_INTERNAL); /* no var axes left */
  if (s != KBC_OK) {
    kbc_arena_destroy(a);
    return s;
  }
  const char *arch;
  char dev_arch[16];
  rt_device_props props, *pp = NULL;
  rt_err err = {0};
  if ((s = resolve_arch(p, dev_arch, &props, &arch, &pp)) != KBC_OK) {
    kbc_arena_destroy(a);
    return s;
  }
  int tuned;
  cg_target t = rt_exec_target(pp, precision_of(p), rt_tune_options(prog, arch, precision_of(p), p->opt.config, &tuned));
  if (!pp) {
    t.sm = atoi(arch + 3); /* "sm_90a" -> 90 */
    t.arch_a = arch[strlen(arch) - 1] == 'a';
  }
  cg_program g;
  kbc_diag *d = kbc_diag_create(prog->name, NULL);
  /* The 32-bit index variant where KBC_IDX32 asks for it (t.opt.idx32) —
   * for a plan, only where the runtime would run it: when the binding fits. */
  int idx32 = t.opt.idx32 && (!plan || ir_binding_fits_i32(prog, &bind));
  if (!cg_generate(a, prog, &t, &g, d)) s = fail(KBC_ERROR_INTERNAL, "%s", kbc_diag_text(d));
  else if (idx32) cg_program_narrow(&g);
  kbc_diag_destroy(d);
  if (s == KBC_OK && !strcmp(what, "cuda")) s = give(kbc_buf_str(&g.source), g.source.len, out, len);
  else if (s == KBC_OK) {
    rt_compile_req req = {.src = kbc_buf_str(&g.source), .name = prog->name, .arch = arch,
                          .kbc_version = "kbc-" KBC_VERSION_STRING, .want_ptx = !strcmp(what, "ptx")};
    rt_compiled c = {0};
    kbc_buf r = {0};
    rt_plan pl;
    if (rt_compile(&req, &c, &err)) s = fail_rt(&err);
    else if (!strcmp(what, "ptx")) s = give(c.ptx.data, c.ptx.len, out, len);
    else if (!strcmp(what, "cubin")) s = give(c.cubin.data, c.cubin.len, out, len);
    else if (!plan) {
      kbc_buf_printf(&r, "# %s, %s, %d kernels\n", prog->name, arch, g.n_kernels);
      rt_resources_format(&c.res, &r);
      s = give(kbc_buf_str(&r), r.len, out, len);
    } else if (rt_plan_make(a, prog, &g, &bind, &c.res, &pl, &err)) {
      s = fail_rt(&err);
    } else {
      pl.arch = arch;
      pl.precision = t.precision == CG_PRECISION_TF32 ? "tf32" : "fp32";
      pl.idx32 = idx32;
      kbc_buf sw = {0};
      cg_options_describe(&t.opt, &sw);
      pl.switches = kbc_arena_strdup(a, sw.len > 2 ? kbc_buf_str(&sw) + 2 : ""); /* less the leading ", " */
      kbc_buf_free(&sw);
      pl.tuned = tuned;
      if (!strcmp(what, "plan")) rt_plan_text(&pl, &r);
      else rt_plan_json(&pl, &r);
      s = give(kbc_buf_str(&r), r.len, out, len);
    }
    kbc_buf_free(&r);
    rt_compiled_free(&c);
  }
  cg_program_free(&g);
  rt_err_free(&err);
  kbc_arena_destroy(a);
  return s;
}

/* ---- the front half's texts ---------------------------------------------- */

kbc_status kbc_program_ir_dump(kbc_program *p, const char *after, char **out, size_t *len) {
  if (!p || !out) return fail(KBC_ERROR_ARGUMENT, "kbc_program_ir_dump: NULL argument");
  *out = NULL;
  if (after && strcmp(after, "all") && !ir_pass_find(after))
    return fail(KBC_ERROR_ARGUMENT, "kbc_program_ir_dump: unknown pass '%s'", after);
  /* The pipeline again, on the same text: it is deterministic. */
  kbc_arena *a = kbc_arena_create();
  kbc_diag *d = kbc_diag_create(p->file, p->source);
  kbc_buf dump = {0};
  ir_pipeline_opts o = {.dump = &dump, .dump_after = after, .gates = cg_pipeline_gates_from_env()};
  kbc_status s = ir_pipeline_run(a, d, p->source, p->kname, &o)
                     ? give(kbc_buf_str(&dump), dump.len, out, len)
                     : fail(KBC_ERROR_INTERNAL, "the spec failed to compile a second time:\n%s", kbc_diag_text(d));
  kbc_buf_free(&dump);
  kbc_diag_destroy(d);
  kbc_arena_destroy(a);
  return s;
}

kbc_status kbc_ast_dump(const char *source, const char *name, char **out, size_t *len) {
  set_last_diags(NULL);
  if (!source || !out) return fail(KBC_ERROR_ARGUMENT, "kbc_ast_dump: NULL argument");
  *out = NULL;
  kbc_arena *a = kbc_arena_create();
  kbc_diag *d = kbc_diag_create(name ? name : "<string>", source);
  ast_program *ast = ast_parse(a, d, source);
  set_last_diags(d);
  kbc_status s;
  if (!ast) {
    s = fail(kbc_diag_internal(d) ? KBC_ERROR_INTERNAL : KBC_ERROR_SPEC, "%s", kbc_diag_text(d));
  } else {
    kbc_buf b = {0};
    ast_print(ast, &b);
    s = give(kbc_buf_str(&b), b.len, out, len);
    kbc_buf_free(&b);
  }
  kbc_diag_destroy(d);
  kbc_arena_destroy(a);
  return s;
}

void kbc_free(void *ptr) { free(ptr); }
