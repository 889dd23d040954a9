-- The start of a Lua 5.4 binary chunk: load must refuse it whatever mode
-- is asked for.
local f, err = load("\27Lua\84\0\25\147\r\n\26\n", "binary", "b")
assert(f, err)
return {}
