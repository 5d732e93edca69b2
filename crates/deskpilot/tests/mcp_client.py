"""Drives `deskpilot mcp --sandbox` with the official MCP Python SDK's stdio client
(the `mcp` package from PyPI), a client deskpilot did not write.

Run by crates/deskpilot/tests/mcp.rs with the venv python from scripts/mcp-venv:

    python mcp_client.py DESKPILOT_BIN main   # the working session on mousepad
    python mcp_client.py DESKPILOT_BIN plan   # DESKPILOT_CONFIG sets plan mode
    python mcp_client.py DESKPILOT_BIN pixels # DESKPILOT_CONFIG allows pixels

The server inherits this process's environment (XDG_STATE_HOME, DESKPILOT_CONFIG
point at the test's temporary files). Every check that fails raises; the last line
on stdout is `ok PHASE` when all passed.
"""

import os
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

TOOLS = [
    "computer_apps",
    "computer_observe",
    "computer_find",
    "computer_read",
    "computer_act",
    "computer_wait",
    "computer_keys",
    "computer_launch",
    "computer_screenshot",
    "computer_task",
    "computer_clipboard",
]
READ_ONLY = {
    "computer_apps",
    "computer_observe",
    "computer_find",
    "computer_read",
    "computer_wait",
    "computer_screenshot",
}
MARKER = "hello from the MCP client"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"pass: {what.splitlines()[0][:120]}", flush=True)


def text_of(result):
    return "".join(b.text for b in result.content if b.type == "text")


def error_code(result):
    check(result.is_error, f"an isError result: {text_of(result)[:300]}")
    sc = result.structured_content or {}
    check(set(sc) == {"code", "message", "detail"}, f"structured error {{code, message, detail}}: {sc}")
    check(text_of(result).find(f"error[{sc['code']}]: ") >= 0, f"text names the code: {text_of(result)[:300]}")
    return sc["code"]


def ok(result, what):
    check(not result.is_error, f"{what} succeeds: {text_of(result)[:500]}")
    return result.structured_content


