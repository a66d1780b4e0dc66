"""Throughput tuner: ``python -m sample_factory.tune --train_script=MODULE --env=ENV [training flags]``.

It runs short benchmark-mode trials of the real training script on this machine, changing only settings that do not
change the learning maths (workers, envs per worker, splits, batched sampling, inference workers; the batch size only
with ``--tune_batch_size=True``), prints what it measured, and as its last line the fastest full command. Roles:
:mod:`.options` (flags and command lines), :mod:`.search` (candidates, constraints, ranking), :mod:`.trial` (one
trial's process), :mod:`.logparse` (FPS and profile from its output), :mod:`.tuner` (the loop and the time budget),
:mod:`.report` (the table and the command). See docs/tuning.md.
"""
