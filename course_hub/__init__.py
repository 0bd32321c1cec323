"""The course's pieces of its JupyterHub deployment (deploy/jupyterhub/), installed with the
package into the hub's shared environment:

* course_hub.service -- the course service the hub runs (`python -m course_hub.service`, as its
  own Unix user: jupyterhub_config.py): the prediction ledger, the nbgrader exchange, the answer key;
* course_hub.feedback_link -- the students' servers' nbgrader Assignment List, whose "(view
  feedback)" opens the feedback page (nbgrader_config.student.py configures it);
* course_hub.nbexchange -- nbgrader's exchange plugin classes over HTTP to the service's exchange
  (selected with c.ExchangeFactory; deploy/jupyterhub/README.md);
* course_hub.archives -- the archives the exchange carries, read bounded and unpacked safely;
* course_hub.names -- the grammars of student, course, assignment and user names, defined once.

Neither grades anything: the grader (autograder) reads the ledger's files or URL, and knows
nothing of this package but its names' grammars (course_hub.names, a module of patterns alone).
"""
