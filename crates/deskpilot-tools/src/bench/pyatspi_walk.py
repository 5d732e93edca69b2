"""The peer of `deskpilot bench`: a full pyatspi walk of one application.

Runs under Debian's /usr/bin/python3 with python3-pyatspi, as one persistent process
that `deskpilot bench` asks repeatedly, so interpreter and module start-up are never
measured. Protocol: one JSON object per line on stdin, one per line on stdout.

  start-up      -> {"ok": true, "ready": true}
                   or {"ok": false, "error": "..."} and exit status 3 (no pyatspi)
  {"bus": ":1.4", "tsv": false}
                -> {"ok": true, "ms": 812.4, "objects": 1234, "visible_as_showing": false}
  {"bus": ":1.4", "tsv": true}
                -> the same plus "tsv": "<the linearized tree>", "tsv_rows": 57
  {"bus": ":1.4", "interactive": [x, y, w, h]}
                -> the same plus "interactive": [{"path", "role", "name"}, ...], the
                   objects a user could operate that are on screen inside that
                   rectangle (screen pixels), see on_screen_interactive; this walk
                   also reads each object's path, so it is never the timed one
  any failure   -> {"ok": false, "error": "..."}

The walk is the method OSWorld's tree collection uses (desktop_env/server/main.py,
_create_atspi_node): for every object of the application, the role name, name,
states, attributes, description, the whole text of the Text interface, screen extents
of objects that are both VISIBLE and SHOWING, then every child by index (at most
MAX_WIDTH children per object, MAX_DEPTH levels). A LibreOffice spreadsheet grid is
read the way OSWorld reads it: cells by index, row by row, only the showing ones. The
walk itself is timed with time.perf_counter; building the TSV afterwards is not.
OSWorld also queries the Image, Selection, Value and Action interfaces of every
object; this walk leaves them out (the TSV does not use them), so it is faster than
OSWorld's own collection and a ratio against it is a lower bound.

The TSV is OSWorld's flat linearization (mm_agents/agent.py,
linearize_accessibility_tree, platform "ubuntu"): the header, then one row per node
kept by its filter (judge_node): tag, name, text, class, description,
position "(x, y)", size "(w, h)". "class" is the object's `class` attribute (empty
when the toolkit sets none), as OSWorld reads it.

One departure, reported as "visible_as_showing": a toolkit that sets SHOWING on its
top-level windows only (GTK 4, e.g. gnome-calculator 43) would leave OSWorld's filter
with no row at all; there VISIBLE is read as SHOWING, exactly as deskpilot's driver
does, so both sides describe the same on-screen objects.

This script only reads; it never acts on the application and never writes files.
"""

import json
import sys
import time

# Bounds of OSWorld's walk (desktop_env/server/main.py).
MAX_DEPTH = 50
MAX_WIDTH = 1024
# LibreOffice 7.4+ sheets have 16,384 columns and 1,048,576 rows (OSWorld's constants).
CALC_COLUMNS = 16384
CALC_ROWS = 1048576
# OSWorld's give-up point when no showing cell is found.
CALC_SCAN_LIMIT = 500


def reply(obj):
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


try:
    import pyatspi  # noqa: E402
    from gi.repository import Atspi  # noqa: E402
except Exception as e:  # pragma: no cover - depends on the machine
    reply(
        {
            "ok": False,
            "error": "python3-pyatspi is not importable by %s (%s); install it with "
            "`apt-get install python3-pyatspi` (scripts/install-deps does)" % (sys.executable, e),
        }
    )
    sys.exit(3)


STATE_NAMES = {}


def state_name(st):
    """ATSPI_STATE_SHOWING -> "showing", as OSWorld names its state attributes."""
    n = STATE_NAMES.get(st)
    if n is None:
        n = Atspi.StateType(st).value_nick.replace("-", "_")
        STATE_NAMES[st] = n
    return n


