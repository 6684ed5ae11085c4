"""The module contract (ARCHITECTURE.md): which top-level package may import which.

Read from the source with `ast`, the way a reviewer would: every import counts,
whether at the top of a module or (against the house rules) inside a function.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "partnerlink"

# What most domains import: "(+ shared)" in ARCHITECTURE.md's table.
SHARED = "db deps problems security settings"

# Each top-level package or module of src/partnerlink, and what it may import (besides
# itself), in ARCHITECTURE.md's table's order: lower layers first, each listed below all
# that it may import (test_the_allowed_directions_go_down_the_table). The table says the
# same (test_architecture_md_lists_the_allowed_directions).
ALLOWED: dict[str, frozenset[str]] = {
    name: frozenset(targets.split())
    for name, targets in {
        # partnerlink/__init__.py (__version__).
        "__init__": "",
        # Domain-free rules (digests, storable text, currencies): everyone may import it.
        "kit": "",
        # Shared machinery: imports no domain.
        "settings": "",
        "phones": "",
        "log_format": "",
        "problems": "",
        "security": "",
        "validation": "problems",
        "middleware": "log_format problems",
        "db": "problems settings",
        # Background jobs over domain rows (claim, lease, backoff): below every domain.
        "jobs": "",
        "deps": "db settings",
        "idempotency": "db problems settings",
        "ops": "problems",
        "web": "deps problems security settings",
        # Domains, each importing only those above it.
        "partners": "db problems security",
        "webhooks": f"{SHARED} jobs partners",
        "tokens": f"{SHARED} partners webhooks",
        "stores": f"{SHARED} phones tokens",
        "merchant": f"{SHARED} partners stores tokens web webhooks",
        "pairing": f"{SHARED} merchant partners stores",
        "connect": f"{SHARED} merchant partners stores tokens web",
        "customers": f"{SHARED} jobs merchant phones stores tokens webhooks",
        "apidocs": "__init__ merchant problems",
        "sandbox": f"{SHARED} connect merchant pairing partners stores webhooks",
        # The e-receipt rule and its outbox rows (receipts/outbox.py) sit below orders,
        # which writes them in its own transaction and renders the receipt page.
        "receipts": f"{SHARED} customers jobs stores",
        "orders": (
            f"{SHARED} customers idempotency merchant middleware receipts stores tokens"
            " validation web"
        ),
        # What puts the domains together.
        "console": f"{SHARED} customers merchant orders pairing partners stores web",
        "measurement": f"{SHARED} customers idempotency merchant orders stores web",
        "audiences": f"{SHARED} customers jobs measurement merchant orders receipts stores web",
        # Ad platforms: clients (meta, google), identifiers from audiences' normalization,
        # the sync engine over the jobs leases.
        "destinations": (
            f"{SHARED} audiences customers jobs measurement merchant orders partners stores web"
        ),
        "worker": "audiences customers destinations idempotency orders receipts settings webhooks",
        "models": (
            "audiences connect customers db destinations idempotency measurement merchant"
            " orders pairing partners receipts stores tokens webhooks"
        ),
        # Alembic's scripts: env.py reads the model registry; nothing imports them.
        "migrations": "db models",
        "app": (
            "__init__ apidocs audiences connect console customers db destinations measurement"
            " merchant middleware ops orders pairing problems receipts sandbox security"
            " settings stores tokens validation web webhooks worker"
        ),
        "cli": (
            "audiences db destinations log_format measurement merchant ops orders pairing"
            " partners problems receipts security settings stores webhooks worker"
        ),
        "__main__": "cli",
    }.items()
}

# The bottom layer: it imports nothing of ours, and every package may import it.
EVERYONE_MAY_IMPORT = frozenset({"kit"})

# Project imports allowed inside a function, by module and function, each with its why
# (ARCHITECTURE.md). They still count in the directions above.
IMPORTS_INSIDE_FUNCTIONS_ALLOWED: dict[str, str] = {
    "orders/intake/barrier.py:settle_journal": (
        "the journal's applier is imported only when orders wait: every command-line "
        "start runs the barrier and nearly always finds none"
    ),
    "customers/storage/configured.py:upload_storage": "boto3 is imported only where S3 is used",
}


def _unit(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _modules(node: ast.AST, path: Path) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
            package = package[: len(package) - (node.level - 1)]
            return [".".join([*package, *([node.module] if node.module else [])])]
        if node.module == "partnerlink":
            return [f"partnerlink.{alias.name}" for alias in node.names]
        return [node.module or ""]
    return []


def _target(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "partnerlink":
        return None
    if len(parts) == 1:
        return "__init__"
    if not (PACKAGE / parts[1]).is_dir() and not (PACKAGE / f"{parts[1]}.py").is_file():
        return "__init__"  # a name defined in partnerlink/__init__.py (__version__)
    return parts[1]


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for module in _modules(node, path):
                target = _target(module)
                if target is not None and target != _unit(path):
                    where = f"{path.relative_to(PACKAGE)}:{node.lineno}"
                    found[(_unit(path), target)].append(where)
    return found


def test_every_import_follows_the_allowed_directions() -> None:
    broken = [
        f"{source} -> {target} ({', '.join(places)})"
        for (source, target), places in sorted(_imports().items())
        if target not in ALLOWED.get(source, frozenset()) and target not in EVERYONE_MAY_IMPORT
    ]
    assert not broken, "imports outside ARCHITECTURE.md's directions:\n" + "\n".join(broken)


def test_every_package_is_in_the_contract() -> None:
    units = {_unit(path) for path in _sources()}
    assert units <= set(ALLOWED), f"add to ARCHITECTURE.md and ALLOWED: {units - set(ALLOWED)}"


def test_the_allowed_directions_have_no_cycle() -> None:
    done: set[str] = set()

    def visit(unit: str, trail: tuple[str, ...]) -> None:
        if unit in trail:
            pytest.fail(f"cycle in ALLOWED: {' -> '.join((*trail, unit))}")
        if unit in done:
            return
        for target in ALLOWED.get(unit, frozenset()):
            visit(target, (*trail, unit))
        done.add(unit)

    for unit in ALLOWED:
        visit(unit, ())


def test_the_allowed_directions_go_down_the_table() -> None:
    # Lower layers first: every package is listed below all that it may import.
    order = list(ALLOWED)
    upward = [
        f"{unit} may import {target}, listed below it"
        for unit, targets in ALLOWED.items()
        for target in sorted(targets)
        if order.index(target) > order.index(unit)
    ]
    assert not upward, "\n".join(upward)


def _layer_table() -> list[tuple[list[str], str]]:
    """ARCHITECTURE.md's layer table: (its packages, what they may import), in order."""
    text = (PACKAGE.parents[1] / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("| package | what it holds | may import |", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in table.strip().splitlines()[1:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        rows.append((re.findall(r"`([a-z_]+)`", cells[0]), cells[-1]))
    return rows


def _named_imports(cell: str) -> frozenset[str] | None:
    """The packages a "may import" cell names; None for "anything below" and the like."""
    if cell.startswith("nothing of ours"):
        return frozenset()
    if "anything below" in cell or "every domain" in cell:
        return None
    cell = cell.split(" — ")[0].replace("(+ shared)", SHARED)
    return frozenset(re.findall(r"[a-z_]+", cell))


def test_architecture_md_lists_the_allowed_directions() -> None:
    rows = _layer_table()
    listed = [name for names, _ in rows for name in names]
    assert set(listed) == set(ALLOWED) - {"__init__", "__main__"}
    wrong = [
        f"{name}: ARCHITECTURE.md says {sorted(named)}, ALLOWED {sorted(ALLOWED[name])}"
        for names, cell in rows
        for name in names
        # partnerlink/__init__.py is the version string, named by no row.
        if (named := _named_imports(cell)) is not None and named != ALLOWED[name] - {"__init__"}
    ]
    assert not wrong, "\n".join(wrong)
    # The same order as ALLOWED: lower layers first.
    assert listed == [name for name in ALLOWED if name in listed]


def test_project_imports_sit_at_the_top_of_their_module() -> None:
    inside: list[str] = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if any(_target(m) for m in _modules(node, path)):
                    inside.append(f"{path.relative_to(PACKAGE)}:{function.name}")
    unexpected = sorted(set(inside) - set(IMPORTS_INSIDE_FUNCTIONS_ALLOWED))
    assert not unexpected, f"project imports inside functions: {unexpected}"


def test_no_source_file_is_over_400_lines() -> None:
    big = {
        str(path.relative_to(PACKAGE)): lines
        for path in _sources()
        # A migration is a frozen record of one schema step, never edited once shipped.
        if path.parent != PACKAGE / "migrations" / "versions"
        and (lines := path.read_text(encoding="utf-8").count("\n")) > 400
    }
    assert not big, f"split these files: {big}"


def test_every_package_has_a_test_folder_of_its_own() -> None:
    # Tests mirror src/: a package's tests are found under its own name.
    tests = PACKAGE.parents[1] / "tests"
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py"))}
    missing = sorted(name for name in packages if not (tests / name / "__init__.py").is_file())
    assert not missing, f"give these packages a tests/<package>/ folder: {missing}"


# A figure: a number with a unit of time, memory or share ("~30 us", "0.75-0.81 s", "13%").
_FIGURE = re.compile(r"\d[\d,.]*(?:\s?-\s?\d[\d,.]*)?\s?(?:µs|us|ms|s|%|KB|MB|KiB|MiB)(?!\w)")
_MEASUREMENT = re.compile(r"measured|bench/|py-spy", re.IGNORECASE)


def _comment_blocks(source: str) -> list[tuple[int, str]]:
    """(line, text) of each docstring paragraph and each run of comment lines."""
    blocks: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None and isinstance(node.body[0], ast.Expr):
                blocks += [(node.body[0].lineno, part) for part in docstring.split("\n\n")]
    run: list[str] = []
    start = last = 0
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        if run and token.start[0] != last + 1:
            blocks.append((start, " ".join(run)))
            run = []
        if not run:
            start = token.start[0]
        run.append(token.string)
        last = token.start[0]
    if run:
        blocks.append((start, " ".join(run)))
    return blocks


def measured_figures(source: str) -> list[str]:
    """Figures in a comment or docstring paragraph that tells of a measurement."""
    return [
        f"line {line}: {figure.group(0)}"
        for line, text in _comment_blocks(source)
        if _MEASUREMENT.search(text)
        for figure in _FIGURE.finditer(text)
    ]


def test_measured_figures_are_in_bench_readme_not_in_code_comments() -> None:
    # A comment says why and points to bench/README.md, which keeps the figures.
    found = [
        f"{path.relative_to(PACKAGE)} {figure}"
        for path in _sources()
        if "migrations" not in path.relative_to(PACKAGE).parts
        for figure in measured_figures(path.read_text(encoding="utf-8"))
    ]
    assert not found, "move these figures to bench/README.md:\n" + "\n".join(found)


def test_a_planted_figure_in_a_comment_is_reported() -> None:
    planted = '''"""Fast (measured: ~30 us a request)."""

# Measured with bench/orders.py: 15-20% less CPU an order.
X = 1
# A timeout of 10 s (not a measurement).
Y = 2
'''
    assert measured_figures(planted) == ["line 1: 30 us", "line 3: 15-20%"]
