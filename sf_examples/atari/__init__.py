"""The Atari env family: ``atari_*`` names on ale-py's games with the standard DQN preprocessing."""
