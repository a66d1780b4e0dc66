"""Small DeepMind Lab helpers: whether the simulator is installed, and the hashing of instruction words."""

from __future__ import annotations

import hashlib

from sample_factory.utils.utils import is_module_available


def dmlab_available() -> bool:
    """True when the ``deepmind_lab`` module can be imported (it is built from source, never on PyPI)."""
    return is_module_available("deepmind_lab")


def string_to_hash_bucket(s: str, vocabulary_size: int) -> int:
    """A word's token id in ``[0, vocabulary_size)``, the same in every process and run.

    Language levels give their instruction as text; hashing the words into a fixed vocabulary lets the policy embed
    them without a word list. Python's ``hash()`` is salted per process, so a digest is used instead.
    """
    if vocabulary_size < 1:
        raise ValueError(f"vocabulary_size={vocabulary_size} must be at least 1")
    digest = hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % vocabulary_size
