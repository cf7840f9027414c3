/* test_xmlstats.c — the XML statistics exports (docs/project.md,
 * "Statistics exports"; BOINC's XmlStats, docs/references.md
 * [BOINC-stats]) on a real master, real workers and real SQLite, read
 * over HTTP and parsed as a statistics site would (zlib to gunzip,
 * libxml2 to parse).
 *
 * Three accounts sign up; five real workers run a job each (one app
 * each, so that each earns credit): two attached to Ann's account in team
 * "red", one to Bob's in "blue", two without an account, the last of them
 * banned afterwards. With the master stopped, teams of accounts are put
 * in the store with SQL (red, blue, and green without credit), the
 * accounts join them, and one host gets a platform. Then:
 *  - before any export, each file is 404 naming the problem; an unknown
 *    file is 404 naming the files; bad requests to the export route are
 *    refused (401 without the token, 400 for a body field, 405);
 *  - `cairn stats export` asks the master for one and waits for it;
 *  - each file fetched over HTTP (Content-Type, ETag, Last-Modified; 304
 *    for If-None-Match and If-Modified-Since) is gunzipped and parsed, and
 *    every record is checked against the store: counts, ids in order,
 *    names, times, credits and averages, countries, team membership
 *    (teamid, founders), a team's credit the sum of its hosts', an
 *    account's the sum of its hosts', a host's account, platform and
 *    offer; each cpid and host_cpid is MD5(id + e-mail) as `openssl md5`
 *    computes it; the banned host, the account and team without credit
 *    are left out; tables.xml's counts, total credit and applications;
 *    no e-mail address, cross-project id, host cpid or host name appears
 *    in any file;
 *  - while exports are asked for again and again, every file fetched is
 *    whole (a complete gzip stream that parses, with every record);
 *  - after a restart the files are served at once, and a schedule of a
 *    few seconds makes a new export by itself;
 *  - `cairn stats export --db` on the stopped master's database writes
 *    the same records; a missing database is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#ifdef CAIRN_HAVE_LIBXML2
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NHOSTS 5

static const char *const FILES[] = {"tables.xml", "user.gz", "team.gz", "host.gz"};

static const char *err_message(json_t *r) {
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  return m ? m : "";
}

static int near(double a, double b) { return fabs(a - b) <= 1e-6 * (1 + fabs(a)); }

/* ---- HTTP, gzip, XML ---- */

/* GET path (without a token, as a statistics site: each read spends one
 * of the address's anonymous tokens; with token: none): the body
 * (malloc'd, NUL-terminated), its length in *len; fails the test unless
 * the answer is 200. */
static char *fetch(const char *url, const char *path, const char *token, size_t *len) {
  char *raw = NULL;
  size_t n = 0;
  long st = harness_http(url, "GET", path, token, NULL, 0, NULL, &raw, &n);
  if (st != 200)
    fail_msg("GET %s: %ld %.200s", path, st, raw ? raw : "");
  char *b = realloc(raw, n + 1);
  assert_non_null(b);
  b[n] = '\0';
  *len = n;
  return b;
}

/* The whole gzip stream in, inflated (NUL-terminated, malloc'd); NULL
 * when it is not one complete stream that ends where the input ends. */
static char *gunzip(const char *in, size_t n, size_t *out_len) {
  z_stream z = {0};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return NULL;
  size_t cap = 4 * n + 1024, len = 0;
  char *out = malloc(cap);
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)n;
  int rc = Z_OK;
  while (out && rc == Z_OK) {
    if (cap - len < 4096) {
      char *nb = realloc(out, cap *= 2);
      if (!nb)
        break;
      out = nb;
    }
    z.next_out = (Bytef *)out + len;
    z.avail_out = (uInt)(cap - len - 1);
    rc = inflate(&z, Z_NO_FLUSH);
    len = cap - 1 - z.avail_out;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.avail_in != 0) {
    free(out);
    return NULL;
  }
  out[len] = '\0';
  *out_len = len;
  return out;
}

