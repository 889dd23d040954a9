-- Catching the time-limit error must not keep the profile alive.
while true do
	pcall(function() while true do end end)
end
