/* env.h — kbc's environment switches, read with one rule.
 *
 * Before: nothing (the helpers read the process environment).  After:
 * a switch's value, or the caller's default when the variable is unset,
 * empty, or not a valid value (the last also warned about on stderr, once
 * per variable and process).
 *
 * Booleans (kbc_env_flag, kbc_parse_flag): "1", "yes", "on", "true" are
 * on; "0", "no", "off", "false" are off (the words in any letter case);
 * unset or "" is the default; anything else ("2", "enable", " 1") is
 * invalid.  Numbers (kbc_env_int, kbc_parse_int): a decimal integer (an
 * optional sign, digits, nothing else) within [lo, hi]; anything else is
 * invalid.  Strings (kbc_env_str): unset and "" are the same (NULL).
 * Every switch is listed in docs/ARCHITECTURE.md, "Switches". */
#ifndef KBC_ENV_H
#define KBC_ENV_H

/* s as a boolean: 1 (*on set) when s is one of the spellings above, 0 when
 * it is not (*on untouched).  "" is not a boolean here. */
int kbc_parse_flag(const char *s, int *on);
/* s as a decimal integer within [lo, hi]: 1 (*v set) or 0 (*v untouched). */
int kbc_parse_int(const char *s, long long lo, long long hi, long long *v);

/* The boolean switch name (0 or 1); dflt when unset, empty or invalid. */
int kbc_env_flag(const char *name, int dflt);
/* The integer switch name within [lo, hi]; dflt when unset, empty or
 * invalid (out of range included). */
int kbc_env_int(const char *name, int lo, int hi, int dflt);
/* The string switch name; NULL when unset or empty. */
const char *kbc_env_str(const char *name);

#endif
