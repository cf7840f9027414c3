/* files.c — what tests read and edit in the files a run leaves (files.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/files.h"
#include "tests/support/harness.h"

void files_sql(const char *db, const char *text) {
  sqlite3 *h = NULL;
  char *msg = NULL, why[512] = "";
  if (sqlite3_open(db, &h) != SQLITE_OK)
    snprintf(why, sizeof why, "cannot open: %s", sqlite3_errmsg(h));
  else if (sqlite3_exec(h, text, NULL, NULL, &msg) != SQLITE_OK)
    snprintf(why, sizeof why, "%s", msg ? msg : sqlite3_errmsg(h));
  sqlite3_free(msg);
  sqlite3_close(h);
  if (why[0])
    fail_msg("sqlite3 %s: %s: %s", db, text, why);
}

long long files_sql_int(const char *db, const char *text) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  char why[512] = "";
  long long v = 0;
  if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(h, text, -1, &q, NULL) != SQLITE_OK)
    snprintf(why, sizeof why, "%s", sqlite3_errmsg(h));
  else if (sqlite3_step(q) != SQLITE_ROW)
    snprintf(why, sizeof why, "no row (%s)", sqlite3_errmsg(h));
  else
    v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  if (why[0])
    fail_msg("sqlite3 %s: %s: %s", db, text, why);
  return v;
}

int files_count_lines(const char *path, const char *s) {
  FILE *fp = fopen(path, "r");
  char line[4096];
  int n = 0;
  while (fp && fgets(line, sizeof line, fp))
    n += strstr(line, s) != NULL;
  if (fp)
    fclose(fp);
  return n;
}

int files_wait_line(const char *path, const char *s, double secs) {
  for (double until = harness_now() + secs; harness_now() < until; usleep(200000))
    if (files_count_lines(path, s) > 0)
      return 1;
  return 0;
}

void files_copy(const char *from, const char *to) {
  FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
  char buf[65536];
  size_t n;
  int bad = !in || !out;
  while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
    bad = fwrite(buf, 1, n, out) != n;
  bad |= in && ferror(in);
  if (in)
    fclose(in);
  if (out && fclose(out))
    bad = 1;
  if (bad)
    fail_msg("cannot copy %s to %s", from, to);
}
