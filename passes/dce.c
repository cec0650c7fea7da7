/* dce.c — dead statement and temporary elimination.
 *
 * Before: a verified program.  After: only statements whose results reach
 * an output remain, and only the temporaries they write; tensor ids are
 * renumbered densely (inputs and outputs keep their relative order). */
#include <stdlib.h>

#include "ir/subst.h"
#include "passes.h"

int ir_dce(ir_program *p, kbc_diag *d) {
  (void)d;
  int nt = p->tensors.len;
  unsigned char *live = calloc((size_t)nt + 1, 1);
  if (!live) abort();
  for (int i = 0; i < nt; i++) live[i] = IR_TENSOR(p, i)->role != IR_ROLE_TEMP;
  /* Backwards: a statement is live when its target is. */
  int n = p->stmts.len;
  unsigned char *keep = calloc((size_t)n + 1, 1);
  if (!keep) abort();
  for (int i = n - 1; i >= 0; i--) {
    ir_stmt *s = IR_STMT(p, i);
    if (!live[s->out->id]) continue;
    keep[i] = 1;
    ir_expr_mark_loads(s->rhs, live);
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (keep[i]) {
      p->stmts.items[m] = p->stmts.items[i];
      IR_STMT(p, m)->id = m;
      m++;
    }
  p->stmts.len = m;
  /* A temporary is kept when some kept statement writes it. */
  unsigned char *written = calloc((size_t)nt + 1, 1);
  if (!written) abort();
  for (int i = 0; i < m; i++) written[IR_STMT(p, i)->out->id] = 1;
  int k = 0;
  for (int i = 0; i < nt; i++) {
    ir_tensor *t = IR_TENSOR(p, i);
    if (t->role == IR_ROLE_TEMP && !written[i]) continue;
    t->id = k;
    p->tensors.items[k++] = t;
  }
  p->tensors.len = k;
  free(live);
  free(keep);
  free(written);
  return 1;
}
