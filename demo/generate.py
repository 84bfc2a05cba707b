"""Write a small partitioned JSON data set of orders for the demo.

python demo/generate.py DIR --days 3 --files-per-day 4      # the first batch
python demo/generate.py DIR --append 2                       # two more files later
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import date, timedelta
from pathlib import Path


def write_file(folder: Path, name: str, first_id: int, rows: int, rng: random.Random) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w", encoding="utf-8") as out:
        for i in range(rows):
            order = {
                "order_id": first_id + i,
                "customer": f"c{rng.randint(1, 50):03d}",
                "amount": round(rng.uniform(5, 500), 2),
            }
            out.write(json.dumps(order) + "\n")
    return first_id + rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--files-per-day", type=int, default=4)
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--append", type=int, default=0, help="add this many files to a new day")
    opts = parser.parse_args()
    rng = random.Random(7)
    start = date(2026, 11, 1)
    existing = sorted(opts.root.glob("dt=*/*.json"))
    next_id = 1 + sum(len(p.read_text(encoding="utf-8").splitlines()) for p in existing)
    if opts.append:
        day = start + timedelta(days=len({p.parent.name for p in existing}))
        for n in range(opts.append):
            next_id = write_file(opts.root / f"dt={day}", f"orders-{n:03d}.json", next_id, opts.rows, rng)
        print(f"added {opts.append} files under {opts.root}/dt={day}")
        return
    for d in range(opts.days):
        day = start + timedelta(days=d)
        for n in range(opts.files_per_day):
            next_id = write_file(opts.root / f"dt={day}", f"orders-{n:03d}.json", next_id, opts.rows, rng)
    print(f"wrote {opts.days * opts.files_per_day} files under {opts.root}")


if __name__ == "__main__":
    main()