async def main_phase(session):
    init = session.initialize_result
    check(init.server_info.name == "deskpilot", f"server name: {init.server_info}")
    check(init.protocol_version in ("2025-06-18", "2025-11-25"), f"protocol {init.protocol_version}")
    instr = init.instructions or ""
    for must in ("Observe once", "set_value", "computer_keys", "irreversible", "data, not instructions"):
        check(must in instr, f"instructions teach {must!r}")

    listed = (await session.list_tools()).tools
    check([t.name for t in listed] == TOOLS, f"tool names: {[t.name for t in listed]}")
    for t in listed:
        a = t.annotations
        ro = t.name in READ_ONLY
        check(a is not None and a.read_only_hint is ro, f"{t.name} readOnlyHint={ro}")
        check(a.destructive_hint is (not ro), f"{t.name} destructiveHint={not ro}")
        check(t.input_schema.get("type") == "object", f"{t.name} input schema is an object")
        check(bool(t.description), f"{t.name} has a description")
        check((t.output_schema is not None) == (t.name != "computer_screenshot"), f"{t.name} output schema")
    by = {t.name: t for t in listed}
    act_props = by["computer_act"].input_schema["properties"]
    check("actions" in act_props and act_props["actions"].get("maxItems") == 20, f"act schema: {act_props}")
    obs_props = by["computer_observe"].input_schema["properties"]
    check({"app", "window", "scope", "query", "max_tokens"} <= set(obs_props), f"observe schema: {obs_props}")
    check("description" in obs_props["max_tokens"], "doc comments became descriptions")

    progress = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    launch = await session.call_tool(
        "computer_launch", {"command": ["mousepad"], "wait_ms": 60000}, progress_callback=on_progress
    )
    sc = ok(launch, "computer_launch mousepad")
    check(sc["window"] is not None and "mousepad" in sc["window"]["app"].lower(), f"launched window: {sc}")
    print(f"launch took {sc['elapsed_ms']} ms, {len(progress)} progress notifications", flush=True)

    obs = await session.call_tool("computer_observe", {"app": "mousepad"})
    sc = ok(obs, "computer_observe mousepad")
    text = text_of(obs)
    check(len(sc["refs"]) > 3, f"structured content has refs: {sc['refs']}")
    for r in sc["refs"]:
        check(f"[{r}]" in text, f"ref {r} is in the text")
    check(text.startswith(sc["snapshot"].rstrip()), "the text is the snapshot plus a footer")
    check("app mousepad" in text and " tokens · read " in text, f"observe text form: {text[:200]}")
    check(sc["tokens"] <= 2000, f"within the default budget: {sc['tokens']}")

    find = await session.call_tool("computer_find", {"text": "", "role": "textbox"})
    check(find.is_error, "an empty find text is refused")
    textbox = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("[e") and "] textbox" in s and "editable" in s:
            textbox = s[1 : s.index("]")]
            break
    check(textbox is not None, f"mousepad shows an editable textbox: {text[:1500]}")

    act = await session.call_tool(
        "computer_act", {"actions": [{"ref": textbox, "op": "set_value", "value": MARKER}]}
    )
    sc = ok(act, "computer_act set_value")
    check(sc["requested"] == 1 and sc["stopped"] is None, f"batch ran whole: {sc}")
    check(sc["actions"][0]["status"] == "executed", f"executed: {sc['actions'][0]}")
    check(text_of(act).startswith(f"ok set_value {textbox} textbox"), f"act text form: {text_of(act)[:300]}")
    check(MARKER in text_of(act), f"the diff shows the new value: {text_of(act)[:600]}")

    back = await session.call_tool("computer_observe", {"app": "mousepad", "query": MARKER})
    ok(back, "observe with query")
    check(MARKER in text_of(back), f"read back through observe: {text_of(back)[:600]}")

    stale = await session.call_tool("computer_act", {"actions": [{"ref": "e99999", "op": "click"}]})
    code = error_code(stale)
    check(code == "COMPUTER_ELEMENT_NOT_FOUND", f"unknown ref refused with COMPUTER_ELEMENT_NOT_FOUND, got {code}")

    # An action that was not done fails the call: a menu bar has no scroll bar, so its
    # scroll is rejected, the call is an isError result, and the batch stops there.
    menubar = next(
        (l.strip()[1 : l.strip().index("]")] for l in text.splitlines() if "] menubar" in l),
        None,
    )
    check(menubar is not None, f"mousepad shows a menu bar: {text[:600]}")
    rejected = await session.call_tool(
        "computer_act",
        {"actions": [{"ref": menubar, "op": "scroll", "value": "down"}, {"ref": textbox, "op": "clear"}]},
    )
    check(error_code(rejected) == "COMPUTER_ELEMENT_NOT_ACTIONABLE", f"a rejected action is an error: {text_of(rejected)[:400]}")
    detail = rejected.structured_content["detail"]
    check(detail["failed"]["status"] == "rejected" and detail["not_run"] == [textbox], f"the rest was not run: {detail}")
    check(text_of(rejected).startswith(f"!! scroll {menubar} menubar"), f"the result line is still there: {text_of(rejected)[:300]}")

    wrong = await session.call_tool("computer_act", {"actions": "click e5"})
    check(error_code(wrong) == "COMPUTER_INVALID_ARGUMENT", "wrong argument types: COMPUTER_INVALID_ARGUMENT")

    shot = await session.call_tool("computer_screenshot", {"mode": "image"})
    check(error_code(shot) == "COMPUTER_SCOPE_VIOLATION", "a screenshot without pixels allowed is refused")
    check("a11y-and-pixels" in shot.content[0].text, f"the refusal names the setting: {shot.content[0].text}")
    check(all(b.type == "text" for b in shot.content), "no image content")

    try:
        await session.call_tool("computer_fly", {})
        check(False, "an unknown tool is a protocol error")
    except Exception as e:  # noqa: BLE001 - the SDK's MCPError
        check("computer_fly" in str(e) or "unknown tool" in str(e), f"unknown tool error: {e}")

    # A long wait, cancelled by the client: the next call is answered promptly.
    waited = []

    async def on_wait_progress(p, total, message):
        waited.append(p)

    started = time.monotonic()
    with anyio.move_on_after(2.5) as scope:
        await session.call_tool(
            "computer_wait",
            {"app": "mousepad", "text": "text that never appears", "timeout_ms": 60000},
            progress_callback=on_wait_progress,
        )
    check(scope.cancelled_caught, "the wait was still running when cancelled")
    check(len(waited) >= 1, f"the wait sent progress: {waited}")
    t = time.monotonic()
    again = await session.call_tool("computer_observe", {"app": "mousepad", "max_tokens": 300})
    ok(again, "observe after the cancelled wait")
    check(time.monotonic() - t < 5.0, f"answered promptly after cancel: {time.monotonic() - t:.1f} s")
    check(time.monotonic() - started < 15.0, "the cancelled wait did not run to its timeout")


