"""The explorers' own widgets, built to be used without a mouse and without sight (anywidget).

ipywidgets' sliders draw a noUiSlider handle that carries no accessible name, and its Image
has no ``alt``; JupyterLab gives Python no way to add either. These three widgets are small
HTML of their own:

* ``LabelledSlider`` -- a native ``<input type="range">`` named by its ``<label>``, stepping
  through a list of values with the arrow keys, Home and End; the value is read aloud
  (``aria-valuetext``) and shown beside it.
* ``LabelledSelect`` -- a native ``<select>`` named by its ``<label>``.
* ``Chart`` -- a PNG in an ``<img>`` whose ``alt`` is replaced with every new image.
* ``LiveText`` -- HTML in a polite live region (``role="status"``) that stays in the page, so a
  screen reader announces each new result.

Each has a ``value`` trait as its ipywidgets counterpart does (SelectionSlider, Dropdown, Image,
HTML). The controls tell JupyterLab to leave their keys alone (``data-lm-suppress-shortcuts``):
its command-mode shortcuts would otherwise take the arrow keys to move between cells.
"""
from __future__ import annotations

import anywidget
import traitlets

_SLIDER_ESM = """
let n = 0;
function render({ model, el }) {
  const id = `course-slider-${Date.now().toString(36)}-${n++}`;
  el.classList.add("course-slider");
  const label = document.createElement("label");
  label.htmlFor = id;
  const input = document.createElement("input");
  // JupyterLab's command-mode shortcuts (the arrow keys move between cells or fold headings)
  // would take the arrow keys away from the slider; the attribute must sit on the key's target
  input.setAttribute("data-lm-suppress-shortcuts", "true");
  input.type = "range";
  input.id = id;
  input.min = "0";
  input.step = "1";
  const out = document.createElement("output");
  out.htmlFor = id;
  out.setAttribute("aria-hidden", "true");     // the slider itself says its value
  el.append(label, input, out);
  const sync = () => {
    const options = model.get("options"), value = model.get("value");
    label.textContent = model.get("description");
    input.max = String(options.length - 1);
    const i = Math.max(0, options.indexOf(value));
    input.value = String(i);
    const text = `${value}${model.get("unit") ? " " + model.get("unit") : ""}`;
    input.setAttribute("aria-valuetext", text);
    out.textContent = String(value);
  };
  input.addEventListener("input", () => {
    const value = model.get("options")[Number(input.value)];
    if (value !== model.get("value")) {
      model.set("value", value);
      model.save_changes();
    }
  });
  model.on("change:value", sync);
  model.on("change:options", sync);
  model.on("change:description", sync);
  sync();
}
export default { render };
"""

_SELECT_ESM = """
let n = 0;
function render({ model, el }) {
  const id = `course-select-${Date.now().toString(36)}-${n++}`;
  el.classList.add("course-select");
  const label = document.createElement("label");
  label.htmlFor = id;
  const select = document.createElement("select");
  select.setAttribute("data-lm-suppress-shortcuts", "true");   // the arrow keys choose an option
  select.id = id;
  el.append(label, select);
  const sync = () => {
    label.textContent = model.get("description");
    const options = model.get("options");
    if (select.options.length !== options.length || [...select.options].some((o, i) => o.value !== options[i])) {
      select.replaceChildren(...options.map(v => new Option(v, v)));
    }
    select.value = model.get("value");
  };
  select.addEventListener("change", () => {
    model.set("value", select.value);
    model.save_changes();
  });
  model.on("change:value", sync);
  model.on("change:options", sync);
  model.on("change:description", sync);
  sync();
}
export default { render };
"""

_SLIDER_CSS = """
.course-slider { display: flex; align-items: center; gap: 0.6em; margin: 2px 1.5em 2px 0; }
.course-slider label { color: var(--jp-widgets-label-color, #000); }
.course-slider input[type=range] { width: 12em; accent-color: #0072B2; }
.course-slider input[type=range]:focus-visible { outline: 2px solid #0072B2; outline-offset: 3px; }
.course-slider output { min-width: 3.5em; font-variant-numeric: tabular-nums; }
.course-select { display: flex; align-items: center; gap: 0.6em; margin: 2px 1.5em 2px 0; }
.course-select select:focus-visible { outline: 2px solid #0072B2; outline-offset: 2px; }
"""

