/* report.c — everything the kbc command prints on standard error: its own
 * messages, the spec's diagnostics, and the informational lines.
 *
 * Before: the options that shape them were set (cli_set_verbosity,
 * cli_set_color, cli_set_diagnostics_json, cli_set_werror; the defaults are
 * 1, auto, text, off).  After: each call printed one message.  The rule
 * every line follows (docs/ARCHITECTURE.md, "Messages"):
 *   - about a place in a file (the spec, an inputs or outputs file):
 *     "FILE:LINE:COL: KIND: message" or "FILE: KIND: message", KIND one of
 *     error, warning, note — the compiler's diagnostics and the data
 *     files' errors alike;
 *   - anything else (usage, devices, the environment): "kbc: message"
 *     ("kbc CMD: message" for commands that name themselves), and
 *     "kbc: warning: message" for a warning.
 * In colour (--color, like gcc and clang): the location bold, error red,
 * warning magenta, note cyan.  With --diagnostics-format=json the spec's
 * diagnostics are one JSON object a line instead (the other messages stay
 * text), as are the errors about a file as a whole (it cannot be read, it
 * holds a NUL byte, an inputs file is corrupt), with line and column 0. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "runtime/json.h"

static const char *command; /* cli_set_command */
static int verbosity = 1, color = -1 /* auto */, json_diags, werror;

void cli_set_command(const char *cmd) { command = cmd; }
void cli_set_verbosity(int v) { verbosity = v; }
int cli_verbosity(void) { return verbosity; }
void cli_set_color(int on) { color = on; }
void cli_set_diagnostics_json(int on) { json_diags = on; }
void cli_set_werror(int on) { werror = on; }

/* --color=auto: standard error is a terminal that shows colour. */
static int use_color(void) {
  if (color >= 0) return color;
  const char *term = getenv("TERM"), *no = getenv("NO_COLOR");
  color = isatty(2) && term && strcmp(term, "dumb") && !(no && *no);
  return color;
}

static const char *sgr(const char *code) { return use_color() ? code : ""; }
#define BOLD sgr("\033[1m")
#define RESET sgr("\033[0m")

static const char *kind_color(kbc_diagnostic_kind k) {
  return k == KBC_DIAGNOSTIC_ERROR ? sgr("\033[1;31m") : k == KBC_DIAGNOSTIC_WARNING ? sgr("\033[1;35m")
                                                                                      : sgr("\033[1;36m");
}

static void prefix(void) {
  if (command) fprintf(stderr, "%skbc %s:%s ", BOLD, command, RESET);
  else fprintf(stderr, "%skbc:%s ", BOLD, RESET);
}

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  prefix();
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  prefix();
  fprintf(stderr, "%swarning:%s ", kind_color(KBC_DIAGNOSTIC_WARNING), RESET);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void cli_info(const char *fmt, ...) {
  if (verbosity < 1) return;
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
  if (cmd) fprintf(stderr, "\nrun 'kbc %s --help' for usage\n", cmd);
  else fputs("\nrun 'kbc --help' for usage\n", stderr);
  va_end(ap);
  return CLI_USAGE;
}

static void print_json(const kbc_diagnostic *d, kbc_diagnostic_kind kind);

void cli_file_error(const char *file, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (json_diags) { /* a diagnostic without a place: line and column 0 */
    kbc_buf msg = {0};
    kbc_buf_vprintf(&msg, fmt, ap);
    kbc_diagnostic d = {.kind = KBC_DIAGNOSTIC_ERROR, .file = file, .message = kbc_buf_str(&msg)};
    print_json(&d, KBC_DIAGNOSTIC_ERROR);
    kbc_buf_free(&msg);
  } else {
    fprintf(stderr, "%s%s:%s %serror:%s ", BOLD, file, RESET, kind_color(KBC_DIAGNOSTIC_ERROR), RESET);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
  }
  va_end(ap);
}

void cli_rt_error(const char *file, const char *msg) {
  size_t n = file ? strlen(file) : 0;
  if (n && !strncmp(msg, file, n) && msg[n] == ':' && msg[n + 1] == ' ') cli_file_error(file, "%s", msg + n + 2);
  else cli_error("%s", msg);
}

void cli_api_error(void) {
  const char *m = kbc_last_error();
  fputs(m, stderr);
  if (!m[0] || m[strlen(m) - 1] != '\n') fputc('\n', stderr);
}

/* One diagnostic as text: "FILE:LINE:COL: KIND: message", then its snippet. */
static void print_text(const kbc_diagnostic *d, kbc_diagnostic_kind kind, int promoted) {
  if (d->line > 0) fprintf(stderr, "%s%s:%d:%d:%s ", BOLD, d->file, d->line, d->column, RESET);
  else fprintf(stderr, "%s%s:%s ", BOLD, d->file, RESET);
  fprintf(stderr, "%s%s:%s %s%s\n", kind_color(kind), kbc_diagnostic_kind_name(kind), RESET, d->message,
          promoted ? " [-Werror]" : "");
  fputs(d->snippet, stderr);
}

static void print_json(const kbc_diagnostic *d, kbc_diagnostic_kind kind) {
  kbc_buf b = {0};
  kbc_buf_puts(&b, "{\"file\": ");
  rt_json_put_string(&b, d->file);
  kbc_buf_printf(&b, ", \"line\": %d, \"column\": %d, \"kind\": ", d->line, d->column);
  rt_json_put_string(&b, kbc_diagnostic_kind_name(kind));
  kbc_buf_puts(&b, ", \"message\": ");
  rt_json_put_string(&b, d->message);
  kbc_buf_puts(&b, "}\n");
  fputs(kbc_buf_str(&b), stderr);
  kbc_buf_free(&b);
}

int cli_print_diagnostics(const kbc_diagnostic *r, int n, const char *text) {
  int warnings = 0;
  for (int i = 0; i < n; i++) warnings += r[i].kind == KBC_DIAGNOSTIC_WARNING;
  if (!json_diags && !use_color() && !(werror && warnings)) {
    fputs(text, stderr); /* as the library rendered it */
  } else {
    for (int i = 0; i < n; i++) {
      int promoted = werror && r[i].kind == KBC_DIAGNOSTIC_WARNING;
      kbc_diagnostic_kind kind = promoted ? KBC_DIAGNOSTIC_ERROR : r[i].kind;
      if (json_diags) print_json(&r[i], kind);
      else if (r[i].kind == KBC_DIAGNOSTIC_NOTE && r[i].line == 0 && !strcmp(r[i].message, "too many errors; stopping"))
        cli_error("%s", r[i].message);
      else print_text(&r[i], kind, promoted);
    }
  }
  return werror && warnings ? CLI_FAIL : CLI_OK;
}

int cli_print_last_diagnostics(const char *text) {
  int n = kbc_last_num_diagnostics();
  kbc_diagnostic *r = calloc((size_t)n + 1, sizeof *r);
  if (!r) {
    fputs(text, stderr);
    return CLI_OK;
  }
  for (int i = 0; i < n; i++) kbc_last_diagnostic(i, &r[i]);
  int rc = cli_print_diagnostics(r, n, text);
  free(r);
  return rc;
}
