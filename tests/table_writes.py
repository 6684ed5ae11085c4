"""Which tables a module's ORM code writes, read with `ast` (tests/test_table_owners.py).

An ORM write is one of:

- a model made: a mapped class called (`Store(...)`);
- an attribute set: a mapped attribute of a model instance assigned (`store.pos_type = ...`,
  `store.pos_type += ...`, `setattr(store, "pos_type", ...)`);
- a statement: a model class, its `__table__` (or a name bound to it) or an instance given to
  a call named `…insert`, `…update`, `…delete` or `…upsert` (`insert(Store)`,
  `session.delete(store)`, `insert_new(connection, Store.__table__, rows)`), or a table's own
  `.insert()`, `.update()` or `.delete()`.

Which names hold model instances is read from types, as mypy would, never guessed from a
name: a parameter or variable annotated with a model (`store: Store`, `Store | None`,
`list[Store]`); a name bound to `session.get(Store, …)`, to `session.scalar(select(Store)…)`
(one) or `session.scalars(select(Store)…)` (many), to a call of a project function or method
whose return annotation names a model (`owned_store(...) -> Store`, also through a tuple or
a dataclass field), to a loop over many, or to another such name; a `Row`'s attribute named
after a model (`row.Partner`). A name bound to several things is each of them (the reading
is flow-insensitive), so a write through any of its bindings counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# A value's type as far as the writes care: the classes of an instance, the element classes
# of a collection, the items of a tuple, a mapped class itself, or a model's Table.
Inst = tuple[str, frozenset[str]]  # ("inst" | "many" | "class" | "table", qualified names)
Type = tuple[Any, ...]

_ONE = {"scalar", "scalar_one", "scalar_one_or_none", "first", "one", "one_or_none"}
_RESULTS = _ONE | {"scalars", "all", "unique", "fetchall", "yield_per"}
_ONE_OF_MANY = {"next"}
_MANY_OF_MANY = {"list", "sorted", "reversed", "set", "frozenset", "tuple", "iter"}
_COLLECTIONS = {
    "list",
    "set",
    "frozenset",
    "Sequence",
    "MutableSequence",
    "Iterable",
    "Iterator",
    "Collection",
    "Generator",
    "AsyncIterator",
    "AsyncIterable",
    "ScalarResult",
}
_PASS_THROUGH = {"Optional", "Mapped", "Annotated", "Final", "ClassVar"}
_WRITE_NAMES = ("insert", "update", "delete", "upsert")


def _union(*types: Type | None) -> Type | None:
    """The union of types of one kind (instances with instances); else the first known."""
    known = [t for t in types if t is not None]
    if not known:
        return None
    kind = known[0][0]
    if kind in ("inst", "many", "class", "table") and all(t[0] == kind for t in known):
        return (kind, frozenset().union(*(t[1] for t in known)))
    return known[0]


@dataclass
class Module:
    name: str
    tree: ast.Module
    where: str = ""  # its path under the package, e.g. "stores/service.py"
    # local name -> ("module", dotted) | ("symbol", module, name)
    imports: dict[str, tuple[str, ...]] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)


@dataclass
class Models:
    """The mapped classes, by qualified name (`partnerlink.stores.models.Store`)."""

    tables: dict[str, str]  # class -> its table
    attributes: dict[str, frozenset[str]]  # class -> its mapped attributes
    relations: dict[str, dict[str, tuple[str, bool]]]  # class -> attribute -> (class, many)

    @classmethod
    def of(cls, registry: Any) -> Models:
        tables: dict[str, str] = {}
        attributes: dict[str, frozenset[str]] = {}
        relations: dict[str, dict[str, tuple[str, bool]]] = {}
        for mapper in registry.mappers:
            name = f"{mapper.class_.__module__}.{mapper.class_.__name__}"
            tables[name] = mapper.local_table.name
            attributes[name] = frozenset(mapper.attrs.keys())
            relations[name] = {
                key: (f"{r.mapper.class_.__module__}.{r.mapper.class_.__name__}", r.uselist)
                for key, r in mapper.relationships.items()
            }
        return cls(tables, attributes, relations)


class Index:
    """Every module of the project: its imports, functions and classes, to resolve names."""

    def __init__(self, models: Models) -> None:
        self.models = models
        self.modules: dict[str, Module] = {}

    @classmethod
    def of_package(cls, package: Path, models: Models) -> Index:
        index = cls(models)
        for path in sorted(package.rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            module = index.add(
                module_name(path, package), source, package=path.name == "__init__.py"
            )
            module.where = str(path.relative_to(package))
        return index

    def with_module(self, name: str, source: str) -> Index:
        """A copy of the index with one more module (a planted snippet)."""
        copy = Index(self.models)
        copy.modules = dict(self.modules)
        copy.add(name, source)
        return copy

    def add(self, name: str, source: str, *, package: bool = False) -> Module:
        """Reads one module (`package`: an `__init__.py`, whose relative imports start at
        itself)."""
        module = Module(name, ast.parse(source))
        home = name if package else name.rpartition(".")[0]
        for statement in module.tree.body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                module.functions[statement.name] = statement
            elif isinstance(statement, ast.ClassDef):
                module.classes[statement.name] = statement
        for node in ast.walk(module.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        module.imports[alias.asname] = ("module", alias.name)
                    else:
                        top = alias.name.split(".")[0]
                        module.imports[top] = ("module", top)
            elif isinstance(node, ast.ImportFrom):
                source_module = node.module or ""
                if node.level:
                    parts = home.split(".")
                    parts = parts[: len(parts) - (node.level - 1)]
                    source_module = ".".join([*parts, *([node.module] if node.module else [])])
                for alias in node.names:
                    local = alias.asname or alias.name
                    module.imports[local] = ("symbol", source_module, alias.name)
        self.modules[name] = module
        return module

    def resolve(
        self, module: str, name: str, seen: frozenset[str] = frozenset()
    ) -> tuple[str, str]:
        """What `name` means in `module`: ("class" | "function" | "module", qualified name),
        or ("", "") when it is nothing of ours."""
        key = f"{module}:{name}"
        found = self.modules.get(module)
        if found is None or key in seen:
            return ("", "")
        if name in found.classes:
            return ("class", f"{module}.{name}")
        if name in found.functions:
            return ("function", f"{module}.{name}")
        imported = found.imports.get(name)
        if imported is None:
            return ("", "")
        if imported[0] == "module":
            return ("module", imported[1])
        _, source, symbol = imported
        if f"{source}.{symbol}" in self.modules:
            return ("module", f"{source}.{symbol}")
        return self.resolve(source, symbol, seen | {key})

    def resolve_expr(self, module: str, node: ast.expr) -> tuple[str, str]:
        """`resolve` for a name or a dotted name (`tokens.open_connection`)."""
        if isinstance(node, ast.Name):
            return self.resolve(module, node.id)
        if isinstance(node, ast.Attribute):
            kind, base = self.resolve_expr(module, node.value)
            if kind == "module":
                if f"{base}.{node.attr}" in self.modules:
                    return ("module", f"{base}.{node.attr}")
                return self.resolve(base, node.attr)
        return ("", "")

    def definition(self, qualified: str) -> tuple[Module, ast.AST] | None:
        """The module and node of a qualified class or function name."""
        module_name, _, name = qualified.rpartition(".")
        module = self.modules.get(module_name)
        if module is None:
            return None
        node = module.functions.get(name) or module.classes.get(name)
        return None if node is None else (module, node)

    def annotation(self, module: str, node: ast.expr | None) -> Type | None:
        """The type an annotation names, in the module where it is written."""
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                return self.annotation(module, ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return _union(self.annotation(module, node.left), self.annotation(module, node.right))
        if isinstance(node, ast.Subscript):
            outer = node.value.attr if isinstance(node.value, ast.Attribute) else None
            outer = node.value.id if isinstance(node.value, ast.Name) else outer
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if outer in _PASS_THROUGH:
                return self.annotation(module, items[0])
            if outer == "Union":
                return _union(*(self.annotation(module, item) for item in items))
            if outer in _COLLECTIONS:
                inner = self.annotation(module, items[0])
                return ("many", inner[1]) if inner and inner[0] == "inst" else None
            if outer == "type":
                inner = self.annotation(module, items[0])
                return ("class", inner[1]) if inner and inner[0] == "inst" else None
            if outer == "tuple":
                if len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is ...:
                    inner = self.annotation(module, items[0])
                    return ("many", inner[1]) if inner and inner[0] == "inst" else None
                return ("tuple", tuple(self.annotation(module, item) for item in items))
            return None
        kind, qualified = self.resolve_expr(module, node)
        return ("inst", frozenset({qualified})) if kind == "class" else None

    def returns(self, qualified: str) -> Type | None:
        """What a project function returns, or what calling a project class makes."""
        found = self.definition(qualified)
        if found is None:
            return None
        module, node = found
        if isinstance(node, ast.ClassDef):
            return ("inst", frozenset({qualified}))
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        return self.annotation(module.name, node.returns)

    def member(self, qualified: str, name: str) -> Type | None:
        """A class's field, property or relationship, or what its method returns (as a
        callable: ("method", return type))."""
        relation = self.models.relations.get(qualified, {}).get(name)
        if relation is not None:
            target, many = relation
            return ("many" if many else "inst", frozenset({target}))
        found = self.definition(qualified)
        if found is None or not isinstance(found[1], ast.ClassDef):
            return None
        module, node = found[0], found[1]
        for statement in node.body:
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id == name
            ):
                return self.annotation(module.name, statement.annotation)
            if (
                isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
                and statement.name == name
            ):
                returned = self.annotation(module.name, statement.returns)
                is_property = any(
                    isinstance(d, ast.Name) and d.id in ("property", "cached_property")
                    for d in statement.decorator_list
                )
                return returned if is_property else ("method", returned)
        return None


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _Scope:
    """One function's (or the module's) names and their types, flow-insensitive."""

    def __init__(self, index: Index, module: str, outer: dict[str, Type]) -> None:
        self.index = index
        self.module = module
        self.names: dict[str, Type] = dict(outer)

    def bind(self, target: ast.expr, value: Type | None) -> bool:
        """Binds the names of an assignment target; True when something new was learnt."""
        if value is None:
            return False
        if isinstance(target, ast.Name):
            merged = _union(self.names.get(target.id), value)
            if merged is not None and merged != self.names.get(target.id):
                self.names[target.id] = merged
                return True
            return False
        if isinstance(target, ast.Tuple | ast.List):
            changed = False
            for position, item in enumerate(target.elts):
                if value[0] == "tuple" and position < len(value[1]):
                    changed |= self.bind(item, value[1][position])
                elif value[0] == "many":
                    changed |= self.bind(item, ("inst", value[1]))
            return changed
        if isinstance(target, ast.Starred):
            return self.bind(target.value, value)
        return False

    def element(self, node: ast.expr) -> Type | None:
        """The type of one element of an iterable expression."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "enumerate" and node.args:
                return ("tuple", (None, self.element(node.args[0])))
            if node.func.id == "zip":
                return ("tuple", tuple(self.element(arg) for arg in node.args))
        found = self.infer(node)
        if found is None:
            return None
        if found[0] == "many":
            return ("inst", found[1])
        if found[0] == "tuple":
            return _union(*found[1])
        return None

    def infer(self, node: ast.expr) -> Type | None:
        index = self.index
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            kind, qualified = index.resolve(self.module, node.id)
            if kind == "class":
                return ("class", frozenset({qualified}))
            if kind == "function":
                return ("function", qualified)
            return None
        if isinstance(node, ast.Attribute):
            base = self.infer(node.value)
            if base is not None and base[0] == "class" and node.attr == "__table__":
                return ("table", base[1])
            if base is not None and base[0] == "inst":
                return _union(*(index.member(cls, node.attr) for cls in sorted(base[1])))
            if base is not None and base[0] == "class":
                members = [index.member(cls, node.attr) for cls in sorted(base[1])]
                methods = [m for m in members if m is not None and m[0] == "method"]
                if methods:
                    return methods[0]  # a class or static method
            kind, qualified = index.resolve_expr(self.module, node)
            if kind == "class":
                return ("class", frozenset({qualified}))
            if kind == "function":
                return ("function", qualified)
            model = self._model_named(node.attr)
            if model is not None:  # a Row's entity, `row.Partner`
                return ("inst", frozenset({model}))
            return None
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):
            base = self.infer(node.value)
            if base is not None and base[0] == "many":
                return ("inst", base[1])
            if (
                base is not None
                and base[0] == "tuple"
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, int)
                and -len(base[1]) <= node.slice.value < len(base[1])
            ):
                return base[1][node.slice.value]
            return None
        if isinstance(node, ast.IfExp):
            return _union(self.infer(node.body), self.infer(node.orelse))
        if isinstance(node, ast.BoolOp):
            return _union(*(self.infer(value) for value in node.values))
        if isinstance(node, ast.Await | ast.NamedExpr):
            return self.infer(node.value)
        if isinstance(node, ast.Tuple):
            return ("tuple", tuple(self.infer(item) for item in node.elts))
        if isinstance(node, ast.List | ast.Set):
            return _union(*(_many(self.infer(item)) for item in node.elts))
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return _many(self.infer(node.elt))
        return None

    def _call(self, node: ast.Call) -> Type | None:
        callee = self.infer(node.func)
        if callee is not None:
            if callee[0] == "class":
                return ("inst", callee[1])
            if callee[0] == "function":
                return self.index.returns(callee[1])
            if callee[0] == "method":
                return callee[1]
        name = node.func.attr if isinstance(node.func, ast.Attribute) else None
        name = node.func.id if isinstance(node.func, ast.Name) else name
        if name in ("get", "get_one") and node.args:
            first = self.infer(node.args[0])
            if first is not None and first[0] == "class":
                return ("inst", first[1])
        if name == "merge" and node.args:
            return self.infer(node.args[0])
        if name in _ONE_OF_MANY and node.args:
            return self.element(node.args[0])
        if name in _MANY_OF_MANY and node.args:
            element = self.element(node.args[0])
            return ("many", element[1]) if element and element[0] == "inst" else None
        if name in _RESULTS:
            entity = self._selected(node)
            scalars = "scalars" in _chain(node)
            if entity is not None and name.startswith("scalar") and name != "scalars":
                return ("inst", entity)
            if entity is not None and name == "scalars":
                return ("many", entity)
            if entity is not None and scalars:
                return ("inst" if name in _ONE else "many", entity)
            if name in _ONE and isinstance(node.func, ast.Attribute) and not scalars:
                return self.element(node.func.value)  # `.first()` of a list of models
        return None

    def _selected(self, node: ast.expr) -> frozenset[str] | None:
        """The model of a one-entity `select(Model)` a result chain runs
        (`session.scalars(select(Store).where(...)).first()`), or None."""
        current: ast.expr | None = node
        while current is not None:
            if isinstance(current, ast.Call):
                for argument in current.args:
                    entity = self._query_entity(argument)
                    if entity:
                        return entity
            if isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
                current = current.func.value
            elif isinstance(current, ast.Attribute):
                current = current.value
            else:
                current = None
        return None

    def _query_entity(self, query: ast.expr) -> frozenset[str]:
        """The model of `select(Model)…` (any `.where()`, `.order_by()`… after it)."""
        root = query
        while (
            isinstance(root, ast.Call)
            and isinstance(root.func, ast.Attribute)
            and root.func.attr != "select"
        ):
            root = root.func.value
        if not isinstance(root, ast.Call) or len(root.args) != 1:
            return frozenset()
        func = root.func
        if not (
            (isinstance(func, ast.Name) and func.id == "select")
            or (isinstance(func, ast.Attribute) and func.attr == "select")
        ):
            return frozenset()
        entity = self.infer(root.args[0])
        return self._models(entity) if entity is not None and entity[0] == "class" else frozenset()

    def _models(self, value: Type | None) -> frozenset[str]:
        if value is None or value[0] not in ("inst", "many", "class", "table"):
            return frozenset()
        return frozenset(c for c in value[1] if c in self.index.models.tables)

    def _model_named(self, name: str) -> str | None:
        for qualified in self.index.models.tables:
            if qualified.rpartition(".")[2] == name:
                return qualified
        return None