/* A file's XML text: tables.xml as it is, the others gunzipped. */
static char *fetch_text(const char *url, const char *file, const char *token) {
  char path[64];
  size_t n, len;
  snprintf(path, sizeof path, "/stats/%s", file);
  char *body = fetch(url, path, token, &n);
  if (strstr(file, ".gz") == NULL)
    return body;
  char *text = gunzip(body, n, &len);
  if (!text)
    fail_msg("%s is not one whole gzip stream (%zu bytes)", file, n);
  free(body);
  return text;
}

static xmlDoc *parse(const char *text, const char *root) {
  xmlDoc *d = xmlReadMemory(text, (int)strlen(text), root, "utf-8",
                            XML_PARSE_NONET | XML_PARSE_NOBLANKS);
  if (!d)
    fail_msg("<%s> does not parse as XML", root);
  xmlNode *r = xmlDocGetRootElement(d);
  assert_non_null(r);
  assert_string_equal((const char *)r->name, root);
  return d;
}

/* The next element sibling from n (itself if one), or NULL. */
static xmlNode *element(xmlNode *n) {
  while (n && n->type != XML_ELEMENT_NODE)
    n = n->next;
  return n;
}

/* The text of rec's child element tag (malloc'd), or NULL when it has none. */
static char *field(xmlNode *rec, const char *tag) {
  for (xmlNode *c = element(rec->children); c; c = element(c->next))
    if (strcmp((const char *)c->name, tag) == 0) {
      xmlChar *t = xmlNodeGetContent(c);
      char *s = strdup(t ? (const char *)t : "");
      xmlFree(t);
      return s;
    }
  return NULL;
}

static long long field_int(xmlNode *rec, const char *tag) {
  char *s = field(rec, tag);
  if (!s)
    fail_msg("<%s> has no <%s>", (const char *)rec->name, tag);
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  assert_true(*s && !*end);
  free(s);
  return v;
}

static double field_num(xmlNode *rec, const char *tag) {
  char *s = field(rec, tag);
  if (!s)
    fail_msg("<%s> has no <%s>", (const char *)rec->name, tag);
  assert_non_null(strchr(s, '.')); /* "%f": six decimals after a point */
  assert_int_equal(strlen(strchr(s, '.') + 1), 6);
  double v = strtod(s, NULL);
  free(s);
  return v;
}

static void field_is(xmlNode *rec, const char *tag, const char *want) {
  char *s = field(rec, tag);
  if (want && (!s || strcmp(s, want)))
    fail_msg("<%s> <%s> is \"%s\", the store says \"%s\"", (const char *)rec->name, tag,
             s ? s : "(none)", want);
  if (!want && s)
    fail_msg("<%s> has <%s>%s</%s>, which it should not", (const char *)rec->name, tag, s, tag);
  free(s);
}

/* MD5 of a followed by b as `openssl md5` computes it (not Cairn's own). */
static void openssl_md5(const char *a, const char *b, char hex[33]) {
  char text[512], *out = NULL;
  snprintf(text, sizeof text, "%s%s", a, b);
  const char *argv[] = {"/bin/sh", "-c", "printf %s \"$0\" | openssl md5", text, NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  const char *eq = out ? strrchr(out, ' ') : NULL;
  assert_non_null(eq);
  snprintf(hex, 33, "%s", eq + 1);
  free(out);
}

/* ---- the store ---- */

static sqlite3 *open_store(const char *path) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  return db;
}

static sqlite3_stmt *row(sqlite3 *db, const char *sql, long long id) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(db));
  sqlite3_bind_int64(st, 1, id);
  if (sqlite3_step(st) != SQLITE_ROW)
    fail_msg("no row for %lld: %s", id, sql);
  return st;
}

static double number(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = row(db, sql, 0);
  double v = sqlite3_column_double(st, 0);
  sqlite3_finalize(st);
  return v;
}

static void exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
    fail_msg("%s: %s", sql, msg);
}

static const char *col(sqlite3_stmt *st, int i) {
  const char *s = (const char *)sqlite3_column_text(st, i);
  return s ? s : "";
}

/* ---- the checks of each file against the store ---- */

