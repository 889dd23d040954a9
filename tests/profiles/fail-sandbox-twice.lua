sandbox { memory = "1G" }
sandbox { memory = "2G" }
