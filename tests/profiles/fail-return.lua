return "memory = 2G"
