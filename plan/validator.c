/* validator.c — see validator.h. */
#include "plan/validator.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

/* Length of the number starting at s[0] (0 if none): [+-]? (D+ (. D*)? | . D+)
 * ([eE] [+-]? D+)?  — decimal only; "nan" and "inf" are text. */
static size_t number_len(const char *s, size_t n) {
  size_t i = 0, digits = 0;
  if (i < n && (s[i] == '+' || s[i] == '-'))
    i++;
  while (i < n && is_digit(s[i]))
    i++, digits++;
  if (i < n && s[i] == '.') {
    size_t k = i + 1;
    while (k < n && is_digit(s[k]))
      k++, digits++;
    if (digits)
      i = k;
  }
  if (!digits)
    return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t k = i + 1;
    if (k < n && (s[k] == '+' || s[k] == '-'))
      k++;
    if (k < n && is_digit(s[k])) {
      while (k < n && is_digit(s[k]))
        k++;
      i = k;
    }
  }
  return i;
}

/* One token: a number or a run of text up to the next number. */
typedef struct {
  const char *p;
  size_t len;
  int number;
} token;

/* The value of number token t (overflow gives ±inf). */
static double value(const token *t) {
  char buf[CAIRN_VALIDATOR_MAX_NUMBER + 1];
  memcpy(buf, t->p, t->len);
  buf[t->len] = '\0';
  return strtod(buf, NULL);
}

static int next_token(const char **s, const char *end, token *t) {
  if (*s >= end)
    return 0;
  size_t n = (size_t)(end - *s), len = number_len(*s, n);
  if (len && len <= CAIRN_VALIDATOR_MAX_NUMBER) {
    *t = (token){*s, len, 1};
    *s += len;
    return 1;
  }
  /* text: up to the start of a number (a sign counts only before a digit or
   * a '.' and digit, so "a-b" stays text) */
  size_t i = len ? len : 1;
  while (i < n && !number_len(*s + i, n - i))
    i++;
  *t = (token){*s, i, 0};
  *s += i;
  return 1;
}

static int close_enough(double a, double b, double rel, double abs_tol) {
  if (isinf(a) || isinf(b))
    return a == b;
  double d = fabs(a - b), m = fmax(fabs(a), fabs(b));
  return d <= abs_tol + rel * m;
}

int cairn__numeric_agree(const char *a, size_t alen, const char *b, size_t blen, double rel,
                        double abs_tol) {
  const char *pa = a, *ea = a + alen, *pb = b, *eb = b + blen;
  token ta, tb;
  for (;;) {
    int ha = next_token(&pa, ea, &ta), hb = next_token(&pb, eb, &tb);
    if (!ha || !hb)
      return ha == hb; /* different token counts disagree */
    if (ta.number != tb.number)
      return 0;
    int same = ta.len == tb.len && memcmp(ta.p, tb.p, ta.len) == 0;
    if (!same && (!ta.number || !close_enough(value(&ta), value(&tb), rel, abs_tol)))
      return 0; /* numbers are parsed only when their bytes differ */
  }
}

static cairn_status get_tol(const json_t *o, const char *key, const char *what, double *out,
                            cairn_error *err) {
  const json_t *v = json_object_get(o, key);
  *out = 0;
  if (!v)
    return CAIRN_OK;
  if (!json_is_number(v))
    return cairn__error_set(err, CAIRN_EINVAL, "%s: numeric \"%s\" must be a number", what, key);
  double x = json_number_value(v);
  if (!isfinite(x) || x < 0 || x > CAIRN_VALIDATOR_MAX_TOL)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: numeric \"%s\" must be between 0 and %g",
                           what, key, CAIRN_VALIDATOR_MAX_TOL);
  *out = x;
  return CAIRN_OK;
}

