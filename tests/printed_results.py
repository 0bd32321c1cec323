"""What the solvers print, for a fixed grid of models, chips and settings: the change detector of
tests/test_printed_results.py (issue 43: a one-line change of a printed format went unnoticed).

The correctness of each figure is held elsewhere (the by-hand tests, the measurements' bound);
this file only notices that something a student reads changed. After a deliberate change, write
the new text and review its diff before committing it:

    .venv/bin/python tests/printed_results.py --update && git diff tests/golden/
"""
from __future__ import annotations

import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden" / "printed_results.txt"


def cases():
    """(title, callable returning the printed text), in a fixed order."""
    from course_lib import Hardware, Models, serve, solve

    chips = [getattr(Hardware, n) for n in ("V100", "A100", "H100", "H200", "B200", "MI300X", "L4", "T4",
                                            "TPUv5e", "LaptopCPU")]
    for chip in chips:
        for model, batch in ((Models.ResNet50, 1), (Models.ResNet50, 256), (Models.ResNet18, 32)):
            for precision in ("fp16", "fp32"):
                yield (f"solve({model.name}, {chip.name}, batch_size={batch}, precision={precision!r})",
                       lambda m=model, c=chip, b=batch, p=precision: str(solve(m, c, batch_size=b, precision=p)))
    for chip in chips[:6]:
        for model, batch in ((Models.Llama3_8B, 1), (Models.Llama3_8B, 64), (Models.Mistral_7B, 8)):
            yield (f"serve({model.name}, {chip.name}, prompt_tokens=2048, output_tokens=128, batch_size={batch})",
                   lambda m=model, c=chip, b=batch: str(serve(m, c, prompt_tokens=2048, output_tokens=128,
                                                              batch_size=b)))


def render() -> str:
    out = []
    for title, text in cases():
        try:
            body = text()
        except Exception as e:            # a refusal is printed too: its message is what a student reads
            body = f"{type(e).__name__}: {e}"
        out.append(f"## {title}\n{body.rstrip()}\n")
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: {sys.argv[0]} --update   (writes {GOLDEN})")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(render())
    print(f"wrote {GOLDEN}: review it with git diff before committing")
