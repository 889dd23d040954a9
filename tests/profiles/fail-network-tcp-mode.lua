-- TCP maps go through qsup's own network: not with "none" or "open".
local p = { network_tcp = { { host = "127.0.0.1", port = 5432 } } }
p.network = "none"
return p
