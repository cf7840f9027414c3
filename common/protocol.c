/* protocol.c — features, and the report's parser and serializer. */
#include "common/protocol.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"

static const char *const feature_names[CAIRN_FEATURE_COUNT] = CAIRN_FEATURE_NAMES;
static const char *const reason_names[CAIRN_FAIL_REASONS] = CAIRN_FAIL_REASON_NAMES;

/* The bit of feature name, or 0 when it is none. */
static unsigned feature_bit(const char *name) {
  for (int i = 0; i < CAIRN_FEATURE_COUNT; i++)
    if (strcmp(name, feature_names[i]) == 0)
      return 1u << i;
  return 0;
}

unsigned cairn__features_parse(const json_t *list) {
  unsigned set = CAIRN_FEATURES_BASELINE;
  for (size_t i = 0; json_is_array(list) && i < json_array_size(list); i++) {
    const char *name = json_string_value(json_array_get(list, i));
    if (name)
      set |= feature_bit(name);
  }
  return set & CAIRN_FEATURES_ALL;
}

cairn_status cairn__result_cpu_parse(const json_t *body, double *cpu, int *has,
                                    cairn_error *err) {
  const json_t *v = json_object_get(body, CAIRN_CPU_KEY);
  *has = 0;
  *cpu = 0;
  if (!v)
    return CAIRN_OK;
  double x = json_number_value(v);
  if (!json_is_number(v) || !isfinite(x) || x < 0 || x > CAIRN_MAX_CPU_SECONDS)
    return cairn__error_set(err, CAIRN_EINVAL, "\"%s\" must be a number of seconds from 0 to "
                           "%.0f", CAIRN_CPU_KEY, CAIRN_MAX_CPU_SECONDS);
  *cpu = x;
  *has = 1;
  return CAIRN_OK;
}

int cairn__team_valid(const char *team) {
  size_t n = team ? strlen(team) : 0;
  if (n == 0 || n > CAIRN_MAX_TEAM)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (team[i] < 0x20 || team[i] > 0x7e || team[i] == '"' || team[i] == '\\')
      return 0;
  return 1;
}

json_t *cairn__features_json(unsigned set) {
  json_t *a = json_array();
  for (int i = 0; a && i < CAIRN_FEATURE_COUNT; i++)
    if ((set & (1u << i)) && json_array_append_new(a, json_string(feature_names[i])) != 0) {
      json_decref(a);
      return NULL;
    }
  return a;
}

/* ---- parser ---- */

static int listed(const char *key, const char *const *list) {
  for (; list && *list; list++)
    if (strcmp(key, *list) == 0)
      return 1;
  return 0;
}

/* 1 when v is a string of exactly 64 lowercase hex digits. */
static int is_sha256(const json_t *v) {
  return json_is_string(v) && json_string_length(v) == 64 &&
         cairn__sha256_valid_hex(json_string_value(v));
}

static cairn_status check_keys(json_t *body, unsigned takes, const char *const *also,
                               cairn_error *err) {
  const char *k;
  json_t *v;
  json_object_foreach(body, k, v) {
    if (!(feature_bit(k) & takes) && !listed(k, also))
      return cairn__error_set(err, CAIRN_EINVAL, "unknown field \"%s\"", k);
  }
  return CAIRN_OK;
}

static int has_control(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return 1;
  return 0;
}

cairn_status cairn__report_peer_url(const json_t *v, const char **url, cairn_error *err) {
  if (!json_is_string(v) || json_string_length(v) > CAIRN_MAX_PEER_URL)
    return cairn__error_set(err, CAIRN_EINVAL, "\"peer_url\" must be a string of at most %u bytes",
                           CAIRN_MAX_PEER_URL);
  const char *u = json_string_value(v);
  size_t n = strlen(u);
  const char *host = strncmp(u, "http://", 7) == 0    ? u + 7
                     : strncmp(u, "https://", 8) == 0 ? u + 8
                                                      : NULL;
  /* HOST:PORT only: no path, query, fragment, credentials or blanks */
  if (n && (!host || !*host || strpbrk(host, "/?#@\\\" \t") || has_control(u)))
    return cairn__error_set(err, CAIRN_EINVAL,
                           "\"peer_url\" must be http://HOST:PORT (no path, no trailing slash)");
  *url = u;
  return CAIRN_OK;
}

