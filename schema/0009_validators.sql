-- 0009_validators.sql — how a job's replicas are compared: its "validator"
-- as compact JSON ("exact", {"numeric": {"rel": R, "abs": A}} or
-- {"command": ["/path/prog", ...]}; docs/jobs.md).
-- See schema/README.md.

ALTER TABLE jobs ADD COLUMN validator TEXT NOT NULL DEFAULT '"exact"';
