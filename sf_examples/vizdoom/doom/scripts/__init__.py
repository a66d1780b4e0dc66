"""Scripts that generate VizDoom data files."""
