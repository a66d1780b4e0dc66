"""Learner throughput on synthetic batches: how many samples per second SGD can consume, no envs involved.

``python -m sample_factory.algo.learning.learner_benchmark [--device=cpu|gpu] [--iterations=5] [--warmup=2]
[--num_threads=N] [--cases NAME ...] [--compare_gru_bptt]``

Cases bracket the usual workloads: a CartPole-sized MLP + GRU and a Doom-sized conv net + GRU (3x72x128 uint8
observations, ``convnet_simple``, GRU 512, ``Discrete(6)``), the latter also with the minibatch and hyper-parameters
of ``bench/compare_sf2.py``'s ``doom_basic_matched``. Each iteration is one ``prepare_batch`` and one ``train`` call
on a fresh random batch; the first ``--warmup`` iterations are not timed (allocator and kernel warm-up). Like the
learner process, the benchmark keeps freed large tensors in the heap (``reuse_freed_memory_for_large_tensors``).
"""

from __future__ import annotations

import argparse
import time
import types
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch

from sample_factory.algo.learning.learner import Learner
from sample_factory.cfg.arguments import default_cfg
from sample_factory.model.action_distributions import calc_num_action_parameters
from sample_factory.model.core import ModelCoreRNN
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.torch_utils import reuse_freed_memory_for_large_tensors, synchronize
from sample_factory.utils.typing import Config


@dataclass
class BenchmarkCase:
    name: str
    obs_space: gym.spaces.Box
    action_space: gym.Space
    overrides: dict


CASES = [
    BenchmarkCase(
        "cartpole_mlp_gru",
        gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
        gym.spaces.Discrete(2),
        dict(encoder_mlp_layers=[64, 64], rnn_size=64, batch_size=1024, rollout=32, recurrence=32),
    ),
    BenchmarkCase(
        "cartpole_gym_defaults",  # the Gymnasium family's defaults: 4 epochs x 4 minibatches of 256, no RNN
        gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
        gym.spaces.Discrete(2),
        dict(
            encoder_mlp_layers=[64, 64],
            nonlinearity="tanh",
            use_rnn=False,
            rollout=32,
            recurrence=1,
            batch_size=256,
            num_batches_per_epoch=4,
            num_epochs=4,
            learning_rate=1e-3,
            normalize_input=True,
        ),
    ),  # fmt: skip
    BenchmarkCase(
        "doom_basic_matched",  # the learner of bench/compare_sf2.py's doom_basic_matched workload
        gym.spaces.Box(0, 255, (3, 72, 128), np.uint8),
        gym.spaces.Discrete(6),
        dict(
            encoder_conv_architecture="convnet_simple",
            rnn_size=512,
            batch_size=512,
            rollout=32,
            recurrence=32,
            learning_rate=3e-4,
            obs_scale=255.0,
            normalize_input=True,
            exploration_loss="symmetric_kl",
            exploration_loss_coeff=0.001,
            ppo_clip_value=0.2,
            normalize_returns=True,
        ),
    ),
    BenchmarkCase(
        "doom_conv_gru",
        gym.spaces.Box(0, 255, (3, 72, 128), np.uint8),
        gym.spaces.Discrete(6),
        dict(encoder_conv_architecture="convnet_simple", rnn_size=512, batch_size=2048, rollout=32, recurrence=32),
    ),
]


def make_case_cfg(case: BenchmarkCase, device: str) -> Config:
    cfg = default_cfg(env="learner_benchmark")
    for key, value in {"device": device, "num_batches_per_epoch": 1, "num_epochs": 1, **case.overrides}.items():
        setattr(cfg, key, value)
    return cfg


def random_trajectories(cfg: Config, case: BenchmarkCase) -> TensorDict:
    """A batch in the sampler's layout filled with random data (occasional episode ends inside segments)."""
    n, t = cfg.batch_size * cfg.num_batches_per_epoch // cfg.rollout, cfg.rollout
    shape = case.obs_space.shape
    if case.obs_space.dtype == np.uint8:
        obs = torch.randint(0, 256, (n, t + 1, *shape), dtype=torch.uint8)
    else:
        obs = torch.randn(n, t + 1, *shape)
    dones = (torch.rand(n, t) < 0.02).float()
    return TensorDict(
        obs=TensorDict(obs=obs),
        rnn_states=torch.randn(n, t + 1, get_rnn_size(cfg)) * 0.1,
        actions=torch.randint(0, int(case.action_space.n), (n, t)),
        log_prob_actions=-torch.rand(n, t),
        action_logits=torch.randn(n, t, calc_num_action_parameters(case.action_space)),
        values=torch.randn(n, t),
        rewards=torch.randn(n, t),
        dones=dones,
        time_outs=torch.zeros(n, t),
        valids=torch.ones(n, t, dtype=torch.bool),
        policy_version=torch.zeros(n, t, dtype=torch.int64),
    )


