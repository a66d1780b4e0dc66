"""No module of the package outside ``sample_factory/compat/`` touches a private name of torch, multiprocessing,
faster-fifo or glibc: every such reach lives in one compat module per library, behind a version check.

Read from the source (``ast``): an import of a private module (``torch._dynamo``, ``multiprocessing.forkserver``'s
``_forkserver``), an attribute chain rooted at one of those libraries that passes a private name
(``torch._C._foo``, ``forkserver._forkserver``), one of the private attributes those libraries give their objects
(``optimizer._init_group``, ``module._forward_hooks``, ``tensor._version``, ``atexit._clear``), or any use of
``ctypes`` (how glibc is reached). Those attribute names are caught as strings too (``getattr(m, "_forward_hooks")``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "sample_factory"
LIBRARIES = ("torch", "multiprocessing", "faster_fifo", "atexit", "ctypes")
# private attributes of those libraries' objects (modules, optimisers, tensors), reached through any variable
PRIVATE_OBJECT_ATTRIBUTES = {
    "_init_group", "_compiled_call_impl", "_call_impl", "_version", "_forward_hooks", "_forward_pre_hooks",
    "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
    "_forkserver", "_forkserver_pid", "_forkserver_address", "_forkserver_alive_fd", "_clear",
    "_dynamo", "_C", "_opt_called", "_optimizer_step_code", "_disable_dynamo",
}  # fmt: skip


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    library_aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in LIBRARIES:
                    library_aliases.add(alias.asname or top)
                    if any(_private(part) for part in alias.name.split(".")[1:]) or top == "ctypes":
                        found.append(f"{path.name}:{node.lineno} import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            top = node.module.split(".")[0]
            if top in LIBRARIES:
                parts = node.module.split(".")[1:] + [a.name for a in node.names]
                if any(_private(part) for part in parts) or top == "ctypes":
                    found.append(f"{path.name}:{node.lineno} from {node.module} import ...")
                library_aliases.update(a.asname or a.name for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in PRIVATE_OBJECT_ATTRIBUTES:
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
                continue
            chain, root = [node.attr], node.value
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in library_aliases and any(_private(p) for p in chain):
                found.append(f"{path.name}:{node.lineno} {root.id}.{'.'.join(reversed(chain))}")
        elif isinstance(node, ast.Constant) and node.value in PRIVATE_OBJECT_ATTRIBUTES:
            found.append(f"{path.name}:{node.lineno} {node.value!r}")  # getattr(module, "_forward_hooks") and kin
    return found


def _package_files() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if "compat" not in p.relative_to(PACKAGE).parts[:1]]


@pytest.mark.parametrize("path", _package_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_name_of_a_dependency_outside_compat(path: Path) -> None:
    assert violations(path) == [], "move this into sample_factory/compat/<library>_internals.py behind a version check"


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import torch\nimport ctypes\nfrom multiprocessing import forkserver\nimport torch._dynamo\n"
        "x = torch._C._get_tracing_state()\ny = forkserver._forkserver\nz = opt._init_group\n"
        "w = getattr(m, '_forward_hooks')\nok = torch.nn.Linear(obj._private_of_ours)\n"
    )
    found = violations(sample)
    assert {int(f.split(":")[1].split()[0]) for f in found} == {2, 4, 5, 6, 7, 8}, found
