"""Call every tool of `cudadoctor mcp` through the MCP SDK's own stdio client, on this machine, and print
what each returned. Used by benchmarks/real_gpu.sh on a real GPU: python mcp_calls.py CHECKPOINT"""

import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CALLS = [
    ("check", {}),
    ("gpus", {}),
    ("pick", {"n": 1, "min_free": "8GiB"}),
    ("triage", {"text": "RuntimeError: CUDA error: no kernel image is available for execution on the device"}),
    ("ckpt_inspect", {"path": sys.argv[1]}),
    ("explain", {"code": "CD208"}),
]


async def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "cudadoctor", "mcp"], env=dict(os.environ))
    with anyio.fail_after(240):
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            print("tools:", ", ".join(t.name for t in tools))
            for name, arguments in CALLS:
                start = time.perf_counter()
                r = await session.call_tool(name, arguments)
                took = time.perf_counter() - start
                print(f"=== {name} {arguments} -> is_error={r.is_error} in {took:.1f} s")
                for c in r.content:
                    print(getattr(c, "text", c)[:3000])


anyio.run(main)
