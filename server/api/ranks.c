/* ranks.c — the public pages' rendering (ranks.h): built from slices of
 * the core's state (core/roster.h), sorted, the first CAIRN__RANKS_MAX
 * rows of each order kept; a page rendered from it per request. */
#include "server/api/ranks.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/api/api.h"

static const char *const kind_names[3] = {"accounts", "teams", "hosts"};

static void ranking_free(cairn__ranking *k) {
  for (size_t i = 0; i < k->nrows; i++)
    cairn__roster_free(&k->rows[i]);
  free(k->rows);
  free(k->order[0]);
  free(k->order[1]);
}

static void ranks_free(cairn__ranks *r) {
  for (int i = 0; i < 3; i++)
    ranking_free(&r->kind[i]);
  free(r->home);
  free(r);
}

void cairn__ranks_put(cairn__ranks *r) {
  if (r && atomic_fetch_sub(&r->refs, 1) == 1)
    ranks_free(r);
}

/* Every row of kind, a slice a hold of c->lock, appended to *rows (*n of
 * them, *cap allocated): 0, or -1 out of memory. */
static int copy_all(cairn__core *c, int kind, double now, cairn__roster_row **rows, size_t *n) {
  size_t cap = 0;
  for (size_t from = 0;;) {
    if (*n + CAIRN__ROSTER_SLICE > cap) {
      size_t ncap = cap ? 2 * cap : 4 * CAIRN__ROSTER_SLICE;
      cairn__roster_row *nr = realloc(*rows, ncap * sizeof *nr);
      if (!nr)
        return -1;
      *rows = nr;
      cap = ncap;
    }
    size_t end = 0;
    long got = cairn__core_roster(c, kind, from, CAIRN__ROSTER_SLICE, now, *rows + *n, &end);
    if (got < 0)
      return -1;
    *n += (size_t)got;
    if (end < from + CAIRN__ROSTER_SLICE)
      return 0;
    from = end;
  }
}

/* The orders: more first, then the smaller id. */
static int cmp_total(const void *a, const void *b, void *ud) {
  const cairn__roster_row *x = (const cairn__roster_row *)ud + *(const uint32_t *)a;
  const cairn__roster_row *y = (const cairn__roster_row *)ud + *(const uint32_t *)b;
  return x->credit != y->credit ? (x->credit < y->credit ? 1 : -1)
                                : (x->id > y->id) - (x->id < y->id);
}

static int cmp_recent(const void *a, const void *b, void *ud) {
  const cairn__roster_row *x = (const cairn__roster_row *)ud + *(const uint32_t *)a;
  const cairn__roster_row *y = (const cairn__roster_row *)ud + *(const uint32_t *)b;
  return x->recent != y->recent ? (x->recent < y->recent ? 1 : -1)
                                : (x->id > y->id) - (x->id < y->id);
}

/* k from rows[0..n) (taken): both orders sorted, their first
 * CAIRN__RANKS_MAX kept, the rows neither keeps freed. 0, or -1 out of
 * memory (rows freed). O(n log n). */
static int rank(cairn__ranking *k, cairn__roster_row *rows, size_t n) {
  uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
  int (*const cmp[2])(const void *, const void *, void *) = {cmp_total, cmp_recent};
  int bad = !pos;
  for (int o = 0; o < 2 && !bad; o++) {
    if (!(k->order[o] = malloc((n ? n : 1) * sizeof *k->order[o]))) {
      bad = 1;
      break;
    }
    for (size_t i = 0; i < n; i++)
      k->order[o][i] = (uint32_t)i;
    qsort_r(k->order[o], n, sizeof *k->order[o], cmp[o], rows);
    k->norder[o] = n < CAIRN__RANKS_MAX ? n : CAIRN__RANKS_MAX;
  }
  size_t kept = 0;
  for (size_t i = 0; !bad && i < n; i++)
    pos[i] = UINT32_MAX;
  for (int o = 0; o < 2 && !bad; o++)
    for (size_t i = 0; i < k->norder[o]; i++)
      if (pos[k->order[o][i]] == UINT32_MAX)
        pos[k->order[o][i]] = (uint32_t)kept++;
  if (!bad && !(k->rows = malloc((kept ? kept : 1) * sizeof *k->rows)))
    bad = 1;
  for (size_t i = 0; i < n; i++)
    if (!bad && pos[i] != UINT32_MAX)
      k->rows[pos[i]] = rows[i];
    else
      cairn__roster_free(&rows[i]);
  free(rows);
  k->nrows = bad ? 0 : kept;
  for (int o = 0; o < 2 && !bad; o++)
    for (size_t i = 0; i < k->norder[o]; i++)
      k->order[o][i] = pos[k->order[o][i]];
  free(pos);
  return bad ? -1 : 0;
}

