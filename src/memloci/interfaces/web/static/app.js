// The memloci web UI: tabs, list, search, filters, paging, batch delete and the detail pane,
// and views of their own (the Context tab, context.js) in place of the list.
// The address is "#<tab>" or "#<tab>/<id>", so every view can be linked and reloaded.

import { api, ApiError, getNamespace, promptForKey, setNamespace } from "./api.js";
import { resetContext, setupContext, showContext } from "./context.js";
import { entityDetail, memoryDetail, threadDetail, userDetail } from "./detail.js";
import { ask, clear, fmtTime, h, truncate } from "./dom.js";

const PAGE_SIZE = 25;
const ENTITY_TYPES = ["person", "project", "organization", "place", "concept", "tool"];
// Memory filters match exactly: `owner` keeps the memories recorded for that user and
// `in_session` those recorded in that session (the API's `user` / `session` are the
// reader's context, which also shows shared memories of other users and sessions).
const user = { name: "user", label: "User", placeholder: "user id" };
const owner = { ...user, param: "owner" };
const session = { name: "session", label: "Session", placeholder: "session id", param: "in_session" };
const category = { name: "category", label: "Category", placeholder: "category" };

const TABS = {
  facts: {
    plural: "facts", endpoint: "/api/v1/facts/", memory: true, types: ["semantic", "opinion"],
    filters: [owner, category,
      { name: "type", label: "Type", options: ["semantic", "opinion"] }],
    columns: [
      ["Content", (m) => truncate(m.content), "content"], ["Category", (m) => m.category],
      ["User", (m) => m.user, "id"], ["Conf.", (m) => m.confidence?.toFixed(2)],
      ["Ver.", (m) => `v${m.version}`], ["Created", (m) => fmtTime(m.created_at), "when"],
    ],
    empty: "No facts yet — add one with `memloci memory remember …` or POST /api/v1/facts/.",
  },
  episodes: {
    plural: "episodes", endpoint: "/api/v1/episodes/", memory: true, types: ["episodic"],
    filters: [owner, session],
    columns: [
      ["Content", (m) => truncate(m.content), "content"], ["Speaker", (m) => m.speaker || m.source_role],
      ["Session", (m) => m.session, "id"], ["User", (m) => m.user, "id"], ["When", (m) => fmtTime(m.event_time), "when"],
    ],
    empty: "No episodes yet — conversation turns land here (POST /api/v1/turns/).",
  },
  checkpoints: {
    plural: "threads", endpoint: "/api/v1/checkpoints/", searchable: false,
    filters: [user, { name: "agent", label: "Agent", placeholder: "agent" }],
    columns: [
      ["Thread", (t) => t.id, "content id"], ["User", (t) => t.user, "id"], ["Agent", (t) => t.agent, "id"],
      ["Messages", (t) => t.message_count], ["Updated", (t) => fmtTime(t.updated_at), "when"],
    ],
    empty: "No checkpoints yet — conversation threads are saved here as agents talk.",
  },
  procedures: {
    plural: "procedures", endpoint: "/api/v1/procedures/", memory: true, types: ["procedural"],
    filters: [owner, category],
    columns: [
      ["Content", (m) => truncate(m.content), "content"],
      ["Kind", (m) => m.procedure?.procedure_type], ["Used", (m) => m.procedure?.times_used],
      ["Created", (m) => fmtTime(m.created_at), "when"],
    ],
    empty: "No procedures yet — learned how-tos appear here (POST /api/v1/procedures/).",
  },
  users: {
    plural: "users", endpoint: "/api/v1/memory-users/", searchable: true, filters: [],
    columns: [
      ["User", (u) => u.id, "content id"],
      ["Name", (u) => [u.display_name || "",
        u.merged_into ? h("div", { class: "muted" }, `merged into ${u.merged_into}`) : ""]],
      ["Identifiers", (u) => Object.entries(u.identifiers || {}).map(([k, v]) => `${k}:${v}`).join(", "), "id"],
      ["Conversations", (u) => u.conversation_count], ["Last seen", (u) => fmtTime(u.last_seen), "when"],
    ],
    empty: "No users yet — agents register the people they talk to (POST /api/v1/memory-users/).",
  },
  entities: {
    plural: "entities", endpoint: "/api/v1/entities/", searchable: true,
    filters: [{ name: "type", label: "Type", options: ENTITY_TYPES }],
    columns: [
      ["Entity", (e) => e.canonical_name, "content"], ["Type", (e) => e.type],
      ["Aliases", (e) => (e.aliases || []).join(", ")], ["Mentions", (e) => e.mention_count],
      ["Last seen", (e) => fmtTime(e.last_seen), "when"],
    ],
    empty: "No entities yet — consolidation extracts people, projects and places from memories.",
  },
};

