"""The exercise machinery: how a graded question is named, answered, checked and recorded.

* ``question_ids``: the grade-id grammar (``<prefix>_<question>_<role>``) and a cell's nbgrader
  metadata;
* ``answer_forms``: what an answer may look like (the one parser every check uses);
* ``misconceptions``: the mistakes a check can name, and ``CheckFailed``;
* ``checks``: form checks, verify cells and hidden tests;
* ``predictions``: the record of committed predictions and reveals;
* ``answers``: answer values written down as JSON and read back exactly;
* ``declared``: what a check may ask about a question declared in ``course_lib.questions``
  (which registers itself there when imported).

They depend on ``course_lib.units`` and ``course_lib.ledger`` only, never on the physics nor on
``course_lib.questions``, the layer above them. Nothing is imported here, so ``import course_lib``
stays as fast.
"""
