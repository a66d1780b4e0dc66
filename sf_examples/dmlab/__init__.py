"""DeepMind Lab env family (``dmlab_*``): ``python -m sf_examples.dmlab.train_dmlab --env=dmlab_30``."""
