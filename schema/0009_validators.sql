-- 0009_validators.sql — how a job's replicas are compared: its "validator"
-- as compact JSON ("exact" or {"numeric": {"rel": R, "abs": A}}; docs/jobs.md).
-- See schema/README.md.

ALTER TABLE jobs ADD COLUMN validator TEXT NOT NULL DEFAULT '"exact"';
