/* credentials.c — register with the master and persist the identity. */
#include "worker/credentials.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/protocol.h"
#include "common/sha256.h"
#include "worker/fsutil.h"

#define CREDENTIALS_MAX 4096

void cairn__credentials_clear(cairn__credentials *c) {
  free(c->server);
  memset(c, 0, sizeof *c);
}

/* Volunteer tokens are 64 lowercase hex digits, like SHA-256 digests. */
static int valid_token(const char *t) { return t && cairn__sha256_valid_hex(t); }

cairn_status cairn__credentials_load(const char *path, cairn__credentials *c, cairn_error *err) {
  cairn__buf text;
  json_error_t jerr;
  cairn_status rc = cairn__read_file(path, CREDENTIALS_MAX, &text, err);
  memset(c, 0, sizeof *c);
  if (rc != CAIRN_OK)
    return rc;
  json_t *root = json_loadb(text.data ? text.data : "", text.len, 0, &jerr);
  cairn__buf_free(&text);
  if (!root)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: not JSON (line %d: %s)", path, jerr.line,
                           jerr.text);
  const char *server = NULL, *token = NULL;
  json_int_t id = 0, row = 0;
  if (json_unpack_ex(root, &jerr, 0, "{s:s, s:I, s:I, s:s}", "server", &server, "id", &id,
                     "row", &row, "token", &token) != 0)
    rc = cairn__error_set(err, CAIRN_EINVAL, "%s: %s", path, jerr.text);
  else if (!valid_token(token))
    rc = cairn__error_set(err, CAIRN_EINVAL, "%s: token is not 64 lowercase hex digits", path);
  else {
    c->server = strdup(server);
    c->id = id;
    c->row = row;
    memcpy(c->token, token, 65);
    if (!c->server)
      rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  json_decref(root);
  if (rc != CAIRN_OK)
    cairn__credentials_clear(c);
  return rc;
}

cairn_status cairn__credentials_save(const char *path, const cairn__credentials *c,
                                     cairn_error *err) {
  json_t *root = json_pack("{s:s, s:I, s:I, s:s}", "server", c->server, "id",
                           (json_int_t)c->id, "row", (json_int_t)c->row, "token", c->token);
  char *text = root ? json_dumps(root, JSON_INDENT(2)) : NULL;
  json_decref(root);
  if (!text)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  char *nl = NULL;
  if (asprintf(&nl, "%s\n", text) < 0)
    nl = NULL;
  free(text);
  if (!nl)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status rc = cairn__write_file_atomic(path, nl, strlen(nl), 0600, err);
  free(nl);
  return rc;
}

void cairn__server_message(const char *body, size_t len, char *out, size_t outlen) {
  json_t *root = body && len ? json_loadb(body, len, 0, NULL) : NULL;
  const char *msg = NULL;
  if (root && json_unpack(root, "{s:{s:s}}", "error", "message", &msg) == 0)
    snprintf(out, outlen, "%s", msg);
  else if (len)
    snprintf(out, outlen, "%.*s", (int)(len > 200 ? 200 : len), body);
  else
    snprintf(out, outlen, "empty body");
  for (char *p = out; *p; p++)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
  json_decref(root);
}

static json_t *registration_body(const cairn__registration *reg) {
  json_t *apps = json_array();
  json_t *root = json_object();
  if (!apps || !root)
    goto fail;
  for (size_t i = 0; i < reg->napps; i++)
    if (json_array_append_new(apps, json_string(reg->apps[i])) != 0)
      goto fail;
  if (json_object_set_new(root, "apps", apps) != 0) {
    apps = NULL;
    goto fail;
  }
  apps = NULL;
  if (reg->name && json_object_set_new(root, "name", json_string(reg->name)) != 0)
    goto fail;
  if (reg->cluster && json_object_set_new(root, "cluster", json_string(reg->cluster)) != 0)
    goto fail;
  if (json_object_set_new(root, "slots", json_integer(reg->slots ? reg->slots : 1)) != 0)
    goto fail;
  if (reg->offer.cores > 0 &&
      json_object_set_new(root, CAIRN_RESOURCES_KEY, cairn__resources_json(&reg->offer)) != 0)
    goto fail;
  if (reg->invitation && json_object_set_new(root, "invitation", json_string(reg->invitation)))
    goto fail;
  if (reg->team && json_object_set_new(root, CAIRN_TEAM_KEY, json_string(reg->team)))
    goto fail;
  if (reg->platform && json_object_set_new(root, "platform", json_string(reg->platform)))
    goto fail;
  if (reg->sandbox && json_object_set_new(root, "sandbox", json_string(reg->sandbox)))
    goto fail;
  if (reg->account_key &&
      json_object_set_new(root, "account_key", json_string(reg->account_key)))
    goto fail;
  return root;
fail:
  json_decref(apps);
  json_decref(root);
  return NULL;
}

cairn_status cairn__register(cairn__http *h, const cairn__registration *reg,
                             cairn__credentials *c, cairn_error *err) {
  cairn__http_response resp = {0};
  char msg[300];
  cairn_status rc;
  json_t *body = registration_body(reg);
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  memset(c, 0, sizeof *c);
  if (!text)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn__http_set_token(h, NULL);
  rc = cairn__http_request(h, "POST", "/v1/volunteers", "application/json", text, strlen(text),
                          64 * 1024, &resp, err);
  free(text);
  if (rc != CAIRN_OK) {
    cairn__buf_free(&resp.body);
    return rc == CAIRN_ETOOBIG ? CAIRN_EINVAL : CAIRN_EIO;
  }
  cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
  if (resp.status == 429 || resp.status >= 500)
    rc = cairn__error_set(err, CAIRN_EIO, "registration: HTTP %ld: %s", resp.status, msg);
  else if (resp.status == 403)
    rc = cairn__error_set(err, CAIRN_EFORBIDDEN, "registration refused (HTTP 403): %s", msg);
  else if (resp.status != 200 && resp.status != 201)
    rc = cairn__error_set(err, CAIRN_EINVAL, "registration refused (HTTP %ld): %s",
                         resp.status, msg);
  else
    rc = cairn__registration_parse(resp.body.data, resp.body.len, cairn__http_base(h), c, err);
  cairn__buf_free(&resp.body);
  return rc;
}

cairn_status cairn__registration_parse(const char *body, size_t len, const char *server,
                                       cairn__credentials *c, cairn_error *err) {
  json_error_t jerr;
  json_t *root = json_loadb(body ? body : "", len, 0, &jerr);
  const char *token = NULL;
  json_int_t id = 0, row = 0;
  cairn_status rc = CAIRN_OK;
  memset(c, 0, sizeof *c);
  if (!root || json_unpack_ex(root, &jerr, 0, "{s:I, s:I, s:s}", "id", &id, "row", &row,
                              "token", &token) != 0 || !valid_token(token))
    rc = cairn__error_set(err, CAIRN_EINVAL, "registration: malformed answer: %s", jerr.text);
  else {
    c->server = strdup(server);
    c->id = id;
    c->row = row;
    memcpy(c->token, token, 65);
    const char *peer = json_string_value(json_object_get(root, "peer_key"));
    if (valid_token(peer))
      memcpy(c->peer_key, peer, 65);
    c->features = cairn__features_parse(json_object_get(root, CAIRN_FEATURES_KEY));
    if (!c->server)
      rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  json_decref(root);
  return rc;
}
