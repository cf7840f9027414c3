/* test_protocol.c — the worker's report to its master (common/protocol.h):
 * the parser the master uses (each cap, each malformed field and entry
 * named as the master's 400 names it, unknown fields, which body takes
 * which field), the serializer the worker uses (what it writes, a round
 * trip through the parser, what it refuses to write) and the feature
 * lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "common/protocol.h"
#include "common/sha256.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define PEER "http://10.0.0.7:4242"

static cairn__report report; /* large: kept off the stack */
static json_t *parsed;       /* the last body parsed: report borrows from it */

/* Parses text as a body that takes fields (and "apps", a work body's own
 * key) into report; returns the status, the message in err. */
static cairn_status parse_text(const char *text, unsigned takes, cairn_error *err) {
  static const char *const apps[] = {"apps", NULL};
  json_error_t je;
  json_decref(parsed);
  parsed = json_loads(text, 0, &je);
  if (!parsed)
    fail_msg("test body is not JSON: %s: %s", je.text, text);
  memset(err, 0, sizeof *err);
  return cairn__report_parse(parsed, takes, apps, &report, err);
}

static int teardown(void **state) {
  (void)state;
  json_decref(parsed);
  parsed = NULL;
  return 0;
}

/* text is refused (CAIRN_EINVAL) by a heartbeat with exactly message. */
static void refused(const char *text, const char *message) {
  cairn_error err;
  if (parse_text(text, CAIRN_HEARTBEAT_FIELDS, &err) != CAIRN_EINVAL ||
      strcmp(err.text, message) != 0)
    fail_msg("%.120s: got \"%s\", wanted \"%s\"", text, err.text, message);
}

static void accepted(const char *text, unsigned takes) {
  cairn_error err;
  if (parse_text(text, takes, &err) != CAIRN_OK)
    fail_msg("%.120s: refused: %s", text, err.text);
}

/* {"NAME": [n copies of entry]} (caller frees). */
static char *list_of(const char *name, const char *entry, size_t n) {
  size_t cap = strlen(name) + 16 + n * (strlen(entry) + 2);
  char *s = malloc(cap);
  assert_non_null(s);
  size_t k = (size_t)snprintf(s, cap, "{\"%s\": [", name);
  for (size_t i = 0; i < n; i++)
    k += (size_t)snprintf(s + k, cap - k, "%s%s", i ? "," : "", entry);
  snprintf(s + k, cap - k, "]}");
  return s;
}

/* {"served": {n distinct digests: 1}} (caller frees). */
static char *served_of(size_t n) {
  char *s = malloc(16 + n * 72);
  assert_non_null(s);
  size_t k = (size_t)sprintf(s, "{\"served\": {");
  for (size_t i = 0; i < n; i++)
    k += (size_t)sprintf(s + k, "%s\"%064zx\": 1", i ? "," : "", i);
  sprintf(s + k, "}}");
  return s;
}

/* A "fetched" or "failed" entry whose source is len bytes long. */
static char *entry_with_source(const char *kind, size_t len) {
  char *src = malloc(len + 1), *e = NULL;
  assert_non_null(src);
  memset(src, 'x', len);
  memcpy(src, "http://", 7);
  src[len] = '\0';
  if (strcmp(kind, "fetched") == 0)
    assert_true(asprintf(&e, "{\"sha256\": \"" SHA_A "\", \"source\": \"%s\", \"bytes\": 1, "
                             "\"ms\": 1}", src) > 0);
  else
    assert_true(asprintf(&e, "{\"sha256\": \"" SHA_A "\", \"source\": \"%s\", "
                             "\"reason\": \"size\"}", src) > 0);
  free(src);
  return e;
}

/* The body with n entries is taken at the cap and refused past it. */
static void cap_of(char *(*body)(size_t), size_t cap, const char *message) {
  char *at = body(cap), *over = body(cap + 1);
  accepted(at, CAIRN_HEARTBEAT_FIELDS);
  refused(over, message);
  free(at);
  free(over);
}

static char *have_n(size_t n) { return list_of("have", "\"" SHA_A "\"", n); }
static char *running_n(size_t n) { return list_of("running", "7", n); }
static char *fetched_n(size_t n) {
  return list_of("fetched", "{\"sha256\": \"" SHA_A "\", \"source\": \"/v1/files/x\", "
                            "\"bytes\": 1, \"ms\": 1}", n);
}
static char *failed_n(size_t n) {
  return list_of("failed", "{\"sha256\": \"" SHA_A "\", \"source\": \"" PEER "/v1/files/x\", "
                           "\"reason\": \"stalled\"}", n);
}

/* {"progress": {n distinct indices: 0.5}} (caller frees). */
static char *progress_of(size_t n) {
  char *s = malloc(24 + n * 16);
  assert_non_null(s);
  size_t k = (size_t)sprintf(s, "{\"progress\": {");
  for (size_t i = 0; i < n; i++)
    k += (size_t)sprintf(s + k, "%s\"%zu\": 0.5", i ? "," : "", i + 1);
  sprintf(s + k, "}}");
  return s;
}

