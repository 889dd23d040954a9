return {
  image = "debian-12",
  setup = { { "apt-get", "update" } },
  setup_network = "open",
}
