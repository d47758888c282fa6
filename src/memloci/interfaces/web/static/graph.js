// A small neighbourhood graph in inline SVG: the entity in the middle, the memories
// that mention it on a ring around it, and the entities mentioned with it outside.

import { h, s, truncate } from "./dom.js";

const WIDTH = 620;
const HEIGHT = 420;
const INNER = 95; // memories that mention the entity
const OUTER = 165; // entities mentioned with it
const MAX_NODES = 30;

const TAU = 2 * Math.PI;
const at = (r, angle) => ({ x: WIDTH / 2 + r * Math.cos(angle), y: HEIGHT / 2 + r * Math.sin(angle), angle });

/** Mean direction of some angles (radians); null when there are none. */
function meanAngle(angles) {
  if (angles.length === 0) return null;
  const x = angles.reduce((sum, a) => sum + Math.cos(a), 0);
  const y = angles.reduce((sum, a) => sum + Math.sin(a), 0);
  return Math.atan2(y, x);
}

/** Positions: the entity in the middle, its memories on an inner ring, and every other
 * entity on an outer ring, near the memories that mention it (so few lines cross). */
function layout(center, nodes, links) {
  const pos = new Map([[center.id, at(0, 0)]]);
  const others = nodes.filter((n) => n !== center).slice(0, MAX_NODES);
  const memories = others.filter((n) => n.kind === "memory");
  const entities = others.filter((n) => n.kind !== "memory");
  memories.forEach((m, i) => pos.set(m.id, at(INNER, -Math.PI / 2 + (TAU * i) / memories.length)));
  const wanted = entities.map((e, i) => {
    const near = links
      .filter((l) => (l.target === e.id && pos.has(l.source)) || (l.source === e.id && pos.has(l.target)))
      .map((l) => pos.get(l.source === e.id ? l.target : l.source).angle);
    const angle = meanAngle(near);
    return { e, angle: angle ?? -Math.PI / 2 + (TAU * (i + 0.5)) / entities.length };
  });
  wanted.sort((a, b) => a.angle - b.angle);
  const gap = Math.min(TAU / Math.max(wanted.length, 1), TAU / 10);
  for (let round = 0; round < 30; round += 1) { // push crowded neighbours apart
    for (let i = 1; i < wanted.length; i += 1) {
      const deficit = gap - (wanted[i].angle - wanted[i - 1].angle);
      if (deficit > 1e-6) {
        wanted[i - 1].angle -= deficit / 2;
        wanted[i].angle += deficit / 2;
      }
    }
  }
  for (const w of wanted) pos.set(w.e.id, at(OUTER, w.angle));
  return { pos, shown: [center, ...memories, ...entities] };
}

export function graphView(graph, centerId, onSelect) {
  const nodes = (graph && graph.nodes) || [];
  const links = (graph && graph.links) || [];
  if (nodes.length === 0) {
    return h("p", { class: "muted", testid: "graph-empty" }, "Nothing linked to it yet.");
  }
  const center = nodes.find((n) => n.id === centerId) || nodes[0];
  const { pos, shown } = layout(center, nodes, links);

  const edges = links
    .filter((l) => pos.has(l.source) && pos.has(l.target))
    .map((l) => {
      const a = pos.get(l.source);
      const b = pos.get(l.target);
      return s("line", {
        class: `link link-${l.relation}`, x1: a.x, y1: a.y, x2: b.x, y2: b.y,
        testid: "graph-link",
      }, s("title", {}, l.relation));
    });

  const dots = shown.map((node) => {
    const p = pos.get(node.id);
    const isCenter = node === center;
    // Entities: label under the dot (over it in the upper half); memories: label beside it.
    let label = { x: p.x, y: p.y + 32, "text-anchor": "middle" };
    if (!isCenter && node.kind === "memory") {
      const right = Math.cos(p.angle) > -0.2;
      label = { x: p.x + (right ? 13 : -13), y: p.y + 4, "text-anchor": right ? "start" : "end" };
    } else if (!isCenter) {
      label = { x: p.x, y: Math.sin(p.angle) < -0.2 ? p.y - 14 : p.y + 22, "text-anchor": "middle" };
    }
    return s("g", {
      class: `node node-${node.kind}${isCenter ? " node-center" : ""}`,
      testid: "graph-node",
      "data-id": node.id,
      "data-kind": node.kind,
      tabindex: 0,
      role: "button",
      onclick: () => onSelect(node),
      onkeydown: (e) => {
        if (e.key === "Enter") onSelect(node);
      },
    },
    s("title", {}, `${node.label} (${node.kind}: ${node.type})`),
    s("circle", { cx: p.x, cy: p.y, r: isCenter ? 16 : 9 }),
    s("text", label, truncate(node.label, 24)));
  });

  const hidden = nodes.length - shown.length;
  const ys = [...pos.values()].map((p) => p.y); // crop the empty top and bottom
  const top = Math.max(0, Math.min(...ys) - 30);
  const bottom = Math.min(HEIGHT, Math.max(...ys) + 40);
  return h("figure", { class: "graph-figure" },
    s("svg", {
      class: "graph", testid: "graph", viewBox: `0 ${top} ${WIDTH} ${bottom - top}`,
      role: "img", "aria-label": `Graph around ${center.label}`,
    }, edges, dots),
    h("figcaption", { class: "muted" },
      h("span", { class: "legend legend-entity" }, "entity"), " ",
      h("span", { class: "legend legend-memory" }, "memory"),
      hidden > 0 ? ` — ${hidden} more not shown` : ""));
}