static void test_caps(void **state) {
  (void)state;
  cap_of(progress_of, CAIRN_MAX_PROGRESS,
         "\"progress\" must map at most 1024 allocation indices to fractions from 0 to 1");
  /* a work body takes no "progress" */
  char *one = progress_of(1);
  assert_int_equal(parse_text(one, CAIRN_WORK_FIELDS, &(cairn_error){0}), CAIRN_EINVAL);
  free(one);
  cap_of(have_n, CAIRN_MAX_HAVE, "\"have\" must be an array of at most 256 sha256 digests");
  cap_of(served_of, CAIRN_MAX_SERVED, "\"served\" must map at most 256 sha256 digests to bytes");
  cap_of(running_n, CAIRN_MAX_RUNNING, "\"running\" must be an array of at most 1024 indices");
  cap_of(fetched_n, CAIRN_MAX_FETCHED, "\"fetched\" must be an array of at most 64 downloads");
  cap_of(failed_n, CAIRN_MAX_FAILED, "\"failed\" must be an array of at most 64 failed sources");
  accepted("{\"have\": []}", CAIRN_WORK_FIELDS);
  assert_int_equal(report.fields, CAIRN_FEAT_HAVE);

  /* Sources of 511 bytes, not 512. */
  static const char *const kinds[] = {"fetched", "failed"};
  static const char *const too_long[] = {
    "fetched[0].source must be a string of at most 511 bytes",
    "failed[0].source must be a peer's http:// or https:// URL of at most 511 bytes"};
  for (int k = 0; k < 2; k++) {
    char *e = entry_with_source(kinds[k], CAIRN_MAX_SOURCE_LEN), *body = list_of(kinds[k], e, 1);
    accepted(body, CAIRN_WORK_FIELDS);
    free(body);
    free(e);
    e = entry_with_source(kinds[k], CAIRN_MAX_SOURCE_LEN + 1);
    body = list_of(kinds[k], e, 1);
    refused(body, too_long[k]);
    free(body);
    free(e);
  }

  /* "peer_url" of 256 bytes, not 257. */
  char url[300], body[400];
  memset(url, 'h', sizeof url);
  memcpy(url, "http://", 7);
  url[CAIRN_MAX_PEER_URL] = '\0';
  snprintf(body, sizeof body, "{\"peer_url\": \"%s\"}", url);
  accepted(body, CAIRN_WORK_FIELDS);
  assert_string_equal(report.peer_url, url);
  url[CAIRN_MAX_PEER_URL] = 'h';
  url[CAIRN_MAX_PEER_URL + 1] = '\0';
  snprintf(body, sizeof body, "{\"peer_url\": \"%s\"}", url);
  refused(body, "\"peer_url\" must be a string of at most 256 bytes");
}

#define GOOD_FETCHED "{\"sha256\": \"" SHA_A "\", \"source\": \"/x\", \"bytes\": 1, \"ms\": 1}"
#define GOOD_FAILED "{\"sha256\": \"" SHA_A "\", \"source\": \"" PEER "\", \"reason\": \"size\"}"

