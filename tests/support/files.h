/* files.h — what tests read and edit in the files a run leaves: a
 * database, with SQLite directly (as an operator with sqlite3 would), the
 * lines of a log, a copy of a file. Each fails the running cmocka test
 * with the reason when it cannot do what it says. */
#ifndef CAIRN_TEST_FILES_H
#define CAIRN_TEST_FILES_H

/* Runs text (statements) on database db, read-write, no foreign keys. */
void files_sql(const char *db, const char *text);
/* The integer of the first column of the first row of query text on db,
 * opened read-only (beside a running master: WAL). */
long long files_sql_int(const char *db, const char *text);
/* Lines of the file at path holding s (0 when it cannot be read). */
int files_count_lines(const char *path, const char *s);
/* Waits up to secs for a line of path holding s: 1, or 0 when none came. */
int files_wait_line(const char *path, const char *s, double secs);
/* A copy of the file from at to. */
void files_copy(const char *from, const char *to);

#endif
