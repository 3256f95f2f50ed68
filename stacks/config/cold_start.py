"""How an environment's functions start cold: from source, or from bytecode compiled at build time
for the functions' runtime (stacks/constructs/bytecode.py). Lambda SnapStart was priced for the
door against bytecode, and is not chosen anywhere: the figures below.

**What a cold start is made of.** Lambda's code directory is read-only, so an asset of `.py` files
is compiled on every cold start and the bytecode thrown away. `python -m bench.door_bytecode` (this
machine: CPython 3.11, two cores, median of 9 fresh processes each, alternating) measured the door's
import and `create_handler` at 274.1 ms from source and 269.2 ms from bytecode (a 4.9 ms difference
end to end; compiling the 42 `pipeline` modules the door imports takes about 17 ms alone), against
208.0 ms for the boto3 baseline: 1.32x and 1.29x. Most of the rest is boto3's own import, which
the baseline pays too.

**SnapStart for the door, priced at prod.** Python SnapStart charges a cache of $0.0000015046 per
GB-second for every published version while it is active (at least 3 hours a version, and a
version stays active until 14 days without an invocation) and a restore of $0.0001397998 per GB
each time an execution environment is resumed (us-east-1 list prices). The door has 1 GB. Prod's
planned peak (`lanectl plan prod`: 225 webhooks a second, 30 ms each) keeps about 7 door
instances busy; if Lambda replaced each every hour, and each day's rise to peak and each deploy
added 7 more, prod would see about 5,500 cold starts a month, 0.004% of its 147.8M webhook
requests. Cost: the live version's cache $3.95 a month, the restores $0.77, and $1.82 for each
retired version left to age out (CDK keeps old versions unless told not to): with a deploy a day,
about $60 a month, for about 5,500 faster starts. It also needs the HTTP API to invoke a published
version through an alias, and the door to build nothing unique (its clients, its secret cache)
before the snapshot. Bytecode costs nothing at run time, speeds every function's cold start, not
only the door's, and changes nothing in the door.

**Choice.** Bytecode in staging and prod, which are deployed from a machine that has prod's
interpreter (synthesis fails there without it, rather than ship source). Source in dev, whose
deploys run from developers' machines (`make synth ENV=dev` works offline with no extra
interpreter), and in local, whose functions run in the runtime's own process and interpreter.
What this machine cannot measure: Lambda's init on arm64 python3.14 with and without the bytecode,
whether the Powertools layer ships compiled files, SnapStart's restore time, and how long Lambda
keeps an environment (the cold starts a month above are an estimate, not a count).
"""

from __future__ import annotations

from enum import StrEnum


class CodeStart(StrEnum):
    SOURCE = "source"
    """The asset is the `.py` files: every cold start compiles what it imports."""
    BYTECODE = "bytecode"
    """The asset also holds each module's bytecode, compiled for the functions' runtime."""
