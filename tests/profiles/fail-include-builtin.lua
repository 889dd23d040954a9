return include("builtin:no-such")
