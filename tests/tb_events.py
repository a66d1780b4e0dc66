"""Read scalar tags from TensorBoard event files (TFRecord framing + tensorboardX's Event protobuf)."""

from __future__ import annotations

import glob
import os
import struct

from tensorboardX.proto import event_pb2


def read_scalars(folder: str) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value), ...] over every event file in ``folder``."""
    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*"))):
        with open(path, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 12 <= len(data):
            (length,) = struct.unpack("<Q", data[pos : pos + 8])
            record = data[pos + 12 : pos + 12 + length]
            pos += 12 + length + 4
            event = event_pb2.Event()
            event.ParseFromString(record)
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out