typedef struct seen {
  long long users[8], teams[8];
  int nusers, nteams;
} seen;

static void check_users(sqlite3 *db, xmlDoc *doc, seen *s) {
  long long last = 0;
  for (xmlNode *u = element(xmlDocGetRootElement(doc)->children); u; u = element(u->next)) {
    assert_string_equal((const char *)u->name, "user");
    long long id = field_int(u, "id");
    assert_true(id > last); /* in id order, each once */
    last = id;
    sqlite3_stmt *st = row(db, "SELECT name, created, credit, expavg_credit, expavg_time, "
                               "cross_project_id, email_key, country, team_id, "
                               "(SELECT sum(credit) FROM volunteers WHERE account_id = a.id) "
                               "FROM accounts a WHERE id = ?1", id);
    field_is(u, "name", col(st, 0));
    assert_int_equal(field_int(u, "create_time"), sqlite3_column_int64(st, 1));
    double credit = field_num(u, "total_credit");
    assert_true(credit > 0 && near(credit, sqlite3_column_double(st, 2)));
    assert_true(near(credit, sqlite3_column_double(st, 9))); /* its hosts' sum */
    assert_true(near(field_num(u, "expavg_credit"), sqlite3_column_double(st, 3)));
    assert_true(near(field_num(u, "expavg_time"), sqlite3_column_double(st, 4)));
    char want[33];
    openssl_md5(col(st, 5), col(st, 6), want);
    field_is(u, "cpid", want);
    field_is(u, "country", *col(st, 7) ? col(st, 7) : NULL);
    if (sqlite3_column_type(st, 8) == SQLITE_NULL) {
      field_is(u, "teamid", NULL);
    } else {
      char t[32];
      snprintf(t, sizeof t, "%lld", (long long)sqlite3_column_int64(st, 8));
      field_is(u, "teamid", t);
    }
    sqlite3_finalize(st);
    assert_true(s->nusers < 8);
    s->users[s->nusers++] = id;
  }
  assert_int_equal(s->nusers, (int)number(db, "SELECT count(*) FROM accounts WHERE credit > 0"));
}

static void check_teams(sqlite3 *db, xmlDoc *doc, seen *s) {
  long long last = 0;
  for (xmlNode *t = element(xmlDocGetRootElement(doc)->children); t; t = element(t->next)) {
    assert_string_equal((const char *)t->name, "team");
    long long id = field_int(t, "id");
    assert_true(id > last);
    last = id;
    sqlite3_stmt *st = row(db, "SELECT t.name, t.founder, t.created, t.url, t.description, "
                               "t.country, c.credit, e.expavg_credit, e.expavg_time, f.name, "
                               "(SELECT sum(v.credit) FROM volunteers v WHERE v.team = t.key) "
                               "FROM teams t JOIN team_credit c ON c.team = t.key LEFT JOIN "
                               "team_expavg e ON e.team = t.key JOIN accounts f ON f.id = "
                               "t.founder WHERE t.id = ?1", id);
    field_is(t, "name", col(st, 0));
    assert_int_equal(field_int(t, "userid"), sqlite3_column_int64(st, 1));
    assert_int_equal(field_int(t, "create_time"), sqlite3_column_int64(st, 2));
    field_is(t, "url", *col(st, 3) ? col(st, 3) : NULL);
    field_is(t, "description", *col(st, 4) ? col(st, 4) : NULL);
    field_is(t, "country", col(st, 5));
    double credit = field_num(t, "total_credit");
    assert_true(credit > 0 && near(credit, sqlite3_column_double(st, 6)));
    assert_true(near(credit, sqlite3_column_double(st, 10))); /* its members' hosts' sum */
    assert_true(near(field_num(t, "expavg_credit"), sqlite3_column_double(st, 7)));
    assert_true(near(field_num(t, "expavg_time"), sqlite3_column_double(st, 8)));
    field_is(t, "founder_name", col(st, 9));
    sqlite3_finalize(st);
    assert_true(s->nteams < 8);
    s->teams[s->nteams++] = id;
  }
  assert_int_equal(s->nteams, (int)number(db, "SELECT count(*) FROM teams t JOIN team_credit c "
                                              "ON c.team = t.key WHERE c.credit > 0"));
}

