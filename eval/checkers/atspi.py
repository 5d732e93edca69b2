#!/usr/bin/env python3
"""Reads application state over AT-SPI with pyatspi, independently of deskpilot.

Usage (run in the sandbox's environment; prints one line, exits 1 when nothing
matches):
  atspi.py text APP ROLE [NAME [NTH]]        text (or else name) of a match
  atspi.py value APP ROLE [NAME [NTH]]       current value (Value interface)
  atspi.py state APP ROLE NAME STATE [NTH]   "true" or "false"
  atspi.py names APP ROLE                    every match's name, one per line
  atspi.py title APP                         the title of the app's first window

ROLE is pyatspi's role name with spaces ("push button", "text", "check box",
"label", "toggle button"); NAME matches exactly, or as a substring when it starts
with "~", and "*" matches any name. NTH picks the Nth match (from 1) in depth-first
order. The walk is at most 20,000 nodes.
"""

import sys

import pyatspi

LIMIT = 20000


def app_named(name):
    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(desktop.childCount):
        a = desktop.getChildAtIndex(i)
        if a is not None and a.name == name:
            return a
    sys.exit(f"no app named {name!r} on the accessibility bus")


def walk(node, seen):
    stack = [node]
    while stack and seen[0] < LIMIT:
        n = stack.pop()
        if n is None:
            continue
        seen[0] += 1
        yield n
        try:
            kids = [n.getChildAtIndex(i) for i in range(n.childCount)]
        except Exception:
            kids = []
        stack.extend(reversed(kids))


def name_matches(n, want):
    if want is None or want == "*":
        return True
    name = n.name or ""
    if want.startswith("~"):
        return want[1:] in name
    return name == want


def matches(app, role, name):
    for n in walk(app, [0]):
        try:
            if n.getRoleName() == role and name_matches(n, name):
                yield n
        except Exception:
            continue


def text_of(n):
    try:
        t = n.queryText()
        return t.getText(0, t.characterCount)
    except Exception:
        return n.name or ""


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    cmd, app = argv[1], app_named(argv[2])
    if cmd == "title":
        for i in range(app.childCount):
            w = app.getChildAtIndex(i)
            if w is not None:
                print(w.name)
                return 0
        return 1
    role = argv[3]
    name = argv[4] if len(argv) > 4 else None

    def nth(k):
        want = int(argv[k]) if len(argv) > k else 1
        for i, n in enumerate(matches(app, role, name), start=1):
            if i == want:
                return n
        sys.exit(f"no match {want} for {role!r} {name!r}")

    if cmd == "text":
        print(text_of(nth(5)))
        return 0
    if cmd == "value":
        v = nth(5).queryValue().currentValue
        print(int(v) if float(v).is_integer() else v)
        return 0
    if cmd == "names":
        found = [n.name for n in matches(app, role, name)]
        print("\n".join(found))
        return 0 if found else 1
    if cmd == "state":
        want = getattr(pyatspi, "STATE_" + argv[5].upper())
        print("true" if nth(6).getState().contains(want) else "false")
        return 0
    sys.exit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