static cairn_status parse_have(json_t *a, cairn__report *r, cairn_error *err) {
  if (!json_is_array(a) || json_array_size(a) > CAIRN_MAX_HAVE)
    return cairn__error_set(err, CAIRN_EINVAL, "\"have\" must be an array of at most %u sha256 "
                           "digests", CAIRN_MAX_HAVE);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *h = json_array_get(a, i);
    if (!is_sha256(h))
      return cairn__error_set(err, CAIRN_EINVAL, "have[%zu] is not a sha256 digest", i);
    r->have[r->nhave++] = json_string_value(h);
  }
  return CAIRN_OK;
}

/* Entry i of list `name`: an object with only keys[] and a valid "sha256";
 * its sha256, or NULL with err naming the entry. */
static const char *list_entry(json_t *e, const char *name, size_t i, const char *const *keys,
                              cairn_error *err) {
  const char *k;
  json_t *v;
  if (!json_is_object(e)) {
    cairn__error_set(err, CAIRN_EINVAL, "%s[%zu] must be an object", name, i);
    return NULL;
  }
  json_object_foreach(e, k, v) {
    if (!listed(k, keys)) {
      cairn__error_set(err, CAIRN_EINVAL, "%s[%zu]: unknown field \"%s\"", name, i, k);
      return NULL;
    }
  }
  if (!is_sha256(json_object_get(e, "sha256"))) {
    cairn__error_set(err, CAIRN_EINVAL, "%s[%zu].sha256 must be a sha256 digest (64 lowercase "
                    "hex)", name, i);
    return NULL;
  }
  return json_string_value(json_object_get(e, "sha256"));
}

static int is_count(const json_t *v) { return json_is_integer(v) && json_integer_value(v) >= 0; }

/* Checks number `what` (e.g. "fetched[2].ms") of a report: a non-negative
 * integer from lo to hi; 400 naming it and the range otherwise. */
static cairn_status check_range(const json_t *v, json_int_t lo, json_int_t hi, const char *what,
                                cairn_error *err) {
  if (!is_count(v))
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be a non-negative integer", what);
  if (json_integer_value(v) < lo)
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be at least %lld", what, (long long)lo);
  if (json_integer_value(v) > hi)
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be at most %lld", what, (long long)hi);
  return CAIRN_OK;
}

static cairn_status parse_fetched(json_t *a, cairn__report *r, cairn_error *err) {
  static const char *const keys[] = {"sha256", "source", "bytes", "ms", NULL};
  if (!json_is_array(a) || json_array_size(a) > CAIRN_MAX_FETCHED)
    return cairn__error_set(err, CAIRN_EINVAL, "\"fetched\" must be an array of at most %u "
                           "downloads", CAIRN_MAX_FETCHED);
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *e = json_array_get(a, i);
    const char *sha = list_entry(e, "fetched", i, keys, err);
    if (!sha)
      return CAIRN_EINVAL;
    json_t *src = json_object_get(e, "source"), *bytes = json_object_get(e, "bytes");
    json_t *ms = json_object_get(e, "ms");
    if (!json_is_string(src) || json_string_length(src) > CAIRN_MAX_SOURCE_LEN)
      return cairn__error_set(err, CAIRN_EINVAL, "fetched[%zu].source must be a string of at "
                             "most %u bytes", i, CAIRN_MAX_SOURCE_LEN);
    char what[48];
    snprintf(what, sizeof what, "fetched[%zu].bytes", i);
    if (check_range(bytes, 0, CAIRN_MAX_REPORT_BYTES, what, err) != CAIRN_OK)
      return CAIRN_EINVAL;
    snprintf(what, sizeof what, "fetched[%zu].ms", i);
    if (check_range(ms, 1, CAIRN_MAX_REPORT_MS, what, err) != CAIRN_OK)
      return CAIRN_EINVAL;
    r->fetched[r->nfetched++] = (cairn__report_fetched){sha, json_string_value(src),
                                                       json_integer_value(bytes),
                                                       json_integer_value(ms)};
  }
  return CAIRN_OK;
}

/* The CAIRN_FAIL_* reason v names, or -1. */
static int reason_of(const json_t *v) {
  for (int k = 0; json_is_string(v) && k < CAIRN_FAIL_REASONS; k++)
    if (strcmp(json_string_value(v), reason_names[k]) == 0 &&
        json_string_length(v) == strlen(reason_names[k]))
      return k;
  return -1;
}

