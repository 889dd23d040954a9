-- qsup's catalog of disk images, compiled into the binary (lua/builtin.S).
-- Every profile sees it, read-only, as qsup.images:
--
--   qsup.images.names                 { "debian-12", "debian-13", ... }
--   qsup.images["debian-12"]          an entry (below)
--   qsup.images.default               "debian-12", the seed's default image
--   qsup.images.python                the seed's Python version -> image name
--   qsup.images.for_python("3.12")    "ubuntu-24.04"
--   qsup.images.for_python("3.11", qsup.glibc)
--                                     an image with that Python whose glibc
--                                     is no newer than the one given, or nil
--                                     and why
--
-- An entry: name, distribution, release, codename, glibc and python (the
-- versions the release ships), sums_file, and per architecture (amd64,
-- arm64) file, url and sums (the checksum file beside the image).
--
-- The loader reads the same tables after the profile ran to turn image =
-- NAME into image_url and image_sums_url for the host's architecture (its
-- own copy: what a profile does to qsup.images does not reach it), with
-- image_base_url as a mirror holding the same file names.
--
-- This chunk runs once per load, before the profile, in an environment of
-- its own: copies of the few library functions it needs, taken before any
-- profile code runs (lua/profile_image.c). No method calls on strings
-- (s:match()) here: they go through the string metatable, which every
-- string shares and a profile can reach.
--
-- Written without network access. What is known and what is not:
--  * The URL layouts are the seed's (Ubuntu: releases/VERSION/release/,
--    SHA256SUMS beside the images; Debian: images/cloud/CODENAME/latest/,
--    SHA512SUMS beside them), and Debian 12's URL is the seed's own.
--  * glibc and python3 versions are those the releases shipped, from
--    memory of their package lists (Debian 12: glibc 2.36, Python 3.11;
--    13: 2.41, 3.13; Ubuntu 22.04: 2.35, 3.10; 23.04: 2.37, 3.11; 24.04:
--    2.39, 3.12; 25.04: 2.41, 3.13; 25.10: 2.42, 3.13). The seed confirms
--    23.04's 2.37; the rest could not be checked against the archives here.
--  * Ubuntu 23.04 and 25.04 are past their end of life. 23.04 is here
--    because the seed maps Python 3.11 to it; Canonical moves the images
--    of ended releases to cloud-images-archive.ubuntu.com, so its URL (the
--    seed's) may answer 404 now: image_base_url pointing at the archive's
--    releases/23.04/release/ directory serves the same file names.
--  * 26.04 LTS (resolute) came out in April 2026, on Ubuntu's fixed
--    schedule: its glibc 2.43 is what the seed saw its development series
--    reach, its python3 3.14 what it was planned to ship; neither could be
--    checked here. 26.10, due in October 2026, is not listed: its name and
--    versions are not known here.

local match, format, concat = string.match, string.format, table.concat

local arches = { x86_64 = "amd64", aarch64 = "arm64" }
local arch_list = { "amd64", "arm64" }

local entries = {}
local names = {}

local function add(e)
	entries[e.name] = e
	names[#names + 1] = e.name
end

local function debian(release, codename, glibc, python)
	local dir = "https://cloud.debian.org/images/cloud/" .. codename ..
	    "/latest/"
	local e = {
		name = "debian-" .. release, distribution = "debian",
		release = release, codename = codename, glibc = glibc,
		python = python, sums_file = "SHA512SUMS",
		file = {}, url = {}, sums = {},
	}
	for _, arch in ipairs(arch_list) do
		e.file[arch] = "debian-" .. release .. "-generic-" .. arch ..
		    ".qcow2"
		e.url[arch] = dir .. e.file[arch]
		e.sums[arch] = dir .. e.sums_file
	end
	add(e)
end

local function ubuntu(release, codename, glibc, python)
	local dir = "https://cloud-images.ubuntu.com/releases/" .. release ..
	    "/release/"
	local e = {
		name = "ubuntu-" .. release, distribution = "ubuntu",
		release = release, codename = codename, glibc = glibc,
		python = python, sums_file = "SHA256SUMS",
		file = {}, url = {}, sums = {},
	}
	for _, arch in ipairs(arch_list) do
		e.file[arch] = "ubuntu-" .. release .. "-server-cloudimg-" ..
		    arch .. ".img"
		e.url[arch] = dir .. e.file[arch]
		e.sums[arch] = dir .. e.sums_file
	end
	add(e)
end

debian("12", "bookworm", "2.36", "3.11")
debian("13", "trixie", "2.41", "3.13")
ubuntu("22.04", "jammy", "2.35", "3.10")
ubuntu("23.04", "lunar", "2.37", "3.11")
ubuntu("24.04", "noble", "2.39", "3.12")
ubuntu("25.04", "plucky", "2.41", "3.13")
ubuntu("25.10", "questing", "2.42", "3.13")
ubuntu("26.04", "resolute", "2.43", "3.14")

-- The seed's table, "Python version -> image": released images only, never
-- a development series (its glibc soon passes the host's). 3.14 shares
-- 25.04 with 3.13, as in the seed, though 25.04's own python3 is 3.13.
local python = {
	["3.11"] = "ubuntu-23.04",
	["3.12"] = "ubuntu-24.04",
	["3.13"] = "ubuntu-25.04",
	["3.14"] = "ubuntu-25.04",
}
local python_list = { "3.11", "3.12", "3.13", "3.14" }

-- "2.36" -> 2, 36; nil if it is no version.
local function version(v)
	local a, b = match(v, "^(%d+)%.(%d+)")
	if a == nil then
		return nil
	end
	return tonumber(a), tonumber(b)
end

-- Is glibc version a no newer than b?
local function not_newer(a, b)
	local a1, a2 = version(a)
	local b1, b2 = version(b)
	return a1 < b1 or (a1 == b1 and a2 <= b2)
end

-- The image for a Python version: the seed's choice; with a glibc, the
-- first image with that Python, the seed's choice first, whose glibc is no
-- newer (Debian 12 for 3.11 on a host with glibc 2.36).
local function for_python(v, glibc)
	local what = "qsup.images.for_python"
	if type(v) ~= "string" then
		error(format("%s: the Python version is a string (\"3.12\"), " ..
		    "not a %s", what, type(v)), 2)
	end
	local major, minor = version(v)
	if major == nil then
		error(format("%s: %q is not a Python version (\"3.12\")", what,
		    v), 2)
	end
	if glibc ~= nil and (type(glibc) ~= "string" or
	    version(glibc) == nil) then
		error(format("%s: the glibc version is a string (\"2.36\", " ..
		    "as qsup.glibc), not %s", what, type(glibc) == "string" and
		    format("%q", glibc) or "a " .. type(glibc)), 2)
	end
	local key = major .. "." .. minor
	local mapped = python[key]
	if mapped == nil then
		return nil, format("no image of qsup's catalog is mapped to " ..
		    "Python %s (mapped: %s)", key, concat(python_list, ", "))
	end
	if glibc == nil then
		return mapped
	end
	if not_newer(entries[mapped].glibc, glibc) then
		return mapped
	end
	for _, name in ipairs(names) do
		local e = entries[name]
		if e.python == key and not_newer(e.glibc, glibc) then
			return name
		end
	end
	return nil, format("no image of qsup's catalog has Python %s and a " ..
	    "glibc no newer than %s (%s has %s)", key, glibc, mapped,
	    entries[mapped].glibc)
end

local images = {
	names = names,
	entries = entries,
	arches = arches,
	default = "debian-12",
	python = python,
	for_python = for_python,
}
for name, e in pairs(entries) do
	images[name] = e
end
return images
