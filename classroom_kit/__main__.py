"""``python -m classroom_kit [autograde] [--out DIR] [NN ...]``: the kit's commands from an installed kit, the same as
``python3 run.py classroom ...`` (:func:`classroom_kit.classroom.main`)."""

import sys

from classroom_kit import classroom

if __name__ == "__main__":
    raise SystemExit(classroom.main(sys.argv[1:]))
