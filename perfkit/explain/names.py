"""A GPU kernel's name reduced to what stays the same when the kernel is compiled again, so that the two sides
of a comparison match kernel by kernel.

Why: a profiler reports a kernel's full signature, and much of it changes between two builds of the same work
without the work changing: the return type and argument types of a C++ kernel, its template arguments, the
tile shape cuBLAS picked for this size today, the unique number numba gives each compiled function, the
index Triton gives each generated kernel. Left in, a recompiled kernel reads as one kernel gone and another
new. What is kept is the family and its precision and layout: ``sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n``
never matches ``sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n``. Namespaces go too (``at::native::`` is on every
PyTorch kernel), except where the name is a generic wrapper (``cutlass::Kernel2<...>``) whose template
argument is the kernel's real name, and PyTorch's generic launchers keep the operation they run
(``vectorized_elementwise_kernel[add]``), so that an added ``add`` is not read as the ``relu`` beside it
getting slower.

Mangled names (numba's ``_ZN6cudapy8__main__10vector_add...``, the rare kernel Kineto leaves undemangled) are
read by a small Itanium demangler of the common prefix (a nested or plain name), as the ``cxxfilt`` package is
not a dependency. A name that cannot be read is kept whole: matching raw names is still right, only stricter.
"""
from __future__ import annotations

import re

#: Generic kernels whose first template argument names the real kernel (CUTLASS's and cuBLAS's wrappers).
WRAPPERS = frozenset({"Kernel", "Kernel2", "device_kernel"})
#: PyTorch's generic launchers: every elementwise operator, reduction and fused optimizer step runs one of
#: them, so the launcher alone would merge an added ``add`` with the ``relu`` beside it; the operation is the
#: functor or the operator's launch function inside its template arguments (:data:`_OPERATION`).
LAUNCHERS = frozenset({"vectorized_elementwise_kernel", "elementwise_kernel", "unrolled_elementwise_kernel",
                       "reduce_kernel", "multi_tensor_apply_kernel", "index_elementwise_kernel"})
#: The operation in a launcher's template arguments, first match wins: ``CUDAFunctor_add``, ``sum_functor``,
#: ``AbsFunctor``, ``launch_clamp_scalar``, ``direct_copy_kernel_cuda``.
_OPERATION = re.compile(r"CUDAFunctor_(\w+)|(\w+?)_functor\b|(\w+?)Functor\b|launch_(\w+?)\("
                        r"|(\w+?)_kernel_cuda\b")
#: Functors that only hold another, the operation (``AUnaryFunctor<..., binary_internal::MulFunctor<float>>``:
#: a tensor times a scalar is a ``Mul``).
_HOLDERS = frozenset({"AUnary", "BUnary", "Binary"})

_ANONYMOUS = re.compile(r"\((anonymous|anon) namespace\)")
_BRACKETS = re.compile(r"\[[^\]]*\]")  # ABI tags: "[abi:cxx11]", numba's "[abi:v1,cw51...]"
_NUMBA_SUFFIX = re.compile(r"\$\d+$")  # numba's unique number of a compiled function: "vector_add$241"
#: A tile or launch shape: "128x64", "1x2x1", or one named, "tilesize128x128x32", "sliced1x4". The names are
#: listed, not any letters, so that a vector type ("bf16x2") is not taken for a shape.
_SHAPE = re.compile(r"(tilesize|warpgroupsize|warpsize|tensor|cluster|tile|sliced)?\d+(x\d+)+")
#: Where an xmma kernel's configuration begins ("..._tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_...").
_CONFIG_TAIL = re.compile(r"(tilesize|warpgroupsize)\d+(x\d+)+")
#: Configuration that is no part of a kernel's family: pipeline stages, alignment, a split factor ("5x").
_SETTING = re.compile(r"(stage|align)\d+|\d+x")
#: Itanium source names: "<length><identifier>", with ABI tags "B<length><tag>" after them.
_SOURCE_NAME = re.compile(r"(\d+)")
_ABI_TAG = re.compile(r"B(\d+)")


