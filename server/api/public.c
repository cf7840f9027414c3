/* public.c — the data of the project's public pages (docs/protocol.md,
 * "Public pages"), without authentication and never an e-mail:
 *
 * GET /v1/public/home and GET /v1/public/top/{kind}?by=&page= are served
 * from the rendering of ranks.c (rebuilt in the background while read:
 * renderer.h), O(the page) a request, never a scan of the population.
 *
 * GET /v1/public/accounts/{id}: the account as its own reading shows it
 * (core/accounts.h: O(its hosts) under c->lock, at most
 * CAIRN__ACCOUNT_HOSTS) without the e-mail, and its hosts' newest
 * PUBLIC_RESULTS results, read from the store (never under c->lock) for its
 * PUBLIC_HOSTS hosts seen last: at most PUBLIC_HOSTS × PUBLIC_RESULTS rows.
 * Each such request spends one of its address's anonymous tokens (the
 * route's RF_SPEND_ANON). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"
#include "server/api/ranks.h"
#include "server/core/accounts.h"
#include "server/core/roster.h"

#define PUBLIC_RESULTS 50
#define PUBLIC_HOSTS 16
#define PAGE_MAX 1000000 /* ?page= at most (pages past the last have no rows) */

/* A reference to the public rendering, or NULL with the error in rs. */
static cairn__ranks *take(cairn_master *m, cairn__resp *rs) {
  cairn_error err = {0};
  double age = 0;
  cairn__ranks *r = m->ranks ? cairn__renderer_take(m->ranks, &age, &err) : NULL;
  if (!r && !m->ranks)
    cairn__api_failf(rs, CAIRN_EIO, "the public pages are not served");
  else if (!r)
    cairn__api_fail(rs, &err);
  return r;
}

void cairn__public_home(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  (void)rq;
  cairn__ranks *r = take(m, rs);
  if (!r)
    return;
  if ((rs->body = malloc(r->home_len + 1))) {
    memcpy(rs->body, r->home, r->home_len + 1);
    rs->len = r->home_len;
    rs->status = 200;
    rs->ctype = "application/json";
  } else
    cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  cairn__ranks_put(r);
}

void cairn__public_top(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *k = rq->path + strlen("/v1/public/top/");
  int kind = !strcmp(k, "accounts") ? CAIRN__ROSTER_ACCOUNTS
             : !strcmp(k, "teams")  ? CAIRN__ROSTER_TEAMS
             : !strcmp(k, "hosts")  ? CAIRN__ROSTER_HOSTS
                                    : -1;
  const char *by = rq->arg_by ? rq->arg_by : "total";
  const char *end = NULL;
  int64_t page = rq->arg_page ? cairn__api_id(rq->arg_page, &end) : 1;
  if (kind < 0)
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no ranking of \"%.64s\": accounts, teams or "
                            "hosts", k);
  if (strcmp(by, "total") != 0 && strcmp(by, "recent") != 0)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"by\" must be total or recent");
  if (page < 1 || page > PAGE_MAX || (end && *end))
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"page\" must be a whole number from 1 to %d",
                            PAGE_MAX);
  cairn__ranks *r = take(m, rs);
  if (!r)
    return;
  char *body = cairn__ranks_page(r, kind, !strcmp(by, "recent"), (long)page);
  cairn__ranks_put(r);
  if (!body)
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  rs->body = body;
  rs->len = strlen(body);
  rs->status = 200;
  rs->ctype = "application/json";
}

/* The results gathered for an account's page. */
typedef struct results_ctx {
  json_t *list;
} results_ctx;

static int result_row(void *ud, const cairn__store_host_result *r) {
  results_ctx *x = ud;
  json_t *e = json_pack("{s:I, s:I, s:s, s:s, s:f, s:I}", "idx", (json_int_t)r->idx, "job",
                        (json_int_t)r->job, "task", r->task, "outcome", r->outcome, "credit",
                        r->credit, "received", (json_int_t)r->received);
  return e ? json_array_append_new(x->list, e) : -1;
}

static int by_last_seen(const void *a, const void *b) {
  json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "last_seen"));
  json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "last_seen"));
  return (x < y) - (x > y); /* the latest first */
}

static int by_received(const void *a, const void *b) {
  json_t *const *x = a, *const *y = b;
  json_int_t rx = json_integer_value(json_object_get(*x, "received"));
  json_int_t ry = json_integer_value(json_object_get(*y, "received"));
  json_int_t ix = json_integer_value(json_object_get(*x, "idx"));
  json_int_t iy = json_integer_value(json_object_get(*y, "idx"));
  return rx != ry ? (rx < ry) - (rx > ry) : (ix < iy) - (ix > iy); /* newest first */
}

/* The newest PUBLIC_RESULTS results of the PUBLIC_HOSTS hosts of hosts
 * seen last, newest first: an array, or NULL with err set. */
static json_t *newest_results(cairn_master *m, json_t *hosts, cairn_error *err) {
  size_t n = json_array_size(hosts), k = 0;
  json_t **h = malloc((n ? n : 1) * sizeof *h), *all = json_array(), *out = json_array();
  results_ctx x = {all};
  int ok = h && all && out;
  for (size_t i = 0; ok && i < n; i++)
    h[i] = json_array_get(hosts, i);
  if (ok)
    qsort(h, n, sizeof *h, by_last_seen);
  for (size_t i = 0; ok && i < n && i < PUBLIC_HOSTS; i++)
    ok = cairn__core_host_results(m->core, json_integer_value(json_object_get(h[i], "id")),
                                  PUBLIC_RESULTS, result_row, &x, err) == CAIRN_OK;
  json_t **r = ok ? malloc((json_array_size(all) + 1) * sizeof *r) : NULL;
  ok = ok && r;
  for (size_t i = 0; ok && i < json_array_size(all); i++)
    r[k++] = json_array_get(all, i);
  if (ok)
    qsort(r, k, sizeof *r, by_received);
  for (size_t i = 0; ok && i < k && i < PUBLIC_RESULTS; i++)
    ok = json_array_append(out, r[i]) == 0;
  free(h);
  free(r);
  json_decref(all);
  if (ok)
    return out;
  json_decref(out);
  if (!err->status)
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return NULL;
}

void cairn__public_account(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *s = rq->path + strlen("/v1/public/accounts/"), *end = NULL;
  int64_t id = cairn__api_id(s, &end);
  if (id < 0 || *end)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\" is not an account id", s);
  cairn_error err = {0};
  json_t *o = cairn__core_account_json(m->core, id, 0, &err), *results = NULL;
  if (o && (results = newest_results(m, json_object_get(o, "hosts"), &err))) {
    json_object_del(o, "cpu_seconds"); /* what the page shows: the contract's fields */
    json_object_del(o, "expavg_time");
    json_object_set_new(o, "results", results);
    return cairn__api_json(rs, 200, o);
  }
  json_decref(o);
  cairn__api_fail(rs, &err);
}