static cairn_status parse_failed(json_t *a, cairn__report *r, cairn_error *err) {
  static const char *const keys[] = {"sha256", "source", "reason", NULL};
  if (!json_is_array(a) || json_array_size(a) > CAIRN_MAX_FAILED)
    return cairn__error_set(err, CAIRN_EINVAL, "\"failed\" must be an array of at most %u "
                           "failed sources", CAIRN_MAX_FAILED);
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *e = json_array_get(a, i);
    const char *sha = list_entry(e, "failed", i, keys, err);
    if (!sha)
      return CAIRN_EINVAL;
    /* only peers are reported: a full URL, never the master's relative one */
    json_t *src = json_object_get(e, "source");
    const char *s = json_string_value(src);
    if (!s || json_string_length(src) > CAIRN_MAX_SOURCE_LEN ||
        (strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0))
      return cairn__error_set(err, CAIRN_EINVAL, "failed[%zu].source must be a peer's http:// "
                             "or https:// URL of at most %u bytes", i, CAIRN_MAX_SOURCE_LEN);
    int reason = reason_of(json_object_get(e, "reason"));
    if (reason < 0)
      return cairn__error_set(err, CAIRN_EINVAL, "failed[%zu].reason must be one of "
                             "unreachable, stalled, status, size, digest", i);
    r->failed[r->nfailed++] = (cairn__report_failed){sha, s, reason};
  }
  return CAIRN_OK;
}

static cairn_status parse_served(json_t *o, cairn__report *r, cairn_error *err) {
  const char *k;
  json_t *v;
  if (!json_is_object(o) || json_object_size(o) > CAIRN_MAX_SERVED)
    return cairn__error_set(err, CAIRN_EINVAL, "\"served\" must map at most %u sha256 digests "
                           "to bytes", CAIRN_MAX_SERVED);
  json_object_foreach(o, k, v) {
    if (!cairn__sha256_valid_hex(k) || !is_count(v))
      return cairn__error_set(err, CAIRN_EINVAL, "\"served\" must map sha256 digests to byte "
                             "counts");
    if (json_integer_value(v) > CAIRN_MAX_REPORT_BYTES)
      return cairn__error_set(err, CAIRN_EINVAL, "served[\"%.64s\"] must be at most %lld bytes",
                             k, (long long)CAIRN_MAX_REPORT_BYTES);
    r->served[r->nserved++] = (cairn__report_served){k, (uint64_t)json_integer_value(v)};
  }
  return CAIRN_OK;
}

/* Reads a list of allocation indices named name into out (*n of them). */
static cairn_status parse_indices(json_t *a, const char *name, int64_t *out, size_t *n,
                                  cairn_error *err) {
  if (!json_is_array(a) || json_array_size(a) > CAIRN_MAX_RUNNING)
    return cairn__error_set(err, CAIRN_EINVAL, "\"%s\" must be an array of at most %u "
                           "indices", name, CAIRN_MAX_RUNNING);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *x = json_array_get(a, i);
    if (!json_is_integer(x) || json_integer_value(x) <= 0)
      return cairn__error_set(err, CAIRN_EINVAL, "%s[%zu] is not an allocation index", name, i);
    out[(*n)++] = json_integer_value(x);
  }
  return CAIRN_OK;
}

static cairn_status parse_running(json_t *a, cairn__report *r, cairn_error *err) {
  return parse_indices(a, "running", r->running, &r->nrunning, err);
}

static cairn_status parse_suspended(json_t *a, cairn__report *r, cairn_error *err) {
  return parse_indices(a, "suspended", r->suspended, &r->nsuspended, err);
}

/* An allocation index written as a "progress" key: decimal digits, no sign,
 * blank or leading zero, from 1 to INT64_MAX; -1 when it is none. */
static int64_t index_key(const char *k) {
  int64_t n = 0;
  if (*k < '1' || *k > '9')
    return -1;
  for (; *k; k++) {
    if (*k < '0' || *k > '9' || n > (INT64_MAX - (*k - '0')) / 10)
      return -1;
    n = n * 10 + (*k - '0');
  }
  return n;
}

