-- 0012_credit.sql — credit: the CPU seconds each result claims, the credit
-- granted to it, each volunteer's team and totals (docs/accountability.md,
-- "Credit"). See schema/README.md.

ALTER TABLE volunteers ADD COLUMN team TEXT;
ALTER TABLE volunteers ADD COLUMN credit REAL NOT NULL DEFAULT 0;
ALTER TABLE volunteers ADD COLUMN cpu_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE volunteers ADD COLUMN credited INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN cpu_seconds REAL;
ALTER TABLE results ADD COLUMN credit REAL NOT NULL DEFAULT 0;
CREATE INDEX volunteers_by_credit ON volunteers(credit DESC, id);
-- team sums and totals (GET /v1/stats) read this narrow index, not the rows
CREATE INDEX volunteers_by_team ON volunteers(team, banned, credit, cpu_seconds, credited);
