local memory = "2G"
