-- 0026_sessions.sql — log-in sessions of the project's pages
-- (docs/security.md, "Sessions"), and the index that lists a team of
-- accounts' members by credit (GET /v1/teams/{id}). See schema/README.md.

-- One row per session: only the SHA-256 of its token (the cookie's value)
-- is kept, beside the account it acts for, its CSRF token (useless without
-- the session's token), when it was made and when it expires (30 days
-- later). An account has at most 16; a log-in past that drops its oldest.
CREATE TABLE sessions (
  token_hash TEXT PRIMARY KEY,
  account_id INTEGER NOT NULL REFERENCES accounts(id),
  csrf       TEXT NOT NULL,
  created    INTEGER NOT NULL,
  expires    INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_by_account ON sessions(account_id, created);

-- A team's members with the most credit first: O(log A + 100) for its 100
-- first, whatever the team's size.
CREATE INDEX accounts_by_team_credit ON accounts(team_id, credit DESC, id)
  WHERE team_id IS NOT NULL;
