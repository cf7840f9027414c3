/* cmd_invite.c — `cairn invite` and `cairn invitations`: the invitation
 * codes of a master whose registration is by invitation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/limits.h"
#include "common/termsafe.h"

static long long num(json_t *o, const char *key) {
  return (long long)json_integer_value(json_object_get(o, key));
}

/* Unix seconds t as "YYYY-MM-DD HH:MM UTC". */
static const char *utc(long long t, char *out, size_t len) {
  time_t tt = (time_t)t;
  struct tm tm;
  if (!gmtime_r(&tt, &tm) || !strftime(out, len, "%Y-%m-%d %H:%M UTC", &tm))
    snprintf(out, len, "%lld", t);
  return out;
}

static const char invite_usage[] =
  "usage: cairn invite [--uses N] [--expires DAYS] [--note TEXT]\n"
  "Creates an invitation for a master started with --registration invite and prints\n"
  "its code (shown only now) on standard output. A worker registers with it through\n"
  "--invitation-file or $CAIRN_INVITATION.\n"
  "  --uses N        registrations the code allows (default 1)\n"
  "  --expires DAYS  days until it expires (default 7; decimals allowed)\n"
  "  --note TEXT     a note shown by `cairn invitations`";

int cairn__cmd_invite(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts(invite_usage);
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  long long uses = 1;
  double days = CAIRN_DEFAULT_INVITATION_SECONDS / 86400.0;
  const char *note = "";
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    errno = 0;
    if (strcmp(argv[i], "--uses") == 0 && i + 1 < argc) {
      uses = strtoll(argv[++i], &end, 10);
      if (errno || !*argv[i] || *end || uses < 1 || uses > CAIRN_MAX_INVITATION_USES)
        return cairn__cli_fail("--uses wants an integer from 1 to %d", CAIRN_MAX_INVITATION_USES);
    } else if (strcmp(argv[i], "--expires") == 0 && i + 1 < argc) {
      days = strtod(argv[++i], &end);
      if (errno || !*argv[i] || *end || !(days * 86400 >= 1) ||
          days * 86400 > CAIRN_MAX_INVITATION_SECONDS)
        return cairn__cli_fail("--expires wants a number of days from 0.00002 to %d",
                              CAIRN_MAX_INVITATION_SECONDS / 86400);
    } else if (strcmp(argv[i], "--note") == 0 && i + 1 < argc)
      note = argv[++i];
    else
      return cairn__cli_fail("%s", invite_usage);
  }
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  json_t *body = json_pack("{s:I, s:I, s:s}", "uses", (json_int_t)uses, "expires_seconds",
                           (json_int_t)(days * 86400 + 0.5), "note", note);
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL, when[64], safe[128];
  json_decref(body);
  json_t *r = NULL;
  long st = text ? cairn__client_json(h, "POST", "/v1/invitations", text, &r, 0) : -1;
  free(text);
  int rc = 1;
  const char *code = json_string_value(json_object_get(r, "code"));
  if (st == 201 && code) {
    printf("%s\n", cairn__termsafe(code, safe, sizeof safe));
    fprintf(stderr, "invitation %lld: %lld use%s, expires %s\n", num(r, "id"), num(r, "uses"),
            num(r, "uses") == 1 ? "" : "s", utc(num(r, "expires"), when, sizeof when));
    rc = 0;
  } else if (st == 201)
    cairn__cli_fail("malformed answer from the master");
  json_decref(r);
  cairn__http_delete(h);
  return rc;
}

static const char invitations_usage[] =
  "usage: cairn invitations [revoke ID]\n"
  "Lists the invitations (id, the code's first characters, uses, uses left, expiry,\n"
  "note; never the code), or revokes invitation ID: its code is refused from then on.";

int cairn__cmd_invitations(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts(invitations_usage);
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  long long id = 0;
  if (argc == 3 && strcmp(argv[1], "revoke") == 0) {
    char *end = NULL;
    errno = 0;
    id = strtoll(argv[2], &end, 10);
    if (errno || !*argv[2] || *end || id < 1)
      return cairn__cli_fail("revoke wants an invitation id (see cairn invitations)");
  } else if (argc != 1)
    return cairn__cli_fail("%s", invitations_usage);
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  json_t *r = NULL;
  char path[64];
  snprintf(path, sizeof path, "/v1/invitations/%lld", id);
  long st = cairn__client_json(h, id ? "DELETE" : "GET", id ? path : "/v1/invitations", NULL, &r,
                              0);
  int rc = st == 200 ? 0 : 1;
  if (st == 200 && id)
    printf("invitation %lld revoked\n", id);
  else if (st == 200) {
    printf("%-5s %-10s %8s %8s %8s  %-21s %s\n", "ID", "PREFIX", "USES", "USED", "LEFT",
           "EXPIRES", "NOTE");
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "invitations"), i, v) {
      char prefix[CAIRN_TERMSAFE_NAME], note[CAIRN_TERMSAFE_NAME], when[64];
      printf("%-5lld %-10s %8lld %8lld %8lld  %-21s %s%s\n", num(v, "id"),
             cairn__termsafe(json_string_value(json_object_get(v, "prefix")), prefix,
                            sizeof prefix),
             num(v, "uses"), num(v, "used"), num(v, "uses_left"),
             utc(num(v, "expires"), when, sizeof when),
             json_is_true(json_object_get(v, "expired")) ? "(expired) " : "",
             cairn__termsafe(json_string_value(json_object_get(v, "note")), note, sizeof note));
    }
  }
  json_decref(r);
  cairn__http_delete(h);
  return rc;
}