def showing_on_toplevels_only(app):
    """True when the app's showing top-level has children, none SHOWING, some VISIBLE."""
    for win in app:
        if win is None or not win.getState().contains(pyatspi.STATE_SHOWING):
            continue
        kids = [k for k in win if k is not None]
        if not kids:
            continue
        showing = any(k.getState().contains(pyatspi.STATE_SHOWING) for k in kids)
        visible = any(k.getState().contains(pyatspi.STATE_VISIBLE) for k in kids)
        return visible and not showing
    return False


def read_node(node, visible_as_showing, with_path=False):
    """One object as OSWorld reads it, as a record (with its D-Bus object path and
    editable state when `with_path`)."""
    rec = {"tag": "unknown", "name": "", "text": "", "description": "", "class": ""}
    if with_path:
        rec["path"] = node.path
    rec["name"] = node.name or ""
    states = node.getState().getStates()
    names = set(state_name(s) for s in states)
    rec["visible"] = "visible" in names
    rec["showing"] = "showing" in names or (visible_as_showing and rec["visible"])
    rec["editable"] = "editable" in names
    attrs = node.get_attributes() or {}
    rec["class"] = attrs.get("class", "")
    rec["description"] = node.description or ""
    if rec["showing"] and rec["visible"]:
        try:
            comp = node.queryComponent()
        except NotImplementedError:
            pass
        else:
            e = comp.getExtents(pyatspi.XY_SCREEN)
            rec["pos"] = (e.x, e.y)
            rec["size"] = (e.width, e.height)
    try:
        t = node.queryText()
    except NotImplementedError:
        pass
    else:
        rec["text"] = t.getText(0, t.characterCount).replace("\ufffc", "").replace("\ufffd", "")
    raw_role = node.getRoleName().strip()
    rec["raw_role"] = raw_role
    rec["tag"] = (raw_role or "unknown").replace(" ", "-")
    return rec


def calc_cells(table):
    """Showing cells of a LibreOffice grid, by index, the way OSWorld scans them."""
    out = []
    index_base = 0
    first_showing = False
    column_base = None
    for r in range(CALC_ROWS):
        clm = column_base or 0
        for clm in range(column_base or 0, CALC_COLUMNS):
            child = table.getChildAtIndex(index_base + clm)
            if child is not None and child.getState().contains(pyatspi.STATE_SHOWING):
                out.append(child)
                if not first_showing:
                    column_base = clm
                    first_showing = True
            elif (first_showing and column_base is not None) or clm >= CALC_SCAN_LIMIT:
                break
        if (first_showing and clm == column_base) or (not first_showing and r >= CALC_SCAN_LIMIT):
            break
        index_base += CALC_COLUMNS
    return out


def walk(app, visible_as_showing, with_path=False):
    """Every object under `app`, depth first, as records."""
    records = []
    # `boxed`: an ancestor is laid out with no area, so nothing under it is drawn
    # (LibreOffice keeps its own menu bar so, 0 px high, under the GTK one).
    # `combo`: the path of the nearest combo box above (its options' stand-in).
    stack = [(app, 0, False, False, None)]
    while stack:
        node, depth, calc, boxed, combo = stack.pop()
        try:
            rec = read_node(node, visible_as_showing, with_path)
        except Exception:
            # OSWorld skips an object that fails mid-read (it vanished).
            continue
        rec["under_no_area"] = boxed
        rec["combo"] = combo
        if with_path and rec["raw_role"] == "combo box":
            combo = rec["path"]
        # Negative extents are unknown ones, not an empty box.
        if depth > 0 and "size" in rec and 0 in rec["size"] and min(rec["size"]) >= 0:
            boxed = True
        records.append(rec)
        if depth >= MAX_DEPTH:
            continue
        if rec["raw_role"] == "document spreadsheet":
            calc = True
        kids = []
        try:
            if calc and rec["tag"] == "table":
                kids = calc_cells(node)
            else:
                for i, ch in enumerate(node):
                    if i == MAX_WIDTH:
                        break
                    kids.append(ch)
        except Exception:
            pass
        for ch in reversed(kids):
            if ch is not None:
                stack.append((ch, depth + 1, calc, boxed, combo))
    return records


def quote(text):
    return text if '"' not in text else '"{}"'.format(text.replace('"', '""'))


