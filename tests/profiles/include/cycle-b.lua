local p = include("../fail-include-cycle.lua")
return p