def normalise(kernel_name: str) -> str:
    """``kernel_name`` reduced to its family (see the module's docstring); the name itself where nothing of it
    can be read."""
    raw = kernel_name.strip()
    text = _demangled(raw) if raw.startswith("_Z") else raw
    if text is None:
        return raw
    family = _tidy(_symbol(text)) or raw
    if family not in LAUNCHERS:
        return family
    operations = (next(g for g in found.groups() if g) for found in _OPERATION.finditer(text))
    operation = next((o for o in operations if o not in _HOLDERS), None)
    return f"{family}[{operation}]" if operation else family


def _demangled(mangled: str) -> str | None:
    """The qualified name of an Itanium-mangled function (``_ZN6cudapy8__main__10vector_addB2v1...E...`` as
    ``cudapy::__main__::vector_add``, ``_Z10add_kernelPfS_i`` as ``add_kernel``), without its arguments; None
    where it is not of that common form."""
    nested = mangled.startswith("_ZN")
    at = 3 if nested else 2
    parts: list[str] = []
    while at < len(mangled):
        if not (found := _SOURCE_NAME.match(mangled, at)):
            break
        at = found.end() + int(found[1])
        if at > len(mangled):  # cut short: not a name this reads
            return None
        parts.append(mangled[found.end():at])
        at = _past_abi_tags(mangled, at)
        if not nested:
            break
    return "::".join(parts) if parts and all(parts) else None


def _past_abi_tags(mangled: str, at: int) -> int:
    """The position after the ABI tags (``B2v1``) that may follow a source name at ``at``."""
    while found := _ABI_TAG.match(mangled, at):
        at = found.end() + int(found[1])
    return at


def _symbol(text: str) -> str:
    """The function's own name in a demangled signature: no return type, arguments, template arguments, ABI
    tags or namespaces; a wrapper's first template argument in its place."""
    text = _BRACKETS.sub("", _ANONYMOUS.sub("anonymous", text))
    bare, first_argument = _without_templates(text)
    if "(" in bare:
        bare = bare[:bare.index("(")]
    words = bare.split()
    name = words[-1].rsplit("::", 1)[-1] if words else ""
    if name in WRAPPERS and first_argument:
        return _symbol(first_argument)
    return _NUMBA_SUFFIX.sub("", name)


def _without_templates(text: str) -> tuple[str, str]:
    """``text`` without its template arguments (nested ``<...>``), and the first argument of its first
    template (``cutlass::Kernel2<X>``: X)."""
    kept: list[str] = []
    inside: list[str] = []
    depth = templates = 0
    for char in text:
        if char == "<":
            depth += 1
            if depth == 1:
                continue
        elif char == ">" and depth:
            depth -= 1
            if depth == 0:
                templates += 1
                continue
        if depth == 0:
            kept.append(char)
        elif templates == 0:
            inside.append(char)
    return "".join(kept), _first_argument("".join(inside))


def _first_argument(arguments: str) -> str:
    """The first of comma-separated template arguments, perhaps a template (``A<b, c>, d``: A<b, c>)."""
    depth = 0
    for at, char in enumerate(arguments):
        depth += (char in "<(") - (char in ">)")
        if char == "," and depth == 0:
            return arguments[:at].strip()
    return arguments.strip()


def _tidy(name: str) -> str:
    """``name`` without tile shapes, launch shapes and configuration: its family, precision and layout."""
    kept: list[str] = []
    for word in name.split("_"):
        if _CONFIG_TAIL.fullmatch(word):
            break
        if not (_SHAPE.fullmatch(word) or _SETTING.fullmatch(word)):
            kept.append(word)
    if len(kept) > 1 and kept[-1].isdigit():  # Triton's index of a generated kernel: "triton_poi_fused_add_0"
        kept.pop()
    return "_".join(kept).strip("_")
