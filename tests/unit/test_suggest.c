/* test_suggest.c — support/suggest.c: the edit distance (insertions,
 * deletions, substitutions, neighbour transpositions) with its early
 * exit past a limit, and the "did you mean" choice: close enough for the
 * word's length, closer than the word is long, never among ties. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "support/suggest.h"

static void test_distance(void **state) {
  (void)state;
  assert_int_equal(kbc_edit_distance("bias", "bias", 3), 0);
  assert_int_equal(kbc_edit_distance("bais", "bias", 3), 1);  /* transposition */
  assert_int_equal(kbc_edit_distance("reul", "relu", 3), 1);
  assert_int_equal(kbc_edit_distance("ouptut", "output", 3), 1);
  assert_int_equal(kbc_edit_distance("sigmod", "sigmoid", 3), 1);  /* an insertion */
  assert_int_equal(kbc_edit_distance("abc", "cba", 3), 2);        /* not one transposition */
  assert_int_equal(kbc_edit_distance("", "abc", 5), 3);
  assert_int_equal(kbc_edit_distance("abc", "", 5), 3);
  assert_int_equal(kbc_edit_distance("kitten", "sitting", 5), 3);
  assert_int_equal(kbc_edit_distance("kitten", "sitting", 2), 3); /* limit + 1 */
  assert_int_equal(kbc_edit_distance("a", "abcdefgh", 2), 3);     /* lengths alone exceed it */
  char long_word[100];
  memset(long_word, 'x', 99);
  long_word[99] = 0;
  assert_int_equal(kbc_edit_distance(long_word, long_word, 3), 4); /* too long to consider */
}

static const char *suggest(const char *word, const char *const *cands) {
  kbc_suggest s;
  kbc_suggest_init(&s, word);
  for (; *cands; cands++) kbc_suggest_add(&s, *cands);
  return kbc_suggest_best(&s);
}

static void test_choice(void **state) {
  (void)state;
  const char *names[] = {"x", "bias", "weight", "height", NULL};
  assert_string_equal(suggest("bais", names), "bias");
  assert_string_equal(suggest("wieght", names), "weight");
  assert_null(suggest("y", names));      /* one letter off a one-letter name: not a misspelling */
  assert_null(suggest("zzzz", names));
  assert_null(suggest("bias", names));   /* the word itself is no suggestion */
  const char *fns[] = {"relu", "gelu", "exp", "sum", NULL};
  assert_string_equal(suggest("reul", fns), "relu");
  assert_string_equal(suggest("summ", fns), "sum");
  assert_null(suggest("xelu", fns));     /* relu and gelu are both one edit away */
  const char *kws[] = {"input", "output", "tensor", NULL};
  assert_string_equal(suggest("ouptut", kws), "output");
  assert_string_equal(suggest("inptu", kws), "input");
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_distance), cmocka_unit_test(test_choice)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
