"""A rollout worker's part when the runner restarts one of its peers (see ``runners.respawn``).

- an inference worker died: requests to it are held back (the ones it had not answered are lost with its inbox)
  and all of them are sent again once it is back;
- a policy's learner died: the slots its batcher held come back at once, and the trajectories of that policy's
  agents are dropped (their slots reused) until it is back.

Every ``*_lost`` message is answered with ``on_restart_ack``: the runner starts the replacement only once every
peer has stopped sending to the dead one.
"""

from __future__ import annotations

from sample_factory.algo.utils.wiring import RUNNER


class PeerRestarts:
    """Mixed into :class:`~sample_factory.algo.sampling.rollout_worker.RolloutWorker` (uses its fields)."""

    def on_inference_worker_lost(self, name: str, token: int) -> None:
        """``name`` died: hold back requests to it until it is back (its inbox is emptied before it restarts)."""
        self.inference_down.update(p for p, target in enumerate(self._inference_targets) if target == name)
        self.send(RUNNER, "on_restart_ack", token, self.name, None)

    def on_inference_worker_restarted(self, name: str) -> None:
        """Send ``name`` again every request it owes an answer to: they were lost with it or held back."""
        policies = [p for p, target in enumerate(self._inference_targets) if target == name]
        self.inference_down.difference_update(policies)
        if self.stopped or not self.runners:
            return
        for split, awaiting in enumerate(self._awaiting):
            for policy in policies:
                if awaiting & (1 << policy):
                    self._send_request(split, policy)

    def on_learner_lost(self, policy_id: int, token: int) -> None:
        """The learner (and batcher) of ``policy_id`` died: its slots come back here now, and until it is back the
        trajectories of its agents are dropped instead of sent."""
        self.learners_down.add(policy_id)
        reclaimed = [slot for slot, p in self.handed_out.items() if p == policy_id]
        self.send(RUNNER, "on_restart_ack", token, self.name, None)
        if reclaimed:
            self.on_slots_freed(reclaimed)

    def on_learner_restarted(self, policy_id: int) -> None:
        self.learners_down.discard(policy_id)
