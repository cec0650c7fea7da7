/* plan.c — see plan.h. */
#include "plan.h"

#include <string.h>

#include "exec.h"
#include "json.h"

/* The first line of a statement as the IR printer writes it. */
static const char *stmt_line(kbc_arena *a, const ir_stmt *s) {
  kbc_buf b = {0};
  ir_print_stmt(s, &b);
  const char *text = kbc_buf_str(&b);
  const char *nl = strchr(text, '\n');
  char *line = kbc_arena_strndup(a, text, nl ? (size_t)(nl - text) : strlen(text));
  kbc_buf_free(&b);
  return line;
}

static void resources_of(const rt_resources *res, const char *name, rt_plan_launch *l) {
  const rt_kernel_resources *r = res ? rt_resources_find(res, name) : NULL;
  l->registers = r ? r->registers : -1;
  l->static_smem = r ? r->smem : -1;
}

/* Whether launch `row` waits for the one before it alone (as a chain's
 * do; the first launch counts so too). */
static int waits_for_previous(const rt_plan_launch *launches, int row) {
  const rt_plan_launch *l = &launches[row];
  return row == 0 || (l->n_after == 1 && l->after[0] == row - 1);
}

int rt_plan_make(kbc_arena *a, const ir_program *p, const cg_program *g, const ir_binding *b,
                 const rt_resources *res, rt_plan *out, rt_err *err) {
  memset(out, 0, sizeof *out);
  out->p = p;
  out->b = b;
  out->launches = KBC_NEW_ARRAY(a, rt_plan_launch, 4 * g->n_kernels + 1);
  int *row_of = KBC_NEW_ARRAY(a, int, g->n_kernels + 1); /* by kernel: its own launch's row */
  for (int k = 0; k < g->n_kernels; k++) {
    const cg_kernel *kn = &g->kernels[k];
    int first = out->n_launches;
    cg_launch launch;
    if (!cg_kernel_launch(kn, b->vars, &launch))
      return rt_fail(err, RT_ERR_ARGUMENT, "kernel %s: its amount of work overflows", kn->name);
    /* as rt_exec_launch: the zero-fill of the kernel's target first */
    if (kn->zero_tensor >= 0 && b->numel[kn->zero_tensor] > 0) {
      rt_plan_launch *z = &out->launches[out->n_launches++];
      z->name = "kbc_zero";
      z->family = "zero";
      z->n_stmts = 1;
      z->stmts = KBC_NEW_ARRAY(a, const char *, 1);
      z->stmts[0] = kbc_arena_printf(a, "%s = 0", IR_TENSOR(p, kn->zero_tensor)->name);
      z->launch = cg_zero_launch(b->numel[kn->zero_tensor]);
      resources_of(res, z->name, z);
    }
    /* then its operands' copies, where it has work: rounded to TF32 (kbc_tf32_copy) or packed k-major (its own) */
    for (int i = 0; i < kn->n_prep && launch.grid[0] > 0; i++) {
      cg_launch cl;
      if (!cg_prep_launch_of(kn, i, b->vars, b->numel, &cl))
        return rt_fail(err, RT_ERR_ARGUMENT, "kernel %s: the size of its operands' copies overflows", kn->name);
      if (cl.grid[0] <= 0) continue;
      rt_plan_launch *c = &out->launches[out->n_launches++];
      char name[512];
      cg_prep_name(kn, i, name, sizeof name);
      c->name = kbc_arena_printf(a, "%s", name);
      c->family = "prep";
      c->n_stmts = 1;
      c->stmts = KBC_NEW_ARRAY(a, const char *, 1);
      const char *t = IR_TENSOR(p, kn->prep[i])->name;
      if (kn->prep_round[i]) t = kbc_arena_printf(a, "tf32(%s)", t);
      c->stmts[0] = kn->prep_pack[i] ? kbc_arena_printf(a, "(scratch) = %s packed k-major for operand %c", t,
                                                        kn->prep_pack[i] == 1 ? 'A' : 'B')
                                     : kbc_arena_printf(a, "(scratch) = %s", t);
      c->launch = cl;
      resources_of(res, c->name, c);
    }
    rt_plan_launch *l = &out->launches[out->n_launches++];
    l->name = kn->name;
    l->family = cg_family_name[kn->family];
    l->n_stmts = kn->count;
    l->stmts = KBC_NEW_ARRAY(a, const char *, kn->count + 1);
    for (int i = 0; i < kn->count; i++) l->stmts[i] = stmt_line(a, IR_STMT(g->program, kn->first + i));
    l->launch = launch;
    l->n_stages = kn->n_stages;
    l->stages = kn->stages;
    l->cluster = kn->cluster;
    l->points = kn->points;
    resources_of(res, kn->name, l);
    row_of[k] = out->n_launches - 1;
    /* what each launch waits for: the first, the kernels k follows; the rest, the launch before */
    for (int r = first; r < out->n_launches; r++) {
      rt_plan_launch *x = &out->launches[r];
      x->after = KBC_NEW_ARRAY(a, int, kn->n_after + 1);
      if (r > first) x->after[x->n_after++] = r - 1;
      else
        for (int d = 0; d < kn->n_after; d++) x->after[x->n_after++] = row_of[kn->after[d]];
      out->branches |= !waits_for_previous(out->launches, r);
    }
  }
  size_t *offset = KBC_NEW_ARRAY(a, size_t, p->tensors.len + 1);
  unsigned char *in_ws = KBC_NEW_ARRAY(a, unsigned char, p->tensors.len + 1);
  rt_workspace_members(p, g, in_ws);
  size_t scratch_at, scratch_bytes;
  out->workspace_bytes = rt_workspace_layout(p, g, in_ws, b, offset, &scratch_at, &scratch_bytes, NULL);
  if (out->workspace_bytes == (size_t)-1)
    return rt_fail(err, RT_ERR_ARGUMENT, "the scratch memory of a kernel overflows at these sizes");
  out->buffers = KBC_NEW_ARRAY(a, rt_plan_buffer, p->tensors.len + 2);
  for (int i = 0; i < p->tensors.len; i++) {
    const ir_tensor *t = IR_TENSOR(p, i);
    if (!in_ws[i]) continue;
    out->buffers[out->n_buffers++] = (rt_plan_buffer){.name = t->name, .rank = t->rank, .shape = b->shape[i],
                                                      .bytes = sizeof(float) * (size_t)b->numel[i],
                                                      .offset = offset[i]};
  }
  out->n_temps = out->n_buffers;
  if (scratch_bytes) { /* split-K's partial sums, operands' copies: one region, a part per scratch slot */
    int64_t *shape = KBC_NEW_ARRAY(a, int64_t, 1);
    shape[0] = (int64_t)(scratch_bytes / sizeof(float));
    out->buffers[out->n_buffers++] =
        (rt_plan_buffer){.name = "(scratch)", .rank = 1, .shape = shape, .bytes = scratch_bytes, .offset = scratch_at};
  }
  return 0;
}

