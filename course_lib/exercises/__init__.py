"""The exercise machinery: how a graded question is named, answered, checked and recorded.

* ``question_ids``: the grade-id grammar (``<prefix>_<question>_<role>``) and a cell's nbgrader
  metadata;
* ``answer_forms``: what an answer may look like (the one parser every check uses);
* ``misconceptions``: the mistakes a check can name, and ``CheckFailed``;
* ``checks``: form checks, verify cells and hidden tests;
* ``predictions``: the record of committed predictions and reveals;
* ``answers``: answer values written down as JSON and read back exactly.

They depend on ``course_lib.units`` only (and on ``course_lib.questions`` when a check looks a
question up), never on the physics. Nothing is imported here, so ``import course_lib`` stays as
fast.
"""
