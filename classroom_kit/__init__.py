"""The classroom kit: graded assignments for a class, apart from the lessons and from the helpers they read.

``python3 run.py classroom`` writes an nbgrader course folder (:mod:`classroom`), ``python3 run.py classroom
autograde NN`` grades a class: only each learner's notebook is collected (:mod:`submissions`), its exercises run
in a bubblewrap sandbox (:mod:`grade_worker`) while marks are decided in a process that never runs learner code
(:mod:`grade`), on the notebook's own checkers and on cases nobody can recompute (:mod:`grade_cases`), and the
feedback pages run nothing a learner wrote (:mod:`feedback`). ``grading.Dockerfile`` is the container for macOS and
Windows. The kit is a package of the series' distribution (pyproject.toml), installed from a checkout as run.py
installs it (``pip install -e ".[teacher]"``: the teacher extra brings nbgrader and the rest of what it needs);
``python -m classroom_kit ...`` runs the same commands as ``python3 run.py classroom ...``. Its modules also run as
scripts, and the course folder gets a frozen copy of them (``.grader/``), beside a copy of ``attn_helpers``, where
they import each other as siblings: so they do here too. Their tests are ``tests/classroom/``.
"""
