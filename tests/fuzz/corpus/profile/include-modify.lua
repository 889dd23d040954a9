-- include() gives a table to change.
local p = include("include/base.lua")
p.memory = "2G"
p.env.TZ = "UTC"
return p
