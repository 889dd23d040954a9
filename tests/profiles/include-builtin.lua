-- A built-in profile, with one change.
return extend("builtin:ci", { timeout = 30 })