static cairn_status parse_progress(json_t *o, cairn__report *r, cairn_error *err) {
  const char *k;
  json_t *v;
  if (!json_is_object(o) || json_object_size(o) > CAIRN_MAX_PROGRESS)
    return cairn__error_set(err, CAIRN_EINVAL, "\"progress\" must map at most %u allocation "
                           "indices to fractions from 0 to 1", CAIRN_MAX_PROGRESS);
  json_object_foreach(o, k, v) {
    int64_t idx = index_key(k);
    if (idx < 0)
      return cairn__error_set(err, CAIRN_EINVAL, "progress[\"%.24s\"]: the key is not an "
                             "allocation index", k);
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < 0 || x > 1)
      return cairn__error_set(err, CAIRN_EINVAL, "progress[\"%.24s\"] must be a number from 0 "
                             "to 1", k);
    r->progress[r->nprogress++] = (cairn__report_progress){idx, x};
  }
  return CAIRN_OK;
}

static cairn_status parse_peer_url(json_t *v, cairn__report *r, cairn_error *err) {
  return cairn__report_peer_url(v, &r->peer_url, err);
}

static cairn_status parse_chunks(json_t *v, cairn__report *r, cairn_error *err) {
  if (!json_is_true(v))
    return cairn__error_set(err, CAIRN_EINVAL, "\"chunks\" must be true when present");
  r->chunks = 1;
  return CAIRN_OK;
}

static cairn_status parse_peer_max(json_t *v, cairn__report *r, cairn_error *err) {
  if (!json_is_integer(v) || json_integer_value(v) < 1 ||
      json_integer_value(v) > (json_int_t)CAIRN_MAX_PEER_MAX)
    return cairn__error_set(err, CAIRN_EINVAL, "\"peer_max\" must be an integer from 1 to %u",
                           CAIRN_MAX_PEER_MAX);
  r->peer_max = (unsigned)json_integer_value(v);
  return CAIRN_OK;
}

static cairn_status parse_resources(json_t *v, cairn__report *r, cairn_error *err) {
  return cairn__resources_parse(v, &CAIRN_RESOURCES_DEFAULT, &r->resources, "report", err);
}

/* "cpid": {} or {"id": 32 lowercase hex digits, "time": 0 to
 * CAIRN_MAX_CPID_TIME}, nothing else. */
static cairn_status parse_cpid(json_t *o, cairn__report *r, cairn_error *err) {
  json_t *id = json_object_get(o, "id"), *t = json_object_get(o, "time");
  size_t n = json_object_size(o);
  if (!json_is_object(o) || (n != 0 && (n != 2 || !id || !t)))
    return cairn__error_set(err, CAIRN_EINVAL, "\"cpid\" must be {} or {\"id\", \"time\"}");
  if (n == 0)
    return CAIRN_OK;
  const char *s = json_string_value(id);
  int ok = s && strlen(s) == 32;
  for (size_t i = 0; ok && i < 32; i++)
    ok = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
  if (!ok)
    return cairn__error_set(err, CAIRN_EINVAL, "cpid.id must be 32 lowercase hex digits");
  if (!json_is_integer(t) || json_integer_value(t) < 0 ||
      json_integer_value(t) > CAIRN_MAX_CPID_TIME)
    return cairn__error_set(err, CAIRN_EINVAL, "cpid.time must be Unix seconds (an integer "
                           "from 0 to %lld)", CAIRN_MAX_CPID_TIME);
  memcpy(r->cpid, s, 33);
  r->cpid_time = (int64_t)json_integer_value(t);
  return CAIRN_OK;
}

/* The fields in the order they are checked (the first error is reported). */
static const struct {
  unsigned bit;
  cairn_status (*parse)(json_t *v, cairn__report *r, cairn_error *err);
} field_order[CAIRN_REPORT_FIELD_COUNT] = {
  {CAIRN_FEAT_PEER_URL, parse_peer_url}, {CAIRN_FEAT_HAVE, parse_have},
  {CAIRN_FEAT_FETCHED, parse_fetched},   {CAIRN_FEAT_FAILED, parse_failed},
  {CAIRN_FEAT_SERVED, parse_served},     {CAIRN_FEAT_RUNNING, parse_running},
  {CAIRN_FEAT_RESOURCES, parse_resources}, {CAIRN_FEAT_SUSPENDED, parse_suspended},
  {CAIRN_FEAT_CHUNKS, parse_chunks},     {CAIRN_FEAT_PEER_MAX, parse_peer_max},
  {CAIRN_FEAT_PROGRESS, parse_progress}, {CAIRN_FEAT_CPID, parse_cpid},
};

