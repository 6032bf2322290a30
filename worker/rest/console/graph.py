"""An order's workflow laid out for SVG: each step in the column of its
depth (the longest chain of ``after`` before it), edges from each step
to those that run after it. Pure: the template draws what this returns.
"""

import dataclasses

NODE_WIDTH = 170
NODE_HEIGHT = 46
COLUMN_GAP = 50
ROW_GAP = 18
MARGIN = 10


@dataclasses.dataclass(frozen=True)
class Node:
    """A step's box: its name, state and top-left corner."""

    name: str
    status: str
    x: int
    y: int


@dataclasses.dataclass(frozen=True)
class Edge:
    """A line from the right of one box to the left of another."""

    x1: int
    y1: int
    x2: int
    y2: int


@dataclasses.dataclass(frozen=True)
class Layout:
    """Boxes, lines and the drawing's size."""

    nodes: list
    edges: list
    width: int
    height: int


def _depths(steps):
    known = {step.name for step in steps}
    after = {step.name: [name for name in step.after if name in known]
             for step in steps}
    depths = {}

    def depth(name, seen=()):
        if name not in depths:
            depths[name] = 1 + max(
                (depth(before, seen + (name,)) for before in after[name]
                 if before not in seen), default=-1)
        return depths[name]

    for step in steps:
        depth(step.name)
    return depths, after


def layout(steps):
    """The ``Layout`` of ``steps`` (``worker.api.StepState`` values, in
    declaration order)."""
    depths, after = _depths(steps)
    rows = {}
    nodes = {}
    for step in steps:
        column = depths[step.name]
        row = rows.get(column, 0)
        rows[column] = row + 1
        nodes[step.name] = Node(
            step.name, step.status,
            MARGIN + column * (NODE_WIDTH + COLUMN_GAP),
            MARGIN + row * (NODE_HEIGHT + ROW_GAP))
    edges = [Edge(nodes[before].x + NODE_WIDTH,
                  nodes[before].y + NODE_HEIGHT // 2,
                  node.x, node.y + NODE_HEIGHT // 2)
             for name, node in nodes.items() for before in after[name]]
    columns = 1 + max(depths.values(), default=0)
    height = max(rows.values(), default=1)
    return Layout(list(nodes.values()), edges,
                  2 * MARGIN + columns * (NODE_WIDTH + COLUMN_GAP),
                  2 * MARGIN + height * (NODE_HEIGHT + ROW_GAP))