static void check_hosts(sqlite3 *db, xmlDoc *doc, int *nhosts, double *total) {
  long long last = 0;
  int n = 0;
  for (xmlNode *h = element(xmlDocGetRootElement(doc)->children); h; h = element(h->next)) {
    assert_string_equal((const char *)h->name, "host");
    long long id = field_int(h, "id");
    assert_true(id > last);
    last = id;
    sqlite3_stmt *st = row(db, "SELECT v.created, v.account_id, v.credit, v.expavg_credit, "
                               "v.expavg_time, v.host_cpid, coalesce(a.email_key, ''), "
                               "coalesce(o.cores, v.slots), coalesce(o.memory_mib, 0), "
                               "coalesce(o.disk_mib, 0), v.apps, v.banned FROM volunteers v "
                               "LEFT JOIN accounts a ON a.id = v.account_id LEFT JOIN "
                               "volunteer_offers o ON o.volunteer_id = v.id WHERE v.id = ?1", id);
    assert_int_equal(sqlite3_column_int64(st, 11), 0); /* never a banned one */
    assert_int_equal(field_int(h, "create_time"), sqlite3_column_int64(st, 0));
    if (sqlite3_column_type(st, 1) == SQLITE_NULL) {
      field_is(h, "userid", NULL);
    } else {
      assert_int_equal(field_int(h, "userid"), sqlite3_column_int64(st, 1));
    }
    double credit = field_num(h, "total_credit");
    assert_true(credit > 0 && near(credit, sqlite3_column_double(st, 2)));
    *total += credit;
    assert_true(near(field_num(h, "expavg_credit"), sqlite3_column_double(st, 3)));
    assert_true(near(field_num(h, "expavg_time"), sqlite3_column_double(st, 4)));
    char want[33];
    openssl_md5(col(st, 5), col(st, 6), want);
    field_is(h, "host_cpid", want);
    assert_int_equal(field_int(h, "ncpus"), sqlite3_column_int64(st, 7));
    assert_true(near(field_num(h, "m_nbytes"), (double)sqlite3_column_int64(st, 8) * 1048576));
    assert_true(near(field_num(h, "d_total"), (double)sqlite3_column_int64(st, 9) * 1048576));
    field_is(h, "os_name", strstr(col(st, 10), "@linux-x86_64") ? "linux" : "");
    field_is(h, "p_model", "");
    sqlite3_finalize(st);
    n++;
  }
  assert_int_equal(n, (int)number(db, "SELECT count(*) FROM volunteers WHERE credit > 0 AND "
                                      "banned = 0"));
  *nhosts = n;
}

static void check_tables(sqlite3 *db, xmlDoc *doc, const seen *s, int nhosts, double total) {
  xmlNode *t = xmlDocGetRootElement(doc);
  long long at = field_int(t, "update_time");
  assert_true(llabs(at - (long long)time(NULL)) < 600);
  assert_int_equal(field_int(t, "nusers_total"), s->nusers);
  assert_int_equal(field_int(t, "nteams_total"), s->nteams);
  assert_int_equal(field_int(t, "nhosts_total"), nhosts);
  assert_true(near(field_num(t, "total_credit"), total));
  int napps = 0;
  xmlNode *apps = NULL;
  for (xmlNode *c = element(t->children); c; c = element(c->next))
    if (!strcmp((const char *)c->name, "applications"))
      apps = c;
  assert_non_null(apps);
  for (xmlNode *a = element(apps->children); a; a = element(a->next)) {
    char *name = field(a, "name");
    assert_non_null(name);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT 1 FROM jobs WHERE app = ?1", -1, &st, NULL);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    sqlite3_finalize(st);
    free(name);
    napps++;
  }
  assert_int_equal(napps, (int)number(db, "SELECT count(DISTINCT app) FROM jobs"));
}

