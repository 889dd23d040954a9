# with --set memory=1G, env={A="b"}
return { cpus = 2, env = { B = "c" } }
