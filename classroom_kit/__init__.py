"""The classroom kit: graded assignments for a class, apart from the lessons and from the helpers they read.

``python3 run.py classroom`` writes an nbgrader course folder (:mod:`classroom`), ``python3 run.py classroom
autograde NN`` grades a class: only each learner's notebook is collected (:mod:`submissions`), its exercises run
in a bubblewrap sandbox (:mod:`grade_worker`) while marks are decided in a process that never runs learner code
(:mod:`grade`), on the notebook's own checkers and on cases nobody can recompute (:mod:`grade_cases`), and the
feedback pages run nothing a learner wrote (:mod:`feedback`). ``grading.Dockerfile`` is the container for macOS and
Windows. The modules are scripts: the course folder gets a frozen copy of them (``.grader/``), beside a copy of
``attn_helpers``, and they import each other as siblings. Their tests are ``tests/classroom/``; nbgrader and
the rest of what they need come with the teacher extra, ``pip install -e ".[teacher]"``.
"""
