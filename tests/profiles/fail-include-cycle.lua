-- include/cycle-a.lua includes include/cycle-b.lua, which includes this.
return extend("include/cycle-a.lua", { cpus = 2 })
