"""Which policies may act for which agents, and the spaces each policy sees.

Agents of a multi-agent env may have different observation and action spaces (``EnvInfo.agent_obs_spaces`` /
``agent_action_spaces``). Agents with equal spaces form a *space group*; a policy belongs to exactly one group, and
its model, trajectory buffers, batches and normalisers are built for that group's spaces. Nothing is padded to a
common shape: each group has trajectory buffers of its own.

Who belongs to which group:

- ``--agent_to_policy=0,0,1`` fixes each agent's policy; a policy's group is the one of its agents (all of which must
  have equal spaces), and every policy must act for some agent.
- otherwise policy ``p`` belongs to group ``p % G`` (``G`` groups), and each agent draws, per episode, among the
  policies of its group. With one group (every agent alike, the common case) that is every policy, as it always was.
"""

from __future__ import annotations

import gymnasium as gym

from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.typing import Config


class PolicySpacesError(ValueError):
    """The policies cannot be matched to the agents' spaces with these flags."""


class PolicySpaces:
    """The agent -> policy candidates and policy -> space group of a run (plain data: pickled to every process)."""

    def __init__(self, cfg: Config, env_info: EnvInfo) -> None:
        self.env_info = env_info
        self.num_policies = int(cfg.num_policies)
        self.agent_group = env_info.space_groups()
        self.num_groups = max(self.agent_group) + 1
        if self.num_groups > 1 and cfg.batched_sampling:
            raise PolicySpacesError(
                "the env's agents have different observation/action spaces, but --batched_sampling=True steps all "
                "actors of a split as one array of one shape: run with --batched_sampling=False"
            )
        if cfg.agent_to_policy:
            fixed = parse_agent_to_policy(cfg.agent_to_policy, env_info.num_agents, self.num_policies)
            self.policy_group = self._groups_of_fixed_policies(fixed)
            self.agent_candidates = [[p] for p in fixed]
        else:
            self._check_enough_policies()
            self.policy_group = [p % self.num_groups for p in range(self.num_policies)]
            self.agent_candidates = [self.policies_of_group(g) for g in self.agent_group]

    @property
    def heterogeneous(self) -> bool:
        return self.num_groups > 1

    def policies_of_group(self, group: int) -> list[int]:
        return [p for p in range(self.num_policies) if self.policy_group[p] == group]

    def group_spaces(self, group: int) -> tuple[gym.Space, gym.Space]:
        """The observation and action space of the agents of ``group``."""
        return self.env_info.agent_spaces(self.agent_group.index(group))

    def env_info_of_group(self, group: int) -> EnvInfo:
        """The env info as the policies of ``group`` see it: their spaces as ``obs_space``/``action_space``."""
        if not self.heterogeneous:
            return self.env_info
        return self.env_info.with_spaces(*self.group_spaces(group))

    def env_info_of(self, policy_id: int) -> EnvInfo:
        """The env info of ``policy_id``: what its model, buffers and learner are built for."""
        return self.env_info_of_group(self.policy_group[policy_id])

    def same_spaces(self, policy_a: int, policy_b: int) -> bool:
        """Whether weights of one policy fit the other (PBT copies only between such policies)."""
        return self.policy_group[policy_a] == self.policy_group[policy_b]

    def _check_enough_policies(self) -> None:
        if self.num_groups > self.num_policies:
            kinds = "; ".join(
                f"agents {[a for a, g in enumerate(self.agent_group) if g == group]}"
                for group in range(self.num_groups)
            )
            raise PolicySpacesError(
                f"the env's agents have {self.num_groups} different pairs of observation/action spaces ({kinds}) "
                f"and each needs a policy of its own, but --num_policies={self.num_policies}: "
                f"use --num_policies={self.num_groups} (or a multiple of it), or map agents with --agent_to_policy"
            )

    def _groups_of_fixed_policies(self, fixed: list[int]) -> list[int]:
        groups: list[int | None] = [None] * self.num_policies
        for agent, policy in enumerate(fixed):
            group = self.agent_group[agent]
            if groups[policy] is not None and groups[policy] != group:
                raise PolicySpacesError(
                    f"--agent_to_policy gives policy {policy} agents with different spaces (agent {agent} has "
                    f"{self.env_info.agent_spaces(agent)}): one policy acts only for agents with equal spaces"
                )
            groups[policy] = group
        unused = [p for p, g in enumerate(groups) if g is None]
        if unused:
            raise PolicySpacesError(
                f"--agent_to_policy maps no agent to policies {unused}: map an agent to every policy, or lower "
                f"--num_policies to {self.num_policies - len(unused)}"
            )
        return groups  # type: ignore[return-value]


def parse_agent_to_policy(text: str, num_agents: int, num_policies: int) -> list[int]:
    """``"0,0,1"`` -> ``[0, 0, 1]``, checked against the env's agents and ``--num_policies``."""
    try:
        policies = [int(item) for item in text.split(",")]
    except ValueError:
        raise PolicySpacesError(
            f"--agent_to_policy={text!r} is not a comma-separated list of policy indices (e.g. 0,0,1)"
        ) from None
    if len(policies) != num_agents:
        raise PolicySpacesError(
            f"--agent_to_policy={text!r} names {len(policies)} policies but the env has {num_agents} agents: "
            "give one policy index per agent"
        )
    bad = [p for p in policies if not 0 <= p < num_policies]
    if bad:
        raise PolicySpacesError(
            f"--agent_to_policy={text!r} names policies {bad} outside 0..{num_policies - 1} (--num_policies)"
        )
    return policies
