"""The mutations of ``tools.mutants``: where a module can be changed, and each change.

The mutations (``Mutator``) are the classic ones: comparison operators (``<`` and ``<=``, ``==``
and ``!=``, ``in`` and ``not in``, ``is`` and ``is not``), arithmetic (``+`` and ``-``, ``*``
and ``/``, ``//`` to ``/``, ``%`` to ``/``), ``and`` and ``or``, ``not x`` to ``x``, ``-x`` to
``x``, ``max`` and ``min``, ``True`` and ``False``, an integer ``n`` to ``n + 1``, a float
``x`` to ``1.1 x``, an ``if``'s condition negated, ``continue`` and ``break``, and a call's keyword
argument dropped (one at a time: the callee's default, if it has one, is then used). Docstrings,
strings, annotations and decorators are left alone.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from typing import Any

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITHMETIC_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
}
_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.And: "and",
    ast.Or: "or",
}


@dataclass(frozen=True)
class Mutant:
    module: str
    ordinal: int  # the site's position in the module's walk: how the mutant is applied
    function: str  # the enclosing function or class (``<module>`` at the top level)
    line: int
    change: str  # what the mutation does, e.g. ``'<' -> '<='``
    occurrence: int  # the same change of the same code in the same function: 1, 2, ...
    context: str = ""  # the mutated code as written (normalised by ast.unparse)

    @property
    def ident(self) -> str:
        """A name that survives edits anywhere but in the mutated code itself (no line number, no ordinal)."""
        short = self.module.rsplit(".", 1)[-1]
        suffix = f" #{self.occurrence}" if self.occurrence > 1 else ""
        return f"{short}.{self.function}: `{self.context}` {self.change}{suffix}"


class Mutator(ast.NodeTransformer):
    """Walks a module in a fixed order, numbering every mutation site; with ``apply`` set, performs the
    mutation at that number (the tree is then the mutant's)."""

    def __init__(self, apply: int | None = None) -> None:
        self.apply = apply
        self.sites: list[tuple[str, int, str, str]] = []  # (function, line, change, context)
        self._scope: list[str] = []
        self._statements: list[ast.stmt] = []
        self._parents: list[ast.AST] = []

    def visit(self, node: ast.AST) -> Any:
        self._parents.append(node)
        if isinstance(node, ast.stmt):
            self._statements.append(node)
        try:
            return super().visit(node)
        finally:
            self._parents.pop()
            if isinstance(node, ast.stmt):
                self._statements.pop()

    def _context(self, node: ast.AST, statement: ast.stmt | None = None) -> str:
        """Where a site is: its statement as written (a compound statement by its head), normalised by
        ast.unparse, then the mutated expression when it is not the whole statement. ``statement``: the
        one to name instead of the innermost (a ``continue`` is named by the statement that holds it)."""
        if self.apply is not None:
            return ""  # only the listing pass names sites (children may already be mutated here)
        if statement is None:
            statement = self._statements[-1] if self._statements else None
        if statement is None:
            return ast.unparse(node)
        head = {ast.If: "test", ast.While: "test", ast.For: "iter", ast.With: None}.get(type(statement), "")
        if head == "":
            where = ast.unparse(statement)
        elif head is None:
            where = "with " + ", ".join(ast.unparse(item) for item in statement.items)  # type: ignore[attr-defined]
        else:
            keyword = "for … in" if isinstance(statement, ast.For) else type(statement).__name__.lower()
            where = f"{keyword} {ast.unparse(getattr(statement, head))}"
        where = " ".join(where.split())
        if len(where) > 72:
            where = where[:60] + "…" + hashlib.sha256(where.encode()).hexdigest()[:8]
        what = "" if node is statement or isinstance(node, ast.Constant) else ast.unparse(node)
        return where if not what or what == where else f"{where} ⟨{what[:40]}⟩"

    # Scopes and what is never mutated
    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        self._scope.append(node.name)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            # Defaults are behaviour; annotations are not (and are text under ``from __future__``).
            node.args.defaults = [self.visit(d) for d in node.args.defaults]
            node.args.kw_defaults = [None if d is None else self.visit(d) for d in node.args.kw_defaults]
        else:
            node.bases = [self.visit(b) for b in node.bases]
        node.body = self._body(node.body)
        self._scope.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._scoped(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return self._scoped(node)

    def _body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for position, statement in enumerate(body):
            docstring = (
                position == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            ) and isinstance(statement.value.value, str)
            if docstring:
                out.append(statement)
                continue
            visited = self.visit(statement)
            if isinstance(visited, ast.stmt):
                out.append(visited)
        return out

    def visit_Module(self, node: ast.Module) -> ast.AST:
        node.body = self._body(node.body)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        return node  # the error's message: raising at all is what tests pin

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return node  # text

    # Sites
    def _site(self, node: ast.AST, change: str, statement: ast.stmt | None = None) -> bool:
        """Numbers one site; True if it is the one to mutate."""
        function = ".".join(self._scope) or "<module>"
        self.sites.append((function, getattr(node, "lineno", 0), change, self._context(node, statement)))
        return self.apply == len(self.sites) - 1

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        for position, op in enumerate(node.ops):
            swapped = _COMPARE_SWAPS.get(type(op))
            if swapped is not None and self._site(node, f"'{_SYMBOLS[type(op)]}' -> '{_SYMBOLS[swapped]}'"):
                node.ops[position] = swapped()
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        swapped = _ARITHMETIC_SWAPS.get(type(node.op))
        if swapped is not None and self._site(node, f"'{_SYMBOLS[type(node.op)]}' -> '{_SYMBOLS[swapped]}'"):
            node.op = swapped()
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        swapped = _ARITHMETIC_SWAPS.get(type(node.op))
        if swapped is not None and self._site(node, f"'{_SYMBOLS[type(node.op)]}=' -> '{_SYMBOLS[swapped]}='"):
            node.op = swapped()
        return node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        if self._site(node, f"'{_SYMBOLS[type(node.op)]}' -> '{_SYMBOLS[other]}'"):
            node.op = other()
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not) and self._site(node, "'not x' -> 'x'"):
            return node.operand
        if isinstance(node.op, ast.USub) and self._site(node, "'-x' -> 'x'"):
            return node.operand
        return node

    def visit_If(self, node: ast.If) -> ast.AST:
        self.generic_visit(node)
        if self._site(node, "if c -> if not c"):
            node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
            other = "min" if node.func.id == "max" else "max"
            if self._site(node, f"{node.func.id}() -> {other}()"):
                node.func = ast.Name(id=other, ctx=ast.Load())
        for keyword in list(node.keywords):
            # One keyword argument dropped (``**mapping`` is left alone): the callee's default then
            # applies, or the call fails (a required argument), which any test that reaches it sees.
            if keyword.arg is not None and self._site(node, f"{keyword.arg}= dropped"):
                node.keywords = [other for other in node.keywords if other is not keyword]
        return node

    def _loop_exit(self, node: ast.Continue | ast.Break, other: type[ast.Continue | ast.Break]) -> ast.AST:
        # Named by the statement that holds it (an ``if``'s head, a loop's), not by itself: a function's
        # ``continue`` statements are told apart by where they are, not by their order.
        holder = self._statements[-2] if len(self._statements) > 1 else None
        mine, theirs = type(node).__name__.lower(), other.__name__.lower()
        if self._site(node, f"{mine} -> {theirs}", holder):
            return ast.copy_location(other(), node)
        return node

    def visit_Continue(self, node: ast.Continue) -> ast.AST:
        return self._loop_exit(node, ast.Break)

    def visit_Break(self, node: ast.Break) -> ast.AST:
        return self._loop_exit(node, ast.Continue)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        value = node.value
        if isinstance(value, bool):
            if self._site(node, f"{value} -> {not value}"):
                return ast.Constant(value=not value)
        elif isinstance(value, int):
            if self._site(node, f"{value} -> {value + 1}"):
                return ast.Constant(value=value + 1)
        elif isinstance(value, float):
            mutated = round(value * 1.1, 12) if value else 1.0
            if self._site(node, f"{value} -> {mutated}"):
                return ast.Constant(value=mutated)
        return node
