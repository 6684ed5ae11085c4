"""Role names (ARCHITECTURE.md, "The files of a domain"): a role file means the same in
every domain, as the test-folder rule (tests/test_architecture.py) holds for tests.

Read from the source with `ast`, like the other house rules; what each role may not do:

- `api.py` is the partner API: its router is mounted under `/v1`; `merchant_api.py` is
  the merchant JSON API, under `/merchant/api`; `web.py` holds pages, under neither. A
  router mounted under `/merchant/api` lives in a `merchant_api.py`, and one under `/v1`
  in an `api.py` or another `…_api.py` (connect's `platform_api.py`, `oauth_api.py`).
  Where each router is mounted is read from `app.py` (`include_router`, and the console's
  routers under `/merchant`) and the router's own `prefix`.
- Routes (`api.py`, `merchant_api.py`, `web.py`) are thin: they build and run no SQL.
- `service.py` holds rules: no HTTP framework, never commits, no routes.
- `queries.py` holds SQL: no HTTP framework, never commits, no routes.
- `schemas.py` holds shapes and builds replies: it runs no statement, never commits, and
  holds no routes; a public `…_json` function (a reply) lives in a `schemas.py`.
- `models.py` holds tables: each of its classes declares a `__tablename__`, and it has no
  public function.
- `tasks.py` holds the worker's tasks: every task the worker runs (`worker.registered_tasks`)
  lives in a `tasks.py`, and every `tasks.py` holds one; no HTTP framework, no routes.
- `deps.py` holds FastAPI dependencies: no routes, and in a domain never a commit (the one
  commit point is `partnerlink/deps.py`).

The planted violations at the end show that each rule fails when broken.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator

import pytest

from partnerlink.worker import registered_tasks
from tests.test_architecture import PACKAGE, _sources

# What each role file holds; keep in step with ARCHITECTURE.md's table.
ROLES: dict[str, str] = {
    "api.py": "thin partner-API routes under /v1",
    "merchant_api.py": "the domain's part of the merchant JSON API under /merchant/api",
    "web.py": "the domain's HTML pages",
    "service.py": "rules (no HTTP; never commits)",
    "queries.py": "SQL",
    "schemas.py": "request and response shapes; replies are built here",
    "tasks.py": "worker tasks",
    "models.py": "tables",
    "deps.py": "FastAPI dependencies",
}
ROUTE_ROLES = ("api.py", "merchant_api.py", "web.py")

_HTTP = ("fastapi", "starlette")
_ROUTE_METHODS = {"get", "post", "put", "patch", "delete", "head", "options", "api_route"}
_STATEMENT_BUILDERS = {"select", "insert", "update", "delete", "text", "table"}
_STATEMENT_RUNS = {"execute", "scalar", "scalars", "exec_driver_sql"}


def _imports_http(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        if any(name.split(".")[0] in _HTTP for name in names):
            return True
    return False


def _calls(tree: ast.Module, names: set[str]) -> Iterator[ast.Call]:
    """Method calls `x.name(...)` of these names."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in names
        ):
            yield node


def _commits(tree: ast.Module) -> list[int]:
    return [call.lineno for call in _calls(tree, {"commit"})]


def _routes(tree: ast.Module) -> list[int]:
    """Where the module declares a router or a route."""
    found: list[int] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "APIRouter"
        ):
            found.append(node.lineno)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Attribute)
                    and decorator.func.attr in _ROUTE_METHODS
                ):
                    found.append(decorator.lineno)
    return found


def _statements(tree: ast.Module) -> list[int]:
    """Where the module builds SQL (imports a statement builder) or runs a statement."""
    found = [call.lineno for call in _calls(tree, _STATEMENT_RUNS)]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("sqlalchemy")
            and any(alias.name in _STATEMENT_BUILDERS for alias in node.names)
        ):
            found.append(node.lineno)
    return found


