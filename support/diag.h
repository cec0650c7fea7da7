/* diag.h — the one diagnostics module.
 *
 * Every user-facing message of a compilation goes through a kbc_diag:
 *   file:line:col: error: message
 *     <the source line>
 *         ^
 * Messages are collected as text (the library never prints); the CLI prints
 * kbc_diag_text().  User errors (bad spec, bad input) are KBC_DIAG_ERROR;
 * a broken compiler invariant is KBC_DIAG_INTERNAL and says so. */
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
} kbc_diag_kind;

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
#define kbc_internal(d, loc, ...) kbc_diag_report((d), KBC_DIAG_INTERNAL, (loc), __VA_ARGS__)

int kbc_diag_errors(const kbc_diag *d);   /* errors + internal errors so far */
int kbc_diag_internal(const kbc_diag *d); /* internal errors so far */
const char *kbc_diag_text(const kbc_diag *d);  /* all rendered messages */
const char *kbc_diag_first(const kbc_diag *d); /* first error's message line, "" if none */
const char *kbc_diag_file(const kbc_diag *d);

/* After this many errors further ones are dropped (one line says so). */
enum { KBC_DIAG_MAX_ERRORS = 20 };

#endif
