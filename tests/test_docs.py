"""Every public function and class of course_lib shows a runnable example (pytest runs them
with --doctest-modules)."""
import inspect

import pytest

import course_lib
import course_lib.exercises.checks
import course_lib.measure
import course_lib.models

RECORDS = ("Layer", "LayerTable", "TransformerConfig")  # plain records, shown via the zoo
PUBLIC = [(m, n) for m in (course_lib, course_lib.exercises.checks, course_lib.models, course_lib.measure)
          for n in m.__all__
          if n not in RECORDS and n != "ureg" and callable(getattr(m, n))
          and not (inspect.isclass(getattr(m, n)) and issubclass(getattr(m, n), Exception))]


@pytest.mark.parametrize("module,name", PUBLIC, ids=[f"{m.__name__}.{n}" for m, n in PUBLIC])
def test_public_api_has_an_example(module, name):
    obj = getattr(module, name)
    assert ">>>" in (inspect.getdoc(obj) or ""), f"{module.__name__}.{name} has no example"