// Tabs that are a view of their own: the toolbar and the list/detail panes are hidden
// while one is open. `show` runs when it opens, `reset` when the namespace or key changes.
const VIEWS = {
  context: { el: "context-view", show: showContext, reset: resetContext },
};

const $ = (id) => document.getElementById(id);
const state = {
  tab: null,
  detailId: null,
  rows: [],
  selected: new Set(),
  perTab: Object.fromEntries(
    Object.keys(TABS).map((t) => [t, { offset: 0, starts: [], query: "", filters: {} }]),
  ),
  listToken: 0,
  detailToken: 0,
};

// ------------------------------------------------------------------ banner and notices
function showError(err) {
  const e = err instanceof ApiError ? err : new ApiError(0, "error", String(err?.message || err));
  $("banner-message").textContent = e.message;
  $("banner-code").textContent = e.code + (e.status ? ` · HTTP ${e.status}` : "");
  $("banner-hint").textContent = e.hint ? `Hint: ${e.hint}` : "";
  $("banner").hidden = false;
}

function hideError() {
  $("banner").hidden = true;
}

let noticeTimer = null;
function notice(text) {
  const el = $("notice");
  el.textContent = text;
  el.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { el.hidden = true; }, 4000);
}

async function confirmDialog(title, lines, okLabel = "Delete") {
  $("confirm-title").textContent = title;
  const list = lines.length > 1 ? h("ul", {}, lines.map((l) => h("li", {}, l))) : lines[0] || "";
  clear($("confirm-message"), list);
  $("confirm-ok").textContent = okLabel;
  return (await ask($("confirm"))) === "ok";
}

