-- 0024_accounts.sql — accounts: a person's account, the hosts (volunteers)
-- attached to it with its account key, and credit per account beside per
-- host and per team, with its exponentially averaged credit
-- (docs/accountability.md, "Accounts"). See schema/README.md.

-- One row per account: only the SHA-256 of its account key and the
-- Argon2id string of its password are kept; email_key is its e-mail in
-- lower case (unique); its credit totals and their average, written with
-- each change.
CREATE TABLE accounts (
  id            INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  email         TEXT NOT NULL,
  email_key     TEXT NOT NULL UNIQUE,
  key_hash      TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  created       INTEGER NOT NULL,
  credit        REAL NOT NULL DEFAULT 0,
  cpu_seconds   REAL NOT NULL DEFAULT 0,
  results       INTEGER NOT NULL DEFAULT 0,
  expavg_credit REAL NOT NULL DEFAULT 0,
  expavg_time   REAL NOT NULL DEFAULT 0
);

-- The account a volunteer (a host) is attached to (NULL: none), and the
-- exponentially averaged credit of hosts.
ALTER TABLE volunteers ADD COLUMN account_id INTEGER REFERENCES accounts(id);
ALTER TABLE volunteers ADD COLUMN expavg_credit REAL NOT NULL DEFAULT 0;
ALTER TABLE volunteers ADD COLUMN expavg_time REAL NOT NULL DEFAULT 0;

-- The exponentially averaged credit of a team of the ledger (team_credit),
-- in a table of its own so that team_credit keeps its columns.
CREATE TABLE team_expavg (
  team          TEXT PRIMARY KEY,
  expavg_credit REAL NOT NULL DEFAULT 0,
  expavg_time   REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;
