-- 0018_team_ledger.sql — the team ledger: the credit granted while a
-- volunteer was in a team counts for that team for good, wherever the
-- volunteer goes later (docs/accountability.md, "Teams"). See schema/README.md.

-- One row per team that ever had a member: the sums of the credit, claims
-- and number of the valid results granted while their volunteer was in it.
CREATE TABLE team_credit (
  team        TEXT PRIMARY KEY,
  credit      REAL NOT NULL DEFAULT 0,
  cpu_seconds REAL NOT NULL DEFAULT 0,
  results     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX team_credit_by_credit ON team_credit(credit DESC, team);

-- The team a valid result's credit counts for (NULL: none, or not valid).
ALTER TABLE results ADD COLUMN team TEXT;

-- Credit from before the ledger stays where it stood: with the team each
-- volunteer is in now, and each such result with it.
INSERT INTO team_credit(team, credit, cpu_seconds, results)
  SELECT team, SUM(credit), SUM(cpu_seconds), SUM(credited) FROM volunteers
  WHERE team IS NOT NULL AND banned = 0 GROUP BY team;
UPDATE results SET team = (SELECT v.team FROM volunteers v WHERE v.id = results.volunteer_id)
  WHERE outcome = 'valid' AND credit <> 0;
-- Team totals the audit chain has no entries for: cairn audit verify --db
-- lets a team row without entries pass while this is set.
INSERT OR IGNORE INTO meta(key, value) SELECT 'team_ledger_gap', 'team credit from before the ledger'
  WHERE EXISTS (SELECT 1 FROM team_credit WHERE results <> 0);