/* None of these appear in any file: e-mails (as typed and in lower case),
 * cross-project ids, host cpids, host names; nor any '@'. */
static void check_private(sqlite3 *db, char *const text[4]) {
  static const char *const sql[] = {
    "SELECT email FROM accounts", "SELECT email_key FROM accounts",
    "SELECT cross_project_id FROM accounts", "SELECT host_cpid FROM volunteers",
    "SELECT name FROM volunteers"};
  for (size_t q = 0; q < sizeof sql / sizeof sql[0]; q++) {
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql[q], -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
      for (int f = 0; f < 4; f++)
        if (strstr(text[f], col(st, 0)))
          fail_msg("%s shows \"%s\" (%s)", FILES[f], col(st, 0), sql[q]);
    sqlite3_finalize(st);
  }
  for (int f = 0; f < 4; f++)
    assert_null(strchr(text[f], '@'));
}

/* Fetches the four files and checks each against the store at db_path;
 * the gunzipped texts of user, team and host into keep (may be NULL). */
static void check_all(const char *url, const char *db_path, char *keep[3]) {
  sqlite3 *db = open_store(db_path);
  char *text[4];
  for (int f = 0; f < 4; f++)
    text[f] = fetch_text(url, FILES[f], NULL);
  xmlDoc *users = parse(text[1], "users"), *teams = parse(text[2], "teams"),
         *hosts = parse(text[3], "hosts"), *tables = parse(text[0], "tables");
  seen s = {0};
  int nhosts = 0;
  double total = 0;
  check_users(db, users, &s);
  check_teams(db, teams, &s);
  check_hosts(db, hosts, &nhosts, &total);
  check_tables(db, tables, &s, nhosts, total);
  check_private(db, text);
  /* what this run made: Ann and Bob, red and blue, four hosts */
  assert_int_equal(s.nusers, 2);
  assert_int_equal(s.nteams, 2);
  assert_int_equal(nhosts, 4);
  for (int i = 0; i < 4; i++)
    xmlFreeDoc(i == 0 ? users : i == 1 ? teams : i == 2 ? hosts : tables);
  for (int f = 0; f < 4; f++) {
    if (keep && f > 0)
      keep[f - 1] = text[f];
    else
      free(text[f]);
  }
  sqlite3_close(db);
}

/* ---- the scenario ---- */

