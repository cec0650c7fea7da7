/* cli.c — helpers shared by the kbc commands; see cli.h. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pipeline.h"
#include "support/diag.h"
#include "support/name.h"

static const char *command; /* cli_set_command */

void cli_set_command(const char *cmd) { command = cmd; }

static void prefix(void) {
  if (command) fprintf(stderr, "kbc %s: ", command);
  else fputs("kbc: ", stderr);
}

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  prefix();
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  prefix();
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nrun 'kbc %s --help' for usage\n", cmd);
  va_end(ap);
  return CLI_USAGE;
}

char *cli_read_spec(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    cli_error("cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(CLI_MAX_SPEC_BYTES + 1);
  if (!buf) {
    fclose(f);
    cli_error("out of memory");
    return NULL;
  }
  size_t n = fread(buf, 1, CLI_MAX_SPEC_BYTES + 1, f);
  int err = ferror(f);
  fclose(f);
  if (err) {
    cli_error("cannot read '%s' (is it a directory?)", path);
    free(buf);
    return NULL;
  }
  if (n > CLI_MAX_SPEC_BYTES) {
    cli_error("'%s' is larger than %d bytes; is it really a spec?", path, CLI_MAX_SPEC_BYTES);
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  if (memchr(buf, 0, n)) {
    cli_error("'%s' contains a NUL byte; a spec is text", path);
    free(buf);
    return NULL;
  }
  return buf;
}

const char *cli_default_name(kbc_arena *a, const char *path) { return kbc_name_from_path(a, path); }

ir_program *cli_compile(kbc_arena *a, const char *path, kbc_buf *dump, const char *dump_after) {
  char *src = cli_read_spec(path);
  if (!src) return NULL;
  kbc_diag *d = kbc_diag_create(path, src);
  ir_pipeline_opts opts = {.dump = dump, .dump_after = dump_after};
  ir_program *p = ir_pipeline_run(a, d, src, cli_default_name(a, path), &opts);
  fputs(kbc_diag_text(d), stderr);
  if (!p && kbc_diag_errors(d) == 0) cli_error("%s: compilation failed", path);
  kbc_diag_destroy(d);
  free(src);
  return p;
}

int cli_compile_spec(const char *path, const kbc_options *opt, kbc_program **p) {
  *p = NULL;
  char *src = cli_read_spec(path);
  if (!src) return CLI_FAIL;
  kbc_status st = kbc_compile_string(src, path, opt, p);
  free(src);
  if (st == KBC_OK) {
    fputs(kbc_program_diagnostics(*p), stderr);
    return CLI_OK;
  }
  if (st == KBC_ERROR_SPEC || st == KBC_ERROR_INTERNAL) {
    fputs(kbc_last_error(), stderr); /* the diagnostics */
    if (!kbc_last_error()[0]) cli_error("%s: compilation failed", path);
  } else {
    cli_error("%s", kbc_last_error());
  }
  return st == KBC_ERROR_ARGUMENT ? CLI_USAGE : CLI_FAIL;
}

void cli_api_error(void) {
  const char *m = kbc_last_error();
  fputs(m, stderr);
  if (!m[0] || m[strlen(m) - 1] != '\n') fputc('\n', stderr);
}

int cli_parse_i64(const char *s, int64_t *out) {
  if (!s || !*s) return 0;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end) return 0;
  *out = v;
  return 1;
}

int cli_parse_f64(const char *s, double *out) {
  if (!s || !*s) return 0;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  if (errno || *end || !isfinite(v)) return 0;
  *out = v;
  return 1;
}

int cli_parse_set(const char *cmd, kbc_arena *a, const char *arg, const char **name, int64_t *value) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || !cli_parse_i64(eq + 1, value))
    return cli_usage(cmd, "--set takes AXIS=N, not '%s'", arg);
  if (*value < 1) {
    cli_error("--set %s: axis sizes must be positive", arg);
    return CLI_FAIL;
  }
  *name = kbc_arena_strndup(a, arg, (size_t)(eq - arg));
  return CLI_OK;
}

int cli_apply_set(const char *cmd, const ir_program *p, kbc_arena *a, const char *arg, int64_t *vars) {
  const char *name = NULL;
  int64_t n = 0;
  int rc = cli_parse_set(cmd, a, arg, &name, &n);
  if (rc != CLI_OK) return rc;
  const ir_axis *ax = ir_axis_find(p, name);
  if (!ax) {
    cli_error("--set %s: the spec has no axis '%s'", arg, name);
    return CLI_FAIL;
  }
  if (ax->kind != IR_AXIS_VAR) {
    cli_error("--set %s: axis '%s' is %s; set the var axes it is computed from", arg, name,
              ax->kind == IR_AXIS_CONST ? "a constant" : "derived");
    return CLI_FAIL;
  }
  vars[ax->var_id] = n;
  return CLI_OK;
}

int cli_require_vars(const char *cmd, const ir_program *p, const int64_t *vars) {
  kbc_buf names = {0}, give = {0};
  for (int i = 0; i < p->vars.len; i++)
    if (vars[i] < 1) {
      kbc_buf_printf(&names, "%s%s", names.len ? ", " : "", IR_VAR(p, i)->name);
      kbc_buf_printf(&give, "%s--set %s=N", give.len ? " " : "", IR_VAR(p, i)->name);
    }
  int rc = CLI_OK;
  if (names.len)
    rc = cli_usage(cmd, "%s needs every var axis; missing: %s (give %s)", cmd, kbc_buf_str(&names),
                   kbc_buf_str(&give));
  kbc_buf_free(&names);
  kbc_buf_free(&give);
  return rc;
}

int cli_bind_spec(const char *cmd, const char *spec, const char *const *sets, int n_sets, kbc_arena *a,
                  ir_program **ir, ir_binding *b) {
  ir_program *p = *ir = cli_compile(a, spec, NULL, NULL);
  if (!p) return CLI_FAIL;
  int64_t *vars = KBC_NEW_ARRAY(a, int64_t, p->vars.len + 1);
  for (int i = 0; i < n_sets; i++) {
    int rc = cli_apply_set(cmd, p, a, sets[i], vars);
    if (rc != CLI_OK) return rc;
  }
  int rc = cli_require_vars(cmd, p, vars);
  if (rc != CLI_OK) return rc;
  kbc_diag *d = kbc_diag_create(spec, NULL);
  int bound = ir_bind(p, a, vars, b, d);
  fputs(kbc_diag_text(d), stderr);
  kbc_diag_destroy(d);
  return bound ? CLI_OK : CLI_FAIL;
}
