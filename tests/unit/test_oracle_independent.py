"""The grounding oracle (`oracle/`) is the independent check of datagen's element scan: it
must not import datagen, or a bug they share would pass it."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_oracle_imports_no_datagen() -> None:
    probe = (
        "import sys, oracle, oracle.judge, oracle.motion, oracle.targets; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'datagen'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"
