-- The guest's network has addresses for 100 maps.
local maps = {}
for i = 1, 101 do
	maps[i] = { host = "127.0.0.1", port = 1000 + i }
end
return { network_tcp = maps }
