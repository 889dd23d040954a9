-- ci.lua: a project's own profile for its pipeline, on qsup's built-in ci
-- (the checkout read-only at /src, no network, 10 minutes, warm starts).
--   qsup --profile ci.lua -- make test
return extend("builtin:ci", {
	-- A test suite may write: give it a scratch directory in the guest.
	env = { CI = "true", LANG = "C.UTF-8", TMPDIR = "/tmp" },
})
