-- Profiles include profiles of their own tree only.
local base = include("../../profiles/ci.lua")
return base
