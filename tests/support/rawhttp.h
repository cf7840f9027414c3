/* rawhttp.h — one HTTP/1.1 request on a plain socket to a master on
 * loopback, with the headers the test writes (a cookie, X-CSRF-Token) and
 * the answer's headers kept, for the tests of what a browser sees
 * (Set-Cookie, Content-Security-Policy, Cache-Control) that the client
 * library does not show. */
#ifndef CAIRN_TESTS_RAWHTTP_H
#define CAIRN_TESTS_RAWHTTP_H

#include <jansson.h>
#include <stddef.h>

typedef struct raw_answer {
  long status;     /* 0: no answer */
  char *head;      /* the status line and headers (malloc'd) */
  char *body;      /* the body, NUL-terminated (malloc'd) */
  size_t len;
} raw_answer;

/* method path on 127.0.0.1:port with the extra header lines headers (each
 * ending in "\r\n"; NULL: none) and body (NULL: none): the answer in *a
 * (raw_free it). Its status. */
long raw_http(int port, const char *method, const char *path, const char *headers,
              const char *body, raw_answer *a);
/* The value of header name (any case) in a's headers, copied into out (cap
 * bytes): out, or NULL when a has none. */
const char *raw_header(const raw_answer *a, const char *name, char *out, size_t cap);
/* a's body as JSON (caller decrefs), NULL when it is not. */
json_t *raw_json(const raw_answer *a);
void raw_free(raw_answer *a);

#endif
