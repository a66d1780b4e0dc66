"""EnvPool env families: natively batched Atari and MuJoCo envs for ``--batched_sampling=True``."""
