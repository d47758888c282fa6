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

const LINE = 16; // a label's height with some air
let measurer = null;

/** The width of a 13 px label in the page's font (bold for the centre's), measured on
 * a canvas; 8 px a character where no canvas is at hand. */
function textWidth(text, bold) {
  if (measurer === null) {
    measurer = document.createElement("canvas").getContext("2d") || false;
  }
  if (!measurer) return text.length * 8;
  const family = getComputedStyle(document.body).fontFamily || "sans-serif";
  measurer.font = `${bold ? "600 " : ""}13px ${family}`;
  return measurer.measureText(text).width + 2;
}

/** A label's box when its text starts at (x, y) with ``anchor``. */
function labelBox(text, { x, y, "text-anchor": anchor }, bold = false) {
  const w = textWidth(text, bold);
  const left = anchor === "middle" ? x - w / 2 : anchor === "end" ? x - w : x;
  return { left, right: left + w, top: y - LINE + 4, bottom: y + 4 };
}

const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

/** Label positions that overlap no other label and no dot: each label takes the first
 * free place among its preferred one, the other sides of its dot, and steps away from
 * it; labels are placed centre first, then entities, then memories. */
function placeLabels(items) {
  const taken = items.map(({ p, r }) => ({ left: p.x - r, right: p.x + r, top: p.y - r, bottom: p.y + r }));
  const order = [...items].sort((a, b) => a.rank - b.rank);
  const placed = new Map();
  for (const item of order) {
    const { p, r, text, preferred, rank } = item;
    const bold = rank === 0;
    const sides = [
      preferred,
      { x: p.x, y: p.y + r + 14, "text-anchor": "middle" },
      { x: p.x, y: p.y - r - 5, "text-anchor": "middle" },
      { x: p.x + r + 4, y: p.y + 4, "text-anchor": "start" },
      { x: p.x - r - 4, y: p.y + 4, "text-anchor": "end" },
    ];
    // further and further from the dot until a place is free (the view grows to keep
    // every label): falling back to an overlapping place hid names in crowded graphs
    for (let step = 1; step <= 40; step += 1) {
      sides.push({ ...preferred, y: preferred.y + step * LINE }, { ...preferred, y: preferred.y - step * LINE });
    }
    const free = sides.find((at) => {
      const box = labelBox(text, at, bold);
      return !taken.some((other) => overlaps(box, other));
    }) || preferred;
    taken.push(labelBox(text, free, bold));
    placed.set(item.node.id, free);
  }
  return placed;
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

  // Entities: label under the dot (over it in the upper half), in full; memories: a
  // shortened label beside it (the whole text is the node's tooltip).
  const texts = new Map(shown.map((node) => [
    node.id, node.kind === "memory" ? truncate(node.label, 24) : truncate(node.label, 40),
  ]));
  const labels = placeLabels(shown.map((node) => {
    const p = pos.get(node.id);
    const isCenter = node === center;
    let preferred = { x: p.x, y: p.y + 32, "text-anchor": "middle" };
    if (!isCenter && node.kind === "memory") {
      const right = Math.cos(p.angle) > -0.2;
      preferred = { x: p.x + (right ? 13 : -13), y: p.y + 4, "text-anchor": right ? "start" : "end" };
    } else if (!isCenter) {
      preferred = { x: p.x, y: Math.sin(p.angle) < -0.2 ? p.y - 14 : p.y + 22, "text-anchor": "middle" };
    }
    const rank = isCenter ? 0 : node.kind === "memory" ? 2 : 1;
    return { node, p, r: isCenter ? 16 : 9, text: texts.get(node.id), preferred, rank };
  }));

  const dots = shown.map((node) => {
    const p = pos.get(node.id);
    const isCenter = node === center;
    const label = labels.get(node.id);
    const text = texts.get(node.id);
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
    s("text", { ...label, testid: "graph-label" }, text));
  });

  const hidden = nodes.length - shown.length;
  const boxes = shown.map((node) => labelBox(texts.get(node.id), labels.get(node.id), node === center));
  const ys = [...pos.values()].map((p) => p.y); // crop the empty rows, keep every label
  const top = Math.min(...ys, ...boxes.map((b) => b.top)) - 12;
  const bottom = Math.max(...ys, ...boxes.map((b) => b.bottom)) + 12;
  const left = Math.min(0, ...boxes.map((b) => b.left - 8));
  const right = Math.max(WIDTH, ...boxes.map((b) => b.right + 8));
  return h("figure", { class: "graph-figure" },
    s("svg", {
      class: "graph", testid: "graph", viewBox: `${left} ${top} ${right - left} ${bottom - top}`,
      role: "img", "aria-label": `Graph around ${center.label}`,
    }, edges, dots),
    h("figcaption", { class: "muted" },
      h("span", { class: "legend legend-entity" }, "entity"), " ",
      h("span", { class: "legend legend-memory" }, "memory"),
      hidden > 0 ? ` — ${hidden} more not shown` : ""));
}
