if qsup.arch ~= "no such arch" then
	error("this profile is for another host")
end
return {}
