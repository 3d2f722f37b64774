"""Edit a script's text through its syntax tree, keeping the rest byte for byte.

    script = Script(text)
    step = script.call_statement("step", receiver="optim")       # `optimizer.step()` (or self.optimizer...)
    script.insert_after(step, "torch.cuda.synchronize()")       # indented like the statement
    script.text                                                  # the edited text

A mutation finds its anchors structurally (a call of `.backward()`, the assignment to
`model`, the first `images.train_y`), so it applies to scripts written in different styles,
and writes its new code with the indentation and line breaks of the statement it replaces:
the result reads like the rest of the script. Every edit re-parses the text, so anchors are
looked up on the current version; a missing anchor raises NotApplicable.
"""

import ast
import re
import textwrap


class NotApplicable(Exception):
    """The script has nothing this mutation can change."""


def _name(node):
    """'optimizer' for `optimizer`, 'self.optimizer' for `self.optimizer`, '' otherwise."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


class Script:
    def __init__(self, text):
        self.text = text
        self.tree = ast.parse(text)

    # ---------------------------------------------------------------- finding
    def nodes(self, kind=ast.AST):
        return [n for n in ast.walk(self.tree) if isinstance(n, kind)]

    def segment(self, node):
        return ast.get_source_segment(self.text, node)

    def call_statement(self, method, receiver=""):
        """The first statement `<something>.method(...)` whose receiver's name contains receiver."""
        for node in self._statements():
            call = node.value if isinstance(node, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == method
                and receiver in _name(call.func.value)
            ):
                return node
        raise NotApplicable(f"no `.{method}()` call{f' on {receiver}' if receiver else ''}")

    def assignment(self, target):
        """The first statement assigning to the name (or attribute) target at any depth."""
        for node in self._statements():
            if isinstance(node, ast.Assign) and any(_name(t) == target for t in node.targets):
                return node
        raise NotApplicable(f"no assignment to {target}")

    def calls(self, func_suffix):
        """Calls whose function's name ends with func_suffix (`DataLoader`, `.softmax`, ...)."""
        return [n for n in self.nodes(ast.Call) if _name(n.func).endswith(func_suffix)]

    def keyword(self, call, name):
        found = [k for k in call.keywords if k.arg == name]
        if not found:
            raise NotApplicable(f"no {name}= in {self.segment(call)}")
        return found[0]

    def training_loop(self):
        """The innermost `for` loop whose body calls .backward(): the training step's loop."""
        loops = [
            n
            for n in self.nodes(ast.For)
            if any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
                for c in ast.walk(n)
            )
        ]
        if not loops:
            raise NotApplicable("no training loop (a for loop that calls backward())")
        return min(loops, key=lambda n: n.end_lineno - n.lineno)

    def attribute(self, dotted, after=0):
        """The first `a.b` expression spelled dotted, in source order (below line `after`, if given)."""
        found = sorted(
            (n for n in self.nodes(ast.Attribute) if _name(n) == dotted and n.lineno > after),
            key=lambda n: (n.lineno, n.col_offset),
        )
        if not found:
            raise NotApplicable(f"no {dotted}")
        return found[0]

    def statement_of(self, node):
        """The innermost statement that contains node."""
        best = None
        for statement in self._statements():
            if (
                statement.lineno <= node.lineno
                and node.end_lineno <= statement.end_lineno
                and (best is None or statement.end_lineno - statement.lineno <= best.end_lineno - best.lineno)
            ):
                best = statement
        return best

    def _statements(self):
        return sorted(
            (n for n in ast.walk(self.tree) if isinstance(n, ast.stmt)), key=lambda n: (n.lineno, n.col_offset)
        )

    # ---------------------------------------------------------------- editing
    def _lines(self):
        """The lines with their newline, split at "\n" only, as ast counts them (not at \f or \u2028)."""
        return re.findall(r"[^\n]*\n|[^\n]+$", self.text)

    def _set(self, lines):
        self.text = "".join(lines)
        self.tree = ast.parse(self.text)  # a broken edit fails here, not in the learner's run

    def replace(self, node, new):
        """Replace the exact source of node (an expression or a statement) with new."""
        lines = self._lines()

        def offset(lineno, col):  # ast's columns count UTF-8 bytes
            return sum(map(len, lines[: lineno - 1])) + len(lines[lineno - 1].encode()[:col].decode())

        start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
        self._set([self.text[:start] + new + self.text[end:]])

    def _indented(self, node, code):
        pad = " " * node.col_offset
        return [f"{pad}{line}\n" if line else "\n" for line in code.splitlines()]

    def insert_before(self, node, code):
        lines = self._lines()
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])  # above its decorators
        lines[first - 1 : first - 1] = self._indented(node, code)
        self._set(lines)

    def insert_after(self, node, code):
        lines = self._lines()
        lines[node.end_lineno : node.end_lineno] = self._indented(node, code)
        self._set(lines)

    def delete(self, node):
        lines = self._lines()
        del lines[node.lineno - 1 : node.end_lineno]
        self._set(lines)

    def move_after(self, node, anchor):
        """Move statement node to just after statement anchor, re-indented to anchor's depth."""
        lines = self._lines()
        moved = self._indented(anchor, textwrap.dedent("".join(lines[node.lineno - 1 : node.end_lineno])))
        at = anchor.end_lineno - (node.end_lineno - node.lineno + 1 if node.lineno < anchor.lineno else 0)
        del lines[node.lineno - 1 : node.end_lineno]
        lines[at:at] = moved
        self._set(lines)

    def segment_lines(self, node):
        return [line.rstrip("\n") for line in self._lines()[node.lineno - 1 : node.end_lineno]]

    def add_import(self, module, name):
        """Add name to the script's `from module import ...` line (sorted), or add that line."""
        for node in self.tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == module:
                names = sorted({a.name for a in node.names} | {name}, key=str.lower)
                self.replace(node, f"from {module} import {', '.join(names)}")
                return
        group = module.split(".")[0]  # after the imports of the same package (isort's grouping)
        imports = [n for n in self.tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        same = [
            n
            for n in imports
            if (n.module if isinstance(n, ast.ImportFrom) else n.names[0].name).split(".")[0] == group
        ]
        self.insert_after((same or imports)[-1], f"from {module} import {name}")

    def prune_unused(self, before):
        """Delete what this edit left unused - module-level assignments and imported names that
        `before` used - so no dead line points at the change."""
        used_before = _loaded(ast.parse(before))
        while True:
            loaded = _loaded(self.tree)
            for node in self.tree.body:
                if (
                    isinstance(node, ast.Assign)
                    and len(node.targets) == 1
                    and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id in used_before - loaded
                ):
                    self.delete(node)
                    break
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [a for a in node.names if (a.asname or a.name).split(".")[0] in used_before - loaded]
                    if names:
                        kept = [a for a in node.names if a not in names]
                        if not kept:
                            self.delete(node)
                        else:
                            head = f"from {node.module} import " if isinstance(node, ast.ImportFrom) else "import "
                            self.replace(
                                node, head + ", ".join(a.name + (f" as {a.asname}" if a.asname else "") for a in kept)
                            )
                        break
            else:
                return


def _loaded(tree):
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