static void test_malformed_entries(void **state) {
  (void)state;
  static const struct {
    const char *body, *message;
  } bad[] = {
    {"{\"have\": \"" SHA_A "\"}", "\"have\" must be an array of at most 256 sha256 digests"},
    {"{\"have\": [\"" SHA_A "\", \"" SHA_B "\", \"" SHA_A "\", \"AAAA\"]}",
     "have[3] is not a sha256 digest"},
    {"{\"have\": [\"" SHA_A "\", 7]}", "have[1] is not a sha256 digest"},
    {"{\"served\": [1]}", "\"served\" must map at most 256 sha256 digests to bytes"},
    {"{\"served\": {\"abc\": 1}}", "\"served\" must map sha256 digests to byte counts"},
    {"{\"served\": {\"" SHA_A "\": -1}}", "\"served\" must map sha256 digests to byte counts"},
    {"{\"served\": {\"" SHA_A "\": \"1\"}}", "\"served\" must map sha256 digests to byte counts"},
    {"{\"running\": 3}", "\"running\" must be an array of at most 1024 indices"},
    {"{\"resources\": 4}", "report: \"resources\" must be an object with \"cores\", "
     "\"memory_mib\" and/or \"disk_mib\""},
    {"{\"resources\": {\"cores\": 0}}",
     "report: resources: \"cores\" must be an integer from 1 to 4096"},
    {"{\"resources\": {\"gpus\": 1}}", "report: resources: unknown field \"gpus\""},
    {"{\"running\": [1, 2, 0]}", "running[2] is not an allocation index"},
    {"{\"running\": [1.5]}", "running[0] is not an allocation index"},
    {"{\"suspended\": [4, -1]}", "suspended[1] is not an allocation index"},
    {"{\"chunks\": false}", "\"chunks\" must be true when present"},
    {"{\"peer_max\": 0}", "\"peer_max\" must be an integer from 1 to 1024"},
    {"{\"peer_max\": 1025}", "\"peer_max\" must be an integer from 1 to 1024"},
    {"{\"peer_max\": \"2\"}", "\"peer_max\" must be an integer from 1 to 1024"},
    {"{\"suspended\": {}}", "\"suspended\" must be an array of at most 1024 indices"},
    {"{\"progress\": [0.5]}",
     "\"progress\" must map at most 1024 allocation indices to fractions from 0 to 1"},
    {"{\"progress\": {\"7\": \"0.5\"}}", "progress[\"7\"] must be a number from 0 to 1"},
    {"{\"progress\": {\"7\": 1.5}}", "progress[\"7\"] must be a number from 0 to 1"},
    {"{\"progress\": {\"7\": -0.1}}", "progress[\"7\"] must be a number from 0 to 1"},
    {"{\"progress\": {\"7\": null}}", "progress[\"7\"] must be a number from 0 to 1"},
    {"{\"progress\": {\"07\": 0.5}}", "progress[\"07\"]: the key is not an allocation index"},
    {"{\"progress\": {\"0\": 0.5}}", "progress[\"0\"]: the key is not an allocation index"},
    {"{\"progress\": {\"x\": 0.5}}", "progress[\"x\"]: the key is not an allocation index"},
    {"{\"progress\": {\"99999999999999999999\": 0.5}}",
     "progress[\"99999999999999999999\"]: the key is not an allocation index"},
    {"{\"peer_url\": 80}", "\"peer_url\" must be a string of at most 256 bytes"},
    {"{\"peer_url\": \"ftp://x\"}",
     "\"peer_url\" must be http://HOST:PORT (no path, no trailing slash)"},
    {"{\"peer_url\": \"http://x/\"}",
     "\"peer_url\" must be http://HOST:PORT (no path, no trailing slash)"},
    {"{\"fetched\": {}}", "\"fetched\" must be an array of at most 64 downloads"},
    {"{\"fetched\": [1]}", "fetched[0] must be an object"},
    {"{\"fetched\": [{\"sha256\": \"" SHA_A "\", \"source\": \"/x\", \"bytes\": 1, \"ms\": 1, "
     "\"speed\": 3}]}", "fetched[0]: unknown field \"speed\""},
    {"{\"fetched\": [" GOOD_FETCHED ", {\"sha256\": \"AAAA\", \"source\": \"/x\", \"bytes\": 1, "
     "\"ms\": 1}]}", "fetched[1].sha256 must be a sha256 digest (64 lowercase hex)"},
    {"{\"fetched\": [{\"sha256\": \"" SHA_A "\", \"bytes\": 1, \"ms\": 1}]}",
     "fetched[0].source must be a string of at most 511 bytes"},
    {"{\"fetched\": [{\"sha256\": \"" SHA_A "\", \"source\": \"/x\", \"bytes\": -1, \"ms\": 1}]}",
     "fetched[0].bytes must be a non-negative integer"},
    {"{\"fetched\": [" GOOD_FETCHED ", " GOOD_FETCHED ", {\"sha256\": \"" SHA_A "\", "
     "\"source\": \"/x\", \"bytes\": 1, \"ms\": 1.5}]}",
     "fetched[2].ms must be a non-negative integer"},
    {"{\"failed\": [1]}", "failed[0] must be an object"},
    {"{\"failed\": [{\"sha256\": \"" SHA_A "\", \"source\": \"" PEER "\", \"reason\": \"size\", "
     "\"bytes\": 1}]}", "failed[0]: unknown field \"bytes\""},
    {"{\"failed\": [{\"sha256\": \"nothex\", \"source\": \"" PEER "\", \"reason\": \"size\"}]}",
     "failed[0].sha256 must be a sha256 digest (64 lowercase hex)"},
    {"{\"failed\": [{\"sha256\": \"" SHA_A "\", \"source\": \"/v1/files/" SHA_A "\", "
     "\"reason\": \"size\"}]}",
     "failed[0].source must be a peer's http:// or https:// URL of at most 511 bytes"},
    {"{\"failed\": [" GOOD_FAILED ", {\"sha256\": \"" SHA_A "\", \"source\": \"" PEER "\", "
     "\"reason\": \"slow\"}]}",
     "failed[1].reason must be one of unreachable, stalled, status, size, digest"},
    {"{\"failed\": [{\"sha256\": \"" SHA_A "\", \"source\": \"" PEER "\", \"reason\": 4}]}",
     "failed[0].reason must be one of unreachable, stalled, status, size, digest"},
    /* the first field at fault is named, in a fixed order */
    {"{\"running\": [0], \"have\": [\"x\"]}", "have[0] is not a sha256 digest"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    refused(bad[i].body, bad[i].message);
  cairn_error err;
  json_t *array = json_array();
  assert_int_equal(cairn__report_parse(array, CAIRN_HEARTBEAT_FIELDS, NULL, &report, &err),
                   CAIRN_EINVAL);
  assert_string_equal(err.text, "the body must be a JSON object");
  json_decref(array);
}

static void test_unknown_fields(void **state) {
  (void)state;
  cairn_error err;
  refused("{\"have\": [], \"speed\": 1}", "unknown field \"speed\"");
  /* "served" and "running" are a heartbeat's, "apps" the caller's. */
  assert_int_equal(parse_text("{\"served\": {}}", CAIRN_WORK_FIELDS, &err), CAIRN_EINVAL);
  assert_string_equal(err.text, "unknown field \"served\"");
  assert_int_equal(parse_text("{\"running\": []}", CAIRN_WORK_FIELDS, &err), CAIRN_EINVAL);
  assert_string_equal(err.text, "unknown field \"running\"");
  assert_int_equal(parse_text("{\"suspended\": [3]}", CAIRN_WORK_FIELDS, &err), CAIRN_EINVAL);
  assert_string_equal(err.text, "unknown field \"suspended\"");
  accepted("{\"apps\": [\"cell\"], \"have\": [\"" SHA_A "\"]}", CAIRN_WORK_FIELDS);
  assert_int_equal(report.fields, CAIRN_FEAT_HAVE);
  /* A master that takes no field refuses each one. */
  assert_int_equal(parse_text("{\"have\": []}", CAIRN_FEATURES_BASELINE, &err), CAIRN_EINVAL);
  assert_string_equal(err.text, "unknown field \"have\"");
  json_t *o = json_pack("{s:[]}", "apps");
  assert_int_equal(cairn__report_parse(o, CAIRN_HEARTBEAT_FIELDS, NULL, &report, &err),
                   CAIRN_EINVAL);
  assert_string_equal(err.text, "unknown field \"apps\"");
  json_decref(o);
}

static void test_parsed(void **state) {
  (void)state;
  accepted("{}", CAIRN_HEARTBEAT_FIELDS);
  assert_int_equal(report.fields, 0);
  assert_null(report.peer_url);
  /* "running" present and empty: no lease is extended; absent: all are. */
  accepted("{\"running\": [], \"peer_url\": \"\"}", CAIRN_HEARTBEAT_FIELDS);
  assert_int_equal(report.fields, CAIRN_FEAT_RUNNING | CAIRN_FEAT_PEER_URL);
  assert_int_equal(report.nrunning, 0);
  assert_string_equal(report.peer_url, "");
  accepted("{\"have\": [\"" SHA_B "\"], \"served\": {\"" SHA_A "\": 1024}, \"running\": [13, 21], "
           "\"peer_url\": \"" PEER "\", \"fetched\": [" GOOD_FETCHED "], "
           "\"failed\": [" GOOD_FAILED "], \"resources\": {\"cores\": 4, \"disk_mib\": 10}, "
           "\"suspended\": [21], \"chunks\": true, \"peer_max\": 2, "
           "\"progress\": {\"21\": 0.25, \"13\": 1}, \"cpid\": {}}",
           CAIRN_HEARTBEAT_FIELDS);
  assert_int_equal(report.fields, CAIRN_REPORT_FIELDS);
  assert_int_equal(report.nprogress, 2);
  for (size_t i = 0; i < 2; i++)
    assert_true(report.progress[i].index == 21 ? report.progress[i].fraction == 0.25
                                               : report.progress[i].index == 13 &&
                                                   report.progress[i].fraction == 1.0);
  assert_int_equal(report.chunks, 1);
  assert_int_equal(report.peer_max, 2);
  assert_int_equal(report.nsuspended, 1);
  assert_int_equal(report.suspended[0], 21);
  /* "resources": a missing key is the default (no memory) */
  assert_int_equal(report.resources.cores, 4);
  assert_int_equal(report.resources.memory_mib, 0);
  assert_int_equal(report.resources.disk_mib, 10);
  assert_string_equal(report.have[0], SHA_B);
  assert_string_equal(report.served[0].sha256, SHA_A);
  assert_int_equal(report.served[0].bytes, 1024);
  assert_int_equal(report.nrunning, 2);
  assert_int_equal(report.running[1], 21);
  assert_string_equal(report.peer_url, PEER);
  assert_string_equal(report.fetched[0].source, "/x");
  assert_int_equal(report.fetched[0].ms, 1);
  assert_string_equal(report.failed[0].source, PEER);
  assert_int_equal(report.failed[0].reason, CAIRN_FAIL_SIZE);
}

/* ---- serializer ---- */

static cairn__report sent, got;

static void test_round_trip(void **state) {
  (void)state;
  static const char *const sha[] = {SHA_A, SHA_B};
  memset(&sent, 0, sizeof sent);
  sent.fields = CAIRN_REPORT_FIELDS;
  for (size_t i = 0; i < CAIRN_MAX_HAVE; i++)
    sent.have[sent.nhave++] = sha[i % 2];
  sent.served[sent.nserved++] = (cairn__report_served){SHA_A, 1ull << 40};
  sent.served[sent.nserved++] = (cairn__report_served){SHA_B, 0};
  for (int i = 0; i < CAIRN_FAIL_REASONS; i++) {
    sent.fetched[sent.nfetched++] = (cairn__report_fetched){sha[i % 2], "/v1/files/x", i, i + 1};
    sent.failed[sent.nfailed++] = (cairn__report_failed){sha[i % 2], PEER "/v1/files/x", i};
  }
  sent.running[sent.nrunning++] = 13;
  sent.running[sent.nrunning++] = 1ll << 40;
  sent.suspended[sent.nsuspended++] = 13;
  sent.peer_url = PEER;
  sent.resources = (cairn__resources){16, 1ll << 20, CAIRN_MAX_RES_MIB};
  sent.peer_max = CAIRN_MAX_PEER_MAX;
  sent.progress[sent.nprogress++] = (cairn__report_progress){13, 0.375};
  memcpy(sent.cpid, "0123456789abcdef0123456789abcdef", 33);
  sent.cpid_time = 1700000000;

  json_t *o = cairn__report_json(&sent);
  assert_non_null(o);
  assert_int_equal(json_object_size(o), CAIRN_REPORT_FIELD_COUNT);
  cairn_error err = {0};
  assert_int_equal(cairn__report_parse(o, CAIRN_HEARTBEAT_FIELDS, NULL, &got, &err), CAIRN_OK);
  assert_int_equal(got.fields, sent.fields);
  assert_int_equal(got.nhave, sent.nhave);
  for (size_t i = 0; i < got.nhave; i++)
    assert_string_equal(got.have[i], sent.have[i]);
  assert_int_equal(got.nserved, 2);
  for (size_t i = 0; i < got.nserved; i++) { /* an object: in any order */
    size_t k = strcmp(got.served[i].sha256, SHA_A) == 0 ? 0 : 1;
    assert_string_equal(got.served[i].sha256, sent.served[k].sha256);
    assert_int_equal(got.served[i].bytes, sent.served[k].bytes);
  }
  assert_int_equal(got.nfetched, sent.nfetched);
  assert_string_equal(got.cpid, sent.cpid);
  assert_int_equal(got.cpid_time, sent.cpid_time);
  assert_int_equal(got.nfailed, sent.nfailed);
  for (size_t i = 0; i < got.nfetched; i++) {
    assert_string_equal(got.fetched[i].sha256, sent.fetched[i].sha256);
    assert_string_equal(got.fetched[i].source, sent.fetched[i].source);
    assert_int_equal(got.fetched[i].bytes, sent.fetched[i].bytes);
    assert_int_equal(got.fetched[i].ms, sent.fetched[i].ms);
    assert_string_equal(got.failed[i].sha256, sent.failed[i].sha256);
    assert_string_equal(got.failed[i].source, sent.failed[i].source);
    assert_int_equal(got.failed[i].reason, sent.failed[i].reason);
  }
  assert_memory_equal(got.running, sent.running, sizeof sent.running[0] * 2);
  assert_int_equal(got.nrunning, 2);
  assert_int_equal(got.nsuspended, 1);
  assert_int_equal(got.suspended[0], 13);
  assert_string_equal(got.peer_url, sent.peer_url);
  assert_true(cairn__resources_equal(&got.resources, &sent.resources));
  assert_int_equal(got.peer_max, CAIRN_MAX_PEER_MAX);
  assert_int_equal(got.nprogress, 1);
  assert_int_equal(got.progress[0].index, 13);
  assert_true(got.progress[0].fraction == 0.375);
  json_t *failed0 = json_array_get(json_object_get(o, "failed"), 0);
  assert_string_equal(json_string_value(json_object_get(failed0, "reason")), "unreachable");
  json_decref(o);

  /* Only the fields of r->fields are written: here, an empty "running". */
  sent.fields = CAIRN_FEAT_RUNNING;
  sent.nrunning = 0;
  o = cairn__report_json(&sent);
  char *text = json_dumps(o, JSON_COMPACT);
  assert_string_equal(text, "{\"running\":[]}");
  free(text);
  json_decref(o);
}

static void test_not_written(void **state) {
  (void)state;
  memset(&sent, 0, sizeof sent);
  sent.fields = CAIRN_FEAT_FAILED;
  sent.failed[sent.nfailed++] = (cairn__report_failed){SHA_A, PEER, CAIRN_FAIL_REASONS};
  assert_null(cairn__report_json(&sent)); /* no such reason */
  sent.failed[0].reason = -1;
  assert_null(cairn__report_json(&sent));
  sent.failed[0] = (cairn__report_failed){SHA_A, "http://h\xff", CAIRN_FAIL_SIZE};
  assert_null(cairn__report_json(&sent)); /* not UTF-8 */
  sent.fields = CAIRN_FEAT_HAVE;
  sent.nhave = CAIRN_MAX_HAVE + 1;
  assert_null(cairn__report_json(&sent)); /* over the cap */
  sent.fields = CAIRN_FEAT_PEER_URL;
  assert_null(cairn__report_json(&sent)); /* present, but no URL */
}

/* ---- features ---- */

static void test_features(void **state) {
  (void)state;
  assert_int_equal(cairn__features_parse(NULL), CAIRN_FEATURES_BASELINE);
  json_t *v = json_string("have");
  assert_int_equal(cairn__features_parse(v), CAIRN_FEATURES_BASELINE);
  json_decref(v);
  v = json_pack("[s, s, i, s]", "failed", "compressed", 3, "have");
  assert_int_equal(cairn__features_parse(v), CAIRN_FEAT_HAVE | CAIRN_FEAT_FAILED);
  json_decref(v);

  v = cairn__features_json(CAIRN_FEATURES_ALL);
  char *text = json_dumps(v, JSON_COMPACT);
  assert_string_equal(text,
                      "[\"have\",\"served\",\"peer_url\",\"running\",\"fetched\",\"failed\","
                      "\"next\",\"resources\",\"reason\",\"outputs\",\"suspended\",\"wait\",\"batch\",\"cpu\","
                      "\"keep\",\"chunks\",\"peer_max\",\"kept_chunks\",\"progress\",\"usage\",\"cpid\"]");
  free(text);
  assert_int_equal(cairn__features_parse(v), CAIRN_FEATURES_ALL);
  json_decref(v);
  v = cairn__features_json(CAIRN_FEATURES_BASELINE);
  assert_int_equal(json_array_size(v), 0);
  json_decref(v);
  /* A work body takes neither "served" nor "running". */
  assert_int_equal(CAIRN_WORK_FIELDS & (CAIRN_FEAT_SERVED | CAIRN_FEAT_RUNNING), 0);
  assert_int_equal(CAIRN_HEARTBEAT_FIELDS, CAIRN_REPORT_FIELDS);
  assert_int_equal(CAIRN_FEATURES_ALL,
                   CAIRN_REPORT_FIELDS | CAIRN_FEAT_NEXT | CAIRN_FEAT_REASON | CAIRN_FEAT_OUTPUTS |
                       CAIRN_FEAT_WAIT | CAIRN_FEAT_BATCH | CAIRN_FEAT_CPU | CAIRN_FEAT_KEEP |
                       CAIRN_FEAT_KEPT_CHUNKS | CAIRN_FEAT_USAGE);
  /* "usage" is the result body's: no report takes it */
  assert_int_equal(CAIRN_REPORT_FIELDS & CAIRN_FEAT_USAGE, 0);
  /* "kept_chunks" is the result body's */
  assert_int_equal(CAIRN_REPORT_FIELDS & CAIRN_FEAT_KEPT_CHUNKS, 0);
  /* "cpu" is the result body's: no report takes it */
  assert_int_equal(CAIRN_REPORT_FIELDS & CAIRN_FEAT_KEEP, 0);
  assert_int_equal(CAIRN_REPORT_FIELDS & CAIRN_FEAT_CPU, 0);
  /* "batch" names routes: no report or result body field parses it */
  assert_int_equal(CAIRN_REPORT_FIELDS & CAIRN_FEAT_BATCH, 0);
  /* "wait" is a work body's own field, not the report's */
  assert_int_equal(CAIRN_REPORT_FIELDS & CAIRN_FEAT_WAIT, 0);
  v = json_pack("[s, s]", "batch", "wait");
  assert_int_equal(cairn__features_parse(v), CAIRN_FEAT_BATCH | CAIRN_FEAT_WAIT);
  json_decref(v);
}

/* "cpid" (heartbeat only): asked ({}) or offered ({"id", "time"}) */
static void test_cpid(void **state) {
  (void)state;
  cairn_error err;
  assert_int_equal(parse_text("{\"cpid\": {}}", CAIRN_HEARTBEAT_FIELDS, &err), CAIRN_OK);
  assert_true(report.fields & CAIRN_FEAT_CPID);
  assert_string_equal(report.cpid, "");
  assert_int_equal(parse_text("{\"cpid\": {\"id\": \"00112233445566778899aabbccddeeff\", "
                              "\"time\": 86400}}", CAIRN_HEARTBEAT_FIELDS, &err), CAIRN_OK);
  assert_string_equal(report.cpid, "00112233445566778899aabbccddeeff");
  assert_int_equal(report.cpid_time, 86400);
  static const char *const shape = "\"cpid\" must be {} or {\"id\", \"time\"}";
  refused("{\"cpid\": null}", shape);
  refused("{\"cpid\": []}", shape);
  refused("{\"cpid\": {\"id\": \"00112233445566778899aabbccddeeff\"}}", shape);
  refused("{\"cpid\": {\"id\": \"00112233445566778899aabbccddeeff\", \"time\": 1, "
          "\"x\": 1}}", shape);
  static const char *const hex = "cpid.id must be 32 lowercase hex digits";
  refused("{\"cpid\": {\"id\": \"00112233445566778899AABBCCDDEEFF\", \"time\": 1}}", hex);
  refused("{\"cpid\": {\"id\": \"0011\", \"time\": 1}}", hex);
  refused("{\"cpid\": {\"id\": 7, \"time\": 1}}", hex);
  static const char *const tm = "cpid.time must be Unix seconds (an integer from 0 to "
                                "253402300799)";
  refused("{\"cpid\": {\"id\": \"00112233445566778899aabbccddeeff\", \"time\": -1}}", tm);
  refused("{\"cpid\": {\"id\": \"00112233445566778899aabbccddeeff\", \"time\": 1.5}}", tm);
  refused("{\"cpid\": {\"id\": \"00112233445566778899aabbccddeeff\", "
          "\"time\": 253402300800}}", tm);
  /* a work body does not take it */
  assert_int_equal(parse_text("{\"cpid\": {}}", CAIRN_WORK_FIELDS, &err), CAIRN_EINVAL);
}

/* ---- credit: a result's "cpu_seconds", a registration's "team" ---- */

static void test_cpu_and_team(void **state) {
  (void)state;
  static const char *const good[] = {"{}", "{\"cpu_seconds\": 0}", "{\"cpu_seconds\": 1.25}",
                                     "{\"cpu_seconds\": 604800}"};
  static const double want[] = {0, 0, 1.25, 604800};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    json_t *o = json_loads(good[i], 0, NULL);
    double cpu = -1;
    int has = -1;
    cairn_error err = {0};
    assert_int_equal(cairn__result_cpu_parse(o, &cpu, &has, &err), CAIRN_OK);
    assert_int_equal(has, i > 0);
    assert_true(cpu == want[i]);
    json_decref(o);
  }
  static const char *const bad[] = {"{\"cpu_seconds\": -0.5}", "{\"cpu_seconds\": 604800.5}",
                                    "{\"cpu_seconds\": \"1\"}", "{\"cpu_seconds\": null}",
                                    "{\"cpu_seconds\": [1]}", "{\"cpu_seconds\": 1e300}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *o = json_loads(bad[i], 0, NULL);
    assert_non_null(o);
    double cpu;
    int has;
    cairn_error err = {0};
    assert_int_equal(cairn__result_cpu_parse(o, &cpu, &has, &err), CAIRN_EINVAL);
    assert_non_null(strstr(err.text, "\"cpu_seconds\""));
    assert_int_equal(has, 0);
    json_decref(o);
  }
  assert_true(cairn__team_valid("Team Rocket 42"));
  assert_true(cairn__team_valid("x"));
  char longest[CAIRN_MAX_TEAM + 2];
  memset(longest, 'a', sizeof longest);
  longest[CAIRN_MAX_TEAM] = '\0';
  assert_true(cairn__team_valid(longest));
  longest[CAIRN_MAX_TEAM] = 'a';
  longest[CAIRN_MAX_TEAM + 1] = '\0';
  assert_false(cairn__team_valid(longest));
  assert_false(cairn__team_valid(""));
  assert_false(cairn__team_valid(NULL));
  assert_false(cairn__team_valid("tab\there"));
  assert_false(cairn__team_valid("quote\"d"));
  assert_false(cairn__team_valid("back\\slash"));
  assert_false(cairn__team_valid("caf\xc3\xa9"));
}

/* The Range a resumed copy sends ("bytes=N-", N below the size) and
 * everything else, which is answered with the whole file. */
static void test_range_start(void **state) {
  (void)state;
  assert_int_equal(cairn__range_start("bytes=1048576-", 16u << 20), 1048576);
  assert_int_equal(cairn__range_start("bytes=0-", 10), 0);
  assert_int_equal(cairn__range_start("bytes=9-", 10), 9);
  assert_int_equal(cairn__range_start("bytes=10-", 10), -1); /* at the end */
  assert_int_equal(cairn__range_start(NULL, 10), -1);
  assert_int_equal(cairn__range_start("", 10), -1);
  assert_int_equal(cairn__range_start("bytes=-5", 10), -1); /* a suffix */
  assert_int_equal(cairn__range_start("bytes=1-5", 10), -1);
  assert_int_equal(cairn__range_start("bytes=1-,3-", 10), -1);
  assert_int_equal(cairn__range_start("bytes= 1-", 10), -1);
  assert_int_equal(cairn__range_start("items=1-", 10), -1);
  assert_int_equal(cairn__range_start("bytes=99999999999999999999-", ~0ull), -1);
}

/* ---- kept outputs' chunk digests ("kept_chunks") ---- */

/* A JSON array of n digests, each hex (64 characters). */
static json_t *digests(size_t n, const char *hex) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_string(hex));
  return a;
}

