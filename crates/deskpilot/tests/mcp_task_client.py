"""Drives `computer_task` of `deskpilot mcp --sandbox` with the official MCP Python
SDK's stdio client (the `mcp` package from PyPI).

Run by crates/deskpilot/tests/mcp_task.rs with the venv python from scripts/mcp-venv:

    python mcp_task_client.py DESKPILOT_BIN task        # [model] bound to a fake server
    python mcp_task_client.py DESKPILOT_BIN no-binding  # no [model] in the config

The server inherits this process's environment (XDG_STATE_HOME, DESKPILOT_CONFIG
point at the test's temporary files). Every check that fails raises; the last line
on stdout is `ok PHASE` when all passed.
"""

import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_client import check, error_code, ok, text_of

TYPED = "Hi"


def editor_textbox(text):
    """The ref of the first editable textbox line of an observation, and the line."""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("[e") and "] textbox" in s and "editable" in s:
            return s[1 : s.index("]")], s
    return None, None


async def task_phase(session):
    listed = (await session.list_tools()).tools
    by = {t.name: t for t in listed}
    check("computer_task" in by, f"computer_task is listed: {list(by)}")
    t = by["computer_task"]
    check(t.annotations.read_only_hint is False, "computer_task is not read-only")
    check(t.annotations.destructive_hint is True, "computer_task is destructive")
    check(t.annotations.open_world_hint is False, "computer_task is not open-world")
    check(t.output_schema is not None, "computer_task has an output schema")
    check(t.input_schema["required"] == ["instruction"], f"input schema: {t.input_schema}")

    launch = await session.call_tool("computer_launch", {"command": ["mousepad"], "wait_ms": 60000})
    sc = ok(launch, "computer_launch mousepad")
    check(sc["window"] is not None, f"launched window: {sc}")

    progress = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    result = await session.call_tool(
        "computer_task", {"instruction": f"type {TYPED} into the editor"}, progress_callback=on_progress
    )
    sc = ok(result, "computer_task")
    print(f"computer_task structured content: {sc}", flush=True)
    check(sc["status"] == "done", f"status done: {sc}")
    check(sc["steps"] == 2, f"two steps: {sc}")
    acts = sc["actions_executed"]
    check(len(acts) == 1 and acts[0]["op"] == "set_value", f"one set_value: {acts}")
    check(acts[0]["role"] == "textbox" and acts[0]["status"] == "executed", f"executed on a textbox: {acts}")
    check(acts[0]["channel"] in ("text", "value", "keyboard"), f"channel: {acts}")
    check(sc["model"] == "openai:fake", f"model: {sc}")
    check(sc["tokens_in"] > 0 and sc["tokens_out"] > 0, f"tokens: {sc}")
    check(sc["model_claim"] == "typed Hi, all good", f"the claim is kept apart: {sc}")
    check("all good" not in sc["summary"], f"the summary is the host's: {sc['summary']}")
    text = text_of(result)
    check(text.startswith("done: 1 action executed"), f"text: {text[:300]}")
    check("the model says (unverified): typed Hi, all good" in text, f"claim labelled: {text}")
    check(len(progress) == 2, f"one progress notification per step: {progress}")
    check(progress[0][2].startswith("step 1 · action set_value"), f"progress line: {progress[0]}")
    record = sc.get("record")
    check(record is not None and os.path.exists(record), f"run record written: {record}")
    os.remove(record)

    obs = await session.call_tool("computer_observe", {"app": "mousepad"})
    ok(obs, "computer_observe mousepad after the task")
    _, line = editor_textbox(text_of(obs))
    check(line is not None and f'value="{TYPED}"' in line, f"the editor holds {TYPED!r}: {line}")


async def no_binding_phase(session):
    result = await session.call_tool("computer_task", {"instruction": "type Hi into the editor"})
    code = error_code(result)
    check(code == "COMPUTER_NO_MODEL_BINDING", f"refused with COMPUTER_NO_MODEL_BINDING, got {code}")
    check("deskpilot config set model.provider" in text_of(result), f"says how to bind: {text_of(result)}")
    apps = await session.call_tool("computer_apps", {})
    ok(apps, "the server keeps serving")


async def run(binary, phase):
    params = StdioServerParameters(command=binary, args=["mcp", "--sandbox"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=120) as session:
            await session.initialize()
            if phase == "task":
                await task_phase(session)
            elif phase == "no-binding":
                await no_binding_phase(session)
            else:
                raise SystemExit(f"unknown phase {phase!r}")
    print(f"ok {phase}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: mcp_task_client.py DESKPILOT_BIN task|no-binding")
    anyio.run(run, sys.argv[1], sys.argv[2])
