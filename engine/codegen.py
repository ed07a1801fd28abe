"""Generate the Python source of a delta rule, as one function.

Role: the fast form of :mod:`engine.compile`'s delta rules, for every rule without negated
atoms. Take::

    r2c reachable(@S, D) :- link(@S, Z), r2_aux(@S, Z, D).

whose delta rule on ``r2_aux`` (``link`` read from ν, Nigam et al. 2012, Sec. 2.3) becomes,
for a scheme without body parts::

    def fire(sign, tup, ann, out):
        dp[2] = ann
        v0 = tup[0]
        v1 = tup[1]
        v2 = tup[2]
        k1 = (v0, v1, )
        for t1 in ((k1,) if k1 in st1 else ()):      # committed link(S, Z)
            if ov1 and t1 in ov1:                    # ... unless this batch deleted it
                s1 = ov1[t1]
                if s1 is None:
                    continue
            out.append((v0, (sign, HP, (v0, v2, ), FIXED)))
        if ov1:
            for t1 in nu1(k1):                       # link(S, Z) new in this batch
                out.append((v0, (sign, HP, (v0, v2, ), FIXED)))

(``st1``, ``ov1``, ``nu1``: the node's committed ``link`` table, its ν overlay and the
lookup of its new tuples; ``HP`` the head predicate, ``FIXED`` the scheme's constant
annotation.) A scheme with body parts calls ``derive(ctx, sign, (HP, h), parts, 1)`` per
derivation instead, after writing each atom's tuple and value into its part; for a rule
with two body atoms, a scheme with a fast form of it (``derive_pair``, absorption's union
of two single derivations) is called as ``PAIR(pt1[2], ann)`` (the two body facts'
annotations in body order) for an insertion first.

The closure chain of :mod:`engine.compile` calls a Python function per step of the chain
(six for this rule) and fills a dictionary of variables per derivation; this function
makes no call but the lookups (and the scheme's). A rule with expressions (assignments,
comparisons, a constant or an expression as an argument) or aggregate selection's
monotonicity check also keeps the bound variables in a dictionary, which the compiled
expressions (:mod:`ndlog.expr`) read. The two forms derive the same updates in the same
order, with the same body parts handed to the scheme's ``derive`` (``tests/test_codegen.py``
compares them). The source is made and compiled once per (rule, delta position) and
program; each node calls the resulting factory with its own tables.

Deliberately not here: negated atoms (:mod:`engine.compile` does not offer such rules), and
rules with more than :data:`MAX_NU_ATOMS` atoms read from ν (:func:`join_factory` returns
None); the closure chain serves both. Also not here: the
analysis of a rule (:func:`engine.compile._raw_plan`); anything about picking or committing.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["join_factory"]

#: ν atoms of one rule beyond which the code would grow too much: the rest of the chain
#: is written out once for the committed tuples and once for the batch's new ones
MAX_NU_ATOMS = 3


def join_factory(name: str, raw: list, head: list, delta: int, loc: int | None,
                 fixed: bool, uses_parts: bool, guarded: bool,
                 paired: bool = False) -> Callable | None:
    """The factory of one delta rule as a generated function, or None for a rule with too
    many atoms read from ν. The rule has no negated atom (:mod:`engine.compile` keeps the
    closure chain for those: see the module docstring).

    Parameters
    ----------
    name:
        The rule's name (shown in tracebacks and profiles).
    raw, head:
        :func:`engine.compile._raw_plan` of the delta rule: its steps in evaluation order
        (the delta atom first) and its head arguments.
    delta:
        The delta atom's position among the body atoms (Nigam et al. 2012, Sec. 2.3).
    loc:
        The head argument that names the destination, None for a centralized program.
    fixed:
        The scheme's annotation is constant (no ``derive`` call, set semantics).
    uses_parts:
        The scheme reads the body's ``[pred, tuple, value]`` parts.
    guarded:
        A check runs before each derivation (aggregate selection's monotonicity): the
        binding ``GUARD(env)``.
    paired:
        The scheme has a fast form of ``derive`` for two body atoms
        (:meth:`provenance.base.AnnotationScheme.derive_pair`), the binding ``PAIR``: a
        rule with two body atoms calls it for an insertion, and ``derive`` only where it
        returns None.

    Returns
    -------
    callable or None
        ``factory(bindings) -> fire(sign, tuple, annotation, out)``. ``bindings`` maps
        ``HP`` (the head predicate), ``CENTRAL``, ``FIXED`` (the constant annotation),
        ``derive``, ``ctx``, ``parts`` (the body parts), ``dp`` (the delta atom's part),
        ``GUARD``, ``PAIR`` (``derive_pair``'s function or None) and, per atom step ``k``
        of ``raw``, ``st<k>`` and ``ov<k>`` (its committed table and ν overlay),
        ``ix<k>`` (its probe's cell, mode index: :meth:`engine.node.Node.index_probe`),
        ``pt<k>`` (its part) and ``nu<k>`` (``key -> new tuples in ν``, an atom read from
        ν) to the node's objects (:func:`engine.compile._join_bindings`); the compiled
        expressions are the factory's own.
    """
    if sum(1 for kind, x, _ in raw if kind == "atom" and x < delta) > MAX_NU_ATOMS:
        return None
    writer = _Writer(raw, head, delta, loc, fixed, uses_parts, guarded, paired)
    source = writer.source()
    scope: dict = {}
    exec(compile(source, f"<delta rule {name} on body atom {delta}>", "exec"), scope)
    make = scope["make"]
    names, own = writer.params, writer.funcs

    def factory(bindings: dict) -> Callable:
        return make(*[own[n] if n in own else bindings[n] for n in names])
    factory.source = source
    return factory


class _Writer:
    """Writes the source of ``make(<bindings>) -> fire`` for one delta rule."""

    def __init__(self, raw, head, delta, loc, fixed, uses_parts, guarded, paired):
        self.raw, self.head, self.delta, self.loc = raw, head, delta, loc
        self.fixed, self.uses_parts, self.guarded = fixed, uses_parts, guarded
        others = [k for k, (kind, _, _) in enumerate(raw) if kind == "atom"]
        #: the atom step whose part is the other body fact of a two-atom rule, when the
        #: scheme's PAIR derives its insertions; else None
        self.pair_with = others[0] if paired and uses_parts and not fixed \
            and len(others) == 1 else None
        #: expressions are called with a dictionary of the bound variables
        self.env = guarded or any(kind in ("assign", "test") for kind, _, _ in raw) or \
            any(kind == "fn" for kind, _ in head) or any(self._has_fn(s) for s in raw)
        self.params = ["HP", "CENTRAL", "FIXED", "derive", "ctx", "parts", "dp", "GUARD",
                       "PAIR"]
        self.funcs: dict[str, Callable] = {}
        self._fn_names: dict[int, str] = {}          # id(compiled expression) -> its name
        self.lines: list[str] = []
        self.var: dict[str, str] = {}

    @staticmethod
    def _has_fn(step) -> bool:
        kind, _, data = step
        if kind == "delta":
            return bool(data[2] or data[3])
        if kind == "atom":
            return bool(data[6]) or any(k == "fn" for k, _ in data[3])
        return False

    def source(self) -> str:
        for k, (kind, x, data) in enumerate(self.raw):
            if kind == "atom":
                mode = data[1]
                self.params += [f"st{k}", f"ov{k}"]
                self.params += [f"ix{k}"] if mode == "index" else []
                self.params += [f"pt{k}"] if self.uses_parts else []
                self.params += [f"nu{k}"] if x < self.delta else []
        self.lines = ["def fire(sign, tup, ann, out):", "    dp[2] = ann"]
        if self.env:
            self.lines.append("    env = {}")
        binds, same, post, consts = self.raw[0][2]
        self._match("tup", binds, same, post, consts, 1, "return")
        if self.uses_parts:
            self.lines.append("    dp[1] = tup")
        self._steps(1, 1, "return")
        params = self.params + list(self.funcs)
        text = ["def make(" + ", ".join(params) + "):"]
        text += ["    " + line for line in self.lines]
        text.append("    return fire")
        self.params = params
        return "\n".join(text) + "\n"

    def _fn(self, f: Callable) -> str:
        """The parameter name of a compiled expression (the factory passes it in), one per
        expression: an atom read from ν writes its tests twice."""
        name = self._fn_names.get(id(f))
        if name is None:
            name = self._fn_names[id(f)] = f"f{len(self.funcs)}"
            self.funcs[name] = f
        return name

    def _term(self, part) -> str:
        kind, x = part
        return self.var[x] if kind == "var" else f"{self._fn(x)}(env)"

    def _match(self, t: str, binds, same, post, consts, depth: int, fail: str) -> None:
        """Test and bind the tuple ``t`` (:func:`engine.compile._match_fn`'s order)."""
        pad = "    " * depth
        for p, f in consts:
            self.lines += [f"{pad}if {t}[{p}] != {self._fn(f)}(env):", f"{pad}    {fail}"]
        for p, q in same:
            self.lines += [f"{pad}if {t}[{p}] != {t}[{q}]:", f"{pad}    {fail}"]
        for p, n in binds:
            self.var[n] = f"v{len(self.var)}"
            self.lines.append(f"{pad}{self.var[n]} = {t}[{p}]")
            if self.env:
                self.lines.append(f"{pad}env[{n!r}] = {self.var[n]}")
        for p, f in post:
            self.lines += [f"{pad}if {self._fn(f)}(env) != {t}[{p}]:", f"{pad}    {fail}"]

    def _steps(self, k: int, depth: int, fail: str) -> None:
        """Append step ``k`` of the plan and everything after it."""
        if k == len(self.raw):
            self._emit(depth)
            return
        kind, x, data = self.raw[k]
        pad = "    " * depth
        if kind == "assign":
            self.var[x] = f"v{len(self.var)}"
            self.lines += [f"{pad}{self.var[x]} = env[{x!r}] = {self._fn(data)}(env)"]
            self._steps(k + 1, depth, fail)
        elif kind == "test":
            self.lines += [f"{pad}if not {self._fn(x)}(env):", f"{pad}    {fail}"]
            self._steps(k + 1, depth, fail)
        else:
            self._atom(k, x, data, depth)

    def _atom(self, k: int, x: int, data, depth: int) -> None:
        """The loop(s) of atom step ``k``: over the committed tuples, then (an atom read
        from ν) over the batch's new ones."""
        pred, mode, positions, key_parts, binds, same, post = data
        pad = "    " * depth
        st, ov, key = f"st{k}", f"ov{k}", f"k{k}"
        if mode != "scan":
            self.lines.append(f"{pad}{key} = (" +
                              "".join(f"{self._term(p)}, " for p in key_parts) + ")")
        source = {"full": f"(({key},) if {key} in {st} else ())",
                  "index": f"(ix{k}[0]({key}) or ())", "scan": st}[mode]
        saved = dict(self.var)
        self.lines.append(f"{pad}for t{k} in {source}:")
        if x < self.delta:                                # read from ν
            self.lines += [f"{pad}    if {ov} and t{k} in {ov}:",
                           f"{pad}        s{k} = {ov}[t{k}]",
                           f"{pad}        if s{k} is None:",
                           f"{pad}            continue"]
            if self.uses_parts:
                self.lines += [f"{pad}    else:", f"{pad}        s{k} = {st}[t{k}]"]
            self._body(k, x, data, depth + 1, f"s{k}")
            self.var = dict(saved)
            self.lines += [f"{pad}if {ov}:",
                           f"{pad}    for t{k} in nu{k}({key if mode != 'scan' else 'None'}):"]
            self._body(k, x, data, depth + 2, f"{ov}[t{k}]")
        else:
            self._body(k, x, data, depth + 1, f"{st}[t{k}]")
        self.var = saved

    def _body(self, k: int, x: int, data, depth: int, value: str) -> None:
        """Inside a loop of atom step ``k``: its tests, bindings and part, then the rest."""
        _, _, _, _, binds, same, post = data
        self._match(f"t{k}", binds, same, post, (), depth, "continue")
        if self.uses_parts:
            pad = "    " * depth
            self.lines += [f"{pad}pt{k}[1] = t{k}", f"{pad}pt{k}[2] = {value}"]
        self._steps(k + 1, depth, "continue")

    def _emit(self, depth: int) -> None:
        """The head and its update(s), appended to ``out``."""
        pad = "    " * depth
        h = "(" + "".join(f"{self._term(p)}, " for p in self.head) + ")"
        if self.guarded:
            self.lines.append(f"{pad}GUARD(env)")
        if self.loc is None:
            dst = "CENTRAL"
        elif self.head[self.loc][0] == "var":
            dst = self.var[self.head[self.loc][1]]
        else:
            dst = f"h[{self.loc}]"
        if self.fixed and dst != f"h[{self.loc}]":
            self.lines.append(f"{pad}out.append(({dst}, (sign, HP, {h}, FIXED)))")
            return
        self.lines.append(f"{pad}h = {h}")
        if self.fixed:
            self.lines.append(f"{pad}out.append(({dst}, (sign, HP, h, FIXED)))")
            return
        if self.pair_with is not None:         # derive's fast form, derive as fallback
            k = self.pair_with
            x = self.raw[k][1]
            args = f"pt{k}[2], ann" if x < self.delta else f"ann, pt{k}[2]"
            self.lines += [f"{pad}a = PAIR({args}) if sign > 0 else None",
                           f"{pad}if a is not None:",
                           f"{pad}    out.append(({dst}, (sign, HP, h, a)))",
                           f"{pad}else:"]
            pad += "    "
        self.lines += [f"{pad}for a in derive(ctx, sign, (HP, h), parts, {self.delta}):",
                       f"{pad}    out.append(({dst}, (sign, HP, h, a)))"]