/* ---- text ------------------------------------------------------------------ */

static void put_dims3(kbc_buf *o, const int64_t *g) {
  kbc_buf_printf(o, "[%lld, %lld, %lld]", (long long)g[0], (long long)g[1], (long long)g[2]);
}

static void put_shape(kbc_buf *o, int rank, const int64_t *shape) {
  kbc_buf_putc(o, '[');
  for (int k = 0; k < rank; k++) kbc_buf_printf(o, "%s%lld", k ? ", " : "", (long long)shape[k]);
  kbc_buf_putc(o, ']');
}

/* A table: a header row, then rows of cells filled by a callback, columns
 * padded to their widest cell; after each row, the lines `after` adds. */
typedef struct {
  int n_cols, n_rows;
  const char *const *head;
  const rt_plan *pl;
  void (*cells)(const rt_plan *pl, int row, kbc_buf *cell);
  void (*after)(const rt_plan *pl, int row, int indent, kbc_buf *o);
} table;

enum { MAX_COLS = 8 };

static void fill(const table *t, int row, kbc_buf *cell) {
  for (int c = 0; c < t->n_cols; c++) {
    rt_buf_clear(&cell[c]);
    if (row < 0) kbc_buf_puts(&cell[c], t->head[c]);
  }
  if (row >= 0) t->cells(t->pl, row, cell);
}

