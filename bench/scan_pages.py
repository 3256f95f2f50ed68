"""What a whole-table Scan costs the emulator, and so every DynamoDB call waiting on its lock:
moto's own Scan against the runtime's (local_aws/moto_scan.py), on one table, alternating.

    python -m bench.scan_pages                  # 3,500 and 20,000 items of about 1.4 KB
    python -m bench.scan_pages --items 3500

3,500 items is the data table of a soak at 50/s that keeps data 60 s. Prints the seconds a
paginated Scan (1 MB pages) takes each way, the median of three, and the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

BODY = "hello, is my order on its way? " * 40


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, action="append", default=None)
    args = parser.parse_args()
    import boto3
    from moto import mock_aws
    from moto.dynamodb.models.table import Table

    from local_aws import moto_patches

    moto_patches.install()
    ours = Table.scan
    for count in args.items or [3500, 20000]:
        with mock_aws():
            client = boto3.client(
                "dynamodb", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
            )
            client.create_table(
                TableName="data",
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in ("pk", "sk")],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            )
            for n in range(count):
                item = {"pk": {"S": f"conv#{n % 30}"}, "sk": {"S": f"in#wamid.{n:08d}"}, "text": {"S": BODY[:1200]}}
                client.put_item(TableName="data", Item={**item, "stored_at": {"N": str(time.time())}})
            timings: dict[str, list[float]] = {"moto's": [], "ours": []}
            for _ in range(3):
                for name, method in (("moto's", ours.__wrapped__), ("ours", ours)):
                    Table.scan = method
                    started = time.perf_counter()
                    paginator = client.get_paginator("scan")
                    pages = paginator.paginate(TableName="data", ProjectionExpression="sk, stored_at")
                    read = sum(len(page["Items"]) for page in pages)
                    timings[name].append(time.perf_counter() - started)
                    assert read == count, (read, count)
            Table.scan = ours
            before, after = statistics.median(timings["moto's"]), statistics.median(timings["ours"])
            print(f"{count:>6} items: moto's Scan {before:.3f} s, ours {after:.3f} s ({before / after:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
