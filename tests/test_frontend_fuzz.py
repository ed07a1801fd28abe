"""Seeded property tests of the NDlog front-end (psn.parse: grammar, parser, static checks).

Properties:
- On any text, ``psn.parse`` either returns a Program or raises a PSNError subclass (never
  another exception), and a raised error renders with a position inside the text.
- Programs from a small generator that are well formed by construction (arities fixed,
  variables bound, locations consistent, aggregates stratified) are accepted, with the
  statement counts they were generated with: the checks have no false positives there.
- Every accepted program prints (ndlog.printer) to text that parses back to an equal AST.

Inputs: the reference programs of NDLOG.md and generated programs, mutated by deleting,
inserting, duplicating and swapping characters and tokens, plus random token soup.
Every random choice comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import random
import re

import pytest

import ndlog
import psn
from ndlog.builtins import ARITY
from ndlog.errors import PSNError
from ndlog.printer import format_program

from test_checks import REACHABLE, REGION, SHORTEST_PATH

EXTRA = """\
/* tables, facts and literals of every kind */
materialize(link, infinity, infinity, keys(1, 2)).
materialize(sensor, 30, 100, keys(1)).
link(@a, b, 10). link(@b, "c d", -2.5). sensor(@n1, [1, 2.0]). tag(@a, nil, infinity).
h1 hop(@X, Y) :- link(@X, Z, C), link(@Z, Y, C2), C + C2 > 0.  // two hops
d1 dist(@X, Y, D) :- sensor(@X, P), sensor(@Y, Q), D := f_dist(P, Q), D <= 5.
t1 total(@X, count<*>, sum<C>, avg<C>) :- link(@X, Y, C).
e1 esc(@X, S) :- tag(@X, L, I), S = "q\\"uote\\\\", f_size(L) == 0.
"""
SEEDS = (REACHABLE, SHORTEST_PATH, REGION, EXTRA,
         "h1 hop(@X, Y) :- link(@X, Z), link(@Z, Y).\n"
         "h2 tri_hop(@X, Y) :- hop(@X, Z), link(@Z, Y).\n")

TOKEN_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|/\*.*?\*/|:-|:=|==|!=|<=|>=|'
                      r'[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\s+|.', re.S)
VOCAB = ["p", "q", "link", "X", "Y", "_", "@", "(", ")", "[", "]", ",", ".", ":-", ":=",
         "=", "==", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%", "1", "2.5", "-3",
         '"s"', "nil", "infinity", "materialize", "keys", "min<X>", "count<*>", "f_size",
         "f_concat", "f_nope", "r1", " ", "\n", "//c\n", "/*c*/", "/*", "*/", '"', "<", "#",
         "\t", "é", "\x00", "\\"]
CHARS = "abXYZ_@()[],.:-=<>!+*/%\"\\ \n\t019#$é{}'"


def parse_is_total(text: str) -> ndlog.ast.Program | PSNError:
    """Parse; a non-PSN exception propagates (and fails the test)."""
    try:
        return psn.parse(text, "fuzz.ndl")
    except PSNError as err:
        out = err.render()
        assert out and "Traceback" not in out
        if err.span is not None:
            n_lines = max(len(text.splitlines()), 1)
            assert 1 <= err.span.line <= n_lines + 1, (err.span, text)
            assert err.span.column >= 1
            assert err.span.filename == "fuzz.ndl"
        return err


def assert_round_trip(program: ndlog.ast.Program) -> None:
    text = format_program(program)
    try:
        again = psn.parse(text, "printed.ndl")
    except PSNError as err:
        pytest.fail(f"printed program does not parse:\n{text}\n{err.render()}")
    assert again == program, text


# -- mutation ----------------------------------------------------------------------------

def mutate_chars(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(chars) + 1)
        op = rng.choice("dirs")
        if op == "d" and i < len(chars):
            del chars[i]
        elif op == "i":
            chars.insert(i, rng.choice(CHARS))
        elif op == "r" and i < len(chars):
            chars[i] = rng.choice(CHARS)
        elif op == "s" and len(chars) > 1:
            j = rng.randrange(len(chars))
            k = min(i, len(chars) - 1)
            chars[j], chars[k] = chars[k], chars[j]
    return "".join(chars)


def mutate_tokens(rng: random.Random, text: str) -> str:
    toks = TOKEN_RE.findall(text)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(toks) + 1)
        op = rng.choice("didsc")
        if op == "d" and i < len(toks):
            del toks[i]
        elif op == "i":
            toks.insert(i, rng.choice(VOCAB))
        elif op == "c" and i < len(toks):
            toks.insert(i, toks[i])
        elif op == "s" and len(toks) > 1:
            j, k = rng.randrange(len(toks)), min(i, len(toks) - 1)
            toks[j], toks[k] = toks[k], toks[j]
    return "".join(toks)


def token_soup(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(0, 40)))


# -- a generator of well-formed programs -----------------------------------------------------

SYMBOLS = ["a", "b", "node_1", "zz"]


def gen_value(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return str(rng.randint(-50, 50))
    if kind == 1:
        return repr(round(rng.uniform(-10, 10), 3))
    if kind == 2:
        return rng.choice(SYMBOLS)
    if kind == 3:
        return rng.choice(['"x y"', '"q\\"t"', '"nl\\n"', '""', '"a\\\\b"'])
    if kind == 4:
        return rng.choice(["nil", "infinity", "-infinity"])
    if kind == 5:
        return str(rng.randint(0, 9))
    return "[" + ", ".join(gen_value(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"


def gen_expr(rng: random.Random, bound: list[str], depth: int = 0) -> str:
    kind = rng.randrange(5 if depth < 2 else 2)
    if kind == 0 or not bound:
        return gen_value(rng, 2)
    if kind == 1:
        return rng.choice(bound)
    if kind == 2:
        op = rng.choice("+-*/%")
        return f"{gen_expr(rng, bound, depth + 1)} {op} {gen_expr(rng, bound, depth + 1)}"
    if kind == 3:
        name = rng.choice(sorted(ARITY))
        args = ", ".join(gen_expr(rng, bound, depth + 1) for _ in range(ARITY[name]))
        return f"{name}({args})"
    return f"({gen_expr(rng, bound, depth + 1)})"


def gen_program(rng: random.Random) -> tuple[str, int, int, int]:
    """A well-formed program; returns (text, #rules, #facts, #tables)."""
    distributed = rng.random() < 0.6
    at = "@" if distributed else ""
    arity = {f"e{i}": rng.randint(1, 4) for i in range(rng.randint(1, 3))}
    idb = {f"d{i}": rng.randint(1, 4) for i in range(rng.randint(1, 3))}
    arity.update(idb)
    lines, n_rules, n_facts, n_tables = [], 0, 0, 0
    for pred in rng.sample(sorted(arity), rng.randint(0, len(arity))):
        keys = sorted(rng.sample(range(1, arity[pred] + 1), rng.randint(1, arity[pred])))
        life = rng.choice(["infinity", str(rng.randint(0, 100))])
        size = rng.choice(["infinity", str(rng.randint(0, 100))])
        lines.append(f"materialize({pred}, {life}, {size}, keys({', '.join(map(str, keys))})).")
        n_tables += 1
    for _ in range(rng.randint(0, 4)):
        pred = rng.choice(sorted(arity))
        vals = [gen_value(rng) for _ in range(arity[pred])]
        vals[0] = at + rng.choice(SYMBOLS)
        lines.append(f"{pred}({', '.join(vals)}).")
        n_facts += 1
    variables = ["A", "B", "C", "Dv", "E_2"]
    for r in range(rng.randint(1, 5)):
        head = rng.choice(sorted(idb))
        body, bound = [], []
        for _ in range(rng.randint(1, 3)):
            pred = rng.choice(sorted(arity))
            args = []
            for i in range(arity[pred]):
                choice = rng.random()
                if choice < 0.65 or (i == 0 and distributed):
                    v = rng.choice(variables)
                    args.append(v)
                    bound.append(v)
                elif choice < 0.8:
                    args.append("_")
                else:
                    args.append(gen_value(rng))
            args[0] = at + args[0]
            body.append(f"{pred}({', '.join(args)})")
        bound = sorted(set(bound))
        if not bound:
            continue
        for k in range(rng.randint(0, 2)):
            new = f"N{k}"
            body.append(f"{new} {rng.choice([':=', '='])} {gen_expr(rng, bound)}")
            bound.append(new)
        for _ in range(rng.randint(0, 2)):
            op = rng.choice(["==", "!=", "<", "<=", ">", ">="])
            body.append(f"{gen_expr(rng, bound)} {op} {gen_expr(rng, bound)}")
        rng.shuffle(body)
        h_args = [rng.choice(bound)] + [
            rng.choice(bound) if rng.random() < 0.6 else gen_expr(rng, bound)
            for _ in range(idb[head] - 1)]
        if idb[head] > 1 and rng.random() < 0.3:
            # an aggregate rule writes a fresh predicate that nothing reads
            func = rng.choice(["min", "max", "count", "sum", "avg"])
            agg = "count<*>" if rng.random() < 0.3 else f"{func}<{rng.choice(bound)}>"
            plain = [rng.choice(bound) for _ in range(idb[head] - 1)]
            head, h_args = f"agg{r}", plain + [agg]
        h_args[0] = at + h_args[0]
        name = rng.choice([f"r{r} ", ""])
        lines.append(f"{name}{head}({', '.join(h_args)}) :- {', '.join(body)}.")
        n_rules += 1
    comment = rng.choice(["", "// generated\n", "/* generated\n */ "])
    return comment + "\n".join(lines) + "\n", n_rules, n_facts, n_tables


# -- the properties --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_generated_programs_are_accepted(seed):
    rng = random.Random(seed)
    for i in range(100):
        text, n_rules, n_facts, n_tables = gen_program(rng)
        try:
            program = psn.parse(text, "gen.ndl")
        except PSNError as err:
            pytest.fail(f"generated program rejected:\n{text}\n{err.render()}")
        assert (len(program.rules), len(program.facts), len(program.tables)) == \
            (n_rules, n_facts, n_tables)
        assert_round_trip(program)
        if i % 10 == 0:
            assert psn.parse(text, "gen.ndl") == program  # deterministic


@pytest.mark.parametrize("seed", range(4))
def test_mutated_reference_programs_raise_only_psn_errors(seed):
    rng = random.Random(1000 + seed)
    outcomes = {"ok": 0, "error": 0}
    for i in range(200):
        base = SEEDS[i % len(SEEDS)]
        text = mutate_chars(rng, base) if i % 2 else mutate_tokens(rng, base)
        result = parse_is_total(text)
        if isinstance(result, PSNError):
            outcomes["error"] += 1
        else:
            outcomes["ok"] += 1
            assert_round_trip(result)
    assert outcomes["error"] > 0 and outcomes["ok"] > 0


@pytest.mark.parametrize("seed", range(4))
def test_mutated_generated_programs_and_token_soup_raise_only_psn_errors(seed):
    rng = random.Random(2000 + seed)
    for i in range(100):
        text = gen_program(rng)[0]
        for _ in range(rng.randint(1, 3)):
            text = mutate_tokens(rng, text) if rng.random() < 0.5 else mutate_chars(rng, text)
        parse_is_total(text)
        parse_is_total(token_soup(rng))


def test_adversarial_inputs():
    for text in ["", "\x00", "é", "p(", "p(@", ".", ":-", "/*", "*/", '"', "p(\"\\", "p(1e",
                 "materialize(", "min<X>", "p(" * 200, "[" * 500, "p(" + "(" * 2000 + "1).",
                 "p(" + "-" * 3000 + "1).", "p(" + "1+" * 4000 + "1).", "\n" * 50 + "p"]:
        parse_is_total(text)
