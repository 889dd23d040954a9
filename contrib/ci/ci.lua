-- ci.lua: a project's own profile for its pipeline, on qsup's built-in ci
-- (Debian 12 with build-essential and ccache, the checkout copy-on-write
-- at /src, /artifacts and /cache, no network, 30 minutes, warm starts).
--   qsup --profile ci.lua -- sh -c './configure && make && make test'
local ci = include("builtin:ci")
-- One more package: a step of its own after the shipped ones, so its
-- layer is built once over theirs (which every job on builtin:ci shares).
table.insert(ci.setup, "DEBIAN_FRONTEND=noninteractive apt-get install -y "
	.. "--no-install-recommends zlib1g-dev")
-- (A step's key holds env too: a changed env builds every layer anew.)
return ci
