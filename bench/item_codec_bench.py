"""What the item codec (lambdas/pipeline/adapters/items.py) costs the webhook door per delivery:
encoding the door's row with it, against the same row spelt by hand (as webhook_log.py did before
it used the codec) and against boto3's TypeSerializer; and decoding a job row with it against
boto3's TypeDeserializer. Best of several repeats, in microseconds a row; nothing asserted.
The door's whole hot path is bench/ingress_bench.py.

    .venv/bin/python -m bench.item_codec_bench [--rows 20000]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AT = 1_767_225_600.123456
ROW = {
    "id": "wh-" + "a" * 64,
    "body": b"x" * 300,
    "expires_at": 1_767_830_401,
    "body_encoding": "deflate-meta1",
    "sender_hash": "ab" * 16,
    "status": "queued",
    "lane": "messages",
    "tenant": "102290129340398",
    "kind": "whatsapp",
}


def _by_hand() -> dict[str, Any]:
    return {
        "id": {"S": ROW["id"]},
        "received_at": {"N": f"{AT:.3f}"},
        "body": {"B": ROW["body"]},
        "expires_at": {"N": str(ROW["expires_at"])},
        "body_encoding": {"S": ROW["body_encoding"]},
        "sender_hash": {"S": ROW["sender_hash"]},
        "status": {"S": ROW["status"]},
        "lane": {"S": ROW["lane"]},
        "tenant": {"S": ROW["tenant"]},
        "kind": {"S": ROW["kind"]},
    }


def _microseconds(run: Callable[[], Any], rows: int) -> float:
    return min(timeit.repeat(run, number=rows, repeat=7)) / rows * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000, help="rows encoded per repeat")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT / "lambdas")]
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

    from pipeline.adapters import items

    serializer = TypeSerializer()
    deserializer = TypeDeserializer()
    codec_row = items.to_item({**ROW, "received_at": items.Milliseconds(AT)})
    if codec_row != _by_hand():
        raise SystemExit("the codec's row differs from the hand-spelt one")
    job = items.to_item(
        {
            "id": "job-1",
            "lane": "llm",
            "status": "done",
            "attempts": 2,
            "created_at": items.Milliseconds(AT),
            "payload": {"text": "hello", "n": [1, 2.5, True, None]},
            "result": {"sent": 3},
        }
    )

    print(f"the webhook door's row (10 attributes), best of 7 x {args.rows}")
    print(f"  spelt by hand                    {_microseconds(_by_hand, args.rows):6.2f} us")
    codec = _microseconds(lambda: items.to_item({**ROW, "received_at": items.Milliseconds(AT)}), args.rows)
    print(f"  items.to_item                    {codec:6.2f} us")
    boto3_row = {**ROW, "received_at": Decimal(f"{AT:.3f}")}
    typed = _microseconds(lambda: {k: serializer.serialize(v) for k, v in boto3_row.items()}, args.rows)
    print(f"  boto3 TypeSerializer             {typed:6.2f} us")
    print("a job row read back (7 attributes, a map and a list)")
    print(f"  items.from_item                  {_microseconds(lambda: items.from_item(job), args.rows):6.2f} us")
    plain = _microseconds(lambda: {k: deserializer.deserialize(v) for k, v in job.items()}, args.rows)
    print(f"  boto3 TypeDeserializer           {plain:6.2f} us")


if __name__ == "__main__":
    main()
