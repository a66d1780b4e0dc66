"""Errors for user code (an env, a custom model) that broke the interface the library relies on.

Such an error cannot fix itself: recreating the env (``--env_error_behavior=recreate``) or restarting the worker
would hit it again, so the run stops at once. Its message already says which env or model, what it returned, what
was expected and how to fix it, so the workers log the message alone, without a traceback into library code.
"""

from __future__ import annotations


class ContractError(RuntimeError):
    """User code returned something the library cannot use; the message names the cause and the fix."""


class EnvContractError(ContractError):
    """An env's ``reset``/``step`` broke the Gymnasium API or its own spaces, or returned NaN/inf."""


class PolicyOutputError(ContractError):
    """A model produced non-finite action distribution parameters (NaN or inf logits, means or stddevs)."""
