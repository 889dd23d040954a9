-- setup steps that are not steps, and a setup network the policy cannot
-- express: each named with the line of the setting.
return {
  image = "debian-12",
  setup = {
    "apt-get update",
    42,
    { "make", 3 },
    {},
  },
  setup_network = { "deb.debian.org:80", "bad host!" },
}
