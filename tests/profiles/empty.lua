-- No settings: every default.
return {}
