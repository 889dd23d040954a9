-- Found by fuzzing: memory that never grows (the same slot is replaced),
-- but every instruction copies megabytes, so counting instructions alone
-- would notice the time limit late.
local t = {}
while true do
	t[#t + 2] = string.rep("x", 4197 * 1024) .. #t
end