def run_case(case: BenchmarkCase, device: str, iterations: int, warmup: int) -> dict[str, float]:
    """Median seconds per batch of ``prepare_batch`` and ``train`` (robust to a busy machine), and the SGD
    throughput in samples/s."""
    cfg, learner = _make_learner(case, device)
    steps = [_timed_step(cfg, case, learner) for _ in range(warmup + iterations)][warmup:]
    train_time = float(np.median([train for _, train in steps]))
    return dict(
        samples=cfg.batch_size * cfg.num_batches_per_epoch,
        prepare_s=float(np.median([prepare for prepare, _ in steps])),
        train_s=train_time,
        sgd_samples_per_s=cfg.batch_size * cfg.num_batches_per_epoch / train_time,
        device=str(learner.device),
    )


def compare_gru_bptt(case: BenchmarkCase, device: str, iterations: int, warmup: int) -> dict[str, float]:
    """Median ``train`` seconds with the library's GRU cores on ``nn.GRU`` and on the BPTT kernel
    (``model/gru_bptt.py``), alternating step by step in one learner so that the machine's drift hits both alike."""
    cfg, learner = _make_learner(case, device)
    cores = [module for module in learner.actor_critic.modules() if isinstance(module, ModelCoreRNN)]
    if not any(core.gru_bptt for core in cores):
        raise ValueError(f"case {case.name}: the learner does not use the GRU BPTT kernel (see its log line)")
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for iteration in range(2 * (warmup + iterations)):
        kernel = bool(iteration % 2)
        for core in cores:
            core.gru_bptt = kernel
        _, train = _timed_step(cfg, case, learner)
        if iteration >= 2 * warmup:
            seconds[kernel].append(train)
    return dict(train_s_nn_gru=float(np.median(seconds[False])), train_s_kernel=float(np.median(seconds[True])))


def _make_learner(case: BenchmarkCase, device: str) -> tuple[Config, Learner]:
    cfg = make_case_cfg(case, device)
    learner = Learner(cfg, types.SimpleNamespace(obs_space=case.obs_space, action_space=case.action_space))
    learner.init()
    return cfg, learner


def _timed_step(cfg: Config, case: BenchmarkCase, learner: Learner) -> tuple[float, float]:
    """Seconds of one ``prepare_batch`` and one ``train`` on a fresh random batch."""
    trajectories = random_trajectories(cfg, case)
    start = time.perf_counter()
    batch = learner.prepare_batch(trajectories)
    synchronize(cfg, learner.device)
    prepared = time.perf_counter()
    learner.train(batch)
    synchronize(cfg, learner.device)
    return prepared - start, time.perf_counter() - prepared


def format_table(results: dict[str, dict[str, float]]) -> str:
    lines = [
        "| case | device | batch | prepare_batch s | train s | SGD samples/s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r['device']} | {r['samples']} | {r['prepare_s']:.3f} | {r['train_s']:.3f} "
            f"| {r['sgd_samples_per_s']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="gpu", choices=["gpu", "cpu"], help="gpu falls back to cpu without CUDA")
    parser.add_argument("--iterations", type=int, default=5, help="timed batches per case")
    parser.add_argument("--warmup", type=int, default=2, help="untimed batches per case before measuring")
    parser.add_argument("--cases", nargs="*", default=[c.name for c in CASES], help="subset of cases to run")
    parser.add_argument("--num_threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    parser.add_argument(
        "--compare_gru_bptt",
        action="store_true",
        help="instead: train steps of the GRU cases alternately through nn.GRU and the GRU BPTT kernel "
        "(--iterations of each)",
    )
    args = parser.parse_args()
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)  # fewer threads measure more stably on a shared, busy CPU
    torch.manual_seed(0)
    reuse_freed_memory_for_large_tensors()  # as the learner process does: no page faults on every large batch
    cases = [case for case in CASES if case.name in args.cases]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads")
    if args.compare_gru_bptt:
        print("| case | train s, nn.GRU | train s, GRU BPTT kernel | ratio |")
        print("| --- | --- | --- | --- |")
        for case in cases:
            if case.overrides.get("use_rnn", True):
                r = compare_gru_bptt(case, args.device, args.iterations, args.warmup)
                ratio = r["train_s_kernel"] / r["train_s_nn_gru"]
                print(f"| {case.name} | {r['train_s_nn_gru']:.3f} | {r['train_s_kernel']:.3f} | {ratio:.3f} |")
        return
    results = {case.name: run_case(case, args.device, args.iterations, args.warmup) for case in cases}
    print(format_table(results))


if __name__ == "__main__":
    main()
