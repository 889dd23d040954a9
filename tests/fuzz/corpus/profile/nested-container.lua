-- nested-container.lua: qsup itself inside Docker, Podman or Kubernetes.
--
--   docker run --rm -v "$PWD":/app -w /app [--device /dev/kvm] IMAGE \
--       qsup --profile nested-container -- CMD
--
-- Inside a container the files qsup shares usually live on overlayfs, and
-- a guest that maps them (running a binary, loading a library) over 9p can
-- crash. So shared trees are always copied to a temporary directory first
-- (virtfs = "on"), with the host's whole C library (ld_closure_libs =
-- "full": a smaller copy may miss a library some extension needs).
--
-- KVM is used if the container was given a /dev/kvm that works; otherwise
-- the guest is emulated, and start_timeout = 0 already allows for that.
-- Memory and CPUs follow the container's own limits (cgroups), which is
-- what qsup.memory_mib and qsup.cpus report.

if not qsup.in_container then
	print("nested-container.lua: this host does not look like a " ..
	    "container (no /.dockerenv, /.containerenv or $container)")
end

return {
	use_kvm = "auto",
	start_timeout = 0,
	memory = math.max(256, math.min(2048, qsup.memory_mib // 2)),
	cpus = math.max(1, math.min(qsup.cpus, 2)),

	virtfs = "on",
	ld_closure_libs = "full",

	-- The container's console is often all there is.
	console_on_failure = 100,

	network = "restricted",
}
