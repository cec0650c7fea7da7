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
  int errors, internal, dropped, warnings;
  kbc_diag_record *rec; /* message and snippet malloc'ed */
  int n_rec, cap_rec;
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
  for (int i = 0; i < d->n_rec; i++) {
    free((char *)d->rec[i].message);
    free((char *)d->rec[i].snippet);
  }
  free(d->rec);
  free(d);
}

/* Appends source line `line` and a caret under column `col` to out. */
static void show_line(const kbc_diag *d, kbc_buf *out, int line, int col) {
  if (!d->source || line < 1) return;
  const char *p = d->source, *end = d->source + d->source_len;
  for (int l = 1; l < line && p < end; p++)
    if (*p == '\n') l++;
  if (p >= end && line > 1) return;
  const char *e = p;
  while (e < end && *e != '\n') e++;
  size_t n = (size_t)(e - p);
  if (n > 400) n = 400; /* keep pathological lines readable */
  kbc_buf_puts(out, "  ");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    kbc_buf_putc(out, c == '\t' ? ' ' : (c < 32 || c == 127) ? '?' : (char)c);
  }
  kbc_buf_puts(out, "\n  ");
  for (int i = 1; i < col && (size_t)i <= n; i++) kbc_buf_putc(out, ' ');
  kbc_buf_puts(out, "^\n");
}

static char *dupbuf(const kbc_buf *b) { return dupstr(kbc_buf_str(b)); }

/* Keeps a record (taking message and snippet). */
static void keep(kbc_diag *d, kbc_diag_kind kind, kbc_loc loc, char *message, char *snippet) {
  if (d->n_rec == d->cap_rec) {
    int cap = d->cap_rec ? 2 * d->cap_rec : 8;
    kbc_diag_record *r = realloc(d->rec, sizeof *r * (size_t)cap);
    if (!r) abort();
    d->rec = r, d->cap_rec = cap;
  }
  d->rec[d->n_rec++] = (kbc_diag_record){kind, loc, message, snippet};
}

const char *kbc_diag_kind_name(kbc_diag_kind kind) {
  switch (kind) {
  case KBC_DIAG_ERROR: return "error";
  case KBC_DIAG_NOTE: return "note";
  case KBC_DIAG_WARNING: return "warning";
  case KBC_DIAG_INTERNAL: break;
  }
  return "internal error";
}

void kbc_diag_vreport(kbc_diag *d, kbc_diag_kind kind, kbc_loc loc, const char *fmt, va_list ap) {
  int counts = kind == KBC_DIAG_ERROR || kind == KBC_DIAG_INTERNAL;
  if (counts) {
    if (d->errors >= KBC_DIAG_MAX_ERRORS) {
      if (!d->dropped++) {
        kbc_buf_puts(&d->text, "kbc: too many errors; stopping\n");
        keep(d, KBC_DIAG_NOTE, (kbc_loc){0, 0}, dupstr("too many errors; stopping"), dupstr(""));
      }
      d->errors++;
      return;
    }
    d->errors++;
    if (kind == KBC_DIAG_INTERNAL) d->internal++;
  } else if (d->errors > KBC_DIAG_MAX_ERRORS) {
    return;
  }
  if (kind == KBC_DIAG_WARNING) d->warnings++;
  const char *label = kbc_diag_kind_name(kind);
  kbc_buf msg = {0}, text = {0}, snip = {0};
  kbc_buf_vprintf(&text, fmt, ap);
  if (kind == KBC_DIAG_INTERNAL) kbc_buf_puts(&text, " (this is a bug in kbc)");
  if (loc.line > 0)
    kbc_buf_printf(&msg, "%s:%d:%d: %s: %s", d->file, loc.line, loc.col, label, kbc_buf_str(&text));
  else
    kbc_buf_printf(&msg, "%s: %s: %s", d->file, label, kbc_buf_str(&text));
  if (counts && d->errors == 1) kbc_buf_puts(&d->first, kbc_buf_str(&msg));
  kbc_buf_puts(&d->text, kbc_buf_str(&msg));
  kbc_buf_putc(&d->text, '\n');
  kbc_buf_free(&msg);
  if (loc.line > 0) show_line(d, &snip, loc.line, loc.col);
  kbc_buf_puts(&d->text, kbc_buf_str(&snip));
  keep(d, kind, loc, dupbuf(&text), dupbuf(&snip));
  kbc_buf_free(&text);
  kbc_buf_free(&snip);
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
int kbc_diag_warnings(const kbc_diag *d) { return d->warnings; }
int kbc_diag_count(const kbc_diag *d) { return d->n_rec; }
const kbc_diag_record *kbc_diag_get(const kbc_diag *d, int i) { return i >= 0 && i < d->n_rec ? &d->rec[i] : NULL; }
