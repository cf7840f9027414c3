-- 0005_task_limits.sql — what each task runs under (its limits, environment
-- and stdin, docs/jobs.md) and why a result failed. See schema/README.md.

ALTER TABLE tasks ADD COLUMN run TEXT;       -- JSON {"limits", "env", "stdin"}; NULL: none
ALTER TABLE results ADD COLUMN reason TEXT;  -- 'wall', 'cpu', 'memory', 'disk', 'output',
                                             -- 'signal N', 'exit N'; NULL: exit status 0
