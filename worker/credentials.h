/* credentials.h — the volunteer identity: registration with the master
 * (POST /v1/volunteers) and its record in DIR/credentials.json (mode 0600):
 *   {"server": "http://host:port", "id": 7, "row": 7, "token": "<64 hex>"}
 * Private to worker/.
 */
#ifndef CAIRN_CREDENTIALS_H
#define CAIRN_CREDENTIALS_H

#include "common/error.h"
#include "common/resources.h"
#include "worker/transport.h"

typedef struct cairn__credentials {
  char *server;    /* base URL the identity belongs to (owned) */
  long long id;
  long long row;   /* ATAF row */
  char token[65];
  char peer_key[65];    /* from the registration answer, "" when none; not saved */
  unsigned features;    /* report fields the answer advertised (CAIRN_FEAT_*); not saved */
} cairn__credentials;

/* What the worker tells the master about itself when registering. */
typedef struct cairn__registration {
  const char *name;     /* may be NULL */
  const char *cluster;  /* may be NULL */
  const char *const *apps;
  size_t napps;
  unsigned slots;
  cairn__resources offer; /* sent as "resources" when cores > 0 (only to a master
                          * known to take it: a re-registration) */
  const char *invitation; /* may be NULL; never sent on any other call */
  const char *team;       /* may be NULL; sent as "team" (session.c decides when) */
  const char *platform;   /* may be NULL; sent as "platform": the worker runs the
                             project's signed apps (docs/apps.md) */
  const char *sandbox;    /* "bwrap" or "none": how program apps run (sandbox.h);
                             NULL: not sent (session.c decides when) */
  const char *account_key; /* may be NULL; sent as "account_key", never on any other
                              call, never logged */
} cairn__registration;

/* Loads path into *c. CAIRN_ENOTFOUND when the file does not exist,
 * CAIRN_EINVAL (err names the problem) when it is not a valid record. */
cairn_status cairn__credentials_load(const char *path, cairn__credentials *c, cairn_error *err);

/* Writes *c to path atomically with mode 0600. */
cairn_status cairn__credentials_save(const char *path, const cairn__credentials *c,
                                     cairn_error *err);

/* Frees what *c owns and zeroes it. */
void cairn__credentials_clear(cairn__credentials *c);

/* Registers with the master behind h and fills *c (server = h's base).
 * Returns CAIRN_OK; CAIRN_EIO when it may work later (no answer, 429, 5xx);
 * CAIRN_EFORBIDDEN on 403; CAIRN_EINVAL on any other refusal or a malformed
 * answer. err carries the master's message when it sent one. */
cairn_status cairn__register(cairn__http *h, const cairn__registration *reg,
                             cairn__credentials *c, cairn_error *err);

/* Reads a 200/201 answer of POST /v1/volunteers into *c (zeroed first;
 * server: the master's base URL, copied). CAIRN_EINVAL naming the problem
 * when the body is not {"id", "row", "token"} with a well-formed token. */
cairn_status cairn__registration_parse(const char *body, size_t len, const char *server,
                                       cairn__credentials *c, cairn_error *err);

/* Copies the "message" of a master error body ({"error": {...}}) into out,
 * or a short description of the body when it is not one. */
void cairn__server_message(const char *body, size_t len, char *out, size_t outlen);

#endif
