/* diag.c — rendering of located messages; see diag.h. */
#include "diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

struct kbc_diag {
  char *file, *source;
  size_t source_len;
  kbc_buf text, first;
  int errors, internal, dropped;
};

static char *dupstr(const char *s) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (!p) abort();
  memcpy(p, s, n + 1);
  return p;
}

kbc_diag *kbc_diag_create(const char *file, const char *source) {
  kbc_diag *d = calloc(1, sizeof *d);
  if (!d) abort();
  d->file = dupstr(file ? file : "<input>");
  d->source = source ? dupstr(source) : NULL;
  d->source_len = source ? strlen(source) : 0;
  return d;
}

void kbc_diag_destroy(kbc_diag *d) {
  if (!d) return;
  free(d->file);
  free(d->source);
  kbc_buf_free(&d->text);
  kbc_buf_free(&d->first);
  free(d);
}

/* Appends source line `line` and a caret under column `col`. */
static void show_line(kbc_diag *d, int line, int col) {
  if (!d->source || line < 1) return;
  const char *p = d->source, *end = d->source + d->source_len;
  for (int l = 1; l < line && p < end; p++)
    if (*p == '\n') l++;
  if (p >= end && line > 1) return;
  const char *e = p;
  while (e < end && *e != '\n') e++;
  size_t n = (size_t)(e - p);
  if (n > 400) n = 400; /* keep pathological lines readable */
  kbc_buf_puts(&d->text, "  ");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    kbc_buf_putc(&d->text, c == '\t' ? ' ' : (c < 32 || c == 127) ? '?' : (char)c);
  }
  kbc_buf_puts(&d->text, "\n  ");
  for (int i = 1; i < col && (size_t)i <= n; i++) kbc_buf_putc(&d->text, ' ');
  kbc_buf_puts(&d->text, "^\n");
}

void kbc_diag_vreport(kbc_diag *d, kbc_diag_kind kind, kbc_loc loc, const char *fmt, va_list ap) {
  if (kind != KBC_DIAG_NOTE) {
    if (d->errors >= KBC_DIAG_MAX_ERRORS) {
      if (!d->dropped++) kbc_buf_puts(&d->text, "kbc: too many errors; stopping\n");
      d->errors++;
      return;
    }
    d->errors++;
    if (kind == KBC_DIAG_INTERNAL) d->internal++;
  } else if (d->errors > KBC_DIAG_MAX_ERRORS) {
    return;
  }
  const char *label = kind == KBC_DIAG_ERROR ? "error" : kind == KBC_DIAG_NOTE ? "note" : "internal error";
  kbc_buf msg = {0};
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  char *m = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (!m) abort();
  vsnprintf(m, (size_t)(n > 0 ? n : 0) + 1, fmt, ap);
  if (loc.line > 0)
    kbc_buf_printf(&msg, "%s:%d:%d: %s: %s", d->file, loc.line, loc.col, label, m);
  else
    kbc_buf_printf(&msg, "%s: %s: %s", d->file, label, m);
  if (kind == KBC_DIAG_INTERNAL) kbc_buf_puts(&msg, " (this is a bug in kbc)");
  free(m);
  if (kind != KBC_DIAG_NOTE && d->errors == 1) kbc_buf_puts(&d->first, kbc_buf_str(&msg));
  kbc_buf_puts(&d->text, kbc_buf_str(&msg));
  kbc_buf_putc(&d->text, '\n');
  kbc_buf_free(&msg);
  if (loc.line > 0) show_line(d, loc.line, loc.col);
}

void kbc_diag_report(kbc_diag *d, kbc_diag_kind kind, kbc_loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kbc_diag_vreport(d, kind, loc, fmt, ap);
  va_end(ap);
}

int kbc_diag_errors(const kbc_diag *d) { return d->errors; }
int kbc_diag_internal(const kbc_diag *d) { return d->internal; }
const char *kbc_diag_text(const kbc_diag *d) { return kbc_buf_str(&d->text); }
const char *kbc_diag_first(const kbc_diag *d) { return kbc_buf_str(&d->first); }
const char *kbc_diag_file(const kbc_diag *d) { return d->file; }