static void put_table(const table *t, kbc_buf *o) {
  kbc_buf cell[MAX_COLS] = {{0}};
  int w[MAX_COLS] = {0};
  for (int r = -1; r < t->n_rows; r++) {
    fill(t, r, cell);
    for (int c = 0; c < t->n_cols; c++)
      if ((int)cell[c].len > w[c]) w[c] = (int)cell[c].len;
  }
  for (int r = -1; r < t->n_rows; r++) {
    fill(t, r, cell);
    for (int c = 0; c < t->n_cols; c++) {
      if (c + 1 < t->n_cols) kbc_buf_printf(o, "  %-*s", w[c], kbc_buf_str(&cell[c]));
      else kbc_buf_printf(o, "  %s\n", kbc_buf_str(&cell[c]));
    }
    if (r >= 0 && t->after) t->after(t->pl, r, w[0] + 4, o); /* under the second column */
  }
  for (int c = 0; c < MAX_COLS; c++) kbc_buf_free(&cell[c]);
}

/* index, kernel, family, grid, block, smem, regs */
static void launch_cells(const rt_plan *pl, int row, kbc_buf *cell) {
  const rt_plan_launch *l = &pl->launches[row];
  const cg_launch *c = &l->launch;
  int64_t block[3] = {c->block[0], c->block[1], c->block[2]};
  kbc_buf_printf(&cell[0], "%d", row);
  kbc_buf_puts(&cell[1], l->name);
  kbc_buf_puts(&cell[2], l->family);
  put_dims3(&cell[3], c->grid);
  put_dims3(&cell[4], block);
  if (l->static_smem >= 0) kbc_buf_printf(&cell[5], "%d + %ld", c->smem, l->static_smem);
  else kbc_buf_printf(&cell[5], "%d + ?", c->smem);
  if (l->registers >= 0) kbc_buf_printf(&cell[6], "%d", l->registers);
  else kbc_buf_puts(&cell[6], "?");
}

/* A persistent kernel's stage: its kernel's name and family, kbc_zero and
 * zero for a zero-fill (as the launches of a plan without one name them). */
static const char *stage_name(const cg_stage *st) { return st->kernel ? st->kernel->name : "kbc_zero"; }
static const char *stage_family(const cg_stage *st) { return st->kernel ? cg_family_name[st->kernel->family] : "zero"; }

/* "stage 3: NAME (family, B blocks of T threads; after 1, 2)". */
static void put_stage(kbc_buf *o, const cg_stage *st, int i) {
  kbc_buf_printf(o, "stage %d: %s (%s, %lld block%s of %d threads", i, stage_name(st), stage_family(st),
                 (long long)st->blocks, st->blocks == 1 ? "" : "s", st->threads);
  for (int d = 0; d < st->n_after; d++) kbc_buf_printf(o, "%s%d", d ? ", " : "; after stage ", st->after[d]);
  kbc_buf_putc(o, ')');
}

static void launch_stmts(const rt_plan *pl, int row, int indent, kbc_buf *o) {
  const rt_plan_launch *l = &pl->launches[row];
  if (pl->branches && !waits_for_previous(pl->launches, row)) {
    kbc_buf_printf(o, "%*s(waits for ", indent, "");
    for (int d = 0; d < l->n_after; d++) kbc_buf_printf(o, "%s%d", d ? ", " : "", l->after[d]);
    kbc_buf_puts(o, l->n_after ? " only)\n" : "nothing)\n");
  }
  if (!l->n_stages) {
    for (int s = 0; s < l->n_stmts; s++) kbc_buf_printf(o, "%*s%s\n", indent, "", l->stmts[s]);
    return;
  }
  if (l->cluster)
    kbc_buf_printf(o, "%*s(%lld batch points, a cluster of %d block%s each: the stages on the point's slices)\n",
                   indent, "", (long long)l->points, l->cluster, l->cluster == 1 ? "" : "s");
  for (int i = 0; i < l->n_stages; i++) {
    const cg_stage *st = &l->stages[i];
    kbc_buf_printf(o, "%*s", indent, "");
    put_stage(o, st, i);
    kbc_buf_putc(o, '\n');
    if (!st->kernel) kbc_buf_printf(o, "%*s  %s = 0\n", indent, "", IR_TENSOR(pl->p, st->zero)->name);
    for (int s = 0; st->kernel && s < st->kernel->count; s++)
      kbc_buf_printf(o, "%*s  %s\n", indent, "", l->stmts[st->kernel->first + s]);
  }
}

