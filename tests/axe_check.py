"""axe-core in the browser tests: where it comes from and how it is run.

axe-core is installed from npm (never a downloaded browser) into .cache/axe-core/, which .ci/run
fills (`npm install --prefix .cache/axe-core axe-core@4`); a test that finds it missing installs
it there itself when npm is at hand. AXE_CORE_JS names another copy of axe.min.js.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / ".cache" / "axe-core"
AXE_JS = Path(os.environ.get("AXE_CORE_JS") or CACHE / "node_modules" / "axe-core" / "axe.min.js")
# the WCAG 2.0 and 2.1 rules of levels A and AA (axe's tags); best practices are not asked for
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_source() -> str:
    """axe.min.js's text, installing axe-core from npm into .cache/axe-core/ when missing."""
    if not AXE_JS.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError(f"axe-core is not at {AXE_JS} and npm is not installed to fetch it")
        subprocess.run([npm, "install", "--prefix", str(CACHE), "--no-fund", "--no-audit", "--silent",
                        "axe-core@4"], check=True, timeout=300)
    return AXE_JS.read_text()


def axe_violations(page, include: list[str]) -> list[dict]:
    """The WCAG 2 A/AA violations axe finds in the elements that `include`'s CSS selectors
    match (each selector all its matches), as dicts: id, impact, help, nodes (target, html)."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    return page.evaluate(
        """async ([include, tags]) => {
             const present = include.filter(s => document.querySelector(s));
             if (!present.length) throw new Error('axe: nothing matches ' + include.join(', '));
             const r = await axe.run({include: present.map(s => [s])},
                                     {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
             return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                 nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 300),
                                           why: n.failureSummary}))}));
           }""", [include, WCAG_TAGS])


def describe(violations: list[dict]) -> str:
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}): {v['help']} -- {len(v['nodes'])} element(s)")
        for n in v["nodes"][:5]:
            lines.append(f"    {n['target']}: {n['html']}\n      {n['why']}")
    return "\n".join(lines)
