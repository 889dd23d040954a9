-- A finalizer runs with hooks off: it could loop for ever.
setmetatable({}, { __gc = function() while true do end end })
return {}
