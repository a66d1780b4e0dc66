"""Command-line tools of the NetHack family."""
