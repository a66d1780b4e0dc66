"""The one module that talks to the Hugging Face Hub, through ``huggingface_hub``'s public API only.

``huggingface_hub`` is optional (the ``huggingface`` extra). It is imported when a transfer starts, so the rest
of the library and the scripts' ``--help`` work without it, and its absence is one error naming the extra.
``endpoint`` and ``token`` default to the library's own settings: ``HF_ENDPOINT``, then ``HF_TOKEN`` or the token
``hf auth login`` saved. Every failure of a transfer becomes a :class:`HubError` naming the repository, the
endpoint and what to check, instead of a traceback from deep inside an HTTP client.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from sample_factory.cfg.validation import hf_repository_problem
from sample_factory.envs.env_utils import require_optional_module

HUB_PACKAGE = "huggingface_hub"
HUB_EXTRA = "huggingface"
DEFAULT_ENDPOINT = "https://huggingface.co"
LOGIN_HINT = "log in with `hf auth login` (or set HF_TOKEN) using a token with write access"


class HubError(RuntimeError):
    """A Hub transfer that could not be done; the message names the repository and the fix."""


def import_hub() -> ModuleType:
    """The ``huggingface_hub`` module, or MissingDependencyError with ``pip install "sample-factory[huggingface]"``."""
    return require_optional_module(HUB_PACKAGE, HUB_EXTRA, "Sharing agents on the Hugging Face Hub")


def check_repo_id(repo_id: str, flag: str = "-r") -> None:
    """Raise HubError unless ``repo_id`` is ``USER/REPO`` with a name that can also be a folder name."""
    problem = hf_repository_problem(repo_id, flag)
    if problem:
        raise HubError(problem)


def endpoint_of(endpoint: str | None) -> str:
    """The Hub address a transfer uses, for messages: the argument, else ``HF_ENDPOINT``, else huggingface.co."""
    return endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


def upload_folder(
    folder: str,
    repo_id: str,
    *,
    commit_message: str,
    private: bool = False,
    endpoint: str | None = None,
    token: str | None = None,
) -> str:
    """Create ``repo_id`` if needed and commit every file of ``folder`` to it; returns the commit's URL."""
    check_repo_id(repo_id)
    hub = import_hub()
    where = endpoint_of(endpoint)
    if not (token or hub.get_token()):
        raise HubError(f"no Hugging Face token found to upload {repo_id} to {where}: {LOGIN_HINT}")
    api = hub.HfApi(endpoint=endpoint, token=token)
    try:
        api.create_repo(repo_id, repo_type="model", private=private, exist_ok=True)
        commit = api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message)
    except Exception as exc:  # HTTP, connection and validation errors of the client all end the upload
        raise HubError(
            f"uploading to {repo_id} at {where} failed: {_first_line(exc)}. Check the network, and that you are "
            f"allowed to write to {repo_id}: {LOGIN_HINT}"
        ) from exc
    return str(getattr(commit, "commit_url", None) or f"{where}/{repo_id}")


def download_repo(repo_id: str, local_dir: str, *, endpoint: str | None = None, token: str | None = None) -> str:
    """Download every file of ``repo_id``'s main revision into ``local_dir`` (plain files); returns ``local_dir``."""
    check_repo_id(repo_id)
    hub = import_hub()
    errors = importlib.import_module(f"{HUB_PACKAGE}.errors")
    where = endpoint_of(endpoint)
    try:
        hub.snapshot_download(repo_id=repo_id, repo_type="model", local_dir=local_dir, endpoint=endpoint, token=token)
    except errors.RepositoryNotFoundError as exc:
        raise HubError(
            f"no model repository {repo_id} at {where}: check the name (USER/REPO), or log in with `hf auth login` "
            "(or set HF_TOKEN) if it is private"
        ) from exc
    except Exception as exc:  # any client error ends the download; the caller removes the partial folder
        raise HubError(f"downloading {repo_id} from {where} failed: {_first_line(exc)}. Check the network") from exc
    return local_dir


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