/* The wire name of feature bit. */
static const char *feature_name(unsigned bit) {
  int i = 0;
  while (i < CAIRN_FEATURE_COUNT - 1 && bit != 1u << i)
    i++;
  return feature_names[i];
}

cairn_status cairn__report_parse(json_t *body, unsigned takes, const char *const *also,
                                cairn__report *r, cairn_error *err) {
  memset(r, 0, sizeof *r);
  if (!json_is_object(body))
    return cairn__error_set(err, CAIRN_EINVAL, "the body must be a JSON object");
  cairn_status st = check_keys(body, takes, also, err);
  for (int i = 0; st == CAIRN_OK && i < CAIRN_REPORT_FIELD_COUNT; i++) {
    json_t *v = json_object_get(body, feature_name(field_order[i].bit));
    if (!v || !(takes & field_order[i].bit))
      continue;
    r->fields |= field_order[i].bit;
    st = field_order[i].parse(v, r, err);
  }
  return st;
}

/* ---- serializer ---- */

/* Appends v (taken) to array a; a is released and NULL returned on failure. */
static json_t *append(json_t *a, json_t *v) {
  if (a && json_array_append_new(a, v) == 0)
    return a;
  json_decref(a);
  return NULL;
}

static json_t *have_json(const cairn__report *r) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < r->nhave; i++)
    a = append(a, json_string(r->have[i]));
  return a;
}

static json_t *served_json(const cairn__report *r) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < r->nserved; i++)
    if (!r->served[i].sha256 ||
        json_object_set_new(o, r->served[i].sha256,
                            json_integer((json_int_t)r->served[i].bytes)) != 0) {
      json_decref(o);
      o = NULL;
    }
  return o;
}

static json_t *fetched_json(const cairn__report *r) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < r->nfetched; i++) {
    const cairn__report_fetched *e = &r->fetched[i];
    a = append(a, json_pack("{s:s, s:s, s:I, s:I}", "sha256", e->sha256, "source", e->source,
                            "bytes", (json_int_t)e->bytes, "ms", (json_int_t)e->ms));
  }
  return a;
}

static json_t *failed_json(const cairn__report *r) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < r->nfailed; i++) {
    const cairn__report_failed *e = &r->failed[i];
    int ok = e->reason >= 0 && e->reason < CAIRN_FAIL_REASONS;
    a = append(a, ok ? json_pack("{s:s, s:s, s:s}", "sha256", e->sha256, "source", e->source,
                                 "reason", reason_names[e->reason])
                     : NULL);
  }
  return a;
}

static json_t *progress_json(const cairn__report *r) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < r->nprogress; i++) {
    char key[24];
    double x = r->progress[i].fraction;
    snprintf(key, sizeof key, "%lld", (long long)r->progress[i].index);
    if (r->progress[i].index <= 0 || !isfinite(x) || x < 0 || x > 1 ||
        json_object_set_new(o, key, json_real(x)) != 0) {
      json_decref(o);
      o = NULL;
    }
  }
  return o;
}

static json_t *indices_json(const int64_t *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    a = append(a, json_integer((json_int_t)v[i]));
  return a;
}

/* The value of field bit of r; NULL when it cannot be written. */
static json_t *field_json(const cairn__report *r, unsigned bit) {
  switch (bit) {
  case CAIRN_FEAT_HAVE: return have_json(r);
  case CAIRN_FEAT_SERVED: return served_json(r);
  case CAIRN_FEAT_PEER_URL: return r->peer_url ? json_string(r->peer_url) : NULL;
  case CAIRN_FEAT_RUNNING: return indices_json(r->running, r->nrunning);
  case CAIRN_FEAT_SUSPENDED: return indices_json(r->suspended, r->nsuspended);
  case CAIRN_FEAT_FETCHED: return fetched_json(r);
  case CAIRN_FEAT_RESOURCES: return cairn__resources_json(&r->resources);
  case CAIRN_FEAT_CHUNKS: return json_true();
  case CAIRN_FEAT_PEER_MAX: return json_integer((json_int_t)r->peer_max);
  case CAIRN_FEAT_PROGRESS: return progress_json(r);
  case CAIRN_FEAT_CPID:
    return r->cpid[0] ? json_pack("{s:s, s:I}", "id", r->cpid, "time", (json_int_t)r->cpid_time)
                      : json_object();
  default: return failed_json(r);
  }
}

