-- 0025_teams.sql — teams of accounts, and the cross-project id of each
-- account (docs/accountability.md, "Accounts"). A team of accounts is made
-- by an account (its founder), which the founder may rename; accounts join
-- and leave it. Its credit is kept by the team ledger (team_credit,
-- team_expavg, results.team) under its key, which never changes, so that a
-- rename moves no row. See schema/README.md.

-- One row per team of accounts: key is its name in the team ledger (its
-- name when it was made; never changed, never reused), name the name it is
-- shown under (unique among names and keys).
CREATE TABLE teams (
  id          INTEGER PRIMARY KEY,
  key         TEXT NOT NULL UNIQUE,
  name        TEXT NOT NULL UNIQUE,
  founder     INTEGER NOT NULL REFERENCES accounts(id),
  created     INTEGER NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  url         TEXT NOT NULL DEFAULT '',
  country     TEXT NOT NULL DEFAULT ''
);

-- The team an account is in (NULL: none), the country its person chose
-- ('' : none), and its cross-project id: 32 random hex digits, from which
-- the XML statistics derive the account's cpid (BOINC's definition).
ALTER TABLE accounts ADD COLUMN team_id INTEGER REFERENCES teams(id);
ALTER TABLE accounts ADD COLUMN country TEXT NOT NULL DEFAULT '';
ALTER TABLE accounts ADD COLUMN cross_project_id TEXT NOT NULL DEFAULT '';
UPDATE accounts SET cross_project_id = lower(hex(randomblob(16)));
CREATE TRIGGER accounts_cross_project_id AFTER INSERT ON accounts
  WHEN NEW.cross_project_id = ''
BEGIN
  UPDATE accounts SET cross_project_id = lower(hex(randomblob(16))) WHERE id = NEW.id;
END;
CREATE INDEX accounts_by_team ON accounts(team_id) WHERE team_id IS NOT NULL;
