-- memory = "4G" in a comment, and cpus = 0 in a string, are not settings:
local note = "cpus = 0"
local p = {}
p.memory = "2GiB"
if #note > 0 then
	p.cpus = 65
else
	p.cpus = 1
end
local function guest_env()
	return {
		["NOT A NAME"] = "x",
	}
end
p.env = guest_env()
p.start_timeout = 30
p.start_timeout = "60"
return p