// ------------------------------------------------------------------ routing
function parseHash() {
  const [tab, ...rest] = window.location.hash.replace(/^#\/?/, "").split("/");
  let id = null;
  try {
    id = rest.length ? decodeURIComponent(rest.join("/")) : null;
  } catch {
    // a malformed address (e.g. "%E0%A4%A"): show the list instead of failing to start
    window.history.replaceState(null, "", "#facts");
    return { tab: "facts", id: null };
  }
  return { tab: TABS[tab] || VIEWS[tab] ? tab : "facts", id };
}

function open(tab, id, { force = false } = {}) {
  const target = `#${tab}${id ? `/${encodeURIComponent(id)}` : ""}`;
  if (window.location.hash === target) {
    if (force) route();
  } else {
    window.location.hash = target;
  }
}

function route() {
  const { tab, id } = parseHash();
  hideError();
  if (tab !== state.tab) {
    state.tab = tab;
    state.selected.clear();
    showPanes(tab);
    if (VIEWS[tab]) {
      markTabs();
      state.detailId = null;
      VIEWS[tab].show();
      return;
    }
    renderToolbar();
    loadList();
  }
  if (VIEWS[tab]) return; // a view has no rows to open: "#context/<id>" is "#context"
  state.detailId = id;
  markSelectedRow();
  loadDetail(tab, id);
}

function filterBy(tab, filters) {
  Object.assign(state.perTab[tab], { offset: 0, query: "", filters: { ...filters } });
  if (state.tab === tab) {
    renderToolbar();
    loadList();
  }
  open(tab, null);
}

/** Show the toolbar and list panes for a list tab, or the view's own element. */
function showPanes(tab) {
  $("toolbar").hidden = Boolean(VIEWS[tab]);
  $("list-view").hidden = Boolean(VIEWS[tab]);
  for (const [name, view] of Object.entries(VIEWS)) $(view.el).hidden = name !== tab;
}

function markTabs() {
  for (const btn of document.querySelectorAll("[data-tab]")) {
    const active = btn.dataset.tab === state.tab;
    btn.classList.toggle("active", active);
    btn.setAttribute("aria-selected", String(active));
  }
}

/** Load the open tab again (another namespace or key): its list (and the open row, when
 * `detail`: a namespace change closes it instead), or its view afresh. */
function reloadTab({ detail }) {
  for (const [name, view] of Object.entries(VIEWS)) {
    view.reset();
    if (name === state.tab) view.show();
  }
  if (!VIEWS[state.tab]) {
    loadList();
    if (detail) loadDetail(state.tab, state.detailId);
  }
}

// ------------------------------------------------------------------ toolbar
function renderToolbar() {
  const t = TABS[state.tab];
  const ts = state.perTab[state.tab];
  markTabs();
  const search = $("search");
  search.hidden = t.memory ? false : !t.searchable;
  search.value = ts.query;
  search.placeholder = t.memory ? `Search ${t.plural}…` : `Filter ${t.plural}…`;
  $("search-button").textContent = t.memory ? "Search" : "Filter";
  const inputs = t.filters.map((f) => {
    const value = ts.filters[f.name] || "";
    if (f.options) {
      const select = h("select", {
        name: f.name, testid: `filter-${f.name}`, "aria-label": f.label,
        onchange: () => $("toolbar").requestSubmit(),
      }, h("option", { value: "" }, `any ${f.label.toLowerCase()}`),
      f.options.map((o) => h("option", { value: o, selected: o === value }, o)));
      return select;
    }
    return h("input", {
      name: f.name, testid: `filter-${f.name}`, placeholder: f.placeholder,
      "aria-label": f.label, value,
    });
  });
  clear($("filters"), inputs);
  updateSelection();
}

function readToolbar() {
  const ts = state.perTab[state.tab];
  ts.query = $("search").hidden ? "" : $("search").value.trim();
  ts.filters = {};
  for (const el of $("filters").querySelectorAll("[name]")) {
    if (el.value.trim()) ts.filters[el.name] = el.value.trim();
  }
  ts.offset = 0;
}

// ------------------------------------------------------------------ list
/** The toolbar's filters as API parameters (a filter may send another name). */
function filterParams(t, filters) {
  const params = {};
  for (const f of t.filters) {
    if (filters[f.name]) params[f.param || f.name] = filters[f.name];
  }
  return params;
}

async function fetchRows(t, ts) {
  if (t.memory && ts.query) {
    const f = ts.filters;
    const res = await api("/api/v1/search", {
      method: "POST",
      body: {
        query: ts.query, k: 50, owner: f.user || null, in_session: f.session || null,
        type: f.type ? [f.type] : t.types, category: f.category ? [f.category] : null,
      },
    });
    const items = res.hits.map((hit) => ({
      ...hit.memory, _score: hit.score, _found: Object.keys(hit.strategies || {}).join(", "),
    }));
    return { items, total: items.length, searching: true };
  }
  // page on by cursor (ts.starts[i]: where page i starts), so rows written meanwhile
  // never shift the pages; offset only where no cursor is known (page 1, a fallback)
  const idx = ts.offset / PAGE_SIZE;
  if (idx === 0) ts.starts = [];
  const params = { ...filterParams(t, ts.filters), limit: PAGE_SIZE };
  if (idx > 0 && ts.starts[idx]) params.cursor = ts.starts[idx];
  else params.offset = ts.offset;
  if (ts.query) params.q = ts.query;
  const page = await api(t.endpoint, { params });
  ts.starts.length = idx + 1;
  if (page.next_cursor) ts.starts[idx + 1] = page.next_cursor;
  return { items: page.items, total: page.total, searching: false };
}

async function loadList() {
  const tab = state.tab;
  const t = TABS[tab];
  const ts = state.perTab[tab];
  const token = ++state.listToken;
  $("list").setAttribute("aria-busy", "true");
  try {
    const { items, total, searching } = await fetchRows(t, ts);
    if (token !== state.listToken) return;
    if (items.length === 0 && ts.offset > 0 && total > 0) {
      ts.offset = Math.max(0, Math.floor((total - 1) / PAGE_SIZE) * PAGE_SIZE);
      ts.starts = []; // the last page by offset: its cursor is not known
      loadList();
      return;
    }
    renderList(t, ts, items, total, searching);
  } catch (e) {
    if (token !== state.listToken) return;
    showError(e);
    clear($("list"), h("div", { class: "empty error", testid: "list-error" },
      `Could not load ${t.plural}.`));
    renderPager(ts, 0, false);
  } finally {
    if (token === state.listToken) $("list").removeAttribute("aria-busy");
  }
}

function emptyState(t, ts) {
  let text = t.empty;
  if (ts.query) text = `No ${t.plural} match “${ts.query}”.`;
  else if (Object.keys(ts.filters).length) text = `No ${t.plural} match these filters.`;
  return h("div", { class: "empty", testid: "empty-state" }, text);
}

function renderList(t, ts, items, total, searching) {
  state.rows = items;
  const ids = new Set(items.map((r) => r.id));
  for (const id of [...state.selected]) if (!ids.has(id)) state.selected.delete(id);
  if (items.length === 0) {
    clear($("list"), emptyState(t, ts));
  } else {
    const columns = searching
      ? [...t.columns, ["Score", (r) => r._score.toFixed(3)], ["Found by", (r) => r._found]]
      : t.columns;
    const all = h("input", {
      type: "checkbox", testid: "select-all", "aria-label": "Select all",
      onchange: (e) => {
        for (const r of items) {
          if (e.target.checked) state.selected.add(r.id);
          else state.selected.delete(r.id);
        }
        for (const box of $("list").querySelectorAll("[data-testid=row-check]")) {
          box.checked = e.target.checked;
        }
        updateSelection();
      },
    });
    clear($("list"), h("table", { class: "rows", testid: "rows" },
      h("thead", {}, h("tr", {}, h("th", { class: "check" }, all),
        columns.map(([title]) => h("th", {}, title)))),
      h("tbody", {}, items.map((row) => rowView(columns, row)))));
  }
  renderPager(ts, total, !searching);
  markSelectedRow();
  updateSelection();
}

function rowView(columns, row) {
  const box = h("input", {
    type: "checkbox", testid: "row-check", "aria-label": `Select ${row.id}`,
    checked: state.selected.has(row.id),
    onchange: (e) => {
      if (e.target.checked) state.selected.add(row.id);
      else state.selected.delete(row.id);
      updateSelection();
    },
  });
  return h("tr", {
    testid: "row", "data-id": row.id, tabindex: 0,
    onclick: (e) => {
      if (e.target.closest(".check")) return;
      open(state.tab, row.id);
    },
    onkeydown: (e) => {
      if (e.key === "Enter") open(state.tab, row.id);
    },
  },
  h("td", { class: "check" }, box),
  columns.map(([, cell, cls]) => h("td", { class: cls }, cell(row) ?? "")));
}

function renderPager(ts, total, paged) {
  const first = total ? ts.offset + 1 : 0;
  const last = Math.min(ts.offset + PAGE_SIZE, total);
  $("pager-info").textContent = paged
    ? `${first}–${last} of ${total}`
    : `${total} result${total === 1 ? "" : "s"}`;
  $("page-prev").disabled = !paged || ts.offset === 0;
  $("page-next").disabled = !paged || !(ts.starts || [])[ts.offset / PAGE_SIZE + 1];
}

function markSelectedRow() {
  for (const tr of $("list").querySelectorAll("tr[data-id]")) {
    const on = tr.dataset.id === state.detailId;
    tr.classList.toggle("selected", on);
    tr.setAttribute("aria-selected", String(on));
  }
}

function updateSelection() {
  const n = state.selected.size;
  const btn = $("delete-selected");
  btn.disabled = n === 0;
  btn.textContent = n ? `Delete selected (${n})` : "Delete selected";
}

async function deleteSelected() {
  const t = TABS[state.tab];
  const ids = [...state.selected];
  if (ids.length === 0) return;
  const label = (id) => {
    const row = state.rows.find((r) => r.id === id);
    const text = row && (row.content || row.canonical_name || row.display_name);
    const line = text ? `${id} — ${truncate(text, 80)}` : id;
    if (!t.memory || !row) return line;
    // whose memory it is, so a selection that reaches past the filter shows it
    const whose = [
      row.user ? `user ${row.user}` : "no user", row.session ? `session ${row.session}` : "",
      row.scope ? `scope ${row.scope}` : "",
    ].filter(Boolean).join(" · ");
    return [line, " ", h("span", { class: "muted", testid: "confirm-owner" }, `(${whose})`)];
  };
  const what = `${ids.length} ${ids.length === 1 ? t.plural.replace(/s$/, "") : t.plural}`;
  if (!(await confirmDialog(`Delete ${what}?`, ids.map(label)))) return;
  try {
    const res = await api(`${t.endpoint}batch-delete/`, { method: "POST", body: { ids } });
    state.selected.clear();
    notice(`Deleted ${res && res.deleted != null ? res.deleted : ids.length} ${t.plural}.`);
    if (ids.includes(state.detailId)) open(state.tab, null);
    loadList();
  } catch (e) {
    showError(e);
  }
}

// ------------------------------------------------------------------ detail
const ctx = {
  showError, notice, open, filterBy,
  confirm: confirmDialog,
  reloadList: () => loadList(),
  closeDetail: () => open(state.tab, null),
};

async function loadDetail(tab, id) {
  const pane = $("detail");
  const token = ++state.detailToken;
  if (!id) {
    clear(pane, h("p", { class: "muted placeholder" }, "Select a row to see its details."));
    return;
  }
  pane.setAttribute("aria-busy", "true");
  try {
    let node;
    if (TABS[tab].memory) node = await memoryDetail(ctx, tab, id);
    else if (tab === "users") node = await userDetail(ctx, id);
    else if (tab === "checkpoints") node = await threadDetail(ctx, id);
    else node = await entityDetail(ctx, id);
    if (token === state.detailToken) clear(pane, node);
  } catch (e) {
    if (token !== state.detailToken) return;
    showError(e);
    clear(pane, h("div", { class: "empty error", testid: "detail-error" },
      `Could not load ${id}: ${e.message}`));
  } finally {
    if (token === state.detailToken) pane.removeAttribute("aria-busy");
  }
}

// ------------------------------------------------------------------ namespaces
async function loadNamespaces() {
  try {
    const reported = await api("/api/v1/namespaces");
    const names = new Set([...(reported || []), getNamespace()].filter(Boolean));
    clear($("namespace-list"), [...names].sort().map((n) => h("option", { value: n })));
  } catch {
    // The list is only a convenience: the box still takes any namespace.
  }
}

function changeNamespace(ns) {
  setNamespace(ns);
  const url = new URL(window.location.href);
  if (ns) url.searchParams.set("namespace", ns);
  else url.searchParams.delete("namespace");
  window.history.replaceState(null, "", url);
  for (const ts of Object.values(state.perTab)) ts.offset = 0;
  state.selected.clear();
  hideError();
  open(state.tab, null);
  reloadTab({ detail: false });
  loadNamespaces();
}

// ------------------------------------------------------------------ start
function start() {
  const ns = new URL(window.location.href).searchParams.get("namespace") || "";
  setNamespace(ns);
  $("namespace").value = ns;
  $("namespace").addEventListener("change", (e) => changeNamespace(e.target.value.trim()));
  for (const btn of document.querySelectorAll("[data-tab]")) {
    btn.addEventListener("click", () => open(btn.dataset.tab, null));
  }
  $("toolbar").addEventListener("submit", (e) => {
    e.preventDefault();
    hideError();
    readToolbar();
    loadList();
  });
  $("reset").addEventListener("click", () => {
    Object.assign(state.perTab[state.tab], { offset: 0, query: "", filters: {} });
    hideError();
    renderToolbar();
    loadList();
  });
  $("delete-selected").addEventListener("click", deleteSelected);
  $("page-prev").addEventListener("click", () => {
    const ts = state.perTab[state.tab];
    ts.offset = Math.max(0, ts.offset - PAGE_SIZE);
    loadList();
  });
  $("page-next").addEventListener("click", () => {
    state.perTab[state.tab].offset += PAGE_SIZE;
    loadList();
  });
  $("banner-close").addEventListener("click", hideError);
  setupContext({ showError, hideError, open });
  $("key-button").addEventListener("click", async () => {
    if (await promptForKey()) {
      hideError();
      reloadTab({ detail: true });
      loadNamespaces();
    }
  });
  window.addEventListener("hashchange", route);
  route();
  loadNamespaces();
}

start();
