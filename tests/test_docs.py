"""Every public function and class of course_lib shows a runnable example (pytest runs them
with --doctest-modules)."""
import inspect

import pytest

import course_lib
import course_lib.checks
import course_lib.models

PUBLIC = [(course_lib, n) for n in course_lib.__all__] + \
         [(course_lib.checks, n) for n in course_lib.checks.__all__] + \
         [(course_lib.models, n) for n in course_lib.models.__all__]


@pytest.mark.parametrize("module,name", PUBLIC, ids=[f"{m.__name__}.{n}" for m, n in PUBLIC])
def test_public_api_has_an_example(module, name):
    obj = getattr(module, name)
    if name == "ureg" or not callable(obj) or (inspect.isclass(obj) and issubclass(obj, Exception)):
        pytest.skip("not a function or class")
    if name in ("Layer", "LayerTable", "TransformerConfig"):  # plain records, shown via the zoo
        pytest.skip("data record")
    assert ">>>" in (inspect.getdoc(obj) or ""), f"{module.__name__}.{name} has no example"
