"""PBT end to end, in parallel and serial mode: a crippled policy is replaced, files round-trip through a resume."""

from __future__ import annotations

import json
import os
import re

import pytest
from sf_run import run_script
from tb_events import read_scalars

from sample_factory.algo.learning.pbt_exchange import HYPERPARAMETER_BOUNDS

HERE = os.path.dirname(os.path.abspath(__file__))
CRIPPLED_LR = 1e-8
_SAVED_RE = re.compile(r"PBT: policy (\d) saved its weights for policy (\d) \(digest (\w+)\)")
_TAKEN_RE = re.compile(r"PBT: policy (\d) now trains from the weights of policy (\d) \(digest (\w+), donor's (\w+)\)")


def _train(tmp_path, serial: bool, steps: int, extra: tuple[str, ...] = ()):
    args = [
        "--env=sign_env", "--num_policies=2", "--with_pbt=True", "--pbt_start_mutation=3000",
        "--pbt_period_env_steps=2000", "--pbt_replace_reward_gap=0.1", "--pbt_mutation_rate=0.5",
        "--learning_rate=0.001", "--num_workers=2", "--num_envs_per_worker=4", "--rollout=16", "--batch_size=256",
        f"--train_for_env_steps={steps}", "--device=cpu", "--seed=1", f"--serial_mode={serial}",
        "--experiment_summaries_interval=1", "--decorrelate_experience_max_seconds=0", f"--train_dir={tmp_path}",
        "--experiment=sign", *extra,
    ]  # fmt: skip
    result = run_script(os.path.join(HERE, "sign_env_train.py"), args, timeout=240)
    assert result.returncode == 0, result.explain()
    return result


def _policy_files(folder) -> dict[str, dict]:
    names = [n for n in sorted(os.listdir(folder)) if n.startswith("policy_")]
    return {n: json.loads((folder / n).read_text()) for n in names}


@pytest.mark.parametrize(
    "serial, batched", [(False, False), (True, False), (False, True)], ids=["parallel_async", "serial_sync", "batched"]
)
def test_a_crippled_policy_is_replaced_by_the_better_one(tmp_path, serial: bool, batched: bool):
    # batched sampling steps each split as one batch; its actors still draw their policy per episode, and the
    # split's requests go to each policy's inference worker: PBT works the same in both sampling modes
    folder = tmp_path / "sign"
    folder.mkdir()
    (folder / "policy_01_cfg.json").write_text(json.dumps({"learning_rate": CRIPPLED_LR}))  # start it crippled
    extra = (f"--async_rl={not serial}", f"--batched_sampling={batched}")
    result = _train(tmp_path, serial, steps=12_000, extra=extra)
    out = result.output
    assert f"PBT: loaded the hyper-parameters of policy 1 from {folder / 'policy_01_cfg.json'}" in out
    assert "PBT: replacing policy 1 with policy 0" in out, result.explain()
    saved, taken = _SAVED_RE.findall(out), _TAKEN_RE.findall(out)
    assert ("0", "1") in [(d, r) for d, r, _ in saved]
    for recipient, donor, digest, donor_digest in taken:
        assert digest == donor_digest  # the recipient's weights equal the donor's at the moment of the copy
        assert (donor, recipient, digest) in saved
    files = _policy_files(folder)
    assert set(files) == {f"policy_0{p}_{kind}.json" for p in (0, 1) for kind in ("cfg", "reward_shaping")}
    assert files["policy_01_cfg.json"]["learning_rate"] > CRIPPLED_LR  # it has the donor's (mutated) values now
    for params in (files["policy_00_cfg.json"], files["policy_01_cfg.json"]):
        for name, (low, high) in HYPERPARAMETER_BOUNDS.items():
            assert low <= params[name] <= high or params[name] == 0.0
    assert not os.listdir(folder / "pbt")  # every donor file was loaded and removed
    tags = read_scalars(str(folder / ".summary" / "1"))
    assert "zz_pbt/learning_rate" in tags and "zz_pbt/rew_right" in tags


def test_the_policy_files_round_trip_through_a_resume(tmp_path):
    folder = tmp_path / "sign"
    _train(tmp_path, serial=False, steps=6_000)
    before = _policy_files(folder)
    # no PBT round in the resumed run: what it uses is exactly what it read back
    result = _train(tmp_path, serial=False, steps=9_000, extra=("--pbt_start_mutation=1000000",))
    for p in (0, 1):
        assert (
            f"PBT: loaded the hyper-parameters of policy {p} from {folder / f'policy_0{p}_cfg.json'}" in result.output
        )
        assert f"PBT: loaded the reward shaping of policy {p} from" in result.output
        assert f"PBT: policy {p} loaded its hyper-parameters from" in result.output  # the learner applied them
    assert _policy_files(folder) == before
    lr_tags = read_scalars(str(folder / ".summary" / "1"))["zz_pbt/learning_rate"]
    assert lr_tags[-1][1] == pytest.approx(before["policy_01_cfg.json"]["learning_rate"], rel=1e-6)
