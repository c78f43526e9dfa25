"""The rewriter's pass for members of threadgroup objects (part of rewrite.Rewriter).

C++ cannot overload `.`, so the emulator's proxy of a threadgroup object (a tg_obj_ref, a
tg_var) has no members of the object's own; `tile[i].field`, `p->field`, `one.field` and
`tile[i].f(args)` become calls of mslemu_proxy.h's tg_member and tg_call, with a lambda that
names the member. Which names are threadgroup, and where, is read from their declarations."""

from __future__ import annotations

from ..msl.tokens import match as _match
from ..msl.tokens import next_sig as _sig
from ..msl.tokens import prev_sig as _prev_sig


class ThreadgroupMembers:
    """Mixed into rewrite.Rewriter: uses its `toks` and records into its `text_edits`."""

    # the lambda that names a member for mslemu_proxy.h's tg_member and tg_call
    _MEMBER_OPEN = ", [&](auto&& __mslemu_o) -> decltype(auto) { return "

    def _threadgroup_names(self) -> dict[str, list[tuple[int, int]]]:
        """Names declared with `threadgroup` in their type (variables, parameters, pointers,
        references, struct members: `threadgroup S tile[8]`, `threadgroup S* p`), each with
        the token ranges where the declaration is in scope: the rest of its block, or the
        body of the function whose parameter it is."""
        toks, n = self.toks, len(self.toks)
        scopes: dict[str, list[tuple[int, int]]] = {}
        opened: list[int] = []  # the open ( and { before each token
        for i, t in enumerate(toks):
            if t.kind == "punct" and t.text in ("(", "{"):
                opened.append(i)
                continue
            if t.kind == "punct" and t.text in (")", "}"):
                if opened:
                    opened.pop()
                continue
            if t.kind != "id" or t.text != "threadgroup":
                continue
            pv = _prev_sig(toks, i - 1)
            nx = _sig(toks, i + 1)
            if nx >= n or toks[nx].text == "(" or (pv >= 0 and toks[pv].text in (")", "const")):
                continue  # [[threadgroup(0)]]; a member function qualified for threadgroup objects
            depth, name, k = 0, None, nx
            while k < n:
                x = toks[k]
                if x.kind in ("ws", "nl", "comment"):
                    k += 1
                    continue
                if x.text == "<":
                    depth += 1
                elif x.text in (">", ">>"):
                    depth -= len(x.text)
                    if depth < 0:
                        break  # `reinterpret_cast<threadgroup float4*>`: a type, no name
                elif depth == 0 and x.text in (";", ",", ")", "=", "[", "{", "(", ":"):
                    break
                elif x.kind == "id" and x.text not in ("const", "volatile", "restrict"):
                    name = x.text
                k += 1
            if name is None or k >= n or depth < 0:
                continue
            scope = self._declaration_scope(opened[-1] if opened else -1, i)
            if scope:
                scopes.setdefault(name, []).append(scope)
        return scopes

    def _tg_scopes(self) -> dict[str, list[tuple[int, int]]]:
        if self._tg_scope_cache is None:  # (the passes that use it change no token before they run)
            self._tg_scope_cache = self._threadgroup_names()
        return self._tg_scope_cache

    def _in_tg_scope(self, name: str, at: int) -> bool:
        return any(a <= at <= b for a, b in self._tg_scopes().get(name, ()))

    def _declaration_scope(self, inner: int, at: int) -> tuple[int, int] | None:
        toks, n = self.toks, len(self.toks)
        if inner < 0:
            return (at, n - 1)  # file scope
        if toks[inner].text == "{":
            return (at, _match(toks, inner))
        # a parameter: the body of its function, if this is a definition
        k = _sig(toks, _match(toks, inner) + 1)
        while k < n and toks[k].text not in ("{", ";", "}"):
            k = _match(toks, k) + 1 if toks[k].text in ("(", "[") and toks[k].kind == "punct" else k + 1
        return (inner, _match(toks, k)) if k < n and toks[k].text == "{" else None

    def pass_threadgroup_members(self) -> None:
        """`tile[i].field`, `p->field`, `one.field`, `tile[i].f(args)`, where the object is in
        threadgroup memory: C++ cannot overload `.`, so the emulator's proxy of a threadgroup
        object has no members; each access becomes a call of mslemu_proxy.h's tg_member (a
        proxy of the member, through the race check) or tg_call, with a lambda that names
        the member. Only chains whose first name is declared threadgroup are rewritten; a
        chain inside sizeof/decltype/alignof is left as it is (no lambda may appear there)."""
        toks = self.toks
        n = len(toks)
        names = self._tg_scopes()
        if not names:
            return

        def in_scope(name: str, at: int) -> bool:
            return any(a <= at <= b for a, b in names.get(name, ()))

        unevaluated = set()
        for k, t in enumerate(toks):
            if t.kind == "id" and t.text in ("sizeof", "decltype", "alignof", "noexcept", "static_assert"):
                lp = _sig(toks, k + 1)
                if lp < n and toks[lp].text == "(":
                    unevaluated.update(range(lp, _match(toks, lp) + 1))
        for i, t in enumerate(toks):
            if i in unevaluated:
                continue
            if t.kind == "id" and in_scope(t.text, i):
                pv = _prev_sig(toks, i - 1)
                if pv >= 0 and toks[pv].text in (".", "->"):
                    continue  # a member of something else
                k = _sig(toks, i + 1)
            elif t.text == "(" and t.kind == "punct":
                # `(p + i)->field`: a parenthesized expression with a threadgroup name in it
                pv = _prev_sig(toks, i - 1)
                if pv >= 0 and (toks[pv].kind == "id" or toks[pv].text in (")", "]", ">")):
                    continue  # a call or a cast
                close = _match(toks, i)
                if not any(toks[j].kind == "id" and in_scope(toks[j].text, j) for j in range(i + 1, close)):
                    continue
                k = _sig(toks, close + 1)
                if k >= n or toks[k].text not in (".", "->"):
                    continue
            else:
                continue
            self._rewrite_member_chain(i, k)

    def _rewrite_member_chain(self, root: int, k: int) -> None:
        """Record the edits of one chain: apply_text_edits makes them after the passes that
        match brackets and `.` by their text, and before any decay_val of the whole chain."""
        toks, n = self.toks, len(self.toks)
        edits: list[tuple[int, str, str, bool]] = []  # (token, text before it, text after it, keep its text)
        while k < n:
            x = toks[k].text
            if x == "[" and toks[k].kind == "punct":
                k = _sig(toks, _match(toks, k) + 1)
                continue
            if x not in (".", "->") or toks[k].kind != "punct":
                break
            m = _sig(toks, k + 1)
            if m >= n or toks[m].kind != "id" or toks[m].text == "template":
                break
            after = _sig(toks, m + 1)
            deref = "*" if x == "->" else ""  # p->f is (*p).f: ptr's * gives the element's proxy
            if after < n and toks[after].text == "(":  # a member function: tg_call(obj, [&](o) { return o.f(...); })
                close = _match(toks, after)
                edits += [(root, f"::mslemu::tg_call({deref}", "", True), (k, self._MEMBER_OPEN + "__mslemu_o.", "", False),
                          (close, "", "; })", True)]
                k = _sig(toks, close + 1)
            else:  # a data member: tg_member(obj, [&](o) -> decltype(auto) { return (o.f); })
                edits += [(root, f"::mslemu::tg_member({deref}", "", True),
                          (k, self._MEMBER_OPEN + "(__mslemu_o.", "", False),  # the `.` or `->` becomes the lambda's
                          (m, "", "); })", True)]
                k = after
        if edits:
            self.text_edits.append([(i, toks[i], before, after, keep) for i, before, after, keep in edits])