static long long sign_up(const char *url, const char *name, const char *email, char key[65]) {
  char body[512];
  snprintf(body, sizeof body, "{\"name\": \"%s\", \"email\": \"%s\", \"password\": \"correct "
           "horse\"}", name, email);
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/accounts", NULL, body, strlen(body), &r, NULL, NULL);
  if (st != 201)
    fail_msg("sign-up of %s: %ld %s", email, st, err_message(r));
  snprintf(key, 65, "%s", json_string_value(json_object_get(r, "account_key")));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* Host i (0..4) runs job "a<i>": two tasks that burn a little CPU. */
static void run_hosts(server_fixture *f, const char *ann_key, const char *bob_key) {
  static const char *const team[NHOSTS] = {"red", "red", "blue", NULL, NULL};
  long long jobs[NHOSTS];
  pid_t w[NHOSTS];
  for (int i = 0; i < NHOSTS; i++) {
    char job[512];
    snprintf(job, sizeof job, "{\"app\": \"a%d\", \"tasks\": [{\"id\": \"t1\", \"args\": [\"-c\", "
             "\"i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo $i\"]}, {\"id\": \"t2\", "
             "\"args\": [\"-c\", \"i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done; echo $i\"]}]}",
             i);
    jobs[i] = server_fixture_submit(f, job);
    char app[32], name[32];
    snprintf(app, sizeof app, "a%d=/bin/sh", i);
    snprintf(name, sizeof name, "host-number-%d", i);
    const char *args[12] = {"--app", app, "--exit-when-idle", "2", "--no-sandbox"};
    int n = 5;
    if (i < 3) {
      args[n++] = "--account-key";
      args[n++] = i < 2 ? ann_key : bob_key;
    }
    if (team[i]) {
      args[n++] = "--team";
      args[n++] = team[i];
    }
    w[i] = server_fixture_worker(f, name, args);
    assert_true(w[i] > 0);
  }
  for (int i = 0; i < NHOSTS; i++) {
    int status = harness_wait(w[i], 120);
    server_fixture_reaped(f, w[i]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", jobs[i]);
    json_t *r = server_fixture_get(f, path);
    assert_string_equal(json_string_value(json_object_get(r, "state")), "done");
    json_decref(r);
  }
}

/* The id of the volunteer named name (GET /v1/volunteers). */
static long long volunteer_id(server_fixture *f, const char *name) {
  json_t *r = server_fixture_get(f, "/v1/volunteers"), *v;
  size_t i;
  long long id = 0;
  json_array_foreach(json_object_get(r, "volunteers"), i, v)
    if (!strcmp(json_string_value(json_object_get(v, "name")), name))
      id = (long long)json_integer_value(json_object_get(v, "id"));
  json_decref(r);
  assert_true(id > 0);
  return id;
}

static void expect(const char *url, const char *method, const char *path, const char *token,
                   const char *body, long want, const char *needle) {
  json_t *r = NULL;
  long st = harness_http(url, method, path, token, body, body ? strlen(body) : 0, &r, NULL, NULL);
  if (st != want || (needle && !strstr(err_message(r), needle)))
    fail_msg("%s %s: %ld \"%s\" (wanted %ld naming \"%s\")", method, path, st, err_message(r),
             want, needle ? needle : "");
  json_decref(r);
}

/* The teams of accounts, with SQL on the stopped master's store. */
static void make_teams(const char *db_path, long long ann, long long bob, long long cyd,
                       long long platform_host) {
  sqlite3 *db = open_store(db_path);
  char sql[2048];
  snprintf(sql, sizeof sql,
           "INSERT INTO teams(id, key, name, founder, created, description, url, country) VALUES "
           "(1, 'red', 'Red & Co', %lld, 1700000000, 'We <3 \"science\"', "
           "'https://red.example/', 'Norway'), (2, 'blue', 'Blue', %lld, 1700000100, '', '', ''), "
           "(3, 'green', 'Green', %lld, 1700000200, '', '', '');"
           "UPDATE accounts SET team_id = 1, country = 'Norway' WHERE id = %lld;"
           "UPDATE accounts SET team_id = 2 WHERE id = %lld;"
           "UPDATE accounts SET team_id = 3 WHERE id = %lld;"
           "UPDATE volunteers SET apps = '[\"a0\", \"@linux-x86_64\"]' WHERE id = %lld;",
           ann, bob, cyd, ann, bob, cyd, platform_host);
  exec(db, sql);
  sqlite3_close(db);
}

/* ---- atomicity: exports asked for again and again while files are read ---- */

typedef struct asker {
  const char *url;
  int rounds, failures;
  atomic_int done;
} asker;

static void *ask_exports(void *arg) {
  asker *a = arg;
  for (int i = 0; i < a->rounds; i++) {
    json_t *r = NULL;
    long st = harness_http(a->url, "POST", "/v1/stats/export", ADMIN, NULL, 0, &r, NULL, NULL);
    long long n = json_integer_value(json_object_get(r, "export"));
    json_decref(r);
    a->failures += st != 202;
    for (int k = 0; k < 500; k++) { /* until it ended */
      r = NULL;
      harness_http(a->url, "GET", "/v1/stats/export", ADMIN, NULL, 0, &r, NULL, NULL);
      long long ended = json_integer_value(json_object_get(r, "exports"));
      json_decref(r);
      if (ended >= n)
        break;
      usleep(5000);
    }
  }
  atomic_store(&a->done, 1);
  return NULL;
}

static void check_whole_during_exports(const char *url) {
  asker a = {.url = url, .rounds = 30};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, ask_exports, &a), 0);
  int reads = 0;
  while (!atomic_load(&a.done) || reads < 20) {
    const char *file = FILES[1 + reads % 3];
    char *text = fetch_text(url, file, ADMIN); /* fails unless one whole gzip stream */
    xmlDoc *d = parse(text, reads % 3 == 0 ? "users" : reads % 3 == 1 ? "teams" : "hosts");
    int n = 0;
    for (xmlNode *r = element(xmlDocGetRootElement(d)->children); r; r = element(r->next))
      n++;
    assert_int_equal(n, reads % 3 == 2 ? 4 : 2); /* every record, every time */
    xmlFreeDoc(d);
    free(text);
    reads++;
  }
  pthread_join(t, NULL);
  assert_int_equal(a.failures, 0);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "GET", "/v1/stats/export", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  assert_true(json_integer_value(json_object_get(r, "exports")) >= 31);
  assert_true(json_is_null(json_object_get(r, "error")));
  json_decref(r);
  fprintf(stderr, "%d reads of whole files during 30 exports\n", reads);
}