/* The project's totals from the hosts (not banned): those seen in the
 * last day, and the sum of their averaged credit (credit a day); the
 * banned ones' rows freed. */
static size_t hosts_totals(cairn__roster_row *rows, size_t n, double now, int64_t *active,
                           double *day) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].banned) {
      cairn__roster_free(&rows[i]);
      continue;
    }
    *active += rows[i].last_seen >= (int64_t)now - 86400;
    *day += rows[i].recent;
    rows[kept++] = rows[i];
  }
  return kept;
}

/* The jobs' part of home: their tasks done (all jobs), and with jobs
 * (NULL: not shown) the newest CAIRN__RANKS_JOBS, newest first. 0, or -1
 * out of memory. A slice of jobs a hold of c->lock. */
static int jobs_of(cairn__core *c, int64_t *done, json_t *jobs) {
  cairn__roster_job *slice = malloc(CAIRN__ROSTER_SLICE * sizeof *slice);
  json_t *ring[CAIRN__RANKS_JOBS] = {NULL}; /* the newest so far, oldest overwritten */
  size_t seen = 0;
  int bad = !slice;
  for (size_t from = 0, end = 0; !bad; from = end) {
    long got = cairn__core_roster_jobs(c, from, CAIRN__ROSTER_SLICE, slice, &end);
    bad = got < 0;
    for (long i = 0; i < got; i++) {
      *done += slice[i].done;
      if (jobs && !bad) {
        json_t **at = &ring[seen++ % CAIRN__RANKS_JOBS];
        json_decref(*at);
        *at = json_pack("{s:I, s:s, s:s, s:I, s:I}", "id", (json_int_t)slice[i].id, "name",
                        slice[i].name, "state", slice[i].state, "tasks",
                        (json_int_t)slice[i].tasks, "done", (json_int_t)slice[i].done);
        bad = !*at;
      }
      free(slice[i].name);
    }
    if (bad || end < from + CAIRN__ROSTER_SLICE)
      break;
  }
  size_t n = seen < CAIRN__RANKS_JOBS ? seen : CAIRN__RANKS_JOBS;
  for (size_t i = 0; i < n; i++) { /* newest first */
    json_t *j = ring[(seen - 1 - i) % CAIRN__RANKS_JOBS];
    if (!bad && json_array_append(jobs, j))
      bad = 1;
  }
  for (size_t i = 0; i < CAIRN__RANKS_JOBS; i++)
    json_decref(ring[i]);
  free(slice);
  return bad ? -1 : 0;
}

/* The body of GET /v1/public/home into r: 0, or -1 out of memory. */
static int home(cairn_master *m, cairn__ranks *r, int64_t accounts, int64_t active,
                double day) {
  int64_t done = 0;
  json_t *jobs = m->cfg.public_jobs ? json_array() : NULL;
  json_t *o = NULL;
  if ((!m->cfg.public_jobs || jobs) && jobs_of(m->core, &done, jobs) == 0)
    o = json_pack("{s:{s:s, s:s, s:o}, s:{s:I, s:I, s:I, s:f}}", "project", "name",
                  m->project_name, "description", m->project_description, "public_key",
                  *m->app_key_b64 ? json_string(m->app_key_b64) : json_null(), "totals", "accounts",
                  (json_int_t)accounts, "hosts_active_day", (json_int_t)active, "tasks_done",
                  (json_int_t)done, "credit_day", day);
  if (o && jobs)
    json_object_set(o, "jobs", jobs);
  json_decref(jobs);
  r->home = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  r->home_len = r->home ? strlen(r->home) : 0;
  return r->home ? 0 : -1;
}

