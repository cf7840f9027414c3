/* cmd_audit.c — cairn audit index N | audit volunteer V, cairn ban V and cairn release V;
 * cairn audit verify | export (cmd_chain.c) and prove | check (cmd_auditlog.c) go on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/termsafe.h"
#include "cli/client.h"

static int positive(const char *s, long long *out) {
  char *end = NULL;
  *out = strtoll(s, &end, 10);
  return *s && !*end && *out > 0 ? 0 : -1;
}

/* Member k of o as text safe for a terminal (common/termsafe.h), "-" when
 * absent. The result lives until STR_SLOTS more calls (one printf's worth). */
#define STR_SLOTS 8
static const char *str(json_t *o, const char *k) {
  static char slots[STR_SLOTS][CAIRN_TERMSAFE_NAME];
  static unsigned next;
  const char *s = json_string_value(json_object_get(o, k));
  char *out = slots[next++ % STR_SLOTS];
  return s ? cairn__termsafe(s, out, sizeof slots[0]) : "-";
}

static long long num(json_t *o, const char *k) {
  return (long long)json_integer_value(json_object_get(o, k));
}

static void print_json(json_t *r) {
  char *s = json_dumps(r, JSON_INDENT(2));
  puts(s ? s : "{}");
  free(s);
}

/* "volunteer V (NAME, cluster C): trust T[, trusted][, quarantined][, banned]" */
static void print_volunteer(json_t *v) {
  printf("volunteer %lld (%s, cluster %s): trust %lld%s%s%s\n", num(v, "id"), str(v, "name"),
         str(v, "cluster"), num(v, "trust"),
         json_is_true(json_object_get(v, "trusted")) ? ", trusted" : "",
         json_is_true(json_object_get(v, "quarantined")) ? ", quarantined" : "",
         json_is_true(json_object_get(v, "banned")) ? ", banned" : "");
}

static int audit_index(cairn__http *h, long long n, int as_json) {
  char path[64];
  snprintf(path, sizeof path, "/v1/audit/index/%lld", n);
  json_t *r = NULL;
  long st = cairn__client_json(h, "GET", path, NULL, &r, 0);
  if (st != 200) {
    json_decref(r);
    return 1;
  }
  if (as_json) {
    print_json(r);
  } else {
    json_t *v = json_object_get(r, "volunteer");
    printf("index %lld = %s(x=%lld, t=%lld)\n", n, str(r, "family"), num(r, "row"), num(r, "t"));
    if (json_is_object(v))
      print_volunteer(v);
    else
      printf("no volunteer has row %lld\n", num(r, "row"));
    if (!json_is_true(json_object_get(r, "allocated"))) {
      printf("never allocated\n");
    } else {
      json_t *res = json_object_get(r, "result");
      printf("job %lld task %s (round %lld), issued %lld, lease %s\n", num(r, "job"),
             str(r, "task"), num(r, "round"), num(r, "issued"), str(r, "lease_state"));
      if (json_is_object(res))
        printf("result: exit %lld, %s, sha256 %s, received %lld\n", num(res, "exit_status"),
               str(res, "outcome"), str(res, "digest"), num(res, "received"));
      else
        printf("result: none\n");
      char rleaf[24] = "-"; /* the audit log's leaves (cairn audit prove N) */
      if (json_object_get(res, "leaf_index"))
        snprintf(rleaf, sizeof rleaf, "%lld", num(res, "leaf_index"));
      if (json_object_get(r, "leaf_index"))
        printf("audit log: allocation leaf %lld, result leaf %s\n", num(r, "leaf_index"), rleaf);
    }
  }
  json_decref(r);
  return 0;
}

