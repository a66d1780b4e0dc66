"""The package logger. Placeholder until the logging module lands (colour on TTY, sf_log.txt)."""

import logging

log = logging.getLogger("sf")
if not log.handlers:
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("[%(asctime)s,%(msecs)03d][%(process)05d] %(message)s", "%Y-%m-%d %H:%M:%S"))
    log.addHandler(_handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False
