"""Which client lists S3 faster: pyarrow's S3FileSystem or s3fs (L1).

10,000 objects in 100 Hive partitions (``dt=NNNN/``) on an S3 API server. Each client
that can be imported lists the prefix three ways, several times, medians compared:

- ``recursive``: one flat listing of the whole prefix (no delimiter);
- ``levels``: the root with a delimiter, then the 100 partitions in parallel (16
  threads), as sparkmark's lister walks Hive folders;
- ``pruned``: one partition only (what a partition predicate leaves).

The two clients cannot share one environment (s3fs pins botocore below the version
the project's test extras pin), so run it once per environment against one server::

    python -m sparkmark.devservices s3 --port 9000 &
    python bench/s3_listing.py --endpoint http://127.0.0.1:9000 --populate
    /other/venv/bin/python bench/s3_listing.py --endpoint http://127.0.0.1:9000
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

BUCKET = "listing-bench"
PARTITIONS = 100


def populate(endpoint: str, objects: int) -> None:
    from pyarrow import fs as pafs

    s3 = pafs.S3FileSystem(
        endpoint_override=endpoint,
        access_key="bench",
        secret_key="bench",
        region="us-east-1",
        allow_bucket_creation=True,
    )
    s3.create_dir(BUCKET)
    per = objects // PARTITIONS

    def put(p: int) -> None:
        for n in range(per):
            with s3.open_output_stream(f"{BUCKET}/data/dt={p:04d}/f{n:05d}.json") as out:
                out.write(b'{"id": 1}\n')

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, range(PARTITIONS)))


def pyarrow_client(endpoint: str):
    from pyarrow import fs as pafs

    s3 = pafs.S3FileSystem(
        endpoint_override=endpoint, access_key="bench", secret_key="bench", region="us-east-1"
    )

    def ls(path: str, recursive: bool) -> list:
        return s3.get_file_info(pafs.FileSelector(path, recursive=recursive))

    return ls


def s3fs_client(endpoint: str):
    import s3fs

    s3 = s3fs.S3FileSystem(
        key="bench", secret="bench", client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"}
    )

    def ls(path: str, recursive: bool) -> list:
        s3.invalidate_cache()
        if recursive:
            return list(s3.find(path, detail=True).values())
        return s3.ls(path, detail=True)

    return ls


def _is_dir(entry) -> bool:
    kind = entry["type"] if isinstance(entry, dict) else entry.type.name
    return kind.lower() == "directory"


def _name(entry) -> str:
    return entry["name"] if isinstance(entry, dict) else entry.path


def scenarios(ls) -> dict[str, float]:
    root = f"{BUCKET}/data"
    times = {}
    began = time.perf_counter()
    count = len([e for e in ls(root, True) if not _is_dir(e)])
    times["recursive"] = time.perf_counter() - began
    assert count >= PARTITIONS, count
    began = time.perf_counter()
    top = ls(root, False)
    dirs = [_name(e) for e in top if _is_dir(e)]
    with ThreadPoolExecutor(16) as pool:
        found = sum(len(x) for x in pool.map(lambda d: ls(d, False), dirs))
    times["levels"] = time.perf_counter() - began
    assert found == count, (found, count)
    began = time.perf_counter()
    ls(f"{root}/dt=0042", False)
    times["pruned"] = time.perf_counter() - began
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--populate", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.populate:
        began = time.perf_counter()
        populate(args.endpoint, args.objects)
        print(f"populated {args.objects} objects in {time.perf_counter() - began:.1f} s")
    clients = {"pyarrow": pyarrow_client, "s3fs": s3fs_client}
    result = {}
    for name, make in clients.items():
        if importlib.util.find_spec(name) is None:
            continue
        ls = make(args.endpoint)
        runs = [scenarios(ls) for _ in range(args.repeats)]
        result[name] = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
