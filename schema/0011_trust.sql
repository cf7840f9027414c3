-- 0011_trust.sql — adaptive replication (docs/accountability.md, "Adaptive
-- replication"): each volunteer's trust (its run of valid replicated
-- results), a job's opt-in, and each volunteer's last unreplicated accepted
-- results (at most 32, slot = seq % 32), re-checked when its trust resets.
-- See schema/README.md.

ALTER TABLE volunteers ADD COLUMN trust INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN adaptive INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS trust_ring (
  volunteer_id INTEGER NOT NULL,
  slot INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  job_id INTEGER NOT NULL,
  task_key INTEGER NOT NULL,
  round INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  PRIMARY KEY (volunteer_id, slot)
);
