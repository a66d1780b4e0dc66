"""Run descriptions of the EnvPool MuJoCo family for the launcher."""
