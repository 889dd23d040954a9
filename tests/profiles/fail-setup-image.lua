-- setup needs an image (the built-in guest has no disk); "allowlist"
-- alone allows nothing; "open" needs network_open_ack, as network does.
return {
  setup = { "true" },
  setup_network = "allowlist",
}
