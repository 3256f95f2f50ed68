"""The emulator's in-process shortcuts (local_aws/moto_dispatch.py: unsigned requests, handlers
remembered by URL) leave S3 as moto serves it: private objects read back by their owner, and
buckets told apart, in both of S3's addressing styles."""

from __future__ import annotations

import boto3
import pytest
from botocore.config import Config

from tests.support.aws import REGION


@pytest.mark.parametrize("addressing", ["virtual", "path"])
def test_objects_of_two_buckets_are_written_and_read_back_through_the_patched_emulator(aws, addressing):
    s3 = boto3.client("s3", region_name=REGION, config=Config(s3={"addressing_style": addressing}))
    for bucket, body in (("first-bucket", b"one"), ("second-bucket", b"two")):
        s3.create_bucket(Bucket=bucket)
        s3.put_object(Bucket=bucket, Key="same/key.pem", Body=body)

    assert s3.get_object(Bucket="first-bucket", Key="same/key.pem")["Body"].read() == b"one"
    assert s3.get_object(Bucket="second-bucket", Key="same/key.pem")["Body"].read() == b"two"
