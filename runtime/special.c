/* special.c — see special.h. */
#include "special.h"

#include <stdlib.h>
#include <string.h>

#include "passes/pipeline.h"
#include "rt_common.h"
#include "support/env.h"

typedef struct {
  int64_t *vars;   /* the binding's var values (generic var ids) */
  kbc_arena *arena; /* the specialized program's */
  rt_specialized sp;
} entry;

struct rt_special {
  char *source, *name;
  int limit;
  int n;
  entry *e;
};

int rt_special_limit_from_env(void) { return kbc_env_int("KBC_SPECIALIZE", 0, 1024, RT_SPECIALIZE_DEFAULT); }

rt_special *rt_special_create(const char *source, const char *name, int limit) {
  rt_special *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->source = strdup(source);
  s->name = strdup(name);
  s->limit = limit > 0 ? limit : 0;
  s->e = calloc((size_t)s->limit + 1, sizeof *s->e);
  if (!s->source || !s->name || !s->e) {
    rt_special_destroy(s);
    return NULL;
  }
  return s;
}

void rt_special_destroy(rt_special *s) {
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    rt_exec_destroy(s->e[i].sp.exec);
    kbc_arena_destroy(s->e[i].arena);
    free(s->e[i].vars);
  }
  free(s->e);
  free(s->source);
  free(s->name);
  free(s);
}

int rt_special_limit(const rt_special *s) { return s ? s->limit : 0; }

ir_program *rt_specialize(kbc_arena *a, kbc_diag *d, const char *source, const char *name,
                          const ir_program *generic, const int64_t *vars) {
  ir_axis_value *fixed = KBC_NEW_ARRAY(a, ir_axis_value, generic->vars.len + 1);
  for (int i = 0; i < generic->vars.len; i++) fixed[i] = (ir_axis_value){IR_VAR(generic, i)->name, vars[i]};
  ir_pipeline_opts o = {.fixed = fixed, .n_fixed = generic->vars.len, .gates = cg_pipeline_gates_from_env()};
  return ir_pipeline_run(a, d, source, name, &o);
}

/* Makes entry e for binding b: the program, its binding, the tensor map,
 * the executor. */
static int make(rt_special *s, entry *e, const ir_program *g, const ir_binding *b, int device, const char *arch,
                cg_precision precision, const char *config, rt_err *err) {
  e->arena = kbc_arena_create();
  e->vars = malloc(sizeof(int64_t) * (size_t)(g->vars.len + 1));
  if (!e->arena || !e->vars) return rt_fail(err, RT_ERR_MEMORY, "out of memory");
  memcpy(e->vars, b->vars, sizeof(int64_t) * (size_t)g->vars.len);
  kbc_diag *d = kbc_diag_create(s->name, s->source);
  ir_program *p = rt_specialize(e->arena, d, s->source, s->name, g, b->vars);
  int ok = p && ir_bind(p, e->arena, NULL, &e->sp.b, d);
  if (!ok)
    rt_fail(err, RT_ERR_INTERNAL, "%s specialized for its binding does not compile (this is a bug in kbc):\n%s",
            s->name, kbc_diag_text(d));
  kbc_diag_destroy(d);
  if (!ok) return -1;
  int *map = KBC_NEW_ARRAY(e->arena, int, g->tensors.len + 1);
  for (int i = 0; i < g->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(g, i);
    const ir_tensor *u = t->role == IR_ROLE_TEMP ? NULL : ir_tensor_find(p, t->name);
    map[i] = u && u->role == t->role ? u->id : -1;
    if (t->role != IR_ROLE_TEMP && map[i] < 0)
      return rt_fail(err, RT_ERR_INTERNAL, "%s specialized has no %s '%s' (this is a bug in kbc)", s->name,
                     t->role == IR_ROLE_INPUT ? "input" : "output", t->name);
  }
  e->sp.p = p;
  e->sp.tensor_of = map;
  rt_debug(1, "%s: specialized for a new binding (%d of at most %d)", s->name, s->n + 1, s->limit);
  return rt_exec_create(p, device, arch, precision, config, &e->sp.exec, err);
}

int rt_special_find(rt_special *s, const ir_program *generic, const ir_binding *b, int device, const char *arch,
                    cg_precision precision, const char *config, const rt_specialized **out, rt_err *err) {
  *out = NULL;
  if (!generic->vars.len) return 0; /* nothing to specialize */
  size_t nv = sizeof(int64_t) * (size_t)generic->vars.len;
  for (int i = 0; i < s->n; i++)
    if (!memcmp(s->e[i].vars, b->vars, nv)) {
      *out = &s->e[i].sp;
      return 0;
    }
  if (s->n >= s->limit) return 0;
  entry *e = &s->e[s->n];
  if (make(s, e, generic, b, device, arch, precision, config, err)) {
    rt_exec_destroy(e->sp.exec);
    kbc_arena_destroy(e->arena);
    free(e->vars);
    memset(e, 0, sizeof *e);
    return -1;
  }
  *out = &s->e[s->n++].sp;
  return 0;
}
