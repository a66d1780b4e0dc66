"""NVIDIA Isaac Gym tasks (IsaacGymEnvs) trained on the GPU; importable without Isaac Gym, usable with it."""
