dofile("/etc/passwd")
return {}
