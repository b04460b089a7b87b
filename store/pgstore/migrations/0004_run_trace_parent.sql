-- The W3C traceparent of a run's admission span (runner.Run.TraceParent, SPEC §7): the
-- parent of its step attempts' spans on whichever process works it. Empty when the
-- admission was not traced, and for runs from before.
ALTER TABLE runs ADD COLUMN trace_parent text NOT NULL DEFAULT '';
