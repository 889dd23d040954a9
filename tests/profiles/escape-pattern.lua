-- A pattern that backtracks for ever, inside one call to string.find: no
-- hook runs until it returns, so qsup's watchdog ends it.
local s = string.rep("a", 100000)
local found = string.find(s, ".-.-b")
return {}