static void test_chunks_parse(void **state) {
  (void)state;
  char good[65], upper[65], short_[64];
  memset(good, 'a', 64);
  good[64] = '\0';
  memcpy(upper, good, 65);
  upper[10] = 'A';
  memset(short_, 'b', 63);
  short_[63] = '\0';
  unsigned char *d = NULL;
  size_t n = 99;
  cairn_error err = {0};
  /* 3 chunks of a file of 2 MiB + 1 byte, each read as 32 bytes */
  json_t *a = digests(3, good);
  assert_int_equal(cairn__chunks_parse(a, 2LL * CAIRN_CHUNK_SIZE + 1, "outputs[0].chunks", &d, &n,
                                      &err), CAIRN_OK);
  assert_int_equal(n, 3);
  assert_int_equal(d[0], 0xaa);
  assert_int_equal(d[95], 0xaa);
  free(d);
  /* a count that is not ceil(size / chunk) */
  assert_int_equal(cairn__chunks_parse(a, 2LL * CAIRN_CHUNK_SIZE, "outputs[0].chunks", &d, &n,
                                      &err), CAIRN_EINVAL);
  assert_null(d);
  assert_non_null(strstr(err.text, "outputs[0].chunks has 3 digests"));
  json_decref(a);
  /* an empty file has none */
  a = json_array();
  assert_int_equal(cairn__chunks_parse(a, 0, "c", &d, &n, &err), CAIRN_OK);
  assert_int_equal(n, 0);
  assert_null(d);
  json_decref(a);
  /* uppercase, short, not a string */
  a = digests(2, good);
  json_array_set_new(a, 1, json_string(upper));
  assert_int_equal(cairn__chunks_parse(a, CAIRN_CHUNK_SIZE + 5, "outputs[1].chunks", &d, &n,
                                      &err), CAIRN_EINVAL);
  assert_null(d);
  assert_non_null(strstr(err.text, "outputs[1].chunks[1] is not 64 lowercase hex"));
  json_array_set_new(a, 1, json_string(short_));
  assert_int_equal(cairn__chunks_parse(a, CAIRN_CHUNK_SIZE + 5, "x", &d, &n, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "x[1] is not"));
  json_array_set_new(a, 0, json_integer(7));
  assert_int_equal(cairn__chunks_parse(a, CAIRN_CHUNK_SIZE + 5, "x", &d, &n, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "x[0] is not"));
  json_decref(a);
  /* not an array */
  a = json_string(good);
  assert_int_equal(cairn__chunks_parse(a, 1, "outputs[0].chunks", &d, &n, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "outputs[0].chunks must be an array"));
  json_decref(a);
  /* too many: more than CAIRN_MAX_CHUNKS, whatever the size says */
  a = digests(CAIRN_MAX_CHUNKS + 1, good);
  long long big = (long long)(CAIRN_MAX_CHUNKS + 1) * CAIRN_CHUNK_SIZE;
  assert_int_equal(cairn__chunks_parse(a, big, "outputs[0].chunks", &d, &n, &err), CAIRN_ETOOBIG);
  assert_non_null(strstr(err.text, "more than 4096 chunks"));
  assert_int_equal(cairn__chunks_parse(a, 5, "outputs[0].chunks", &d, &n, &err), CAIRN_ETOOBIG);
  json_decref(a);
  a = json_array();
  assert_int_equal(cairn__chunks_parse(a, big, "y", &d, &n, &err), CAIRN_ETOOBIG);
  json_decref(a);
  /* exactly CAIRN_MAX_CHUNKS is taken */
  a = digests(CAIRN_MAX_CHUNKS, good);
  assert_int_equal(cairn__chunks_parse(a, big - CAIRN_CHUNK_SIZE, "y", &d, &n, &err), CAIRN_OK);
  assert_int_equal(n, CAIRN_MAX_CHUNKS);
  free(d);
  json_decref(a);
}

