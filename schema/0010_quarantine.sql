-- 0010_quarantine.sql — a volunteer in quarantine gets no new task until an
-- administrator releases it (docs/accountability.md, "Quarantine").
-- See schema/README.md.

ALTER TABLE volunteers ADD COLUMN quarantined INTEGER NOT NULL DEFAULT 0;
