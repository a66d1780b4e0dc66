"""Sample Factory 2's module path; the code lives in :mod:`sample_factory.model.action_distributions`."""

from sample_factory.model.action_distributions import (  # noqa: F401 (each name re-exported at Sample Factory 2's path)
    ActionDistribution,
    CategoricalActionDistribution,
    ContinuousActionDistribution,
    TupleActionDistribution,
    argmax_actions,
    buffer_actions,
    calc_num_action_parameters,
    calc_num_actions,
    get_action_distribution,
    is_all_discrete,
    is_continuous_action_space,
    masked_log_softmax,
    masked_softmax,
    register_action_distribution,
    sample_actions_log_probs,
)