static void *build(cairn_master *m, cairn_error *err) {
  cairn__ranks *r = calloc(1, sizeof *r);
  if (!r) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  atomic_init(&r->refs, 1);
  double now = (double)time(NULL);
  int64_t accounts = 0, active = 0;
  double day = 0;
  int bad = 0;
  for (int kind = 0; kind < 3 && !bad; kind++) {
    cairn__roster_row *rows = NULL;
    size_t n = 0;
    bad = copy_all(m->core, kind, now, &rows, &n);
    if (kind == CAIRN__ROSTER_ACCOUNTS)
      accounts = (int64_t)n;
    if (kind == CAIRN__ROSTER_HOSTS)
      n = hosts_totals(rows, n, now, &active, &day);
    if (bad) {
      for (size_t i = 0; i < n; i++)
        cairn__roster_free(&rows[i]);
      free(rows);
    } else
      bad = rank(&r->kind[kind], rows, n);
  }
  if (bad || home(m, r, accounts, active, day)) {
    ranks_free(r);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory building the public pages' ranks");
    return NULL;
  }
  return r;
}

static void hold(void *r) { atomic_fetch_add(&((cairn__ranks *)r)->refs, 1); }

static void put(void *r) { cairn__ranks_put(r); }

const cairn__renderer_ops cairn__ranks_ops = {
  .what = "public pages' ranks", .build = build, .same = NULL, .hold = hold, .put = put,
  .refresh = CAIRN__RANKS_REFRESH_SECONDS, .cold = CAIRN__RANKS_COLD_SECONDS,
  .wait = CAIRN__RANKS_WAIT_SECONDS};

/* {"id", "name"} of id and name, or null when id is 0. */
static json_t *ref(int64_t id, const char *name) {
  return id ? json_pack("{s:I, s:s}", "id", (json_int_t)id, "name", name ? name : "")
            : json_null();
}

static json_t *row_json(int kind, const cairn__roster_row *x, size_t rank) {
  json_t *o = json_pack("{s:I, s:I, s:s, s:f, s:f}", "rank", (json_int_t)rank, "id",
                        (json_int_t)x->id, "name", x->name ? x->name : "", "credit", x->credit,
                        "expavg_credit", x->recent);
  if (o && kind != CAIRN__ROSTER_TEAMS)
    json_object_set_new(o, "team", ref(x->team, x->team_name));
  if (o && kind == CAIRN__ROSTER_HOSTS)
    json_object_set_new(o, "account", ref(x->account, x->account_name));
  if (o && kind == CAIRN__ROSTER_TEAMS)
    json_object_set_new(o, "members", json_integer(x->members));
  return o;
}

char *cairn__ranks_page(const cairn__ranks *r, int kind, int by, long page) {
  const cairn__ranking *k = &r->kind[kind];
  size_t n = k->norder[by], pages = n ? (n + CAIRN__RANKS_PAGE - 1) / CAIRN__RANKS_PAGE : 1;
  json_t *rows = json_array();
  size_t first = (size_t)(page - 1) * CAIRN__RANKS_PAGE;
  for (size_t i = first; rows && i < n && i < first + CAIRN__RANKS_PAGE; i++)
    if (json_array_append_new(rows, row_json(kind, &k->rows[k->order[by][i]], i + 1))) {
      json_decref(rows);
      rows = NULL;
    }
  json_t *o = rows ? json_pack("{s:s, s:s, s:I, s:I, s:o}", "kind", kind_names[kind], "by",
                               by == CAIRN__BY_RECENT ? "recent" : "total", "page",
                               (json_int_t)page, "pages", (json_int_t)pages, "rows", rows)
                   : NULL;
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return s;
}
