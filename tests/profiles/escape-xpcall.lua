-- Lua runs a message handler where the error is raised; for the time-limit
-- error that is inside the hook, where hooks are off.
xpcall(function() while true do end end, function() while true do end end)