/* buffer, shape, bytes, offset */
static void buffer_cells(const rt_plan *pl, int row, kbc_buf *cell) {
  const rt_plan_buffer *bf = &pl->buffers[row];
  kbc_buf_puts(&cell[0], bf->name);
  put_shape(&cell[1], bf->rank, bf->shape);
  kbc_buf_printf(&cell[2], "%zu", bf->bytes);
  kbc_buf_printf(&cell[3], "%zu", bf->offset);
}

void rt_plan_text(const rt_plan *pl, kbc_buf *o) {
  const ir_program *p = pl->p;
  kbc_buf_printf(o, "# launch plan of %s for ", p->name);
  int fixed = 0;
  for (int i = 0; i < p->axes.len; i++)
    if (IR_AXIS(p, i)->fixed) {
      int64_t v = 0;
      sym_is_const(IR_AXIS(p, i)->size, &v);
      kbc_buf_printf(o, "%s%s=%lld", fixed++ ? " " : "", IR_AXIS(p, i)->name, (long long)v);
    }
  if (fixed) kbc_buf_puts(o, " (specialized)");
  else if (!p->vars.len) kbc_buf_puts(o, "its constant axes");
  for (int i = 0; i < p->vars.len; i++)
    kbc_buf_printf(o, "%s%s=%lld", i ? " " : "", IR_VAR(p, i)->name, (long long)pl->b->vars[i]);
  kbc_buf_printf(o, ": %s, %s%s, %d launch%s\n", pl->arch ? pl->arch : "?", pl->precision ? pl->precision : "?",
                 pl->idx32 ? ", 32-bit indices" : "", pl->n_launches, pl->n_launches == 1 ? "" : "es");
  if (pl->tuned || (pl->switches && *pl->switches))
    kbc_buf_printf(o, "# switches: %s%s\n", pl->switches && *pl->switches ? pl->switches : "the defaults",
                   pl->tuned ? " (from kbc tune's record)" : "");
  kbc_buf_puts(o, "# grid, block: [x, y, z] (a grid of 0: no work, not launched); smem: bytes per block,\n"
                  "# dynamic + static; regs: registers per thread (ptxas); under each, the statements it computes\n");
  if (pl->branches)
    kbc_buf_puts(o, "# each launch waits for the one before it, or for those it names: the rest may run beside it\n");
  static const char *const lhead[] = {"#", "kernel", "family", "grid", "block", "smem", "regs"};
  put_table(&(table){.n_cols = 7, .n_rows = pl->n_launches, .head = lhead, .pl = pl, .cells = launch_cells,
                     .after = launch_stmts},
            o);
  kbc_buf_printf(o, "\n# workspace: %zu bytes", pl->workspace_bytes);
  if (!pl->n_buffers) {
    kbc_buf_puts(o, ", no temporaries\n");
    return;
  }
  int prep = 0; /* any operand's copy (cg_kernel.prep) */
  for (int i = 0; i < pl->n_launches; i++) prep |= !strcmp(pl->launches[i].family, "prep");
  kbc_buf_printf(o, ", %d temporar%s%s, each at a multiple of %d bytes\n", pl->n_temps, pl->n_temps == 1 ? "y" : "ies",
                 pl->n_temps == pl->n_buffers ? ""
                 : prep ? " and the kernels' scratch (operands' copies, split-K's partial sums)"
                        : " and the kernels' scratch (split-K's partial sums)",
                 RT_WORKSPACE_ALIGN);
  static const char *const bhead[] = {"buffer", "shape", "bytes", "offset"};
  put_table(&(table){.n_cols = 4, .n_rows = pl->n_buffers, .head = bhead, .pl = pl, .cells = buffer_cells}, o);
}

