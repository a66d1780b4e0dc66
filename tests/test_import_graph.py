"""The house's rule: the package's rooms import only downwards, and no module takes part in an import cycle.

The graph is read from the source (``ast``), so it includes the imports made inside functions and under
``TYPE_CHECKING``: a dependency that only a type annotation needs is still a dependency of the design. A room is a
package (or a top-level entry module); ``ROOMS`` lists them from the bottom of the house to the top, and a module
may import modules of its own room or of rooms listed before it. The re-export modules that keep Sample Factory 2's
paths (``algo/utils/*``) import downwards like everything else, so they need no exception.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = "sample_factory"
ROOT = Path(__file__).resolve().parent.parent

# bottom to top; the most specific prefix of a module decides its room
ROOMS = [
    "sample_factory.compat",  # reaches into other libraries' private state, each behind a version check
    "sample_factory.utils",
    "sample_factory.messaging",
    "sample_factory.envs",
    "sample_factory.cfg",
    "sample_factory.model",
    "sample_factory.algo.utils",
    "sample_factory.algo.runners",
    "sample_factory.algo.sampling",
    "sample_factory.algo.learning",
    "sample_factory.pbt",
    "sample_factory.huggingface",  # the Hub library part: model card, staging, upload
    "sample_factory.train",
    "sample_factory.enjoy",
    "sample_factory.eval",
    "sample_factory.export_onnx",
    "sample_factory.huggingface.push_to_hub",  # command line: records a replay with enjoy when needed
    "sample_factory.huggingface.load_from_hub",
    "sample_factory.launcher",
    "sample_factory.tune",
]


def _module_files() -> dict[str, Path]:
    modules = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _module_files()


def _resolve(name: str) -> str | None:
    """The package module ``name`` refers to (a name imported from a module resolves to that module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path | None = None) -> set[str]:
    path = MODULES[module] if path is None else path
    tree = ast.parse(path.read_text(), filename=str(path))
    package_parts = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package_parts[: len(package_parts) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(target for name in names if name.startswith(PACKAGE) and (target := _resolve(name)))
    found.discard(module)
    return found


GRAPH = {module: _imports(module) for module in MODULES}


def room_of(module: str) -> str:
    matches = [room for room in ROOMS if module == room or module.startswith(room + ".")]
    if not matches:
        raise AssertionError(f"{module} belongs to no room of ROOMS: add its room in its place in the house")
    return max(matches, key=len)


def test_every_module_has_a_room() -> None:
    homeless = []
    for module in MODULES:
        if module == PACKAGE or module == "sample_factory.algo":
            continue
        try:
            room_of(module)
        except AssertionError:
            homeless.append(module)
    assert homeless == []


def test_imports_go_only_down_the_house() -> None:
    level = {room: i for i, room in enumerate(ROOMS)}
    upward = []
    for module, targets in GRAPH.items():
        if module in (PACKAGE, "sample_factory.algo"):
            continue
        for target in targets:
            if target in (PACKAGE, "sample_factory.algo"):
                continue
            if level[room_of(target)] > level[room_of(module)]:
                upward.append(f"{module} -> {target}")
    assert sorted(upward) == []


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components: any component of more than one module is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH.get(module, ()):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    assert cycles == []


def test_sampling_imports_nothing_of_learning() -> None:
    sampling = [m for m in MODULES if m.startswith("sample_factory.algo.sampling")]
    crossing = [f"{m} -> {t}" for m in sampling for t in GRAPH[m] if t.startswith("sample_factory.algo.learning")]
    assert crossing == []


def test_learning_imports_nothing_of_sampling() -> None:
    """The two sides of a run meet only above them (``sample_factory.train`` composes their loops)."""
    learning = [m for m in MODULES if m.startswith("sample_factory.algo.learning")]
    crossing = [f"{m} -> {t}" for m in learning for t in GRAPH[m] if t.startswith("sample_factory.algo.sampling")]
    assert crossing == []


def test_the_checker_sees_an_upward_import(tmp_path) -> None:
    """The graph reader finds imports made inside functions and under TYPE_CHECKING (what the rule must see)."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from sample_factory.algo.learning.learner import Learner\n"
        "def f():\n    from sample_factory.train import run_rl\n"
    )
    path = tmp_path / "probe.py"
    path.write_text(source)
    found = _imports("sample_factory.utils.probe", path)
    assert found == {"sample_factory.algo.learning.learner", "sample_factory.train"}
    assert room_of("sample_factory.utils.probe") == "sample_factory.utils"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_imports(module: str) -> None:
    importlib.import_module(module)