static int audit_volunteer(cairn__http *h, long long id, int as_json) {
  char path[64];
  snprintf(path, sizeof path, "/v1/audit/volunteers/%lld", id);
  json_t *r = NULL;
  long st = cairn__client_json(h, "GET", path, NULL, &r, 0);
  if (st != 200) {
    json_decref(r);
    return 1;
  }
  if (as_json) {
    print_json(r);
  } else {
    print_volunteer(json_object_get(r, "volunteer"));
    printf("%-6s %-12s %-6s %-20s %-9s %s\n", "T", "INDEX", "JOB", "TASK", "LEASE", "OUTCOME");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(r, "allocations"), i, a) {
      json_t *res = json_object_get(a, "result");
      printf("%-6lld %-12lld %-6lld %-20s %-9s %s\n", num(a, "t"), num(a, "index"), num(a, "job"),
             str(a, "task"), str(a, "lease_state"),
             json_is_object(res) ? str(res, "outcome") : "-");
    }
  }
  json_decref(r);
  return 0;
}

int cairn__cmd_audit(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "verify") == 0 || strcmp(argv[1], "export") == 0))
    return cairn__cmd_audit_chain(argc - 1, argv + 1);
  if (argc > 1 && (strcmp(argv[1], "prove") == 0 || strcmp(argv[1], "check") == 0))
    return cairn__cmd_audit_log(argc - 1, argv + 1);
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn audit index N [--json]       who computed index N: volunteer (its trust,\n"
         "                                          quarantine, ban), row x, t, job, task, result\n"
         "       cairn audit volunteer V [--json]   V (trust, quarantine, ban), then its\n"
         "                                          allocations in order: t, index, job, task,\n"
         "                                          outcome\n"
         "       cairn audit verify | export ...    the tamper-evident audit trail\n"
         "                                          (cairn audit verify --help)\n"
         "       cairn audit prove | check ...      the audit log every volunteer can check:\n"
         "                                          proofs, receipts (cairn audit prove --help)");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  int as_json = 0, n = 0;
  const char *pos[2] = {NULL, NULL};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0)
      as_json = 1;
    else if (n < 2)
      pos[n++] = argv[i];
    else
      n = 3;
  }
  long long key;
  if (n != 2 || positive(pos[1], &key) ||
      (strcmp(pos[0], "index") != 0 && strcmp(pos[0], "volunteer") != 0))
    return cairn__cli_fail("usage: cairn audit index N | cairn audit volunteer V");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  int rc = strcmp(pos[0], "index") == 0 ? audit_index(h, key, as_json)
                                        : audit_volunteer(h, key, as_json);
  cairn__http_delete(h);
  return rc;
}

int cairn__cmd_ban(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn ban V [--reason TEXT]\n"
         "Bans volunteer V: its token is refused, its results become invalid, and every task\n"
         "that relied on them, with all descendants that used their outputs, is re-queued.");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  const char *reason = "";
  long long id = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reason") == 0 && i + 1 < argc)
      reason = argv[++i];
    else if (!id && positive(argv[i], &id) == 0)
      continue;
    else
      return cairn__cli_fail("usage: cairn ban V [--reason TEXT]");
  }
  if (!id)
    return cairn__cli_fail("usage: cairn ban V [--reason TEXT]");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", id);
  json_t *body = json_pack("{s:s}", "reason", reason), *r = NULL;
  char *b = json_dumps(body, JSON_COMPACT);
  json_decref(body);
  long st = cairn__client_json(h, "POST", path, b, &r, 0);
  free(b);
  int rc = 1;
  if (st == 200) {
    printf("volunteer %lld banned: %lld results invalid, %lld tasks and %lld descendants "
           "re-queued\n", id, num(r, "results_invalidated"), num(r, "tasks_requeued"),
           num(r, "descendants_requeued"));
    rc = 0;
  }
  json_decref(r);
  cairn__http_delete(h);
  return rc;
}

int cairn__cmd_release(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn release V\n"
         "Ends volunteer V's quarantine: it gets work again, and its window of recent\n"
         "results starts empty.");
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  long long id = 0;
  if (argc != 2 || positive(argv[1], &id))
    return cairn__cli_fail("usage: cairn release V");
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld/release", id);
  json_t *r = NULL;
  long st = cairn__client_json(h, "POST", path, "{}", &r, 0);
  int rc = 1;
  if (st == 200) {
    printf("volunteer %lld released\n", id);
    rc = 0;
  }
  json_decref(r);
  cairn__http_delete(h);
  return rc;
}
