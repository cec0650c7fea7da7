/* suggest.h — "did you mean" suggestions by edit distance.
 *
 * A kbc_suggest collects candidate spellings for a misspelt word and keeps
 * the closest (optimal string alignment distance: insertions, deletions,
 * substitutions and transpositions of neighbours each count one).  It is
 * offered only when close for the word's length (1 edit up to 4
 * characters, 2 up to 8, 3 beyond), closer than the word is long, and
 * not tied with a different candidate: `bais` gives `bias`, `reul` gives
 * `relu`, `ouptut` gives `output`, `x` gives nothing. */
#ifndef KBC_SUGGEST_H
#define KBC_SUGGEST_H

typedef struct {
  const char *word;
  const char *best; /* the closest candidate so far */
  int dist;         /* its distance */
  int tied;         /* another candidate at the same distance */
} kbc_suggest;

void kbc_suggest_init(kbc_suggest *s, const char *word);
void kbc_suggest_add(kbc_suggest *s, const char *candidate);
/* The suggestion, or NULL when none is close enough or it is ambiguous. */
const char *kbc_suggest_best(const kbc_suggest *s);

/* The distance between a and b, or limit + 1 when it exceeds limit. */
int kbc_edit_distance(const char *a, const char *b, int limit);

#endif
