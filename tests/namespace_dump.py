"""Run in a lesson's kernel by tests/test_questions.py (the read-ahead test): every variable of the
kernel's namespace walked (numbers, pint Quantities, arrays, lists, dicts, dataclasses and objects'
attributes, strings and reprs) and written to a JSON file as [name, value, unit or None or "str"], so
the test can search it for answers not yet revealed. Names that start with "_" are the kernel's own.
A measurement's run-to-run spread (course_lib.measure's `spread`, (max - min) / median of its
repeats) is this machine's noise, no figure a question asks: it is random and may land on any
answer (0.1249 beside lesson 5's 0.125 FLOP/byte), so it is left out."""
def _ns_dump(path):
    import dataclasses, json, numbers, types
    import numpy as _np
    out, seen = [], set()
    def walk(name, v, depth):
        if len(out) > 200000 or depth > 4 or id(v) in seen and not isinstance(v, (int, float, str)):
            return
        if isinstance(v, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)):
            return
        if isinstance(v, bool) or v is None:
            return
        if isinstance(v, numbers.Real) and not isinstance(v, _np.ndarray):
            out.append([name, float(v), None]); return
        if isinstance(v, str):
            if len(v) < 400: out.append([name, v, "str"])
            return
        seen.add(id(v))
        if type(v).__module__.split(".")[0] in ("matplotlib", "ipywidgets", "traitlets", "IPython"):
            return      # drawn figures and widgets: the read-ahead test searches what they show (alt text, state)
        if hasattr(v, "magnitude") and hasattr(v, "units"):      # a pint Quantity
            unit = format(v.units, "~")
            m = _np.ravel(_np.asarray(v.magnitude))
            if m.dtype.kind in "if":
                for i, x in enumerate(m[:4096]): out.append([f"{name}[{i}]", float(x), unit])
            return
        if isinstance(v, _np.ndarray):
            m = _np.ravel(v)
            if m.dtype.kind in "if":
                for i, x in enumerate(m[:4096]): out.append([f"{name}[{i}]", float(x), None])
            elif m.dtype.kind in "US":
                for i, x in enumerate(m[:512]): out.append([f"{name}[{i}]", str(x), "str"])
            return
        if isinstance(v, dict):
            for k, x in list(v.items())[:2000]:
                walk(f"{name}[{k!r}]", k, depth + 1); walk(f"{name}[{k!r}]", x, depth + 1)
            return
        if isinstance(v, (list, tuple, set, frozenset)):
            for i, x in enumerate(list(v)[:2000]): walk(f"{name}[{i}]", x, depth + 1)
            return
        try:
            r = repr(v)
            if len(r) < 4000: out.append([f"repr({name})", r, "str"])
        except Exception:
            pass
        fields = ({f.name: getattr(v, f.name, None) for f in dataclasses.fields(v)} if dataclasses.is_dataclass(v)
                  else getattr(v, "__dict__", None))
        if isinstance(fields, dict):
            for k, x in fields.items():
                if not k.startswith("__") and k != "spread": walk(f"{name}.{k}", x, depth + 1)
    for k, v in list(globals().items()):
        if not k.startswith("_") and k not in ("In", "Out", "exit", "quit", "get_ipython"):
            walk(k, v, 0)
    with open(path, "w") as f:
        json.dump(out, f)
