/* tune.h — `kbc tune`'s records: the code generation switches measured
 * fastest for one program at one binding, kept in the kernel cache's
 * directory and applied whenever that program is generated again there.
 *
 * Key: SHA-256 (first 128 bits, 32 hex digits) over, each length-prefixed,
 * a format tag, the kbc version, the arch, the precision and the checked
 * program as `--emit ir` prints it.  A program specialized for a binding
 * (runtime/special.c) has its var axes as constants in that text, so the
 * binding is the key's "bucket": every binding the runtime specializes
 * has records of its own; the generic code (var axes left variable, past
 * KBC_SPECIALIZE's count) has one of its own.  Comments and spacing in
 * the spec do not change the key; any change to what it computes does.
 *
 * Record <dir>/tune-<key>.txt, written atomically: '#' comment lines (the
 * program, the binding, the times measured) and one line
 * "settings: KBC_X=V ..." (empty: the defaults were fastest).  A record
 * that does not parse is ignored (said at KBC_DEBUG >= 1).
 *
 * Precedence, lowest first: the defaults, the record (or, instead of it,
 * kbc_options.config where the caller gives one), the environment's
 * KBC_* switches.  KBC_TUNE=0 ignores the records. */
#ifndef KBC_RUNTIME_TUNE_H
#define KBC_RUNTIME_TUNE_H

#include "cache.h"
#include "codegen/cg.h"
#include "ir/ir.h"

/* The key of program p (checked) generated for arch at precision. */
void rt_tune_key(const ir_program *p, const char *arch, cg_precision precision, char key[RT_KEY_HEX + 1]);
/* "<dir>/tune-<key>.txt" */
void rt_tune_path(const char *dir, const char *key, kbc_buf *path);
/* The settings of key's record into *settings: 1, or 0 where there is none
 * (or KBC_TUNE=0, or it does not parse). */
int rt_tune_load(const char *key, kbc_buf *settings);
/* Writes key's record: its comment (lines without '#'; may be NULL) and
 * settings.  0, or -1 with *err. */
int rt_tune_store(const char *key, const char *comment, const char *settings, rt_err *err);
/* Removes key's record: 1 removed, 0 none, -1 with *err. */
int rt_tune_remove(const char *key, rt_err *err);

/* The switches p is generated with for arch at precision: the defaults,
 * then config (when not NULL) or else p's record, then the environment.
 * *tuned (may be NULL) says whether a record was applied.  A config that
 * does not parse is the caller's to reject first (cg_options_apply). */
cg_options rt_tune_options(const ir_program *p, const char *arch, cg_precision precision, const char *config,
                           int *tuned);

#endif
