// DOM helpers: every piece of text goes in through textContent, never innerHTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "testid") {
      el.setAttribute("data-testid", value);
    } else if (name === "class") {
      el.setAttribute("class", value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** h("tr", {testid: "row", onclick: fn}, "text", otherNode, [more]) */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** The same for SVG elements. */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

export function clear(el, ...children) {
  el.replaceChildren();
  return build(el, {}, children);
}

export function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A 0–1 number (confidence, decay) for reading: two decimals, trailing zeros dropped
 * ("0.91", "1", "0.5"); anything else as it is. */
export function fmtUnit(value) {
  if (typeof value !== "number") return value ?? "";
  return String(Number(value.toFixed(2)));
}

export function truncate(text, max = 140) {
  const t = String(text ?? "");
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

export function fmtValue(value) {
  if (value === undefined || value === null || value === "") return "";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** A two-column definition list of [label, value] pairs; empty values are left out. */
export function fields(pairs, testid = "fields") {
  const rows = [];
  for (const [label, value] of pairs) {
    const shown = value instanceof Node ? value : fmtValue(value);
    if (shown === "") continue;
    rows.push(h("dt", {}, label), h("dd", { "data-field": label }, shown));
  }
  return h("dl", { class: "fields", testid }, rows);
}

export function section(title, testid, ...children) {
  return h("section", { class: "block", testid }, h("h3", {}, title), ...children);
}

/** Show a modal <dialog> whose form uses method="dialog"; resolves to the button's value. */
export function ask(dialog) {
  return new Promise((resolve) => {
    dialog.returnValue = "";
    dialog.addEventListener("close", () => resolve(dialog.returnValue || "cancel"), {
      once: true,
    });
    dialog.showModal();
  });
}
