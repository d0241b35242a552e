"""A Python program outside frond's repository, run by .ci/run in a fresh
virtual environment that installed the built wheel alone: segment IDs from
a lease, a snowflake ID and keyed sequence values from the running frond
serve whose URL is its argument, threaded and asyncio; the package's type
marker is installed."""

import asyncio
import importlib.resources
import json
import sys
import urllib.request

from frond_client import AsyncFrondClient, FrondClient, decode

url = sys.argv[1]
ids = FrondClient([url])
ids.create_tag("order", 1000)
a, b = ids.next_id("order"), ids.next_id("order")
[flake] = ids.snowflake(1)
if (a, b) != (1, 2) or not isinstance(flake, int):
    raise SystemExit(f"segment IDs {a}, {b}, snowflake {flake}")
req = urllib.request.Request(url + "/v1/spaces", data=json.dumps({"name": "msgs", "step": 100, "sections": 4}).encode(), method="POST")
urllib.request.urlopen(req).close()
first, last = ids.seq("msgs", "conversation-42", 3)
if last - first != 2:
    raise SystemExit(f"seq {first}..{last}")
ids.close()


async def main() -> int:
    async with AsyncFrondClient([url]) as aids:
        return await aids.next_id("order")


c = asyncio.run(main())
if c <= b:
    raise SystemExit(f"asyncio: {c} after {b}")
if not importlib.resources.files("frond_client").joinpath("py.typed").is_file():
    raise SystemExit("frond_client has no py.typed")
print(f"segment IDs {a}, {b}, {c}; snowflake {flake} at {decode(flake).time.isoformat()}; seq {first}..{last}")