json_t *cairn__report_json(const cairn__report *r) {
  if (r->nhave > CAIRN_MAX_HAVE || r->nserved > CAIRN_MAX_SERVED ||
      r->nfetched > CAIRN_MAX_FETCHED || r->nfailed > CAIRN_MAX_FAILED ||
      r->nrunning > CAIRN_MAX_RUNNING || r->nsuspended > CAIRN_MAX_RUNNING ||
      r->nprogress > CAIRN_MAX_PROGRESS)
    return NULL;
  json_t *o = json_object();
  for (int i = 0; o && i < CAIRN_FEATURE_COUNT; i++) {
    unsigned bit = 1u << i;
    if ((r->fields & bit & CAIRN_REPORT_FIELDS) && json_object_set_new(o, feature_names[i], field_json(r, bit)) != 0) {
      json_decref(o);
      o = NULL;
    }
  }
  return o;
}

long long cairn__range_start(const char *header, unsigned long long size) {
  if (!header || strncmp(header, "bytes=", 6) != 0)
    return -1;
  const char *p = header + 6;
  unsigned long long n = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9' && digits < 19; p++, digits++)
    n = n * 10 + (unsigned long long)(*p - '0');
  if (!digits || p[0] != '-' || p[1] != '\0' || n >= size)
    return -1;
  return (long long)n;
}

/* ---- kept outputs' chunk digests (feature "kept_chunks") ---- */

static int hexval(char ch) { return ch <= '9' ? ch - '0' : ch - 'a' + 10; }

cairn_status cairn__chunks_parse(const json_t *arr, long long size, const char *where,
                                unsigned char **out, size_t *n, cairn_error *err) {
  unsigned long long want =
    size <= 0 ? 0 : ((unsigned long long)size + CAIRN_CHUNK_SIZE - 1) / CAIRN_CHUNK_SIZE;
  *out = NULL;
  *n = 0;
  if (!json_is_array(arr))
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be an array of chunk digests", where);
  if (json_array_size(arr) > CAIRN_MAX_CHUNKS || want > CAIRN_MAX_CHUNKS)
    return cairn__error_set(err, CAIRN_ETOOBIG, "%s has more than %u chunks", where,
                           CAIRN_MAX_CHUNKS);
  if (json_array_size(arr) != want)
    return cairn__error_set(err, CAIRN_EINVAL, "%s has %zu digests, a file of %lld bytes has %llu "
                           "chunks of %u bytes", where, json_array_size(arr), size, want,
                           CAIRN_CHUNK_SIZE);
  unsigned char *d = want ? malloc(want * 32) : NULL;
  if (want && !d)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < want; i++) {
    const char *h = json_string_value(json_array_get(arr, i));
    if (!h || !cairn__sha256_valid_hex(h)) {
      free(d);
      return cairn__error_set(err, CAIRN_EINVAL, "%s[%zu] is not 64 lowercase hex digits", where,
                             i);
    }
    for (size_t b = 0; b < 32; b++)
      d[32 * i + b] = (unsigned char)(hexval(h[2 * b]) << 4 | hexval(h[2 * b + 1]));
  }
  *out = d;
  *n = want;
  return CAIRN_OK;
}

json_t *cairn__chunks_of_file(const char *path, long long size) {
  if (size < 0 || (unsigned long long)size > (unsigned long long)CAIRN_MAX_CHUNKS * CAIRN_CHUNK_SIZE)
    return NULL;
  FILE *f = fopen(path, "rb");
  unsigned char *buf = malloc(CAIRN_CHUNK_SIZE);
  json_t *arr = json_array();
  long long seen = 0;
  while (f && buf && arr) {
    size_t k = fread(buf, 1, CAIRN_CHUNK_SIZE, f);
    if (k == 0)
      break;
    char hex[65];
    cairn__sha256_hex(buf, k, hex);
    seen += (long long)k;
    if (json_array_append_new(arr, json_string(hex)) != 0 || k < CAIRN_CHUNK_SIZE)
      break;
  }
  int ok = f && buf && arr && !ferror(f) && seen == size && fgetc(f) == EOF;
  if (f)
    fclose(f);
  free(buf);
  if (!ok) {
    json_decref(arr);
    return NULL;
  }
  return arr;
}
