/* diag.h — the one diagnostics module.
 *
 * Every user-facing message of a compilation goes through a kbc_diag:
 *   file:line:col: error: message
 *     <the source line>
 *         ^
 * Messages are collected as text (the library never prints); the CLI prints
 * kbc_diag_text(), or renders the records (kbc_diag_get: kind, place,
 * message, source snippet) in colour or as JSON.  User errors (bad spec,
 * bad input) are KBC_DIAG_ERROR; a broken compiler invariant is
 * KBC_DIAG_INTERNAL and says so; KBC_DIAG_WARNING is a likely mistake that
 * does not stop the compilation (`file:line:col: warning: ...`), counted
 * apart from the errors (kbc_diag_warnings). */
#ifndef KBC_DIAG_H
#define KBC_DIAG_H

#include <stdarg.h>

typedef struct {
  int line, col; /* 1-based; line 0 = no location */
} kbc_loc;

typedef enum {
  KBC_DIAG_ERROR,
  KBC_DIAG_NOTE,
  KBC_DIAG_INTERNAL,
  KBC_DIAG_WARNING,
} kbc_diag_kind;

/* One message as reported: the text of its first line is
 * "FILE:LINE:COL: KIND: message" (or "FILE: KIND: message" at line 0);
 * snippet holds the source line and the caret line under the column, each
 * ending in a newline ("" when there is no source or no place).  The
 * "too many errors" line is a note at line 0. */
typedef struct {
  kbc_diag_kind kind;
  kbc_loc loc;
  const char *message; /* with " (this is a bug in kbc)" for internal errors */
  const char *snippet;
} kbc_diag_record;

typedef struct kbc_diag kbc_diag;

/* file is the name printed; source (may be NULL) is the text the locations
 * point into.  Both are copied. */
kbc_diag *kbc_diag_create(const char *file, const char *source);
void kbc_diag_destroy(kbc_diag *d);

void kbc_diag_report(kbc_diag *d, kbc_diag_kind kind, kbc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void kbc_diag_vreport(kbc_diag *d, kbc_diag_kind kind, kbc_loc loc, const char *fmt, va_list ap);

#define kbc_error(d, loc, ...) kbc_diag_report((d), KBC_DIAG_ERROR, (loc), __VA_ARGS__)
#define kbc_note(d, loc, ...) kbc_diag_report((d), KBC_DIAG_NOTE, (loc), __VA_ARGS__)
#define kbc_warning(d, loc, ...) kbc_diag_report((d), KBC_DIAG_WARNING, (loc), __VA_ARGS__)
#define kbc_internal(d, loc, ...) kbc_diag_report((d), KBC_DIAG_INTERNAL, (loc), __VA_ARGS__)

int kbc_diag_errors(const kbc_diag *d);   /* errors + internal errors so far */
int kbc_diag_internal(const kbc_diag *d); /* internal errors so far */
const char *kbc_diag_text(const kbc_diag *d);  /* all rendered messages */
const char *kbc_diag_first(const kbc_diag *d); /* first error's message line, "" if none */
const char *kbc_diag_file(const kbc_diag *d);
int kbc_diag_warnings(const kbc_diag *d); /* warnings so far */
/* The records, in the order reported; kbc_diag_get is NULL out of range. */
int kbc_diag_count(const kbc_diag *d);
const kbc_diag_record *kbc_diag_get(const kbc_diag *d, int i);
/* "error", "warning", "note" or "internal error". */
const char *kbc_diag_kind_name(kbc_diag_kind kind);

/* After this many errors further ones are dropped (one line says so). */
enum { KBC_DIAG_MAX_ERRORS = 20 };

#endif