/* cairn__chunks_of_file reads a file into the form cairn__chunks_parse takes,
 * with the master's digests (each chunk's SHA-256). */
static void test_chunks_of_file(void **state) {
  (void)state;
  char path[] = "/tmp/cairn-chunks-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  size_t size = 2u * CAIRN_CHUNK_SIZE + 100u;
  unsigned char *buf = malloc(size);
  for (size_t i = 0; i < size; i++)
    buf[i] = (unsigned char)(i * 7 + i / 4096);
  assert_int_equal(write(fd, buf, size), (ssize_t)size);
  close(fd);
  json_t *a = cairn__chunks_of_file(path, (long long)size);
  assert_non_null(a);
  assert_int_equal(json_array_size(a), 3);
  char hex[65];
  cairn__sha256_hex(buf + 2u * CAIRN_CHUNK_SIZE, 100, hex);
  assert_string_equal(json_string_value(json_array_get(a, 2)), hex);
  cairn__sha256_hex(buf, CAIRN_CHUNK_SIZE, hex);
  assert_string_equal(json_string_value(json_array_get(a, 0)), hex);
  unsigned char *d = NULL;
  size_t n = 0;
  cairn_error err = {0};
  assert_int_equal(cairn__chunks_parse(a, (long long)size, "c", &d, &n, &err), CAIRN_OK);
  assert_int_equal(n, 3);
  free(d);
  json_decref(a);
  /* a size that is not the file's */
  assert_null(cairn__chunks_of_file(path, (long long)size - 1));
  assert_null(cairn__chunks_of_file(path, (long long)size + 1));
  unlink(path);
  assert_null(cairn__chunks_of_file(path, (long long)size));
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_caps),
    cmocka_unit_test(test_malformed_entries),
    cmocka_unit_test(test_unknown_fields),
    cmocka_unit_test(test_parsed),
    cmocka_unit_test(test_round_trip),
    cmocka_unit_test(test_not_written),
    cmocka_unit_test(test_features),
    cmocka_unit_test(test_cpid),
    cmocka_unit_test(test_cpu_and_team),
    cmocka_unit_test(test_range_start),
    cmocka_unit_test(test_chunks_parse),
    cmocka_unit_test(test_chunks_of_file),
  };
  return cmocka_run_group_tests(tests, NULL, teardown);
}
