local f = loadfile("/etc/passwd")
return {}
