/* name.h — turning names into C identifiers and file names: the one
 * sanitiser.
 *
 * Before: any NUL-terminated text (a spec's file name, a kernel name).
 * After: the same length, every byte that is not an ASCII letter or digit
 * or one of the kept characters replaced by '_'.  No locale is consulted
 * (isalnum would keep a locale's letters).  The one sanitiser: codegen's
 * C names (codegen/emit.c) are these plus its prefix for a leading '_' or
 * digit and for C/CUDA keywords. */
#ifndef KBC_NAME_H
#define KBC_NAME_H

#include "arena.h"

/* What each kind of name keeps besides letters and digits. */
#define KBC_NAME_IDENT "_"    /* a C identifier's characters (no leading-digit fix) */
#define KBC_NAME_FILE "_.-"   /* a file name's safe characters */

/* Replaces, in place, every byte of s that is not [A-Za-z0-9] or in keep
 * with '_'; returns s. */
char *kbc_name_sanitize(char *s, const char *keep);

/* A spec's default kernel name: the base name of path without its last
 * extension (a leading dot is not an extension), sanitised as
 * KBC_NAME_IDENT; an arena copy. */
char *kbc_name_from_path(kbc_arena *a, const char *path);

#endif
