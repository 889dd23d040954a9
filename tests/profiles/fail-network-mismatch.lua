-- Settings that contradict each other.
local p = {
	network_allow = { "deb.debian.org" },
}
if true then
	p.ports = { 8080 }
	p.network = "none"
end
return p
