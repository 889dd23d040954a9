-- qsup.images as a profile reads it: every entry complete, the seed's
-- Python mapping, and the image picked through it. Any check that fails
-- fails the load, with this file's line.
local images = qsup.images
local function check(ok, what)
	if not ok then
		error("catalog: " .. what, 2)
	end
end

local n = 0
for i, name in ipairs(images.names) do
	local e = images[name]
	check(e ~= nil and e.name == name, name .. ": no entry")
	check(images.entries[name] == e, name .. ": entries differ")
	for _, arch in ipairs({ "amd64", "arm64" }) do
		check(e.url[arch]:match("^https://") ~= nil, name .. ": url")
		check(e.url[arch]:sub(-#e.file[arch]) == e.file[arch],
		    name .. ": url ends with the file")
		check(e.sums[arch]:sub(-#e.sums_file) == e.sums_file,
		    name .. ": sums")
		check(e.file[arch]:find(arch, 1, true) ~= nil,
		    name .. ": file names its arch")
	end
	check(e.glibc:match("^2%.%d+$") ~= nil, name .. ": glibc")
	check(e.python:match("^3%.%d+$") ~= nil, name .. ": python")
	n = i
end
check(n == #images.names and n >= 6, "names")

local seen = 0
for name, e in pairs(images.entries) do
	check(e.name == name, "pairs")
	seen = seen + 1
end
check(seen == n, "pairs sees every entry")

check(images.default == "debian-12", "default")
check(images.python["3.12"] == "ubuntu-24.04", "python table")
check(images.for_python("3.12") == "ubuntu-24.04", "for_python")
check(images.for_python("3.11", "2.36") == "debian-12",
    "for_python, older glibc")

sandbox {
	image = images.for_python("3.12") or images.default,
	disk_size = "10G",
	image_sha256 = string.rep("Ab", 32),
	image_unverified = true,
}