/* ---- JSON ------------------------------------------------------------------ */

/* A persistent kernel's ", "stages": [...]" (nothing for another kernel). */
static void put_stages_json(kbc_buf *o, const rt_plan_launch *l) {
  for (int i = 0; i < l->n_stages; i++) {
    const cg_stage *st = &l->stages[i];
    kbc_buf_puts(o, i ? ",\n    {\"name\": " : ", \"stages\": [\n    {\"name\": ");
    rt_json_put_string(o, stage_name(st));
    kbc_buf_puts(o, ", \"family\": ");
    rt_json_put_string(o, stage_family(st));
    kbc_buf_printf(o, ", \"blocks\": %lld, \"threads\": %d, \"after\": [", (long long)st->blocks, st->threads);
    for (int d = 0; d < st->n_after; d++) kbc_buf_printf(o, "%s%d", d ? ", " : "", st->after[d]);
    kbc_buf_puts(o, "]}");
    if (i + 1 == l->n_stages) kbc_buf_puts(o, "]");
  }
}

void rt_plan_json(const rt_plan *pl, kbc_buf *o) {
  kbc_buf_puts(o, "{\"kernels\": [");
  for (int i = 0; i < pl->n_launches; i++) {
    const rt_plan_launch *l = &pl->launches[i];
    int64_t block[3] = {l->launch.block[0], l->launch.block[1], l->launch.block[2]};
    kbc_buf_puts(o, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
    rt_json_put_string(o, l->name);
    kbc_buf_puts(o, ", \"family\": ");
    rt_json_put_string(o, l->family);
    kbc_buf_puts(o, ", \"statements\": [");
    for (int s = 0; s < l->n_stmts; s++) {
      if (s) kbc_buf_puts(o, ", ");
      rt_json_put_string(o, l->stmts[s]);
    }
    kbc_buf_puts(o, "], \"grid\": ");
    put_dims3(o, l->launch.grid);
    kbc_buf_puts(o, ", \"block\": ");
    put_dims3(o, block);
    kbc_buf_puts(o, ", \"smem_bytes\": ");
    if (l->static_smem >= 0) kbc_buf_printf(o, "%ld", (long)l->launch.smem + l->static_smem);
    else kbc_buf_puts(o, "null");
    kbc_buf_puts(o, ", \"registers\": ");
    if (l->registers >= 0) kbc_buf_printf(o, "%d", l->registers);
    else kbc_buf_puts(o, "null");
    kbc_buf_puts(o, ", \"after\": [");
    for (int d = 0; d < l->n_after; d++) kbc_buf_printf(o, "%s%d", d ? ", " : "", l->after[d]);
    kbc_buf_puts(o, "]");
    put_stages_json(o, l);
    if (l->cluster) kbc_buf_printf(o, ", \"cluster\": %d, \"points\": %lld", l->cluster, (long long)l->points);
    kbc_buf_puts(o, "}");
  }
  kbc_buf_puts(o, "],\n \"buffers\": [");
  for (int i = 0; i < pl->n_buffers; i++) {
    const rt_plan_buffer *bf = &pl->buffers[i];
    kbc_buf_puts(o, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
    rt_json_put_string(o, bf->name);
    kbc_buf_puts(o, ", \"shape\": ");
    put_shape(o, bf->rank, bf->shape);
    kbc_buf_printf(o, ", \"bytes\": %zu}", bf->bytes);
  }
  kbc_buf_printf(o, "],\n \"workspace_bytes\": %zu,\n \"switches\": ", pl->workspace_bytes);
  rt_json_put_string(o, pl->switches ? pl->switches : "");
  kbc_buf_printf(o, ", \"tuned\": %s}\n", pl->tuned ? "true" : "false");
}