_CHART_ESM = """
function render({ model, el }) {
  const img = document.createElement("img");
  img.className = "widget-image course-chart";
  img.style.maxWidth = "100%";
  img.style.height = "auto";
  el.append(img);
  let url = null;
  const draw = () => {
    const png = model.get("value");
    const next = URL.createObjectURL(new Blob([png], { type: "image/png" }));
    img.alt = model.get("alt");
    img.src = next;
    if (url) URL.revokeObjectURL(url);
    url = next;
  };
  const size = () => { img.style.width = `${model.get("width_px")}px`; };
  model.on("change:value", draw);
  model.on("change:alt", () => { img.alt = model.get("alt"); });
  model.on("change:width_px", size);
  size();
  draw();
  return () => { if (url) URL.revokeObjectURL(url); };
}
export default { render };
"""

_LIVE_ESM = """
function render({ model, el }) {
  const box = document.createElement("div");
  box.className = "widget-html-content course-live";
  box.setAttribute("role", "status");
  box.setAttribute("aria-live", "polite");
  box.setAttribute("aria-atomic", "true");
  el.append(box);
  const show = () => { box.innerHTML = model.get("value"); };
  model.on("change:value", show);
  show();
}
export default { render };
"""


class LabelledSlider(anywidget.AnyWidget):
    """A slider over a list of whole numbers, named by `description`; `value` is one of them.

    >>> s = LabelledSlider(options=[1, 2, 4], value=2, description="batch")
    >>> s.value = 4
    >>> s.index
    2
    """
    _esm = _SLIDER_ESM
    _css = _SLIDER_CSS
    options = traitlets.List(traitlets.Int()).tag(sync=True)
    value = traitlets.Int().tag(sync=True)
    description = traitlets.Unicode("").tag(sync=True)
    unit = traitlets.Unicode("").tag(sync=True)     # read aloud after the value

    @traitlets.validate("value")
    def _one_of_the_options(self, proposal):
        if proposal["value"] not in self.options:
            raise traitlets.TraitError(f"{self.description or 'value'} must be one of "
                                       f"{self.options}, got {proposal['value']!r}.")
        return proposal["value"]

    @property
    def index(self) -> int:
        return self.options.index(self.value)


class LabelledSelect(anywidget.AnyWidget):
    """A drop-down list named by `description`; `value` is one of `options` (strings).

    >>> d = LabelledSelect(options=["fp16", "fp8"], value="fp16", description="precision")
    >>> d.value = "fp8"
    """
    _esm = _SELECT_ESM
    _css = _SLIDER_CSS
    options = traitlets.List(traitlets.Unicode()).tag(sync=True)
    value = traitlets.Unicode().tag(sync=True)
    description = traitlets.Unicode("").tag(sync=True)

    @traitlets.validate("value")
    def _one_of_the_options(self, proposal):
        if proposal["value"] not in self.options:
            raise traitlets.TraitError(f"{self.description or 'value'} must be one of "
                                       f"{self.options}, got {proposal['value']!r}.")
        return proposal["value"]


class Chart(anywidget.AnyWidget):
    """A PNG (`value`, bytes) shown `width_px` CSS pixels wide, with `alt` as its text."""
    _esm = _CHART_ESM
    value = traitlets.Bytes(b"").tag(sync=True)
    alt = traitlets.Unicode("").tag(sync=True)
    width_px = traitlets.Int(800).tag(sync=True)


class LiveText(anywidget.AnyWidget):
    """HTML (`value`) in a live region: each new value is announced by screen readers."""
    _esm = _LIVE_ESM
    value = traitlets.Unicode("").tag(sync=True)