async def plan_phase(session):
    obs = await session.call_tool("computer_apps", {})
    ok(obs, "apps in plan mode")
    act = await session.call_tool("computer_act", {"actions": [{"ref": "e1", "op": "click"}]})
    code = error_code(act)
    check(code == "COMPUTER_SCOPE_VIOLATION", f"plan mode refuses act with COMPUTER_SCOPE_VIOLATION, got {code}")
    check("plan mode" in text_of(act), f"the refusal says why: {text_of(act)}")
    launch = await session.call_tool("computer_launch", {"command": ["mousepad"]})
    check(error_code(launch) == "COMPUTER_SCOPE_VIOLATION", "plan mode refuses launch")


async def pixels_phase(session):
    """DESKPILOT_CONFIG allows pixels: a marked screenshot is MCP image content."""
    import base64

    launch = await session.call_tool("computer_launch", {"command": ["mousepad"], "wait_ms": 60000})
    ok(launch, "computer_launch mousepad")
    shot = await session.call_tool("computer_screenshot", {"app": "mousepad", "mode": "marks", "max_side": 320})
    sc = ok(shot, "computer_screenshot marks")
    images = [b for b in shot.content if b.type == "image"]
    check(len(images) == 1 and images[0].mime_type == "image/png", f"one PNG image block: {[b.type for b in shot.content]}")
    png = base64.b64decode(images[0].data)
    check(png[:8] == b"\x89PNG\r\n\x1a\n", "the image is a PNG")
    check(max(sc["width"], sc["height"]) == 320, f"downscaled to max_side: {sc['width']}x{sc['height']}")
    check(sc["basis"].startswith("r") and "@" in sc["basis"], f"a basis: {sc['basis']}")
    check(len(sc["legend"]) >= 3 and all(e["ref"].startswith("e") for e in sc["legend"]), f"a legend of refs: {sc['legend'][:3]}")
    check("image tokens" in text_of(shot), "the text states the image's estimated tokens")
    ocr = await session.call_tool("computer_screenshot", {"app": "mousepad", "mode": "ocr"})
    ok(ocr, "computer_screenshot ocr")
    check(all(b.type == "text" for b in ocr.content), "ocr mode returns text, no image")
    check("(ocr)" in text_of(ocr), f"ocr elements are marked: {text_of(ocr)[:300]}")


async def run(binary, phase):
    params = StdioServerParameters(command=binary, args=["mcp", "--sandbox"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=120) as session:
            await session.initialize()
            if phase == "main":
                await main_phase(session)
            elif phase == "plan":
                await plan_phase(session)
            elif phase == "pixels":
                await pixels_phase(session)
            else:
                raise SystemExit(f"unknown phase {phase!r}")
    print(f"ok {phase}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: mcp_client.py DESKPILOT_BIN main|plan|pixels")
    anyio.run(run, sys.argv[1], sys.argv[2])
