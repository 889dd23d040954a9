return {
  image = "debian-12",
  setup = { "apt-get update", { "make", "-j2" } },
  setup_network = { "deb.debian.org:80", "deb.debian.org:443" },
}
