/* store_accounts.c — the store's side of accounts (0024_accounts.sql,
 * docs/accountability.md "Accounts"): an account's row, its key, its
 * credit totals, and the account a volunteer is attached to. Writes run on
 * the writer connection, inside the commit thread's transaction, in the
 * group of the change they come with; the load runs at start-up. */
#include "server/store/store.h"
#include "server/store/store_int.h"

cairn_status cairn__store_account_put(cairn__store *s, const cairn__store_account_row *r,
                                     cairn_error *err) {
  sqlite3_stmt *q = Q(S_ACCT_PUT);
  sqlite3_bind_int64(q, 1, r->id);
  TXT(q, 2, r->name);
  TXT(q, 3, r->email);
  TXT(q, 4, r->key_hash);
  TXT(q, 5, r->password_hash);
  sqlite3_bind_int64(q, 6, r->created);
  TXT(q, 7, r->cpid);
  sqlite3_bind_int64(q, 8, r->cpid_time);
  return run(s, S_ACCT_PUT, err);
}

cairn_status cairn__store_account_key(cairn__store *s, int64_t id, const char *key_hash,
                                     cairn_error *err) {
  sqlite3_bind_int64(Q(S_ACCT_KEY), 1, id);
  TXT(Q(S_ACCT_KEY), 2, key_hash);
  return run(s, S_ACCT_KEY, err);
}

cairn_status cairn__store_account_credit(cairn__store *s, const cairn__store_account_row *r,
                                        cairn_error *err) {
  sqlite3_stmt *q = Q(S_ACCT_CREDIT);
  sqlite3_bind_int64(q, 1, r->id);
  sqlite3_bind_double(q, 2, r->credit);
  sqlite3_bind_double(q, 3, r->cpu_seconds);
  sqlite3_bind_int64(q, 4, r->results);
  sqlite3_bind_double(q, 5, r->expavg);
  sqlite3_bind_double(q, 6, r->expavg_time);
  return run(s, S_ACCT_CREDIT, err);
}

cairn_status cairn__store_volunteer_account(cairn__store *s, int64_t vol, int64_t account,
                                           cairn_error *err) {
  sqlite3_bind_int64(Q(S_VOL_ACCOUNT), 1, vol);
  if (account > 0)
    sqlite3_bind_int64(Q(S_VOL_ACCOUNT), 2, account); /* else NULL: none */
  return run(s, S_VOL_ACCOUNT, err);
}

cairn_status cairn__store_load_accounts(cairn__store *s,
                                       int (*cb)(void *, const cairn__store_account_row *),
                                       void *ud, cairn_error *err) {
  sqlite3_stmt *q = Q(S_LOAD_ACCTS);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_account_row row = {
      .id = I64(0), .name = STR(1), .email = STR(2), .key_hash = STR(3),
      .password_hash = STR(4), .created = I64(5), .credit = sqlite3_column_double(q, 6),
      .cpu_seconds = sqlite3_column_double(q, 7), .results = I64(8),
      .expavg = sqlite3_column_double(q, 9), .expavg_time = sqlite3_column_double(q, 10),
      .cpid = STR(11), .cpid_time = I64(12)};
    if (!row.name || !row.email || !row.key_hash || !row.password_hash || !row.cpid ||
        cb(ud, &row)) {
      sqlite3_reset(q);
      return cairn__error_set(err, CAIRN_ENOMEM, "store: out of memory loading the accounts");
    }
  }
  sqlite3_reset(q);
  return rc == SQLITE_DONE ? CAIRN_OK : db_err(s, s->w, err, cairn__store_sql[S_LOAD_ACCTS]);
}