/* ---- headers and conditional requests, with curl ---- */

static void check_headers(const char *url) {
  char target[512], *out = NULL;
  snprintf(target, sizeof target, "%s/stats/user.gz", url);
  const char *head[] = {"/usr/bin/curl", "-s", "-D", "-", "-o", "/dev/null", target, NULL};
  assert_int_equal(harness_run(head, &out), 0);
  assert_non_null(strstr(out, "Content-Type: application/gzip"));
  char *etag = strstr(out, "ETag: "), *lm = strstr(out, "Last-Modified: ");
  assert_non_null(etag);
  assert_non_null(lm);
  char inm[128], ims[128];
  snprintf(inm, sizeof inm, "If-None-Match: %.*s", (int)strcspn(etag + 6, "\r\n"), etag + 6);
  snprintf(ims, sizeof ims, "If-Modified-Since: %.*s", (int)strcspn(lm + 15, "\r\n"), lm + 15);
  free(out);
  const char *const conds[] = {inm, ims};
  for (int i = 0; i < 2; i++) {
    const char *get[] = {"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                         conds[i], target, NULL};
    assert_int_equal(harness_run(get, &out), 0);
    if (strcmp(out, "304"))
      fail_msg("GET /stats/user.gz with %s: %s, wanted 304", conds[i], out);
    free(out);
  }
  snprintf(target, sizeof target, "%s/stats/tables.xml", url);
  const char *tab[] = {"/usr/bin/curl", "-s", "-I", target, NULL};
  assert_int_equal(harness_run(tab, &out), 0);
  assert_non_null(strstr(out, "Content-Type: application/xml"));
  free(out);
}

static void test_xmlstats(void **state) {
  (void)state;
  server_fixture f;
  const char *const manual[] = {"--stats-export-hours", "0", NULL};
  assert_int_equal(server_fixture_open(&f, manual, 1), 0);
  const char *url = f.srv.url;

  /* nothing exported yet; bad requests */
  for (int i = 0; i < 4; i++) {
    char path[64];
    snprintf(path, sizeof path, "/stats/%s", FILES[i]);
    expect(url, "GET", path, NULL, NULL, 404, "no statistics exported yet");
  }
  expect(url, "GET", "/stats/users.xml", NULL, NULL, 404, "tables.xml, user.gz");
  expect(url, "GET", "/v1/stats/export", NULL, NULL, 401, NULL);
  expect(url, "POST", "/v1/stats/export", NULL, "{}", 401, NULL);
  expect(url, "POST", "/v1/stats/export", ADMIN, "{\"now\": true}", 400, "\"now\"");
  expect(url, "PUT", "/v1/stats/export", ADMIN, "{}", 405, NULL);
  expect(url, "POST", "/stats/user.gz", NULL, "", 405, NULL);

  /* accounts, hosts, credit */
  char ann_key[65], bob_key[65], cyd_key[65];
  long long ann = sign_up(url, "Ann & <Co>", "Ann.Lee@Example.org", ann_key);
  long long bob = sign_up(url, "Bob 'the builder'", "bob@example.net", bob_key);
  long long cyd = sign_up(url, "Cyd", "cyd@example.com", cyd_key);
  run_hosts(&f, ann_key, bob_key);
  long long banned = volunteer_id(&f, "host-number-4");
  expect(url, "GET", "/stats/user.gz", NULL, NULL, 404, "no statistics exported yet");
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", banned);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", path, ADMIN, "{}", 2, &r, NULL, NULL), 200);
  json_decref(r);
  long long platform_host = volunteer_id(&f, "host-number-0");
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  make_teams(f.db, ann, bob, cyd, platform_host);
  assert_int_equal(server_fixture_restart(&f, manual), 0);
  url = f.srv.url;

  /* an export asked for with the CLI, then every file checked */
  char cli[4096], *out = NULL;
  harness_bin(cli, sizeof cli, "cairn");
  const char *ask[] = {cli, "stats", "export", "--server", url, "--token", ADMIN, NULL};
  assert_int_equal(harness_run(ask, &out), 0);
  assert_non_null(strstr(out, "export 1: 2 users, 2 teams, 4 hosts"));
  free(out);
  check_all(url, f.db, NULL);
  check_headers(url);
  check_whole_during_exports(url);

  /* a restart serves the files at once; a schedule of 5.4 s exports again */
  size_t n;
  char *before = fetch(url, "/stats/tables.xml", NULL, &n);
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  const char *sched[] = {"--stats-export-hours", "0.0015", NULL};
  assert_int_equal(server_fixture_restart(&f, sched), 0);
  url = f.srv.url;
  char *after = fetch(url, "/stats/tables.xml", NULL, &n);
  assert_string_equal(before, after); /* the same file, before any export */
  free(after);
  double until = harness_now() + 60;
  while (harness_now() < until) {
    after = fetch(url, "/stats/tables.xml", NULL, &n);
    int same = strcmp(before, after) == 0; /* its update_time moved */
    free(after);
    if (!same)
      break;
    usleep(250 * 1000);
  }
  assert_true(harness_now() < until);
  r = server_fixture_get(&f, "/v1/stats/export");
  assert_true(json_integer_value(json_object_get(r, "exports")) >= 1);
  assert_true(near(json_real_value(json_object_get(r, "every_hours")), 0.0015));
  assert_true(json_integer_value(json_object_get(r, "next")) > (json_int_t)time(NULL) - 5);
  json_decref(r);
  free(before);
  char *served[3];
  check_all(url, f.db, served);

  /* the same records from the database file, the master stopped */
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  char dir[4300];
  snprintf(dir, sizeof dir, "%s/offline", f.dir);
  const char *offline[] = {cli, "stats", "export", "--db", f.db, "--out", dir, NULL};
  assert_int_equal(harness_run(offline, &out), 0);
  assert_non_null(strstr(out, "2 users, 2 teams, 4 hosts"));
  free(out);
  for (int i = 0; i < 3; i++) {
    char file[4400], *gz = NULL;
    snprintf(file, sizeof file, "%s/%s", dir, FILES[i + 1]);
    FILE *fp = fopen(file, "rb");
    assert_non_null(fp);
    size_t cap = 1 << 20, len = 0;
    gz = malloc(cap);
    len = fread(gz, 1, cap, fp);
    fclose(fp);
    char *text = gunzip(gz, len, &n);
    assert_non_null(text);
    assert_string_equal(text, served[i]);
    free(text);
    free(gz);
    free(served[i]);
  }
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "'%s' stats export --db '%s/none.db' 2>&1", cli, f.dir);
  const char *missing[] = {"/bin/sh", "-c", cmd, NULL};
  assert_int_equal(harness_run(missing, &out), 1);
  assert_non_null(strstr(out, "cannot open the database"));
  assert_non_null(strstr(out, "none.db"));
  free(out);
  assert_int_equal(server_fixture_restart(&f, manual), 0);
  assert_int_equal(server_fixture_close(&f), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_xmlstats)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  xmlCleanupParser();
  return rc;
}

#else /* no libxml2 */

int main(void) {
  printf("skipped: libxml2 (libxml2-dev) is not installed: the exports cannot be parsed as a "
         "statistics site would (make check installs it)\n");
  return 77;
}

#endif
