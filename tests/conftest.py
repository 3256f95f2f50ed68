from __future__ import annotations

import os

# The machine's Node.js is past its end of life for jsii; its banner says nothing about this
# project and would bury test output. Set before any test imports aws_cdk.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "20")


def pytest_configure(config):
    # Handlers run in threads in the concurrency tests and the local runtime; DynamoDB's per-write
    # atomicity must hold there as it does on AWS, and the tests run on the same emulator the
    # runtime does.
    from local_aws import moto_patches, sdk_models
    from local_aws.iam import ledger

    moto_patches.install()
    sdk_models.share()
    # `make test` keeps which grant each function used, for tests/grants/ to compare with what
    # each role is granted; every process of the run (workers, the runtimes they start) adds its own.
    directory = os.environ.get(ledger.DIRECTORY_VARIABLE)
    if directory:
        ledger.keep_in(directory)


def pytest_sessionfinish(session):
    from local_aws.iam import ledger

    ledger.flush()
