"""Turn preprocessed Metal Shading Language into C++ for the shim.

Works on tokens (gemmglossary.msl.lexer), never on raw text, and keeps every newline so
the linemarkers of the preprocessed input still map each line to the original .metal/.h
file. Kernel parameters are read by the project's one signature reader
(gemmglossary.msl.signature); what the emulator does with them is decided here.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass, field

from .abi import abi
from .errors import CompileError
from .conditionals import SoftHalfConditionals
from .range_designators import RangeDesignators
from .union_copies import UnionCopies
from .template_deduction import param_type, template_param_name, type_words, unify
from .threadgroup_members import ThreadgroupMembers
from .vector_brace_lists import VectorBraceLists
from ..msl.expressions import ExpressionError, evaluate
from ..msl.lexer import Tok, assign_lines, join, tokenize
from ..msl.signature import parse_parameters
# The token walkers shared by every reader of Metal source (gemmglossary.msl.tokens).
from ..msl.tokens import SourceError
from ..msl.tokens import attribute_end as _find_attr_end
from ..msl.tokens import attribute_items as _attr_items
from ..msl.tokens import gnu_attribute_items as _attr_items_gnu
from ..msl.tokens import is_attribute_start as _is_attr_start
from ..msl.tokens import match as _match
from ..msl.tokens import match_back as _match_back
from ..msl.tokens import next_sig as _sig
from ..msl.tokens import prev_sig as _prev_sig
from ..msl.tokens import text as _text

# each address-space qualifier and its AddressSpace (mslemu_abi.h); the last three are thread memory here
ADDRESS_SPACES = {q: abi()[a] for q, a in {
    "device": "AS_DEVICE", "constant": "AS_CONSTANT", "threadgroup": "AS_THREADGROUP", "thread": "AS_THREAD",
    "threadgroup_imageblock": "AS_THREAD", "ray_data": "AS_THREAD", "object_data": "AS_THREAD"}.items()}
STD_ATTRS = {"maybe_unused", "nodiscard", "likely", "unlikely", "fallthrough", "noreturn", "deprecated"}
# a literal zero (`0`, `0.0f`, `0u`, `.0`), the only initializer a threadgroup variable may have here
_ZERO_LITERAL = re.compile(r"(?:0+|0*\.0*|0+\.0*|0x0+)(?:[eE][+-]?\d+)?[fFhHuUlL]*")
BUILTIN_TYPE_WORDS = {"unsigned", "signed", "long", "short", "int", "char", "float", "double", "bool", "void"}

# each thread-position attribute and the ParamKind (mslemu_abi.h) that binds it
ATTR_KINDS = {attr: abi()[kind] for attr, kind in {
    "thread_position_in_grid": "P_TPIG", "thread_position_in_threadgroup": "P_TPITG",
    "threadgroup_position_in_grid": "P_TGPIG", "threads_per_threadgroup": "P_TPTG",
    "threadgroups_per_grid": "P_TGPG", "threads_per_grid": "P_TPG", "thread_index_in_threadgroup": "P_TIITG",
    "thread_index_in_simdgroup": "P_LANE", "simdgroup_index_in_threadgroup": "P_SGITG",
    "simdgroups_per_threadgroup": "P_SGPTG", "thread_execution_width": "P_WIDTH", "threads_per_simdgroup": "P_WIDTH",
    "grid_origin": "P_ORIGIN", "thread_index_in_quadgroup": "P_QLANE", "quadgroup_index_in_threadgroup": "P_QGITG",
    "quadgroups_per_threadgroup": "P_QGPTG",
}.items()}
P_NONE, P_BUFFER, P_TGMEM = abi()["P_NONE"], abi()["P_BUFFER"], abi()["P_TGMEM"]
# position/size vectors that must agree in arity (Apple's compiler rule)
VECTOR_ATTRS = {"thread_position_in_grid", "thread_position_in_threadgroup", "threadgroup_position_in_grid",
                "threads_per_threadgroup", "threadgroups_per_grid", "threads_per_grid", "grid_origin"}


@dataclass
class Param:
    name: str
    type: str
    kind: int  # a ParamKind of mslemu_abi.h: P_BUFFER, P_TGMEM or a thread attribute
    index: int
    attr: str
    gate: str | None
    line: int
    file: str


@dataclass
class KernelDecl:
    name: str  # host name
    fn: str  # function name
    params: list[Param]
    file: str
    line: int
    mtt_expr: str | None = None
    template_params: str | None = None  # text inside template<...> of a template kernel
    template_args: str | None = None  # for instantiations
    is_template: bool = False
    ns: str = ""  # enclosing namespace, "a::b::"
    id: str = ""
    mtt_in_template: bool = True  # an instantiation's max_total_threads_per_threadgroup comes from its template


@dataclass
class Rewritten:
    text: str
    kernels: dict[str, KernelDecl] = field(default_factory=dict)
    function_constants: dict[str, tuple[int, bool]] = field(default_factory=dict)
    all_names: list[str] = field(default_factory=list)
    # (name, index, type) of each function constant declaration, in order: read when the
    # object is loaded (the values are not compiled in), and given by fc_lines
    at_load: list[tuple[str, int, str]] | None = None


def _blank(toks: list[Tok], a: int, b: int, repl: str = "") -> None:
    """Replace tokens a..b (inclusive) by repl, keeping their newlines."""
    nls = sum(toks[k].text.count("\n") for k in range(a, b + 1))
    # what is blanked to whitespace reads as whitespace to the later passes
    toks[a] = Tok("id" if repl.strip() else "ws", repl + "\n" * nls, toks[a].line, toks[a].file)
    for k in range(a + 1, b + 1):
        toks[k] = Tok("ws", "", toks[k].line, toks[k].file)


def _after_template_header(words: list[str]) -> list[str]:
    """The words of a declaration after its `template <...>` headers (and `typedef`)."""
    k = 0
    while k < len(words) and words[k] in ("template", "typedef"):
        if words[k] == "typedef":
            k += 1
            continue
        k += 1
        depth = 0
        while k < len(words):
            depth += {"<": 1, ">": -1, ">>": -2}.get(words[k], 0)
            k += 1
            if depth <= 0:
                break
    return words[k:]


def _top_level_split(text: str) -> list[str]:
    """Split a template parameter or argument list at its top-level commas."""
    parts, depth, cur = [], 0, ""
    for t in tokenize(text):
        if t.text in ("(", "[", "{", "<"):
            depth += 1
        elif t.text in (")", "]", "}", ">"):
            depth -= 1
        elif t.text == ">>":
            depth -= 2
        elif t.text == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += t.text
    return [p for p in [*parts, cur] if p.strip()]


def _accepts(template_params: str, args: list[str], *, template_ids_as_values: bool = False) -> bool:
    """Whether a template parameter list takes these (preprocessed) arguments: their number,
    and each one's kind where it shows (a number or true/false is a value, a builtin type
    word or a name followed by <...> a type). With `template_ids_as_values`, a name followed
    by <...> may also be a value: a specialization of a function template given to a
    parameter of function-pointer type (llama.cpp's `kernel_mul_mv_id<mmv_fn<...>>`)."""
    params = _top_level_split(template_params)
    pack = any("..." in p for p in params)
    fixed = [p for p in params if "..." not in p]
    if len(args) < sum(1 for p in fixed if "=" not in p) or (not pack and len(args) > len(fixed)):
        return False
    for p, a in zip(fixed, args):
        is_type_param = re.match(r"\s*(typename|class)\b", p) is not None
        a = a.strip()
        is_value = re.match(r"[-+(]?\s*(\d|true\b|false\b)", a) is not None
        is_type = a.split("<")[0].split()[-1] in BUILTIN_TYPE_WORDS | {"half", "bfloat", "uint", "ushort", "uchar",
                                                                       "ulong"} or (
            "<" in a and a.endswith(">") and not template_ids_as_values)
        if (is_type_param and is_value) or (not is_type_param and is_type and not is_value):
            return False
    return True


def _angle_text(toks: list[Tok], lt: int, gt: int) -> str:
    """The text between the '<' at lt and its closer at gt; a closing '>>' also ends an
    inner list, whose '>' belongs to the text."""
    inner = _text(toks, lt + 1, gt - 1)
    return inner + " >" if toks[gt].text == ">>" else inner


def _fc_given(values: dict, name: str, idx: int, typ: str, where: str) -> tuple[bool, bool | float | int | None]:
    """(defined, value) of the function constant `name` (index `idx`) in `values` (by name
    or index, as load_kernel takes them), the value a Python bool, float or int (numpy's
    scalars too). Any other value, or an integer beyond 64 bits, is a CompileError naming
    the constant."""
    if name not in values and idx not in values:
        return False, None
    v = values.get(name, values.get(idx))
    v = v.item() if hasattr(v, "item") else v
    if isinstance(v, (bool, float)):
        return True, v
    try:
        i = int(v)
    except (TypeError, ValueError):
        raise CompileError(f"{where}: function constant '{name}' ({typ}): {v!r} is not a number") from None
    if not -2**63 < i < 2**64:
        raise CompileError(f"{where}: function constant '{name}' ({typ}): {i} does not fit in 64 bits")
    return True, i


def _c_value(v: bool | float | int, typ: str) -> str:
    """A value of :func:`_fc_given` as C++ source, cast to the constant's type."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return f"({typ})({v!r})"


class Rewriter(ThreadgroupMembers, VectorBraceLists, RangeDesignators, SoftHalfConditionals, UnionCopies):
    """The passes over one preprocessed source. With `function_constants` None the values of
    the function constants are left as placeholders (:data:`_FC`), for :func:`_with_values`
    to fill in: the passes do not depend on them, so a source is rewritten once for all the
    values it is compiled with (MLX specializes most kernels by function constants)."""

    def __init__(self, text: str, default_file: str, function_constants: dict | None,
                 only: Collection[str] | None = None, soft_half: bool = False):
        self.soft_half = soft_half  # the host compiler's half is the shim's class (conditionals.py)
        # the host names of the kernels to instantiate (None: all of them)
        self.only = None if only is None else ({only} if isinstance(only, str) else set(only))
        self.all_names: list[str] = []
        self.ns_hint = text
        self.toks = tokenize(text)
        assign_lines(self.toks, default_file)
        self.default_file = default_file
        self.fc_values = None if function_constants is None else dict(function_constants)
        self.fc_specs: list[tuple[str, int, str]] = []  # (name, index, type) of each placeholder pair
        self.out = Rewritten("")
        self.template_kernels: dict[str, list[KernelDecl]] = {}  # by name: overloads differ in their template parameters
        self.kernel_list: list[KernelDecl] = []
        self.value_wraps: list[tuple[int, int]] = []  # (first, last) token of an expression to take by value
        self._tg_scope_cache: dict[str, list[tuple[int, int]]] | None = None
        self._ns_walk: tuple[int, list[str | None]] = (0, [])  # namespace_at's: (next token, open scopes)
        # edits made after every pass (apply_text_edits), one group at a time: (token, the token
        # as recorded, text before it, text after it, keep its own text); pass_threadgroup_members,
        # pass_vector_brace_lists, and pass_call_arguments's decay_array of a threadgroup array
        self.text_edits: list[list[tuple[int, Tok, str, str, bool]]] = []
        # (host name, first and last token) of each explicit kernel instantiation, kept or not
        self.instantiation_tokens: list[tuple[str, int, int]] = []
        # the characters of each one in the output (run): what selected() blanks
        self.instantiation_chars: list[tuple[str, int, int]] = []
        self.body = ""  # the output without its entry points

    def err(self, t: Tok, msg: str) -> CompileError:
        return CompileError(f"{t.file}:{t.line}: error: {msg}")

    # ------------------------------------------------------------------ passes
    def run(self) -> Rewritten:
        toks = self.toks
        shim_needed = False
        for i, t in enumerate(toks):
            if t.kind == "pp" and re.match(r"#\s*pragma\s+mslemu_shim\b", t.text):
                t.text = ""
                shim_needed = True
            elif t.kind == "pp" and re.match(r"#\s*pragma\s+(clang|unroll)", t.text):
                t.text = ""
        self.pass_coherence()
        self.pass_union_copies()
        self.pass_asm_intrinsics()
        if self.soft_half:
            self.pass_soft_half_conditionals()
        self.pass_array_designators()
        self.pass_function_constants()
        self.pass_kernels()
        self.pass_member_specializations()
        self.pass_auto_copies()
        self.pass_call_arguments()
        self.pass_threadgroup_members()
        self.pass_vector_brace_lists()
        self.pass_address_spaces()
        self.pass_dedupe()
        self.pass_cleanup()
        self.apply_text_edits()
        self.apply_value_wraps()
        # the shim first, before any token, so that the compiler can use it precompiled (build.py)
        head = '#include "mslemu.h"\n' if shim_needed else ""
        text = head + join(toks)
        self._locate_instantiations(len(head))
        self.body = text
        text += self.entries()
        self.out.text = text
        self.out.all_names = self.all_names
        return self.out

    def pass_coherence(self) -> None:
        """`coherent(device)` / `coherent(system)` before a pointer's address space (Metal 3.2:
        its stores are visible to other threadgroups, or to the CPU, without waiting for the
        kernel to end): the emulator's device memory is one process's memory, coherent for
        every thread, so the qualifier goes."""
        toks, n = self.toks, len(self.toks)
        for i, t in enumerate(toks):
            if t.kind != "id" or t.text != "coherent":
                continue
            lp = _sig(toks, i + 1)
            if lp >= n or toks[lp].text != "(":
                continue
            rp = _match(toks, lp)
            scope = _text(toks, lp + 1, rp - 1).strip()
            if scope not in ("device", "system", "thread_scope_device", "thread_scope_system"):
                raise self.err(t, f"coherent({scope}): the emulator knows coherent(device) and coherent(system)")
            _blank(toks, i, rp, " ")

    def pass_asm_intrinsics(self) -> None:
        """`__asm("air.x")` links a declaration to an undocumented intrinsic of Apple's compiler.
        The declaration gets a body that calls a function with an error attribute: a call
        that survives compilation is a compile error at the __asm line (the compiler adds
        where it was called from), and a declaration nobody calls costs nothing."""
        toks = self.toks
        for i, t in enumerate(toks):
            if t.kind != "id" or t.text not in ("__asm", "__asm__", "asm"):
                continue
            lp = _sig(toks, i + 1)
            if lp >= len(toks) or toks[lp].text != "(":
                continue
            rp = _match(toks, lp)
            name = "".join(x.text.strip('"') for x in toks[lp + 1:rp] if x.kind == "str")
            if not name.startswith("air."):
                continue
            semi = _sig(toks, rp + 1)
            if semi >= len(toks) or toks[semi].text != ";":
                raise self.err(t, f"expected ';' after the __asm linkage to '{name}'")
            msg = (f"'{name}' is an undocumented Metal intrinsic (linked with __asm): the emulator cannot run it, "
                   f"and Metal 4 compilers reject __asm linkage to air intrinsics")
            fn = f"__mslemu_air_{t.line}_{i}"
            _blank(toks, i, semi, f'{{ extern void {fn}() __attribute__((error("{_esc(msg)}"))); {fn}(); '
                                  f'__builtin_unreachable(); }}')

    def pass_member_specializations(self) -> None:
        """Metal's clang accepts an explicit specialization of a member function template
        inside its class; g++ does not. Without explicit template arguments (the form MLX
        uses) the specialization becomes an ordinary overload, which overload resolution
        prefers for exactly the argument types the specialization names."""
        toks = self.toks
        for k in self._class_scope_tokens():
            if toks[k].text != "template":
                continue
            lt = _sig(toks, k + 1)
            gt = _sig(toks, lt + 1) if lt < len(toks) else lt
            if lt >= len(toks) or toks[lt].text != "<" or toks[gt].text != ">":
                continue
            # the declarator: the function name, before its parameter list
            j = _sig(toks, gt + 1)
            while j < len(toks) and toks[j].text not in ("(", ";", "{"):
                if toks[j].text == "operator":  # operator() is a name that holds parentheses
                    j = _sig(toks, j + 1)
                    if toks[j].text == "(":
                        j = _sig(toks, _match(toks, j) + 1)
                    continue
                j = _sig(toks, j + 1)
            if j >= len(toks) or toks[j].text != "(":
                continue  # not a function (a member class specialization): left to the compiler
            if toks[_prev_sig(toks, j - 1)].text in (">", ">>"):
                raise self.err(toks[k], "an explicit specialization with template arguments inside a class: "
                                        "Metal's compiler accepts it, the emulator's host compiler (g++) does not; "
                                        "declare it at namespace scope")
            _blank(toks, k, gt, " ")

    def _class_scope_tokens(self):
        """Indices of the tokens directly inside a struct, class or union body."""
        toks = self.toks
        stack: list[bool] = []  # per open brace: is it a class body
        head: list[str] = []  # significant words since the last ; { or }
        for k, t in enumerate(toks):
            if t.kind in ("ws", "nl", "comment", "pp"):
                continue
            if t.text == "{":
                # a class head: `[template <...>] struct|class|union NAME [: bases]`
                body = _after_template_header(head)
                is_class = bool(body) and body[0] in ("struct", "class", "union") and "(" not in body \
                    and "=" not in body
                stack.append(is_class)
                head = []
            elif t.text == "}":
                if stack:
                    stack.pop()
                head = []
            elif t.text == ";":
                head = []
            else:
                if stack and stack[-1]:
                    yield k
                if t.text == ":" and head and head[-1] in ("public", "private", "protected"):
                    head = []
                else:
                    head.append(t.text)

    def pass_auto_copies(self) -> None:
        """`auto v = tile[i];` copies the element in Metal, where the emulator's subscript is
        a proxy of threadgroup memory: the initializer is wrapped in decay_val, which turns a
        proxy into its value and passes anything else through. Initializers that end in a
        call are left alone (their result is a value already, and a copy would cost them
        their elision); so are braced ones, single tokens and those with a top-level comma.
        The wrapping is applied after the other passes (run()), which match tokens by text."""
        toks = self.toks
        n = len(toks)
        for i, t in enumerate(toks):
            if t.kind != "id" or t.text != "auto":
                continue
            pv = _prev_sig(toks, i - 1)
            if pv >= 0 and toks[pv].text not in (";", "{", "}", "(", ")", ":", "const", "constexpr", "static",
                                                "thread", "else", "do"):
                continue  # e.g. `template <auto N = 3>`
            name = _sig(toks, i + 1)
            eq = _sig(toks, name + 1) if name < n else n
            if name >= n or toks[name].kind != "id" or eq >= n or toks[eq].text != "=":
                continue
            first = _sig(toks, eq + 1)
            if first >= n or toks[first].text == "{":
                continue
            k = first
            while k < n and toks[k].text not in (";", ",", ")", "}", "]"):
                k = _match(toks, k) + 1 if toks[k].text in ("(", "[", "{") else k + 1
            last = _prev_sig(toks, k - 1)
            if k >= n or toks[k].text != ";" or toks[last].text == ")" or last == first:
                continue
            self.value_wraps.append((first, last))

    def pass_call_arguments(self) -> None:
        """A threadgroup element passed to a function (`op(total, shared[i])`, `simd_reduce(v[k])`)
        is a value in Metal; the emulator's proxy would make a template deduce the proxy's type
        (a conflict with float, or worse, a wrong overload picked by sizeof). Arguments that
        are a subscript chain (`a[i]`, `a[i][j].x`, `p->v[k]`, `*p`) are wrapped in decay_val,
        which leaves device and thread elements as they are (lvalues) and turns a proxy into
        its value."""
        toks = self.toks
        for lp, t in enumerate(toks):
            if t.text != "(" or t.kind != "punct":
                continue
            pv = _prev_sig(toks, lp - 1)
            if pv < 0:
                continue
            before = toks[pv]
            if before.kind == "id":
                if before.text in ("decltype", "sizeof", "alignof", "alignas", "__attribute__", "asm", "__asm",
                                   "__asm__", "static_assert", "operator"):
                    continue
            elif before.text not in (">", ">>", "]", ")"):
                continue
            rp = _match(toks, lp)
            if self._is_pointer_declarator(lp, rp):
                continue
            start = lp + 1
            k = start
            while k <= rp:
                x = toks[k].text
                if x in ("(", "[", "{") and toks[k].kind == "punct":
                    k = _match(toks, k) + 1
                    continue
                if (x == "," and toks[k].kind == "punct") or k == rp:
                    self._wrap_if_element(start, k - 1)
                    start = k + 1
                k += 1

    def _is_pointer_declarator(self, lp: int, rp: int) -> bool:
        """Whether the parentheses lp..rp hold the declarator of a pointer to a function,
        `(*name)` followed by its parameter list (`void (*deq)(device const T *, short)`, a
        template parameter or a variable), not a call's argument `*p`."""
        toks = self.toks
        inner = [k for k in range(lp + 1, rp) if toks[k].kind not in ("ws", "nl", "comment")]
        nxt = _sig(toks, rp + 1)
        return (len(inner) == 2 and toks[inner[0]].text == "*" and toks[inner[1]].kind == "id"
                and nxt < len(toks) and toks[nxt].text == "(")

    def _wrap_if_element(self, a: int, b: int) -> None:
        """Record tokens a..b for decay_val if they form `[*]name(.name|->name|[...])*` with a
        subscript or a dereference in it; a lone name of a threadgroup array for decay_array
        (a template's `threadgroup T* p` deduces T from a pointer, not from the emulator's
        array: MLX's quantized_utils.h gemm_loop_aligned(Xs, Ws, ...))."""
        toks = self.toks
        sig = [k for k in range(a, b + 1) if toks[k].kind not in ("ws", "nl", "comment")]
        if not sig:
            return
        if len(sig) == 1 and toks[sig[0]].kind == "id" and self._in_tg_scope(toks[sig[0]].text, sig[0]):
            self.text_edits.append([(sig[0], toks[sig[0]], "::mslemu::decay_array(", ")", True)])
            return
        k = 0
        deref = toks[sig[0]].text == "*"
        if deref:
            k = 1
        if k >= len(sig) or toks[sig[k]].kind != "id" or toks[sig[k]].text in BUILTIN_TYPE_WORDS:
            return
        k += 1
        subscript = False
        while k < len(sig):
            x = toks[sig[k]].text
            if x == "[":
                close = _match(toks, sig[k])
                subscript = True
                while k < len(sig) and sig[k] <= close:
                    k += 1
                continue
            if x in (".", "->", "::") and k + 1 < len(sig) and toks[sig[k + 1]].kind == "id":
                k += 2
                continue
            return  # anything else (an operator, a call): not a plain element
        if subscript or deref:
            self.value_wraps.append((sig[0], sig[-1]))

    def apply_text_edits(self) -> None:
        """The edits of pass_threadgroup_members, pass_vector_brace_lists and decay_array, group by group;
        a group whose tokens a later pass replaced (a declaration rewritten, a duplicate
        definition dropped) is left alone."""
        toks = self.toks
        for group in self.text_edits:
            if any(toks[i] is not tok for i, tok, *_ in group):
                continue
            for i, _, before, after, keep in group:
                toks[i].text = before + (toks[i].text if keep else "") + after

    def apply_value_wraps(self) -> None:
        for first, last in self.value_wraps:
            self.toks[first].text = "::mslemu::decay_val(" + self.toks[first].text
            self.toks[last].text = self.toks[last].text + ")"

    def pass_function_constants(self) -> None:
        toks = self.toks
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.kind == "id" and t.text == "constant":
                # constant TYPE NAME [[function_constant(X)]] ;
                j = i + 1
                semi = j
                while semi < len(toks) and toks[semi].text not in (";", "{", "}"):
                    semi += 1
                fa = None
                for k in range(i, semi):
                    if _is_attr_start(toks, k):
                        e = _find_attr_end(toks, k)
                        items = _attr_items(toks, k, e)
                        if any(n == "function_constant" for n, _ in items):
                            fa = (k, e, items)
                        break
                if fa and semi < len(toks) and toks[semi].text == ";":
                    k, e, items = fa
                    idx_text = dict(items)["function_constant"]
                    name_i = _prev_sig(toks, k - 1)
                    name = toks[name_i].text
                    # `static constant constexpr const bool x [[function_constant(0)]]` (MLX's
                    # STEEL_CONST): the declaration below says static constexpr itself
                    typ = " ".join(w for w in _text(toks, i + 1, name_i - 1).split()
                                   if w not in ("static", "constexpr", "const"))
                    while True:
                        pv = _prev_sig(toks, i - 1)
                        if pv < 0 or toks[pv].text not in ("static", "constexpr", "const"):
                            break
                        _blank(toks, pv, i - 1, " ")
                    # the index as written, macros expanded: a number or arithmetic on numbers
                    # (llama.cpp's `FC_MUL_MV + 0`); anything else cannot be matched by index
                    try:
                        idx = evaluate(idx_text)
                    except ExpressionError:
                        idx = -1
                    if self.fc_values is None:
                        n = len(self.fc_specs)
                        self.fc_specs.append((name, idx, typ))
                        defined, value = None, _FC.format("value", n)
                    else:
                        defined, value = _fc_value(self.fc_values, name, idx, typ, self.default_file)
                    self.out.function_constants[name] = (idx, defined)
                    _blank(toks, i, semi, f"static constexpr {typ} {name} = {value};")
                    i = semi + 1
                    continue
            if t.kind == "id" and t.text == "is_function_constant_defined":
                j = _sig(toks, i + 1)
                if j < len(toks) and toks[j].text == "(":
                    k = _match(toks, j)
                    name = _text(toks, j + 1, k - 1)
                    if name not in self.out.function_constants:
                        raise self.err(t, f"is_function_constant_defined: '{name}' is not a function constant")
                    if self.fc_values is None:
                        n = max(n for n, spec in enumerate(self.fc_specs) if spec[0] == name)  # the latest
                        _blank(toks, i, k, _FC.format("defined", n))
                    else:
                        _blank(toks, i, k, "true" if self.out.function_constants[name][1] else "false")
                    i = k + 1
                    continue
            i += 1

    # ------------------------------------------------------------------ kernels
    def pass_kernels(self) -> None:
        toks = self.toks
        i = 0
        while i < len(toks):
            t = toks[i]
            is_kw = t.kind == "id" and t.text == "kernel" and toks[_prev_sig(toks, i - 1)].text not in (".", "->", "::")
            is_attr = False
            if _is_attr_start(toks, i):
                e = _find_attr_end(toks, i)
                items = _attr_items(toks, i, e)
                is_attr = any(n == "kernel" for n, _ in items)
            if is_kw or is_attr:
                i = self.parse_kernel(i)
                continue
            i += 1

    def namespace_at(self, i: int) -> str:
        """The namespace (as `a::b::`) enclosing token i. pass_kernels asks in token order, so
        the walk resumes where the last one stopped (a walk from the start for each kernel
        was a quarter of the rewriting time of MLX's steel and quantized files); earlier
        tokens are not changed meanwhile in a way that moves a brace."""
        toks = self.toks
        k, stack = self._ns_walk if self._ns_walk[0] <= i else (0, [])
        stack = list(stack)
        while k < i:
            t = toks[k]
            if t.kind == "id" and t.text == "namespace":
                j = _sig(toks, k + 1)
                name = ""
                while j < i and toks[j].text != "{" and toks[j].text != ";" and toks[j].text != "=":
                    if toks[j].kind == "id" or toks[j].text == "::":
                        name += toks[j].text
                    j = _sig(toks, j + 1)
                if j >= i:  # (i in the namespace's own header: stop here, so a later walk reads it whole)
                    break
                if toks[j].text == "{":
                    stack.append(name)
                    k = j + 1
                    continue
            elif t.text == "{":
                stack.append(None)
            elif t.text == "}":
                if stack:
                    stack.pop()
            k += 1
        self._ns_walk = (k, stack)
        names = [s for s in stack if s]
        return "".join(n + "::" for n in names)

    # A kernel is declared in one of four forms (attributes may sit before the declaration,
    # between its specifiers, after its name and after its parameter list):
    #   [[kernel]] void f(params) {...}                       a kernel
    #   template <...> [[kernel]] void f(params) {...}         a kernel template
    #   template [[host_name("x")]] [[kernel]] decltype(f<A>) f<A>;   an instantiation
    #   template [[host_name("x")]] kernel f_t f<A>;  /  ... void f<A>(params);
    def parse_kernel(self, i: int) -> int:
        """Parse the kernel declaration whose `kernel` keyword or [[kernel]] attribute is at i."""
        start, template_params, explicit = self._kernel_head(i)
        if explicit:
            return self._kernel_instantiation(i, start)
        return self._kernel_definition(i, start, template_params)

    def _kernel_head(self, i: int) -> tuple[int, str | None, bool]:
        """(first token of the declaration, text of its template <...> list or None, whether
        it is an explicit instantiation), walking back from i over attributes."""
        toks = self.toks
        start = i
        b = _prev_sig(toks, i - 1)
        while b > 0:
            if toks[b].text == "]" and toks[_prev_sig(toks, b - 1)].text == "]":
                start = _match_back(toks, b)
            elif toks[b].text == ")" and toks[_prev_sig(toks, _match_back(toks, b) - 1)].text == "__attribute__":
                start = _prev_sig(toks, _match_back(toks, b) - 1)
            else:
                break
            b = _prev_sig(toks, start - 1)
        if b >= 0 and toks[b].text == "template":
            return b, None, True
        if b >= 0 and toks[b].text in (">", ">>"):
            lt = _match_back(toks, b)
            kt = _prev_sig(toks, lt - 1)
            if kt >= 0 and toks[kt].text == "template":
                return kt, _angle_text(toks, lt, b), False
        return start, None, False

    def _attributes(self, a: int, b: int) -> tuple[list[tuple[str, str]], int]:
        """The [[...]] and __attribute__((...)) items between tokens a and b (parenthesized
        groups that are not attributes, such as a parameter list, are skipped) and the index
        of the first `(` that is not part of an attribute (or b + 1)."""
        toks = self.toks
        items: list[tuple[str, str]] = []
        first_paren = -1
        k = a
        while k <= b:
            if _is_attr_start(toks, k):
                e = _find_attr_end(toks, k)
                items += _attr_items(toks, k, e)
                k = e + 1
            elif toks[k].text == "__attribute__":
                e = _match(toks, _sig(toks, k + 1))
                items += _attr_items_gnu(toks, k, e)
                k = e + 1
            elif toks[k].text == "(":
                if first_paren < 0:
                    first_paren = k
                k = _match(toks, k) + 1
            else:
                k += 1
        return items, (first_paren if first_paren >= 0 else b + 1)

    @staticmethod
    def _kernel_options(items: list[tuple[str, str]]) -> tuple[str | None, str | None]:
        """(max_total_threads_per_threadgroup expression, host_name) from attribute items."""
        mtt = host_name = None
        for n, a in items:
            if n == "max_total_threads_per_threadgroup":
                mtt = a
            elif n == "host_name":
                host_name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', a))
        return mtt, host_name

    def _statement_end(self, i: int, stops: tuple[str, ...]) -> int:
        """Index of the first token in `stops` at or after i, outside brackets."""
        toks = self.toks
        k = i
        while k < len(toks) and toks[k].text not in stops:
            k = _match(toks, k) + 1 if toks[k].text in ("(", "[") else k + 1
        if k >= len(toks):
            raise self.err(toks[i], "unterminated kernel declaration")
        return k

    def _overload(self, fname: str, targs: str, t: Tok) -> KernelDecl:
        """The kernel template an instantiation f<targs> names: among overloads of f, the one
        whose template parameter list takes that many arguments."""
        overloads = self.template_kernels.get(fname)
        if not overloads:
            raise self.err(t, f"instantiation of unknown template kernel '{fname}'")
        args = _top_level_split(targs)
        fits = [k for k in overloads if _accepts(k.template_params, args)]
        if not fits:  # an argument f<...> read as a type: it may be a function given to a value parameter
            fits = [k for k in overloads if _accepts(k.template_params, args, template_ids_as_values=True)]
        n = len(args)
        if len(fits) == 1 or (fits and all(f.params == fits[0].params for f in fits)):
            return fits[0]
        raise self.err(t, f"instantiation {fname}<{targs}>: {len(fits) or 'none'} of the {len(overloads)} kernel "
                          f"templates named '{fname}' take {n} template arguments")

    def _kernel_definition(self, i: int, start: int, template_params: str | None) -> int:
        toks = self.toks
        # the parameter list: the first parenthesized group that is not an attribute's
        _, lp = self._attributes(i, self._statement_end(i, ("{", ";")) - 1)
        rp = _match(toks, lp)
        body = self._statement_end(rp + 1, ("{", ";"))
        items = self._attributes(start, lp - 1)[0] + self._attributes(rp + 1, body - 1)[0]
        mtt, host_name = self._kernel_options(items)
        name_i = _prev_sig(toks, lp - 1)
        while toks[name_i].text == ")":  # __attribute__((...)) between the name and the parameters
            name_i = _prev_sig(toks, _prev_sig(toks, _match_back(toks, name_i) - 1) - 1)
        fname = toks[name_i].text
        params = self.parse_params(lp, rp, toks[name_i])
        kd = KernelDecl(name=host_name or fname, fn=fname, params=params, file=toks[name_i].file,
                        line=toks[name_i].line, mtt_expr=mtt, template_params=template_params,
                        is_template=template_params is not None,
                        ns=self.namespace_at(name_i) if "namespace" in self.ns_hint else "")
        if template_params is not None:
            self.template_kernels.setdefault(fname, []).append(kd)
        else:
            self.add_kernel(kd, toks[name_i])
        return rp + 1

    def _kernel_instantiation(self, i: int, start: int) -> int:
        toks = self.toks
        semi = self._statement_end(i, (";", "{"))
        if toks[semi].text != ";":
            raise self.err(toks[i], "an explicit kernel instantiation ends with ';'")
        mtt, host_name = self._kernel_options(self._attributes(start, semi - 1)[0])
        # the declarator: NAME<ARGS> before the ';' (or before a parameter list)
        e = _prev_sig(toks, semi - 1)
        rp = None
        if toks[e].text == ")":
            rp = e
            e = _prev_sig(toks, _match_back(toks, e) - 1)
        if toks[e].text in (">", ">>"):
            lt = _match_back(toks, e)
            fname = toks[_prev_sig(toks, lt - 1)].text
            targs = _angle_text(toks, lt, e)
        elif rp is not None and toks[e].kind == "id":
            # `template [[host_name("x")]] [[kernel]] void f(const device float* in, ...);`:
            # the template arguments are deduced from the parameter types (MLX's conv.metal)
            fname = toks[e].text
            targs = self._deduce_template_args(fname, _text(toks, _match_back(toks, rp) + 1, rp - 1), toks[e])
        else:
            raise self.err(toks[e], "expected the kernel template's arguments (f<...>) in a kernel instantiation")
        base = self._overload(fname, targs, toks[i])
        name = host_name or f"{fname}<{targs}>"
        self.all_names.append(name)
        self.instantiation_tokens.append((name, start, semi))
        if self.only is not None and name not in self.only:
            # instantiate only the kernels that were asked for: MLX files instantiate hundreds
            _blank(toks, start, semi, " ")
            return semi + 1
        kd = KernelDecl(name=name, fn=fname, params=base.params, file=toks[i].file, line=toks[i].line,
                        mtt_expr=mtt or base.mtt_expr, template_params=base.template_params,
                        template_args=targs, is_template=True, ns=base.ns, mtt_in_template=mtt is None)
        self.add_kernel(kd, toks[i])
        return semi + 1

    def _deduce_template_args(self, fname: str, params_text: str, t: Tok) -> str:
        """The template arguments of an instantiation that names none, from its parameter types
        matched against those of the kernel template (`const device T* in` against `const device
        float* in` gives T = float), as C++ deduces them; the arguments after the last deduced
        one are left to their defaults."""
        overloads = self.template_kernels.get(fname)
        if not overloads:
            raise self.err(t, f"instantiation of unknown template kernel '{fname}'")
        given = [type_words(param_type(p)) for p in _top_level_split(params_text) if p.strip()]
        found = []
        for k in overloads:
            if len(k.params) != len(given):
                continue
            tparams = _top_level_split(k.template_params or "")
            names = [template_param_name(p) for p in tparams]
            binding: dict[str, list[str]] = {}
            if all(unify(type_words(p.type), g, set(names), binding) for p, g in zip(k.params, given)):
                found.append((k, tparams, names, binding))
        if len(found) != 1:
            raise self.err(t, f"instantiation of kernel template '{fname}' without template arguments: "
                              f"{'no' if not found else len(found)} template(s) of that name match its parameter "
                              f"types; write {fname}<...>")
        k, tparams, names, binding = found[0]
        args = []
        last = max((n for n, nm in enumerate(names) if nm in binding), default=-1)
        for n in range(last + 1):
            if names[n] not in binding:
                raise self.err(t, f"instantiation of kernel template '{fname}': its template parameter "
                                  f"'{tparams[n].strip()}' is not deduced from the parameter types; write {fname}<...>")
            args.append(" ".join(binding[names[n]]))
        if any("=" not in p and "..." not in p for p in tparams[last + 1:]):
            raise self.err(t, f"instantiation of kernel template '{fname}': template parameters "
                              f"{', '.join(p.strip() for p in tparams[last + 1:])} are not deduced from the "
                              f"parameter types; write {fname}<...>")
        return ", ".join(args)

    def add_kernel(self, kd: KernelDecl, t: Tok) -> None:
        if not kd.is_template:
            self.all_names.append(kd.name)
        kd.id = f"k{len(self.kernel_list)}"
        self.kernel_list.append(kd)
        self.out.kernels[kd.name] = kd
        # Apple's rule: position/size attributes all scalars or all vectors of one length
        arities = {}
        for p in kd.params:
            if p.attr in VECTOR_ATTRS:
                arities[p.name] = (_arity(p.type), p)
        if len({a for a, _ in arities.values()}) > 1:
            desc = ", ".join(f"'{p.type} {n} [[{p.attr}]]'" for n, (a, p) in arities.items())
            first = next(iter(arities.values()))[1]
            raise CompileError(
                f"{first.file}:{first.line}: error: kernel '{kd.fn}' mixes scalar and vector (or different-length) "
                f"thread-position attributes ({desc}); Metal requires all of them to be scalars or all vectors "
                f"of the same length")

    def parse_params(self, lp: int, rp: int, name_tok: Tok) -> list[Param]:
        params: list[Param] = []
        used_buffers = set()
        pending = []
        for p in parse_parameters(self.toks, lp, rp):
            where = Tok("id", p.name, p.line, p.file)
            kind, index, attr, gate = P_NONE, -1, "", None
            for n, arg in p.attributes:
                if n == "buffer":
                    kind, index, attr = P_BUFFER, _int_arg(arg, where, self), "buffer"
                elif n == "threadgroup":
                    kind, index, attr = P_TGMEM, _int_arg(arg, where, self), "threadgroup"
                elif n in ATTR_KINDS:
                    kind, attr = ATTR_KINDS[n], n
                elif n == "function_constant":
                    gate = arg
                elif n in ("texture", "sampler"):
                    raise self.err(where, f"textures and samplers are not supported by the emulator (parameter '{p.name}')")
            if kind == P_NONE:
                words = set(re.findall(r"[A-Za-z_]\w*", p.type))
                if words & {"device", "constant"}:
                    pending.append(len(params))
                    kind, attr = P_BUFFER, "buffer"
                else:
                    raise self.err(where, f"kernel parameter '{p.name}' has no [[buffer(n)]] or thread attribute")
            if kind == P_BUFFER:
                used_buffers.add(index)
            params.append(Param(p.name, p.type, kind, index, attr, gate, p.line, p.file))
        nxt = 0
        for pi in pending:
            while nxt in used_buffers:
                nxt += 1
            params[pi].index = nxt
            used_buffers.add(nxt)
        return params

    # ------------------------------------------------------------------ address spaces
    def pass_address_spaces(self) -> None:
        toks = self.toks
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            if _is_attr_start(toks, i):
                i = _find_attr_end(toks, i) + 1
                continue
            if t.kind == "pp" and re.match(r"#\s*define\b", t.text):
                i += 1
                continue
            if t.kind == "id" and t.text in ADDRESS_SPACES:
                pv = _prev_sig(toks, i - 1)
                nx = _sig(toks, i + 1)
                if pv >= 0 and toks[pv].text in (".", "->", "::"):
                    i += 1
                    continue
                if pv >= 0 and (toks[pv].text == ")" or (toks[pv].text == "const" and toks[_prev_sig(toks, pv - 1)].text == ")")):
                    # a member function qualified by address space: `f() thread`, `f() const device`.
                    # Every object of the emulator lives in thread memory, so the qualifier goes;
                    # definitions that become identical are dropped by pass_dedupe (MLX defines
                    # `operator bool() const threadgroup/device/constant` alike), a declaration
                    # without a body for another space is dropped here.
                    if t.text == "thread" or self._member_has_body(i):
                        _blank(toks, i, i, " ")
                        i += 1
                    else:
                        i = self.drop_member(i)
                    continue
                if nx < n and toks[nx].text in ("(", "=", ";", ")", ",", "[", "."):
                    i += 1
                    continue
                i = self.rewrite_as(i)
                continue
            i += 1

    def _member_has_body(self, i: int) -> bool:
        """Whether the member function whose qualifier is at i is defined here (a `{` comes
        before the `;`, past any mem-initializers)."""
        toks = self.toks
        k = i + 1
        while k < len(toks):
            x = toks[k].text
            if x in ("(", "["):
                k = _match(toks, k) + 1
                continue
            if x == ";":
                return False
            if x == "{":
                return True
            k += 1
        return False

    def drop_member(self, i: int) -> int:
        """Remove a member function qualified for device/threadgroup/constant objects: the
        emulator's objects all live in thread memory, and keeping both overloads would make
        them collide once the qualifier is gone."""
        toks = self.toks
        # start: after the previous ; { } or access label at this nesting level
        s = i
        depth = 0
        while s > 0:
            x = toks[s - 1].text
            if x in (")", "]"):
                depth += 1
            elif x in ("(", "["):
                depth -= 1
            elif depth == 0 and x in (";", "{", "}"):
                break
            elif depth == 0 and x == ":" and toks[_prev_sig(toks, s - 2)].text in ("public", "private", "protected"):
                break
            s -= 1
        # end: the body's closing brace, or the ;
        e = i + 1
        while e < len(toks):
            x = toks[e].text
            if x in ("(", "["):
                e = _match(toks, e) + 1
                continue
            if x == ";":
                break
            if x == "{":
                pv = _prev_sig(toks, e - 1)
                if toks[pv].kind == "id" and toks[pv].text not in ("const", "thread", "device", "threadgroup",
                                                                   "constant", "noexcept") :
                    e = _match(toks, e) + 1  # brace initializer in a mem-init list
                    continue
                e = _match(toks, e)
                break
            e += 1
        _blank(toks, s, e, " ")
        return e + 1

    def rewrite_as(self, i: int) -> int:
        toks = self.toks
        asname = toks[i].text
        asid = ADDRESS_SPACES[asname]
        start = i
        const = False
        pv = _prev_sig(toks, i - 1)
        while pv >= 0 and toks[pv].text in ("const", "volatile"):  # `volatile coherent(system) device uint*`
            const = const or toks[pv].text == "const"
            start = pv
            pv = _prev_sig(toks, pv - 1)
        j = _sig(toks, i + 1)
        # storage/declaration keywords right after the address space: just drop it
        if toks[j].text in ("constexpr", "static", "inline"):
            _blank(toks, i, i, "")
            return i + 1
        while toks[j].text in ("const", "volatile"):
            if toks[j].text == "const":
                const = True
            j = _sig(toks, j + 1)
        tstart = j
        # type name
        if toks[j].text in ("typename", "struct", "enum", "class"):
            j = _sig(toks, j + 1)
        if toks[j].text in BUILTIN_TYPE_WORDS:
            while toks[j].text in BUILTIN_TYPE_WORDS:
                last = j
                j = _sig(toks, j + 1)
            tend = last
        else:
            if toks[j].text == "::":
                j = _sig(toks, j + 1)
            while True:
                if toks[j].kind != "id":
                    return i + 1  # not a type: leave alone
                last = j
                j = _sig(toks, j + 1)
                if toks[j].text == "<":
                    last = _match(toks, j)
                    j = _sig(toks, last + 1)
                if toks[j].text == "::":
                    j = _sig(toks, j + 1)
                    if toks[j].text == "template":
                        j = _sig(toks, j + 1)
                    continue
                break
            tend = last
        typ = _text(toks, tstart, tend)
        while toks[j].text in ("const", "volatile"):
            if toks[j].text == "const":
                const = True
            j = _sig(toks, j + 1)
        nxt = toks[j].text
        cq = "const " if (const or asid == 2) else ""
        if nxt in (",", ">", ">>"):
            # a template argument (`pair<threadgroup float, int>`): types carry no address space here
            _blank(toks, start, j - 1, f"{cq}{typ} ")
            return j
        if typ == "auto" and nxt in ("*", "&"):
            _blank(toks, start, j, "auto " if nxt == "*" else ("const auto& " if (const or asid == 2) else "auto& "))
            return j + 1
        if nxt == "*":
            if asid == 0:
                _blank(toks, start, j - 1, f"{'const ' if const else ''}{typ}")
                return j
            _blank(toks, start, j, f"::mslemu::ptr<{asid}, {cq}{typ}>")
            return j + 1
        if nxt in ("&", "&&"):
            _blank(toks, start, j - 1, f"{cq}{typ} ")
            return j + 1
        # a parameter of array type (`constant const int64_t strides[2]`, MLX's utils.h) is a
        # pointer in C++ as in Metal: one into that address space
        before = _prev_sig(toks, start - 1)
        if asid != 0 and toks[j].kind == "id" and before >= 0 and toks[before].text in ("(", ","):
            lb = _sig(toks, j + 1)
            if lb < len(toks) and toks[lb].text == "[" and not _is_attr_start(toks, lb):
                after = _sig(toks, _match(toks, lb) + 1)
                if after < len(toks) and (toks[after].text in (",", ")") or _is_attr_start(toks, after)):
                    _blank(toks, start, j - 1, f"::mslemu::ptr<{asid}, {cq}{typ}> ")
                    _blank(toks, lb, _match(toks, lb), " ")
                    return after
        # a variable declaration
        if asid == 3:
            return self.rewrite_tg_decl(start, typ, j)
        if asid == 2:
            _blank(toks, start, j - 1, f"const {typ} ")
            return j
        _blank(toks, start, j - 1, f"{'const ' if const else ''}{typ} ")
        return j

    def rewrite_tg_decl(self, start: int, typ: str, j: int) -> int:
        toks = self.toks
        semi = j
        depth = 0
        while semi < len(toks):
            x = toks[semi].text
            if x in ("(", "[", "{"):
                depth += 1
            elif x in (")", "]", "}"):
                if depth == 0:
                    break
                depth -= 1
            elif x == ";" and depth == 0:
                break
            semi += 1
        if toks[semi].text != ";":
            # e.g. a parameter `threadgroup T x` (by value) -- just drop the qualifier
            _blank(toks, start, j - 1, typ + " ")
            return j
        decls = []
        k = j
        cur: list[Tok] = []
        depth = 0
        while k < semi:
            x = toks[k]
            if x.text in ("[", "(", "{"):
                depth += 1
            elif x.text in ("]", ")", "}"):
                depth -= 1
            if x.text == "," and depth == 0:
                decls.append(cur)
                cur = []
            elif x.kind not in ("ws", "nl", "comment"):
                cur.append(x)
            k += 1
        decls.append(cur)
        out, initialized = [], []
        for d in decls:
            name = d[0].text
            dims = []
            m = 1
            while m < len(d):
                if d[m].text == "[":
                    depth = 0
                    e = m
                    while e < len(d):
                        if d[e].text == "[":
                            depth += 1
                        elif d[e].text == "]":
                            depth -= 1
                            if depth == 0:
                                break
                        e += 1
                    dims.append("(" + " ".join(x.text for x in d[m + 1:e]) + ")")
                    m = e + 1
                elif d[m].text == "=":
                    init = d[m + 1:]
                    text = " ".join(x.text for x in init)
                    if not init or not all(x.text in ("{", "}", ",", "false") or _ZERO_LITERAL.fullmatch(x.text)
                                           for x in init):
                        raise self.err(d[m], f"threadgroup variable '{name}' has an initializer ({text}) that is not "
                                             "zero: a GPU gives threadgroup memory no defined contents, and the "
                                             "emulator does not guess whether or when it applies one; write the "
                                             "values, then a threadgroup_barrier")
                    initialized.append((name, text, d[m]))  # MLX's layer_norm: `threadgroup float b[32] = {0};`
                    break
                else:
                    raise self.err(d[m], f"threadgroup variable '{name}': unexpected '{d[m].text}' in its declaration")
            slot = f"__mslemu_tgslot_{name}_{toks[start].line}"
            if dims:
                out.append(f"static ::mslemu::TgSlot {slot}; auto {name} = ::mslemu::tg_array<{typ}, "
                           f"{', '.join(dims)}>::get({slot}, \"{name}\");")
            else:
                out.append(f"static ::mslemu::TgSlot {slot}; auto {name} = ::mslemu::tg_var<{typ}>::get({slot}, \"{name}\");")
        if initialized:
            at = initialized[0][2]
            what = ", ".join(f"'{nm}' ({tx})" for nm, tx, _ in initialized)
            msg = (f"threadgroup {'variable' if len(initialized) == 1 else 'variables'} {what} at {at.file}:{at.line} "
                   f"{'has an initializer' if len(initialized) == 1 else 'have initializers'}; the emulator does not "
                   f"apply {'it' if len(initialized) == 1 else 'them'} (here threadgroup memory starts filled with 0xFF bytes, NaN as a float), but a GPU gives threadgroup "
                   "memory no defined contents: write the values, then a threadgroup_barrier")
            out.append(f'::mslemu::portability("{_esc(at.file)}", {at.line}, "%s", "{_esc(msg)}");')
        _blank(self.toks, start, semi, " ".join(out))
        return semi + 1

    def pass_dedupe(self) -> None:
        """Drop function definitions that became identical once address spaces were erased
        (MLX overloads free functions on `thread T&` / `device T&` / `threadgroup T&`)."""
        toks = self.toks
        stack: list[tuple[int, bool]] = []  # (index of '{', is a function body)
        seen: set = set()
        last_stmt = -1  # index of the last ; { } at the current level
        i = 0
        n = len(toks)
        paren = 0
        while i < n:
            x = toks[i].text
            if toks[i].kind not in ("punct",):
                i += 1
                continue
            if x in ("(", "["):
                paren += 1
            elif x in (")", "]"):
                paren -= 1
            if paren > 0:
                i += 1
                continue
            if x == "{":
                in_func = any(f for _, f in stack)
                is_func = False
                if not in_func:
                    pv = _prev_sig(toks, i - 1)
                    q = pv
                    while q >= 0 and toks[q].text in ("const", "noexcept", "override", "final"):
                        q = _prev_sig(toks, q - 1)
                    if q >= 0 and toks[q].text == ")":
                        # find the matching ( and the token before it
                        m = _match_back(toks, q)
                        before = toks[_prev_sig(toks, m - 1)].text if m > 0 else ""
                        if before not in ("if", "for", "while", "switch", "catch", "]", "return", "=", ","):
                            is_func = True
                    if is_func:
                        end = _match(toks, i)
                        key = (stack[-1][0] if stack else -1,
                               "".join(t.text for t in toks[last_stmt + 1:i] if t.kind not in ("ws", "nl", "comment")))
                        if key in seen:
                            _blank(toks, last_stmt + 1, end, " ")
                            i = end + 1
                            last_stmt = end
                            continue
                        seen.add(key)
                stack.append((i, is_func))
                last_stmt = i
            elif x == "}":
                if stack:
                    stack.pop()
                last_stmt = i
            elif x == ";":
                last_stmt = i
            i += 1

    # ------------------------------------------------------------------ cleanup
    def pass_cleanup(self) -> None:
        toks = self.toks
        i = 0
        n = len(toks)
        while i < n:
            t = toks[i]
            if _is_attr_start(toks, i):
                e = _find_attr_end(toks, i)
                items = _attr_items(toks, i, e)
                if not items or any(nm not in STD_ATTRS for nm, _ in items):
                    _blank(toks, i, e, " ")
                i = e + 1
                continue
            if t.kind == "id":
                if t.text == "kernel" and toks[_prev_sig(toks, i - 1)].text not in (".", "->", "::"):
                    t.text = ""
                elif t.text == "__attribute__":
                    p = _sig(toks, i + 1)
                    if p < n and toks[p].text == "(":
                        e = _match(toks, p)
                        names = [nm for nm, _ in _attr_items_gnu(toks, i, e)]
                        if "max_total_threads_per_threadgroup" in names:
                            _blank(toks, i, e, " ")
                        i = e + 1
                        continue
                elif t.text == "reinterpret_cast":
                    t.text = "::mslemu::reinterpret_cast_"
            elif t.kind == "num":
                m = re.fullmatch(r"((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)[hH]", t.text)
                if m:
                    num = m.group(1)
                    if not re.search(r"[.eE]", num):
                        num += ".0"
                    t.text = f"((half){num}f)"
                elif re.fullmatch(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[bB][fF]", t.text):
                    t.text = f"((float){t.text[:-2]})"
            i += 1

    # ------------------------------------------------------------------ entries
    def _locate_instantiations(self, at: int) -> None:
        """The characters of each instantiation in the output, which starts at `at`."""
        ends = {}
        for name, a, b in self.instantiation_tokens:
            ends.setdefault(a, []).append((name, "start"))
            ends.setdefault(b + 1, []).append((name, "end"))
        spans: dict[str, list[int]] = {}
        pos = at
        for k, t in enumerate(self.toks):
            for name, kind in ends.get(k, ()):
                spans.setdefault(name, [0, 0])[0 if kind == "start" else 1] = pos
            pos += len(t.text)
        for name, kind in ends.get(len(self.toks), ()):
            spans.setdefault(name, [0, 0])[1] = pos
        self.instantiation_chars = [(name, *spans[name]) for name, _, _ in self.instantiation_tokens]

    def selected(self, only: set[str]) -> Rewritten:
        """This rewriting of the whole source (`only` None) as the rewriting with `only` would
        be: the other instantiations blanked (their newlines kept), entry points for the
        kernels that remain, numbered as that rewriting numbers them."""
        parts, last = [], 0
        for name, a, b in self.instantiation_chars:
            if name in only:
                continue
            parts += [self.body[last:a], " " + "\n" * self.body.count("\n", a, b)]
            last = b
        parts.append(self.body[last:])
        kept = [dataclasses.replace(kd, id=f"k{n}") for n, kd in enumerate(
            kd for kd in self.kernel_list if not kd.is_template or kd.name in only)]
        text = "".join(parts) + self.entries(kept)
        return Rewritten(text, {kd.name: kd for kd in kept}, dict(self.out.function_constants), self.all_names)

    def entries(self, kernel_list: list[KernelDecl] | None = None) -> str:
        out = ["\n"]
        for name, overloads in self.template_kernels.items():
            for tk in overloads:  # overloaded function templates, one per kernel template
                if tk.mtt_expr:
                    out.append(f'#line {tk.line} "{_esc(tk.file)}"\n')
                    out.append(f"template <{tk.template_params}> constexpr int __mslemu_mttf_{name}() "
                               f"{{ return (int)({tk.mtt_expr}); }}\n")
        for kd in self.kernel_list if kernel_list is None else kernel_list:
            fn = "::" + kd.ns + kd.fn + (f"<{kd.template_args}>" if kd.template_args is not None else "")
            out.append(f'#line {kd.line} "{_esc(kd.file)}"\n')
            descs = []
            for p in kd.params:
                gate = f"(bool)({p.gate})" if p.gate else "true"
                descs.append(f'{{{p.kind}, {p.index}, "{p.name}", {gate}}}')
            descs.append('{0, 0, "", false}')
            if kd.mtt_expr:
                mtt = (f"::__mslemu_mttf_{kd.fn}<{kd.template_args}>()" if kd.is_template and kd.mtt_in_template
                       else f"(int)({kd.mtt_expr})")
            else:
                mtt = "0"
            vis = '__attribute__((visibility("default")))'
            out.append(
                f"static const ::mslemu::ParamDesc __mslemu_pd_{kd.id}[] = {{{', '.join(descs)}}}; "
                f'extern "C" {vis} void __mslemu_entry_{kd.id}() {{ ::mslemu::invoke(&{fn}, __mslemu_pd_{kd.id}); }} '
                f'extern "C" {vis} int __mslemu_info_{kd.id}(::mslemu::ParamInfo* o) '
                f"{{ return ::mslemu::info(&{fn}, __mslemu_pd_{kd.id}, o); }} "
                f'extern "C" {vis} int __mslemu_mtt_{kd.id}() {{ return {mtt}; }}\n')
        return "".join(out)


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _int_arg(arg: str, t: Tok, rw: Rewriter) -> int:
    """A [[buffer(i)]] / [[threadgroup(i)]] index: integer arithmetic after macro expansion."""
    try:
        return evaluate(arg)
    except ExpressionError:
        raise rw.err(t, f"cannot evaluate buffer index '{arg}'") from None


def _arity(typ: str) -> int:
    m = re.search(r"(\d)\s*$", typ)
    if m and re.search(r"(uint|ushort|int|short)\d\s*$", typ):
        return int(m.group(1))
    m = re.search(r"vec\s*<[^,]+,\s*(\d)\s*>", typ)
    if m:
        return int(m.group(1))
    return 1


# A placeholder of the rewriter's output: an identifier no source can hold (it is made of the
# rewriter's own prefix and a number), replaced by the value or the definedness of the
# function constant of that number.
_FC = "__mslemu_fc_{}_{}__"
_FC_RE = re.compile(r"__mslemu_fc_(value|defined)_(\d+)__")


def _fc_value(values: dict, name: str, idx: int, typ: str, where: str) -> tuple[bool, str]:
    """(defined, C++ value) of the function constant `name` (index `idx`) of type `typ`."""
    defined, v = _fc_given(values, name, idx, typ, where)
    return defined, (_c_value(v, typ) if defined else f"{typ}{{}}")


def _with_values(template: Rewritten, specs: list[tuple[str, int, str]], values: dict, where: str) -> Rewritten:
    """The rewritten source `template`, its placeholders filled in from `values`."""
    filled = [_fc_value(values, name, idx, typ, where) for name, idx, typ in specs]

    def fill(m: re.Match) -> str:
        defined, value = filled[int(m.group(2))]
        return value if m.group(1) == "value" else ("true" if defined else "false")
    return Rewritten(_FC_RE.sub(fill, template.text), template.kernels,
                     {name: (idx, filled[n][0]) for n, (name, idx, _) in enumerate(specs)},
                     template.all_names)


_memo: "OrderedDict[tuple, Rewriter | CompileError]" = OrderedDict()
MEMO_SIZE = 8
_memo_lock = threading.Lock()  # (a build may compile kernels from several threads)


def rewrite(text: str, default_file: str, function_constants: dict | None = None,
            only: Collection[str] | None = None, *, at_load: bool = False, soft_half: bool = False) -> Rewritten:
    """Rewrite preprocessed Metal source; `only` names the kernel instantiations to keep.

    at_load: the function constants' values are not compiled in but read when the object is
    loaded (`function_constants` is then ignored; :func:`fc_lines` writes the values of one
    specialization), as Metal compiles a library once for every set of values.

    The rewriting of a source is kept (the last MEMO_SIZE) and reused for other values of
    its function constants: a test compiles one MLX kernel for several of them.

    soft_half: the host compiler has no 16-bit float, and half is the shim's class
    (conditionals.py casts the arms of conditional expressions to Metal's type)."""
    selected = None if only is None else frozenset({only} if isinstance(only, str) else only)
    full = _rewritten(text, default_file, None, soft_half)
    if selected is None or full is not None:
        rewriter = full if full is not None else _rewritten(text, default_file, None, soft_half, must=True)
        template = rewriter.out if selected is None else rewriter.selected(set(selected))
    else:  # the whole source does not rewrite (an error in another kernel): this kernel alone
        rewriter = _rewritten(text, default_file, selected, soft_half, must=True)
        template = rewriter.out
    specs = rewriter.fc_specs
    if at_load:
        return _read_at_load(template, specs)
    return _with_values(template, specs, dict(function_constants or {}), default_file)


def _rewritten(text: str, default_file: str, only: frozenset | None, soft_half: bool, must: bool = False):
    """The Rewriter that ran over `text` (kept, the last MEMO_SIZE), or None if it failed
    with a CompileError (raised with `must`). The whole source (`only` None) is rewritten
    once per process, and each instantiation file's kernels are selected from it
    (Rewriter.selected: MLX's files are compiled one kernel at a time, and rewriting the
    whole file for each kernel was a third of their compile time)."""
    key = (text, default_file, only, soft_half)
    with _memo_lock:
        kept = _memo.get(key)
        if kept is not None:
            _memo.move_to_end(key)
    if kept is None:
        reserved = _FC_RE.search(text)
        try:
            if reserved:  # it would be taken for a placeholder
                raise CompileError(f"{default_file}: the identifier {reserved.group(0)} is reserved by the emulator")
            try:
                r = Rewriter(text, default_file, None, only, soft_half)
                r.run()
            except SourceError as exc:  # e.g. an unbalanced bracket, found by the shared token walkers
                raise CompileError(str(exc)) from None
            r.toks = []  # (what selected() needs is kept; the tokens are most of the memory)
            kept = r
        except CompileError as exc:
            kept = exc
        with _memo_lock:
            _memo[key] = kept
            while len(_memo) > MEMO_SIZE:
                _memo.popitem(last=False)
    if isinstance(kept, CompileError):
        if must:
            raise kept
        return None
    return kept


# A function constant's declaration as the passes leave it, its value a placeholder.
_FC_DECL_RE = re.compile(r"static constexpr ([^;=]*?) ([A-Za-z_]\w*) = __mslemu_fc_value_(\d+)__;")


def _read_at_load(template: Rewritten, specs: list[tuple[str, int, str]]) -> Rewritten:
    """The rewritten source `template`, each function constant read when the object is
    loaded: a namespace-scope constant initialized by mslemu::fc_value, so that everything
    initialized from it (other namespace-scope constants, the parameters it switches on)
    is initialized after it, with its value."""
    def declare(m: re.Match) -> str:
        typ = re.sub(r"^\s*const\s+|\s+const\s*$", "", m.group(1))
        return f"static const {typ} {m.group(2)} = ::mslemu::fc_value<{typ}>({m.group(3)});"

    text = _FC_DECL_RE.sub(declare, template.text)
    text = _FC_RE.sub(lambda m: f"::mslemu::fc_defined({m.group(2)})" if m.group(1) == "defined"
                      else m.group(0), text)
    left = _FC_RE.search(text)
    if left:  # every value placeholder is in a declaration the passes wrote
        raise CompileError(f"internal error: function constant placeholder {left.group(0)} outside its declaration")
    return Rewritten(text, template.kernels, {name: (idx, None) for name, idx, _ in specs}, template.all_names,
                     list(specs))


def fc_lines(specs: list[tuple[str, int, str]], values: dict, where: str) -> list[str]:
    """The values of `values` (by name or index, as load_kernel takes them) for the function
    constants `specs` of an object compiled with ``rewrite(..., at_load=True)``: the lines of
    its ``.fc`` file (runtime.cpp reads them), "N kind value" for each defined constant, the
    kind that of the C++ literal the value would be written as where it is compiled in
    (_c_value): b(ool), i(nt), l(ong), u(nsigned long) or f (double)."""
    lines = []
    for n, (name, idx, typ) in enumerate(specs):
        defined, v = _fc_given(values, name, idx, typ, where)
        if not defined:
            continue
        if isinstance(v, bool):
            lines.append(f"{n} b {int(v)}")
        elif isinstance(v, float):
            lines.append(f"{n} f {v!r}")  # (repr: the exact double; strtod reads inf and nan too)
        elif -2**31 < v < 2**31:
            lines.append(f"{n} i {v}")
        elif v < 2**63:
            lines.append(f"{n} l {v}")
        else:
            lines.append(f"{n} u {v}")
    return lines
