"""Write the expected script beside each Studio fixture (tests/fixtures/studio/NAME.py
from NAME.json), as the code generator makes it now. Run after a deliberate change to
the generator, then read the diff: tests/test_studio_golden.py compares them.

    .venv/bin/python scripts/studio_golden.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sparkmark.studio.codegen import generate
from sparkmark.studio.graph import parse_document

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
CORPORA = (FIXTURES / "studio", FIXTURES / "studio_tables")


def main() -> int:
    changed = 0
    for fixture in sorted(p for corpus in CORPORA for p in corpus.glob("*.json")):
        job = json.loads(fixture.read_text(encoding="utf-8"))["job"]
        script = generate(parse_document(job)[0])
        target = fixture.with_suffix(".py")
        if not target.exists() or target.read_text(encoding="utf-8") != script:
            target.write_text(script, encoding="utf-8")
            changed += 1
            print(f"wrote {target.relative_to(FIXTURES.parents[1])}")
    print(f"{changed} expected script(s) written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
