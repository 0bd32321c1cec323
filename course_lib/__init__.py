"""course_lib: roofline performance modeling for ML systems, the library behind the course.

>>> from course_lib import Hardware, Models, solve, serve, Q_
>>> p = solve(Models.Llama3_8B, Hardware.H100, batch_size=1, precision="fp16")
>>> p.bottleneck
'memory-bound'

Conventions (written once, here and in the README): 1 multiply-accumulate = 2 FLOPs (the
vendors' convention for peaks; integer peaks are in TOPS); peaks are dense; GB = 10⁹ bytes,
GiB = 2³⁰ bytes, and memory capacities are binary (an "80 GB" A100 holds 80 GiB); every result
is the pure roofline unless an efficiency or overhead knob was asked for.

Plotting and widgets (matplotlib, ipywidgets) load on first use, so this import stays fast.
Inside IPython, matplotlib figures are shown with a text alternative (course_lib.figure_display).
Import course_lib before making Quantities with pint directly: it installs the course's unit
registry as pint's application registry.
"""
from __future__ import annotations

from .errors import CourseError, PrecisionError, UnitsError, UnknownNameError
from .hardware import Hardware
from .models import FLOPS_PER_MAC, Models
from .precision import PRECISIONS, bytes_per_element
from .roofline import solve
from .serving import serve
from .units import Q_, registry
from .analysis import crossover_batch, intensity_limit, max_batch_size, speedup

# Install the course's unit registry as pint's application registry now, not on first use:
# a Quantity made with pint before the switch would belong to the old registry and not mix
# with the course's (this costs ~0.15 s of the import).
registry()

from .figure_display import enable as _show_figures_with_alt_text
from .notebook_errors import install as _install_notebook_errors


def attach_to_ipython() -> None:
    """In an IPython kernel: figures carry a text alternative written from their data
    (course_lib.alt_text), and a failed check or an unanswered cell shows one line, not a
    traceback. Done at import; a kernel that imported course_lib before its shell existed (the
    grader's warm kernels, autograder.sandbox.zygote) calls it again once the shell is up."""
    _show_figures_with_alt_text()
    _install_notebook_errors()


attach_to_ipython()

__version__ = "0.1.0"

__all__ = ["Hardware", "Models", "solve", "serve", "plot_roofline", "Q_", "ureg",
           "crossover_batch", "intensity_limit", "max_batch_size", "speedup", "FLOPS_PER_MAC", "PRECISIONS",
           "bytes_per_element", "CourseError", "PrecisionError", "UnitsError",
           "UnknownNameError", "roofline_explorer"]


def __getattr__(name):
    # matplotlib and ipywidgets cost ~0.5 s to import: only when a picture is asked for.
    if name == "plot_roofline":
        from .plots import plot_roofline

        return plot_roofline
    if name == "roofline_explorer":
        from .widgets import roofline_explorer

        return roofline_explorer
    if name == "ureg":
        from .units import registry

        return registry()
    raise AttributeError(f"module 'course_lib' has no attribute {name!r}")
