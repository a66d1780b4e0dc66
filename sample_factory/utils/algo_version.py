"""Version stamp of the training algorithm and of the checkpoint contents it produces.

``ALGO_VERSION`` is the number Sample Factory 2 scripts compare against when they need to know which revision of
the algorithm (and so which layout of the saved learner state) they run with. It follows Sample Factory 2's
numbering; bump it when a change makes old checkpoints or results not comparable with new ones.
"""

from __future__ import annotations

ALGO_VERSION = 83
