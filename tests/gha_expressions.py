"""GitHub Actions expressions (``${{ ... }}``), evaluated the way the runner
does, for the workflow tests.

Covers what workflows use: literals, context paths (``a.b``, ``a['b']``),
``!``, comparisons (loose equality, strings compared case-insensitively),
``&&``/``||`` returning an operand, and the functions ``success()``,
``always()``, ``cancelled()``, ``failure()``, ``format``, ``contains``,
``startsWith``, ``endsWith``, ``join``, ``toJSON``, ``fromJSON`` and
``hashFiles``.  https://docs.github.com/en/actions/reference/evaluate-expressions-in-workflows-and-actions

A context path that reaches past what the context holds evaluates to null,
as on GitHub, and is recorded in ``Evaluator.missing``: the tests fail on a
field an event does not carry (``github.event.repository`` on a cron run).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

TOKEN = re.compile(r"""
    \s*(?:
      (?P<number>0x[0-9a-fA-F]+|-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
    | (?P<string>'(?:[^']|'')*')
    | (?P<op>&&|\|\||==|!=|<=|>=|[!<>()\[\].,*])
    | (?P<name>[A-Za-z_][A-Za-z0-9_-]*)
    )""", re.VERBOSE)
EMBEDDED = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
MISSING = object()


class ExpressionError(ValueError):
    pass


class Open(dict):
    """A context object whose every key may be read: absent ones are null
    without being recorded as missing (a step's outputs, written at run time)."""


def tokens(text: str) -> list[tuple[str, str]]:
    out, pos, text = [], 0, text.rstrip()
    while pos < len(text):
        match = TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ExpressionError(f"cannot read {text[pos:]!r} in {text!r}")
        kind = match.lastgroup
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


@dataclass
class Status:
    """What the status functions see: the job's steps so far (step ``if:``),
    or the jobs it needs (job ``if:``)."""
    failed: bool = False
    cancelled: bool = False


@dataclass
class Evaluator:
    contexts: Mapping[str, Any]
    status: Status = field(default_factory=Status)
    # Contexts whose absent keys are legitimately null (unset inputs and
    # variables); any other absent path is recorded in ``missing``.
    lenient: frozenset = frozenset({"inputs", "vars", "secrets", "env"})
    hash_files: Callable[[list[str]], str] = lambda patterns: "0" * 64
    missing: list[str] = field(default_factory=list)
    # > 0 while parsing an operand that ``&&``/``||`` does not evaluate: as
    # the runner's evaluator short-circuits, what it would read is not read.
    _skipped: int = 0

    # -- entry points -------------------------------------------------------

    def evaluate(self, text: str) -> Any:
        """One expression, with or without its ``${{ }}``."""
        match = EMBEDDED.fullmatch(text.strip())
        self._tokens = tokens(match.group(1) if match else text)
        self._pos = 0
        value = self._or()
        if self._pos != len(self._tokens):
            raise ExpressionError(f"unexpected {self._tokens[self._pos][1]!r} in {text!r}")
        return value

    def condition(self, text: str | bool | None) -> bool:
        """An ``if:``: absent means ``success()``; a condition without a
        status function gets ``success() &&`` in front, as on GitHub."""
        if text is None:
            text = "success()"
        if isinstance(text, bool):
            return text and not self.status.failed and not self.status.cancelled
        inner = EMBEDDED.fullmatch(text.strip())
        body = inner.group(1) if inner else text
        if not re.search(r"\b(success|always|cancelled|failure)\s*\(", body):
            body = f"success() && ({body})"
        return truthy(self.evaluate(body))

    def interpolate(self, value: Any) -> Any:
        """A workflow value: strings with ``${{ }}`` parts evaluated (a whole
        ``${{ x }}`` keeps x's type), lists and mappings element by element."""
        if isinstance(value, dict):
            return {k: self.interpolate(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.interpolate(v) for v in value]
        if not isinstance(value, str):
            return value
        whole = EMBEDDED.fullmatch(value.strip())
        if whole:
            return self.evaluate(whole.group(1))
        return EMBEDDED.sub(lambda m: to_string(self.evaluate(m.group(1))), value)

    # -- grammar (lowest precedence first) ---------------------------------

    def _peek(self) -> tuple[str, str] | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _take(self, op: str | None = None) -> tuple[str, str]:
        token = self._peek()
        if token is None or (op is not None and token != ("op", op)):
            raise ExpressionError(f"expected {op or 'more'}, got {token}")
        self._pos += 1
        return token

    def _at(self, *ops: str) -> str | None:
        token = self._peek()
        return token[1] if token and token[0] == "op" and token[1] in ops else None

    def _or(self) -> Any:
        left = self._and()
        while self._at("||"):
            self._take()
            decided = truthy(left)
            self._skipped += decided
            right = self._and()
            self._skipped -= decided
            left = left if decided else right
        return left

    def _and(self) -> Any:
        left = self._equality()
        while self._at("&&"):
            self._take()
            decided = not truthy(left)
            self._skipped += decided
            right = self._equality()
            self._skipped -= decided
            left = left if decided else right
        return left

    def _equality(self) -> Any:
        left = self._comparison()
        while op := self._at("==", "!="):
            self._take()
            equal = loose_equal(left, self._comparison())
            left = equal if op == "==" else not equal
        return left

    def _comparison(self) -> Any:
        left = self._unary()
        while op := self._at("<", "<=", ">", ">="):
            self._take()
            left = compare(left, self._unary(), op)
        return left

    def _unary(self) -> Any:
        if self._at("!"):
            self._take()
            return not truthy(self._unary())
        return self._postfix()

    def _postfix(self) -> Any:
        value, path = self._primary()
        while op := self._at(".", "["):
            self._take()
            if op == ".":
                kind, name = self._take()
                if kind != "name":
                    raise ExpressionError(f"expected a property name after '.', got {name!r}")
                key = name
            else:
                key = self._or()
                self._take("]")
            value, path = self._index(value, key, path)
        return value

    def _index(self, value: Any, key: Any, path: str | None) -> tuple[Any, str | None]:
        where = f"{path}.{key}" if path else None
        if isinstance(value, Open):
            return value.get(key), None
        if isinstance(value, Mapping):
            for k in value:  # property names are case-insensitive
                if str(k).lower() == str(key).lower():
                    return value[k], where
            if path is not None and path.split(".")[0] not in self.lenient and not self._skipped:
                self.missing.append(where)
            return None, None
        if isinstance(value, list) and isinstance(key, (int, float)) and 0 <= key < len(value):
            return value[int(key)], None
        if value is not None and path is not None and not self._skipped:
            self.missing.append(where)
        return None, None

    def _primary(self) -> tuple[Any, str | None]:
        kind, text = self._take()
        if kind == "number":
            return (int(text, 16) if text.lower().startswith("0x") else float(text)), None
        if kind == "string":
            return text[1:-1].replace("''", "'"), None
        if (kind, text) == ("op", "("):
            value = self._or()
            self._take(")")
            return value, None
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r}")
        if text in ("true", "false"):
            return text == "true", None
        if text == "null":
            return None, None
        if self._at("("):
            return self._call(text), None
        if text not in self.contexts:
            raise ExpressionError(f"unknown context {text!r}")
        return self.contexts[text], text

    def _call(self, name: str) -> Any:
        self._take("(")
        args = []
        while not self._at(")"):
            args.append(self._or())
            if not self._at(")"):
                self._take(",")
        self._take(")")
        function = FUNCTIONS.get(name.lower())
        if function is None:
            raise ExpressionError(f"unknown function {name}()")
        return function(self, *args)


# --------------------------------------------------------------------------
# Values


def truthy(value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def to_number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return 0.0
        try:
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            return math.nan
    return math.nan


def loose_equal(a: Any, b: Any) -> bool:
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return a is b
    if isinstance(a, str) and isinstance(b, str):
        return a.lower() == b.lower()
    if type(a) is type(b):
        return a == b
    return to_number(a) == to_number(b)  # mixed types compare as numbers


def compare(a: Any, b: Any, op: str) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        a, b = a.lower(), b.lower()
    else:
        a, b = to_number(a), to_number(b)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def to_string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2)
    return str(value)


def _format(_, template: str, *args: Any) -> str:
    return re.sub(r"\{(\d+)\}", lambda m: to_string(args[int(m.group(1))]),
                  template.replace("{{", "\0").replace("}}", "\1")).replace("\0", "{").replace("\1", "}")


def _contains(_, haystack: Any, needle: Any) -> bool:
    if isinstance(haystack, list):
        return any(loose_equal(item, needle) for item in haystack)
    return to_string(needle).lower() in to_string(haystack).lower()


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "success": lambda ev: not ev.status.failed and not ev.status.cancelled,
    "always": lambda ev: True,
    "cancelled": lambda ev: ev.status.cancelled,
    "failure": lambda ev: ev.status.failed and not ev.status.cancelled,
    "format": _format,
    "contains": _contains,
    "startswith": lambda _, s, p: to_string(s).lower().startswith(to_string(p).lower()),
    "endswith": lambda _, s, p: to_string(s).lower().endswith(to_string(p).lower()),
    "join": lambda _, items, sep=",": sep.join(map(to_string, items)) if isinstance(items, list) else to_string(items),
    "tojson": lambda _, value: json.dumps(value, indent=2),
    "fromjson": lambda _, text: json.loads(text),
    "hashfiles": lambda ev, *patterns: ev.hash_files(list(patterns)),
}