KEEP_SUFFIXES = (
    "item", "button", "heading", "label", "scrollbar", "searchbox", "textbox", "link",
    "tabelement", "textfield", "textarea", "menu",
)
KEEP_TAGS = {
    "alert", "canvas", "check-box", "combo-box", "entry", "icon", "image", "paragraph",
    "scroll-bar", "section", "slider", "static", "table-cell", "terminal", "text",
    "netuiribbontab", "start", "trayclockwclass", "traydummysearchcontrol", "uiimage",
    "uiproperty", "uiribboncommandbar",
}


def kept(rec):
    """OSWorld's judge_node for platform "ubuntu"."""
    tag = rec["tag"]
    if not (tag.startswith("document") or tag.endswith(KEEP_SUFFIXES) or tag in KEEP_TAGS):
        return False
    if not (rec["showing"] and rec["visible"]):
        return False
    if not (rec["name"] or rec["text"]):
        return False
    x, y = rec.get("pos", (-1, -1))
    w, h = rec.get("size", (-1, -1))
    return x >= 0 and y >= 0 and w > 0 and h > 0


def linearize(records):
    lines = ["tag\tname\ttext\tclass\tdescription\tposition (top-left x&y)\tsize (w&h)"]
    for rec in records:
        if not kept(rec):
            continue
        text = quote(rec["text"]) if rec["text"] else '""'
        lines.append(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}".format(
                rec["tag"],
                rec["name"],
                text,
                rec["class"],
                rec["description"],
                str(rec["pos"]),
                str(rec["size"]),
            )
        )
    return "\n".join(lines)


# AT-SPI roles a user operates directly: the counterparts of deskpilot's interactive
# roles (Role::is_interactive), by their AT-SPI role names. Text and paragraph
# objects count when they are editable.
INTERACTIVE_ROLES = {
    "push button", "toggle button", "push button menu", "check box", "radio button",
    "combo box", "entry", "password text", "spin button", "slider", "scroll bar",
    "link", "page tab", "menu", "menu item", "check menu item", "radio menu item", "list item",
    "tree item", "table cell", "column header", "document web", "document text",
    "document spreadsheet", "document frame",
}
EDITABLE_ROLES = {"text", "paragraph"}


def on_screen_interactive(records, rect):
    """Objects of an interactive role that are SHOWING and VISIBLE, with an area
    that overlaps `rect` ([x, y, w, h], screen pixels), and no ancestor laid out
    with no area."""
    rx, ry, rw, rh = rect
    out = []
    for rec in records:
        role = rec["raw_role"]
        if role not in INTERACTIVE_ROLES and not (role in EDITABLE_ROLES and rec["editable"]):
            continue
        if not (rec["showing"] and rec["visible"]) or "size" not in rec or rec["under_no_area"]:
            continue
        (x, y), (w, h) = rec["pos"], rec["size"]
        if w <= 0 or h <= 0 or x >= rx + rw or y >= ry + rh or x + w <= rx or y + h <= ry:
            continue
        out.append({"path": rec["path"], "role": role, "name": rec["name"], "combo": rec["combo"]})
    return out


def find_app(bus):
    desktop = pyatspi.Registry.getDesktop(0)
    for app in desktop:
        try:
            if app is not None and app.app is not None and app.app.bus_name == bus:
                return app
        except Exception:
            continue
    return None


def serve():
    reply({"ok": True, "ready": True})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            app = find_app(req["bus"])
            if app is None:
                reply({"ok": False, "error": "no application on bus %s" % req["bus"]})
                continue
            quirk = showing_on_toplevels_only(app)
            t0 = time.perf_counter()
            rect = req.get("interactive")
            records = walk(app, quirk, rect is not None)
            ms = (time.perf_counter() - t0) * 1000.0
            out = {"ok": True, "ms": ms, "objects": len(records), "visible_as_showing": quirk}
            if req.get("tsv"):
                tsv = linearize(records)
                out["tsv"] = tsv
                out["tsv_rows"] = tsv.count("\n")
            if rect is not None:
                out["interactive"] = on_screen_interactive(records, rect)
            reply(out)
        except Exception as e:
            reply({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})


if __name__ == "__main__":
    serve()
