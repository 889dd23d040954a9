return include("cycle-b")
