import os
import sys

# tests import their helpers (tests/sf_run.py) as top-level modules
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
