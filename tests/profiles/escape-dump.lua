local bytecode = string.dump(function() return {} end)
return load(bytecode, "dumped", "b")()
