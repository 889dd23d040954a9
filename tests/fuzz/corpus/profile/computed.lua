-- Settings computed from host facts, through a helper and a branch.
local function clamp(n, lo, hi)
	return math.max(lo, math.min(hi, n))
end

local p = {
	cpus = clamp(qsup.cpus, 1, 64),
	memory = qsup.env("QSUP_TEST_MEMORY") or 512,
	cwd = "/" .. qsup.arch,
	env = { HOST_MIB = qsup.memory_mib },
}
if qsup.env("QSUP_TEST_SURELY_UNSET") == nil then
	p.env.UNSET = "nil"
end
return p
