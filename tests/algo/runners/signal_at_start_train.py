"""Training script that sends stop signals while its run starts (used by test_start_up_signals.py).

``--signal_hook`` names the observer hook that sends them: ``on_init`` (before any shared memory exists) or
``on_connect_components`` (buffers made, the fork server running, no worker started yet); ``--signal_count`` how many
SIGTERMs; ``--signal_group=True`` sends them to the whole process group, as a launcher or Slurm does.
"""

import os
import signal
import sys

from sample_factory.algo.runners.runner import AlgoObserver
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.train import make_runner
from sample_factory.utils.utils import str2bool
from sf_examples.gym.gym_utils import register_gym_env


class SignalsWhileStarting(AlgoObserver):
    def __init__(self, hook: str, count: int, group: bool) -> None:
        self.hook, self.count, self.group = hook, count, group

    def on_init(self, runner) -> None:
        self._send("on_init")

    def on_connect_components(self, runner) -> None:
        self._send("on_connect_components")

    def _send(self, hook: str) -> None:
        if hook != self.hook:
            return
        for _ in range(self.count):
            if self.group:
                os.killpg(os.getpgid(0), signal.SIGTERM)
            else:
                signal.raise_signal(signal.SIGTERM)  # its Python handler runs before this call returns
        print(f"{hook} returned", flush=True)


def main() -> int:
    parser, _ = parse_sf_args()
    parser.add_argument("--signal_hook", default="on_init", choices=["on_init", "on_connect_components"])
    parser.add_argument("--signal_count", type=int, default=1)
    parser.add_argument("--signal_group", type=str2bool, default=False)
    parser.set_defaults(use_rnn=False, encoder_mlp_layers=[32])
    cfg = parse_full_cfg(parser)
    register_gym_env(cfg.env)
    cfg, runner = make_runner(cfg)
    runner.register_observer(SignalsWhileStarting(cfg.signal_hook, cfg.signal_count, cfg.signal_group))
    status = runner.init()
    if status == 0:
        status = runner.run()
    return status


if __name__ == "__main__":
    sys.exit(main())
