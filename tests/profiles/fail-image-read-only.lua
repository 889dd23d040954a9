-- The catalog is read-only; the load stops at the first write.
local e = qsup.images["debian-12"]
e.url.amd64 = "https://evil.example/disk.qcow2"
return { image = "debian-12" }
