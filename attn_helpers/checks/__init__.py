"""Exercise checkers: ``check_*`` functions that grade a learner's answer with a hint.

Each notebook's checkers live in their own module (``nb00``, ``nb01``, ...); this
package collects every ``check_*`` function they export, so a notebook can write
``from attn_helpers.checks import check_softmax, solution``.

Checkers never raise: whatever they are given (``None``, a list, the wrong shape,
a function that crashes) they answer with a :class:`Verdict`.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from ._grader import Case, Verdict, Wrong, grade_function, grade_value, register_solution, solution

__all__ = ["Case", "Verdict", "Wrong", "grade_function", "grade_value", "register_solution", "solution"]

for _module_info in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _module_info.name.startswith("nb"):
        _module = _importlib.import_module(f"{__name__}.{_module_info.name}")
        for _name in getattr(_module, "__all__", ()):
            if _name in globals() and globals()[_name] is not getattr(_module, _name):
                raise ImportError(f"{_module.__name__}.{_name} would hide another checker of the same name")
            globals()[_name] = getattr(_module, _name)
            __all__.append(_name)