def _many(value: Type | None) -> Type | None:
    return ("many", value[1]) if value is not None and value[0] == "inst" else None


def _chain(node: ast.expr) -> set[str]:
    """The method names called along a chain (`session.scalars(...).first()`)."""
    names: set[str] = set()
    current: ast.expr = node
    while isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
        names.add(current.func.attr)
        current = current.func.value
    return names


def _own_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node of a body, without the bodies of the functions and classes inside it."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


_BINDINGS = (
    ast.Assign,
    ast.AnnAssign,
    ast.NamedExpr,
    ast.For,
    ast.AsyncFor,
    ast.comprehension,
    ast.withitem,
)


def _learn(scope: _Scope, nodes: list[ast.AST]) -> None:
    """Binds every name of a body to what it is assigned, until nothing new is learnt."""
    bindings = [node for node in nodes if isinstance(node, _BINDINGS)]
    for _ in range(8):
        changed = False
        for node in bindings:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    changed |= scope.bind(target, scope.infer(node.value))
            elif isinstance(node, ast.AnnAssign):
                annotated = scope.index.annotation(scope.module, node.annotation)
                changed |= scope.bind(node.target, annotated)
                if node.value is not None:
                    changed |= scope.bind(node.target, scope.infer(node.value))
            elif isinstance(node, ast.NamedExpr):
                changed |= scope.bind(node.target, scope.infer(node.value))
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                changed |= scope.bind(node.target, scope.element(node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                changed |= scope.bind(node.optional_vars, scope.infer(node.context_expr))
        if not changed:
            return


def _parameters(
    scope: _Scope, function: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None
) -> None:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    for position, argument in enumerate(every):
        annotated = scope.index.annotation(scope.module, argument.annotation)
        if annotated is None and position == 0 and owner is not None:
            annotated = ("inst", frozenset({owner}))  # self
        if annotated is not None:
            scope.names[argument.arg] = annotated
        else:
            scope.names.pop(argument.arg, None)
    for extra in (arguments.vararg, arguments.kwarg):
        if extra is not None:
            scope.names.pop(extra.arg, None)


@dataclass(frozen=True)
class Write:
    model: str  # qualified class name
    how: str  # "model made", "attribute set" or "ORM write"
    line: int


def _writes_in(scope: _Scope, nodes: list[ast.AST]) -> Iterator[Write]:
    models = scope.index.models
    for node in nodes:
        if isinstance(node, ast.Call):
            callee = scope.infer(node.func)
            if callee is not None and callee[0] == "class":
                for model in sorted(scope._models(callee)):
                    yield Write(model, "model made", node.lineno)
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = node.func.id if isinstance(node.func, ast.Name) else name
            if name == "setattr" and node.args:
                for model in sorted(scope._models(_only_inst(scope.infer(node.args[0])))):
                    attribute = node.args[1] if len(node.args) > 1 else None
                    if not isinstance(attribute, ast.Constant) or (
                        attribute.value in models.attributes[model]
                    ):
                        yield Write(model, "attribute set", node.lineno)
            elif name is not None and name.lower().endswith(_WRITE_NAMES):
                for argument in node.args:
                    for model in sorted(scope._models(scope.infer(argument))):
                        yield Write(model, "ORM write", node.lineno)
                if isinstance(node.func, ast.Attribute):
                    table = scope.infer(node.func.value)
                    if table is not None and table[0] == "table":
                        for model in sorted(scope._models(table)):
                            yield Write(model, "ORM write", node.lineno)
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for attribute in _attribute_targets(target):
                owner = _only_inst(scope.infer(attribute.value))
                for model in sorted(scope._models(owner)):
                    if attribute.attr in models.attributes[model]:
                        yield Write(model, "attribute set", attribute.lineno)


def _only_inst(value: Type | None) -> Type | None:
    return value if value is not None and value[0] == "inst" else None


def _attribute_targets(target: ast.expr) -> Iterator[ast.Attribute]:
    if isinstance(target, ast.Attribute):
        yield target
    elif isinstance(target, ast.Tuple | ast.List):
        for item in target.elts:
            yield from _attribute_targets(item)
    elif isinstance(target, ast.Starred):
        yield from _attribute_targets(target.value)


def orm_writes(index: Index, module: str) -> set[Write]:
    """Every ORM write of a module of the index (see the module's docstring)."""
    found: set[Write] = set()

    def walk(body: list[ast.stmt], outer: dict[str, Type], owner: str | None) -> None:
        scope = _Scope(index, module, outer)
        nodes = list(_own_nodes(body))
        _learn(scope, nodes)
        found.update(_writes_in(scope, nodes))
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = _Scope(index, module, scope.names)
                _parameters(inner, node, owner)
                walk(node.body, inner.names, None)
            elif isinstance(node, ast.ClassDef):
                walk(node.body, scope.names, f"{module}.{node.name}")

    walk(index.modules[module].tree.body, {}, None)
    return found
