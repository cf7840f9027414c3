-- 0022_parent_index.sql — the edges of a task as a parent: a deletion's step
-- of task keys removes every edge that names one of its tasks, as child or
-- as parent, before it removes the tasks (docs/jobs.md, "Deleting a job"),
-- so that a parent is never removed while a later step's child still names
-- it. See schema/README.md.

CREATE INDEX IF NOT EXISTS task_parents_parent ON task_parents(parent_id);
