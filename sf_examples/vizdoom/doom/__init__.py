"""VizDoom scenarios as Gymnasium envs: specs, the game wrapper, multiplayer, wrappers, flags and the model."""