def _not_tables(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and not any(
            isinstance(statement, ast.Assign | ast.AnnAssign)
            and any(
                isinstance(target, ast.Name) and target.id == "__tablename__"
                for target in (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
            )
            for statement in node.body
        ):
            found.append(f"class {node.name} is no table")
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            found.append(f"public function {node.name}")
    return found


def _replies(tree: ast.Module) -> list[str]:
    """Public `…_json` functions that return something: replies (a printer is none)."""
    return [
        f"{node.name} (line {node.lineno})"
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.endswith("_json")
        and not node.name.startswith("_")
        and not (isinstance(node.returns, ast.Constant) and node.returns.value is None)
    ]


Rule = Callable[[ast.Module], list[str]]


def _none(what: str, found: Callable[[ast.Module], list[int]]) -> Rule:
    """A rule: the role does nothing `found` finds."""

    def rule(tree: ast.Module) -> list[str]:
        lines = found(tree)
        return [f"{what} (line {', '.join(map(str, sorted(lines)))})"] if lines else []

    return rule


def _no_http(tree: ast.Module) -> list[str]:
    return ["imports an HTTP framework (fastapi, starlette)"] if _imports_http(tree) else []


NO_COMMIT = _none("commits: the request's session dependency is the one commit point", _commits)
NO_ROUTES = _none("declares a router or routes", _routes)
NO_SQL = _none("builds or runs SQL (a route is thin: its rule and SQL are elsewhere)", _statements)
RUNS_NO_STATEMENT = _none(
    "runs a statement", lambda tree: [call.lineno for call in _calls(tree, _STATEMENT_RUNS)]
)

# The rules of each role (beside the mounts, checked across modules below).
RULES: dict[str, tuple[Rule, ...]] = {
    "api.py": (NO_COMMIT, NO_SQL),
    "merchant_api.py": (NO_COMMIT, NO_SQL),
    "web.py": (NO_COMMIT, NO_SQL),
    "service.py": (_no_http, NO_COMMIT, NO_ROUTES),
    "queries.py": (_no_http, NO_COMMIT, NO_ROUTES),
    "schemas.py": (NO_COMMIT, NO_ROUTES, RUNS_NO_STATEMENT),
    "models.py": (_no_http, NO_ROUTES, _not_tables),
    "tasks.py": (_no_http, NO_ROUTES),
    "deps.py": (NO_COMMIT, NO_ROUTES),
}


def role_problems(where: str, source: str) -> list[str]:
    """What a module, at `where` under src/partnerlink, does against its role."""
    tree = ast.parse(source)
    name = where.rsplit("/", 1)[-1]
    problems: list[str] = []
    if "/" in where:  # a domain's file (top-level modules such as deps.py are no role files)
        for rule in RULES.get(name, ()):
            problems += [f"{where} ({ROLES[name]}): {found}" for found in rule(tree)]
    if name != "schemas.py":
        problems += [
            f"{where}: builds a reply, {reply}: replies are built in schemas.py"
            for reply in _replies(tree)
        ]
    return problems


# Where app.py mounts the routers: `app.include_router(module.router, prefix=...)`, also in
# a loop over routers; the console's routers (create_console_app) under /merchant.
def _module_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> module (`from partnerlink.orders import api as orders_api`)."""
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("partnerlink"):
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _router_modules(
    node: ast.expr, names: dict[str, str], loops: dict[str, list[ast.expr]]
) -> Iterator[tuple[str, str]]:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in names:
            yield names[node.value.id], node.attr
    elif isinstance(node, ast.Name) and node.id in loops:
        for item in loops[node.id]:
            yield from _router_modules(item, names, {})


def mounts(app_source: str) -> dict[tuple[str, str], str]:
    """(module, router attribute) -> the prefix app.py mounts it under."""
    tree = ast.parse(app_source)
    names = _module_names(tree)
    found: dict[tuple[str, str], str] = {}

    def visit(node: ast.AST, loops: dict[str, list[ast.expr]]) -> None:
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and isinstance(node.iter, ast.Tuple | ast.List)
        ):
            loops = {**loops, node.target.id: list(node.iter.elts)}
        if isinstance(node, ast.Call) and node.args:
            _mount(node, names, loops, found)
        for child in ast.iter_child_nodes(node):
            visit(child, loops)

    visit(tree, {})
    return found


def _mount(
    call: ast.Call,
    names: dict[str, str],
    loops: dict[str, list[ast.expr]],
    found: dict[tuple[str, str], str],
) -> None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "include_router":
        if isinstance(func.value, ast.Attribute) and func.value.attr == "webhooks":
            return  # the webhook events' reference: in the document, never served
        prefix = next(
            (
                keyword.value.value
                for keyword in call.keywords
                if keyword.arg == "prefix" and isinstance(keyword.value, ast.Constant)
            ),
            "",
        )
        for key in _router_modules(call.args[0], names, loops):
            found[key] = str(prefix)
    elif isinstance(func, ast.Name) and func.id == "create_console_app":
        for argument in call.args[1:]:
            for key in _router_modules(argument, names, loops):
                found[key] = "/merchant"


def _own_prefix(source: str, attribute: str) -> str:
    """The `prefix=` of the module's `attribute = APIRouter(prefix=...)`."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == attribute for t in node.targets)
            and isinstance(node.value, ast.Call)
        ):
            for keyword in node.value.keywords:
                if keyword.arg == "prefix" and isinstance(keyword.value, ast.Constant):
                    return str(keyword.value.value)
    return ""


def mount_problems(mounted: dict[tuple[str, str], str], sources: dict[str, str]) -> list[str]:
    """Routers mounted against their file's role; `sources` by module name."""
    problems: list[str] = []
    for (module, attribute), prefix in sorted(mounted.items()):
        where = module.removeprefix("partnerlink.").replace(".", "/") + ".py"
        name = where.rsplit("/", 1)[-1]
        path = prefix + _own_prefix(sources.get(module, ""), attribute)
        under_v1 = path == "/v1" or path.startswith("/v1/")
        under_merchant_api = path == "/merchant/api" or path.startswith("/merchant/api/")
        wrong = (
            (name == "api.py" and not under_v1)
            or (name == "merchant_api.py" and not under_merchant_api)
            or (name == "web.py" and (under_v1 or under_merchant_api))
            or (under_merchant_api and name != "merchant_api.py")
            or (under_v1 and not (name == "api.py" or name.endswith("_api.py")))
            or (under_v1 and name == "merchant_api.py")
        )
        if wrong:
            role = ROLES.get(name, "named by what it holds")
            problems.append(f"{where}.{attribute} is mounted at {path or '/'}: {where} is {role}")
    return problems


def task_problems(task_modules: list[str], tasks_files: list[str]) -> list[str]:
    """Worker tasks outside a tasks.py, and tasks.py files that hold no worker task."""
    problems = [
        f"the worker runs a task of {module}: worker tasks live in a tasks.py"
        for module in task_modules
        if not module.endswith(".tasks")
    ]
    problems += [
        f"{module}: a tasks.py holds worker tasks, and the worker runs none of it"
        for module in tasks_files
        if module not in task_modules
    ]
    return problems


def _task_modules() -> list[str]:
    found = []
    for _, task in registered_tasks():
        function = task.func if isinstance(task, functools.partial) else task
        found.append(function.__module__)
    return found


def _module(path_under_package: str) -> str:
    return "partnerlink." + path_under_package.removesuffix(".py").replace("/", ".")


def test_every_role_file_keeps_to_its_role() -> None:
    problems = [
        problem
        for path in _sources()
        if "migrations" not in path.relative_to(PACKAGE).parts
        for problem in role_problems(
            str(path.relative_to(PACKAGE)), path.read_text(encoding="utf-8")
        )
    ]
    assert not problems, "role files doing what their role is not:\n" + "\n".join(problems)


def test_routers_are_mounted_where_their_role_says() -> None:
    sources = {
        _module(str(path.relative_to(PACKAGE))): path.read_text(encoding="utf-8")
        for path in _sources()
    }
    problems = mount_problems(mounts(sources["partnerlink.app"]), sources)
    assert not problems, "\n".join(problems)


def test_every_worker_task_lives_in_a_tasks_py() -> None:
    tasks_files = sorted(
        _module(str(path.relative_to(PACKAGE))) for path in _sources() if path.name == "tasks.py"
    )
    problems = task_problems(_task_modules(), tasks_files)
    assert not problems, "\n".join(problems)


def test_the_roles_are_the_ones_architecture_md_names() -> None:
    text = (PACKAGE.parents[1] / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("One set of role names", 1)[1].split("\n\n", 2)[1]
    named = {line.split("`")[1] for line in table.splitlines() if line.startswith("| `")}
    assert named == set(ROLES)


# Planted violations: each snippet, put at its place, must be reported with its words.
PLANTED: dict[str, tuple[str, str, str]] = {
    "a service that speaks HTTP": (
        "stores/service.py",
        "from fastapi import Request\n",
        "imports an HTTP framework",
    ),
    "a service that commits": (
        "stores/service.py",
        "def save(session) -> None:\n    session.commit()\n",
        "commits",
    ),
    "a service with a route": (
        "stores/service.py",
        "from partnerlink.stores.api import router\n\n@router.get('/x')\ndef x() -> None: ...\n",
        "declares a router or routes",
    ),
    "queries that commit": (
        "orders/queries.py",
        "def save(connection) -> None:\n    connection.commit()\n",
        "commits",
    ),
    "a route that runs SQL": (
        "stores/api.py",
        "from sqlalchemy import select\n\n"
        "def view(session) -> None:\n    session.scalars(select(1))\n",
        "builds or runs SQL",
    ),
    "a page that commits": (
        "console/web.py",
        "def page(session) -> None:\n    session.commit()\n",
        "commits",
    ),
    "a schema that runs a statement": (
        "orders/schemas.py",
        "def order_json(session, pk) -> dict:\n    return session.execute(pk).one()._asdict()\n",
        "runs a statement",
    ),
    "a model that is no table": (
        "orders/models.py",
        "class Totals:\n    count: int\n",
        "class Totals is no table",
    ),
    "a models.py with a rule": (
        "orders/models.py",
        "def classify(order) -> str:\n    return 'new'\n",
        "public function classify",
    ),
    "a task that serves HTTP": (
        "receipts/tasks.py",
        "from starlette.requests import Request\n",
        "imports an HTTP framework",
    ),
    "deps that commit": (
        "merchant/deps.py",
        "def session(sessions):\n    s = sessions()\n    s.commit()\n",
        "commits",
    ),
    "a reply built in a service": (
        "destinations/service.py",
        "def destination_json(destination) -> dict:\n    return {}\n",
        "replies are built in schemas.py",
    ),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_planted_role_violation_is_reported(case: str) -> None:
    where, source, words = PLANTED[case]
    problems = role_problems(where, source)
    assert any(words in problem for problem in problems), problems


def test_the_planted_snippets_are_fine_where_their_role_allows_them() -> None:
    # The same lines in files named by what they hold (rules), or in the right role.
    assert role_problems("stores/rules.py", PLANTED["a service that speaks HTTP"][1]) == []
    assert role_problems("orders/intake/journal.py", "def f(s):\n    s.commit()\n") == []
    assert role_problems("destinations/schemas.py", "def d_json(d) -> dict:\n    return {}\n") == []
    assert role_problems("stores/queries.py", "from sqlalchemy import select\n") == []


PLANTED_APP = """
from partnerlink.destinations.connections import api as connections_api
from partnerlink.orders import api as orders_api
from partnerlink.orders import web as orders_web
from partnerlink.stores import merchant_api as stores_merchant_api
from partnerlink.stores import rules

def _include_routers(app):
    app.include_router(orders_api.router, prefix="/v1")
    for router in (connections_api.router, rules.router):
        app.include_router(router, prefix="/merchant/api")
    app.include_router(stores_merchant_api.router, prefix="/v1")
    console = create_console_app(app.state, orders_web.router)
"""


def test_a_planted_misplaced_router_is_reported() -> None:
    problems = mount_problems(mounts(PLANTED_APP), {})
    assert problems == [
        "destinations/connections/api.py.router is mounted at /merchant/api: "
        "destinations/connections/api.py is thin partner-API routes under /v1",
        "stores/merchant_api.py.router is mounted at /v1: stores/merchant_api.py is "
        "the domain's part of the merchant JSON API under /merchant/api",
        "stores/rules.py.router is mounted at /merchant/api: stores/rules.py is named by "
        "what it holds",
    ]


def test_a_planted_task_outside_tasks_py_is_reported() -> None:
    problems = task_problems(
        ["partnerlink.receipts.tasks", "partnerlink.audiences.stored_sizes"],
        ["partnerlink.receipts.tasks", "partnerlink.idempotency.tasks"],
    )
    assert problems == [
        "the worker runs a task of partnerlink.audiences.stored_sizes: worker tasks live in a "
        "tasks.py",
        "partnerlink.idempotency.tasks: a tasks.py holds worker tasks, and the worker runs "
        "none of it",
    ]
