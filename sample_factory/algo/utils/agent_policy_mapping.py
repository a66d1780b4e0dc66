"""Which policy acts for an agent's next episode (Sample Factory 2's ``AgentPolicyMapping``).

The rule is the one the rollout workers follow: each agent draws among the policies that fit its spaces
(``PolicySpaces.agent_candidates``: every policy when all agents are alike, the single one ``--agent_to_policy``
names when that flag is set). With ``--pbt_mix_policies_in_one_env=True`` every agent draws on its own; otherwise
one draw per env, made when agent 0 starts an episode, decides for all agents of that env, so they share a policy
(among agents with other spaces: the same index into their own candidates).
"""

from __future__ import annotations

import random

from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.typing import Config, PolicyID


class AgentPolicyMapping:
    """Draws the policy of each agent's next episode; see the module docstring for the rule.

    ``rng`` (a ``random.Random``) makes the draws reproducible; a fresh unseeded one by default.
    """

    def __init__(self, cfg: Config, env_info: EnvInfo, rng: random.Random | None = None) -> None:
        self.spaces = PolicySpaces(cfg, env_info)
        self.num_agents = int(env_info.num_agents)
        self.num_policies = int(cfg.num_policies)
        self.mix_policies_in_one_env = bool(cfg.pbt_mix_policies_in_one_env)
        self.rng = rng if rng is not None else random.Random()
        self.env_policies: dict[int, list[PolicyID]] = {}  # global env index -> policy of each of its agents

    def get_policy_for_agent(self, agent_idx: int, env_idx: int, global_env_idx: int) -> PolicyID:
        """The policy for the episode agent ``agent_idx`` of env ``global_env_idx`` starts now.

        ``env_idx`` (the env's index within its worker) is accepted for Sample Factory 2's callers; the draw depends
        only on the agent and on the run-wide ``global_env_idx``.
        """
        if not 0 <= agent_idx < self.num_agents:
            raise ValueError(f"agent_idx={agent_idx} is not an agent of an env with {self.num_agents} agents")
        candidates = self.spaces.agent_candidates
        if self.mix_policies_in_one_env:
            return self.rng.choice(candidates[agent_idx])
        if agent_idx == 0 or global_env_idx not in self.env_policies:
            k = self.rng.randrange(len(candidates[0]))
            self.env_policies[global_env_idx] = [options[k % len(options)] for options in candidates]
        return self.env_policies[global_env_idx][agent_idx]
