local t = {}
local mib = string.rep(string.rep("x", 1024), 1024)
while true do
	t[#t + 1] = mib .. #t
end
