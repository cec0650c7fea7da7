/* pipeline.c — parse, lower, then the IR passes in order, verifying the IR
 * after each one and optionally printing it (`kbc compile --emit ir`). */
#include <string.h>

#include "../frontend/ast.h"
#include "passes.h"
#include "pipeline.h"

typedef struct {
  const char *name;
  int (*run)(ir_program *, kbc_diag *);
} pass;

static const pass passes[] = {
    {"check-bounds", ir_check_bounds},
    {"simplify", ir_simplify},
    {"factor", ir_factor},
    {"gather", ir_gather},
    {"inline", ir_inline},
    {"hoist", ir_hoist},
    {"dce", ir_dce},
};

const char *const ir_pass_names[] = {"lower", "check-bounds", "simplify", "factor", "gather", "inline", "hoist", "dce", NULL};

static void dump(const ir_pipeline_opts *o, const ir_program *p, const char *after) {
  if (!o || !o->dump) return;
  if (o->dump_after && strcmp(o->dump_after, "all") && strcmp(o->dump_after, after)) return;
  kbc_buf_printf(o->dump, "# ---- IR after %s ----\n", after);
  ir_print(p, o->dump);
}

ir_program *ir_pipeline_run(kbc_arena *a, kbc_diag *d, const char *source, const char *default_name,
                            const ir_pipeline_opts *opts) {
  ast_program *ast = ast_parse(a, d, source);
  if (!ast) return NULL;
  ir_program *p = ir_lower(a, d, ast, default_name);
  if (!p || !ir_verify(p, d, "lower")) return NULL;
  dump(opts, p, "lower");
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
    if (!passes[i].run(p, d) || kbc_diag_errors(d)) return NULL;
    if (!ir_verify(p, d, passes[i].name)) return NULL;
    dump(opts, p, passes[i].name);
  }
  return p;
}