static cairn_status parse_command(const json_t *a, const char *what, cairn__validator *out,
                                  cairn_error *err) {
  size_t n = json_is_array(a) ? json_array_size(a) : 0;
  if (n < 1 || n > CAIRN_VALIDATOR_MAX_ARGS)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: \"command\" must be an array of 1 to %d "
                           "strings, the program's absolute path first", what,
                           CAIRN_VALIDATOR_MAX_ARGS);
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(a, i);
    if (!json_is_string(s) || json_string_length(s) > CAIRN_VALIDATOR_MAX_ARG ||
        strlen(json_string_value(s)) != json_string_length(s))
      return cairn__error_set(err, CAIRN_EINVAL, "%s: command[%zu] must be a string of at most "
                             "%d bytes without NUL", what, i, CAIRN_VALIDATOR_MAX_ARG);
  }
  if (json_string_value(json_array_get(a, 0))[0] != '/')
    return cairn__error_set(err, CAIRN_EINVAL, "%s: command[0] must be an absolute path", what);
  out->argv = calloc(n + 1, sizeof *out->argv);
  if (!out->argv)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  out->kind = CAIRN_VALIDATOR_COMMAND;
  out->argc = (int)n;
  for (size_t i = 0; i < n; i++)
    if (!(out->argv[i] = strdup(json_string_value(json_array_get(a, i))))) {
      cairn__validator_free(out);
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  return CAIRN_OK;
}

void cairn__validator_free(cairn__validator *v) {
  for (int i = 0; v->argv && i < v->argc; i++)
    free(v->argv[i]);
  free(v->argv);
  *v = (cairn__validator){CAIRN_VALIDATOR_EXACT, 0, 0, NULL, 0};
}

cairn_status cairn__validator_parse(const json_t *v, const char *what, cairn__validator *out,
                                   cairn_error *err) {
  *out = (cairn__validator){CAIRN_VALIDATOR_EXACT, 0, 0, NULL, 0};
  if (!v || (json_is_string(v) && strcmp(json_string_value(v), "exact") == 0))
    return CAIRN_OK;
  const char *kind = json_is_object(v) && json_object_size(v) == 1 ? json_object_iter_key(
                         json_object_iter((json_t *)v)) : NULL;
  if (kind && strcmp(kind, "numeric") == 0) {
    const json_t *o = json_object_get(v, "numeric");
    if (!json_is_object(o))
      return cairn__error_set(err, CAIRN_EINVAL, "%s: \"numeric\" must be an object with \"rel\" "
                             "and/or \"abs\"", what);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)o, key, val)
      if (strcmp(key, "rel") != 0 && strcmp(key, "abs") != 0)
        return cairn__error_set(err, CAIRN_EINVAL, "%s: numeric: unknown key \"%.64s\"", what,
                               key);
    out->kind = CAIRN_VALIDATOR_NUMERIC;
    cairn_status st = get_tol(o, "rel", what, &out->rel, err);
    return st != CAIRN_OK ? st : get_tol(o, "abs", what, &out->abs, err);
  }
  if (kind && strcmp(kind, "command") == 0)
    return parse_command(json_object_get(v, "command"), what, out, err);
  return cairn__error_set(err, CAIRN_EINVAL, "%s: must be \"exact\", {\"numeric\": {\"rel\": R, "
                         "\"abs\": A}} or {\"command\": [\"/path/prog\", ...]}", what);
}

json_t *cairn__validator_json(const cairn__validator *v) {
  if (v->kind == CAIRN_VALIDATOR_EXACT)
    return json_string("exact");
  if (v->kind == CAIRN_VALIDATOR_COMMAND) {
    json_t *a = json_array();
    for (int i = 0; a && i < v->argc; i++)
      if (json_array_append_new(a, json_string(v->argv[i]))) {
        json_decref(a);
        return NULL;
      }
    return a ? json_pack("{s:o}", "command", a) : NULL;
  }
  return json_pack("{s:{s:f,s:f}}", "numeric", "rel", v->rel, "abs", v->abs);
}
