"""A rollout worker's view of its peers while the runner restarts one of them (see ``runners.respawn``).

- an inference worker died: requests to it are held back (the ones it had not answered are lost with its inbox)
  and all of them are sent again once it is back;
- a policy's learner died: the slots its batcher held come back at once, and the trajectories of that policy's
  agents are dropped (their slots reused) until it is back.

:class:`PeerOutages` owns which policies are cut off; the rollout worker's message slots (``on_*_lost``,
``on_*_restarted``) update it and act on their own state. Every ``*_lost`` message is answered with
``on_restart_ack``: the runner starts the replacement only once every peer has stopped sending to the dead one.
"""

from __future__ import annotations


class PeerOutages:
    """Policies whose inference worker or learner is down, for one rollout worker.

    ``inference_targets[policy]`` is the inference worker this rollout worker asks for that policy's actions.
    """

    def __init__(self, inference_targets: list[str]) -> None:
        self.inference_targets = inference_targets
        self.inference_down: set[int] = set()  # requests for these policies wait
        self.learners_down: set[int] = set()  # trajectories of these policies are dropped

    def served_by(self, inference_worker: str) -> list[int]:
        return [p for p, target in enumerate(self.inference_targets) if target == inference_worker]

    def inference_lost(self, inference_worker: str) -> None:
        self.inference_down.update(self.served_by(inference_worker))

    def inference_back(self, inference_worker: str) -> list[int]:
        """The policies ``inference_worker`` serves again: their held-back requests are to be sent."""
        policies = self.served_by(inference_worker)
        self.inference_down.difference_update(policies)
        return policies

    def learner_lost(self, policy_id: int) -> None:
        self.learners_down.add(policy_id)

    def learner_back(self, policy_id: int) -> None:
        self.learners_down.discard(policy_id)
