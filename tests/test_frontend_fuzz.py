"""Seeded property tests of the NDlog front-end: programs (psn.parse: grammar, parser, static
checks) and the input readers (facts files, CSV facts files, burst files).

Properties:
- On any text, ``psn.parse`` either returns a Program or raises a PSNError subclass (never
  another exception), and a raised error renders with a position inside the text.
- Likewise every facts file, CSV file and burst file (text, or bytes that need not be UTF-8)
  is read, or raises a PSNError naming the file with a line and column inside it; what is
  read has one arity per predicate, and the program's arity when the program's are given.
- No input takes a second to parse or read (each example is timed: a correctness property of
  the regular expressions and the parser, which must have no exponential path, not a
  benchmark; the limit is many times the normal time).
- Programs from a small generator that are well formed by construction (arities fixed,
  variables bound, locations consistent, aggregates stratified) are accepted, with the
  statement counts they were generated with: the checks have no false positives there.
- Every accepted program prints (ndlog.printer) to text that parses back to an equal AST.

Inputs: the reference programs of the paper examples and generated programs, facts, bursts
and CSV rows, mutated by deleting, inserting, duplicating and swapping characters and tokens
(among them unclosed comments, very long integers and fields, deep nests and bytes that are
not UTF-8), plus random token soup. Every random choice comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import random
import re
import time

import pytest

import ndlog
import psn
from engine.bursts import parse_burst, read_burst_file
from ndlog.builtins import ARITY
from ndlog.errors import PSNError
from ndlog.output import read_facts_file
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


#: seconds any one input may take to parse or read (normal inputs take milliseconds)
TIME_LIMIT = 1.0


def assert_positioned(err: PSNError, text: str, filename: str) -> None:
    """``err`` renders, and names ``filename`` with a line and column inside ``text``."""
    out = err.render()
    assert out and "Traceback" not in out
    assert err.span is not None, out
    n_lines = max(text.count("\n") + 1, 1)
    assert 1 <= err.span.line <= n_lines + 1, (err.span, text[:200])
    assert err.span.column >= 1
    assert err.span.filename == filename


def timed(fn, *args):
    """``fn(*args)`` or the PSNError it raised, asserting it took under TIME_LIMIT."""
    start = time.perf_counter()
    try:
        result = fn(*args)
    except PSNError as err:
        result = err
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT, (fn.__name__, elapsed, args)
    return result


def parse_is_total(text: str) -> ndlog.ast.Program | PSNError:
    """Parse; a non-PSN exception propagates (and fails the test)."""
    result = timed(psn.parse, text, "fuzz.ndl")
    if isinstance(result, PSNError):
        assert_positioned(result, text, "fuzz.ndl")
    return result


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
        if pred in idb:
            size = "infinity"              # a size bound is for base tables only
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


# -- pathological inputs: each must end quickly, in a positioned PSNError --------------------

LONG_INT = "9" * 5000

#: inputs of a few thousand tokens (the parser takes some 20 microseconds a token): enough
#: for any super-linear path to show, small enough for the time limit on a loaded machine
PATHOLOGICAL = [
    "/* open\n" + "link(@a, b, 1).\n" * 200 + "link(@a, , 1).\n",
    "link(@a, b, 1).\n/* open\n" + "p(@a) :- q(@a), /* x\n" * 200 + "p(",
    "/*" * 5000 + "p(",
    "p(@a) :- q(@a), X := 1 /* 2 /* 3" + " 4" * 5000,
    '"' * 5000 + "\n" + "p(" * 100,
    "p(@a, " + "1" * 100_000 + ".5e" + ").",
    f"p(@a, {LONG_INT}).", f"materialize(p, {LONG_INT}, 1, keys(1)).",
    "r1 p(@X, Y) :- q(@X, Z), Y := Z" + " * 2" * 3000 + ".",
    "p(@a, " + "[" * 3000 + "]" * 3000 + ").",
    "p(@a, " + "-" * 3000 + "1).",
    "r1 p(@X, Y) :- q(@X, Z), Y := " + "f_abs(" * 3000 + "Z" + ")" * 3000 + ".",
    "p(@a, min<" + " " * 50_000 + "X",
    "p(" + "a, " * 3000 + "b).\np(a).",
]


@pytest.mark.parametrize("index", range(len(PATHOLOGICAL)))
def test_pathological_programs_end_quickly_in_positioned_errors(index):
    assert isinstance(parse_is_total(PATHOLOGICAL[index]), PSNError)


def test_deep_parentheses_cost_no_nesting():
    text = "r1 p(@X, Y) :- q(@X, Z), Y := " + "(" * 3000 + "Z" + ")" * 3000 + "."
    assert isinstance(parse_is_total(text), ndlog.ast.Program)


# -- facts files, burst files and CSV files -----------------------------------------------------

PROGRAM_ARITIES = {"link": 3, "reach": 2, "tag": 1}
PROGRAM_LOCATIONS = {"link": 0, "reach": 0, "tag": 0}
FILE_CHARS = CHARS + ",;+-\r\"" + "0123456789"
#: insertions that once took exponential time or raised a non-PSN exception
FILE_BITS = ["/*", "*/", "@", LONG_INT, "[" * 300, "x" * 200_000, "\n", "\r\n", "nan",
             "Src", "\ufeff", ".", "+", "-", '"', ",", ", ,", "é"]


def gen_facts_text(rng: random.Random, signs: bool) -> str:
    lines = []
    for _ in range(rng.randint(0, 8)):
        pred = rng.choice(sorted(PROGRAM_ARITIES))
        vals = [gen_value(rng) for _ in range(PROGRAM_ARITIES[pred])]
        if rng.random() < 0.7:
            vals[0] = "@" + vals[0]
        sign = rng.choice(["+", "-", "", " +", "\t-"]) if signs else ""
        comment = rng.choice(["", "", " // c", " /* c */"])
        lines.append(f"{sign}{pred}({', '.join(vals)}).{comment}")
    return "\n".join(lines) + rng.choice(["", "\n"])


def gen_csv_text(rng: random.Random, width: int) -> str:
    def field() -> str:
        return rng.choice([str(rng.randint(-9, 99)), "2.5", "-1e3", "infinity", "a", "node_1",
                           "x y", '"q,uoted"', '"two\nlines"', "", " 7 "])
    rows = [",".join(field() for _ in range(width)) for _ in range(rng.randint(0, 6))]
    if rng.random() < 0.4:
        rows.insert(0, ",".join(rng.choice(["Src", "Dst", "C", "_x"]) for _ in range(width)))
    return "\n".join(rows) + rng.choice(["", "\n"])


def mutate_file(rng: random.Random, text: str) -> bytes:
    """Character mutations, one of FILE_BITS now and then, and sometimes a byte that is not
    UTF-8."""
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(chars) + 1)
        op = rng.choice("ddiirrb")
        if op == "d" and i < len(chars):
            del chars[i]
        elif op == "i":
            chars.insert(i, rng.choice(FILE_CHARS))
        elif op == "r" and i < len(chars):
            chars[i] = rng.choice(FILE_CHARS)
        elif op == "b":
            chars.insert(i, rng.choice(FILE_BITS))
    data = "".join(chars).encode()
    if rng.random() < 0.1:
        i = rng.randrange(len(data) + 1)
        data = data[:i] + rng.choice([b"\xff", b"\xc3", b"\xe9t\xe9"]) + data[i:]
    return data


def check_read(result, data: bytes, path, arities) -> None:
    """A read is a positioned PSNError, or rows with one arity per predicate (the
    program's when given)."""
    text = data.decode("utf-8", "replace")
    if isinstance(result, PSNError):
        assert_positioned(result, text, str(path))
        return
    rows = ([(pred, t) for _, pred, t in result] if isinstance(result, list)
            else [(pred, t) for pred, ts in result.items() for t in ts])
    widths: dict[str, set[int]] = {}
    for pred, t in rows:
        assert isinstance(t, tuple)
        widths.setdefault(pred, set()).add(len(t))
    assert all(len(w) == 1 for w in widths.values()), widths
    if arities is not None:
        assert all(arities[p] in w for p, w in widths.items()), widths


def run_file_fuzz(tmp_path, seed: int, name: str, reader, make, examples: int) -> dict:
    rng = random.Random(seed)
    path = tmp_path / name
    outcomes = {"ok": 0, "error": 0}
    for _ in range(examples):
        data = mutate_file(rng, make(rng)) if rng.random() < 0.8 else make(rng).encode()
        path.write_bytes(data)
        arities, locations = ((PROGRAM_ARITIES, PROGRAM_LOCATIONS) if rng.random() < 0.5
                              else (None, None))
        result = timed(reader, path, arities, locations)
        check_read(result, data, path, arities)
        outcomes["error" if isinstance(result, PSNError) else "ok"] += 1
    return outcomes


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_facts_files_read_or_raise_positioned_psn_errors(tmp_path, seed):
    outcomes = run_file_fuzz(tmp_path, 3000 + seed, "facts.ndl", read_facts_file,
                             lambda rng: gen_facts_text(rng, signs=False), 150)
    assert outcomes["ok"] > 0 and outcomes["error"] > 0


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_burst_files_read_or_raise_positioned_psn_errors(tmp_path, seed):
    outcomes = run_file_fuzz(tmp_path, 4000 + seed, "burst.txt", read_burst_file,
                             lambda rng: gen_facts_text(rng, signs=True), 150)
    assert outcomes["ok"] > 0 and outcomes["error"] > 0


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_csv_files_read_or_raise_positioned_psn_errors(tmp_path, seed):
    outcomes = run_file_fuzz(tmp_path, 5000 + seed, "link.csv", read_facts_file,
                             lambda rng: gen_csv_text(rng, rng.choice([2, 3, 3])), 150)
    assert outcomes["ok"] > 0 and outcomes["error"] > 0


def test_generated_bursts_keep_their_signs():
    rng = random.Random(6000)
    for _ in range(100):
        text = gen_facts_text(rng, signs=True)
        want = [(-1 if line.lstrip().startswith("-") else 1) for line in text.split("\n")
                if line.strip()]
        got = parse_burst(text, "b.txt", PROGRAM_ARITIES, PROGRAM_LOCATIONS)
        assert [sign for sign, _, _ in got] == want
